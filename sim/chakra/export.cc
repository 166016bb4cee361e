// A simulated step as a Chakra workload (export.h). Groups come from the executor's own
// layout of each collective (CommPlanner::LayoutOf), so the exported groups are the ones the
// simulation used.
#include "sim/chakra/export.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>

#include "sim/collectives/registry.h"
#include "sim/executor/comm_plan.h"
#include "topology/placement.h"

namespace placesim::chakra {
namespace {

using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;

CommType CommTypeOf(strategies::CollectiveKind k) {
  switch (k) {
    case strategies::CollectiveKind::kAllGather:
      return CommType::kAllGather;
    case strategies::CollectiveKind::kReduceScatter:
      return CommType::kReduceScatter;
    case strategies::CollectiveKind::kAllToAll:
      return CommType::kAllToAll;
    case strategies::CollectiveKind::kBroadcast:
      return CommType::kBroadcast;
    default:
      return CommType::kAllReduce;
  }
}

class Exporter {
 public:
  Exporter(const topology::Cluster& cluster, std::span<const Schedule> schedules,
           const topology::MeshShape& mesh, const topology::RankOrder& order, double flops_per_op)
      : cluster_(cluster), schedules_(schedules), flops_per_op_(flops_per_op) {
    context_.mesh = mesh;
    context_.rank_order = order;
  }

  StatusOr<Workload> Run() {
    ASSIGN_OR_RETURN(rank_gpu_, topology::PlaceRanks(cluster_, context_.mesh, context_.rank_order));
    for (size_t r = 0; r < rank_gpu_.size(); ++r) {
      rank_of_gpu_[rank_gpu_[r].value] = static_cast<int64_t>(r);
    }
    simulated_nodes_.assign(static_cast<size_t>(std::max(1, cluster_.spec().nodes)), 1);
    planner_ = std::make_unique<sim::internal::CommPlanner>(
        cluster_, context_, rank_gpu_, simulated_nodes_, sim::collectives::BuiltinRegistry());
    for (const Schedule& s : schedules_) by_stage_[s.stage] = &s;
    Workload w;
    for (int64_t r = 0; r < context_.mesh.world(); ++r) {
      ASSIGN_OR_RETURN(RankTrace t, ExportRank(r));
      w.ranks.push_back(std::move(t));
    }
    w.groups = std::move(groups_);
    return w;
  }

 private:
  int64_t RankOnStage(int64_t rank, int32_t stage) const {
    topology::MeshCoord c = topology::RankToCoord(context_.mesh, context_.rank_order, rank);
    c.pp = stage;
    return topology::CoordToRank(context_.mesh, context_.rank_order, c);
  }

  // The id of the group of `op` that holds `rank`, numbered from 1 in order of first use.
  StatusOr<int64_t> GroupOf(int64_t rank, int32_t stage, const Op& op) {
    ASSIGN_OR_RETURN(const sim::collectives::GroupLayout* layout, planner_->LayoutOf(stage, op));
    for (const auto& members : layout->groups) {
      std::vector<int64_t> ranks;
      for (topology::VertexId g : members) ranks.push_back(rank_of_gpu_.at(g.value));
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) continue;
      auto [it, fresh] = group_ids_.emplace(ranks, static_cast<int64_t>(group_ids_.size()) + 1);
      if (fresh) groups_[it->second] = ranks;
      return it->second;
    }
    return static_cast<int64_t>(-2);  // a group of one: the rank alone
  }

  StatusOr<RankTrace> ExportRank(int64_t rank) {
    const int32_t stage = topology::RankToCoord(context_.mesh, context_.rank_order, rank).pp;
    auto it = by_stage_.find(stage);
    if (it == by_stage_.end()) {
      return InvalidArgumentError(fmt::format("chakra export: no schedule for stage {}", stage));
    }
    const Schedule& s = *it->second;
    RankTrace t;
    t.rank = rank;
    t.version = "0.0.4";
    // Per op: the exported ops it stands for as a dependency (itself, or a dropped op's deps).
    std::vector<std::vector<uint64_t>> stands_for(s.ops.size());
    std::array<int64_t, strategies::kNumStreams> last{};
    last.fill(-1);
    for (size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      std::vector<uint64_t> deps;
      for (int32_t d : s.DepsOf(i)) {
        const auto& f = stands_for[static_cast<size_t>(d)];
        deps.insert(deps.end(), f.begin(), f.end());
      }
      const auto stream = static_cast<size_t>(op.stream);
      if (last[stream] >= 0) {
        const auto& f = stands_for[static_cast<size_t>(last[stream])];
        deps.insert(deps.end(), f.begin(), f.end());
      }
      last[stream] = static_cast<int64_t>(i);
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
        stands_for[i] = std::move(deps);
        continue;
      }
      ASSIGN_OR_RETURN(Node n, ToNode(rank, s, i));
      n.ctrl_deps = std::move(deps);
      stands_for[i] = {n.id};
      t.nodes.push_back(std::move(n));
    }
    return t;
  }

