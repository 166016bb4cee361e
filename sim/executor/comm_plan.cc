// Communication plans: group layouts on the mesh and the flows of every collective
// algorithm (ring, hierarchical, double binary tree, pairwise all-to-all), point-to-point
// paths over the GPUs' rails. The algorithms are stated in executor.h.
#include "sim/executor/comm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

#include "sim/executor/trees.h"
#include "sim/network/alpha_beta.h"
#include "topology/mesh.h"

namespace placesim::sim::internal {
namespace {

using strategies::CollectiveKind;
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

// Ring steps of a collective: 2(N-1) for all-reduce, N-1 for the others; one for a
// point-to-point transfer.
int64_t RingSteps(CollectiveKind k, int64_t n) {
  if (n <= 1) return 0;
  switch (k) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1);
    case CollectiveKind::kSendRecv:
      return 1;
    default:
      return n - 1;
  }
}

// S x num / den without overflow for num, den < 2^31 (bytes below 2^62).
Bytes Scale(Bytes s, int64_t num, int64_t den) {
  const int64_t b = s.count();
  return Bytes::Count((b / den) * num + (b % den) * num / den);
}

Bytes AnalyticBytes(const CommPhase& ph, const Op& op) {
  return ph.analytic_den == 0 ? op.bytes : Scale(op.buffer_bytes, ph.analytic_num, ph.analytic_den);
}

// The phase alone, no contention: its longest flow's alpha-beta time.
Duration PhaseAnalyticTime(const CommPhase& ph, const Op& op) {
  const Bytes bytes = AnalyticBytes(ph, op);
  Duration longest = Duration::Zero();
  for (const auto& [latency, bw] : ph.classes) {
    longest =
        std::max(longest, AlphaBetaTime(Bandwidth::BytesPerSecond(bw), latency * ph.steps, bytes));
  }
  return longest;
}

}  // namespace

Bytes PhaseBytes(const CommPhase& ph, const Op& op) {
  return ph.den == 0 ? op.bytes : Scale(op.buffer_bytes, ph.num, ph.den);
}

Duration PlanAnalyticTime(const CommPlan& plan, const Op& op) {
  Duration total = Duration::Zero();
  for (const CommPhase& ph : plan.phases) total += PhaseAnalyticTime(ph, op);
  return total;
}

void FinishPhase(CommPhase& ph) {
  for (const FlowPath& f : ph.flows) {
    ph.classes.emplace_back(f.latency, f.bottleneck.bytes_per_second());
  }
  std::sort(ph.classes.begin(), ph.classes.end());
  ph.classes.erase(std::unique(ph.classes.begin(), ph.classes.end()), ph.classes.end());
}

StatusOr<FlowPath> CommPlanner::PathBetween(VertexId from, VertexId to, const char* what) {
  if (!from.valid() || !to.valid()) {
    return InvalidArgumentError(fmt::format("{}: the node has no such endpoint", what));
  }
  const topology::Route* r = router_.Find(from, to);
  if (r == nullptr) {
    return InvalidArgumentError(fmt::format("{}: no route from {} to {}", what,
                                            cluster_.vertex(from).name, cluster_.vertex(to).name));
  }
  FlowPath p;
  p.links.reserve(r->links.size());
  for (topology::LinkId l : r->links) p.links.push_back(static_cast<LinkIndex>(l.value));
  p.latency = r->latency;
  p.bottleneck = r->bottleneck;
  return p;
}

StatusOr<FlowPath> CommPlanner::PathOverRail(VertexId from, VertexId to, const char* what) {
  const VertexId nic_from = RailNic(from);
  const VertexId nic_to = RailNic(to);
  if (!nic_from.valid() || !nic_to.valid()) return PathBetween(from, to, what);
  FlowPath p;
  for (auto [a, b] :
       {std::pair{from, nic_from}, std::pair{nic_from, nic_to}, std::pair{nic_to, to}}) {
    ASSIGN_OR_RETURN(FlowPath leg, PathBetween(a, b, what));
    p.links.insert(p.links.end(), leg.links.begin(), leg.links.end());
    p.latency += leg.latency;
    p.bottleneck = p.links.size() == leg.links.size()
                       ? leg.bottleneck
                       : Bandwidth::BytesPerSecond(std::min(p.bottleneck.bytes_per_second(),
                                                            leg.bottleneck.bytes_per_second()));
  }
  return p;
}

StatusOr<FlowPath> CommPlanner::PathGpuToGpu(VertexId from, VertexId to, const char* what) {
  if (from.valid() && to.valid() && cluster_.vertex(from).node != cluster_.vertex(to).node) {
    return PathOverRail(from, to, what);
  }
  return PathBetween(from, to, what);
}

