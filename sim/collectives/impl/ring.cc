// The ring, NCCL's: the bandwidth-optimal all-reduce of Patarasuk and Yuan 2009, and NCCL's only
// algorithm for all-gather and reduce-scatter (ncclTopoTuneModel models no other for them,
// "if (coll != ncclCollAllReduce && a != NCCL_ALGO_RING) continue;", NVIDIA/nccl
// src/graph/tuning.cc at 01afd20a). Each member sends the op's per-device ring volume V over
// its ring edge, V = 2(N-1)/N S for all-reduce, (N-1)/N S for reduce-scatter and all-gather,
// in k = 2(N-1), N-1 or (point-to-point) 1 pipelined steps. It runs any kind but all-to-all
// and is auto's fallback: the choice within one node and for kinds the other algorithms do
// not run (broadcast, send-recv without a peer stage, empty buffers), and auto's only choice
// for all-gather and reduce-scatter, as in NCCL.
//
// Within one node, or with one member per node (rails), or when the nodes hold different
// numbers of members: one phase of N flows per group, one per edge g_i -> g_{i+1 mod N} in
// axis order, each carrying V over k steps. So an uncontended ring all-reduce over one
// NVSwitch takes 2(N-1) alpha + V / B, for alpha a flow's route latency and B its bottleneck.
//
// Across nodes, L > 1 members on each of M nodes (N = M L), an all-reduce, reduce-scatter or
// all-gather runs as NCCL's multi-channel ring: one channel per member of a node, each over
// S / L of the buffer. NCCL orders its rings by the topology, not by rank: channel c visits a
// node's members from local position c round to c - 1 (mod L), then leaves the node through
// the NIC of member c, PXN style (NCCL >= 2.12: the last GPU hands the data over NVLink to
// the GPU beside the NIC), and enters the next node's member c through that rail. So every
// member's rail NIC carries 1/L of the ring's cross-node bytes and the node's rail NICs
// together carry all of them, where a single ring sends them through one NIC. The L
// channels' flows are aggregated per distinct (src, dst) pair, two phases that run at once
// (pipelined):
//   in-node   per node, edges l_i -> l_{i+1 mod L}, used by L-1 channels each:
//             (L-1)/L x V per flow, k = (N - M) steps (2(N - M) for all-reduce)
//   crossing  per node, member c -> member c of the next node over their rail, one channel
//             each: V / L per flow, k = M - 1 steps (2(M - 1) for all-reduce)
// The PXN hand-over's NVLink hop (member c-1 -> c, V / L) is left out of the crossing flows:
// it adds 1/L to an NVLink edge that already carries (L-1)/L at 9 times a NIC's bandwidth on
// DGX nodes, and keeping each node's NVLink and network flows apart keeps the flow model's
// max-min solve split into small independent parts (with the hop, a ZeRO-3 step of 1024 GPUs
// took three times as long to simulate).
// 2 L flows per node, as many as the hierarchical plan's. The steps split as NCCL's latency
// model splits them, (nsteps - nInterSteps) NVLink steps and nInterSteps network ones, so the
// protocol cost (nccl_model.h) charges each at its transport's hwLat. The channel count is
// the node's member count; the NICs they use follow from the node preset (the NIC nearest
// each member, nics / gpus of them per GPU), so on a node with fewer NICs than GPUs two
// channels share one NIC, as NCCL's duplicated channels do.
// Thread-safety: immutable.
#include <utility>

#include "sim/collectives/impl/builtins.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;

class Ring final : public Algorithm {
 public:
  std::string_view name() const override { return "ring"; }
  std::string_view description() const override {
    return "NCCL's ring: 2(N-1) steps for all-reduce, N-1 otherwise; across nodes one channel "
           "per member of a node, over every member's NIC";
  }
  std::string_view citation() const override {
    return "Patarasuk and Yuan 2009, \"Bandwidth optimal all-reduce algorithms for clusters of "
           "workstations\"; NCCL's multi-channel ring (src/graph/tuning.cc, search.cc)";
  }
  bool AppliesTo(const CollectiveCall& call, const GroupLayout& /*layout*/) const override {
    return call.kind != CollectiveKind::kAllToAll;
  }
  AutoRole AutoRoleFor(const CollectiveCall& /*call*/,
                       const GroupLayout& /*layout*/) const override {
    return AutoRole::kFallback;
  }
  // The channels' two phases run at once; a plan of one phase runs the same either way.
  bool pipelined() const override { return true; }
  StatusOr<std::vector<CommPhase>> Plan(CollectiveKind kind, const GroupLayout& layout,
                                        Routes& routes, const char* what) const override {
    if (Channels(kind, layout)) return PlanChannels(kind, layout, routes, what);
    CommPhase ph;
    ph.steps = RingSteps(kind, layout.n);
    for (const std::vector<VertexId>& ring : layout.groups) {
      RETURN_IF_ERROR(AddRing(routes, ring, what, ph));
    }
    std::vector<CommPhase> phases;
    phases.push_back(std::move(ph));
    return phases;
  }

 private:
  // Whether `kind` over `layout` runs as the multi-channel ring across nodes.
  static bool Channels(CollectiveKind kind, const GroupLayout& layout) {
    const bool splits = kind == CollectiveKind::kAllReduce ||
                        kind == CollectiveKind::kReduceScatter ||
                        kind == CollectiveKind::kAllGather;
    return splits && layout.multi_node && !layout.per_node.empty() &&
           layout.n > static_cast<int>(layout.per_node[0].size());
  }

  static StatusOr<std::vector<CommPhase>> PlanChannels(CollectiveKind kind,
                                                       const GroupLayout& layout, Routes& routes,
                                                       const char* what) {
    const int64_t m = static_cast<int64_t>(layout.per_node[0].size());  // nodes per group
    const int64_t n = layout.n;
    const int64_t l = n / m;  // members per node: the channels
    const int64_t factor = kind == CollectiveKind::kAllReduce ? 2 : 1;
    CommPhase in_node;
    in_node.num = factor * (l - 1) * (n - 1);
    in_node.den = l * n;
    in_node.steps = factor * (n - m);
    CommPhase crossing;
    crossing.num = factor * (n - 1);
    crossing.den = l * n;
    crossing.steps = factor * (m - 1);
    for (const auto& by_node : layout.per_node) {
      for (size_t k = 0; k < by_node.size(); ++k) {
        const std::vector<VertexId>& here = by_node[k];
        const std::vector<VertexId>& next = by_node[(k + 1) % by_node.size()];
        RETURN_IF_ERROR(AddRing(routes, here, what, in_node));
        for (size_t c = 0; c < here.size(); ++c) {
          ASSIGN_OR_RETURN(FlowPath rail, routes.OverRail(here[c], next[c], what));
          crossing.flows.push_back(std::move(rail));
        }
      }
    }
    std::vector<CommPhase> phases;
    phases.push_back(std::move(in_node));
    phases.push_back(std::move(crossing));
    return phases;
  }
};

}  // namespace

std::unique_ptr<const Algorithm> MakeRing() { return std::make_unique<Ring>(); }

}  // namespace placesim::sim::collectives
