// Executor implementation: the model and its maths are stated in executor.h.
//
// Collectives, sends and copies become a CommPlan: phases of flows (executor.h), built once per
// (stage, group, kind, algorithm), (stage, peer stage) or (stage, copy kind) at setup and
// shared by every op that uses it; an op picks its plan (and, under "auto", its algorithm) at
// setup from its buffer size (collectives::Registry::Choose). The groups and the collectives'
// plans come from a CommPlanner (comm_plan.h). The network model (sim/network/network_model.h)
// runs each op's plan: it times it at once or reports its end through network wakes.
//
// Ops are numbered globally over the lanes (lane offset + index), and everything per op lives
// in vectors indexed by that number: durations, plans, and the DepGraph's successors in
// compressed rows (a recv is a successor of the send it matches) and unfinished deps. What a
// running op needs beyond that (its start) lives with its lane's stream, which runs one op at
// a time; the phase in flight and its flows left live in the network model.
//
// Event loop. Two event kinds: kOpDone (an op with a known duration finished; payload = its
// global number) and kNetworkWake (the network model's next change; payload = the network
// version it was armed for, so outdated wakes are ignored). A lane is marked dirty when one of
// its streams frees up or one of its ops loses its last dep; after every event the dirty lanes
// are polled, lowest first, each one's streams in a fixed order, and every op that can start
// does; Alloc, Free and Recv complete on the spot. Polling only dirty lanes keeps an event's
// cost independent of the number of lanes.
// Invariants: an op starts at most once and finishes exactly once; a stream runs one op at a
// time; busy intervals of one stream are disjoint and increasing.
#include "sim/executor/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "sim/engine/engine.h"
#include "sim/executor/comm_plan.h"
#include "sim/executor/dep_graph.h"
#include "sim/executor/lane_set.h"
#include "sim/executor/trace_layout.h"
#include "sim/memory/memory_tracker.h"
#include "sim/network/alpha_beta.h"
#include "sim/network/network_model.h"
#include "strategies/analyzer.h"
#include "strategies/cost/kernel_model.h"
#include "strategies/model.h"
#include "topology/placement.h"

namespace placesim::sim {

ExecutorOptions ExecutorOptionsFromSettings(const SimulationSettings& settings) {
  ExecutorOptions o;
  o.network = settings.network_model;
  o.algorithm = settings.collective_algorithm;
  o.schedule.bucket_bytes = settings.gradient_bucket_size;
  o.schedule.max_reuse_distance = settings.zero3_max_reuse_distance;
  o.schedule.reshard_after_forward = settings.reshard_after_forward;
  o.schedule.prefetch_depth = settings.prefetch_depth;
  o.schedule.sync_grads_every_micro_batch = settings.sync_grads_every_micro_batch;
  o.schedule.tp_comm_overlap = settings.tp_comm_overlap;
  o.protocol_cost = settings.protocol_cost;
  if (settings.gather_granularity.has_value()) {
    o.schedule.gather_granularity = *settings.gather_granularity == "per-parameter"
                                        ? strategies::GatherGranularity::kPerParameter
                                        : strategies::GatherGranularity::kPerUnit;
  }
  o.schedule.overlap_grad_reduce = settings.overlap_grad_reduce;
  o.schedule.blocking_p2p = settings.blocking_p2p;
  o.host_time_per_layer = settings.host_time_per_layer;
  o.host_time_per_layer_backward = settings.host_time_per_layer_backward;
  return o;
}

Bytes RoleResult::comm_bytes() const {
  Bytes sum;
  for (Bytes b : collective_bytes) sum += b;
  return sum;
}

namespace {

using internal::CommPlan;
using internal::CommPlanner;
using internal::DepGraph;
using internal::GroupLayout;
using internal::LaneSet;
using strategies::CollectiveKind;
using strategies::CopyKind;
using strategies::GroupKind;
using strategies::kNumStreams;
using strategies::MemorySpace;
using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;
using strategies::Stream;
using topology::Axis;
using topology::VertexId;

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

// One schedule being executed (a lane) and the state of its rank's streams and memory.
struct Lane {
  const Schedule* sched = nullptr;
  int32_t offset = 0;  // global id of its op 0
  int64_t rank = 0;    // the rank simulated
  VertexId gpu;
  // The schedule holds every rank of its stage, so every GPU of the stage runs it (copies
  // fold over the node, and every rank of the stage may be traced).
  bool covers_stage = false;
  std::array<std::vector<int32_t>, kNumStreams> stream_ops;  // global ids, in index order
  std::array<size_t, kNumStreams> next{};
  std::array<bool, kNumStreams> busy{};
  // The op running on each stream (one at a time): its start.
  std::array<Duration, kNumStreams> started{};
  std::array<std::vector<std::pair<int64_t, int64_t>>, kNumStreams> intervals;
  int32_t open_exchange = -1;   // the blocking exchange its stream waits on, if any
  bool blocking_sends = false;  // it has pipeline sends in blocking exchanges
  MemoryTracker memory;
  std::vector<uint32_t> trace_pids;  // processes that receive its timeline
  Duration end;                      // when its last op so far finished
  RoleResult result;
};

class Runner {
 public:
  Runner(const topology::Cluster& cluster, std::span<const Schedule> schedules,
         const ExecutionContext& context, const ExecutorOptions& options)
      : cluster_(cluster),
        schedules_(schedules),
        ctx_(context),
        opt_(options),
        algorithms_(options.collectives != nullptr ? *options.collectives
                                                   : collectives::BuiltinRegistry()),
        network_models_(options.network_models != nullptr ? *options.network_models
                                                          : BuiltinNetworkModels()),
        planner_(cluster, context, rank_gpu_, simulated_nodes_, algorithms_) {}

  StatusOr<ExecutionResult> Execute();
  Status Handle(Engine& engine, const Event& e);

 private:
  Status Setup();
  Status SetupNames();
  Status SetupLanes();
  Status SetupOps();
  void ChargeHostDispatch();
  Status SetupDeps();
  Status SetupExchanges();
  Status SetupTrace();
  Status ResolveCollective(const Lane& lane, int32_t i);
  Status ResolveSend(const Lane& lane, int32_t i);
  Status ResolveCopy(const Lane& lane, int32_t i);
  Status CheckRecv(size_t k, size_t j);
  int64_t RankOnStage(int64_t rank, int32_t stage) const;

