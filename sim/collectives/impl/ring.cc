// The ring: one phase of N flows per group, one per ring edge g_i -> g_{i+1 mod N} in axis
// order, each carrying the op's per-device ring volume (2(N-1)/N S for all-reduce, (N-1)/N S for
// reduce-scatter and all-gather; the op's own bytes, as the schedule states them), pipelined over
// k = 2(N-1) steps for all-reduce, N-1 for the others, one for a point-to-point transfer. So an
// uncontended ring all-reduce over one NVSwitch takes 2(N-1) alpha + 2(N-1)/N S / B, for alpha
// a flow's route latency and B its bottleneck (Patarasuk and Yuan 2009: the bandwidth-optimal
// all-reduce). It runs any kind but all-to-all, and is auto's fallback: the choice within one
// node and for kinds the other algorithms do not run (broadcast, send-recv without a peer stage,
// empty buffers).
// Thread-safety: immutable.
#include <utility>

#include "sim/collectives/impl/builtins.h"

namespace placesim::sim::collectives {
namespace {

class Ring final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  std::string_view description() const override {
    return "flat ring over the group: 2(N-1) steps for all-reduce, N-1 otherwise";
  }
  std::string_view citation() const override {
    return "Patarasuk and Yuan 2009, \"Bandwidth optimal all-reduce algorithms for clusters of "
           "workstations\"; NCCL's ring";
  }
  bool AppliesTo(const CollectiveCall& call, const GroupLayout& /*layout*/) const override {
    return call.kind != strategies::CollectiveKind::kAllToAll;
  }
  AutoRole AutoRoleFor(const CollectiveCall& /*call*/,
                       const GroupLayout& /*layout*/) const override {
    return AutoRole::kFallback;
  }
  StatusOr<std::vector<CommPhase>> Plan(strategies::CollectiveKind kind, const GroupLayout& layout,
                                        Routes& routes, const char* what) const override {
    CommPhase ph;
    ph.steps = RingSteps(kind, layout.n);
    for (const std::vector<VertexId>& ring : layout.groups) {
      RETURN_IF_ERROR(AddRing(routes, ring, what, ph));
    }
    std::vector<CommPhase> phases;
    phases.push_back(std::move(ph));
    return phases;
  }
};

}  // namespace

std::unique_ptr<const Algorithm> MakeRing() { return std::make_unique<Ring>(); }

}  // namespace placesim::sim::collectives
