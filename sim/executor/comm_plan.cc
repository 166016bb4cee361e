// Communication plans: group layouts on the mesh, routes over the GPUs' rails, and the plans
// of the collective algorithms (sim/collectives) with the groups that are not replayed folded
// into the link statistics.
#include "sim/executor/comm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "topology/mesh.h"

namespace placesim::sim::internal {
namespace {

using strategies::GroupKind;
using strategies::Op;
using topology::Axis;

int* CoordOf(topology::MeshCoord& c, Axis a) {
  switch (a) {
    case Axis::kData:
      return &c.dp;
    case Axis::kTensor:
      return &c.tp;
    case Axis::kPipeline:
      return &c.pp;
    case Axis::kContext:
      return &c.cp;
    case Axis::kExpert:
      return nullptr;
  }
  return nullptr;
}

// A dp collective that spans cp groups the joint (dp, cp) axis (Op::spans_context).
bool JointAxis(const Op& op) { return op.spans_context && op.axis == Axis::kData; }

// The axis part of the group and plan cache keys: the op's axis, the joint (dp, cp) axis
// apart from dp's.
int AxisKey(const Op& op) { return JointAxis(op) ? topology::kNumAxes : static_cast<int>(op.axis); }

}  // namespace

StatusOr<const topology::Route*> CommPlanner::RouteBetween(VertexId from, VertexId to,
                                                           const char* what) {
  if (!from.valid() || !to.valid()) {
    return InvalidArgumentError(fmt::format("{}: the node has no such endpoint", what));
  }
  const topology::Route* r = router_.Find(from, to);
  if (r == nullptr) {
    return InvalidArgumentError(fmt::format("{}: no route from {} to {}", what,
                                            cluster_.vertex(from).name, cluster_.vertex(to).name));
  }
  return r;
}

StatusOr<FlowPath> CommPlanner::PathBetween(VertexId from, VertexId to, const char* what) {
  ASSIGN_OR_RETURN(const topology::Route* r, RouteBetween(from, to, what));
  FlowPath p;
  p.links.reserve(r->links.size());
  for (topology::LinkId l : r->links) p.links.push_back(static_cast<LinkIndex>(l.value));
  p.latency = r->latency;
  p.bottleneck = r->bottleneck;
  return p;
}

StatusOr<FlowPath> CommPlanner::OverRail(VertexId from, VertexId to, const char* what) {
  const VertexId nic_from = RailNic(from);
  const VertexId nic_to = RailNic(to);
  if (!nic_from.valid() || !nic_to.valid()) return PathBetween(from, to, what);
  // The three legs' routes first (the cache's pointers stay valid), so the path is allocated
  // once; latency and bottleneck fold over the legs in order, as the legs' own paths would.
  std::array<const topology::Route*, 3> legs{};
  size_t hops = 0;
  const std::array<std::pair<VertexId, VertexId>, 3> ends = {
      std::pair{from, nic_from}, std::pair{nic_from, nic_to}, std::pair{nic_to, to}};
  for (size_t k = 0; k < legs.size(); ++k) {
    ASSIGN_OR_RETURN(legs[k], RouteBetween(ends[k].first, ends[k].second, what));
    hops += legs[k]->links.size();
  }
  FlowPath p;
  p.links.reserve(hops);
  for (const topology::Route* leg : legs) {
    for (topology::LinkId l : leg->links) p.links.push_back(static_cast<LinkIndex>(l.value));
    p.latency += leg->latency;
    p.bottleneck = p.links.size() == leg->links.size()
                       ? leg->bottleneck
                       : Bandwidth::BytesPerSecond(std::min(p.bottleneck.bytes_per_second(),
                                                            leg->bottleneck.bytes_per_second()));
  }
  return p;
}

StatusOr<FlowPath> CommPlanner::Between(VertexId from, VertexId to, const char* what) {
  if (from.valid() && to.valid() && cluster_.vertex(from).node != cluster_.vertex(to).node) {
    return OverRail(from, to, what);
  }
  return PathBetween(from, to, what);
}

VertexId CommPlanner::RailNic(VertexId gpu) {
  // A pure function of the GPU, looked up by name once per GPU: an all-to-all asks for it
  // on both ends of every flow.
  if (!gpu.valid()) return FindRailNic(gpu);
  if (rail_nic_.empty())
    rail_nic_.assign(static_cast<size_t>(cluster_.num_vertices()), kUnknownNic);
  int32_t& known = rail_nic_[static_cast<size_t>(gpu.value)];
  if (known == kUnknownNic) known = FindRailNic(gpu).value;
  return VertexId{known};
}

VertexId CommPlanner::FindRailNic(VertexId gpu) const {
  const topology::VertexInfo& g = cluster_.vertex(gpu);
  const topology::NodeSpec& node = cluster_.spec().node;
  if (node.nics < 1 || node.gpus < 1 || g.node < 0) return VertexId{};
  const int64_t nic = int64_t{g.local_index} * node.nics / node.gpus;
  std::optional<VertexId> v = cluster_.FindVertex(fmt::format("node{}/nic{}", g.node, nic));
  if (!v.has_value() || cluster_.vertex(*v).kind != topology::VertexKind::kNic) return VertexId{};
  return *v;
}

StatusOr<const GroupLayout*> CommPlanner::LayoutOf(int32_t stage, const Op& expert_or_op) {
  // ep groups are carved out of dp (topology/mesh.h: ep coordinate = dp coordinate mod ep):
  // an ep group is ep consecutive dp coordinates, each holding a different ep coordinate,
  // i.e. the dp shard group of size ep.
  Op on_dp;
  const bool expert = expert_or_op.axis == Axis::kExpert;
  if (expert) {
    on_dp = expert_or_op;
    on_dp.axis = Axis::kData;
    on_dp.group = GroupKind::kShardGroup;
    on_dp.spans_context = false;
  }
  const Op& op = expert ? on_dp : expert_or_op;
  const auto key = std::make_tuple(static_cast<int>(stage), AxisKey(op), static_cast<int>(op.group),
                                   static_cast<int>(op.group_size));
  if (auto it = layouts_.find(key); it != layouts_.end()) return &it->second;
  GroupLayout layout;
  layout.n = op.group_size;
  ASSIGN_OR_RETURN(layout.groups, GroupsOf(stage, op));
  PlaceOnNodes(layout);
  return &layouts_.emplace(key, std::move(layout)).first->second;
}

StatusOr<std::vector<std::vector<VertexId>>> CommPlanner::GroupsOf(int32_t stage, const Op& op) {
  // A dp group that spans cp lives on the joint (dp, cp) axis, cp innermost.
  const bool joint = JointAxis(op);
  const int axis_size = ctx_.mesh.size(op.axis) * (joint ? ctx_.mesh.cp : 1);
  const auto coord = [&](const topology::MeshCoord& c) {
    return joint ? c.dp * ctx_.mesh.cp + c.cp
                 : *CoordOf(const_cast<topology::MeshCoord&>(c), op.axis);
  };
  const auto set_coord = [&](topology::MeshCoord& c, int v) {
    if (joint) {
      c.dp = v / ctx_.mesh.cp;
      c.cp = v % ctx_.mesh.cp;
    } else {
      *CoordOf(c, op.axis) = v;
    }
  };
  const int n = op.group_size;
  topology::MeshCoord probe;
  if (CoordOf(probe, op.axis) == nullptr) {
    return InvalidArgumentError(
        fmt::format("collective on axis {}: only dp, tp, pp and cp groups are simulated",
                    topology::AxisName(op.axis)));
  }
  if (n < 1 || axis_size % n != 0 || (op.group == GroupKind::kAxis && n != axis_size)) {
    return InvalidArgumentError(fmt::format(
        "collective group {} of size {}: must divide the {} axis of size {}",
        strategies::GroupKindName(op.group), n, topology::AxisName(op.axis), axis_size));
  }
  // A replica group that spans cp (the experts' under ep with cp) is a dp replica group times
  // the whole cp axis: dp coordinates first, first + stride, ... with every cp coordinate.
  const bool joint_replicas = joint && op.group == GroupKind::kReplicaGroup;
  if (joint_replicas && (n % ctx_.mesh.cp != 0 || ctx_.mesh.dp % (n / ctx_.mesh.cp) != 0)) {
    return InvalidArgumentError(fmt::format(
        "collective replica group of size {} spanning cp: must be a divisor of dp {} times cp {}",
        n, ctx_.mesh.dp, ctx_.mesh.cp));
  }
  // Axis coordinates of the members of the group whose lowest coordinate is `first`.
  const int stride = !joint_replicas && op.group == GroupKind::kReplicaGroup ? axis_size / n : 1;
  const int dp_stride = joint_replicas ? ctx_.mesh.dp / (n / ctx_.mesh.cp) : 1;
  auto leads = [&](int c) {
    if (joint_replicas) return c % ctx_.mesh.cp == 0 && c / ctx_.mesh.cp < dp_stride;
    switch (op.group) {
      case GroupKind::kAxis:
        return c == 0;
      case GroupKind::kShardGroup:
        return c % n == 0;
      case GroupKind::kReplicaGroup:
        return c < stride;
    }
    return false;
  };
  // The k-th member's coordinate: for joint replicas, k = (dp step, cp) with cp innermost.
  auto member_coord = [&](int first, int k) {
    if (!joint_replicas) return first + k * stride;
    return (first / ctx_.mesh.cp + (k / ctx_.mesh.cp) * dp_stride) * ctx_.mesh.cp +
           k % ctx_.mesh.cp;
  };
  // Every group of the partition (symmetry folding) among the ranks of the stage, in rank
  // order of its leader. Groups on the pp axis join stages, so they are taken whole.
  std::vector<std::vector<VertexId>> groups;
  for (int64_t r = 0; r < ctx_.mesh.world() && n > 1; ++r) {
    topology::MeshCoord c = topology::RankToCoord(ctx_.mesh, ctx_.rank_order, r);
    if (op.axis != Axis::kPipeline && c.pp != stage) continue;
    const int first = coord(c);
    if (!leads(first)) continue;
    std::vector<VertexId> members;
    members.reserve(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      set_coord(c, member_coord(first, k));
      members.push_back(
          rank_gpu_[static_cast<size_t>(topology::CoordToRank(ctx_.mesh, ctx_.rank_order, c))]);
    }
    groups.push_back(std::move(members));
  }
  return groups;
}

void CommPlanner::PlaceOnNodes(GroupLayout& layout) const {
  bool uniform = true;
  for (const std::vector<VertexId>& members : layout.groups) {
    // Nodes in order of first appearance; a map, not a scan of the nodes so far, because a
    // dp group of N GPUs spans N / 8 nodes and the scan made laying it out O(N^2).
    std::unordered_map<int, size_t> node_slot;
    std::vector<std::vector<VertexId>> by_node;
    for (VertexId g : members) {
      const auto [it, added] = node_slot.try_emplace(cluster_.vertex(g).node, by_node.size());
      if (added) by_node.emplace_back();
      by_node[it->second].push_back(g);
    }
    if (by_node.size() > 1) layout.multi_node = true;
    for (const auto& on_node : by_node) uniform &= on_node.size() == by_node[0].size();
    layout.per_node.push_back(std::move(by_node));
  }
  if (!uniform) layout.per_node.clear();
  if (layout.multi_node) return;
  // Groups confined to a node with no simulated rank are not replayed (their flows meet no
  // simulated flow); their bytes still count in the link statistics.
  std::vector<std::vector<VertexId>> replayed;
  for (std::vector<VertexId>& members : layout.groups) {
    const int node = cluster_.vertex(members.front()).node;
    const bool simulated = node >= 0 && node < static_cast<int>(simulated_nodes_.size()) &&
                           simulated_nodes_[static_cast<size_t>(node)];
    (node < 0 || simulated ? replayed : layout.unreplayed).push_back(std::move(members));
  }
  layout.groups = std::move(replayed);
  layout.per_node.clear();
}

StatusOr<const CommPlan*> CommPlanner::PlanOf(int32_t stage, const Op& op,
                                              const GroupLayout& layout, int algorithm) {
  const auto key =
      std::make_tuple(static_cast<int>(stage), AxisKey(op), static_cast<int>(op.group),
                      static_cast<int>(op.group_size), static_cast<int>(op.collective), algorithm);
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  ASSIGN_OR_RETURN(CommPlan plan, BuildPlan(op, layout, algorithm));
  if (!layout.unreplayed.empty()) RETURN_IF_ERROR(AddUnreplayed(op, layout, algorithm, plan));
  for (CommPhase& ph : plan.phases) {
    if (ph.analytic_den == 0 && ph.den != 0) {
      ph.analytic_num = ph.num;
      ph.analytic_den = ph.den;
    }
    FinishPhase(ph);
  }
  SetTransport(plan, layout.n);
  return &plans_.emplace(key, std::move(plan)).first->second;
}

void CommPlanner::SetTransport(CommPlan& plan, int64_t ranks) const {
  plan.ranks = ranks;
  plan.on_network.assign(plan.phases.size(), 0);
  for (size_t k = 0; k < plan.phases.size(); ++k) {
    for (const FlowPath& f : plan.phases[k].flows) {
      for (LinkIndex l : f.links) {
        plan.on_network[k] |= cluster_.link(topology::LinkId{static_cast<int32_t>(l)}).kind !=
                              topology::LinkKind::kNvlink;
      }
      if (plan.on_network[k]) break;
    }
  }
}

StatusOr<CommPlan> CommPlanner::BuildPlan(const Op& op, const GroupLayout& layout, int algorithm) {
  const collectives::Algorithm& a = algorithms_.at(algorithm);
  const std::string what = fmt::format("{} {} on {}", strategies::CollectiveKindName(op.collective),
                                       a.name(), topology::AxisName(op.axis));
  CommPlan plan;
  plan.algorithm = algorithm;
  plan.pipelined = a.pipelined();
  ASSIGN_OR_RETURN(plan.phases, a.Plan(op.collective, layout, *this, what.c_str()));
  return plan;
}

Status CommPlanner::AddUnreplayed(const Op& op, const GroupLayout& layout, int algorithm,
                                  CommPlan& plan) {
  // The groups not replayed: their flows' link hops per kind, for the link statistics. They
  // are left out only when they stay on NVLink, where no flow from outside the node passes;
  // otherwise they are replayed after all.
  GroupLayout shadow;
  shadow.n = layout.n;
  shadow.groups = layout.unreplayed;
  ASSIGN_OR_RETURN(CommPlan copies, BuildPlan(op, shadow, algorithm));
  bool nvlink_only = copies.phases.size() == plan.phases.size();
  for (const CommPhase& ph : copies.phases) {
    for (const FlowPath& f : ph.flows) {
      for (LinkIndex l : f.links) {
        nvlink_only &= cluster_.link(topology::LinkId{static_cast<int32_t>(l)}).kind ==
                       topology::LinkKind::kNvlink;
      }
    }
  }
  if (nvlink_only) plan.unreplayed_hops.resize(plan.phases.size());
  for (size_t k = 0; k < copies.phases.size() && k < plan.phases.size(); ++k) {
    CommPhase& ph = plan.phases[k];
    for (FlowPath& f : copies.phases[k].flows) {
      if (!nvlink_only) {
        ph.flows.push_back(std::move(f));
        continue;
      }
      for (LinkIndex l : f.links) {
        ++plan.unreplayed_hops[k][static_cast<size_t>(
            cluster_.link(topology::LinkId{static_cast<int32_t>(l)}).kind)];
        if (l >= unreplayed_link_.size()) unreplayed_link_.resize(l + 1, 0);
        unreplayed_link_[l] = 1;
      }
    }
  }
  return Status();
}

}  // namespace placesim::sim::internal