  StatusOr<Node> ToNode(int64_t rank, const Schedule& s, size_t i) {
    const Op& op = s.ops[i];
    Node n;
    n.id = i;
    n.name = fmt::format("{}.{}", strategies::OpKindName(op.kind), i);
    switch (op.kind) {
      case OpKind::kCompute:
      case OpKind::kHostCompute:
        n.type = NodeType::kCompute;
        n.is_cpu_op = op.kind == OpKind::kHostCompute;
        n.num_ops = std::llround(op.flops.count() / flops_per_op_);
        n.tensor_size = op.bytes_read + op.bytes_written;
        n.elementwise_bytes = op.elementwise_bytes;
        return n;
      case OpKind::kCopy:
        n.type = op.copy == strategies::CopyKind::kHostToDevice ||
                         op.copy == strategies::CopyKind::kNvmeRead
                     ? NodeType::kMemLoad
                     : NodeType::kMemStore;
        n.nvme = op.copy == strategies::CopyKind::kNvmeRead ||
                 op.copy == strategies::CopyKind::kNvmeWrite;
        n.tensor_size = op.bytes;
        return n;
      case OpKind::kRecv: {
        const Schedule& peer = *by_stage_.at(op.peer_stage);
        n.type = NodeType::kRecv;
        n.comm_src = RankOnStage(rank, op.peer_stage);
        n.comm_tag = op.match;
        n.comm_size = peer.ops[static_cast<size_t>(op.match)].bytes;
        return n;
      }
      default:
        break;
    }
    if (op.collective == strategies::CollectiveKind::kSendRecv && op.peer_stage >= 0) {
      n.type = NodeType::kSend;
      n.comm_dst = RankOnStage(rank, op.peer_stage);
      n.comm_tag = static_cast<int64_t>(i);
      n.comm_size = op.bytes;
      return n;
    }
    n.type = NodeType::kCollective;
    n.comm_type = CommTypeOf(op.collective);
    n.comm_size = n.comm_type == CommType::kAllGather && op.group_size > 0
                      ? Bytes::Count(op.buffer_bytes.count() / op.group_size)
                      : op.buffer_bytes;
    ASSIGN_OR_RETURN(const int64_t g, GroupOf(rank, s.stage, op));
    if (g == -2) {
      auto [it, fresh] = group_ids_.emplace(std::vector<int64_t>{rank},
                                            static_cast<int64_t>(group_ids_.size()) + 1);
      if (fresh) groups_[it->second] = {rank};
      n.comm_group = it->second;
    } else {
      n.comm_group = g;
    }
    return n;
  }

  const topology::Cluster& cluster_;
  std::span<const Schedule> schedules_;
  double flops_per_op_;
  sim::ExecutionContext context_;
  std::vector<topology::VertexId> rank_gpu_;
  std::map<int32_t, int64_t> rank_of_gpu_;
  std::vector<char> simulated_nodes_;
  std::unique_ptr<sim::internal::CommPlanner> planner_;
  std::map<int32_t, const Schedule*> by_stage_;
  std::map<std::vector<int64_t>, int64_t> group_ids_;
  std::map<int64_t, std::vector<int64_t>> groups_;
};

}  // namespace

StatusOr<Workload> WorkloadFromSchedules(const topology::Cluster& cluster,
                                         std::span<const strategies::Schedule> schedules,
                                         const topology::MeshShape& mesh,
                                         const topology::RankOrder& order, double flops_per_op) {
  return Exporter(cluster, schedules, mesh, order, flops_per_op).Run();
}

StatusOr<Workload> ExportStep(const topology::Cluster& cluster, const strategies::ModelSpec& model,
                              const strategies::TrainingSpec& training,
                              const strategies::StrategySpec& strategy,
                              const strategies::ScheduleOptions& options) {
  ASSIGN_OR_RETURN(strategies::Plan plan,
                   strategies::Analyze(model, training, strategy, cluster.spec(),
                                       strategies::ScheduleAnalyzeOptions(options)));
  ASSIGN_OR_RETURN(std::vector<strategies::Schedule> schedules,
                   strategies::BuildSchedulesForPlan(model, training, strategy, plan, options));
  return WorkloadFromSchedules(cluster, schedules, strategy.mesh, strategy.rank_order);
}

}  // namespace placesim::chakra