VertexId CommPlanner::RailNic(VertexId gpu) const {
  const topology::VertexInfo& g = cluster_.vertex(gpu);
  const topology::NodeSpec& node = cluster_.spec().node;
  if (node.nics < 1 || node.gpus < 1 || g.node < 0) return VertexId{};
  const int64_t nic = int64_t{g.local_index} * node.nics / node.gpus;
  std::optional<VertexId> v = cluster_.FindVertex(fmt::format("node{}/nic{}", g.node, nic));
  if (!v.has_value() || cluster_.vertex(*v).kind != topology::VertexKind::kNic) return VertexId{};
  return *v;
}

Status CommPlanner::AddRing(const std::vector<VertexId>& ring, const char* what, CommPhase& phase) {
  const size_t n = ring.size();
  if (n < 2) return Status();
  for (size_t k = 0; k < n; ++k) {
    ASSIGN_OR_RETURN(FlowPath p, PathGpuToGpu(ring[k], ring[(k + 1) % n], what));
    phase.flows.push_back(std::move(p));
  }
  return Status();
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
  // A dp group that spans cp lives on the joint (dp, cp) axis, cp innermost.
  const bool joint = JointAxis(op);
  const auto key = std::make_tuple(static_cast<int>(stage), AxisKey(op), static_cast<int>(op.group),
                                   static_cast<int>(op.group_size));
  if (auto it = layouts_.find(key); it != layouts_.end()) return &it->second;
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
  GroupLayout layout;
  layout.n = n;
  // Every group of the partition (symmetry folding) among the ranks of the stage, in rank
  // order of its leader. Groups on the pp axis join stages, so they are taken whole.
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
    layout.groups.push_back(std::move(members));
  }
  bool uniform = true;
  for (const std::vector<VertexId>& members : layout.groups) {
    std::vector<int> nodes;
    std::vector<std::vector<VertexId>> by_node;
    for (VertexId g : members) {
      const int node = cluster_.vertex(g).node;
      auto it = std::find(nodes.begin(), nodes.end(), node);
      if (it == nodes.end()) {
        nodes.push_back(node);
        by_node.emplace_back();
        it = nodes.end() - 1;
      }
      by_node[static_cast<size_t>(it - nodes.begin())].push_back(g);
    }
    if (by_node.size() > 1) layout.multi_node = true;
    for (const auto& on_node : by_node) uniform &= on_node.size() == by_node[0].size();
    layout.per_node.push_back(std::move(by_node));
  }
  if (!uniform) layout.per_node.clear();
  if (!layout.multi_node) {
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
  return &layouts_.emplace(key, std::move(layout)).first->second;
}

StatusOr<const CommPlan*> CommPlanner::PlanOf(int32_t stage, const Op& op,
                                              const GroupLayout& layout,
                                              CollectiveAlgorithm algorithm) {
  const auto key = std::make_tuple(static_cast<int>(stage), AxisKey(op), static_cast<int>(op.group),
                                   static_cast<int>(op.group_size), static_cast<int>(op.collective),
                                   static_cast<int>(algorithm));
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  ASSIGN_OR_RETURN(CommPlan plan, BuildPlan(op, layout, algorithm));
  if (!layout.unreplayed.empty()) {
    // The groups not replayed: their flows' link hops per kind, for the link statistics. They
    // are left out only when they stay on NVLink, where no flow from outside the node
    // passes; otherwise they are replayed after all.
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
    for (size_t k = 0; k < copies.phases.size() && k < plan.phases.size(); ++k) {
      CommPhase& ph = plan.phases[k];
      for (FlowPath& f : copies.phases[k].flows) {
        if (!nvlink_only) {
          ph.flows.push_back(std::move(f));
          continue;
        }
        for (LinkIndex l : f.links) {
          ++ph.unreplayed_hops[static_cast<size_t>(
              cluster_.link(topology::LinkId{static_cast<int32_t>(l)}).kind)];
          if (l >= unreplayed_link_.size()) unreplayed_link_.resize(l + 1, 0);
          unreplayed_link_[l] = 1;
        }
      }
    }
  }
  for (CommPhase& ph : plan.phases) {
    if (ph.analytic_den == 0 && ph.den != 0) {
      ph.analytic_num = ph.num;
      ph.analytic_den = ph.den;
    }
    FinishPhase(ph);
  }
  return &plans_.emplace(key, std::move(plan)).first->second;
}

