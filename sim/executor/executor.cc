// Executor implementation: the model and its maths are stated in executor.h.
//
// Event loop. Two event kinds: kOpDone (an op with a known duration finished; payload = op
// index) and kNetworkWake (the flow network's next change; payload = the network version it
// was armed for, so outdated wakes are ignored). After every event the streams are polled in a
// fixed order and every op that can start does; Alloc and Free complete on the spot.
// Invariants: an op starts at most once and finishes exactly once; a stream runs one op at a
// time; busy intervals of one stream are disjoint and increasing.
#include "sim/executor/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "sim/engine/engine.h"
#include "sim/network/alpha_beta.h"
#include "sim/network/flow_network.h"
#include "strategies/analyzer.h"
#include "strategies/model.h"
#include "topology/placement.h"
#include "topology/routing.h"

namespace placesim::sim {

const char* NetworkModelName(NetworkModel m) {
  switch (m) {
    case NetworkModel::kFlow:
      return "flow";
    case NetworkModel::kAnalytic:
      return "analytic";
  }
  return "?";
}

Bytes RoleResult::comm_bytes() const {
  Bytes sum;
  for (Bytes b : collective_bytes) sum += b;
  return sum;
}

namespace {

using strategies::CollectiveKind;
using strategies::CopyKind;
using strategies::GroupKind;
using strategies::MemorySpace;
using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;
using strategies::Stream;
using topology::Axis;
using topology::VertexId;

constexpr int kNumStreams = 4;
constexpr uint16_t kOpDone = 1;
constexpr uint16_t kNetworkWake = 2;
// Completions before wakes at the same picosecond, so a stream freed at t is seen free by
// network completions at t (the order is fixed either way; this one reads naturally).
constexpr Phase kDonePhase = 0;
constexpr Phase kWakePhase = 1;

topology::DataType ComputeType(strategies::Precision p) {
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

// One flow of a collective or copy: its route on the network and what it costs alone.
struct FlowPath {
  std::vector<LinkIndex> links;
  Duration latency;
  Bandwidth bottleneck;
};

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

class Runner {
 public:
  Runner(const topology::Cluster& cluster, const Schedule& schedule,
         const ExecutionContext& context, const ExecutorOptions& options)
      : cluster_(cluster), sched_(schedule), ctx_(context), opt_(options), router_(cluster) {}

  StatusOr<RoleResult> Execute();
  Status Handle(Engine& engine, const Event& e);

 private:
  Status Setup();
  Status ResolveCollective(const Op& op, std::vector<FlowPath>*& paths);
  Status ResolveCopy(const Op& op, std::vector<FlowPath>*& paths);
  StatusOr<FlowPath> PathBetween(VertexId from, VertexId to, const char* what);
  void StartReady(Engine& engine);
  void StartOp(Engine& engine, int32_t i);
  void FinishOp(Engine& engine, int32_t i);
  void ApplyMemory(const Op& op, Duration now);
  void ArmNetwork(Engine& engine);
  void TraceOp(int32_t i, Duration start, Duration end);

  const topology::Cluster& cluster_;
  const Schedule& sched_;
  const ExecutionContext& ctx_;
  const ExecutorOptions& opt_;
  topology::Router router_;
  std::optional<FlowNetwork> net_;

  std::vector<VertexId> rank_gpu_;
  VertexId gpu_;
  uint32_t pid_ = 0;
  std::vector<Duration> duration_;  // compute and host-compute ops
  // Flows of collectives and copies, shared by every op of the same group or copy kind.
  std::map<std::tuple<int, int, int>, std::vector<FlowPath>> groups_;
  std::map<int, std::vector<FlowPath>> copies_;
  std::vector<const std::vector<FlowPath>*> paths_;  // per op, null when it moves nothing

  // Execution state.
  std::vector<int32_t> waiting_;  // unfinished deps per op
  std::vector<std::vector<int32_t>> successors_;
  std::array<std::vector<int32_t>, kNumStreams> stream_ops_;
  std::array<size_t, kNumStreams> next_{};
  std::array<bool, kNumStreams> busy_{};
  std::array<std::vector<std::pair<int64_t, int64_t>>, kNumStreams> intervals_;
  std::vector<Duration> started_;
  std::vector<int64_t> flows_left_;
  std::vector<FlowCompletion> completions_;
  uint64_t armed_version_ = ~uint64_t{0};
  Duration armed_time_ = Duration::Max();

  std::array<std::array<int64_t, kNumMemoryTags>, 3> live_{};
  std::array<int64_t, 3> live_total_{};
  RoleResult result_;
};

StatusOr<FlowPath> Runner::PathBetween(VertexId from, VertexId to, const char* what) {
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

Status Runner::ResolveCollective(const Op& op, std::vector<FlowPath>*& paths) {
  const auto key = std::make_tuple(static_cast<int>(op.axis), static_cast<int>(op.group),
                                   static_cast<int>(op.group_size));
  if (auto it = groups_.find(key); it != groups_.end()) {
    paths = &it->second;
    return Status();
  }
  const int axis_size = ctx_.mesh.size(op.axis);
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
  // Axis coordinates of the members of the group whose lowest coordinate is `first`.
  const int stride = op.group == GroupKind::kReplicaGroup ? axis_size / n : 1;
  auto leads = [&](int c) {
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
  std::vector<FlowPath> flows;
  const std::string what = fmt::format(
      "{} ring on {}", strategies::CollectiveKindName(op.collective), topology::AxisName(op.axis));
  // Every group of the partition (symmetry folding), in rank order of its leader.
  for (int64_t r = 0; r < ctx_.mesh.world(); ++r) {
    topology::MeshCoord c = topology::RankToCoord(ctx_.mesh, ctx_.rank_order, r);
    const int first = *CoordOf(c, op.axis);
    if (!leads(first) || n == 1) continue;
    std::vector<VertexId> ring;
    ring.reserve(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      *CoordOf(c, op.axis) = first + k * stride;
      ring.push_back(
          rank_gpu_[static_cast<size_t>(topology::CoordToRank(ctx_.mesh, ctx_.rank_order, c))]);
    }
    for (int k = 0; k < n; ++k) {
      ASSIGN_OR_RETURN(FlowPath p,
                       PathBetween(ring[static_cast<size_t>(k)],
                                   ring[static_cast<size_t>((k + 1) % n)], what.c_str()));
      flows.push_back(std::move(p));
    }
  }
  paths = &groups_.emplace(key, std::move(flows)).first->second;
  return Status();
}

Status Runner::ResolveCopy(const Op& op, std::vector<FlowPath>*& paths) {
  const int key = static_cast<int>(op.copy);
  if (auto it = copies_.find(key); it != copies_.end()) {
    paths = &it->second;
    return Status();
  }
  const int node = cluster_.vertex(gpu_).node;
  std::vector<VertexId> gpus;
  if (sched_.ranks == ctx_.mesh.world()) {
    for (VertexId g : cluster_.node_gpus(node)) gpus.push_back(g);
  } else {
    gpus.push_back(gpu_);
  }
  const VertexId host = cluster_.host_memory(node);
  const VertexId nvme = cluster_.nvme(node);
  const char* what = strategies::CopyKindName(op.copy);
  std::vector<FlowPath> flows;
  for (VertexId g : gpus) {
    StatusOr<FlowPath> p = FlowPath{};
    switch (op.copy) {
      case CopyKind::kDeviceToHost:
        p = PathBetween(g, host, what);
        break;
      case CopyKind::kHostToDevice:
        p = PathBetween(host, g, what);
        break;
      case CopyKind::kNvmeRead:
        p = PathBetween(nvme, g, what);
        break;
      case CopyKind::kNvmeWrite:
        p = PathBetween(g, nvme, what);
        break;
    }
    if (!p.ok()) return p.status();
    flows.push_back(std::move(p).value());
  }
  paths = &copies_.emplace(key, std::move(flows)).first->second;
  return Status();
}

Status Runner::Setup() {
  if (ctx_.mesh.world() != cluster_.num_gpus()) {
    return FailedPreconditionError(fmt::format("mesh of {} ranks on a cluster of {} GPUs",
                                               ctx_.mesh.world(), cluster_.num_gpus()));
  }
  if (ctx_.rank < 0 || ctx_.rank >= ctx_.mesh.world()) {
    return InvalidArgumentError(
        fmt::format("rank {}: must be in [0, {})", ctx_.rank, ctx_.mesh.world()));
  }
  ASSIGN_OR_RETURN(rank_gpu_, topology::PlaceRanks(cluster_, ctx_.mesh, ctx_.rank_order));
  gpu_ = rank_gpu_[static_cast<size_t>(ctx_.rank)];
  pid_ = static_cast<uint32_t>(cluster_.gpu_index(gpu_));
  const topology::VertexInfo& gv = cluster_.vertex(gpu_);
  const topology::NodeSpec& node = cluster_.spec().node;
  const topology::DeviceSpec& dev = node.gpu;
  result_.capacity = gv.capacity;

  const size_t n_ops = sched_.ops.size();
  duration_.assign(n_ops, Duration::Zero());
  paths_.assign(n_ops, nullptr);
  const topology::DataType type = ComputeType(ctx_.precision);
  const double flop_rate = dev.Peak(type).per_second() * dev.matmul_efficiency;
  const double mem_rate = dev.hbm_bandwidth.bytes_per_second() * dev.memory_efficiency;
  for (size_t i = 0; i < n_ops; ++i) {
    const Op& op = sched_.ops[i];
    switch (op.kind) {
      case OpKind::kCompute: {
        if (!(flop_rate > 0)) {
          return InvalidArgumentError(fmt::format(
              "cluster.node.gpu: peak {} x matmul_efficiency {} must be > 0 to run compute",
              topology::DataTypeName(type), dev.matmul_efficiency));
        }
        if (!(mem_rate > 0)) {
          return InvalidArgumentError(fmt::format(
              "cluster.node.gpu: hbm_bandwidth x memory_efficiency {} must be > 0 to run compute",
              dev.memory_efficiency));
        }
        const double bytes = static_cast<double>((op.bytes_read + op.bytes_written).count());
        duration_[i] =
            std::max(DrainTime(op.flops.count(), flop_rate), DrainTime(bytes, mem_rate)) +
            dev.kernel_overhead;
        break;
      }
      case OpKind::kHostCompute: {
        const double hf = node.host_flops.per_second();
        const double hb = node.host_memory_bandwidth.bytes_per_second();
        if (!(hf > 0) || !(hb > 0)) {
          return InvalidArgumentError(
              "cluster.node: host_flops and host_memory_bandwidth must be > 0 to run the "
              "optimizer on the host");
        }
        const double bytes = static_cast<double>((op.bytes_read + op.bytes_written).count());
        duration_[i] = std::max(DrainTime(op.flops.count(), hf), DrainTime(bytes, hb));
        break;
      }
      case OpKind::kCollective: {
        std::vector<FlowPath>* p = nullptr;
        RETURN_IF_ERROR(ResolveCollective(op, p));
        if (op.bytes.count() > 0 && !p->empty()) paths_[i] = p;
        break;
      }
      case OpKind::kCopy: {
        std::vector<FlowPath>* p = nullptr;
        RETURN_IF_ERROR(ResolveCopy(op, p));
        paths_[i] = p;
        break;
      }
      case OpKind::kAlloc:
      case OpKind::kFree:
        break;
    }
  }

  if (opt_.network == NetworkModel::kFlow) {
    std::vector<LinkSpec> links;
    links.reserve(static_cast<size_t>(cluster_.num_links()));
    for (int l = 0; l < cluster_.num_links(); ++l) {
      const topology::LinkInfo& li = cluster_.link(topology::LinkId{l});
      links.push_back({li.bandwidth, li.latency});
    }
    ASSIGN_OR_RETURN(FlowNetwork net, FlowNetwork::Create(std::move(links)));
    net_.emplace(std::move(net));
  }

  waiting_.assign(n_ops, 0);
  successors_.assign(n_ops, {});
  started_.assign(n_ops, Duration::Zero());
  flows_left_.assign(n_ops, 0);
  for (size_t i = 0; i < n_ops; ++i) {
    for (int32_t d : sched_.DepsOf(i)) {
      successors_[static_cast<size_t>(d)].push_back(static_cast<int32_t>(i));
      ++waiting_[i];
    }
    stream_ops_[static_cast<size_t>(sched_.ops[i].stream)].push_back(static_cast<int32_t>(i));
  }

  result_.role = sched_.role;
  result_.ranks = sched_.ranks;
  result_.simulated_rank = ctx_.rank;
  result_.ops = static_cast<int64_t>(n_ops);

  if (opt_.trace != nullptr) {
    traces::ChromeTraceWriter& t = *opt_.trace;
    t.ProcessName(pid_, fmt::format("rank {} ({}, {})", ctx_.rank, gv.name, sched_.role), pid_);
    for (int s = 0; s < kNumStreams; ++s) {
      t.ThreadName(pid_, static_cast<uint32_t>(s), strategies::StreamName(static_cast<Stream>(s)),
                   s);
    }
  }
  return Status();
}

void Runner::ApplyMemory(const Op& op, Duration now) {
  const size_t space = static_cast<size_t>(op.space);
  const size_t tag = static_cast<size_t>(op.tag);
  const int64_t delta = op.kind == OpKind::kAlloc ? op.bytes.count() : -op.bytes.count();
  live_[space][tag] += delta;
  live_total_[space] += delta;
  switch (op.space) {
    case MemorySpace::kDevice:
      if (live_total_[space] > result_.peak_memory.count()) {
        result_.peak_memory = Bytes::Count(live_total_[space]);
        result_.peak_at = now;
        for (int t = 0; t < kNumMemoryTags; ++t) {
          result_.live_at_peak[static_cast<size_t>(t)] =
              Bytes::Count(live_[space][static_cast<size_t>(t)]);
        }
      }
      if (opt_.trace != nullptr) {
        const auto& live = live_[space];
        const auto make_series = [&]<size_t... k>(std::index_sequence<k...>) {
          return std::array<traces::TraceArg, kNumMemoryTags>{traces::TraceArg(
              strategies::MemoryTagName(static_cast<strategies::MemoryTag>(k)), live[k])...};
        };
        const auto series = make_series(std::make_index_sequence<kNumMemoryTags>());
        opt_.trace->Counter(pid_, "device memory", now, series);
      }
      break;
    case MemorySpace::kHost:
      result_.peak_host_memory =
          std::max(result_.peak_host_memory, Bytes::Count(live_total_[space]));
      break;
    case MemorySpace::kNvme:
      result_.peak_nvme = std::max(result_.peak_nvme, Bytes::Count(live_total_[space]));
      break;
  }
}

void Runner::StartOp(Engine& engine, int32_t i) {
  const Op& op = sched_.ops[static_cast<size_t>(i)];
  const Duration now = engine.now();
  started_[static_cast<size_t>(i)] = now;
  busy_[static_cast<size_t>(op.stream)] = true;
  if (op.kind == OpKind::kCollective) {
    result_.collective_bytes[static_cast<size_t>(op.collective)] += op.bytes;
    ++result_.collective_calls[static_cast<size_t>(op.collective)];
  } else if (op.kind == OpKind::kCopy) {
    result_.copy_bytes += op.bytes;
  }
  const std::vector<FlowPath>* paths = paths_[static_cast<size_t>(i)];
  if (paths == nullptr) {
    engine.ScheduleAfter(duration_[static_cast<size_t>(i)], kOpDone, 0, static_cast<uint64_t>(i),
                         kDonePhase);
    return;
  }
  const int64_t steps =
      op.kind == OpKind::kCollective ? RingSteps(op.collective, op.group_size) : 1;
  if (opt_.network == NetworkModel::kAnalytic) {
    Duration longest = Duration::Zero();
    for (const FlowPath& p : *paths) {
      longest = std::max(longest, AlphaBetaTime(p.bottleneck, p.latency * steps, op.bytes));
    }
    engine.ScheduleAfter(longest, kOpDone, 0, static_cast<uint64_t>(i), kDonePhase);
    return;
  }
  flows_left_[static_cast<size_t>(i)] = static_cast<int64_t>(paths->size());
  for (const FlowPath& p : *paths) {
    net_->Start(now, p.links, op.bytes, static_cast<uint64_t>(i), p.latency * (steps - 1));
  }
}

void Runner::StartReady(Engine& engine) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < kNumStreams; ++s) {
      const size_t st = static_cast<size_t>(s);
      while (!busy_[st] && next_[st] < stream_ops_[st].size()) {
        const int32_t i = stream_ops_[st][next_[st]];
        if (waiting_[static_cast<size_t>(i)] > 0) break;
        ++next_[st];
        const Op& op = sched_.ops[static_cast<size_t>(i)];
        if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree) {
          started_[static_cast<size_t>(i)] = engine.now();
          ApplyMemory(op, engine.now());
          for (int32_t succ : successors_[static_cast<size_t>(i)]) {
            --waiting_[static_cast<size_t>(succ)];
          }
          progress = true;
          continue;
        }
        StartOp(engine, i);
      }
    }
  }
}

void Runner::TraceOp(int32_t i, Duration start, Duration end) {
  const Op& op = sched_.ops[static_cast<size_t>(i)];
  std::string name;
  switch (op.kind) {
    case OpKind::kCompute:
    case OpKind::kHostCompute:
      name = op.layer >= 0 ? fmt::format("{} L{}", strategies::PhaseName(op.phase), op.layer)
             : op.layer == strategies::kEmbeddingLayer
                 ? fmt::format("{} embedding", strategies::PhaseName(op.phase))
             : op.layer == strategies::kOutputLayer
                 ? fmt::format("{} output", strategies::PhaseName(op.phase))
                 : std::string(strategies::PhaseName(op.phase));
      break;
    case OpKind::kCollective:
      name = fmt::format("{} {}", strategies::CollectiveKindName(op.collective),
                         strategies::StateName(op.state));
      break;
    case OpKind::kCopy:
      name =
          fmt::format("{} {}", strategies::CopyKindName(op.copy), strategies::StateName(op.state));
      break;
    case OpKind::kAlloc:
    case OpKind::kFree:
      return;
  }
  const traces::TraceArg args[] = {
      traces::TraceArg("op", i),
      traces::TraceArg("micro_batch", op.micro_batch),
      traces::TraceArg("bytes", op.bytes.count()),
  };
  opt_.trace->Complete(pid_, static_cast<uint32_t>(op.stream), name,
                       strategies::PhaseName(op.phase), start, end - start, args);
}

void Runner::FinishOp(Engine& engine, int32_t i) {
  const Op& op = sched_.ops[static_cast<size_t>(i)];
  const size_t st = static_cast<size_t>(op.stream);
  busy_[st] = false;
  const Duration start = started_[static_cast<size_t>(i)];
  const Duration end = engine.now();
  if (end > start) intervals_[st].emplace_back(start.picoseconds(), end.picoseconds());
  if (opt_.trace != nullptr) TraceOp(i, start, end);
  for (int32_t succ : successors_[static_cast<size_t>(i)]) --waiting_[static_cast<size_t>(succ)];
}

void Runner::ArmNetwork(Engine& engine) {
  if (!net_.has_value()) return;
  const Duration t = net_->NextEventTime();
  if (t == Duration::Max()) return;
  if (t == armed_time_ && net_->version() == armed_version_) return;
  armed_time_ = t;
  armed_version_ = net_->version();
  engine.ScheduleAt(std::max(t, engine.now()), kNetworkWake, 0, armed_version_, kWakePhase);
}

Status Runner::Handle(Engine& engine, const Event& e) {
  if (e.kind == kOpDone) {
    FinishOp(engine, static_cast<int32_t>(e.payload));
  } else {
    if (e.payload != net_->version()) return Status();  // superseded by a later arming
    completions_.clear();
    net_->AdvanceTo(engine.now(), completions_);
    for (const FlowCompletion& c : completions_) {
      if (--flows_left_[static_cast<size_t>(c.tag)] == 0) {
        FinishOp(engine, static_cast<int32_t>(c.tag));
      }
    }
  }
  StartReady(engine);
  ArmNetwork(engine);
  return Status();
}

// Total length of `a` not covered by `b`; both sorted, disjoint intervals.
int64_t Uncovered(const std::vector<std::pair<int64_t, int64_t>>& a,
                  const std::vector<std::pair<int64_t, int64_t>>& b) {
  int64_t total = 0;
  size_t j = 0;
  for (auto [s, e] : a) {
    int64_t cursor = s;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > cursor) total += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
      if (cursor >= e) break;
    }
    if (cursor < e) total += e - cursor;
  }
  return total;
}