  const Op& OpAt(int32_t i) const {
    const Lane& lane = lanes_[lane_of_[static_cast<size_t>(i)]];
    return lane.sched->ops[static_cast<size_t>(i - lane.offset)];
  }
  void StartReady(Engine& engine);
  void PollLane(Engine& engine, Lane& lane);
  void StartOp(Engine& engine, Lane& lane, int32_t i);
  // Starts op i's work (its transfers, or its own duration); counts its bytes and calls.
  void Launch(Engine& engine, Lane& lane, int32_t i);
  // Blocking exchanges (ops.h): posts exchange x when its sends' deps are done; returns
  // whether it did. Each send starts once its receive's exchange is posted too.
  bool TryPost(Engine& engine, Lane& lane, int32_t x);
  bool IsBlockingSend(int32_t i) const {
    return !exchange_of_.empty() && exchange_of_[static_cast<size_t>(i)] >= 0 &&
           OpAt(i).kind == OpKind::kCollective;
  }
  void FinishBlockingSend(Engine& engine, int32_t i);
  void ExchangeOpDone(int32_t x, Duration now);
  std::string DeadlockMessage(const Lane& lane, size_t stream) const;
  // Op i's transfers end `transfer` from now; it finishes after its own duration beyond that.
  void ScheduleDone(Engine& engine, int32_t i, Duration transfer);
  void FinishOp(Engine& engine, int32_t i);
  // Op i finished: its successors lose a dep, and the lanes of those left with none get polled.
  void Release(int32_t i);
  void ArmNetwork(Engine& engine);
  void TraceOp(const Lane& lane, int32_t i, Duration start, Duration end, Stream thread);
  std::vector<LinkKindStats> CollectLinkStats(Duration step_time) const;

  const topology::Cluster& cluster_;
  std::span<const Schedule> schedules_;
  const ExecutionContext& ctx_;
  const ExecutorOptions& opt_;
  const collectives::Registry& algorithms_;
  const NetworkModelRegistry& network_models_;
  // Resolved at setup from the options' names: the forced algorithm (or Registry::kAuto), the
  // algorithm pipeline sends are counted under (the ring), the network model.
  int forced_algorithm_ = collectives::Registry::kAuto;
  int send_algorithm_ = 0;
  const NetworkModel* network_model_ = nullptr;
  std::unique_ptr<Network> network_;

  std::vector<VertexId> rank_gpu_;
  std::vector<int64_t> gpu_rank_;  // per GPU index, the rank placed on it
  std::vector<Lane> lanes_;
  std::vector<int32_t> lane_of_stage_;  // per pp coordinate, its lane or -1
  std::vector<char> simulated_nodes_;   // per node: 1 when it holds a lane's simulated rank
  // Per op (global id).
  std::vector<uint32_t> lane_of_;
  std::vector<Duration> duration_;               // compute and host-compute ops
  std::vector<const CommPlan*> plan_;            // null when it moves nothing
  std::vector<collectives::Protocol> protocol_;  // collectives and sends: the protocol run
  DepGraph deps_;  // successors (a recv follows its send), unfinished deps
  // Groups and collective plans (planner_, declared after what it reads), plans per (stage,
  // copy kind) and per (stage, peer stage), shared by every op that uses them. std::map
  // keeps the addresses stable.
  CommPlanner planner_;
  std::map<std::pair<int, int>, CommPlan> copies_;
  std::map<std::pair<int, int>, CommPlan> sends_;

  // Execution state.
  LaneSet dirty_;                   // lanes that may start an op
  std::vector<uint64_t> finished_;  // ops whose transfers a network wake ended
  // Ops of a pipelined plan (CommPlan::pipelined) whose transfers are not all done: how many
  // the network still runs, and when those it timed at once end.
  struct Pipelined {
    int32_t left = 0;
    Duration timed_end;
  };
  std::map<int32_t, Pipelined> pipelined_;

  // Blocking exchanges (empty when no pipeline send is on its program's stream): per op its
  // exchange or -1, and for an exchange's send its receive and for its receive its send;
  // each exchange's ops, in stream order, and its state.
  struct Exchange {
    uint32_t lane = 0;
    uint8_t stream = 0;
    int32_t begin = 0;  // its ops: exchange_ops_[begin, end)
    int32_t end = 0;
    int32_t left = 0;  // ops not finished since it was posted
    bool posted = false;
  };
  std::vector<int32_t> exchange_of_;
  std::vector<int32_t> partner_;
  std::vector<int32_t> exchange_ops_;
  std::vector<Exchange> exchanges_;
  std::map<int32_t, Duration> send_started_;  // blocking sends in flight
  uint64_t armed_version_ = ~uint64_t{0};
  Duration armed_time_ = Duration::Max();