StatusOr<CommPlan> CommPlanner::BuildPlan(const Op& op, const GroupLayout& layout,
                                          CollectiveAlgorithm algorithm) {
  const std::string what =
      fmt::format("{} {} on {}", strategies::CollectiveKindName(op.collective),
                  CollectiveAlgorithmName(algorithm), topology::AxisName(op.axis));
  const int64_t n = layout.n;
  CommPlan plan;
  plan.algorithm = algorithm;
  switch (algorithm) {
    case CollectiveAlgorithm::kPairwise: {
      PLACESIM_CHECK(op.collective == CollectiveKind::kAllToAll);
      CommPhase ph;
      // Pairwise all-to-all: one phase in which every member sends S / N to each other
      // member (N (N - 1) flows per group, one step each), as NCCL's all-to-all posts all
      // its sends and receives at once. Each member's uplink carries (N - 1) / N S.
      // The analytic model (no contention) charges each flow its sender's whole load,
      // (N - 1) / N S, as the flows of one uplink share it (as for the tree).
      ph.num = 1;
      ph.den = n;
      ph.analytic_num = n - 1;
      ph.analytic_den = n;
      ph.steps = 1;
      for (const std::vector<VertexId>& members : layout.groups) {
        for (VertexId from : members) {
          for (VertexId to : members) {
            if (from == to) continue;
            ASSIGN_OR_RETURN(FlowPath f, PathGpuToGpu(from, to, what.c_str()));
            ph.flows.push_back(std::move(f));
          }
        }
      }
      plan.phases.push_back(std::move(ph));
      break;
    }
    case CollectiveAlgorithm::kAuto:
    case CollectiveAlgorithm::kRing: {
      plan.algorithm = CollectiveAlgorithm::kRing;
      CommPhase ph;
      ph.steps = RingSteps(op.collective, n);
      for (const std::vector<VertexId>& ring : layout.groups) {
        RETURN_IF_ERROR(AddRing(ring, what.c_str(), ph));
      }
      plan.phases.push_back(std::move(ph));
      break;
    }
    case CollectiveAlgorithm::kHierarchical: {
      PLACESIM_CHECK(!layout.per_node.empty());
      const int64_t m = static_cast<int64_t>(layout.per_node[0].size());  // nodes per group
      const int64_t l = n / m;                                            // members per node
      // Intra-node rings (one per node of every group), carrying (L-1)/L S over L-1 steps.
      auto intra = [&]() -> StatusOr<CommPhase> {
        CommPhase ph;
        ph.num = l - 1;
        ph.den = l;
        ph.steps = l - 1;
        for (const auto& by_node : layout.per_node) {
          for (const std::vector<VertexId>& ring : by_node) {
            RETURN_IF_ERROR(AddRing(ring, what.c_str(), ph));
          }
        }
        return ph;
      };
      // Rail rings across nodes over S/L: the i-th member of every node, through its NIC.
      auto rails = [&](int64_t factor, int64_t steps) -> StatusOr<CommPhase> {
        CommPhase ph;
        ph.num = factor * (m - 1);
        ph.den = m * l;
        ph.steps = steps;
        for (const auto& by_node : layout.per_node) {
          for (int64_t i = 0; i < l; ++i) {
            for (int64_t k = 0; k < m; ++k) {
              ASSIGN_OR_RETURN(
                  FlowPath p,
                  PathOverRail(by_node[static_cast<size_t>(k)][static_cast<size_t>(i)],
                               by_node[static_cast<size_t>((k + 1) % m)][static_cast<size_t>(i)],
                               what.c_str()));
              ph.flows.push_back(std::move(p));
            }
          }
        }
        return ph;
      };
      std::vector<StatusOr<CommPhase>> phases;
      switch (op.collective) {
        case CollectiveKind::kAllReduce:
          if (l > 1) phases.push_back(intra());
          phases.push_back(rails(2, 2 * (m - 1)));
          if (l > 1) phases.push_back(intra());
          break;
        case CollectiveKind::kReduceScatter:
          if (l > 1) phases.push_back(intra());
          phases.push_back(rails(1, m - 1));
          break;
        case CollectiveKind::kAllGather:
          phases.push_back(rails(1, m - 1));
          if (l > 1) phases.push_back(intra());
          break;
        default:
          PLACESIM_CHECK(false);
      }
      for (StatusOr<CommPhase>& ph : phases) {
        if (!ph.ok()) return ph.status();
        plan.phases.push_back(std::move(ph).value());
      }
      break;
    }
    case CollectiveAlgorithm::kTree: {
      PLACESIM_CHECK(op.collective == CollectiveKind::kAllReduce);
      const DoubleBinaryTree trees = BuildDoubleBinaryTree(static_cast<int>(n));
      const int height = trees.height;
      CommPhase up;
      CommPhase down;
      for (CommPhase* ph : {&up, &down}) {
        ph->num = 1;
        ph->den = 2;
        ph->analytic_num = 1;
        ph->analytic_den = 1;
        ph->steps = height;
      }
      for (const std::vector<VertexId>& members : layout.groups) {
        for (const std::vector<int>& parents : trees.parents) {  // tree A, then tree B
          auto member = [&](int pos) { return members[static_cast<size_t>(pos)]; };
          for (int pos = 0; pos < n; ++pos) {
            const int parent = parents[static_cast<size_t>(pos)];
            if (parent < 0) continue;
            ASSIGN_OR_RETURN(FlowPath u, PathGpuToGpu(member(pos), member(parent), what.c_str()));
            ASSIGN_OR_RETURN(FlowPath d, PathGpuToGpu(member(parent), member(pos), what.c_str()));
            up.flows.push_back(std::move(u));
            down.flows.push_back(std::move(d));
          }
        }
      }
      plan.phases.push_back(std::move(up));
      plan.phases.push_back(std::move(down));
      break;
    }
  }
  return plan;
}

}  // namespace placesim::sim::internal