StatusOr<RoleResult> Runner::Execute() {
  RETURN_IF_ERROR(Setup());
  Engine engine;
  StartReady(engine);
  ArmNetwork(engine);
  auto handler = [this](Engine& eng, const Event& e) { return Handle(eng, e); };
  ASSIGN_OR_RETURN(RunEnd end, engine.Run(handler));
  (void)end;
  for (int s = 0; s < kNumStreams; ++s) {
    const size_t st = static_cast<size_t>(s);
    if (next_[st] != stream_ops_[st].size() || busy_[st]) {
      return InternalError(
          fmt::format("schedule '{}' deadlocked on the {} stream at op {}", sched_.role,
                      strategies::StreamName(static_cast<Stream>(s)),
                      next_[st] < stream_ops_[st].size() ? stream_ops_[st][next_[st]] : -1));
    }
  }
  auto busy = [&](Stream s) {
    int64_t sum = 0;
    for (auto [a, b] : intervals_[static_cast<size_t>(s)]) sum += b - a;
    return Duration::Picoseconds(sum);
  };
  result_.step_time = engine.now();
  result_.compute_busy = busy(Stream::kCompute);
  result_.comm_busy = busy(Stream::kComm);
  result_.copy_busy = busy(Stream::kCopy);
  result_.host_busy = busy(Stream::kHost);
  result_.exposed_comm =
      Duration::Picoseconds(Uncovered(intervals_[static_cast<size_t>(Stream::kComm)],
                                      intervals_[static_cast<size_t>(Stream::kCompute)]));
  result_.idle = result_.step_time - result_.compute_busy;
  result_.events = engine.events_handled();
  return result_;
}

}  // namespace

