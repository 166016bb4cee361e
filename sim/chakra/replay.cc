// Replay of a Chakra workload (replay.h): the graphs of every rank on one engine over one
// network. Nodes are numbered globally (rank offset + file index); a transfer's network tag
// says what it is: a collective call, a send or a memory copy (kTag* below).
#include "sim/chakra/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "sim/chakra/validate.h"
#include "sim/engine/engine.h"
#include "sim/executor/comm_plan.h"
#include "sim/network/phase.h"

namespace placesim::chakra {
namespace {

using sim::CommPhase;
using sim::Engine;
using sim::Event;
using sim::FlowPath;
using sim::collectives::CommPlan;
using sim::collectives::GroupLayout;
using topology::VertexId;

constexpr uint16_t kNodeDone = 1;
constexpr uint16_t kNetworkWake = 2;
constexpr uint16_t kTransferDone = 3;
constexpr sim::Phase kDonePhase = 0;
constexpr sim::Phase kWakePhase = 1;

constexpr uint64_t kTagCall = uint64_t{0} << 40;
constexpr uint64_t kTagSend = uint64_t{1} << 40;
constexpr uint64_t kTagMemory = uint64_t{2} << 40;
constexpr uint64_t kTagMask = ~((uint64_t{1} << 40) - 1);

// Serial resources of a rank, and the trace threads (comm and p2p are not serial).
enum Resource : int { kCompute, kComm, kMemory, kHost, kP2p, kNumResources };
constexpr std::array<const char*, kNumResources> kResourceNames = {"compute", "comm", "memory",
                                                                   "host", "p2p"};

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

struct Call {  // one collective call of a group
  int64_t group = kWorld;
  CommType type = CommType::kAllReduce;
  std::vector<int32_t> nodes;  // member nodes, in member order once all arrived
  int64_t arrived = 0;
  int64_t members = 0;
  Bytes comm_size;
  Duration start;
  // Transfers of its plan still running (a pipelined plan runs one per phase at once), and
  // the pipeline fill still to wait once they end (collectives::PipelineFill).
  int64_t transfers_left = 0;
  Duration fill;
};

struct Message {  // one send -> recv
  int32_t send = -1;
  Duration send_start;
  int32_t recv = -1;
  bool delivered = false;
  bool recv_waiting = false;
  Duration recv_ready;
};

struct RankState {
  std::array<std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>>, kNumResources>
      ready;
  std::array<bool, kNumResources> busy{};
  std::array<Duration, kNumResources> started{};
  Intervals compute, comm;
  Duration finish;
  Flops flops;
  Bytes comm_bytes;
  bool traced = false;
  // Trace lanes of the comm and p2p threads: transfers in flight together go to different
  // lanes (threads), so no two slices of one thread overlap. 1 = taken.
  std::array<std::vector<char>, 2> lanes;
  std::array<size_t, 2> lanes_named{1, 1};  // lane 0 is the resource's own thread
};

// The trace thread of lane k of the comm (which = 0) or p2p (1) threads.
uint32_t LaneTid(int which, int lane) {
  if (lane == 0) return which == 0 ? kComm : kP2p;
  return static_cast<uint32_t>((which == 0 ? 1'000 : 1'000'000) + lane);
}

// Total length of `a` (sorted, disjoint) not covered by `b` (sorted, disjoint).
int64_t Uncovered(const Intervals& a, const Intervals& b) {
  int64_t total = 0;
  size_t j = 0;
  for (auto [s, e] : a) {
    int64_t cursor = s;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > cursor) total += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
    }
    if (cursor < e) total += e - cursor;
  }
  return total;
}

Intervals Merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (auto iv : v) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

// a += b, saturating: a rank's comm bytes sum up to 2^30 nodes of up to 2^50 bytes each.
void AddSaturating(Bytes& a, Bytes b) {
  a = b.count() > std::numeric_limits<int64_t>::max() - a.count()
          ? Bytes::Count(std::numeric_limits<int64_t>::max())
          : a + b;
}

int64_t Length(const Intervals& v) {
  int64_t t = 0;
  for (auto [s, e] : v) t += e - s;
  return t;
}

class Replayer final : public sim::collectives::PlanSource {
 public:
  Replayer(const topology::Cluster& cluster, const Workload& w, const ReplayOptions& opt)
      : cluster_(cluster),
        w_(w),
        opt_(opt),
        algorithms_(opt.collectives != nullptr ? *opt.collectives
                                               : sim::collectives::BuiltinRegistry()),
        models_(opt.network_models != nullptr ? *opt.network_models : sim::BuiltinNetworkModels()),
        planner_(cluster, context_, rank_gpu_, simulated_nodes_, algorithms_) {}

  StatusOr<ReplayResult> Run();

  // PlanSource: the plan of algorithm `a` for the call being started.
  StatusOr<const CommPlan*> PlanOf(int a) override;

