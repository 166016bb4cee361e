// Communication plans of the executor (internal to sim/executor): which GPUs form each group
// of a collective, the routes between them, and the plans (phases of flows) of the collective
// algorithms (sim/collectives) over those groups. A CommPlanner builds each group layout and
// each plan once per (stage, group, kind, algorithm) and keeps them for every op that shares
// them; it also folds the groups that need no replay (see "Symmetry folding" in executor.h)
// into the link statistics.
//
// Thread-safety: a CommPlanner belongs to one execution.
#ifndef PLACESIM_SIM_EXECUTOR_COMM_PLAN_H_
#define PLACESIM_SIM_EXECUTOR_COMM_PLAN_H_

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "sim/collectives/algorithm.h"
#include "sim/collectives/registry.h"
#include "sim/executor/executor.h"
#include "sim/network/phase.h"
#include "strategies/schedule.h"
#include "topology/cluster.h"
#include "topology/routing.h"

namespace placesim::sim::internal {

using collectives::CommPlan;
using collectives::GroupLayout;
using topology::VertexId;

class CommPlanner final : public collectives::Routes {
 public:
  // `rank_gpu` (the GPU of every rank) and `simulated_nodes` (per node, 1 when it holds a
  // simulated rank) are read when groups are laid out; they must be filled by then and
  // outlive the planner, as must the cluster, the context and the registry.
  CommPlanner(const topology::Cluster& cluster, const ExecutionContext& context,
              const std::vector<VertexId>& rank_gpu, const std::vector<char>& simulated_nodes,
              const collectives::Registry& algorithms)
      : cluster_(cluster),
        ctx_(context),
        rank_gpu_(rank_gpu),
        simulated_nodes_(simulated_nodes),
        algorithms_(algorithms),
        router_(cluster) {}

  // The groups of `op`'s partition among the ranks of pipeline stage `stage` (ep groups are
  // carved out of dp; a dp group that spans cp lives on the joint (dp, cp) axis).
  StatusOr<const GroupLayout*> LayoutOf(int32_t stage, const strategies::Op& op);
  // The plan of `op` over `layout` with the registry's algorithm `algorithm`, built on first use.
  StatusOr<const CommPlan*> PlanOf(int32_t stage, const strategies::Op& op,
                                   const GroupLayout& layout, int algorithm);
  StatusOr<FlowPath> PathBetween(VertexId from, VertexId to, const char* what);
  // Sets plan.on_network (per phase, whether a flow crosses a link other than NVLink) and
  // plan.ranks = `ranks`, what the protocol cost reads (sim/collectives/nccl_model.h).
  void SetTransport(CommPlan& plan, int64_t ranks) const;
  // collectives::Routes: GPU to GPU (over their rails when they are on different nodes), and
  // over the rails whatever the nodes.
  StatusOr<FlowPath> Between(VertexId from, VertexId to, const char* what) override;
  StatusOr<FlowPath> OverRail(VertexId from, VertexId to, const char* what) override;
  // Per link: 1 when it carries a group that is not replayed.
  const std::vector<char>& unreplayed_links() const { return unreplayed_link_; }

 private:
  // The groups of the partition of `op` (an op on the dp, tp, pp, cp or joint axis) among the
  // ranks of `stage`, in rank order of their leaders.
  StatusOr<std::vector<std::vector<VertexId>>> GroupsOf(int32_t stage, const strategies::Op& op);
  // Fills layout.per_node and layout.multi_node from layout.groups; for groups within one
  // node, moves those on nodes without a simulated rank to layout.unreplayed.
  void PlaceOnNodes(GroupLayout& layout) const;
  StatusOr<CommPlan> BuildPlan(const strategies::Op& op, const GroupLayout& layout, int algorithm);
  // Adds the flows of `unreplayed` groups to `plan`: as flows when they leave NVLink, else as
  // link hops per kind for the statistics.
  Status AddUnreplayed(const strategies::Op& op, const GroupLayout& layout, int algorithm,
                       CommPlan& plan);
  // The NIC on gpu's rail (invalid when its node has none), cached per GPU.
  VertexId RailNic(VertexId gpu);
  VertexId FindRailNic(VertexId gpu) const;
  // The cached route from -> to, or the error PathBetween reports.
  StatusOr<const topology::Route*> RouteBetween(VertexId from, VertexId to, const char* what);

  const topology::Cluster& cluster_;
  const ExecutionContext& ctx_;
  const std::vector<VertexId>& rank_gpu_;
  const std::vector<char>& simulated_nodes_;
  const collectives::Registry& algorithms_;
  topology::Router router_;
  // Collective groups per (stage, axis, group kind, size); plans per (stage, axis, group kind,
  // size, collective kind, algorithm). std::map keeps the addresses stable.
  std::map<std::tuple<int, int, int, int>, GroupLayout> layouts_;
  std::map<std::tuple<int, int, int, int, int, int>, CommPlan> plans_;
  std::vector<char> unreplayed_link_;
  static constexpr int32_t kUnknownNic = -2;  // VertexId{} is -1
  std::vector<int32_t> rail_nic_;             // by vertex: RailNic, or kUnknownNic
};

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_EXECUTOR_COMM_PLAN_H_
