// Implementation of BuildSchedules (see schedule.h for what a step holds and the invariants).
// Structure: analyze the scenario for the plan the schedule must agree with; refuse what is
// out of scope; lay out the units; emit the static allocs, then per micro-batch the forward
// and backward with their gathers, copies and gradient synchronization, then the optimizer
// step; finally give every collective its per-device bytes, splitting the plan's volume for
// its (kind, state, group) over the ops in proportion to their buffers, so sums agree to the
// byte.
//
// Invariant kept while emitting: an op is appended only after every op it depends on, so
// dependencies always point backwards.
// Thread-safety: pure functions.
#include "strategies/schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "strategies/analyzer.h"
#include "strategies/cost/arith.h"
#include "strategies/cost/pass_costs.h"
#include "strategies/model.h"

namespace placesim::strategies {

using cost::CeilDiv;
using topology::Axis;

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kCompute:
      return "compute";
    case OpKind::kCollective:
      return "collective";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kHostCompute:
      return "host-compute";
    case OpKind::kAlloc:
      return "alloc";
    case OpKind::kFree:
      return "free";
    case OpKind::kRecv:
      return "recv";
  }
  return "unknown";
}

const char* StreamName(Stream s) {
  switch (s) {
    case Stream::kCompute:
      return "compute";
    case Stream::kComm:
      return "comm";
    case Stream::kCopy:
      return "copy";
    case Stream::kHost:
      return "host";
    case Stream::kP2p:
      return "p2p";
  }
  return "unknown";
}

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kStep:
      return "step";
    case Phase::kForward:
      return "forward";
    case Phase::kBackwardInput:
      return "backward-input";
    case Phase::kBackwardWeight:
      return "backward-weight";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kOptimizer:
      return "optimizer";
  }
  return "unknown";
}

const char* CopyKindName(CopyKind k) {
  switch (k) {
    case CopyKind::kDeviceToHost:
      return "d2h";
    case CopyKind::kHostToDevice:
      return "h2d";
    case CopyKind::kNvmeRead:
      return "nvme-read";
    case CopyKind::kNvmeWrite:
      return "nvme-write";
  }
  return "unknown";
}

const char* MemoryTagName(MemoryTag t) {
  switch (t) {
    case MemoryTag::kParams:
      return "params";
    case MemoryTag::kGatheredParams:
      return "gathered-params";
    case MemoryTag::kGrads:
      return "grads";
    case MemoryTag::kGradBuckets:
      return "grad-buckets";
    case MemoryTag::kOptimizer:
      return "optimizer";
    case MemoryTag::kActivations:
      return "activations";
    case MemoryTag::kCheckpoints:
      return "checkpoints";
    case MemoryTag::kStaging:
      return "staging";
  }
  return "unknown";
}

const char* MemorySpaceName(MemorySpace m) {
  switch (m) {
    case MemorySpace::kDevice:
      return "device";
    case MemorySpace::kHost:
      return "host";
    case MemorySpace::kNvme:
      return "nvme";
  }
  return "unknown";
}

const char* GroupKindName(GroupKind g) {
  switch (g) {
    case GroupKind::kAxis:
      return "axis";
    case GroupKind::kShardGroup:
      return "shard-group";
    case GroupKind::kReplicaGroup:
      return "replica-group";
  }
  return "unknown";
}

namespace {

bool IsShardedMode(Mode m) {
  return m == Mode::kSharded || m == Mode::kShardedGather || m == Mode::kOffloaded;
}

// Splits `total` into parts proportional to `weights` that sum to `total` exactly: part k is
// floor(total * W_k / W) - floor(total * W_{k-1} / W) with W_k the running sum.
std::vector<int64_t> Split(int64_t total, const std::vector<int64_t>& weights) {
  __int128 sum = 0;
  for (int64_t w : weights) sum += w;
  std::vector<int64_t> out(weights.size(), 0);
  if (sum <= 0) return out;
  __int128 running = 0;
  int64_t prev = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    running += weights[k];
    const auto upto = static_cast<int64_t>(static_cast<__int128>(total) * running / sum);
    out[k] = upto - prev;
    prev = upto;
  }
  return out;
}

// Per-device ring bytes, as the plan computes them.
Bytes RingBytes(CollectiveKind kind, Bytes buffer, int64_t n) {
  return cost::RingBytesPerDevice(buffer, kind == CollectiveKind::kAllReduce ? 2 : 1, n);
}

// A gather / wrap unit: the embedding, a group of layers, or the output layer.
struct Unit {
  int32_t layer_begin = 0;  // transformer layers [begin, end); empty for embedding / output
  int32_t layer_end = 0;
  int32_t special = kNoLayer;  // kEmbeddingLayer or kOutputLayer for those units
  int64_t elements = 0;        // parameters, unsharded
  int64_t expert = 0;          // of which expert parameters (ep > 1), gathered apart
};

// A gradient bucket: elements [begin, end) of the gradient in backward order.
struct Bucket {
  int64_t begin = 0;
  int64_t end = 0;
};

class Builder {
 public:
  explicit Builder(Schedule& s) : s_(s) {}

  int32_t Add(Op op, std::initializer_list<int32_t> deps = {}) {
    op.deps_begin = static_cast<int32_t>(s_.deps.size());
    for (int32_t d : deps) {
      if (d >= 0) s_.deps.push_back(d);
    }
    op.deps_end = static_cast<int32_t>(s_.deps.size());
    s_.ops.push_back(op);
    return static_cast<int32_t>(s_.ops.size() - 1);
  }
  int32_t Alloc(MemoryTag tag, MemorySpace space, Bytes bytes, Stream stream, Phase phase,
                int32_t layer, int32_t mb, std::initializer_list<int32_t> deps = {}) {
    if (bytes.count() <= 0) return -1;
    Op op;
    op.kind = OpKind::kAlloc;
    op.stream = stream;
    op.phase = phase;
    op.layer = layer;
    op.micro_batch = mb;
    op.tag = tag;
    op.space = space;
    op.bytes = bytes;
    return Add(op, deps);
  }
  int32_t Free(int32_t alloc, Stream stream, Phase phase,
               std::initializer_list<int32_t> deps = {}) {
    if (alloc < 0) return -1;
    Op op = s_.ops[static_cast<size_t>(alloc)];
    op.kind = OpKind::kFree;
    op.stream = stream;
    op.phase = phase;
    op.alloc = alloc;
    return Add(op, deps);
  }
  Op& at(int32_t i) { return s_.ops[static_cast<size_t>(i)]; }

 private:
  Schedule& s_;
};

Op ComputeOp(Phase phase, int32_t layer, int32_t unit, int32_t mb, const cost::Work& work) {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = Stream::kCompute;
  op.phase = phase;
  op.layer = layer;
  op.unit = unit;
  op.micro_batch = mb;
  op.flops = work.flops;
  op.bytes_read = work.read;
  op.bytes_written = work.written;
  op.elementwise_bytes = work.elementwise;
  return op;
}

Op CollectiveOp(CollectiveKind kind, State state, GroupKind group, int64_t group_size, Bytes buffer,
                Phase phase, int32_t unit, int32_t mb) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = Stream::kComm;
  op.phase = phase;
  op.unit = unit;
  op.micro_batch = mb;
  op.collective = kind;
  op.axis = Axis::kData;
  op.group = group;
  op.group_size = static_cast<int32_t>(group_size);
  op.state = state;
  op.buffer_bytes = buffer;
  return op;
}

Op CopyOp(CopyKind kind, State state, Bytes bytes, Phase phase, int32_t unit, int32_t mb) {
  Op op;
  op.kind = OpKind::kCopy;
  op.stream = Stream::kCopy;
  op.phase = phase;
  op.unit = unit;
  op.micro_batch = mb;
  op.copy = kind;
  op.state = state;
  op.bytes = bytes;
  return op;
}

GroupKind GroupOf(int64_t group_size, int64_t dp, bool replica) {
  if (replica) return GroupKind::kReplicaGroup;
  return group_size == dp ? GroupKind::kAxis : GroupKind::kShardGroup;
}