StatusOr<RoleResult> ExecuteSchedule(const topology::Cluster& cluster,
                                     const strategies::Schedule& schedule,
                                     const ExecutionContext& context,
                                     const ExecutorOptions& options) {
  Runner runner(cluster, schedule, context, options);
  return runner.Execute();
}

StatusOr<SimResult> SimulateStep(const topology::Cluster& cluster,
                                 const strategies::ModelSpec& model,
                                 const strategies::TrainingSpec& training,
                                 const strategies::StrategySpec& strategy,
                                 const ExecutorOptions& options) {
  strategies::AnalyzeOptions analyze;
  analyze.prefetch_depth = options.schedule.prefetch_depth;
  ASSIGN_OR_RETURN(strategies::Plan plan,
                   strategies::Analyze(model, training, strategy, cluster.spec(), analyze));
  ASSIGN_OR_RETURN(
      std::vector<strategies::Schedule> schedules,
      strategies::BuildSchedules(model, training, strategy, cluster.spec(), options.schedule));
  if (schedules.size() != 1) {
    return FailedPreconditionError(fmt::format(
        "the executor simulates single-role schedules; got {} roles", schedules.size()));
  }
  SimResult out;
  ExecutionContext ctx;
  ctx.mesh = strategy.mesh;
  ctx.rank_order = strategy.rank_order;
  ctx.precision = training.precision;
  ctx.rank = 0;
  for (const strategies::Schedule& s : schedules) {
    ASSIGN_OR_RETURN(RoleResult r, ExecuteSchedule(cluster, s, ctx, options));
    out.step_time = std::max(out.step_time, r.step_time);
    if (r.peak_memory > r.capacity) {
      strategies::Finding f;
      f.severity = strategies::Severity::kError;
      f.rule = "out-of-memory";
      f.message =
          fmt::format("{}: peak device memory {:.2f} GB at {:.3f} ms exceeds the GPU's {:.2f} GB",
                      r.role, r.peak_memory.ToGB(), r.peak_at.ToMilliseconds(), r.capacity.ToGB());
      f.fix =
          "shard more state (ZeRO / FSDP), recompute activations, offload, or use a "
          "smaller micro-batch";
      out.findings.push_back(std::move(f));
    }
    out.roles.push_back(std::move(r));
  }
  out.peak = cluster.spec().node.gpu.Peak(ComputeType(training.precision));
  // MFU counts the model's FLOPs (eq. 3 without recompute, coefficient 72); HFU counts what
  // the hardware executes, recomputation included (the plan's figure: 96 under full
  // recompute, 72 plus the attention recompute under selective).
  const double world = static_cast<double>(std::max<int64_t>(plan.world, 1));
  out.model_flops_per_rank =
      strategies::MegatronFlopsPerIteration(model.transformer, training.global_batch,
                                            strategies::Recompute::kNone) /
      world;
  out.hardware_flops_per_rank = plan.flops_per_iteration / world;
  const double seconds = out.step_time.ToSeconds();
  if (seconds > 0) {
    if (out.peak.per_second() > 0) {
      out.mfu = out.model_flops_per_rank.count() / (seconds * out.peak.per_second());
      out.hfu = out.hardware_flops_per_rank.count() / (seconds * out.peak.per_second());
    }
    out.tokens_per_second = static_cast<double>(training.global_batch) *
                            static_cast<double>(model.transformer.seq_len) / seconds;
  }
  out.plan = std::move(plan);
  return out;
}

}  // namespace placesim::sim
