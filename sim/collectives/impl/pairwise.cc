// Pairwise all-to-all: one phase in which every member sends S/N to each other member, N (N-1)
// flows per group g_i -> g_j (i != j), one step each, as NCCL's all-to-all posts all of its
// sends and receives at once. Each member's uplink carries its N-1 outgoing flows, (N-1)/N S in
// all, so on one NVSwitch node the flow model gives alpha + (N-1)/N S / B (the flows of an
// uplink share it equally and finish together); across nodes the flows that leave a node share
// its NICs. The analytic model (no contention) charges each flow its sender's whole load,
// (N-1)/N S, as the flows of one uplink share it. All-to-all only, and always (auto prefers it).
// Thread-safety: immutable.
#include <utility>

#include "sim/collectives/impl/builtins.h"

namespace placesim::sim::collectives {
namespace {

class Pairwise final : public Algorithm {
 public:
  std::string_view name() const override { return "pairwise"; }
  std::string_view description() const override {
    return "all-to-all only: every member sends S/N to each other member at once";
  }
  std::string_view citation() const override {
    return "Thakur, Rabenseifner and Gropp 2005, \"Optimization of collective communication "
           "operations in MPICH\"; NCCL's all-to-all";
  }
  NcclRow nccl_row() const override { return NcclRow::kP2p; }
  bool AppliesTo(const CollectiveCall& call, const GroupLayout& /*layout*/) const override {
    return call.kind == strategies::CollectiveKind::kAllToAll;
  }
  AutoRole AutoRoleFor(const CollectiveCall& /*call*/,
                       const GroupLayout& /*layout*/) const override {
    return AutoRole::kPreferred;
  }
  StatusOr<std::vector<CommPhase>> Plan(strategies::CollectiveKind /*kind*/,
                                        const GroupLayout& layout, Routes& routes,
                                        const char* what) const override {
    const int64_t n = layout.n;
    CommPhase ph;
    ph.num = 1;
    ph.den = n;
    ph.analytic_num = n - 1;
    ph.analytic_den = n;
    ph.steps = 1;
    for (const std::vector<VertexId>& members : layout.groups) {
      RETURN_IF_ERROR(AddAllPairs(routes, members, what, ph));
    }
    std::vector<CommPhase> phases;
    phases.push_back(std::move(ph));
    return phases;
  }
};

}  // namespace

std::unique_ptr<const Algorithm> MakePairwise() { return std::make_unique<Pairwise>(); }

}  // namespace placesim::sim::collectives