  // Bytes the groups not replayed put on each LinkKind (GroupLayout::unreplayed).
  std::array<int64_t, kNumLinkKinds> unreplayed_bytes_{};
  void CountUnreplayed(const CommPlan& plan, const Op& op) {
    for (size_t k = 0; k < plan.unreplayed_hops.size(); ++k) {
      const int64_t bytes = PhaseBytes(plan.phases[k], {op.bytes, op.buffer_bytes}).count();
      for (size_t kind = 0; kind < unreplayed_bytes_.size(); ++kind)
        unreplayed_bytes_[kind] += plan.unreplayed_hops[k][kind] * bytes;
    }
  }
};

Status Runner::ResolveCollective(const Lane& lane, int32_t i) {
  const Op& op = OpAt(i);
  if (op.collective == CollectiveKind::kSendRecv && op.axis == Axis::kPipeline &&
      op.peer_stage >= 0) {
    return ResolveSend(lane, i);
  }
  const int32_t stage = lane.sched->stage;
  ASSIGN_OR_RETURN(const GroupLayout* layout, planner_.LayoutOf(stage, op));
  if (layout->n <= 1 || op.bytes.count() <= 0) return Status();
  // The candidates' plans, from the planner's cache.
  struct Plans final : collectives::PlanSource {
    Plans(CommPlanner& p, int32_t s, const Op& o, const GroupLayout& l)
        : planner(p), stage(s), op(o), layout(l) {}
    StatusOr<const CommPlan*> PlanOf(int algorithm) override {
      return planner.PlanOf(stage, op, layout, algorithm);
    }
    CommPlanner& planner;
    int32_t stage;
    const Op& op;
    const GroupLayout& layout;
  } plans(planner_, stage, op, *layout);
  const collectives::CollectiveCall call{op.collective, op.bytes, op.buffer_bytes,
                                         opt_.protocol_cost};
  ASSIGN_OR_RETURN(const CommPlan* plan,
                   algorithms_.Choose(call, *layout, forced_algorithm_, plans));
  bool moves = false;
  for (const CommPhase& ph : plan->phases) moves |= !ph.flows.empty();
  plan_[static_cast<size_t>(i)] = moves ? plan : nullptr;
  // A collective's own duration is NCCL's per-call protocol cost, added to its transfer.
  if (moves) {
    const collectives::ProtocolCost cost = algorithms_.at(plan->algorithm).Cost(*plan, call);
    duration_[static_cast<size_t>(i)] = cost.overhead;
    protocol_[static_cast<size_t>(i)] = cost.protocol;
  }
  return Status();
}

int64_t Runner::RankOnStage(int64_t rank, int32_t stage) const {
  topology::MeshCoord c = topology::RankToCoord(ctx_.mesh, ctx_.rank_order, rank);
  c.pp = stage;
  return topology::CoordToRank(ctx_.mesh, ctx_.rank_order, c);
}

Status Runner::ResolveSend(const Lane& lane, int32_t i) {
  const Op& op = OpAt(i);
  const int32_t stage = lane.sched->stage;
  if (op.peer_stage >= ctx_.mesh.pp || op.peer_stage == stage) {
    return InvalidArgumentError(fmt::format(
        "schedules[{}].ops[{}].peer_stage: {}: a pipeline send of stage {} must name another "
        "stage in [0, {})",
        lane_of_[static_cast<size_t>(i)], i - lane.offset, op.peer_stage, stage, ctx_.mesh.pp));
  }
  if (op.bytes.count() <= 0) return Status();
  const auto key = std::make_pair(static_cast<int>(stage), static_cast<int>(op.peer_stage));
  auto it = sends_.find(key);
  if (it == sends_.end()) {
    // One flow per rank of the stage (symmetry folding) to its peer on the receiving stage,
    // carrying the op's bytes in one step.
    const std::string what = fmt::format("send-recv from pp stage {} to {}", stage, op.peer_stage);
    CommPlan plan;
    plan.algorithm = send_algorithm_;
    plan.phases.emplace_back();
    CommPhase& ph = plan.phases.back();
    for (int64_t r = 0; r < ctx_.mesh.world(); ++r) {
      if (topology::RankToCoord(ctx_.mesh, ctx_.rank_order, r).pp != stage) continue;
      ASSIGN_OR_RETURN(
          FlowPath p,
          planner_.Between(rank_gpu_[static_cast<size_t>(r)],
                           rank_gpu_[static_cast<size_t>(RankOnStage(r, op.peer_stage))],
                           what.c_str()));
      ph.flows.push_back(std::move(p));
    }
    FinishPhase(ph);
    planner_.SetTransport(plan, 2);
    it = sends_.emplace(key, std::move(plan)).first;
  }
  plan_[static_cast<size_t>(i)] = &it->second;
  if (!opt_.protocol_cost) return Status();
  const collectives::ProtocolCost cost =
      collectives::CheapestProtocol(collectives::NcclRow::kP2p, op.collective, 2, it->second.phases,
                                    it->second.on_network, {op.bytes, op.buffer_bytes});
  duration_[static_cast<size_t>(i)] = cost.overhead;
  protocol_[static_cast<size_t>(i)] = cost.protocol;
  return Status();
}

Status Runner::ResolveCopy(const Lane& lane, int32_t i) {
  const Op& op = OpAt(i);
  const int32_t stage = lane.sched->stage;
  const auto key = std::make_pair(static_cast<int>(stage), static_cast<int>(op.copy));
  if (auto it = copies_.find(key); it != copies_.end()) {
    plan_[static_cast<size_t>(i)] = &it->second;
    return Status();
  }
  const int node = cluster_.vertex(lane.gpu).node;
  std::vector<VertexId> gpus;
  if (lane.covers_stage) {
    for (VertexId g : cluster_.node_gpus(node)) {
      const int64_t r = gpu_rank_[static_cast<size_t>(cluster_.gpu_index(g))];
      if (topology::RankToCoord(ctx_.mesh, ctx_.rank_order, r).pp == stage) gpus.push_back(g);
    }
  } else {
    gpus.push_back(lane.gpu);
  }
  const VertexId host = cluster_.host_memory(node);
  const VertexId nvme = cluster_.nvme(node);
  const char* what = strategies::CopyKindName(op.copy);
  CommPlan plan;
  plan.phases.emplace_back();
  CommPhase& ph = plan.phases.back();
  for (VertexId g : gpus) {
    StatusOr<FlowPath> p = FlowPath{};
    switch (op.copy) {
      case CopyKind::kDeviceToHost:
        p = planner_.PathBetween(g, host, what);
        break;
      case CopyKind::kHostToDevice:
        p = planner_.PathBetween(host, g, what);
        break;
      case CopyKind::kNvmeRead:
        p = planner_.PathBetween(nvme, g, what);
        break;
      case CopyKind::kNvmeWrite:
        p = planner_.PathBetween(g, nvme, what);
        break;
    }
    if (!p.ok()) return p.status();
    ph.flows.push_back(std::move(p).value());
  }
  FinishPhase(ph);
  plan_[static_cast<size_t>(i)] = &copies_.emplace(key, std::move(plan)).first->second;
  return Status();
}

Status Runner::SetupNames() {
  ASSIGN_OR_RETURN(forced_algorithm_, algorithms_.Select(opt_.algorithm));
  // Pipeline sends have always been reported as ring calls (a ring of two, one step).
  ASSIGN_OR_RETURN(send_algorithm_, algorithms_.Lookup("ring"));
  ASSIGN_OR_RETURN(const int network, network_models_.Lookup(opt_.network));
  network_model_ = &network_models_.at(network);
  return Status();
}

Status Runner::Setup() {
  RETURN_IF_ERROR(SetupNames());
  if (ctx_.mesh.world() != cluster_.num_gpus()) {
    return FailedPreconditionError(fmt::format("mesh of {} ranks on a cluster of {} GPUs",
                                               ctx_.mesh.world(), cluster_.num_gpus()));
  }
  if (ctx_.rank < 0 || ctx_.rank >= ctx_.mesh.world()) {
    return InvalidArgumentError(
        fmt::format("rank {}: must be in [0, {})", ctx_.rank, ctx_.mesh.world()));
  }
  if (schedules_.empty()) return InvalidArgumentError("schedules: none given");
  ASSIGN_OR_RETURN(rank_gpu_, topology::PlaceRanks(cluster_, ctx_.mesh, ctx_.rank_order));
  gpu_rank_.assign(static_cast<size_t>(cluster_.num_gpus()), -1);
  for (size_t r = 0; r < rank_gpu_.size(); ++r) {
    gpu_rank_[static_cast<size_t>(cluster_.gpu_index(rank_gpu_[r]))] = static_cast<int64_t>(r);
  }
  RETURN_IF_ERROR(SetupLanes());
  RETURN_IF_ERROR(SetupOps());
  ChargeHostDispatch();

  std::vector<LinkSpec> links;
  links.reserve(static_cast<size_t>(cluster_.num_links()));
  for (int l = 0; l < cluster_.num_links(); ++l) {
    const topology::LinkInfo& li = cluster_.link(topology::LinkId{l});
    links.push_back({li.bandwidth, li.latency});
  }
  ASSIGN_OR_RETURN(network_, network_model_->Create(std::move(links)));

  RETURN_IF_ERROR(SetupDeps());
  // Every lane is polled once at the start.
  dirty_ = LaneSet(lanes_.size());
  return SetupTrace();
}

Status Runner::SetupLanes() {
  lane_of_stage_.assign(static_cast<size_t>(ctx_.mesh.pp), -1);
  lanes_.resize(schedules_.size());
  int64_t total_ops = 0;
  for (size_t k = 0; k < schedules_.size(); ++k) {
    const Schedule& s = schedules_[k];
    if (s.stage < 0 || s.stage >= ctx_.mesh.pp) {
      return InvalidArgumentError(
          fmt::format("schedules[{}].stage: {}: must be in [0, {})", k, s.stage, ctx_.mesh.pp));
    }
    int32_t& slot = lane_of_stage_[static_cast<size_t>(s.stage)];
    if (slot >= 0) {
      return InvalidArgumentError(fmt::format(
          "schedules[{}].stage: {}: schedules[{}] has the same stage", k, s.stage, slot));
    }
    slot = static_cast<int32_t>(k);
    Lane& lane = lanes_[k];
    lane.sched = &s;
    lane.offset = static_cast<int32_t>(total_ops);
    total_ops += static_cast<int64_t>(s.ops.size());
    // Global op ids are int32 (events and flow tags carry them); kMaxScheduleOps per stage
    // keeps real runs far below.
    if (total_ops > std::numeric_limits<int32_t>::max()) {
      return OutOfRangeError(fmt::format("schedules: {} ops in all; the executor runs at most {}",
                                         total_ops, std::numeric_limits<int32_t>::max()));
    }
    lane.rank = RankOnStage(ctx_.rank, s.stage);
    lane.gpu = rank_gpu_[static_cast<size_t>(lane.rank)];
    if (const int node = cluster_.vertex(lane.gpu).node; node >= 0) {
      if (static_cast<size_t>(node) >= simulated_nodes_.size())
        simulated_nodes_.resize(static_cast<size_t>(node) + 1, 0);
      simulated_nodes_[static_cast<size_t>(node)] = 1;
    }
    lane.covers_stage = s.ranks == ctx_.mesh.world() / ctx_.mesh.pp;
    RoleResult& r = lane.result;
    r.role = s.role;
    r.stage = s.stage;
    r.ranks = s.ranks;
    r.simulated_rank = lane.rank;
    r.ops = static_cast<int64_t>(s.ops.size());
    r.capacity = cluster_.vertex(lane.gpu).capacity;
    for (auto& calls : r.algorithm_calls) calls.assign(static_cast<size_t>(algorithms_.size()), 0);
    for (int a = 0; a < algorithms_.size(); ++a) {
      r.algorithm_names.emplace_back(algorithms_.at(a).name());
    }
  }
  lane_of_.resize(static_cast<size_t>(total_ops));
  for (size_t k = 0; k < lanes_.size(); ++k) {
    const size_t begin = static_cast<size_t>(lanes_[k].offset);
    std::fill_n(lane_of_.begin() + static_cast<ptrdiff_t>(begin), lanes_[k].sched->ops.size(),
                static_cast<uint32_t>(k));
  }
  return Status();
}

Status Runner::SetupOps() {
  const size_t n_ops = lane_of_.size();
  duration_.assign(n_ops, Duration::Zero());
  plan_.assign(n_ops, nullptr);
  protocol_.assign(n_ops, collectives::Protocol::kSimple);
  const topology::NodeSpec& node = cluster_.spec().node;
  const topology::DeviceSpec& dev = node.gpu;
  const topology::DataType type = ComputeType(ctx_.precision);
  const double efficiency =
      ctx_.matmul_efficiency > 0 ? ctx_.matmul_efficiency : dev.matmul_efficiency;
  const double flop_rate = dev.Peak(type).per_second() * efficiency;
  const double mem_rate = dev.hbm_bandwidth.bytes_per_second() * dev.memory_efficiency;
  for (size_t k = 0; k < lanes_.size(); ++k) {
    const Lane& lane = lanes_[k];
    for (size_t j = 0; j < lane.sched->ops.size(); ++j) {
      const Op& op = lane.sched->ops[j];
      const size_t i = static_cast<size_t>(lane.offset) + j;
      switch (op.kind) {
        case OpKind::kCompute: {
          if (!(flop_rate > 0)) {
            return InvalidArgumentError(fmt::format(
                "cluster.node.gpu: peak {} x matmul_efficiency {} must be > 0 to run compute",
                topology::DataTypeName(type), efficiency));
          }
          if (!(mem_rate > 0)) {
            return InvalidArgumentError(
                fmt::format("cluster.node.gpu: hbm_bandwidth x memory_efficiency {} must be > 0 "
                            "to run compute",
                            dev.memory_efficiency));
          }
          const double bytes = static_cast<double>((op.bytes_read + op.bytes_written).count());
          duration_[i] =
              std::max(DrainTime(op.flops.count(), flop_rate), DrainTime(bytes, mem_rate)) +
              DrainTime(static_cast<double>(op.elementwise_bytes.count()), mem_rate) +
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
        case OpKind::kCollective:
          RETURN_IF_ERROR(ResolveCollective(lane, static_cast<int32_t>(i)));
          break;
        case OpKind::kCopy:
          RETURN_IF_ERROR(ResolveCopy(lane, static_cast<int32_t>(i)));
          break;
        case OpKind::kRecv:
          RETURN_IF_ERROR(CheckRecv(k, j));
          break;
        case OpKind::kAlloc:
        case OpKind::kFree:
          break;
      }
    }
  }
  return Status();
}

// Host dispatch (ExecutorOptions::host_time_per_layer): a layer pass of one micro-batch on one
// lane is its compute ops of that layer (model-wide, so of one chunk), micro-batch and pass
// (backward-input and backward-weight are one pass, as autograd issues them); when their
// kernels take less than the host needs to issue them, the last op of the pass absorbs the
// difference.
void Runner::ChargeHostDispatch() {
  const Duration forward = opt_.host_time_per_layer;
  const Duration backward = opt_.host_time_per_layer_backward.value_or(forward);
  if (forward <= Duration::Zero() && backward <= Duration::Zero()) return;
  using Key = std::tuple<size_t, int32_t, int32_t, int>;
  std::map<Key, std::pair<Duration, size_t>> passes;  // kernels' time, last op
  for (size_t k = 0; k < lanes_.size(); ++k) {
    const Lane& lane = lanes_[k];
    for (size_t j = 0; j < lane.sched->ops.size(); ++j) {
      const Op& op = lane.sched->ops[j];
      if (op.kind != OpKind::kCompute || op.layer < 0) continue;
      const int pass = op.phase == strategies::Phase::kBackwardWeight
                           ? static_cast<int>(strategies::Phase::kBackwardInput)
                           : static_cast<int>(op.phase);
      const size_t i = static_cast<size_t>(lane.offset) + j;
      auto& [time, last] = passes[Key{k, op.layer, op.micro_batch, pass}];
      time += duration_[i];
      last = i;
    }
  }
  for (const auto& [key, pass] : passes) {
    const Duration host =
        std::get<3>(key) == static_cast<int>(strategies::Phase::kBackwardInput) ? backward
                                                                                : forward;
    if (pass.first < host) duration_[pass.second] += host - pass.first;
  }
}

Status Runner::CheckRecv(size_t k, size_t j) {
  const Schedule& s = schedules_[k];
  const Op& op = s.ops[j];
  const auto field = [&](const char* name) {
    return fmt::format("schedules[{}].ops[{}].{}", k, j, name);
  };
  const int32_t peer_lane = op.peer_stage >= 0 && op.peer_stage < ctx_.mesh.pp
                                ? lane_of_stage_[static_cast<size_t>(op.peer_stage)]
                                : -1;
  if (peer_lane < 0) {
    return InvalidArgumentError(
        fmt::format("{}: {}: a recv of stage {} needs the schedule of its sending stage; none "
                    "was given",
                    field("peer_stage"), op.peer_stage, s.stage));
  }
  const Schedule& peer = schedules_[static_cast<size_t>(peer_lane)];
  if (op.match < 0 || static_cast<size_t>(op.match) >= peer.ops.size()) {
    return InvalidArgumentError(fmt::format("{}: {}: must be in [0, {}), an op of stage {}",
                                            field("match"), op.match, peer.ops.size(),
                                            op.peer_stage));
  }
  const Op& send = peer.ops[static_cast<size_t>(op.match)];
  if (send.kind != OpKind::kCollective || send.collective != CollectiveKind::kSendRecv ||
      send.axis != Axis::kPipeline || send.peer_stage != s.stage) {
    return InvalidArgumentError(fmt::format(
        "{}: {}: op {} of stage {} is not a pipeline send to stage {} (a {} with peer_stage {})",
        field("match"), op.match, op.match, op.peer_stage, s.stage,
        send.kind == OpKind::kCollective ? strategies::CollectiveKindName(send.collective)
                                         : strategies::OpKindName(send.kind),
        send.peer_stage));
  }
  return Status();
}

Status Runner::SetupDeps() {
  std::vector<int32_t> offsets(lanes_.size());
  for (size_t k = 0; k < lanes_.size(); ++k) offsets[k] = lanes_[k].offset;
  ASSIGN_OR_RETURN(deps_, DepGraph::Build(schedules_, offsets, lane_of_stage_));
  for (Lane& lane : lanes_) {
    for (size_t j = 0; j < lane.sched->ops.size(); ++j) {
      lane.stream_ops[static_cast<size_t>(lane.sched->ops[j].stream)].push_back(
          lane.offset + static_cast<int32_t>(j));
    }
  }
  return SetupExchanges();
}

// A pipeline send is blocking when it runs on the compute stream (the stage's program), and a
// receive when the send it matches is. Each stream's maximal runs of blocking ops are its
// exchanges. Nothing is allocated when no send blocks.
Status Runner::SetupExchanges() {
  const auto blocking_send = [](const Op& op) {
    return op.kind == OpKind::kCollective && op.collective == CollectiveKind::kSendRecv &&
           op.axis == Axis::kPipeline && op.peer_stage >= 0 && op.stream == Stream::kCompute;
  };
  bool any = false;
  for (const Lane& lane : lanes_) {
    for (const Op& op : lane.sched->ops) any |= blocking_send(op);
  }
  if (!any) return Status();
  const size_t n_ops = lane_of_.size();
  exchange_of_.assign(n_ops, -1);
  partner_.assign(n_ops, -1);
  std::vector<char> blocking(n_ops, 0);
  for (size_t k = 0; k < lanes_.size(); ++k) {
    Lane& lane = lanes_[k];
    for (size_t j = 0; j < lane.sched->ops.size(); ++j) {
      const Op& op = lane.sched->ops[j];
      const int32_t i = lane.offset + static_cast<int32_t>(j);
      if (blocking_send(op)) {
        blocking[static_cast<size_t>(i)] = 1;
        lane.blocking_sends = true;
      } else if (op.kind == OpKind::kRecv) {
        const Lane& peer =
            lanes_[static_cast<size_t>(lane_of_stage_[static_cast<size_t>(op.peer_stage)])];
        const int32_t send = peer.offset + op.match;
        if (!blocking_send(OpAt(send))) continue;
        if (partner_[static_cast<size_t>(send)] >= 0) {
          return InvalidArgumentError(fmt::format(
              "schedules[{}].ops[{}].match: {}: op {} of stage {} is a blocking send that "
              "another recv already matches",
              k, j, op.match, op.match, op.peer_stage));
        }
        blocking[static_cast<size_t>(i)] = 1;
        partner_[static_cast<size_t>(send)] = i;
        partner_[static_cast<size_t>(i)] = send;
      }
    }
  }
  for (size_t k = 0; k < lanes_.size(); ++k) {
    const Lane& lane = lanes_[k];
    for (size_t st = 0; st < static_cast<size_t>(kNumStreams); ++st) {
      const std::vector<int32_t>& ops = lane.stream_ops[st];
      for (size_t p = 0; p < ops.size(); ++p) {
        const int32_t i = ops[p];
        if (!blocking[static_cast<size_t>(i)]) continue;
        if (OpAt(i).kind == OpKind::kCollective && partner_[static_cast<size_t>(i)] < 0) {
          return InvalidArgumentError(fmt::format(
              "schedules[{}].ops[{}]: a blocking pipeline send (on the compute stream) to stage "
              "{} that no recv of that stage matches",
              k, i - lane.offset, OpAt(i).peer_stage));
        }
        const bool joins = p > 0 && blocking[static_cast<size_t>(ops[p - 1])];
        if (!joins) {
          exchanges_.push_back(Exchange{.lane = static_cast<uint32_t>(k),
                                        .stream = static_cast<uint8_t>(st),
                                        .begin = static_cast<int32_t>(exchange_ops_.size())});
        }
        exchange_ops_.push_back(i);
        exchanges_.back().end = static_cast<int32_t>(exchange_ops_.size());
        exchange_of_[static_cast<size_t>(i)] = static_cast<int32_t>(exchanges_.size() - 1);
      }
    }
  }
  return Status();
}

Status Runner::SetupTrace() {
  if (opt_.trace == nullptr) return Status();
  std::vector<internal::TracedLane> traced(lanes_.size());
  for (size_t k = 0; k < lanes_.size(); ++k) {
    traced[k] = {lanes_[k].rank, lanes_[k].covers_stage,
                 static_cast<int64_t>(lanes_[k].sched->ops.size())};
  }
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> ranks,
                   internal::TracedRanksPerLane(opt_.trace_ranks, ctx_.mesh, ctx_.rank_order,
                                                traced, lane_of_stage_, kMaxTracedOps));
  traces::TraceSink& t = *opt_.trace;
  int64_t events = 0;  // each op is at most one slice or one counter sample per traced rank
  for (size_t k = 0; k < lanes_.size(); ++k) {
    events += static_cast<int64_t>(ranks[k].size() * lanes_[k].sched->ops.size());
  }
  t.ExpectEvents(events);
  for (size_t k = 0; k < lanes_.size(); ++k) {
    Lane& lane = lanes_[k];
    for (int64_t r : ranks[k]) {
      const uint32_t pid = static_cast<uint32_t>(r);
      t.ProcessName(
          pid, internal::ProcessLabel(r, cluster_.vertex(rank_gpu_[static_cast<size_t>(r)])), r);
      for (int s = 0; s < kNumStreams; ++s) {
        // The p2p and dp-comm threads only where the lane uses them, so traces without
        // pipelining or data parallelism keep the four threads they always had.
        if ((static_cast<Stream>(s) == Stream::kP2p || static_cast<Stream>(s) == Stream::kDpComm) &&
            lane.stream_ops[static_cast<size_t>(s)].empty() &&
            !(static_cast<Stream>(s) == Stream::kP2p && lane.blocking_sends)) {
          continue;
        }
        t.ThreadName(pid, static_cast<uint32_t>(s), strategies::StreamName(static_cast<Stream>(s)),
                     s);
      }
      lane.trace_pids.push_back(pid);
    }
    lane.memory.TraceTo(opt_.trace, lane.trace_pids);
  }
  return Status();
}

void Runner::StartOp(Engine& engine, Lane& lane, int32_t i) {
  const size_t st = static_cast<size_t>(OpAt(i).stream);
  lane.started[st] = engine.now();
  lane.busy[st] = true;
  Launch(engine, lane, i);
}

void Runner::Launch(Engine& engine, Lane& lane, int32_t i) {
  const Op& op = OpAt(i);
  RoleResult& result = lane.result;
  if (op.kind == OpKind::kCollective) {
    result.collective_bytes[static_cast<size_t>(op.collective)] += op.bytes;
    ++result.collective_calls[static_cast<size_t>(op.collective)];
  } else if (op.kind == OpKind::kCopy) {
    result.copy_bytes += op.bytes;
  }
  const CommPlan* plan = plan_[static_cast<size_t>(i)];
  if (plan == nullptr) {
    engine.ScheduleAfter(duration_[static_cast<size_t>(i)], kOpDone, 0, static_cast<uint64_t>(i),
                         kDonePhase);
    return;
  }
  if (op.kind == OpKind::kCollective) {
    ++result.algorithm_calls[static_cast<size_t>(op.collective)]
                            [static_cast<size_t>(plan->algorithm)];
    ++result.protocol_calls[static_cast<size_t>(protocol_[static_cast<size_t>(i)])];
  }
  CountUnreplayed(*plan, op);
  // A transfer's own duration (its protocol cost and pipeline fill, zero for copies) follows
  // its flows; a pipelined plan's transfers run at once and the op waits for the last.
  int32_t left = 0;
  Duration timed = Duration::Zero();
  for (std::span<const CommPhase> phases : collectives::Transfers(*plan)) {
    if (const std::optional<Duration> d = network_->Start(
            engine.now(), phases, {op.bytes, op.buffer_bytes}, static_cast<uint64_t>(i))) {
      timed = std::max(timed, *d);
    } else {
      ++left;
    }
  }
  if (left == 0) {
    ScheduleDone(engine, i, timed);
  } else if (plan->pipelined) {
    pipelined_[i] = {left, engine.now() + timed};
  }
}

void Runner::ScheduleDone(Engine& engine, int32_t i, Duration transfer) {
  const Duration own = duration_[static_cast<size_t>(i)];
  engine.ScheduleAfter(transfer > Duration::Max() - own ? Duration::Max() : transfer + own, kOpDone,
                       0, static_cast<uint64_t>(i), kDonePhase);
}

void Runner::StartReady(Engine& engine) {
  // The lowest dirty lane first, until none is: a lane's poll may free ops of lower lanes
  // (a recv whose send it completed), which are polled next.
  while (const std::optional<uint32_t> k = dirty_.TakeLowest()) PollLane(engine, lanes_[*k]);
}

void Runner::PollLane(Engine& engine, Lane& lane) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t st = 0; st < static_cast<size_t>(kNumStreams); ++st) {
      while (!lane.busy[st] && lane.next[st] < lane.stream_ops[st].size()) {
        const int32_t i = lane.stream_ops[st][lane.next[st]];
        if (!exchange_of_.empty() && exchange_of_[static_cast<size_t>(i)] >= 0) {
          if (!TryPost(engine, lane, exchange_of_[static_cast<size_t>(i)])) break;
          continue;
        }
        if (!deps_.ready(i)) break;
        ++lane.next[st];
        const Op& op = lane.sched->ops[static_cast<size_t>(i - lane.offset)];
        if (op.kind == OpKind::kAlloc || op.kind == OpKind::kFree || op.kind == OpKind::kRecv) {
          // No duration: done on the spot (a recv's data arrived with its send, a dep).
          if (op.kind == OpKind::kAlloc) {
            lane.memory.Allocate(op.space, op.tag, op.bytes, engine.now());
          } else if (op.kind == OpKind::kFree) {
            lane.memory.Free(op.space, op.tag, op.bytes, engine.now());
          }
          lane.end = engine.now();
          Release(i);
          progress = true;
          continue;
        }
        StartOp(engine, lane, i);
      }
    }
  }
}