Status CheckScope(const ModelSpec& model, const StrategySpec& strategy, const Plan& plan,
                  const ScheduleOptions& options) {
  const topology::MeshShape& mesh = strategy.mesh;
  if (mesh.ep > 1) {
    // Expert parallelism: ep groups carved out of dp, expert gradients synchronized over the
    // dp / ep ranks that hold the same experts. Generated for model states on the device
    // (DDP, ZeRO-1/2/3, FSDP) in shard groups of all of dp.
    const Mode theta = strategy.at(Axis::kData, State::kParams).mode;
    const Mode grads = strategy.at(Axis::kData, State::kGrads).mode;
    const Mode omega = strategy.at(Axis::kData, State::kOptimizer).mode;
    const bool sharded_dp = IsShardedMode(theta) || IsShardedMode(grads) || IsShardedMode(omega);
    if (mesh.dp > 1 &&
        (theta == Mode::kOffloaded || grads == Mode::kOffloaded || omega == Mode::kOffloaded ||
         (sharded_dp && strategy.shard_group_size > 0 && strategy.shard_group_size < mesh.dp))) {
      return FailedPreconditionError(fmt::format(
          "ep={} with params {}, grads {}, optimizer {} on dp (shard group {}): expert-parallel "
          "schedules are generated for model states on the device, replicated or sharded over "
          "all of dp (DDP, ZeRO-1/2/3, FSDP without hybrid groups) only",
          mesh.ep, ModeSymbol(theta), ModeSymbol(grads), ModeSymbol(omega),
          strategy.shard_group_size));
    }
  }
  if (mesh.cp > 1) {
    // Context parallelism (ring attention): the sequence split on cp, and the model states
    // placed on cp as on dp, so that gradients and shards are synchronized over dp x cp.
    for (State st : {State::kParams, State::kOptimizer, State::kGrads}) {
      if (strategy.at(Axis::kContext, st).mode != strategy.at(Axis::kData, st).mode) {
        return FailedPreconditionError(fmt::format(
            "{} {} on cp but {} on dp: context-parallel schedules are generated for model "
            "states placed on cp as on dp (synchronized over dp x cp) only",
            StateName(st), ModeSymbol(strategy.at(Axis::kContext, st).mode),
            ModeSymbol(strategy.at(Axis::kData, st).mode)));
      }
    }
    if (strategy.at(Axis::kContext, State::kActivations).mode != Mode::kSharded) {
      return FailedPreconditionError(
          fmt::format("activations {} on cp: context-parallel schedules split the sequence "
                      "(S on cp) only",
                      ModeSymbol(strategy.at(Axis::kContext, State::kActivations).mode)));
    }
  }
  // Θ, Ω and G must be sliced (S) on an axis that splits the model: each pipeline stage holds
  // its own layers; each tp rank its Megatron slice.
  const auto require_sliced = [&](Axis axis, const char* what) -> Status {
    for (State st : {State::kParams, State::kOptimizer, State::kGrads}) {
      if (strategy.at(axis, st).mode != Mode::kSharded) {
        return FailedPreconditionError(fmt::format(
            "{} {} on {}: {} schedules are generated for S on {} for params, optimizer and "
            "grads only",
            StateName(st), ModeSymbol(strategy.at(axis, st).mode), topology::AxisName(axis), what,
            topology::AxisName(axis)));
      }
    }
    return OkStatus();
  };
  if (mesh.pp > 1) RETURN_IF_ERROR(require_sliced(Axis::kPipeline, "pipeline"));
  if (mesh.ep > 1) RETURN_IF_ERROR(require_sliced(Axis::kExpert, "expert-parallel"));
  if (!model.has_architecture()) {
    return FailedPreconditionError(
        "a schedule needs the model's architecture (layers, hidden, ...); a bare parameter "
        "count supports `analyze` only");
  }
  if (mesh.tp > 1) {
    // Megatron tensor parallelism: the layer matrices (Θ, Ω, G) sliced on tp; activations
    // whole (R) or sequence-parallel (S, or S* read as S).
    RETURN_IF_ERROR(require_sliced(Axis::kTensor, "tensor-parallel"));
    const Mode tp_act = strategy.at(Axis::kTensor, State::kActivations).mode;
    if (tp_act == Mode::kOffloaded || tp_act == Mode::kMaterialized) {
      return FailedPreconditionError(fmt::format(
          "activations {} on tp: schedules are generated for R or S (sequence parallel) only",
          ModeSymbol(tp_act)));
    }
  }
  const Mode act = strategy.at(Axis::kData, State::kActivations).mode;
  if (mesh.dp > 1 &&
      (act == Mode::kOffloaded || act == Mode::kSharded || act == Mode::kShardedGather)) {
    return FailedPreconditionError(
        fmt::format("activations {} on dp: schedules are generated for R or M activations only",
                    ModeSymbol(act)));
  }
  if (!plan.ok()) {
    std::vector<std::string> rules;
    for (const Finding& f : plan.findings) {
      if (f.severity == Severity::kError) rules.push_back(f.rule);
    }
    return FailedPreconditionError(
        fmt::format("the placement breaks correctness rules ({}); see `placesim analyze`",
                    fmt::join(rules, ", ")));
  }
  if (options.bucket_bytes.count() < 1) {
    return InvalidArgumentError(
        fmt::format("bucket_bytes {}: must be >= 1 byte", options.bucket_bytes.count()));
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<Schedule>> BuildSchedules(const ModelSpec& model, const TrainingSpec& training,
                                               const StrategySpec& strategy,
                                               const topology::ClusterSpec& cluster,
                                               const ScheduleOptions& options) {
  AnalyzeOptions analyze_options;
  analyze_options.prefetch_depth = std::max(0, options.prefetch_depth);
  ASSIGN_OR_RETURN(const Plan plan, Analyze(model, training, strategy, cluster, analyze_options));
  RETURN_IF_ERROR(CheckScope(model, strategy, plan, options));

  const TransformerSpec& t = model.transformer;
  const ParameterBreakdown p = CountParameters(t);
  const StateBytes bpp = BytesPerParameter(training);
  const int64_t dp = strategy.mesh.dp;
  const int64_t m = plan.micro_batches;
  const int64_t h = t.hidden;
  const int64_t V = t.vocab;
  const Recompute recompute = plan.effective_recompute;
  const int depth = std::max(0, options.prefetch_depth);
  // Tensor parallelism (Megatron): each tp rank holds 1/t of the sliced matrices (column- and
  // row-parallel attention and MLP, vocab-parallel embedding and output layer) and the
  // replicated rest (norms, row-parallel biases), as the plan counts them.
  const int64_t tp = strategy.mesh.tp;
  const bool sp = plan.effective_sequence_parallel;
  // Expert parallelism (CheckScope: Θ, Ω, G sliced on ep): each rank of an ep group holds
  // E / ep experts of every layer, and the tp slice of each (expert tensor parallelism = tp).
  const bool moe = t.experts > 1;
  const int64_t ep = strategy.mesh.ep;
  // Per-op work, per tp rank (cost/pass_costs.h): every matrix product split t ways, a cp
  // rank's GEMMs over its s / cp tokens, its queries attending to all s keys.
  const cost::PassCosts pc = cost::ComputePassCosts(t, training, strategy.mesh, recompute, sp);
  const int64_t layer_expert_local = pc.layer_expert_elements;
  const int64_t layer_local = pc.layer_elements;
  // Pipeline parallelism: stage i holds L / p layers in v chunks of L / (p v); chunk c of
  // stage i is virtual stage c p + i (Megatron-LM's interleaved assignment).
  const int pp = strategy.mesh.pp;
  const int v = pp > 1 && training.pipeline_schedule == PipelineSchedule::kInterleaved1F1B
                    ? std::max(1, training.virtual_stages)
                    : 1;
  // An explicit split (strategy.pipeline_stage_layers, v = 1) gives each stage its count.
  const std::vector<int>& split_layers = strategy.pipeline_stage_layers;
  const auto layers_on = [&](int stage) -> int64_t {
    return split_layers.empty() ? p.layers / pp : split_layers[static_cast<size_t>(stage)];
  };
  int64_t max_stage_layers = 0;
  for (int stage = 0; stage < pp; ++stage)
    max_stage_layers = std::max(max_stage_layers, layers_on(stage));

  // ---- placement on dp
  const auto mode = [&](State st) { return strategy.at(Axis::kData, st).mode; };
  const auto target = [&](State st) {
    return strategy.at(Axis::kData, st).target == OffloadTarget::kNvme ? MemorySpace::kNvme
                                                                       : MemorySpace::kHost;
  };
  // Context parallelism joins dp for the model states (CheckScope): they are sharded and
  // synchronized over the dp x cp ranks of a tp rank and stage.
  const int64_t cp = strategy.mesh.cp;
  const int64_t dpc = dp * cp;
  const bool shard = dpc > 1;
  const bool g_sharded = shard && IsShardedMode(mode(State::kGrads));
  const bool o_sharded = shard && IsShardedMode(mode(State::kOptimizer));
  const bool t_offloaded = shard && mode(State::kParams) == Mode::kOffloaded;
  const bool t_gather = shard && (mode(State::kParams) == Mode::kShardedGather || t_offloaded);
  const bool o_offloaded = shard && mode(State::kOptimizer) == Mode::kOffloaded;
  const bool any_sharded = shard && (IsShardedMode(mode(State::kParams)) || o_sharded || g_sharded);
  const int g = strategy.shard_group_size;
  const int64_t n_dp = any_sharded ? ((g > 0 && g <= dp && dp % g == 0) ? g : dp) : dp;
  const int64_t n = n_dp * cp;  // ranks of a shard group (all of dp x cp unless hybrid)
  const int64_t replicas = dp / n_dp;
  const GroupKind shard_group = GroupOf(n, dpc, false);
  // Expert states are replicated over the dp / ep ranks holding the same experts, the dp
  // coordinates congruent mod ep (ep coordinate = dp mod ep, topology/mesh.h): the replica
  // group of dp / ep (stride ep); with ep = 1 they are placed as the dense states.
  const bool split_expert = ep > 1;
  const int64_t expert_n = split_expert ? dp / ep * cp : n;
  const GroupKind expert_group = split_expert ? GroupKind::kReplicaGroup : shard_group;
  const bool grads_reduce_scattered = g_sharded || o_sharded;
  const int64_t lpu = std::max<int64_t>(1, strategy.layers_per_unit);
  const int64_t per_bucket = std::max<int64_t>(1, options.bucket_bytes.count() / bpp.grads);

  const Bytes a2a_buffer = pc.all_to_all;
  const Bytes act_layer = pc.layer_kept;
  const Bytes act_full = pc.layer_full;
  const Bytes act_embedding = pc.embedding_activations;
  const Bytes act_head = pc.output_activations;
  const int64_t vocab_local = pc.vocab_elements;
  const Bytes tp_buffer = pc.tp_buffer;
  const Bytes p2p_bytes = pc.p2p;
  const Bytes kv_bytes = pc.kv;

  double ops_bound = 0;  // the most ops a stage can hold, from the bound below
  // ---- size: refuse, before allocating anything per op or per bucket, a schedule that
  // could exceed kMaxScheduleOps. The bound counts the most ops each piece can emit (see the
  // loops below); doubles, because micro-batches × buckets can pass 2^63.
  {
    const int64_t most_local = max_stage_layers * layer_local + CeilDiv(p.embedding, tp) +
                               CeilDiv(std::max(p.head, V * h), tp) + p.final_norm;
    const int64_t bucket_count = t_gather ? 0 : CeilDiv(most_local, per_bucket);
    const auto L = static_cast<double>(max_stage_layers);
    const double U = 2.0 + static_cast<double>(v * CeilDiv(max_stage_layers / v, lpu));
    const auto M = static_cast<double>(m);
    const auto K = static_cast<double>(bucket_count);
    // Per micro-batch: per layer alloc + forward, and alloc + recompute + 2 backward + 2
    // frees; per unit up to 2 gathers of 3 ops, a gradient alloc and a sync of 4; embedding
    // and output layer 9; per chunk pass a send and a receive each way. With tp > 1 a
    // layer's forward, recompute and backward-input are two blocks each (3 more ops) with up
    // to 2 tp collectives per block (12), and the embedding up to 2. Per bucket sync: alloc
    // + 4 (every micro-batch when the gradients are sharded or synchronized each
    // micro-batch). With cp > 1 a layer's three attention passes add up to 3 (cp - 1) ring
    // exchanges and parts. The step: allocs, optimizer, per part a copy back and an
    // all-gather.
    const bool each = g_sharded || options.sync_grads_every_micro_batch;
    const double per_layer = (tp > 1 ? 23.0 : 8.0) + 9.0 * static_cast<double>(cp - 1) +
                             (moe ? 15.0 : 0.0) +
                             (options.tp_comm_overlap ? 18.0 * static_cast<double>(tp) : 0.0);
    const double bound = M * (per_layer * L + 11.0 * U + 11.0 + 4.0 * v) +
                         (K + 1.0) * 5.0 * (each ? M : 1.0) + 2.0 * (K + 1.0 + U) + 20.0;
    ops_bound = bound;
    if (bound > static_cast<double>(kMaxScheduleOps)) {
      const std::string buckets_part =
          t_gather ? std::string()
                   : fmt::format(", {} gradient buckets of {} elements", bucket_count, per_bucket);
      return OutOfRangeError(fmt::format(
          "the step's schedule would need up to {:.0f} ops ({} micro-batches × {} layers{}); "
          "the limit is {}: use fewer micro-batches (global_batch / (micro_batch × dp)){} layers{}",
          bound, m, max_stage_layers, buckets_part, kMaxScheduleOps,
          t_gather ? " or fewer" : ", fewer", t_gather ? "" : " or larger gradient buckets"));
    }
  }

  // The schedule of pipeline stage `stage` (the only one when pp = 1).
  const auto build_stage = [&](int stage) {
    const bool first = stage == 0;
    const bool last = stage == pp - 1;
    const int64_t stage_layers = layers_on(stage);
    const int64_t chunk_layers = stage_layers / v;
    // The first layer of chunk c: virtual stage c p + stage of an even split, or the layers of
    // the stages before this one under an explicit split (v = 1).
    int64_t split_first = 0;
    for (int k = 0; k < stage; ++k) split_first += layers_on(k);
    const auto chunk_first = [&](int c) {
      return split_layers.empty() ? (int64_t{c} * pp + stage) * chunk_layers : split_first;
    };
    const RankRole* role_ptr = &plan.roles.front();
    for (const RankRole& r : plan.roles) {
      if (r.first_stage <= stage && stage <= r.last_stage) role_ptr = &r;
    }
    const RankRole& role = *role_ptr;
    // Per-device elements on this stage, as the plan counts them: the embedding on the first
    // stage; the output layer on the last, which keeps its own copy of a tied word embedding
    // when it is not also the first (Megatron-LM).
    const int64_t embedding_local = first ? CeilDiv(p.embedding, tp) : 0;
    const int64_t head_local =
        last ? CeilDiv(p.head, tp) + p.final_norm + (p.head == 0 && !first ? vocab_local : 0) : 0;
    const bool tied_exchange = pp > 1 && p.head == 0 && (first || last);
    // Dense and expert parts padded separately.
    const int64_t expert = stage_layers * layer_expert_local;
    const int64_t local_total = stage_layers * layer_local + embedding_local + head_local;
    const int64_t dense = local_total - expert;
    const auto elements = [&](State st) {
      const bool sh = shard && IsShardedMode(mode(st));
      return sh ? CeilDiv(dense, n) + CeilDiv(expert, expert_n) : dense + expert;
    };
    // Under ep > 1 the dense and expert gradients are bucketed apart (their groups differ).
    const int64_t grad_elements = split_expert ? dense : local_total;
    // Under S* a unit's expert gradients are reduce-scattered with the unit, not bucketed.
    const int64_t expert_grad_elements = split_expert && !t_gather ? expert : 0;
    const int64_t bucket_count = t_gather ? 0 : CeilDiv(grad_elements, per_bucket);

    // ---- units, chunk by chunk; chunk_units[c] = [begin, end) of chunk c's units
    std::vector<Unit> units;
    std::vector<std::pair<int32_t, int32_t>> chunk_units;
    for (int c = 0; c < v; ++c) {
      const auto begin = static_cast<int32_t>(units.size());
      if (first && c == 0) units.push_back(Unit{0, 0, kEmbeddingLayer, embedding_local});
      const int64_t l0 = chunk_first(c);
      for (int64_t l = l0; l < l0 + chunk_layers; l += lpu) {
        const int64_t end = std::min(l0 + chunk_layers, l + lpu);
        units.push_back(Unit{static_cast<int32_t>(l), static_cast<int32_t>(end), kNoLayer,
                             (end - l) * layer_local,
                             split_expert ? (end - l) * layer_expert_local : 0});
      }
      if (last && c == v - 1) units.push_back(Unit{0, 0, kOutputLayer, head_local});
      chunk_units.emplace_back(begin, static_cast<int32_t>(units.size()));
    }
    const auto unit_count = static_cast<int32_t>(units.size());
    // Index of a stage layer in per-micro-batch arrays: its position on this stage.
    const auto local_layer = [&](int32_t l) {
      if (!split_layers.empty()) return static_cast<size_t>(l - split_first);
      const int64_t virtual_stage = l / chunk_layers;
      return static_cast<size_t>((virtual_stage / pp) * chunk_layers + l % chunk_layers);
    };
    const std::vector<PipelinePass> passes =
        PipelineOrder(training.pipeline_schedule, pp, v, m, stage);

    Schedule sched;
    sched.role = role.name;
    sched.stage = stage;
    sched.ranks = strategy.mesh.world() / pp;
    sched.micro_batches = m;
    sched.units = unit_count;
    // Reserved once at the bound (at most kMaxScheduleOps): growing by doubling would copy the
    // ops and fault in about twice their memory. Pages never written cost no memory.
    sched.ops.reserve(static_cast<size_t>(ops_bound));
    Builder B(sched);

    // ---- static allocs
    const MemoryBreakdown& mem = role.memory;
    B.Alloc(MemoryTag::kParams, MemorySpace::kDevice, mem.params, Stream::kCompute, Phase::kStep,
            kNoLayer, -1);
    B.Alloc(MemoryTag::kGrads, MemorySpace::kDevice, mem.grads, Stream::kCompute, Phase::kStep,
            kNoLayer, -1);
    B.Alloc(MemoryTag::kOptimizer, MemorySpace::kDevice, mem.optimizer, Stream::kCompute,
            Phase::kStep, kNoLayer, -1);
    B.Alloc(MemoryTag::kStaging, MemorySpace::kDevice, mem.offload_staging, Stream::kCompute,
            Phase::kStep, kNoLayer, -1);
    const std::pair<State, MemoryTag> offloadable[] = {{State::kParams, MemoryTag::kParams},
                                                       {State::kOptimizer, MemoryTag::kOptimizer},
                                                       {State::kGrads, MemoryTag::kGrads}};
    for (const auto& [st, tag] : offloadable) {
      if (!(shard && mode(st) == Mode::kOffloaded)) continue;
      const int64_t per = st == State::kParams      ? bpp.params
                          : st == State::kOptimizer ? bpp.optimizer
                                                    : bpp.grads;
      B.Alloc(tag, target(st), Bytes::Count(elements(st) * per), Stream::kHost, Phase::kStep,
              kNoLayer, -1);
    }

    const auto tp_collective = [&](CollectiveKind kind, Phase phase, int32_t layer, int32_t unit,
                                   int32_t mb, std::initializer_list<int32_t> deps,
                                   Bytes buffer = Bytes::Zero()) {
      Op op = CollectiveOp(kind, State::kActivations, GroupKind::kAxis, tp,
                           buffer.count() > 0 ? buffer : tp_buffer, phase, unit, mb);
      op.axis = Axis::kTensor;
      op.layer = layer;
      return B.Add(op, deps);
    };
    // One tensor-parallel block (attention or MLP; forward, recompute or backward-input):
    // with sequence parallelism an all-gather of the sequence-sharded input, then the
    // compute, then the reduce-scatter (SP) or all-reduce of its output. In backward the
    // roles are the conjugates (Megatron's f and g: the all-reduce of the input gradient;
    // under SP the all-gather of the output gradient and the reduce-scatter of the input
    // gradient), the same kinds in the same order. `chain` is the collective whose result
    // the block reads; returns the block's closing collective, and its compute op in
    // *compute.
    // Work that holds a layer's attention, under context parallelism (ring attention): cp
    // equal parts, part k (k >= 1) computing against the K/V chunk that the k-th ring exchange
    // brought in; the exchanges start once part 0 has made K and V, so they overlap the
    // parts before them. In backward each part also passes on the K/V gradients it
    // accumulated. Returns the last part.
    const auto attention = [&](const Op& work, int32_t d1, int32_t d2) {
      if (cp == 1) return B.Add(work, {d1, d2});
      if (training.context_parallel_comm == ContextParallelComm::kAllGather) {
        // The all-gather variant: the full K/V first, the attention whole, and in backward
        // the reduce-scatter of the K/V gradients after it. Nothing overlaps: each waits for
        // the one before (the layer's next work needs the reduced gradients).
        Op gather = CollectiveOp(CollectiveKind::kAllGather, State::kActivations, GroupKind::kAxis,
                                 cp, kv_bytes * cp, work.phase, work.unit, work.micro_batch);
        gather.axis = Axis::kContext;
        gather.layer = work.layer;
        int32_t done = B.Add(work, {B.Add(gather, {d1, d2})});
        if (work.phase == Phase::kBackwardInput) {
          Op scatter = gather;
          scatter.collective = CollectiveKind::kReduceScatter;
          done = B.Add(scatter, {done});
        }
        return done;
      }
      Op part = work;
      part.flops = Flops::Count(work.flops.count() / static_cast<double>(cp));
      part.bytes_read = Bytes::Count(work.bytes_read.count() / cp);
      part.bytes_written = Bytes::Count(work.bytes_written.count() / cp);
      part.elementwise_bytes = Bytes::Count(work.elementwise_bytes.count() / cp);
      Op first_part = part;
      first_part.bytes_read = work.bytes_read - part.bytes_read * (cp - 1);
      first_part.bytes_written = work.bytes_written - part.bytes_written * (cp - 1);
      first_part.elementwise_bytes = work.elementwise_bytes - part.elementwise_bytes * (cp - 1);
      int32_t prev = B.Add(first_part, {d1, d2});
      const int32_t kv_ready = prev;
      Op exchange = CollectiveOp(CollectiveKind::kSendRecv, State::kActivations, GroupKind::kAxis,
                                 cp, kv_bytes, work.phase, work.unit, work.micro_batch);
      exchange.axis = Axis::kContext;
      exchange.layer = work.layer;
      for (int64_t k = 1; k < cp; ++k) {
        prev = B.Add(part, {B.Add(exchange, {kv_ready})});
        if (work.phase == Phase::kBackwardInput) B.Add(exchange, {prev});
      }
      return prev;
    };
    const auto tp_block = [&](const Op& work, int32_t gate, int32_t chain, int32_t* compute,
                              bool holds_attention = false) {
      const CollectiveKind closing =
          sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
      if (options.tp_comm_overlap && !(holds_attention && cp > 1)) {
        // Chunked (ScheduleOptions::tp_comm_overlap): tp chunks of the work and of every
        // collective, split exactly (remainders spread by Split).
        const std::vector<int64_t> ones(static_cast<size_t>(tp), 1);
        const std::vector<int64_t> buffers = Split(tp_buffer.count(), ones);
        const std::vector<int64_t> reads = Split(work.bytes_read.count(), ones);
        const std::vector<int64_t> writes = Split(work.bytes_written.count(), ones);
        const std::vector<int64_t> streamed = Split(work.elementwise_bytes.count(), ones);
        std::vector<int32_t> gathers(static_cast<size_t>(tp), -1);
        if (sp) {
          for (size_t k = 0; k < gathers.size(); ++k) {
            gathers[k] =
                tp_collective(CollectiveKind::kAllGather, work.phase, work.layer, work.unit,
                              work.micro_batch, {k == 0 ? chain : -1}, Bytes::Count(buffers[k]));
          }
        }
        int32_t close = -1;
        for (size_t k = 0; k < gathers.size(); ++k) {
          Op part = work;
          part.flops = Flops::Count(work.flops.count() / static_cast<double>(tp));
          part.bytes_read = Bytes::Count(reads[k]);
          part.bytes_written = Bytes::Count(writes[k]);
          part.elementwise_bytes = Bytes::Count(streamed[k]);
          const int32_t input = sp ? gathers[k] : (k == 0 ? chain : -1);
          *compute = holds_attention ? attention(part, k == 0 ? gate : -1, input)
                                     : B.Add(part, {k == 0 ? gate : -1, input});
          close = tp_collective(closing, work.phase, work.layer, work.unit, work.micro_batch,
                                {*compute}, Bytes::Count(buffers[k]));
        }
        return close;
      }
      int32_t before = chain;
      if (sp)
        before = tp_collective(CollectiveKind::kAllGather, work.phase, work.layer, work.unit,
                               work.micro_batch, {chain});
      *compute = holds_attention ? attention(work, gate, before) : B.Add(work, {gate, before});
      return tp_collective(closing, work.phase, work.layer, work.unit, work.micro_batch,
                           {*compute});
    };
    // A mixture-of-experts layer's MLP block (experts > 1), in place of tp_block's: forward
    // and full recompute run [SP all-gather], the router, the dispatch all-to-all over the ep
    // group, the experts, the combine all-to-all [tp combine]; backward-input runs [SP
    // all-gather], the combine's gradient all-to-all, the experts, the dispatch's gradient
    // all-to-all, the router [tp combine] (ep = 1: no all-to-alls). So a layer moves
    // 2 x (forward passes + 1) all-to-alls per micro-batch, as the plan counts them. Returns
    // what the next block reads (its closing collective; -1 when only the compute stream's
    // order links them) and its last compute in *compute.
    const auto moe_block = [&](const Op& router, const Op& experts, int32_t gate, int32_t chain,
                               int32_t* compute) {
      const bool backward = router.phase == Phase::kBackwardInput;
      const auto all_to_all = [&](int32_t after) {
        if (ep == 1) return after;
        Op op = CollectiveOp(CollectiveKind::kAllToAll, State::kActivations, GroupKind::kAxis, ep,
                             a2a_buffer, router.phase, router.unit, router.micro_batch);
        op.axis = Axis::kExpert;
        op.layer = router.layer;
        return B.Add(op, {after});
      };
      int32_t before = chain;
      if (tp > 1 && sp)
        before = tp_collective(CollectiveKind::kAllGather, router.phase, router.layer, router.unit,
                               router.micro_batch, {chain});
      if (!backward) {
        before = B.Add(router, {gate, before});
        gate = -1;
      }
      // Without ep the experts read the router's output on the same stream (forward).
      const int32_t work = B.Add(experts, {gate, ep > 1     ? all_to_all(before)
                                                 : backward ? before
                                                            : -1});
      int32_t out = all_to_all(work);
      *compute = work;
      if (backward) out = *compute = B.Add(router, {out == work ? -1 : out});
      if (tp > 1)
        return tp_collective(sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                             router.phase, router.layer, router.unit, router.micro_batch, {out});
      return out == *compute ? -1 : out;
    };
    // The router and expert ops of an MoE layer's pass.
    const auto moe_ops = [&](const cost::LayerPass& pass, Phase phase, int32_t l, int32_t u,
                             int32_t mb) {
      return std::pair<Op, Op>{ComputeOp(phase, l, u, mb, pass.router),
                               ComputeOp(phase, l, u, mb, pass.experts)};
    };
    // Pipeline point-to-point: a send on the p2p stream to `peer`, and the receive that the
    // pass's first compute waits for (matched to its send once every stage is built).
    const auto send = [&](State state, Phase phase, int32_t peer, int32_t mb, int32_t chunk,
                          Bytes bytes, std::initializer_list<int32_t> deps) {
      Op op =
          CollectiveOp(CollectiveKind::kSendRecv, state, GroupKind::kAxis, 2, bytes, phase, -1, mb);
      op.axis = Axis::kPipeline;
      op.stream = Stream::kP2p;
      op.peer_stage = peer;
      op.chunk = chunk;
      op.bytes = bytes;
      return B.Add(op, deps);
    };
    const auto recv = [&](State state, Phase phase, int32_t peer, int32_t mb, int32_t chunk) {
      Op op;
      op.kind = OpKind::kRecv;
      op.stream = Stream::kCompute;
      op.phase = phase;
      op.micro_batch = mb;
      op.chunk = chunk;
      op.state = state;
      op.peer_stage = peer;
      op.axis = Axis::kPipeline;
      return B.Add(op);
    };

    // ---- gradient buckets over the full gradient in backward order (replicated params):
    // chunks from the last to the first, each from its last unit to its first.
    std::vector<Bucket> buckets;
    if (!t_gather) {
      buckets.reserve(static_cast<size_t>(bucket_count));
      for (int64_t e = 0; e < grad_elements; e += per_bucket)
        buckets.push_back(Bucket{e, std::min(grad_elements, e + per_bucket)});
    }
    std::vector<Bucket> expert_buckets;
    for (int64_t e = 0; e < expert_grad_elements; e += per_bucket)
      expert_buckets.push_back(Bucket{e, std::min(expert_grad_elements, e + per_bucket)});
    std::vector<int64_t> bucket_weights;
    for (const Bucket& k : buckets) bucket_weights.push_back(k.end - k.begin);
    std::vector<int64_t> unit_weights;
    for (const Unit& u : units) unit_weights.push_back(u.elements);
    // This rank's shard of each bucket / unit, for copies of shards (sums to the shard).
    const auto shard_parts = [&](State st, int64_t per, const std::vector<int64_t>& weights) {
      return Split(elements(st) * per, weights);
    };

    // Gradient sync of one micro-batch: after the backward-weight op that completes each
    // bucket or unit. Returns the ops the optimizer waits for.
    std::vector<int32_t> sync_tail;  // last gradient op per bucket / unit (step end)
    std::vector<int32_t> d2h_ops;    // grad shard copies to the host
    const bool replicated_sync_each = options.sync_grads_every_micro_batch;
    const auto sync_now = [&](int64_t mb) {
      if (g_sharded) return true;
      return replicated_sync_each || mb == m - 1;
    };
    const std::vector<int64_t> grad_d2h_per_bucket =
        o_offloaded
            ? shard_parts(State::kOptimizer, bpp.grads, t_gather ? unit_weights : bucket_weights)
            : std::vector<int64_t>{};

    // Emits the sync of part k (bucket or unit) of micro-batch mb, its buffer `full`
    // elements. `ready` is the backward op that completes it; `bucket_alloc` the transient
    // full-gradient buffer to free after the reduce-scatter (-1 when the grads are resident).
    const auto emit_sync = [&](int64_t k, int64_t full, int32_t ready, int32_t bucket_alloc,
                               int32_t unit, int64_t mb, bool expert_part = false) {
      if (expert_part) {
        // Expert gradients (ep > 1, CheckScope: no hybrid groups): over the dp / ep ranks
        // holding the same experts, all-reduced, or reduce-scattered for a sharded optimizer
        // (ZeRO-1) or sharded gradients (ZeRO-2/3, every micro-batch, from a transient full
        // bucket or unit gradient).
        int32_t last_op = ready;
        if (expert_n > 1) {
          last_op = B.Add(
              CollectiveOp(grads_reduce_scattered ? CollectiveKind::kReduceScatter
                                                  : CollectiveKind::kAllReduce,
                           State::kGrads, expert_group, expert_n, Bytes::Count(full * bpp.grads),
                           Phase::kBackwardWeight, unit, static_cast<int32_t>(mb)),
              {ready});
        }
        B.Free(bucket_alloc, Stream::kComm, Phase::kBackwardWeight, {last_op});
        if (mb == m - 1) sync_tail.push_back(last_op);
        return;
      }
      if (dpc == 1) {  // nothing to synchronize: the optimizer waits for the backward only
        if (mb == m - 1) sync_tail.push_back(ready);
        return;
      }
      const Bytes buffer = Bytes::Count(full * bpp.grads);
      const auto mb32 = static_cast<int32_t>(mb);
      int32_t last_op = -1;
      if (grads_reduce_scattered) {
        last_op = B.Add(CollectiveOp(CollectiveKind::kReduceScatter, State::kGrads, shard_group, n,
                                     buffer, Phase::kBackwardWeight, unit, mb32),
                        {ready});
        B.Free(bucket_alloc, Stream::kComm, Phase::kBackwardWeight, {last_op});
        if (o_offloaded) {
          last_op = B.Add(CopyOp(CopyKind::kDeviceToHost, State::kGrads,
                                 Bytes::Count(grad_d2h_per_bucket[static_cast<size_t>(k)]),
                                 Phase::kBackwardWeight, unit, mb32),
                          {last_op});
          d2h_ops.push_back(last_op);
        }
        if (replicas > 1 && mb == m - 1) {
          last_op = B.Add(
              CollectiveOp(CollectiveKind::kAllReduce, State::kGrads, GroupKind::kReplicaGroup,
                           replicas, Bytes::Count(CeilDiv(full, n) * bpp.grads),
                           Phase::kBackwardWeight, unit, mb32),
              {last_op});
        }
      } else {
        last_op = B.Add(CollectiveOp(CollectiveKind::kAllReduce, State::kGrads, GroupKind::kAxis,
                                     dpc, buffer, Phase::kBackwardWeight, unit, mb32),
                        {ready});
      }
      if (mb == m - 1) sync_tail.push_back(last_op);
    };

    // ---- parameter uses under S* / O, in the order the passes run them (a forward pass uses
    // its chunk's units first to last, a backward pass last to first); use j's gather waits
    // until use j - depth - 1 released its buffer.
    struct Use {
      int32_t unit = 0;
      int32_t mb = 0;
      bool backward = false;
    };
    std::vector<Use> use_list;
    if (t_gather) {
      for (const PipelinePass& ps : passes) {
        const auto [ub, ue] = chunk_units[static_cast<size_t>(ps.chunk)];
        for (int32_t k = 0; k < ue - ub; ++k)
          use_list.push_back(Use{ps.backward ? ue - 1 - k : ub + k, ps.micro_batch, ps.backward});
      }
    }
    const auto uses = static_cast<int64_t>(use_list.size());
    std::vector<int32_t> gather_of;   // per use: the all-gather op
    std::vector<int32_t> gathered;    // per use: the Alloc of its gathered buffer (S*)
    std::vector<int32_t> release_of;  // per use: the op after which its buffer is reusable
    const std::vector<int64_t> fetch_parts =
        t_offloaded ? shard_parts(State::kParams, bpp.params, unit_weights)
                    : std::vector<int64_t>{};
    const auto emit_gather = [&](int64_t j) {
      if (j >= uses) return;
      const Use& use = use_list[static_cast<size_t>(j)];
      const int32_t u = use.unit;
      const int32_t mb = use.mb;
      const Phase phase = use.backward ? Phase::kBackwardInput : Phase::kForward;
      const int32_t wait = j - depth - 1 >= 0 ? release_of[static_cast<size_t>(j - depth - 1)] : -1;
      const Bytes full = Bytes::Count(units[static_cast<size_t>(u)].elements * bpp.params);
      int32_t before = wait;
      int32_t buffer = -1;
      if (t_offloaded) {
        Op copy =
            CopyOp(target(State::kParams) == MemorySpace::kNvme ? CopyKind::kNvmeRead
                                                                : CopyKind::kHostToDevice,
                   State::kParams, Bytes::Count(fetch_parts[static_cast<size_t>(u)]), phase, u, mb);
        before = B.Add(copy, {wait});
      } else {
        buffer = B.Alloc(MemoryTag::kGatheredParams, MemorySpace::kDevice, full, Stream::kComm,
                         phase, kNoLayer, mb, {wait});
        B.at(buffer).unit = u;
      }
      gathered[static_cast<size_t>(j)] = buffer;
      // Under ep > 1 the unit's expert part is gathered apart, over the dp / ep ranks holding
      // the same experts (none when ep = dp: they are whole on every rank). The buffer holds
      // the whole unit either way, as the plan counts it.
      const int64_t expert = units[static_cast<size_t>(u)].expert;
      int32_t last = B.Add(CollectiveOp(CollectiveKind::kAllGather, State::kParams, shard_group, n,
                                        full - Bytes::Count(expert * bpp.params), phase, u, mb),
                           {before});
      if (expert > 0 && expert_n > 1) {
        last = B.Add(CollectiveOp(CollectiveKind::kAllGather, State::kParams, expert_group,
                                  expert_n, Bytes::Count(expert * bpp.params), phase, u, mb),
                     {before});
      }
      gather_of[static_cast<size_t>(j)] = last;
    };
    if (t_gather) {
      gather_of.assign(static_cast<size_t>(uses), -1);
      gathered.assign(static_cast<size_t>(uses), -1);
      release_of.assign(static_cast<size_t>(uses), -1);
      for (int64_t j = 0; j <= depth; ++j) emit_gather(j);
    }
    int64_t next_use = 0;
    // Use j begins: its gather must be done (the compute depends on it); issue the gather of
    // use j + depth (use j's own gather is already out).
    const auto begin_use = [&]() -> std::pair<int64_t, int32_t> {
      if (!t_gather) return {-1, -1};
      const int64_t j = next_use++;
      if (j > 0) emit_gather(j + depth);
      return {j, gather_of[static_cast<size_t>(j)]};
    };
    const auto end_use = [&](int64_t j, int32_t last_compute, Phase phase) {
      if (!t_gather) return;
      const int32_t freed = B.Free(gathered[static_cast<size_t>(j)], Stream::kCompute, phase);
      release_of[static_cast<size_t>(j)] = freed >= 0 ? freed : last_compute;
    };

    // ---- per micro-batch state that outlives one pass (interleaved passes of several
    // micro-batches alternate): the activations kept, and the backward's gradient progress.
    struct MicroBatch {
      std::vector<int32_t> act;  // per stage layer
      int32_t emb_act = -1;
      int32_t head_act = -1;
      int64_t produced = 0;  // gradient elements produced so far in its backward
      size_t next_bucket = 0;
      int64_t expert_produced = 0;  // the same for the expert gradients (ep > 1)
      size_t next_expert_bucket = 0;
      std::vector<int32_t> bucket_allocs;
      std::vector<int32_t> expert_bucket_allocs;
    };
    std::vector<MicroBatch> mbs(static_cast<size_t>(m));
    const bool transient_buckets = !t_gather && g_sharded;

    // The first and last virtual stage of the model (no receive before / send after).
    const auto model_first = [&](int chunk) { return first && chunk == 0; };
    const auto model_last = [&](int chunk) { return last && chunk == v - 1; };

    for (const PipelinePass& ps : passes) {
      const int32_t mb32 = ps.micro_batch;
      const int32_t c = ps.chunk;
      MicroBatch& st = mbs[static_cast<size_t>(mb32)];
      const auto [ub, ue] = chunk_units[static_cast<size_t>(c)];
      if (!ps.backward) {
        if (st.act.empty()) st.act.assign(static_cast<size_t>(stage_layers), -1);
        // The last tensor-parallel collective (or receive) whose result the next compute
        // reads (-1: none).
        int32_t chain = -1;
        if (!model_first(c)) {
          chain = recv(State::kActivations, Phase::kForward, first ? pp - 1 : stage - 1, mb32, c);
        }
        int32_t last_op = -1;
        for (int32_t u = ub; u < ue; ++u) {
          const Unit& unit = units[static_cast<size_t>(u)];
          const auto [j, gate] = begin_use();
          if (unit.special == kEmbeddingLayer) {
            st.emb_act = B.Alloc(MemoryTag::kActivations, MemorySpace::kDevice, act_embedding,
                                 Stream::kCompute, Phase::kForward, kEmbeddingLayer, mb32);
            last_op = B.Add(
                ComputeOp(Phase::kForward, kEmbeddingLayer, u, mb32, pc.embedding_forward), {gate});
            // Vocab-parallel embedding: each tp rank looks up the tokens of its vocabulary
            // slice; the partial outputs are summed (all-reduce, or reduce-scatter into
            // sequence shards).
            if (tp > 1) {
              chain =
                  tp_collective(sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                                Phase::kForward, kEmbeddingLayer, u, mb32, {last_op});
            }
          } else if (unit.special == kOutputLayer) {
            st.head_act = B.Alloc(MemoryTag::kActivations, MemorySpace::kDevice, act_head,
                                  Stream::kCompute, Phase::kForward, kOutputLayer, mb32);
            last_op = B.Add(ComputeOp(Phase::kForward, kOutputLayer, u, mb32, pc.output_forward),
                            {gate, chain});
            chain = -1;
          } else {
            for (int32_t l = unit.layer_begin; l < unit.layer_end; ++l) {
              st.act[local_layer(l)] = B.Alloc(
                  recompute == Recompute::kFull ? MemoryTag::kCheckpoints : MemoryTag::kActivations,
                  MemorySpace::kDevice, act_layer, Stream::kCompute, Phase::kForward, l, mb32);
              const int32_t first_gate = l == unit.layer_begin ? gate : -1;
              if (moe) {
                const Op attn = ComputeOp(Phase::kForward, l, u, mb32, pc.forward.attention);
                if (tp == 1) {
                  last_op = attention(attn, first_gate, chain);
                  chain = -1;
                } else {
                  chain = tp_block(attn, first_gate, chain, &last_op, true);
                }
                const auto [router, experts] = moe_ops(pc.forward, Phase::kForward, l, u, mb32);
                chain = moe_block(router, experts, -1, chain, &last_op);
                continue;
              }
              if (tp == 1) {
                last_op = attention(ComputeOp(Phase::kForward, l, u, mb32, pc.forward.whole),
                                    first_gate, chain);
                chain = -1;
                continue;
              }
              chain = tp_block(ComputeOp(Phase::kForward, l, u, mb32, pc.forward.attention),
                               first_gate, chain, &last_op, true);
              chain = tp_block(ComputeOp(Phase::kForward, l, u, mb32, pc.forward.mlp), -1, chain,
                               &last_op);
            }
          }
          B.at(last_op).chunk = c;
          end_use(j, last_op, Phase::kForward);
        }
        if (!model_last(c)) {
          send(State::kActivations, Phase::kForward, last ? 0 : stage + 1, mb32, c, p2p_bytes,
               {last_op, chain});
        }
        continue;
      }

      // Backward, units in reverse; buckets complete in backward order.
      // Before a backward-weight op that writes `elems` gradient elements: allocate the
      // transient buckets it starts (ZeRO-2: a bucket's full gradient lives until its
      // reduce-scatter).
      if (transient_buckets && st.bucket_allocs.empty()) {
        st.bucket_allocs.assign(buckets.size(), -1);
        st.expert_bucket_allocs.assign(expert_buckets.size(), -1);
      }
      // The buckets of `list` that `elems` more elements after `produced` start.
      const auto open = [&](const std::vector<Bucket>& list, std::vector<int32_t>& allocs,
                            size_t next, int64_t produced, int64_t elems) {
        if (!transient_buckets) return;
        for (size_t k = next; k < list.size() && list[k].begin < produced + elems; ++k) {
          if (allocs[k] < 0) {
            allocs[k] = B.Alloc(MemoryTag::kGradBuckets, MemorySpace::kDevice,
                                Bytes::Count((list[k].end - list[k].begin) * bpp.grads),
                                Stream::kCompute, Phase::kBackwardWeight, kNoLayer, mb32);
          }
        }
      };
      const auto open_buckets = [&](int64_t elems) {
        open(buckets, st.bucket_allocs, st.next_bucket, st.produced, elems);
      };
      const auto open_expert_buckets = [&](int64_t elems) {
        open(expert_buckets, st.expert_bucket_allocs, st.next_expert_bucket, st.expert_produced,
             elems);
      };
      // After it: synchronize the buckets it completes.
      const auto produce = [&](int64_t elems, int32_t bwd_weight, int32_t unit) {
        st.produced += elems;
        if (!sync_now(mb32)) return;
        while (st.next_bucket < buckets.size() && buckets[st.next_bucket].end <= st.produced) {
          const Bucket& k = buckets[st.next_bucket];
          emit_sync(static_cast<int64_t>(st.next_bucket), k.end - k.begin, bwd_weight,
                    transient_buckets ? st.bucket_allocs[st.next_bucket] : -1, unit, mb32);
          ++st.next_bucket;
        }
      };
      // The same for the expert gradients of a layer (ep > 1).
      const auto produce_expert = [&](int64_t elems, int32_t bwd_weight, int32_t unit) {
        st.expert_produced += elems;
        if (!sync_now(mb32)) return;
        while (st.next_expert_bucket < expert_buckets.size() &&
               expert_buckets[st.next_expert_bucket].end <= st.expert_produced) {
          const Bucket& k = expert_buckets[st.next_expert_bucket];
          emit_sync(static_cast<int64_t>(st.next_expert_bucket), k.end - k.begin, bwd_weight,
                    transient_buckets ? st.expert_bucket_allocs[st.next_expert_bucket] : -1, unit,
                    mb32, true);
          ++st.next_expert_bucket;
        }
      };
      int32_t chain = -1;
      if (!model_last(c)) {
        chain = recv(State::kActivations, Phase::kBackwardInput, last ? 0 : stage + 1, mb32, c);
      }
      // The op that produces the pass's input gradient (what the send to the previous stage
      // carries): the last backward-input compute, or its closing tp collective. The send
      // also waits for the pass's last compute: Megatron-LM runs a chunk's backward as one
      // autograd call, weight gradients included, and sends after it.
      int32_t input_grad = chain;
      int32_t pass_last = -1;
      for (int32_t u = ue - 1; u >= ub; --u) {
        const Unit& unit = units[static_cast<size_t>(u)];
        const auto [j, gate] = begin_use();
        // Under S*, the unit's full gradient lives until its reduce-scatter.
        const int32_t unit_grad =
            t_gather && !t_offloaded
                ? B.Alloc(MemoryTag::kGradBuckets, MemorySpace::kDevice,
                          Bytes::Count(unit.elements * bpp.grads), Stream::kCompute,
                          Phase::kBackwardWeight, kNoLayer, mb32)
                : -1;
        int32_t last_op = -1;
        if (unit.special == kOutputLayer) {
          input_grad = B.Add(
              ComputeOp(Phase::kBackwardInput, kOutputLayer, u, mb32, pc.output_backward_input),
              {gate});
          open_buckets(unit.elements);
          last_op = B.Add(ComputeOp(Phase::kBackwardWeight, kOutputLayer, u, mb32,
                                    pc.OutputBackwardWeight(unit.elements)));
          B.Free(st.head_act, Stream::kCompute, Phase::kBackwardWeight);
          produce(unit.elements, last_op, u);
        } else if (unit.special == kEmbeddingLayer) {
          // The plan counts the embedding's combine once per forward pass, full recompute's
          // second pass included (Megatron re-runs it when the embedding sits inside the
          // first checkpointed chunk); it is issued here, where that pass would run.
          if (tp > 1 && recompute == Recompute::kFull) {
            tp_collective(sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                          Phase::kRecompute, kEmbeddingLayer, u, mb32, {gate});
          }
          open_buckets(unit.elements);
          last_op = B.Add(ComputeOp(Phase::kBackwardWeight, kEmbeddingLayer, u, mb32,
                                    pc.embedding_backward_weight),
                          {gate, chain});
          chain = -1;
          B.Free(st.emb_act, Stream::kCompute, Phase::kBackwardWeight);
          produce(unit.elements, last_op, u);
        } else {
          for (int32_t l = unit.layer_end - 1; l >= unit.layer_begin; --l) {
            const int32_t first_dep = l == unit.layer_end - 1 ? gate : -1;
            int32_t rebuilt = -1;
            int32_t rebuilt_by = -1;  // full recompute under tp: its closing collective
            if (recompute != Recompute::kNone) {
              // Recompute restarts from what the layer kept (full: its input, which is also
              // the first LayerNorm's input, one of the 34 s b h), so it rebuilds only the rest.
              const Bytes extra = act_full - act_layer;
              rebuilt = B.Alloc(MemoryTag::kActivations, MemorySpace::kDevice, extra,
                                Stream::kCompute, Phase::kRecompute, l, mb32);
              const cost::LayerPass& again = pc.recompute_pass;
              if (moe && recompute == Recompute::kFull) {
                // Full recompute re-runs the forward, its tp collectives and all-to-alls
                // included.
                const Op attn = ComputeOp(Phase::kRecompute, l, u, mb32, again.attention);
                int32_t work = -1;
                if (tp > 1) {
                  rebuilt_by = tp_block(attn, first_dep, -1, &work, true);
                } else {
                  attention(attn, first_dep, -1);
                }
                const auto [router, experts] = moe_ops(again, Phase::kRecompute, l, u, mb32);
                rebuilt_by = moe_block(router, experts, -1, rebuilt_by, &work);
              } else if (tp > 1 && recompute == Recompute::kFull) {
                // Full recompute re-runs the forward, its tensor-parallel collectives included.
                int32_t work = -1;
                rebuilt_by = tp_block(ComputeOp(Phase::kRecompute, l, u, mb32, again.attention),
                                      first_dep, -1, &work, true);
                rebuilt_by = tp_block(ComputeOp(Phase::kRecompute, l, u, mb32, again.mlp), -1,
                                      rebuilt_by, &work);
              } else if (recompute == Recompute::kFull) {
                attention(ComputeOp(Phase::kRecompute, l, u, mb32, again.whole), first_dep, -1);
              } else {
                // Selective recompute rebuilds the attention core from the kept Q, K and V.
                B.Add(ComputeOp(Phase::kRecompute, l, u, mb32, again.whole), {first_dep});
              }
            }
            const int32_t input_gate = recompute == Recompute::kNone ? first_dep : -1;
            const cost::LayerPass& back = pc.backward_input;
            if (moe) {
              // The MLP block (experts) first, then attention, as for a dense layer.
              const Op attn = ComputeOp(Phase::kBackwardInput, l, u, mb32, back.attention);
              int32_t work = -1;
              const auto [router, experts] = moe_ops(back, Phase::kBackwardInput, l, u, mb32);
              chain = moe_block(router, experts, input_gate, std::max(chain, rebuilt_by), &work);
              if (tp == 1) {
                input_grad = attention(attn, -1, chain);
                chain = -1;
              } else {
                chain = tp_block(attn, -1, chain, &work, true);
                input_grad = chain;
              }
            } else if (tp == 1) {
              input_grad = attention(ComputeOp(Phase::kBackwardInput, l, u, mb32, back.whole),
                                     input_gate, chain);
              chain = -1;
            } else {
              // MLP block first, then attention; each closes with the collective of its input
              // gradient, which the next block (or the layer below) reads.
              int32_t work = -1;
              chain = tp_block(ComputeOp(Phase::kBackwardInput, l, u, mb32, back.mlp), input_gate,
                               // Both are on the comm stream: the later one ends after the other.
                               std::max(chain, rebuilt_by), &work);
              chain = tp_block(ComputeOp(Phase::kBackwardInput, l, u, mb32, back.attention), -1,
                               chain, &work, true);
              input_grad = chain;
            }
            const int64_t layer_dense_grads =
                split_expert ? layer_local - layer_expert_local : layer_local;
            if (!t_gather) open_buckets(layer_dense_grads);
            if (split_expert) open_expert_buckets(layer_expert_local);
            last_op = B.Add(ComputeOp(Phase::kBackwardWeight, l, u, mb32, pc.backward_weight));
            B.Free(rebuilt, Stream::kCompute, Phase::kBackwardWeight);
            B.Free(st.act[local_layer(l)], Stream::kCompute, Phase::kBackwardWeight);
            if (!t_gather) produce(layer_dense_grads, last_op, u);
            if (split_expert) produce_expert(layer_expert_local, last_op, u);
          }
        }
        B.at(last_op).chunk = c;
        end_use(j, last_op, Phase::kBackwardInput);
        if (t_gather) {
          // The dense part over the shard group; the expert part (ep > 1) after it over the
          // expert replica group. The last sync frees the unit's gradient buffer.
          const bool experts = unit.expert > 0;
          emit_sync(u, unit.elements - unit.expert, last_op, experts ? -1 : unit_grad, u, mb32);
          if (experts) emit_sync(u, unit.expert, last_op, unit_grad, u, mb32, true);
        }
        pass_last = last_op;
      }
      if (!model_first(c)) {
        send(State::kActivations, Phase::kBackwardInput, first ? pp - 1 : stage - 1, mb32, c,
             p2p_bytes, {input_grad, pass_last});
      }
    }

    // ---- tied word embedding across the pipeline: the first and last stage exchange the
    // gradients of their copies (the plan's all-reduce of two: S each way) before updating.
    int32_t sync_done = sync_tail.empty() ? -1 : sync_tail.back();
    if (tied_exchange) {
      const Bytes tied = Bytes::Count(vocab_local * bpp.grads);
      const int32_t peer = first ? pp - 1 : 0;
      send(State::kGrads, Phase::kOptimizer, peer, -1, -1, tied, {sync_done});
      sync_done = recv(State::kGrads, Phase::kOptimizer, peer, -1, -1);
    }

    // ---- optimizer step
    std::vector<int32_t> updated;  // per bucket / unit: the op after which its shard is updated
    const std::vector<int64_t>& part_weights = t_gather ? unit_weights : bucket_weights;
    const cost::Work opt = pc.OptimizerStep(elements(State::kOptimizer));
    if (o_offloaded) {
      Op host;
      host.kind = OpKind::kHostCompute;
      host.stream = Stream::kHost;
      host.phase = Phase::kOptimizer;
      host.flops = opt.flops;
      host.bytes_read = opt.read;
      host.bytes_written = opt.written;
      const int32_t step = B.Add(host, {d2h_ops.empty() ? sync_done : d2h_ops.back(), sync_done});
      if (!t_offloaded) {
        const std::vector<int64_t> back = shard_parts(State::kOptimizer, bpp.params, part_weights);
        for (size_t k = 0; k < back.size(); ++k) {
          updated.push_back(
              B.Add(CopyOp(CopyKind::kHostToDevice, State::kParams, Bytes::Count(back[k]),
                           Phase::kOptimizer, t_gather ? static_cast<int32_t>(k) : -1, -1),
                    {step}));
        }
      }
    } else {
      const int32_t step = B.Add(ComputeOp(Phase::kOptimizer, kNoLayer, -1, -1, opt), {sync_done});
      updated.assign(part_weights.size(), step);
    }
    if (o_sharded && mode(State::kParams) == Mode::kReplicated) {
      for (size_t k = 0; k < buckets.size(); ++k) {
        B.Add(CollectiveOp(CollectiveKind::kAllGather, State::kParams, shard_group, n,
                           Bytes::Count((buckets[k].end - buckets[k].begin) * bpp.params),
                           Phase::kOptimizer, -1, -1),
              {updated.empty() ? -1 : updated[k]});
      }
      // Expert buckets (ep > 1, optimizer on the device): over the expert replica group.
      for (size_t k = 0; k < expert_buckets.size() && expert_n > 1; ++k) {
        B.Add(CollectiveOp(
                  CollectiveKind::kAllGather, State::kParams, expert_group, expert_n,
                  Bytes::Count((expert_buckets[k].end - expert_buckets[k].begin) * bpp.params),
                  Phase::kOptimizer, -1, -1),
              {updated.empty() ? -1 : updated.back()});
      }
    }

    // ---- per-device bytes of every collective: the plan's volume per (kind, state, axis,
    // group), split over the ops by buffer; ring bytes per op where the plan has no such
    // volume (gradients synchronized every micro-batch). Pipeline sends move what they carry.
    using Key = std::tuple<CollectiveKind, State, Axis, GroupKind>;
    std::map<Key, std::pair<int64_t, int64_t>> plan_volume;  // buffer x count, total bytes
    for (const Collective& col : role.collectives) {
      const bool replica = col.kind == CollectiveKind::kAllReduce && grads_reduce_scattered &&
                           col.state == State::kGrads;
      // Under ep > 1 the plan's expert-part collectives (AddDataParallelComm's "expert" part,
      // named so in their purpose) run over the expert replica group.
      const bool expert_col = split_expert && col.purpose.starts_with("expert");
      const GroupKind group = col.axis != Axis::kData ? GroupKind::kAxis
                              : expert_col            ? expert_group
                                                      : GroupOf(col.group_size, dpc, replica);
      auto& vol = plan_volume[Key{col.kind, col.state, col.axis, group}];
      vol.first += col.buffer_bytes.count() * col.count;
      vol.second += col.total_bytes.count();
    }
    std::map<Key, std::vector<size_t>> ops_of;
    for (size_t i = 0; i < sched.ops.size(); ++i) {
      const Op& op = sched.ops[i];
      if (op.kind != OpKind::kCollective || op.axis == Axis::kPipeline) continue;
      ops_of[Key{op.collective, op.state, op.axis, op.group}].push_back(i);
      // dp groups span cp, as the states are placed on both; a hybrid replica group does not
      // (its members share a cp coordinate), an expert replica group does (ep > 1; no hybrid).
      if (op.axis == Axis::kData) {
        sched.ops[i].spans_context =
            cp > 1 && (op.group != GroupKind::kReplicaGroup || split_expert);
      }
    }
    for (const auto& [key, indices] : ops_of) {
      std::vector<int64_t> weights;
      int64_t buffers = 0;
      for (size_t i : indices) {
        weights.push_back(sched.ops[i].buffer_bytes.count());
        buffers += weights.back();
      }
      const auto it = plan_volume.find(key);
      if (it != plan_volume.end() && it->second.first == buffers) {
        const std::vector<int64_t> parts = Split(it->second.second, weights);
        for (size_t k = 0; k < indices.size(); ++k)
          sched.ops[indices[k]].bytes = Bytes::Count(parts[k]);
      } else {
        for (size_t i : indices) {
          Op& op = sched.ops[i];
          op.bytes = RingBytes(op.collective, op.buffer_bytes, op.group_size);
        }
      }
    }
    return sched;
  };

  std::vector<Schedule> out;
  out.reserve(static_cast<size_t>(pp));
  for (int stage = 0; stage < pp; ++stage) out.push_back(build_stage(stage));

  // ---- match every receive to its send: the k-th send from stage a to stage b of a given
  // (state, phase, micro-batch) is received by the k-th such receive on b. Key the sends by
  // (sender, receiver, state, phase, micro-batch, receiving chunk).
  if (pp > 1) {
    using SendKey = std::tuple<int32_t, int32_t, int, int, int32_t, int32_t>;
    std::map<SendKey, int32_t> sends;
    const auto receiving_chunk = [&](int32_t from, const Op& op) {
      if (op.chunk < 0) return op.chunk;
      if (op.phase == Phase::kForward) return from == pp - 1 ? op.chunk + 1 : op.chunk;
      return from == 0 ? op.chunk - 1 : op.chunk;
    };
    for (const Schedule& sch : out) {
      for (size_t i = 0; i < sch.ops.size(); ++i) {
        const Op& op = sch.ops[i];
        if (op.kind != OpKind::kCollective || op.collective != CollectiveKind::kSendRecv ||
            op.axis != Axis::kPipeline)
          continue;
        sends.emplace(
            SendKey{sch.stage, op.peer_stage, static_cast<int>(op.state),
                    static_cast<int>(op.phase), op.micro_batch, receiving_chunk(sch.stage, op)},
            static_cast<int32_t>(i));
      }
    }
    for (Schedule& sch : out) {
      for (Op& op : sch.ops) {
        if (op.kind != OpKind::kRecv) continue;
        const auto it = sends.find(SendKey{op.peer_stage, sch.stage, static_cast<int>(op.state),
                                           static_cast<int>(op.phase), op.micro_batch, op.chunk});
        PLACESIM_CHECK(it != sends.end());
        op.match = it->second;
      }
    }
  }
  return out;
}

}  // namespace placesim::strategies
