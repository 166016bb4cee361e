// Hierarchical (NCCL's two-level algorithm), for a group of M nodes with L members on each:
// the member with local position i on each node joins the rail-i ring across nodes, whose flows
// go through the NIC nearest each end GPU (NIC floor(i' x nics / gpus) for the GPU of local
// index i'), as rail-optimized fabrics intend. Phases and per-flow volumes:
//   all-reduce      intra reduce-scatter (L-1)/L S, k = L-1, and intra all-gather, the same,
//                   run as one phase of 2(L-1)/L S, k = 2(L-1) (see "Pipelined" below);
//                   per-rail all-reduce of S/L: 2(M-1)/M x S/L, k = 2(M-1).
//   reduce-scatter  intra reduce-scatter (L-1)/L S; per-rail reduce-scatter of S/L:
//                   (M-1)/M x S/L, k = M-1.
//   all-gather      per-rail all-gather to S/L: (M-1)/M x S/L, k = M-1; intra all-gather
//                   (L-1)/L S, k = L-1.
// A device sends (L-1)/L S + (M-1)/(ML) S = (N-1)/N S per reduce-scatter or all-gather (twice
// that per all-reduce), the ring's volume, but only 1/L of it crosses the NIC. Intra phases are
// skipped when L = 1. It applies to those three kinds with a non-empty buffer over groups that
// span nodes with the same number of members on every node; auto prefers it there for
// all-reduce only: NCCL runs all-gather and reduce-scatter as its ring alone (ring.cc), so they
// run hierarchical only when forced.
// Pipelined: NCCL moves the buffer through these stages in chunks (its channels' staging
// buffers), so the NVLink and the NIC phases run at once and the call takes about the longest
// of them plus the fill of one chunk (CommPlan::pipelined, PipelineFill), not their sum; on a
// flow network the intra reduce-scatter and all-gather of an all-reduce then share NVLink, as
// their chunks do.
// Thread-safety: immutable.
#include <utility>

#include "sim/collectives/impl/builtins.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;

class Hierarchical final : public Algorithm {
 public:
  std::string_view name() const override { return "hierarchical"; }
  std::string_view description() const override {
    return "intra-node rings, then per-rail rings across nodes (multi-node groups, same members "
           "per node)";
  }
  std::string_view citation() const override {
    return "NCCL's hierarchical (two-level) collectives; Sergeev and Del Balso 2018, \"Horovod\"";
  }
  bool AppliesTo(const CollectiveCall& call, const GroupLayout& layout) const override {
    return SplitsBuffer(call) && layout.multi_node && !layout.per_node.empty();
  }
  AutoRole AutoRoleFor(const CollectiveCall& call, const GroupLayout& /*layout*/) const override {
    return call.kind == CollectiveKind::kAllReduce ? AutoRole::kPreferred : AutoRole::kNever;
  }
  bool pipelined() const override { return true; }
  StatusOr<std::vector<CommPhase>> Plan(CollectiveKind kind, const GroupLayout& layout,
                                        Routes& routes, const char* what) const override {
    PLACESIM_CHECK(!layout.per_node.empty());
    const int64_t m = static_cast<int64_t>(layout.per_node[0].size());  // nodes per group
    const int64_t l = layout.n / m;                                     // members per node
    const bool intra = l > 1;
    std::vector<StatusOr<CommPhase>> phases;
    switch (kind) {
      case CollectiveKind::kAllReduce:
        // The intra reduce-scatter and all-gather run at once on the same NVLink rings, so
        // they are one phase carrying both: 2(L-1)/L S over 2(L-1) steps.
        if (intra) phases.push_back(Intra(layout, routes, what, 2));
        phases.push_back(Rails(layout, routes, what, 2, 2 * (m - 1)));
        break;
      case CollectiveKind::kReduceScatter:
        if (intra) phases.push_back(Intra(layout, routes, what, 1));
        phases.push_back(Rails(layout, routes, what, 1, m - 1));
        break;
      case CollectiveKind::kAllGather:
        phases.push_back(Rails(layout, routes, what, 1, m - 1));
        if (intra) phases.push_back(Intra(layout, routes, what, 1));
        break;
      default:
        PLACESIM_CHECK(false);
    }
    std::vector<CommPhase> out;
    for (StatusOr<CommPhase>& ph : phases) {
      if (!ph.ok()) return ph.status();
      out.push_back(std::move(ph).value());
    }
    return out;
  }

 private:
  // Intra-node rings (one per node of every group), carrying factor x (L-1)/L S over
  // factor x (L-1) steps.
  static StatusOr<CommPhase> Intra(const GroupLayout& layout, Routes& routes, const char* what,
                                   int64_t factor) {
    const int64_t m = static_cast<int64_t>(layout.per_node[0].size());
    const int64_t l = layout.n / m;
    CommPhase ph;
    ph.num = factor * (l - 1);
    ph.den = l;
    ph.steps = factor * (l - 1);
    for (const auto& by_node : layout.per_node) {
      for (const std::vector<VertexId>& ring : by_node) {
        RETURN_IF_ERROR(AddRing(routes, ring, what, ph));
      }
    }
    return ph;
  }

  // Rail rings across nodes over S/L: the i-th member of every node, through its NIC, each
  // flow carrying factor x (M-1)/M x S/L.
  static StatusOr<CommPhase> Rails(const GroupLayout& layout, Routes& routes, const char* what,
                                   int64_t factor, int64_t steps) {
    const int64_t m = static_cast<int64_t>(layout.per_node[0].size());
    const int64_t l = layout.n / m;
    CommPhase ph;
    ph.num = factor * (m - 1);
    ph.den = m * l;
    ph.steps = steps;
    for (const auto& by_node : layout.per_node) {
      for (size_t i = 0; i < static_cast<size_t>(l); ++i) {
        for (size_t k = 0; k < static_cast<size_t>(m); ++k) {
          ASSIGN_OR_RETURN(
              FlowPath p,
              routes.OverRail(by_node[k][i], by_node[(k + 1) % static_cast<size_t>(m)][i], what));
          ph.flows.push_back(std::move(p));
        }
      }
    }
    return ph;
  }
};

}  // namespace

std::unique_ptr<const Algorithm> MakeHierarchical() { return std::make_unique<Hierarchical>(); }

}  // namespace placesim::sim::collectives