bool Runner::TryPost(Engine& engine, Lane& lane, int32_t x) {
  Exchange& ex = exchanges_[static_cast<size_t>(x)];
  const std::span<const int32_t> ops(exchange_ops_.data() + ex.begin,
                                     static_cast<size_t>(ex.end - ex.begin));
  for (int32_t i : ops) {
    if (IsBlockingSend(i) && !deps_.ready(i)) return false;
  }
  const size_t st = ex.stream;
  lane.busy[st] = true;
  lane.next[st] += ops.size();
  lane.open_exchange = x;
  ex.posted = true;
  ex.left = static_cast<int32_t>(ops.size());
  for (int32_t i : ops) {
    const int32_t partner = partner_[static_cast<size_t>(i)];
    if (!exchanges_[static_cast<size_t>(exchange_of_[static_cast<size_t>(partner)])].posted) {
      continue;
    }
    const int32_t send = IsBlockingSend(i) ? i : partner;
    send_started_[send] = engine.now();
    Launch(engine, lanes_[lane_of_[static_cast<size_t>(send)]], send);
  }
  return true;
}

// A blocking send delivered: it and its receive finish, and each one's exchange has one op
// fewer to wait for.
void Runner::FinishBlockingSend(Engine& engine, int32_t i) {
  Lane& lane = lanes_[lane_of_[static_cast<size_t>(i)]];
  const auto it = send_started_.find(i);
  const Duration start = it->second;
  send_started_.erase(it);
  const Duration end = engine.now();
  // The sends of one exchange may overlap: p2p busy time is their union.
  auto& p2p = lane.intervals[static_cast<size_t>(Stream::kP2p)];
  std::pair<int64_t, int64_t> span(start.picoseconds(), end.picoseconds());
  while (!p2p.empty() && span.first <= p2p.back().second) {
    span = {std::min(span.first, p2p.back().first), std::max(span.second, p2p.back().second)};
    p2p.pop_back();
  }
  if (span.second > span.first) p2p.push_back(span);
  if (opt_.trace != nullptr) TraceOp(lane, i, start, end, Stream::kP2p);
  const int32_t recv = partner_[static_cast<size_t>(i)];
  Release(i);
  Release(recv);
  ExchangeOpDone(exchange_of_[static_cast<size_t>(i)], end);
  ExchangeOpDone(exchange_of_[static_cast<size_t>(recv)], end);
}