 private:
  Status Setup();
  Status SetupGraph();
  Status SetupComm();
  Status SetupDurations();
  Status SetupTrace();
  Status Handle(Engine& engine, const Event& e);
  void Dispatch(Engine& engine, int32_t i);
  void TryStart(Engine& engine, int64_t rank, Resource res);
  Status StartCall(Engine& engine, Call& call, uint64_t id);
  Status StartSend(Engine& engine, int32_t i);
  void StartTransfer(Engine& engine, std::span<const CommPhase> phases, sim::TransferSize size,
                     uint64_t tag);
  void TransferDone(Engine& engine, uint64_t tag);
  void Finish(int32_t i, Resource res, Duration start, Duration end);
  void ProcessReady(Engine& engine);
  void TakeLane(int32_t i);
  void ArmNetwork(Engine& engine);
  StatusOr<const GroupLayout*> LayoutOf(int64_t group);
  StatusOr<const std::vector<CommPhase>*> PathPhases(VertexId from, VertexId to);
  Status Deadlock() const;
  std::vector<sim::LinkKindStats> LinkStats(Duration step) const;

  const Node& node(int32_t i) const {
    return w_.ranks[static_cast<size_t>(rank_of_[static_cast<size_t>(i)])]
        .nodes[static_cast<size_t>(i -
                                   offset_[static_cast<size_t>(rank_of_[static_cast<size_t>(i)])])];
  }
  Resource ResourceOf(const Node& n) const;

  const topology::Cluster& cluster_;
  const Workload& w_;
  const ReplayOptions& opt_;
  const sim::collectives::Registry& algorithms_;
  const sim::NetworkModelRegistry& models_;
  sim::ExecutionContext context_;  // unused by the routes the planner gives
  std::vector<VertexId> rank_gpu_;
  std::vector<char> simulated_nodes_;
  sim::internal::CommPlanner planner_;
  int forced_ = sim::collectives::Registry::kAuto;
  std::unique_ptr<sim::Network> network_;

  std::vector<int32_t> offset_;   // per rank, its first global node
  std::vector<int64_t> rank_of_;  // per global node
  std::vector<int32_t> pending_;  // unfinished deps
  std::vector<int32_t> users_begin_, users_;
  std::vector<char> done_;
  std::vector<Duration> duration_;  // compute and host nodes
  std::vector<int64_t> call_of_;    // per collective node, its call
  std::vector<int64_t> msg_of_;     // per send / recv node, its message
  std::vector<int32_t> lane_of_;    // per comm node in flight, its trace lane (-1: none)
  std::vector<Call> calls_;
  std::vector<Message> msgs_;
  std::vector<RankState> ranks_;
  std::vector<int32_t> newly_ready_;

  std::map<int64_t, GroupLayout> layouts_;
  std::map<std::tuple<int64_t, int, int>, CommPlan> plans_;
  std::map<std::pair<int, int>, std::vector<CommPhase>> paths_;
  const Call* choosing_ = nullptr;  // the call PlanOf plans for
  std::vector<int64_t> algorithm_calls_;

