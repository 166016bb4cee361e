// Communication plans of the executor (internal to sim/executor): which GPUs form each group
// of a collective, and the phases of flows, with their routes, that a collective, a pipeline
// send or a copy starts. A CommPlanner builds them once per (stage, group, kind, algorithm)
// and keeps them for every op that shares them. The algorithms and their byte counts are
// stated in executor.h.
//
// Thread-safety: a CommPlanner belongs to one execution.
#ifndef PLACESIM_SIM_EXECUTOR_COMM_PLAN_H_
#define PLACESIM_SIM_EXECUTOR_COMM_PLAN_H_

#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/executor/executor.h"
#include "sim/network/flow_network.h"
#include "strategies/schedule.h"
#include "topology/cluster.h"
#include "topology/routing.h"

namespace placesim::sim::internal {

using topology::VertexId;

// One flow of a collective or copy: its route on the network and what it costs alone.
struct FlowPath {
  std::vector<LinkIndex> links;
  Duration latency;
  Bandwidth bottleneck;
};

// One phase of a collective or copy: flows started together. Each flow carries
// S x num / den bytes (S = the op's buffer_bytes), or the op's own bytes when den == 0; the
// analytic model charges S x analytic_num / analytic_den (the same unless stated). Each flow
// stands for `steps` pipelined steps and pays steps x its route latency.
struct CommPhase {
  std::vector<FlowPath> flows;
  // The distinct (latency, bottleneck) pairs of the flows: the analytic time of the phase is
  // the longest of theirs, so estimates cost O(distinct routes), not O(flows).
  std::vector<std::pair<Duration, double>> classes;
  int64_t num = 0;
  int64_t den = 0;
  int64_t analytic_num = 0;
  int64_t analytic_den = 0;
  int64_t steps = 1;
  // Link hops per LinkKind of the flows of groups not replayed (GroupLayout::unreplayed):
  // each time the phase runs they carry its bytes, counted in the link statistics.
  std::array<int64_t, kNumLinkKinds> unreplayed_hops{};
};

struct CommPlan {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  std::vector<CommPhase> phases;
};

// The groups of a collective's partition and how they sit on the nodes.
struct GroupLayout {
  int n = 1;                                  // members per group
  std::vector<std::vector<VertexId>> groups;  // every group, members in axis order
  // Members of each group per node (in order of first member), when every node a group
  // touches holds the same number of its members; empty otherwise.
  std::vector<std::vector<std::vector<VertexId>>> per_node;
  bool multi_node = false;  // a group spans more than one node
  // Groups of the partition that are not replayed: each lies inside one node that holds no
  // simulated rank, so its flows meet none of the simulated ranks' flows, and by symmetry it
  // runs exactly as a replayed group does (see "Symmetry folding" in executor.h).
  std::vector<std::vector<VertexId>> unreplayed;
};

// The bytes each flow of the phase carries for `op`.
Bytes PhaseBytes(const CommPhase& ph, const strategies::Op& op);
// The plan alone, no contention: the sum over its phases of their longest flow's alpha-beta
// time, on the bytes the analytic model charges.
Duration PlanAnalyticTime(const CommPlan& plan, const strategies::Op& op);
// Fills ph.classes from its flows.
void FinishPhase(CommPhase& ph);

class CommPlanner {
 public:
  // `rank_gpu` (the GPU of every rank) and `simulated_nodes` (per node, 1 when it holds a
  // simulated rank) are read when groups are laid out; they must be filled by then and
  // outlive the planner, as must the cluster and the context.
  CommPlanner(const topology::Cluster& cluster, const ExecutionContext& context,
              const std::vector<VertexId>& rank_gpu, const std::vector<char>& simulated_nodes)
      : cluster_(cluster),
        ctx_(context),
        rank_gpu_(rank_gpu),
        simulated_nodes_(simulated_nodes),
        router_(cluster) {}

  // The groups of `op`'s partition among the ranks of pipeline stage `stage` (ep groups are
  // carved out of dp; a dp group that spans cp lives on the joint (dp, cp) axis).
  StatusOr<const GroupLayout*> LayoutOf(int32_t stage, const strategies::Op& op);
  // The plan of `op` over `layout` with `algorithm`, built on first use.
  StatusOr<const CommPlan*> PlanOf(int32_t stage, const strategies::Op& op,
                                   const GroupLayout& layout, CollectiveAlgorithm algorithm);
  StatusOr<FlowPath> PathBetween(VertexId from, VertexId to, const char* what);
  // Between two GPUs: over their rails when they are on different nodes (NCCL's transports
  // use the NIC nearest each GPU), the plain route within a node.
  StatusOr<FlowPath> PathGpuToGpu(VertexId from, VertexId to, const char* what);
  // Per link: 1 when it carries a group that is not replayed.
  const std::vector<char>& unreplayed_links() const { return unreplayed_link_; }

 private:
  // The route from -> NIC of `from` -> NIC of `to` -> to, through the NIC nearest each GPU
  // (its rail); the plain route when a node has no such NIC (explicit graphs, no NICs).
  StatusOr<FlowPath> PathOverRail(VertexId from, VertexId to, const char* what);
  StatusOr<CommPlan> BuildPlan(const strategies::Op& op, const GroupLayout& layout,
                               CollectiveAlgorithm algorithm);
  VertexId RailNic(VertexId gpu) const;
  Status AddRing(const std::vector<VertexId>& ring, const char* what, CommPhase& phase);

  const topology::Cluster& cluster_;
  const ExecutionContext& ctx_;
  const std::vector<VertexId>& rank_gpu_;
  const std::vector<char>& simulated_nodes_;
  topology::Router router_;
  // Collective groups per (stage, axis, group kind, size); plans per (stage, axis, group kind,
  // size, collective kind, algorithm). std::map keeps the addresses stable.
  std::map<std::tuple<int, int, int, int>, GroupLayout> layouts_;
  std::map<std::tuple<int, int, int, int, int, int>, CommPlan> plans_;
  std::vector<char> unreplayed_link_;
};

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_EXECUTOR_COMM_PLAN_H_