void Runner::ExchangeOpDone(int32_t x, Duration now) {
  Exchange& ex = exchanges_[static_cast<size_t>(x)];
  if (--ex.left > 0) return;
  Lane& lane = lanes_[ex.lane];
  lane.busy[ex.stream] = false;
  lane.open_exchange = -1;
  lane.end = now;
  dirty_.Mark(ex.lane);
}

void Runner::Release(int32_t i) {
  deps_.Release(i, [this](int32_t succ) { dirty_.Mark(lane_of_[static_cast<size_t>(succ)]); });
}

void Runner::TraceOp(const Lane& lane, int32_t i, Duration start, Duration end, Stream thread) {
  const Op& op = OpAt(i);
  const std::string name = internal::SliceName(op);
  if (name.empty()) return;
  std::vector<traces::TraceArg> args = {
      traces::TraceArg("op", i - lane.offset),
      traces::TraceArg("layer", op.layer),
      traces::TraceArg("micro_batch", op.micro_batch),
      traces::TraceArg("bytes", op.bytes.count()),
  };
  std::string group;
  if (op.kind == OpKind::kCollective) {
    const CommPlan* plan = plan_[static_cast<size_t>(i)];
    group = op.collective == CollectiveKind::kSendRecv && op.peer_stage >= 0
                ? fmt::format("pp stage {} to {}", lane.sched->stage, op.peer_stage)
                : fmt::format("{} {} of {}", topology::AxisName(op.axis),
                              strategies::GroupKindName(op.group), op.group_size);
    args.emplace_back("algorithm",
                      plan != nullptr ? algorithms_.at(plan->algorithm).name() : "none");
    args.emplace_back("group", group);
  }
  for (uint32_t pid : lane.trace_pids) {
    opt_.trace->Complete(pid, static_cast<uint32_t>(thread), name, strategies::PhaseName(op.phase),
                         start, end - start, args);
  }
}