  Duration armed_time_ = Duration::Max();
  uint64_t armed_version_ = 0;
  std::vector<uint64_t> finished_;
  Status error_;  // the first error met while dispatching
};

Resource Replayer::ResourceOf(const Node& n) const {
  switch (n.type) {
    case NodeType::kCompute:
      return n.is_cpu_op ? kHost : kCompute;
    case NodeType::kMemLoad:
    case NodeType::kMemStore:
      return kMemory;
    case NodeType::kSend:
    case NodeType::kRecv:
      return kP2p;
    case NodeType::kCollective:
      return kComm;
  }
  return kCompute;
}

Status Replayer::Setup() {
  RETURN_IF_ERROR(ValidateWorkload(w_));
  const auto world = static_cast<int64_t>(w_.ranks.size());
  if (world > cluster_.num_gpus()) {
    return InvalidArgumentError(
        fmt::format("trace: {} ranks but the scenario's cluster has {} GPUs; rank r runs on GPU r",
                    world, cluster_.num_gpus()));
  }
  for (int64_t r = 0; r < world; ++r) rank_gpu_.push_back(cluster_.gpu(static_cast<int>(r)));
  simulated_nodes_.assign(static_cast<size_t>(std::max(1, cluster_.spec().nodes)), 1);
  ASSIGN_OR_RETURN(forced_, algorithms_.Select(opt_.algorithm));
  algorithm_calls_.assign(static_cast<size_t>(algorithms_.size()), 0);
  ASSIGN_OR_RETURN(const int model, models_.Lookup(opt_.network));
  std::vector<sim::LinkSpec> links;
  for (int l = 0; l < cluster_.num_links(); ++l) {
    const topology::LinkInfo& li = cluster_.link(topology::LinkId{l});
    links.push_back({li.bandwidth, li.latency});
  }
  ASSIGN_OR_RETURN(network_, models_.at(model).Create(std::move(links)));
  ranks_.resize(static_cast<size_t>(world));
  RETURN_IF_ERROR(SetupGraph());
  RETURN_IF_ERROR(SetupComm());
  RETURN_IF_ERROR(SetupDurations());
  return SetupTrace();
}

Status Replayer::SetupGraph() {
  int64_t total = 0;
  for (const RankTrace& t : w_.ranks) {
    offset_.push_back(static_cast<int32_t>(total));
    total += static_cast<int64_t>(t.nodes.size());
    if (total > (int64_t{1} << 30)) {
      return InvalidArgumentError("trace: more than 2^30 nodes over all ranks");
    }
  }
  const auto n = static_cast<size_t>(total);
  rank_of_.resize(n);
  pending_.assign(n, 0);
  done_.assign(n, 0);
  std::vector<std::vector<int32_t>> users(n);
  for (const RankTrace& t : w_.ranks) {
    std::unordered_map<uint64_t, int32_t> index;
    const int32_t base = offset_[static_cast<size_t>(t.rank)];
    for (size_t k = 0; k < t.nodes.size(); ++k) {
      index.emplace(t.nodes[k].id, base + static_cast<int32_t>(k));
    }
    for (size_t k = 0; k < t.nodes.size(); ++k) {
      const int32_t i = base + static_cast<int32_t>(k);
      rank_of_[static_cast<size_t>(i)] = t.rank;
      for (const auto* deps : {&t.nodes[k].data_deps, &t.nodes[k].ctrl_deps}) {
        for (uint64_t d : *deps) {
          users[static_cast<size_t>(index.at(d))].push_back(i);
          ++pending_[static_cast<size_t>(i)];
        }
      }
    }
  }
  users_begin_.reserve(n + 1);
  for (const auto& u : users) {
    users_begin_.push_back(static_cast<int32_t>(users_.size()));
    users_.insert(users_.end(), u.begin(), u.end());
  }
  users_begin_.push_back(static_cast<int32_t>(users_.size()));
  return Status();
}

Status Replayer::SetupComm() {
  const size_t n = rank_of_.size();
  call_of_.assign(n, -1);
  lane_of_.assign(n, -1);
  msg_of_.assign(n, -1);
  std::map<std::pair<int64_t, int64_t>, int64_t> call_index;  // (group, k) -> call
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> msg_index;
  for (const RankTrace& t : w_.ranks) {
    std::map<int64_t, int64_t> issued;  // group -> calls so far
    for (size_t k = 0; k < t.nodes.size(); ++k) {
      const Node& nd = t.nodes[k];
      const int32_t i = offset_[static_cast<size_t>(t.rank)] + static_cast<int32_t>(k);
      if (nd.type == NodeType::kCollective) {
        const auto key = std::make_pair(nd.comm_group, issued[nd.comm_group]++);
        auto [it, fresh] = call_index.emplace(key, static_cast<int64_t>(calls_.size()));
        if (fresh) {
          Call c;
          c.group = nd.comm_group;
          c.type = nd.comm_type;
          c.members = static_cast<int64_t>(GroupMembers(w_, nd.comm_group).size());
          calls_.push_back(std::move(c));
        }
        call_of_[static_cast<size_t>(i)] = it->second;
      } else if (nd.type == NodeType::kSend || nd.type == NodeType::kRecv) {
        const bool send = nd.type == NodeType::kSend;
        const auto key = send ? std::make_tuple(t.rank, nd.comm_dst, nd.comm_tag)
                              : std::make_tuple(nd.comm_src, t.rank, nd.comm_tag);
        auto [it, fresh] = msg_index.emplace(key, static_cast<int64_t>(msgs_.size()));
        if (fresh) msgs_.emplace_back();
        (send ? msgs_[static_cast<size_t>(it->second)].send
              : msgs_[static_cast<size_t>(it->second)].recv) = i;
        msg_of_[static_cast<size_t>(i)] = it->second;
      }
    }
  }
  return Status();
}

Status Replayer::SetupDurations() {
  const topology::NodeSpec& spec = cluster_.spec().node;
  const topology::DeviceSpec& dev = spec.gpu;
  const double flop_rate = dev.Peak(opt_.compute_type).per_second() * dev.matmul_efficiency;
  const Bandwidth mem =
      Bandwidth::BytesPerSecond(dev.hbm_bandwidth.bytes_per_second() * dev.memory_efficiency);
  duration_.assign(rank_of_.size(), Duration::Zero());
  for (size_t i = 0; i < rank_of_.size(); ++i) {
    const Node& n = node(static_cast<int32_t>(i));
    if (n.type != NodeType::kCompute) continue;
    const Flops f = Flops::Count(static_cast<double>(n.num_ops) * opt_.flops_per_op);
    RankState& rs = ranks_[static_cast<size_t>(rank_of_[i])];
    const std::string where = fmt::format("rank {}: node {}", rank_of_[i], n.id);
    if (n.is_cpu_op) {
      if (!(spec.host_flops.per_second() > 0) ||
          !(spec.host_memory_bandwidth.bytes_per_second() > 0)) {
        return InvalidArgumentError(fmt::format(
            "{}: is_cpu_op: cluster.node: host_flops and host_memory_bandwidth must be > 0 to run "
            "host compute",
            where));
      }
      duration_[i] = std::max(f / spec.host_flops, n.tensor_size / spec.host_memory_bandwidth);
      continue;
    }
    if (!(flop_rate > 0) || !(mem.bytes_per_second() > 0)) {
      return InvalidArgumentError(
          fmt::format("{}: cluster.node.gpu: peak {} x matmul_efficiency and hbm_bandwidth x "
                      "memory_efficiency must be > 0 to run compute",
                      where, topology::DataTypeName(opt_.compute_type)));
    }
    rs.flops = Flops::Count(rs.flops.count() + f.count());
    duration_[i] = std::max(f / FlopRate::PerSecond(flop_rate), n.tensor_size / mem) +
                   n.elementwise_bytes / mem + dev.kernel_overhead;
  }
  return Status();
}

Status Replayer::SetupTrace() {
  if (opt_.trace == nullptr) return Status();
  const auto world = static_cast<int64_t>(w_.ranks.size());
  for (size_t k = 0; k < opt_.trace_ranks.size(); ++k) {
    const int64_t r = opt_.trace_ranks[k];
    if (r < 0 || r >= world || (k > 0 && r <= opt_.trace_ranks[k - 1])) {
      return InvalidArgumentError(
          fmt::format("--trace-ranks: {} must be strictly increasing ranks in [0, {})", r, world));
    }
    ranks_[static_cast<size_t>(r)].traced = true;
  }
  if (opt_.trace_ranks.empty()) {
    for (RankState& rs : ranks_) rs.traced = true;
  }
  for (int64_t r = 0; r < world; ++r) {
    if (!ranks_[static_cast<size_t>(r)].traced) continue;
    const auto pid = static_cast<uint32_t>(r);
    opt_.trace->ProcessName(
        pid,
        fmt::format("rank {} ({})", r, cluster_.vertex(rank_gpu_[static_cast<size_t>(r)]).name), r);
    for (int res = 0; res < kNumResources; ++res) {
      opt_.trace->ThreadName(pid, static_cast<uint32_t>(res),
                             kResourceNames[static_cast<size_t>(res)], res);
    }
  }
  return Status();
}

void Replayer::Dispatch(Engine& engine, int32_t i) {
  const Node& n = node(i);
  const int64_t r = rank_of_[static_cast<size_t>(i)];
  const Resource res = ResourceOf(n);
  if (res == kCompute || res == kHost || res == kMemory) {
    ranks_[static_cast<size_t>(r)].ready[res].push(i);
    TryStart(engine, r, res);
    return;
  }
  if (n.type == NodeType::kCollective) {
    Call& c = calls_[static_cast<size_t>(call_of_[static_cast<size_t>(i)])];
    c.nodes.push_back(i);
    c.comm_size = std::max(c.comm_size, n.comm_size);
    if (++c.arrived == c.members) {
      Status s = StartCall(engine, c, static_cast<uint64_t>(call_of_[static_cast<size_t>(i)]));
      if (!s.ok() && error_.ok()) error_ = s;
    }
    return;
  }
  Message& m = msgs_[static_cast<size_t>(msg_of_[static_cast<size_t>(i)])];
  if (n.type == NodeType::kSend) {
    Status s = StartSend(engine, i);
    if (!s.ok() && error_.ok()) error_ = s;
    return;
  }
  if (m.delivered) {
    Finish(i, kP2p, engine.now(), engine.now());
  } else {
    m.recv_waiting = true;
    TakeLane(i);
    m.recv_ready = engine.now();
  }
}

StatusOr<const GroupLayout*> Replayer::LayoutOf(int64_t group) {
  if (auto it = layouts_.find(group); it != layouts_.end()) return &it->second;
  GroupLayout layout;
  std::vector<VertexId> gpus;
  for (int64_t m : GroupMembers(w_, group)) gpus.push_back(rank_gpu_[static_cast<size_t>(m)]);
  layout.n = static_cast<int>(gpus.size());
  // Members per node, in order of first member; per_node only when every node holds as many.
  std::vector<int> nodes;
  std::vector<std::vector<VertexId>> by_node;
  for (VertexId g : gpus) {
    const int nd = cluster_.vertex(g).node;
    auto it = std::find(nodes.begin(), nodes.end(), nd);
    if (it == nodes.end()) {
      nodes.push_back(nd);
      by_node.emplace_back();
      it = nodes.end() - 1;
    }
    by_node[static_cast<size_t>(it - nodes.begin())].push_back(g);
  }
  layout.multi_node = by_node.size() > 1;
  bool uniform = true;
  for (const auto& on_node : by_node) uniform &= on_node.size() == by_node[0].size();
  if (uniform) layout.per_node.push_back(std::move(by_node));
  layout.groups.push_back(std::move(gpus));
  return &layouts_.emplace(group, std::move(layout)).first->second;
}

StatusOr<const CommPlan*> Replayer::PlanOf(int a) {
  const strategies::CollectiveKind kind = ToCollectiveKind(choosing_->type);
  const auto key = std::make_tuple(choosing_->group, static_cast<int>(kind), a);
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  ASSIGN_OR_RETURN(const GroupLayout* layout, LayoutOf(choosing_->group));
  const std::string what = fmt::format("comm_group {}", choosing_->group);
  CommPlan plan;
  plan.algorithm = a;
  plan.pipelined = algorithms_.at(a).pipelined();
  ASSIGN_OR_RETURN(plan.phases, algorithms_.at(a).Plan(kind, *layout, planner_, what.c_str()));
  // As the executor's planner: the analytic bytes default to the flows' own, and the flow
  // classes the analytic time reads are filled in.
  for (CommPhase& ph : plan.phases) {
    if (ph.analytic_den == 0 && ph.den != 0) {
      ph.analytic_num = ph.num;
      ph.analytic_den = ph.den;
    }
    sim::FinishPhase(ph);
  }
  return &plans_.emplace(key, std::move(plan)).first->second;
}

Status Replayer::StartCall(Engine& engine, Call& call, uint64_t id) {
  call.start = engine.now();
  for (int32_t i : call.nodes) TakeLane(i);
  const int64_t n = call.members;
  const int64_t size = call.comm_size.count();
  const strategies::CollectiveKind kind = ToCollectiveKind(call.type);
  // S, the buffer; each member's ring volume as the schedule's ops carry it.
  const int64_t s = call.type == CommType::kAllGather ? size * n : size;
  int64_t per_member = 0;
  if (n > 1) {
    switch (call.type) {
      case CommType::kAllReduce:
        per_member = s / n * 2 * (n - 1);
        break;
      case CommType::kBroadcast:
        per_member = s;
        break;
      default:
        per_member = s / n * (n - 1);
    }
  }
  for (int32_t i : call.nodes) {
    RankState& rs = ranks_[static_cast<size_t>(rank_of_[static_cast<size_t>(i)])];
    AddSaturating(rs.comm_bytes, node(i).comm_size);
  }
  if (n <= 1 || s == 0) {
    TransferDone(engine, kTagCall | id);
    return Status();
  }
  ASSIGN_OR_RETURN(const GroupLayout* layout, LayoutOf(call.group));
  choosing_ = &call;
  const sim::collectives::CollectiveCall cc{kind, Bytes::Count(per_member), Bytes::Count(s)};
  ASSIGN_OR_RETURN(const CommPlan* plan, algorithms_.Choose(cc, *layout, forced_, *this));
  ++algorithm_calls_[static_cast<size_t>(plan->algorithm)];
  const sim::TransferSize transfer{cc.bytes, cc.buffer_bytes};
  const std::vector<std::span<const CommPhase>> transfers = sim::collectives::Transfers(*plan);
  call.transfers_left = static_cast<int64_t>(transfers.size());
  call.fill = sim::collectives::PipelineFill(*plan, transfer);
  if (transfers.empty()) TransferDone(engine, kTagCall | id);
  for (std::span<const CommPhase> phases : transfers) {
    StartTransfer(engine, phases, transfer, kTagCall | id);
  }
  return Status();
}

StatusOr<const std::vector<CommPhase>*> Replayer::PathPhases(VertexId from, VertexId to) {
  const auto key = std::make_pair(from.value, to.value);
  if (auto it = paths_.find(key); it != paths_.end()) return &it->second;
  ASSIGN_OR_RETURN(FlowPath p, planner_.Between(from, to, "chakra transfer"));
  std::vector<CommPhase> phases(1);
  phases[0].flows.push_back(std::move(p));
  sim::FinishPhase(phases[0]);
  return &paths_.emplace(key, std::move(phases)).first->second;
}

Status Replayer::StartSend(Engine& engine, int32_t i) {
  const Node& n = node(i);
  const int64_t r = rank_of_[static_cast<size_t>(i)];
  Message& m = msgs_[static_cast<size_t>(msg_of_[static_cast<size_t>(i)])];
  m.send_start = engine.now();
  TakeLane(i);
  AddSaturating(ranks_[static_cast<size_t>(r)].comm_bytes, n.comm_size);
  const uint64_t tag = kTagSend | static_cast<uint64_t>(i);
  if (n.comm_size.count() == 0) {
    TransferDone(engine, tag);
    return Status();
  }
  ASSIGN_OR_RETURN(
      const std::vector<CommPhase>* phases,
      PathPhases(rank_gpu_[static_cast<size_t>(r)], rank_gpu_[static_cast<size_t>(n.comm_dst)]));
  StartTransfer(engine, *phases, {n.comm_size, n.comm_size}, tag);
  return Status();
}

void Replayer::StartTransfer(Engine& engine, std::span<const CommPhase> phases,
                             sim::TransferSize size, uint64_t tag) {
  if (const std::optional<Duration> d = network_->Start(engine.now(), phases, size, tag)) {
    engine.ScheduleAfter(*d, kTransferDone, 0, tag, kDonePhase);
  }
}

void Replayer::TryStart(Engine& engine, int64_t rank, Resource res) {
  RankState& rs = ranks_[static_cast<size_t>(rank)];
  if (rs.busy[res] || rs.ready[res].empty()) return;
  const int32_t i = rs.ready[res].top();
  rs.ready[res].pop();
  rs.busy[res] = true;
  rs.started[res] = engine.now();
  if (res != kMemory) {
    engine.ScheduleAfter(duration_[static_cast<size_t>(i)], kNodeDone, 0, static_cast<uint64_t>(i),
                         kDonePhase);
    return;
  }
  const Node& n = node(i);
  const uint64_t tag = kTagMemory | static_cast<uint64_t>(i);
  const VertexId gpu = rank_gpu_[static_cast<size_t>(rank)];
  const int nd = cluster_.vertex(gpu).node;
  const VertexId far = n.nvme ? cluster_.nvme(nd) : cluster_.host_memory(nd);
  if (n.tensor_size.count() == 0) {
    engine.ScheduleAfter(Duration::Zero(), kTransferDone, 0, tag, kDonePhase);
    return;
  }
  StatusOr<const std::vector<CommPhase>*> phases =
      !far.valid() ? StatusOr<const std::vector<CommPhase>*>(InvalidArgumentError("no endpoint"))
      : n.type == NodeType::kMemLoad ? PathPhases(far, gpu)
                                     : PathPhases(gpu, far);
  if (!phases.ok()) {
    if (error_.ok()) {
      error_ = InvalidArgumentError(fmt::format(
          "rank {}: node {} (\"{}\"): type: {} needs a route between the GPU and the node's {}: "
          "{}",
          rank, n.id, n.name, NodeTypeName(n.type), n.nvme ? "NVMe" : "host memory",
          phases.status().message()));
    }
    return;
  }
  StartTransfer(engine, **phases, {n.tensor_size, n.tensor_size}, tag);
}

void Replayer::TransferDone(Engine& engine, uint64_t tag) {
  const uint64_t what = tag & kTagMask;
  const uint64_t id = tag & ~kTagMask;
  if (what == kTagCall) {
    Call& c = calls_[static_cast<size_t>(id)];
    if (c.transfers_left > 0 && --c.transfers_left > 0) return;
    if (c.fill > Duration::Zero()) {
      engine.ScheduleAfter(std::exchange(c.fill, Duration::Zero()), kTransferDone, 0, tag,
                           kDonePhase);
      return;
    }
    for (int32_t i : c.nodes) Finish(i, kComm, c.start, engine.now());
    return;
  }
  const auto i = static_cast<int32_t>(id);
  if (what == kTagMemory) {
    const int64_t r = rank_of_[static_cast<size_t>(i)];
    RankState& rs = ranks_[static_cast<size_t>(r)];
    rs.busy[kMemory] = false;
    Finish(i, kMemory, rs.started[kMemory], engine.now());
    TryStart(engine, r, kMemory);
    return;
  }
  Message& m = msgs_[static_cast<size_t>(msg_of_[static_cast<size_t>(i)])];
  Finish(i, kP2p, m.send_start, engine.now());
  m.delivered = true;
  if (m.recv_waiting) Finish(m.recv, kP2p, m.recv_ready, engine.now());
}

void Replayer::Finish(int32_t i, Resource res, Duration start, Duration end) {
  done_[static_cast<size_t>(i)] = 1;
  if (const int32_t lane = lane_of_[static_cast<size_t>(i)]; lane >= 0) {
    ranks_[static_cast<size_t>(rank_of_[static_cast<size_t>(i)])]
        .lanes[res == kP2p][static_cast<size_t>(lane)] = 0;
  }
  const int64_t r = rank_of_[static_cast<size_t>(i)];
  RankState& rs = ranks_[static_cast<size_t>(r)];
  rs.finish = std::max(rs.finish, end);
  if (end > start) {
    const auto iv = std::make_pair(start.picoseconds(), end.picoseconds());
    if (res == kCompute) rs.compute.push_back(iv);
    if (res == kComm || res == kP2p) rs.comm.push_back(iv);
    if (rs.traced && opt_.trace != nullptr) {
      const Node& n = node(i);
      const std::array<traces::TraceArg, 2> args = {
          traces::TraceArg("node", static_cast<int64_t>(n.id)),
          traces::TraceArg("bytes", (n.type == NodeType::kCompute || res == kMemory ? n.tensor_size
                                                                                    : n.comm_size)
                                        .count()),
      };
      const int32_t lane = lane_of_[static_cast<size_t>(i)];
      const uint32_t tid = lane < 0 ? static_cast<uint32_t>(res) : LaneTid(res == kP2p, lane);
      opt_.trace->Complete(static_cast<uint32_t>(r), tid,
                           n.name.empty() ? NodeTypeName(n.type) : n.name, NodeTypeName(n.type),
                           start, end - start, args);
    }
  }
  for (int32_t k = users_begin_[static_cast<size_t>(i)];
       k < users_begin_[static_cast<size_t>(i) + 1]; ++k) {
    const int32_t u = users_[static_cast<size_t>(k)];
    if (--pending_[static_cast<size_t>(u)] == 0) newly_ready_.push_back(u);
  }
}

void Replayer::TakeLane(int32_t i) {
  const int64_t r = rank_of_[static_cast<size_t>(i)];
  RankState& rs = ranks_[static_cast<size_t>(r)];
  const int which = ResourceOf(node(i)) == kP2p ? 1 : 0;
  std::vector<char>& lanes = rs.lanes[static_cast<size_t>(which)];
  size_t k = 0;
  while (k < lanes.size() && lanes[k]) ++k;
  if (k == lanes.size()) lanes.push_back(0);
  lanes[k] = 1;
  lane_of_[static_cast<size_t>(i)] = static_cast<int32_t>(k);
  if (!rs.traced || opt_.trace == nullptr || k < rs.lanes_named[static_cast<size_t>(which)]) {
    return;
  }
  rs.lanes_named[static_cast<size_t>(which)] = k + 1;
  const auto lane = static_cast<int>(k);
  opt_.trace->ThreadName(static_cast<uint32_t>(r), LaneTid(which, lane),
                         fmt::format("{} {}", which == 0 ? "comm" : "p2p", lane + 1),
                         LaneTid(which, lane));
}

void Replayer::ProcessReady(Engine& engine) {
  std::vector<int32_t> batch;
  while (!newly_ready_.empty()) {
    batch.swap(newly_ready_);
    newly_ready_.clear();
    for (int32_t i : batch) Dispatch(engine, i);
    batch.clear();
  }
}

void Replayer::ArmNetwork(Engine& engine) {
  const Duration t = network_->NextEventTime();
  if (t == Duration::Max() && !network_->time_overflowed()) return;
  if (t == armed_time_ && network_->version() == armed_version_) return;
  armed_time_ = t;
  armed_version_ = network_->version();
  engine.ScheduleAt(std::max(t, engine.now()), kNetworkWake, 0, armed_version_, kWakePhase);
}

Status Replayer::Handle(Engine& engine, const Event& e) {
  if (e.kind == kNodeDone) {
    const auto i = static_cast<int32_t>(e.payload);
    const int64_t r = rank_of_[static_cast<size_t>(i)];
    const Resource res = ResourceOf(node(i));
    RankState& rs = ranks_[static_cast<size_t>(r)];
    rs.busy[res] = false;
    Finish(i, res, rs.started[res], engine.now());
    TryStart(engine, r, res);
  } else if (e.kind == kTransferDone) {
    TransferDone(engine, e.payload);
  } else {
    if (e.payload != network_->version()) return Status();  // superseded by a later arming
    finished_.clear();
    network_->AdvanceTo(engine.now(), finished_);
    for (uint64_t tag : finished_) TransferDone(engine, tag);
  }
  ProcessReady(engine);
  ArmNetwork(engine);
  return error_;
}

Status Replayer::Deadlock() const {
  // The first node that is ready but stuck names what it waits for.
  for (size_t i = 0; i < done_.size(); ++i) {
    if (done_[i] || pending_[i] != 0) continue;
    const Node& n = node(static_cast<int32_t>(i));
    const int64_t r = rank_of_[i];
    std::string why = "never ran";
    if (n.type == NodeType::kCollective) {
      const Call& c = calls_[static_cast<size_t>(call_of_[i])];
      why = fmt::format(
          "collective on comm_group {} waits for {} of its {} members, which never "
          "reach it (a dependency cycle across ranks)",
          n.comm_group == kWorld ? std::string("(all ranks)") : fmt::format("{}", n.comm_group),
          c.members - c.arrived, c.members);
    } else if (n.type == NodeType::kRecv) {
      why = fmt::format("recv waits for rank {}'s send (tag {}), which never runs", n.comm_src,
                        n.comm_tag);
    }
    return InvalidArgumentError(
        fmt::format("rank {}: node {} (\"{}\"): the workload deadlocks: {}", r, n.id, n.name, why));
  }
  for (size_t i = 0; i < done_.size(); ++i) {
    if (done_[i]) continue;
    const Node& n = node(static_cast<int32_t>(i));
    return InvalidArgumentError(
        fmt::format("rank {}: node {} (\"{}\"): the workload deadlocks: a dependency never ran",
                    rank_of_[i], n.id, n.name));
  }
  return Status();
}

std::vector<sim::LinkKindStats> Replayer::LinkStats(Duration step) const {
  std::array<sim::LinkKindStats, sim::kNumLinkKinds> by_kind{};
  std::array<int64_t, sim::kNumLinkKinds> busy_sum{};
  for (int l = 0; l < cluster_.num_links(); ++l) {
    const size_t k = static_cast<size_t>(cluster_.link(topology::LinkId{l}).kind);
    sim::LinkKindStats& s = by_kind[k];
    ++s.links;
    const sim::LinkStats ls = network_->link_stats(static_cast<sim::LinkIndex>(l));
    if (ls.bytes_carried.count() == 0 && ls.busy_time == Duration::Zero()) continue;
    ++s.links_used;
    s.bytes += ls.bytes_carried;
    s.busy_max = std::max(s.busy_max, ls.busy_time);
    busy_sum[k] += ls.busy_time.picoseconds() / 1024;  // in 1024 ps units: no overflow
    s.peak_flows = std::max(s.peak_flows, ls.peak_flows);
  }
  std::vector<sim::LinkKindStats> out;
  const double t = static_cast<double>(step.picoseconds());
  for (size_t k = 0; k < by_kind.size(); ++k) {
    sim::LinkKindStats& s = by_kind[k];
    if (s.links == 0) continue;
    s.kind = static_cast<topology::LinkKind>(k);
    if (s.links_used > 0) s.busy_avg = Duration::Picoseconds(busy_sum[k] / s.links_used * 1024);
    if (t > 0) {
      s.utilization_max = static_cast<double>(s.busy_max.picoseconds()) / t;
      s.utilization_avg = static_cast<double>(s.busy_avg.picoseconds()) / t;
    }
    out.push_back(s);
  }
  return out;
}

StatusOr<ReplayResult> Replayer::Run() {
  RETURN_IF_ERROR(Setup());
  Engine engine;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i] == 0) newly_ready_.push_back(static_cast<int32_t>(i));
  }
  ProcessReady(engine);
  RETURN_IF_ERROR(error_);
  ArmNetwork(engine);
  ASSIGN_OR_RETURN(sim::RunEnd end,
                   engine.Run([this](Engine& en, const Event& e) { return Handle(en, e); }));
  (void)end;
  RETURN_IF_ERROR(Deadlock());
  ReplayResult out;
  for (const RankState& rs : ranks_) out.step_time = std::max(out.step_time, rs.finish);
  for (size_t r = 0; r < ranks_.size(); ++r) {
    RankState& rs = ranks_[r];
    RankReplay rr;
    rr.rank = static_cast<int64_t>(r);
    rr.finish = rs.finish;
    const Intervals compute = Merged(std::move(rs.compute));
    const Intervals comm = Merged(std::move(rs.comm));
    rr.compute_busy = Duration::Picoseconds(Length(compute));
    rr.comm_busy = Duration::Picoseconds(Length(comm));
    rr.exposed_comm = Duration::Picoseconds(Uncovered(comm, compute));
    rr.idle = out.step_time - rr.compute_busy;
    rr.flops = rs.flops;
    rr.comm_bytes = rs.comm_bytes;
    rr.nodes = static_cast<int64_t>(w_.ranks[r].nodes.size());
    out.ranks.push_back(rr);
  }
  out.links = LinkStats(out.step_time);
  for (int a = 0; a < algorithms_.size(); ++a) {
    out.algorithm_names.emplace_back(algorithms_.at(a).name());
  }
  out.algorithm_calls = algorithm_calls_;
  out.events = engine.events_handled();
  return out;
}

}  // namespace

topology::DataType ComputeTypeOf(strategies::Precision p) {
  switch (p) {
    case strategies::Precision::kFp16Mixed:
      return topology::DataType::kFp16;
    case strategies::Precision::kFp8Mixed:
      return topology::DataType::kFp8;
    case strategies::Precision::kBf16Mixed:
    case strategies::Precision::kBf16:
      return topology::DataType::kBf16;
  }
  return topology::DataType::kBf16;
}

StatusOr<ReplayResult> Replay(const topology::Cluster& cluster, const Workload& w,
                              const ReplayOptions& options) {
  Replayer r(cluster, w, options);
  return r.Run();
}

}  // namespace placesim::chakra