void Runner::FinishOp(Engine& engine, int32_t i) {
  if (IsBlockingSend(i)) {
    FinishBlockingSend(engine, i);
    return;
  }
  const Op& op = OpAt(i);
  const uint32_t k = lane_of_[static_cast<size_t>(i)];
  Lane& lane = lanes_[k];
  const size_t st = static_cast<size_t>(op.stream);
  lane.busy[st] = false;
  const Duration start = lane.started[st];
  const Duration end = engine.now();
  lane.end = end;
  if (end > start) lane.intervals[st].emplace_back(start.picoseconds(), end.picoseconds());
  if (opt_.trace != nullptr) TraceOp(lane, i, start, end, op.stream);
  Release(i);
  dirty_.Mark(k);  // its stream is free
}

void Runner::ArmNetwork(Engine& engine) {
  const Duration t = network_->NextEventTime();
  // Max() is "idle", unless a pending time saturated there: scheduling it makes the engine fail
  // the run at its time limit instead of leaving the transfer stuck (a false deadlock).
  if (t == Duration::Max() && !network_->time_overflowed()) return;
  if (t == armed_time_ && network_->version() == armed_version_) return;
  armed_time_ = t;
  armed_version_ = network_->version();
  engine.ScheduleAt(std::max(t, engine.now()), kNetworkWake, 0, armed_version_, kWakePhase);
}

Status Runner::Handle(Engine& engine, const Event& e) {
  if (e.kind == kOpDone) {
    FinishOp(engine, static_cast<int32_t>(e.payload));
  } else {
    if (e.payload != network_->version()) return Status();  // superseded by a later arming
    finished_.clear();
    network_->AdvanceTo(engine.now(), finished_);
    for (uint64_t i : finished_) {
      Duration wait = Duration::Zero();
      if (auto it = pipelined_.find(static_cast<int32_t>(i)); it != pipelined_.end()) {
        if (--it->second.left > 0) continue;
        wait = std::max(Duration::Zero(), it->second.timed_end - engine.now());
        pipelined_.erase(it);
      }
      if (wait + duration_[i] > Duration::Zero()) {
        ScheduleDone(engine, static_cast<int32_t>(i), wait);
      } else {
        FinishOp(engine, static_cast<int32_t>(i));
      }
    }
  }
  StartReady(engine);
  ArmNetwork(engine);
  return Status();
}

std::string Runner::DeadlockMessage(const Lane& lane, size_t st) const {
  const char* stream = strategies::StreamName(static_cast<Stream>(st));
  if (lane.open_exchange >= 0 && exchanges_[static_cast<size_t>(lane.open_exchange)].stream == st) {
    // The exchange it waits on: name the first op whose peer never reached its own.
    const Exchange& ex = exchanges_[static_cast<size_t>(lane.open_exchange)];
    for (int32_t p = ex.begin; p < ex.end; ++p) {
      const int32_t i = exchange_ops_[static_cast<size_t>(p)];
      const int32_t partner = partner_[static_cast<size_t>(i)];
      if (exchanges_[static_cast<size_t>(exchange_of_[static_cast<size_t>(partner)])].posted) {
        continue;
      }
      const Lane& peer = lanes_[lane_of_[static_cast<size_t>(partner)]];
      return fmt::format(
          "schedule '{}' deadlocked on the {} stream at op {}: its blocking pipeline {} stage {} "
          "waits for stage {} to reach op {}, which it never does",
          lane.sched->role, stream, i - lane.offset, IsBlockingSend(i) ? "send to" : "recv from",
          OpAt(i).peer_stage, peer.sched->stage, partner - peer.offset);
    }
  }
  return fmt::format("schedule '{}' deadlocked on the {} stream at op {}", lane.sched->role, stream,
                     lane.next[st] < lane.stream_ops[st].size()
                         ? lane.stream_ops[st][lane.next[st]] - lane.offset
                         : -1);
}

// The union of two sorted lists of disjoint intervals (each stream's busy intervals), sorted
// and disjoint: the time at least one of the two streams is busy. O(|a| + |b|).
std::vector<std::pair<int64_t, int64_t>> Union(const std::vector<std::pair<int64_t, int64_t>>& a,
                                               const std::vector<std::pair<int64_t, int64_t>>& b) {
  std::vector<std::pair<int64_t, int64_t>> out;
  out.reserve(a.size() + b.size());
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a = j == b.size() || (i < a.size() && a[i].first <= b[j].first);
    const std::pair<int64_t, int64_t> next = take_a ? a[i++] : b[j++];
    if (!out.empty() && next.first <= out.back().second) {
      out.back().second = std::max(out.back().second, next.second);
    } else {
      out.push_back(next);
    }
  }
  return out;
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

StatusOr<ExecutionResult> Runner::Execute() {
  RETURN_IF_ERROR(Setup());
  Engine engine;
  StartReady(engine);
  ArmNetwork(engine);
  auto handler = [this](Engine& eng, const Event& e) { return Handle(eng, e); };
  ASSIGN_OR_RETURN(RunEnd end, engine.Run(handler));
  (void)end;
  for (const Lane& lane : lanes_) {
    for (int s = 0; s < kNumStreams; ++s) {
      const size_t st = static_cast<size_t>(s);
      if (lane.next[st] != lane.stream_ops[st].size() || lane.busy[st]) {
        return InternalError(DeadlockMessage(lane, st));
      }
    }
  }
  ExecutionResult out;
  out.events = engine.events_handled();
  Duration step_time = Duration::Zero();
  for (const Lane& lane : lanes_) step_time = std::max(step_time, lane.end);
  out.links = CollectLinkStats(step_time);
  for (Lane& lane : lanes_) {
    auto busy = [&](Stream s) {
      int64_t sum = 0;
      for (auto [a, b] : lane.intervals[static_cast<size_t>(s)]) sum += b - a;
      return Duration::Picoseconds(sum);
    };
    RoleResult& r = lane.result;
    r.step_time = lane.end;
    r.compute_busy = busy(Stream::kCompute);
    r.comm_busy = busy(Stream::kComm) + busy(Stream::kDpComm);
    r.copy_busy = busy(Stream::kCopy);
    r.host_busy = busy(Stream::kHost);
    r.p2p_busy = busy(Stream::kP2p);
    r.exposed_comm =
        Duration::Picoseconds(Uncovered(Union(lane.intervals[static_cast<size_t>(Stream::kComm)],
                                              lane.intervals[static_cast<size_t>(Stream::kDpComm)]),
                                        lane.intervals[static_cast<size_t>(Stream::kCompute)]));
    r.idle = r.step_time - r.compute_busy;
    r.live_at_peak = lane.memory.live_at_device_peak();
    r.peak_memory = lane.memory.device_peak();
    r.peak_at = lane.memory.device_peak_at();
    r.peak_host_memory = lane.memory.host_peak();
    r.peak_nvme = lane.memory.nvme_peak();
    r.events = out.events;
    r.links = out.links;
    out.roles.push_back(std::move(r));
  }
  return out;
}

std::vector<LinkKindStats> Runner::CollectLinkStats(Duration step_time) const {
  std::vector<LinkKindStats> out;
  std::array<LinkKindStats, kNumLinkKinds> by_kind{};
  // Busy times of the links used, per kind. Their mean is formed as sum(b / n) + sum(b % n) / n,
  // exact and free of overflow: a plain int64 sum overflows once the busy times of the links
  // exceed 2^63 ps in total (16 links busy for a 1e6-second step).
  std::array<std::vector<int64_t>, kNumLinkKinds> busy_of{};
  for (int l = 0; l < cluster_.num_links(); ++l) {
    const size_t k = static_cast<size_t>(cluster_.link(topology::LinkId{l}).kind);
    LinkKindStats& s = by_kind[k];
    ++s.links;
    const LinkStats ls = network_->link_stats(static_cast<LinkIndex>(l));
    const int64_t bytes = ls.bytes_carried.count();
    const int64_t busy = ls.busy_time.picoseconds();
    const uint32_t peak = ls.peak_flows;
    if (bytes == 0 && busy == 0) {
      // A link only groups that are not replayed use carried bytes too (counted per kind);
      // its busy time repeats a replayed link's, so only the replayed ones enter the times.
      if (static_cast<size_t>(l) < planner_.unreplayed_links().size() &&
          planner_.unreplayed_links()[static_cast<size_t>(l)])
        ++s.links_used;
      continue;
    }
    ++s.links_used;
    s.bytes += Bytes::Count(bytes);
    s.busy_max = std::max(s.busy_max, Duration::Picoseconds(busy));
    busy_of[k].push_back(busy);
    s.peak_flows = std::max(s.peak_flows, peak);
  }
  const double step = static_cast<double>(step_time.picoseconds());
  for (int k = 0; k < kNumLinkKinds; ++k) {
    LinkKindStats& s = by_kind[static_cast<size_t>(k)];
    s.bytes += Bytes::Count(unreplayed_bytes_[static_cast<size_t>(k)]);
    if (s.links == 0) continue;
    s.kind = static_cast<topology::LinkKind>(k);
    if (const auto n = static_cast<int64_t>(busy_of[static_cast<size_t>(k)].size()); n > 0) {
      int64_t quotients = 0;
      int64_t remainders = 0;
      for (int64_t b : busy_of[static_cast<size_t>(k)]) {
        quotients += b / n;
        remainders += b % n;
      }
      s.busy_avg = Duration::Picoseconds(quotients + remainders / n);
    }
    if (step > 0) {
      s.utilization_max = static_cast<double>(s.busy_max.picoseconds()) / step;
      s.utilization_avg = static_cast<double>(s.busy_avg.picoseconds()) / step;
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace

StatusOr<ExecutionResult> ExecuteSchedules(const topology::Cluster& cluster,
                                           std::span<const strategies::Schedule> schedules,
                                           const ExecutionContext& context,
                                           const ExecutorOptions& options) {
  Runner runner(cluster, schedules, context, options);
  return runner.Execute();
}

StatusOr<RoleResult> ExecuteSchedule(const topology::Cluster& cluster,
                                     const strategies::Schedule& schedule,
                                     const ExecutionContext& context,
                                     const ExecutorOptions& options) {
  ASSIGN_OR_RETURN(ExecutionResult r,
                   ExecuteSchedules(cluster, std::span(&schedule, 1), context, options));
  return std::move(r.roles.front());
}

StatusOr<SimResult> SimulateStep(const topology::Cluster& cluster,
                                 const strategies::ModelSpec& model,
                                 const strategies::TrainingSpec& training,
                                 const strategies::StrategySpec& strategy,
                                 const ExecutorOptions& options) {
  // One Analyze serves the result and the schedules.
  ASSIGN_OR_RETURN(strategies::Plan plan,
                   strategies::Analyze(model, training, strategy, cluster.spec(),
                                       strategies::ScheduleAnalyzeOptions(options.schedule)));
  ASSIGN_OR_RETURN(
      std::vector<strategies::Schedule> schedules,
      strategies::BuildSchedulesForPlan(model, training, strategy, plan, options.schedule));
  ExecutionContext ctx;
  ctx.mesh = strategy.mesh;
  ctx.rank_order = strategy.rank_order;
  ctx.precision = training.precision;
  ctx.matmul_efficiency = strategies::cost::StepMatmulEfficiency(
      model.transformer, training, strategy.mesh, cluster.spec().node.gpu,
      ComputeType(training.precision));
  ctx.rank = 0;
  ASSIGN_OR_RETURN(ExecutionResult run, ExecuteSchedules(cluster, schedules, ctx, options));
  SimResult out;
  for (RoleResult& r : run.roles) {
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
  out.links = std::move(run.links);
  out.peak = cluster.spec().node.gpu.Peak(ComputeType(training.precision));
  // MFU counts the model's FLOPs (eq. 3 without recompute, coefficient 72); HFU counts what
  // the hardware executes, recomputation included (the plan's figure: 96 under full
  // recompute, 72 plus the attention recompute under selective).
  const double world = static_cast<double>(std::max<int64_t>(plan.world, 1));
  out.model_flops_per_rank =
      strategies::ModelFlopsPerIteration(model.transformer, training.global_batch,
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
