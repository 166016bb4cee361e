// Implementation of Analyze (see analyzer.h for the semantics and sources, model.h for the
// transformer maths). Structure: validate what makes analysis impossible; derive the
// per-state sharding divisors from the placement; build one role per pipeline stage (memory,
// collectives, copies) and merge identical neighbours; then apply the correctness rules.
//
// Invariant kept by every helper: byte counts are exact integers; a shard of n elements over
// N devices holds ceil(n / N) elements (frameworks pad the flat buffer to a multiple of N).
// Thread-safety: pure functions.
#include "strategies/analyzer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "strategies/cost/arith.h"
#include "strategies/model.h"
#include "strategies/pipeline.h"
#include "strategies/schedule.h"  // FrameworkDefaults, RefetchAfterRecompute

namespace placesim::strategies {

using topology::Axis;
using topology::AxisName;

const char* CollectiveKindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kSendRecv:
      return "send-recv";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "unknown";
}

const char* CommPurposeName(CommPurpose p) {
  switch (p) {
    case CommPurpose::kGradSync:
      return "grad-sync";
    case CommPurpose::kExpertGradSync:
      return "expert-grad-sync";
    case CommPurpose::kGradReplicaSync:
      return "grad-replica-sync";
    case CommPurpose::kExpertGradReplicaSync:
      return "expert-grad-replica-sync";
    case CommPurpose::kParamGather:
      return "param-gather";
    case CommPurpose::kExpertParamGather:
      return "expert-param-gather";
    case CommPurpose::kUpdatedParamGather:
      return "updated-param-gather";
    case CommPurpose::kExpertUpdatedParamGather:
      return "expert-updated-param-gather";
    case CommPurpose::kTensorParallelReduce:
      return "tensor-parallel-reduce";
    case CommPurpose::kSequenceParallelGather:
      return "sequence-parallel-gather";
    case CommPurpose::kSequenceParallelScatter:
      return "sequence-parallel-scatter";
    case CommPurpose::kEmbeddingCombine:
      return "embedding-combine";
    case CommPurpose::kPipelineActivations:
      return "pipeline-activations";
    case CommPurpose::kPipelineActivationGrads:
      return "pipeline-activation-grads";
    case CommPurpose::kTiedEmbeddingSync:
      return "tied-embedding-sync";
    case CommPurpose::kContextKvGather:
      return "context-kv-gather";
    case CommPurpose::kContextKvGradScatter:
      return "context-kv-grad-scatter";
    case CommPurpose::kContextKvRing:
      return "context-kv-ring";
    case CommPurpose::kExpertDispatchCombine:
      return "expert-dispatch-combine";
    case CommPurpose::kActivationOffload:
      return "activation-offload";
    case CommPurpose::kActivationReload:
      return "activation-reload";
    case CommPurpose::kGradToHostOptimizer:
      return "grad-to-host-optimizer";
    case CommPurpose::kUpdatedParamReturn:
      return "updated-param-return";
    case CommPurpose::kGradOffload:
      return "grad-offload";
    case CommPurpose::kGradReload:
      return "grad-reload";
    case CommPurpose::kParamFetch:
      return "param-fetch";
    case CommPurpose::kParamRefetch:
      return "param-refetch";
    case CommPurpose::kSavedActivationGather:
      return "saved-activation-gather";
  }
  return "unknown";
}

bool IsExpertPartSync(CommPurpose p) {
  return p == CommPurpose::kExpertGradSync || p == CommPurpose::kExpertGradReplicaSync ||
         p == CommPurpose::kExpertParamGather || p == CommPurpose::kExpertUpdatedParamGather;
}

const char* CopyDirectionName(CopyDirection d) {
  switch (d) {
    case CopyDirection::kDeviceToHost:
      return "d2h";
    case CopyDirection::kHostToDevice:
      return "h2d";
  }
  return "unknown";
}

const char* SeverityName(Severity s) { return s == Severity::kError ? "error" : "warning"; }

int Plan::errors() const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(), [](const Finding& f) {
    return f.severity == Severity::kError;
  }));
}
int Plan::warnings() const { return static_cast<int>(findings.size()) - errors(); }
bool Plan::ok() const { return errors() == 0; }

namespace {

constexpr State kModelStates[] = {State::kParams, State::kOptimizer, State::kGrads};

// The one rounding of shards and ring volumes that the schedule and the cost model share.
using cost::CeilDiv;
using cost::RingBytesPerDevice;

// "1 node", "4 nodes": the count and the noun, singular when the count is 1.
std::string CountOf(int64_t n, std::string_view singular, std::string_view plural) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural);
}

bool IsSharded(Mode m) {
  return m == Mode::kSharded || m == Mode::kShardedGather || m == Mode::kOffloaded;
}

// Everything derived once from the inputs and shared by all stages.
struct Context {
  const ModelSpec* model = nullptr;
  const TrainingSpec* training = nullptr;
  const StrategySpec* strategy = nullptr;
  const topology::ClusterSpec* cluster = nullptr;
  AnalyzeOptions options;

  int dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, v = 1;
  bool arch = false;
  ParameterBreakdown params;  // arch only
  // The layers of each stage's model chunks, [stage][chunk] (PipelineChunkLayers); arch only.
  std::vector<std::vector<ChunkLayers>> chunks;
  StateBytes bpp;
  int64_t m = 1;        // micro-batches per step per dp rank
  int64_t s_local = 0;  // sequence length per cp rank
  bool sp = false;
  Recompute recompute = Recompute::kNone;
  int shard_group = 1;  // dp ranks one ZeRO shard spans (hybrid sharding), dense params
  bool cp_joins_dp = false;
  // Gathered parameters freed after each unit's forward (FULL_SHARD), else held until its
  // backward (SHARD_GRAD_OP): AnalyzeOptions::reshard_after_forward.
  bool reshard = true;
  // What each dense layer gathers again after its full recompute (DeepSpeed ZeRO-3's reuse
  // distance); empty when nothing is.
  LayerRefetch refetch;

  const Placement& at(Axis a, State s) const { return strategy->at(a, s); }
  int size(Axis a) const { return strategy->mesh.size(a); }
  bool Sharded(Axis a, State s) const { return size(a) > 1 && IsSharded(at(a, s).mode); }
  // Offload is a question of where a state lives, not of how it is split: O on an axis of
  // size 1 (ZeRO-Offload on one GPU, or on dp 1 with tp > 1) still keeps the state off the
  // device, so every axis counts here, whatever its size.
  bool Offloaded(State s) const {
    return std::any_of(
        strategy->placement.begin(), strategy->placement.end(),
        [&](const auto& axis) { return axis[static_cast<int>(s)].mode == Mode::kOffloaded; });
  }
  OffloadTarget Target(State s) const { return OffloadTargetOf(*strategy, s); }
  // Divisor a state's dense part gets from the data axes (dp, cp).
  int64_t DataDivisorDense(State s) const {
    int64_t d = 1;
    if (Sharded(Axis::kData, s)) d *= shard_group;
    if (Sharded(Axis::kContext, s)) d *= cp;
    return d;
  }
  // Expert parameters are replicated over the dp / ep "expert data-parallel" ranks only.
  int64_t DataDivisorExpert(State s) const {
    int64_t d = 1;
    if (Sharded(Axis::kData, s)) d *= std::max(1, std::min(shard_group, dp / std::max(1, ep)));
    if (Sharded(Axis::kContext, s)) d *= cp;
    return d;
  }
  int64_t TpDivisor(State s) const { return Sharded(Axis::kTensor, s) ? tp : 1; }
  int64_t EpDivisor(State s) const { return Sharded(Axis::kExpert, s) ? ep : 1; }
};

// Layers owned by pipeline stage `i` (the first stages take the remainder when pp does not
// divide the layers; a finding reports that case).
int64_t StageLayers(const Context& c, int i) {
  const std::vector<int>& split = c.strategy->pipeline_stage_layers;
  if (!split.empty()) return split[static_cast<size_t>(i)];
  const int64_t l = c.params.layers;
  return l / c.pp + (i < l % c.pp ? 1 : 0);
}

// The dense layers of a heterogeneous MoE model that pipeline stage `i` holds, chunk by
// chunk (an interleaved stage's layers are not contiguous).
int64_t StageDenseLayers(const Context& c, int i) {
  int64_t dense = 0;
  for (const ChunkLayers& chunk : c.chunks[static_cast<size_t>(i)])
    dense += DenseLayersIn(c.model->transformer, chunk.first, chunk.count);
  return dense;
}

// Elements of one layer's dense part (tp-split and replicated) after tp: an MoE layer's
// attention, router and shared experts, or a dense layer's whole.
int64_t LayerDenseElements(const ParameterBreakdown& p, int64_t tpd, bool dense_layer) {
  if (dense_layer) return CeilDiv(p.dense_layer_tp_split, tpd) + p.dense_layer_tp_replicated;
  return CeilDiv(p.layer_tp_split, tpd) + p.layer_tp_replicated + p.layer_router +
         CeilDiv(p.layer_shared_experts, tpd);
}

// Elements of the dense and expert parts one device computes with for `s` on stage `i`
// before data-axis sharding: the slice after tp, pp and ep.
struct Slice {
  int64_t dense = 0;
  int64_t expert = 0;
};

Slice ModelSlice(const Context& c, State s, int stage) {
  Slice out;
  const bool pp_split = c.Sharded(Axis::kPipeline, s) || c.pp == 1;
  const int64_t tpd = c.TpDivisor(s);
  if (!c.arch) {
    out.dense = CeilDiv(CeilDiv(c.model->parameter_count, pp_split ? c.pp : 1), tpd);
    return out;
  }
  const ParameterBreakdown& p = c.params;
  const bool first = !pp_split || stage == 0;
  const bool last = !pp_split || stage == c.pp - 1;
  const int64_t layers = pp_split ? StageLayers(c, stage) : p.layers;
  // Heterogeneous MoE models: the stage's dense layers carry a dense MLP and no experts.
  const int64_t dense_layers =
      pp_split ? StageDenseLayers(c, stage) : DenseLayersIn(c.model->transformer, 0, layers);
  out.dense = (layers - dense_layers) * LayerDenseElements(p, tpd, false) +
              dense_layers * LayerDenseElements(p, tpd, true);
  if (first) out.dense += CeilDiv(p.embedding, tpd);  // vocab-parallel embedding
  if (last) {
    out.dense += CeilDiv(p.head, tpd) + p.final_norm;
    // Tied embeddings across a pipeline: the last stage keeps its own copy of the word
    // embedding for the output layer (Megatron-LM), kept in sync by an all-reduce.
    if (p.head == 0 && !first)
      out.dense += CeilDiv(c.model->transformer.vocab * c.model->transformer.hidden, tpd);
  }
  out.expert = (layers - dense_layers) * CeilDiv(CeilDiv(p.layer_experts, c.EpDivisor(s)), tpd);
  return out;
}

int64_t DeviceElements(const Context& c, State s, int stage) {
  const Slice sl = ModelSlice(c, s, stage);
  return CeilDiv(sl.dense, c.DataDivisorDense(s)) + CeilDiv(sl.expert, c.DataDivisorExpert(s));
}

// The largest unit gathered at once under S* or streamed under O: layers_per_unit layers, or
// the embedding / output layer when this stage holds one (FSDP wraps them separately).
int64_t UnitElements(const Context& c, int stage, bool first, bool last) {
  if (!c.arch) return 0;
  const ParameterBreakdown& p = c.params;
  const int64_t tpd = c.TpDivisor(State::kParams);
  // The larger layer kind bounds a unit of a heterogeneous MoE model.
  const int64_t per_layer =
      std::max(LayerDenseElements(p, tpd, false) +
                   CeilDiv(CeilDiv(p.layer_experts, c.EpDivisor(State::kParams)), tpd),
               p.dense_layers > 0 ? LayerDenseElements(p, tpd, true) : 0);
  const int64_t layers = std::min<int64_t>(c.strategy->layers_per_unit, StageLayers(c, stage));
  int64_t unit = layers * per_layer;
  if (first) unit = std::max(unit, CeilDiv(p.embedding, tpd));
  if (last)
    unit = std::max(
        unit,
        CeilDiv(std::max(p.head, c.model->transformer.vocab * c.model->transformer.hidden), tpd));
  return unit;
}

void AddCollective(RankRole& role, CollectiveKind kind, Axis axis, State state, int64_t group,
                   Bytes buffer, int64_t count, CommPurpose reason, std::string purpose) {
  if (group <= 1 || count <= 0 || buffer.count() <= 0) return;
  Collective col;
  col.kind = kind;
  col.axis = axis;
  col.state = state;
  col.group_size = static_cast<int>(group);
  col.buffer_bytes = buffer;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      col.bytes_per_call = RingBytesPerDevice(buffer, 2, group);
      break;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
      col.bytes_per_call = RingBytesPerDevice(buffer, 1, group);
      break;
    case CollectiveKind::kSendRecv:
    case CollectiveKind::kBroadcast:
      col.bytes_per_call = buffer;
      break;
  }
  col.count = count;
  col.total_bytes = col.bytes_per_call * count;
  col.reason = reason;
  col.purpose = std::move(purpose);
  role.comm_bytes += col.total_bytes;
  role.collectives.push_back(std::move(col));
}

void AddCopy(RankRole& role, CopyDirection dir, State state, OffloadTarget target, Bytes bytes,
             CommPurpose reason, std::string purpose) {
  if (bytes.count() <= 0) return;
  role.copies.push_back(OffloadCopy{dir, state, target, bytes, reason, std::move(purpose)});
  role.copy_bytes += bytes;
}

// A part of the model whose states a data-parallel group synchronizes, named in the purposes
// and typed in the reasons of its collectives.
struct ModelPart {
  const char* name;
  CommPurpose grad_sync;
  CommPurpose grad_replica_sync;
  CommPurpose param_gather;
  CommPurpose updated_param_gather;
};
constexpr ModelPart kDensePart{"dense", CommPurpose::kGradSync, CommPurpose::kGradReplicaSync,
                               CommPurpose::kParamGather, CommPurpose::kUpdatedParamGather};
constexpr ModelPart kExpertPart{
    "expert", CommPurpose::kExpertGradSync, CommPurpose::kExpertGradReplicaSync,
    CommPurpose::kExpertParamGather, CommPurpose::kExpertUpdatedParamGather};
// Every parameter, over cp when cp has its own placement: no expert replica group applies.
constexpr ModelPart kWholeModel{"all", CommPurpose::kGradSync, CommPurpose::kGradReplicaSync,
                                CommPurpose::kParamGather, CommPurpose::kUpdatedParamGather};

// Gradient and parameter traffic of one data-parallel group (see the table in analyzer.h).
// `n` ranks share a shard; `replicas` groups of them hold identical shards (hybrid).
// `refetch`: the bytes gathered again per micro-batch after full recompute (dense part, S*).
void AddDataParallelComm(const Context& c, RankRole& role, Axis axis, const char* group_name,
                         Mode theta, Mode omega, Mode grad, int64_t n, int64_t replicas,
                         int64_t slice_elems, const ModelPart& model_part,
                         Bytes refetch = Bytes::Zero()) {
  const char* part = model_part.name;
  if (slice_elems <= 0) return;
  const Bytes grads = Bytes::Count(slice_elems * c.bpp.grads);
  const Bytes params = Bytes::Count(slice_elems * c.bpp.params);
  const bool shard = n > 1;
  const bool g_sharded = shard && IsSharded(grad);
  const bool o_sharded = shard && IsSharded(omega);
  const bool t_gather = shard && (theta == Mode::kShardedGather || theta == Mode::kOffloaded);
  if (g_sharded || o_sharded) {
    const int64_t count = g_sharded ? c.m : 1;
    AddCollective(role, CollectiveKind::kReduceScatter, axis, State::kGrads, n, grads, count,
                  model_part.grad_sync,
                  fmt::format("{} grads reduce-scattered over {}{}", part, group_name,
                              g_sharded ? " after every micro-batch (grads are sharded)"
                                        : " once per step (each optimizer shard needs its part)"));
    AddCollective(role, CollectiveKind::kAllReduce, axis, State::kGrads, replicas,
                  Bytes::Count(CeilDiv(slice_elems, n) * c.bpp.grads), 1,
                  model_part.grad_replica_sync,
                  fmt::format("{} grad shards all-reduced across the {} hybrid replica groups",
                              part, replicas));
  } else {
    AddCollective(role, CollectiveKind::kAllReduce, axis, State::kGrads, n * replicas, grads, 1,
                  model_part.grad_sync,
                  fmt::format("{} grads all-reduced over {} once per step (replicated grads)", part,
                              group_name));
  }
  if (t_gather) {
    // Streamed (offloaded) parameters are fetched for every use either way.
    const bool held = !c.reshard && theta == Mode::kShardedGather;
    AddCollective(role, CollectiveKind::kAllGather, axis, State::kParams, n, params,
                  held ? c.m : 2 * c.m, model_part.param_gather,
                  held ? fmt::format("{} params all-gathered over {} before use in forward, "
                                     "held through backward, every micro-batch",
                                     part, group_name)
                       : fmt::format("{} params all-gathered over {} before use, in forward "
                                     "and again in backward, every micro-batch",
                                     part, group_name));
    if (theta == Mode::kShardedGather) {
      AddCollective(role, CollectiveKind::kAllGather, axis, State::kParams, n, refetch, c.m,
                    CommPurpose::kParamRefetch,
                    fmt::format("{} weight matrices all-gathered over {} again after each "
                                "layer's recompute, released in it (stage3_max_reuse_distance)",
                                part, group_name));
    }
  } else if (o_sharded && theta == Mode::kReplicated) {
    AddCollective(role, CollectiveKind::kAllGather, axis, State::kParams, n, params, 1,
                  model_part.updated_param_gather,
                  fmt::format("updated {} params all-gathered over {} after the sharded "
                              "optimizer step (keeps replicated params consistent)",
                              part, group_name));
  }
}

// fp8 training with Transformer Engine: each transformer layer's GEMM weights are cast to fp8
// on the step's first micro-batch and kept, with their transposes, for the others (TE's
// is_first_microbatch weight cache, which Megatron-LM drives under gradient accumulation):
// Hopper's fp8 GEMMs take only K-major operands, so the backward needs W^T in fp8 beside W.
// 1 + 1 bytes per element of the layers' tp-sliced parameters (the norms' few elements
// included; every layer of a heterogeneous MoE model counted as an MoE layer) on top of the
// bf16 weights. Parameters gathered per use (S*) or streamed from an offload target are cast
// per use and keep no copy; embedding and output layer stay bf16.
Bytes Fp8WeightCache(const Context& c, int i) {
  if (c.training->precision != Precision::kFp8Mixed || !c.arch || c.Offloaded(State::kParams))
    return Bytes::Zero();
  for (Axis a : {Axis::kData, Axis::kContext}) {
    if (c.size(a) > 1 && c.at(a, State::kParams).mode == Mode::kShardedGather) return Bytes::Zero();
  }
  const int64_t tpd = c.TpDivisor(State::kParams);
  const ParameterBreakdown& p = c.params;
  const int64_t per_layer = LayerDenseElements(p, tpd, false) +
                            CeilDiv(CeilDiv(p.layer_experts, c.EpDivisor(State::kParams)), tpd);
  return Bytes::Count(2 * StageLayers(c, i) * per_layer);
}

// The model states stage `i` keeps on each device, and what its offloaded states occupy off it.
void AddModelStates(const Context& c, int i, MemoryBreakdown& mem) {
  for (State s : kModelStates) {
    const int64_t per = s == State::kParams      ? c.bpp.params
                        : s == State::kOptimizer ? c.bpp.optimizer
                                                 : c.bpp.grads;
    const Bytes b = Bytes::Count(DeviceElements(c, s, i) * per);
    Bytes* resident = s == State::kParams      ? &mem.params
                      : s == State::kOptimizer ? &mem.optimizer
                                               : &mem.grads;
    if (c.Offloaded(s)) {
      (c.Target(s) == OffloadTarget::kNvme ? mem.offloaded_nvme : mem.offloaded_host) += b;
    } else {
      *resident = b;
    }
  }
  mem.params += Fp8WeightCache(c, i);
}

// Chunks (one micro-batch through 1/v of the stage's layers) whose activations stage `i`
// holds at the peak of its pipeline schedule.
int64_t ChunksInFlight(const Context& c, int i) {
  if (c.pp == 1) return c.v;
  switch (c.training->pipeline_schedule) {
    case PipelineSchedule::kGpipe:
      return c.m * c.v;
    case PipelineSchedule::k1F1B:
      return std::min<int64_t>(c.pp - i, c.m) * c.v;
    case PipelineSchedule::kInterleaved1F1B:
      if (c.v == 1) return std::min<int64_t>(c.pp - i, c.m);
      // Megatron-LM interleaved schedule: rank i runs (p - i - 1)·2 + (v - 1)·p warm-up
      // chunk forwards before its first backward, so it holds that many plus one; for
      // the first stage this is p·(1 + (p-1)/(p v)) stage micro-batches (Korthikanti
      // Section 4.2.3).
      return std::min<int64_t>((c.pp - i - 1) * 2 + (c.v - 1) * c.pp + 1, c.m * c.v);
  }
  return 1;
}

// The activation peak of stage `i`, walking its passes in the order its schedule runs them:
// a forward keeps its chunk's layers (plus the embedding's mask on the model's first chunk,
// the output layer's buffers on its last); a backward first frees the output layer's
// buffers, then holds what recompute rebuilds for its first layer beside everything still
// kept, and at its end has freed the chunk. With p = 1 this is act + max(0, rebuilt - head).
Bytes WalkedActivationPeak(const Context& c, int i, Bytes act_per_layer, Bytes embedding,
                           Bytes head, Bytes rebuilt) {
  const std::vector<ChunkLayers>& chunks = c.chunks[static_cast<size_t>(i)];
  const auto kept = [&](int chunk) {
    return act_per_layer * chunks[static_cast<size_t>(chunk)].count +
           (chunk == 0 ? embedding : Bytes::Zero()) + (chunk == c.v - 1 ? head : Bytes::Zero());
  };
  Bytes live, peak;
  const PipelineSchedule schedule = c.training->pipeline_schedule;
  for (const PipelinePass& pass : PipelineOrder(schedule, c.pp, c.v, c.m, i,
                                                PipelinePeakHorizon(schedule, c.pp, c.v, c.m, i))) {
    if (!pass.backward) {
      live += kept(pass.chunk);
      peak = std::max(peak, live);
    } else {
      const Bytes out = pass.chunk == c.v - 1 ? head : Bytes::Zero();
      peak = std::max(peak, live - out + rebuilt);
      live -= kept(pass.chunk);
    }
  }
  return peak;
}

// Activations of stage `i` (Korthikanti et al. 2022; see model.h): their peak on the device,
// or, when offloaded, what they occupy off it, their staging buffers and their copies.
// REQUIRES: c.arch.
void AddActivations(const Context& c, int i, RankRole& role) {
  const TransformerSpec& t = c.model->transformer;
  const bool first = i == 0;
  const bool last = i == c.pp - 1;
  MemoryBreakdown& mem = role.memory;
  const Bytes act_per_layer =
      ActivationBytesPerLayer(t, c.training->micro_batch, c.s_local, c.tp,
                              SplitsKeptInput(*c.training, c.tp, c.sp, c.recompute), c.recompute,
                              c.training->flash_attention);
  const int64_t chunks = ChunksInFlight(c, i);
  role.microbatches_in_flight = c.pp > 1 ? static_cast<double>(chunks) / c.v : 1;
  const int64_t layers_per_chunk = CeilDiv(role.layers, c.v);
  Bytes act = act_per_layer * (layers_per_chunk * chunks);
  const int64_t sbh = c.s_local * c.training->micro_batch * t.hidden;
  const int64_t split = c.sp ? c.tp : 1;
  const int64_t held = CeilDiv(chunks, c.v);
  // Korthikanti Section 4.3: the embedding's dropout mask (s b h bytes) on the first stage
  // and, on the last, the output layer's 4 s b h (1 + V/h) / t (final norm, projection
  // input, fp32 logits for the cross-entropy).
  if (first) act += Bytes::Count(CeilDiv(sbh, split)) * held;
  const Bytes head =
      last
          ? Bytes::Count(CeilDiv(4 * sbh + 4 * c.s_local * c.training->micro_batch * t.vocab, c.tp))
          : Bytes::Zero();
  act += head * held;
  // All micro-batches of one step, for activation offload traffic.
  const Bytes act_step = Bytes::Count(act.count() / std::max<int64_t>(held, 1)) * c.m;
  // Recompute working set (Korthikanti Section 5): while a layer's backward runs, what
  // recompute rebuilt for it is live beside everything kept, i.e. the layer's Table 2 figure
  // without recompute less what it kept (full: the layer input, which is the first LayerNorm's
  // input, so 2sbh of the 34sbh are not rebuilt; selective: the 5as^2b attention core). The
  // first such moment is the backward of the stage's last layer, when every kept micro-batch
  // is still live; on the last stage the output layer has by then released the micro-batch's
  // logits, so the peak is the larger of the two. Without recompute nothing is rebuilt and
  // the peak is the end of the forward (Korthikanti's figure as it stands).
  const Bytes rebuilt = ActivationBytesPerLayer(t, c.training->micro_batch, c.s_local, c.tp, c.sp,
                                                Recompute::kNone, c.training->flash_attention) -
                        act_per_layer;
  if (c.Offloaded(State::kActivations)) {
    const OffloadTarget target = c.Target(State::kActivations);
    (target == OffloadTarget::kNvme ? mem.offloaded_nvme : mem.offloaded_host) += act;
    mem.offload_staging += act_per_layer * 2;
    AddCopy(role, CopyDirection::kDeviceToHost, State::kActivations, target, act_step,
            CommPurpose::kActivationOffload,
            "activations saved to the offload target during forward");
    AddCopy(role, CopyDirection::kHostToDevice, State::kActivations, target, act_step,
            CommPurpose::kActivationReload, "activations brought back for backward");
    // The kept activations come back through the staging buffers; what recompute rebuilds
    // from them is made on the device.
    mem.activations = rebuilt;
  } else {
    const Bytes embedding = first ? Bytes::Count(CeilDiv(sbh, split)) : Bytes::Zero();
    mem.activations = WalkedActivationPeak(c, i, act_per_layer, embedding, head, rebuilt);
  }
}

// Device buffers of stage `i` for params gathered over a data axis (S*) or streamed from an
// offload target, and for grads or optimizer states streamed to one.
void AddGatherAndStagingBuffers(const Context& c, int i, MemoryBreakdown& mem) {
  const auto gathered = [&](Axis a) {
    const Mode mode = c.at(a, State::kParams).mode;
    return c.size(a) > 1 && (mode == Mode::kShardedGather || mode == Mode::kOffloaded);
  };
  const bool theta_gathered = gathered(Axis::kData) || gathered(Axis::kContext);
  const int64_t unit = UnitElements(c, i, i == 0, i == c.pp - 1);
  if (theta_gathered && !c.Offloaded(State::kParams)) {
    mem.gather_buffers = Bytes::Count(unit * c.bpp.params) * (c.options.prefetch_depth + 1);
    if (!c.reshard) {
      // Held from forward to backward: when the backward starts, every unit of the stage is
      // whole (more than depth + 1 units whenever the stage has more).
      const Slice sl = ModelSlice(c, State::kParams, i);
      mem.gather_buffers =
          std::max(mem.gather_buffers, Bytes::Count((sl.dense + sl.expert) * c.bpp.params));
    }
    if (c.DataDivisorDense(State::kGrads) > 1) {
      // The unit's full gradient exists until its reduce-scatter completes.
      mem.gather_buffers += Bytes::Count(unit * c.bpp.grads);
    }
  }
  // Double buffers on device for streamed states.
  if (c.Offloaded(State::kParams)) {
    mem.offload_staging += Bytes::Count(unit * c.bpp.params) * (c.options.prefetch_depth + 1);
  }
  if (c.Offloaded(State::kGrads) || c.Offloaded(State::kOptimizer)) {
    mem.offload_staging += Bytes::Count(unit * c.bpp.grads) * 2;
  }
}

// Data-parallel collectives of stage `i`: over dp, and over cp when it carries the same
// placement (as one dp x cp group) or its own.
void AddDataParallelCollectives(const Context& c, int i, RankRole& role) {
  const Slice g_slice = ModelSlice(c, State::kGrads, i);
  const auto modes = [&](Axis a) {
    return std::array<Mode, 3>{c.at(a, State::kParams).mode, c.at(a, State::kOptimizer).mode,
                               c.at(a, State::kGrads).mode};
  };
  const bool any_sharded_dp =
      std::any_of(std::begin(kModelStates), std::end(kModelStates),
                  [&](State s) { return IsSharded(c.at(Axis::kData, s).mode); });
  const int64_t dense_n = any_sharded_dp ? c.shard_group : c.dp;
  const int64_t dense_replicas = c.dp / std::max<int64_t>(dense_n, 1);
  const int64_t expert_dp = std::max(1, c.dp / std::max(1, c.ep));
  const int64_t expert_n = any_sharded_dp ? std::min<int64_t>(c.shard_group, expert_dp) : expert_dp;
  const int64_t expert_replicas = expert_dp / std::max<int64_t>(expert_n, 1);
  const auto [dt, dom, dg] = modes(Axis::kData);
  // Every layer of the stage (dense models only) gathers c.refetch's share again per
  // micro-batch, as the schedule's RefetchForBackward does.
  const int64_t layer_elems = c.arch ? LayerDenseElements(c.params, c.tp, false) : 0;
  const Bytes refetch =
      c.refetch.Of(Bytes::Count(layer_elems * c.bpp.params)) * (c.arch ? StageLayers(c, i) : 0);
  if (c.cp_joins_dp) {
    const std::string name = "dp x cp";
    AddDataParallelComm(c, role, Axis::kData, name.c_str(), dt, dom, dg, dense_n * c.cp,
                        dense_replicas, g_slice.dense, kDensePart, refetch);
    AddDataParallelComm(c, role, Axis::kData, name.c_str(), dt, dom, dg, expert_n * c.cp,
                        expert_replicas, g_slice.expert, kExpertPart);
  } else {
    AddDataParallelComm(c, role, Axis::kData, "dp", dt, dom, dg, dense_n, dense_replicas,
                        g_slice.dense, kDensePart, refetch);
    AddDataParallelComm(c, role, Axis::kData, "dp", dt, dom, dg, expert_n, expert_replicas,
                        g_slice.expert, kExpertPart);
    if (c.cp > 1) {
      const auto [ct, com, cg] = modes(Axis::kContext);
      AddDataParallelComm(c, role, Axis::kContext, "cp", ct, com, cg, c.cp, 1,
                          g_slice.dense + g_slice.expert, kWholeModel);
    }
  }
}

// What the activation collectives of a stage carry: one micro-batch's b x s/cp x h bf16
// activations, and how many forward passes each layer runs (two under full recompute).
struct ActivationTraffic {
  int64_t micro_batch = 0;
  Bytes buffer;
  int64_t fwd_passes = 1;
};

ActivationTraffic ActivationTrafficOf(const Context& c) {
  const int64_t b = c.training->micro_batch;
  return {b, Bytes::Count(b * c.s_local * c.model->transformer.hidden * 2),
          c.recompute == Recompute::kFull ? 2 : 1};
}

// Tensor parallel (Megatron-LM): per layer two collectives in forward (attention, MLP), two
// in backward, and the forward's again under full recompute.
void AddTensorParallelCollectives(const Context& c, int i, const ActivationTraffic& a,
                                  RankRole& role) {
  if (c.tp <= 1) return;
  const int64_t per_layer = 2 * a.fwd_passes + 2;
  const int64_t count = per_layer * role.layers * c.m;
  if (c.sp) {
    AddCollective(role, CollectiveKind::kAllGather, Axis::kTensor, State::kActivations, c.tp,
                  a.buffer, count, CommPurpose::kSequenceParallelGather,
                  "sequence-parallel activations all-gathered before attention and MLP");
    AddCollective(role, CollectiveKind::kReduceScatter, Axis::kTensor, State::kActivations, c.tp,
                  a.buffer, count, CommPurpose::kSequenceParallelScatter,
                  "attention and MLP outputs reduce-scattered back to sequence shards");
  } else {
    AddCollective(role, CollectiveKind::kAllReduce, Axis::kTensor, State::kActivations, c.tp,
                  a.buffer, count, CommPurpose::kTensorParallelReduce,
                  "attention and MLP outputs (forward) and input grads (backward) "
                  "all-reduced");
  }
  if (i == 0) {
    AddCollective(role, c.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                  Axis::kTensor, State::kActivations, c.tp, a.buffer, c.m * a.fwd_passes,
                  CommPurpose::kEmbeddingCombine, "vocab-parallel embedding output combined");
  }
  if (DistributesSavedActivations(*c.training, c.tp, c.sp, c.recompute)) {
    AddCollective(role, CollectiveKind::kAllGather, Axis::kTensor, State::kActivations, c.tp,
                  a.buffer, role.layers * c.m, CommPurpose::kSavedActivationGather,
                  "each layer's distributed saved input all-gathered before its recompute");
  }
}

// Pipeline parallel: activations forward, their gradients backward, per micro-batch (and per
// model chunk when interleaved). With tp > 1 each tp rank sends 1/t (Narayanan et al. 2021
// Section 4.1, scatter/gather optimization).
void AddPipelineCollectives(const Context& c, int i, const ActivationTraffic& a, RankRole& role) {
  if (c.pp <= 1) return;
  const bool first = i == 0;
  const bool last = i == c.pp - 1;
  const Bytes p2p = Bytes::Count(CeilDiv(a.buffer.count(), c.tp));
  int64_t fwd = 0, bwd = 0;
  if (c.training->pipeline_schedule == PipelineSchedule::kInterleaved1F1B) {
    fwd = c.m * c.v - (last ? c.m : 0);
    bwd = c.m * c.v - (first ? c.m : 0);
  } else {
    fwd = last ? 0 : c.m;
    bwd = first ? 0 : c.m;
  }
  // Point-to-point: a group of two neighbouring stages.
  AddCollective(role, CollectiveKind::kSendRecv, Axis::kPipeline, State::kActivations, 2, p2p, fwd,
                CommPurpose::kPipelineActivations, "activations sent to the next stage");
  AddCollective(role, CollectiveKind::kSendRecv, Axis::kPipeline, State::kActivations, 2, p2p, bwd,
                CommPurpose::kPipelineActivationGrads,
                "activation grads sent to the previous stage");
  if (c.params.head == 0 && (first || last)) {
    const TransformerSpec& t = c.model->transformer;
    AddCollective(role, CollectiveKind::kAllReduce, Axis::kPipeline, State::kGrads, 2,
                  Bytes::Count(CeilDiv(t.vocab * t.hidden, c.tp) * c.bpp.grads), 1,
                  CommPurpose::kTiedEmbeddingSync,
                  "tied word-embedding grads all-reduced between first and last stage");
  }
}

// Context parallel: ring attention passes K and V around the ring in every forward pass, and
// K, V and their grads in backward; the all-gather variant gathers K and V before every
// attention pass and reduce-scatters their grads after the backward. Both move (cp - 1)
// chunks of K/V per pass (and of their grads in backward).
void AddContextParallelCollectives(const Context& c, const ActivationTraffic& a, RankRole& role) {
  if (c.cp <= 1) return;
  const TransformerSpec& t = c.model->transformer;
  const Bytes kv = Bytes::Count(2 * a.micro_batch * c.s_local *
                                (CeilDiv(KeyWidth(t), c.tp) + CeilDiv(ValueWidth(t), c.tp)));
  if (c.training->context_parallel_comm == ContextParallelComm::kAllGather) {
    AddCollective(role, CollectiveKind::kAllGather, Axis::kContext, State::kActivations, c.cp,
                  kv * c.cp, (a.fwd_passes + 1) * role.layers * c.m, CommPurpose::kContextKvGather,
                  "keys and values all-gathered over cp before every attention pass");
    AddCollective(role, CollectiveKind::kReduceScatter, Axis::kContext, State::kActivations, c.cp,
                  kv * c.cp, role.layers * c.m, CommPurpose::kContextKvGradScatter,
                  "key/value grads reduce-scattered over cp after the attention backward");
  } else {
    const int64_t count = (a.fwd_passes + 2) * (c.cp - 1) * role.layers * c.m;
    AddCollective(role, CollectiveKind::kSendRecv, Axis::kContext, State::kActivations, c.cp, kv,
                  count, CommPurpose::kContextKvRing,
                  "key/value chunks (and their grads) passed around the cp ring");
  }
}

// Expert parallel: token dispatch and combine, forward and backward.
void AddExpertParallelCollectives(const Context& c, int i, const ActivationTraffic& a,
                                  RankRole& role) {
  const TransformerSpec& t = c.model->transformer;
  if (c.ep <= 1 || t.experts <= 1) return;
  // Only the stage's MoE layers dispatch (a heterogeneous model's dense layers do not).
  const int64_t moe_layers = role.layers - StageDenseLayers(c, i);
  // The busiest rank's volume (dropless routing_imbalance): its exchanges pace the group.
  const Bytes tokens = Scale(Bytes::Count(CeilDiv(a.buffer.count(), c.sp ? c.tp : 1)),
                             MoeBusiestExpertMultiplier(t));
  AddCollective(role, CollectiveKind::kAllToAll, Axis::kExpert, State::kActivations, c.ep, tokens,
                2 * (a.fwd_passes + 1) * moe_layers * c.m, CommPurpose::kExpertDispatchCombine,
                "tokens dispatched to and combined from their experts");
}

// Offload copies of stage `i`'s model states, per device per step.
void AddStateOffloadCopies(const Context& c, int i, RankRole& role) {
  const Bytes theta_shard = Bytes::Count(DeviceElements(c, State::kParams, i) * c.bpp.params);
  const int64_t omega_elems = DeviceElements(c, State::kOptimizer, i);
  if (c.Offloaded(State::kOptimizer)) {
    // Sharded grads are reduce-scattered after every micro-batch and each reduced shard is
    // copied out then (and accumulated on the host); so are offloaded grads on a single rank
    // (no device copy to accumulate into); replicated grads on the device once per step.
    const bool g_reduced =
        c.Sharded(Axis::kData, State::kGrads) || c.Sharded(Axis::kContext, State::kGrads);
    const bool g_per_micro_batch = g_reduced || c.Offloaded(State::kGrads);
    AddCopy(role, CopyDirection::kDeviceToHost, State::kGrads, OffloadTarget::kHost,
            Bytes::Count(omega_elems * c.bpp.grads) * (g_per_micro_batch ? c.m : 1),
            CommPurpose::kGradToHostOptimizer,
            g_reduced ? "grad shard copied to the host after every micro-batch's reduce-scatter, "
                        "accumulated there for the host optimizer step"
            : g_per_micro_batch
                ? "grads copied to the host after every micro-batch's backward, accumulated "
                  "there for the host optimizer step"
                : "grad shard copied to the host for the host optimizer step");
    if (!c.Offloaded(State::kParams)) {
      AddCopy(role, CopyDirection::kHostToDevice, State::kParams, OffloadTarget::kHost,
              Bytes::Count(omega_elems * c.bpp.params), CommPurpose::kUpdatedParamReturn,
              "updated parameter shard copied back to the device");
    }
  } else if (c.Offloaded(State::kGrads)) {
    const OffloadTarget target = c.Target(State::kGrads);
    const Bytes g = Bytes::Count(DeviceElements(c, State::kGrads, i) * c.bpp.grads);
    AddCopy(role, CopyDirection::kDeviceToHost, State::kGrads, target, g, CommPurpose::kGradOffload,
            "grad shard offloaded after backward");
    AddCopy(role, CopyDirection::kHostToDevice, State::kGrads, target, g, CommPurpose::kGradReload,
            "grad shard brought back for the device optimizer step");
  }
  if (c.Offloaded(State::kParams)) {
    AddCopy(role, CopyDirection::kHostToDevice, State::kParams, c.Target(State::kParams),
            theta_shard * (2 * c.m), CommPurpose::kParamFetch,
            c.Sharded(Axis::kData, State::kParams) || c.Sharded(Axis::kContext, State::kParams)
                ? "parameter shard fetched before the all-gather, in forward and in backward"
                : "parameters fetched before use, in forward and in backward");
  }
}

// Builds the role of pipeline stage `i`: memory, collectives, copies. The order of the
// collectives and copies is the order reports list them in.
RankRole BuildStage(const Context& c, int i) {
  RankRole role;
  role.first_stage = role.last_stage = i;
  role.ranks = c.strategy->mesh.world() / c.pp;
  role.has_embedding = c.arch && i == 0;
  role.has_head = c.arch && i == c.pp - 1;
  role.layers = c.arch ? StageLayers(c, i) : 0;
  const Slice theta_slice = ModelSlice(c, State::kParams, i);
  role.params_local = theta_slice.dense + theta_slice.expert;

  AddModelStates(c, i, role.memory);
  if (c.arch) AddActivations(c, i, role);
  AddGatherAndStagingBuffers(c, i, role.memory);
  AddDataParallelCollectives(c, i, role);
  if (c.arch) {
    const ActivationTraffic traffic = ActivationTrafficOf(c);
    AddTensorParallelCollectives(c, i, traffic, role);
    AddPipelineCollectives(c, i, traffic, role);
    AddContextParallelCollectives(c, traffic, role);
    AddExpertParallelCollectives(c, i, traffic, role);
  }
  AddStateOffloadCopies(c, i, role);
  return role;
}

bool SameRole(const RankRole& a, const RankRole& b) {
  const MemoryBreakdown &x = a.memory, &y = b.memory;
  return a.layers == b.layers && a.has_embedding == b.has_embedding && a.has_head == b.has_head &&
         a.microbatches_in_flight == b.microbatches_in_flight && a.params_local == b.params_local &&
         x.params == y.params && x.grads == y.grads && x.optimizer == y.optimizer &&
         x.activations == y.activations && x.gather_buffers == y.gather_buffers &&
         x.offload_staging == y.offload_staging && a.comm_bytes == b.comm_bytes &&
         a.copy_bytes == b.copy_bytes && a.collectives.size() == b.collectives.size();
}

std::string RoleName(const Context& c, const RankRole& r) {
  if (c.pp == 1) return "all ranks";
  std::string name = r.first_stage == r.last_stage
                         ? fmt::format("pp stage {}", r.first_stage)
                         : fmt::format("pp stages {}-{}", r.first_stage, r.last_stage);
  if (r.first_stage == 0) name += " (first)";
  if (r.last_stage == c.pp - 1) name += " (last)";
  return name;
}

// ------------------------------------------------------------------------- correctness rules

void AddFinding(Plan& plan, Severity sev, std::string rule, std::optional<State> state,
                std::optional<Axis> axis, std::string message, std::string fix) {
  plan.findings.push_back(
      Finding{sev, std::move(rule), state, axis, std::move(message), std::move(fix)});
}

std::string ModeText(Mode m) { return fmt::format("{} ({})", ModeName(m), ModeSymbol(m)); }

bool IsDataAxis(Axis a) { return a == Axis::kData || a == Axis::kContext; }

// An axis's name and the modes of the four states on it, as the placement rules read them.
struct AxisModes {
  const char* name;
  Mode theta, omega, grad, act;
};
AxisModes ModesOn(const Context& c, Axis axis) {
  return {AxisName(axis), c.at(axis, State::kParams).mode, c.at(axis, State::kOptimizer).mode,
          c.at(axis, State::kGrads).mode, c.at(axis, State::kActivations).mode};
}

// Rules for every axis: M is for activations only; an optimizer replica needs the full
// averaged gradient; on a model-parallel axis the optimizer is sliced like the params.
void CheckStateRules(const Context& c, Axis axis, Plan& plan) {
  const auto [an, theta, omega, grad, act] = ModesOn(c, axis);
  // M applies to activations only.
  for (State s : kModelStates) {
    if (c.at(axis, s).mode == Mode::kMaterialized) {
      AddFinding(plan, Severity::kError, "mode-not-applicable", s, axis,
                 fmt::format("{} are materialized (M) on {}: M means rebuilt from checkpoints "
                             "by recomputation, which only activations can be",
                             StateName(s), an),
                 fmt::format("place {} as R, S, S* or O on {}", StateName(s), an));
    }
  }
  // Gradient integrity: an optimizer replica must see the full averaged gradient.
  if (IsSharded(grad) && omega == Mode::kReplicated) {
    AddFinding(plan, Severity::kError, "gradient-integrity", State::kGrads, axis,
               fmt::format("grads are {} on {} while the optimizer is replicated (R) on {}: "
                           "no device holds the full averaged gradient its update needs",
                           ModeText(grad), an, an),
               fmt::format("shard the optimizer on {} too (S, as in ZeRO-2), or replicate "
                           "the grads (R, all-reduced)",
                           an));
  }
  // State consistency on model-parallel axes: a replicated optimizer over sliced
  // parameters only ever receives the gradient of the local slice.
  if (!IsDataAxis(axis) && IsSharded(theta) && omega == Mode::kReplicated) {
    AddFinding(plan, Severity::kError, "state-consistency", State::kOptimizer, axis,
               fmt::format("params are {} on {} while the optimizer is replicated (R) on {}: "
                           "each rank updates only its own slice, so the optimizer replicas "
                           "(master weights, moments) differ across {} ranks",
                           ModeText(theta), an, an, an),
               fmt::format("shard the optimizer on {} like the params (S)", an));
  }
}

// Rules for a data axis (dp, cp), where every rank runs the whole model slice on its own
// micro-batches.
void CheckDataAxisPlacement(const Context& c, Axis axis, Plan& plan) {
  const auto [an, theta, omega, grad, act] = ModesOn(c, axis);
  if (theta == Mode::kSharded) {
    AddFinding(plan, Severity::kError, "params-need-gather", State::kParams, axis,
               fmt::format("params are sharded (S) on {} without gather: every {} rank runs "
                           "the whole model slice, but holds only 1/{} of its parameters",
                           an, an, c.size(axis)),
               fmt::format("use S* on {} (all-gather each unit before use, as ZeRO-3/FSDP)", an));
  }
  if (IsSharded(theta) && omega == Mode::kReplicated && grad == Mode::kReplicated) {
    AddFinding(plan, Severity::kWarning, "redundant-optimizer", State::kOptimizer, axis,
               fmt::format("params are {} on {} while the optimizer is replicated (R): every "
                           "rank updates every parameter and keeps only its shard",
                           ModeText(theta), an),
               fmt::format("shard the optimizer and grads on {} (S), as ZeRO-3", an));
  }
  for (State s : {State::kOptimizer, State::kGrads}) {
    if (c.at(axis, s).mode == Mode::kShardedGather) {
      AddFinding(plan, Severity::kWarning, "gather-not-needed", s, axis,
                 fmt::format("{} are S* on {}: they are never gathered before use; read as "
                             "sharded (S)",
                             StateName(s), an),
                 fmt::format("write S for {} on {}", StateName(s), an));
    }
  }
  if (axis == Axis::kData && (act == Mode::kSharded || act == Mode::kShardedGather)) {
    AddFinding(plan, Severity::kError, "activation-placement", State::kActivations, axis,
               fmt::format("activations are {} on dp: each dp rank already holds only the "
                           "activations of its own micro-batch, so sharding them over dp "
                           "has no meaning",
                           ModeText(act)),
               "place activations as R on dp (M to recompute them, O to offload them)");
  }
}

// Rules for a model-parallel axis (tp, pp, ep), which slices the model: Θ, Ω and G must be
// sliced the same way.
void CheckModelParallelPlacement(const Context& c, Axis axis, Plan& plan) {
  const auto [an, theta, omega, grad, act] = ModesOn(c, axis);
  for (State s : kModelStates) {
    const Mode mode = c.at(axis, s).mode;
    if (mode == Mode::kSharded || mode == Mode::kMaterialized) continue;
    if (s == State::kOptimizer && mode == Mode::kReplicated && IsSharded(theta)) continue;
    if (s == State::kGrads && IsSharded(grad) && omega == Mode::kReplicated) continue;
    AddFinding(plan, Severity::kError, "model-parallel-placement", s, axis,
               fmt::format("{} are {} on {}: {} slices the model ({}), so every rank computes "
                           "with, differentiates and updates only its own slice",
                           StateName(s), ModeText(mode), an, an,
                           axis == Axis::kTensor     ? "Megatron tensor parallelism"
                           : axis == Axis::kPipeline ? "layers per stage"
                                                     : "experts per rank"),
               fmt::format("shard {} on {} (S)", StateName(s), an));
  }
  if (axis == Axis::kPipeline && act != Mode::kSharded && act != Mode::kMaterialized) {
    AddFinding(plan, Severity::kWarning, "activation-placement", State::kActivations, axis,
               fmt::format("activations are {} on pp; each stage only ever holds the "
                           "activations of its own layers; read as sharded (S)",
                           ModeText(act)),
               "write S for activations on pp");
  }
  if (axis == Axis::kTensor && act == Mode::kShardedGather) {
    AddFinding(plan, Severity::kWarning, "activation-placement", State::kActivations, axis,
               "activations are S* on tp; read as sequence parallel (S)",
               "write S (sequence parallel) or R for activations on tp");
  }
}

// Offload targets: named, present on the node, and one per state.
void CheckOffloadTargets(const Context& c, Axis axis, Plan& plan) {
  const char* an = AxisName(axis);
  for (int si = 0; si < kNumStates; ++si) {
    const State s = static_cast<State>(si);
    const Placement& p = c.at(axis, s);
    if (p.mode == Mode::kOffloaded && p.target == OffloadTarget::kNone) {
      AddFinding(plan, Severity::kError, "offload-target", s, axis,
                 fmt::format("{} are offloaded (O) on {} without a target", StateName(s), an),
                 "name the target: host or nvme");
    }
    if (p.mode == Mode::kOffloaded && p.target == OffloadTarget::kNvme &&
        c.cluster->node.nvme_capacity.count() <= 0) {
      AddFinding(
          plan, Severity::kError, "offload-target", s, axis,
          fmt::format("{} are offloaded to NVMe on {}, but the node has no NVMe", StateName(s), an),
          "offload to host memory, or describe the node's NVMe (nvme_capacity)");
    }
    if (p.mode == Mode::kOffloaded && p.target != OffloadTarget::kNone && c.Target(s) != p.target) {
      AddFinding(plan, Severity::kError, "offload-target", s, axis,
                 fmt::format("{} are offloaded to {} on {} but to {} on another axis", StateName(s),
                             OffloadTargetName(p.target), an, OffloadTargetName(c.Target(s))),
                 "offload a state to one target");
    }
  }
}

void CheckPlacement(const Context& c, Plan& plan) {
  for (int ai = 0; ai < topology::kNumAxes; ++ai) {
    const Axis axis = static_cast<Axis>(ai);
    if (c.size(axis) <= 1) continue;
    if (axis == Axis::kExpert && (!c.arch || c.model->transformer.experts <= 1)) continue;
    CheckStateRules(c, axis, plan);
    if (IsDataAxis(axis)) {
      CheckDataAxisPlacement(c, axis, plan);
    } else {
      CheckModelParallelPlacement(c, axis, plan);
    }
    CheckOffloadTargets(c, axis, plan);
  }
}

// The mesh covers the cluster and the batch splits into whole micro-batches.
void CheckWorldAndBatch(const Context& c, Plan& plan) {
  const topology::ClusterSpec& cl = *c.cluster;
  const int64_t devices = int64_t{cl.nodes} * cl.node.gpus;
  if (plan.world != devices) {
    AddFinding(plan, Severity::kError, "world-size", std::nullopt, std::nullopt,
               fmt::format("the mesh has dp {} x tp {} x pp {} x cp {} = {} but the cluster "
                           "has {} x {} = {}",
                           c.dp, c.tp, c.pp, c.cp, CountOf(plan.world, "rank", "ranks"),
                           CountOf(cl.nodes, "node", "nodes"), CountOf(cl.node.gpus, "GPU", "GPUs"),
                           CountOf(devices, "device", "devices")),
               "make dp x tp x pp x cp equal the number of GPUs");
  }
  const int64_t per_step = c.training->micro_batch * c.dp;
  if (c.training->global_batch % per_step != 0) {
    AddFinding(plan, Severity::kError, "batch-divisibility", std::nullopt, Axis::kData,
               fmt::format("global batch {} is not a multiple of micro-batch {} x dp {} = {}",
                           c.training->global_batch, c.training->micro_batch, c.dp, per_step),
               fmt::format("use a global batch that is a multiple of {}", per_step));
  }
}

// Tensor parallelism splits heads, hidden and FFN evenly, and stays inside a node.
void CheckTensorParallelShape(const Context& c, Plan& plan) {
  const topology::ClusterSpec& cl = *c.cluster;
  if (c.tp > 1 && c.arch) {
    const TransformerSpec& t = c.model->transformer;
    std::vector<std::pair<const char*, int64_t>> dims = {
        {"heads", t.heads},
        {"kv_heads", t.kv_heads > 0 ? t.kv_heads : t.heads},
        {"hidden", t.hidden},
        {"ffn_hidden", t.ffn_hidden > 0 ? t.ffn_hidden : 4 * t.hidden}};
    // Expert MLPs are split on tp too when they have their own width.
    if (t.experts > 1 && t.expert_ffn_hidden > 0)
      dims.emplace_back("expert_ffn_hidden", t.expert_ffn_hidden);
    for (const auto& [what, value] : dims) {
      if (value % c.tp != 0) {
        AddFinding(plan, Severity::kError, "tp-divisibility", State::kParams, Axis::kTensor,
                   fmt::format("tp {} does not divide {} {}: tensor parallelism splits {} evenly "
                               "across the tp ranks",
                               c.tp, what, value, what),
                   fmt::format("use a tp that divides {} {}", what, value));
      }
    }
  }
  if (c.tp > 1 && c.tp > cl.node.gpus) {
    AddFinding(plan, Severity::kWarning, "tp-within-node", std::nullopt, Axis::kTensor,
               fmt::format("tp {} is larger than the {} of a node: tensor-parallel "
                           "collectives (several per layer) would cross the scale-out network",
                           c.tp, CountOf(cl.node.gpus, "GPU", "GPUs")),
               fmt::format("keep tp <= {} (inside a node) unless this is intended", cl.node.gpus));
  }
}

// Stages split the layers evenly, interleaving has its schedule and its micro-batch groups,
// and there are enough micro-batches to fill the pipeline.
void CheckPipelineShape(const Context& c, Plan& plan) {
  if (c.arch && c.pp > 1 && c.strategy->pipeline_stage_layers.empty() &&
      c.params.layers % (int64_t{c.pp} * c.v) != 0) {
    AddFinding(plan, Severity::kError, "pp-divisibility", State::kParams, Axis::kPipeline,
               fmt::format("pp {} x virtual stages {} = {} does not divide the {}", c.pp, c.v,
                           c.pp * c.v, CountOf(c.params.layers, "layer", "layers")),
               "use a pp (and virtual stage count) that divides the layers");
  }
  if (c.v > 1 &&
      (c.pp == 1 || c.training->pipeline_schedule != PipelineSchedule::kInterleaved1F1B)) {
    AddFinding(plan, Severity::kError, "virtual-stages", std::nullopt, Axis::kPipeline,
               fmt::format("virtual_stages {} needs the interleaved-1f1b schedule and pp > 1", c.v),
               "set virtual_stages to 1, or use interleaved-1f1b with pp > 1");
  }
  if (c.pp > 1 && c.v > 1 && c.training->pipeline_schedule == PipelineSchedule::kInterleaved1F1B &&
      c.m % c.pp != 0) {
    AddFinding(plan, Severity::kError, "interleaved-microbatches", std::nullopt, Axis::kPipeline,
               fmt::format("{} micro-batch{} per step is not a multiple of pp {}: the interleaved "
                           "schedule runs micro-batches in groups of pp (Megatron-LM)",
                           c.m, c.m == 1 ? "" : "es", c.pp),
               "use a global batch that gives a multiple of pp micro-batches per step, or 1f1b");
  }
  if (c.pp > 1 && c.m < c.pp) {
    AddFinding(plan, Severity::kWarning, "pipeline-microbatches", std::nullopt, Axis::kPipeline,
               fmt::format("{} micro-batch{} per step for {} pipeline stages: the bubble is "
                           "{:.0f}% of the step",
                           c.m, c.m == 1 ? "" : "es", c.pp,
                           100.0 * plan.bubble_fraction / (1 + plan.bubble_fraction)),
               "use at least as many micro-batches per step as stages (a larger global batch "
               "or a smaller micro-batch)");
  }
}

// Context parallelism splits the sequence evenly; expert parallelism splits the experts and
// the data-parallel ranks evenly.
void CheckContextAndExpertShape(const Context& c, Plan& plan) {
  if (c.cp > 1 && c.arch && c.model->transformer.seq_len % c.cp != 0) {
    AddFinding(plan, Severity::kError, "cp-divisibility", State::kActivations, Axis::kContext,
               fmt::format("cp {} does not divide seq_len {}", c.cp, c.model->transformer.seq_len),
               "use a cp that divides the sequence length");
  }
  if (c.ep > 1) {
    const int64_t experts = c.arch ? c.model->transformer.experts : 0;
    if (experts <= 1) {
      AddFinding(plan, Severity::kError, "ep-divisibility", State::kParams, Axis::kExpert,
                 fmt::format("ep {} on a dense model: expert parallelism needs experts", c.ep),
                 "set ep to 1, or use a mixture-of-experts model");
    } else if (experts % c.ep != 0) {
      AddFinding(plan, Severity::kError, "ep-divisibility", State::kParams, Axis::kExpert,
                 fmt::format("ep {} does not divide the {} experts", c.ep, experts),
                 "use an ep that divides the number of experts");
    }
    if (c.dp % c.ep != 0) {
      AddFinding(plan, Severity::kError, "ep-divisibility", std::nullopt, Axis::kExpert,
                 fmt::format("ep {} does not divide dp {}: expert-parallel groups are carved out "
                             "of the data-parallel ranks",
                             c.ep, c.dp),
                 "use an ep that divides dp");
    }
  }
}

// Hybrid shard groups divide dp; sequence parallelism needs tp.
void CheckShardingOptions(const Context& c, Plan& plan) {
  const int g = c.strategy->shard_group_size;
  if (g > 0 && (g > c.dp || c.dp % g != 0)) {
    AddFinding(plan, Severity::kError, "hybrid-shard-group", std::nullopt, Axis::kData,
               fmt::format("shard_group_size {} does not divide dp {}", g, c.dp),
               "use a shard group size that divides dp (e.g. the dp ranks of one node)");
  }
  if (c.training->sequence_parallel && c.tp == 1) {
    AddFinding(plan, Severity::kWarning, "sequence-parallel", State::kActivations, Axis::kTensor,
               "sequence parallelism is set but tp is 1: it has no effect",
               "drop sequence_parallel, or use tp > 1");
  }
}

// How the mesh, the batch and the model fit together (the placement aside).
void CheckComposition(const Context& c, Plan& plan) {
  CheckWorldAndBatch(c, plan);
  CheckTensorParallelShape(c, plan);
  CheckPipelineShape(c, plan);
  CheckContextAndExpertShape(c, plan);
  CheckShardingOptions(c, plan);
}

// The job's ranks on one node: they share its host memory and NVMe.
int64_t RanksPerNode(const Context& c) {
  return std::max<int64_t>(1, std::min<int64_t>(c.cluster->node.gpus, c.strategy->mesh.world()));
}

// The host and NVMe tiers of one device: its share of each and whether its offloaded bytes
// fit there (see MemoryBreakdown).
void SetOffDeviceTiers(const Context& c, MemoryBreakdown& mem) {
  const topology::NodeSpec& node = c.cluster->node;
  const int64_t ranks = RanksPerNode(c);
  mem.host_capacity = Bytes::Count(node.host_memory.count() / ranks);
  mem.nvme_capacity = Bytes::Count(node.nvme_capacity.count() / ranks);
  mem.fits_host = mem.offloaded_host * ranks <= node.host_memory;
  mem.fits_nvme = mem.offloaded_nvme * ranks <= node.nvme_capacity;
}

void CheckCapacities(const Context& c, Plan& plan) {
  const topology::NodeSpec& node = c.cluster->node;
  Bytes host, nvme;
  for (const RankRole& r : plan.roles) {
    host = std::max(host, r.memory.offloaded_host);
    nvme = std::max(nvme, r.memory.offloaded_nvme);
  }
  const int64_t gpus = RanksPerNode(c);
  if (host.count() > 0 && host * gpus > node.host_memory) {
    AddFinding(plan, Severity::kError, "offload-capacity", std::nullopt, std::nullopt,
               fmt::format("offloaded states need {} of host memory per node ({} x {}), "
                           "but the node has {}",
                           ToString(host * gpus), CountOf(gpus, "GPU", "GPUs"), ToString(host),
                           ToString(node.host_memory)),
               "offload less, shard over more devices, or offload to NVMe");
  }
  if (nvme.count() > 0 && node.nvme_capacity.count() > 0 && nvme * gpus > node.nvme_capacity) {
    AddFinding(plan, Severity::kError, "offload-capacity", std::nullopt, std::nullopt,
               fmt::format("offloaded states need {} of NVMe per node, but the node has {}",
                           ToString(nvme * gpus), ToString(node.nvme_capacity)),
               "offload less, or shard over more devices");
  }
  for (const RankRole& r : plan.roles) {
    if (!r.memory.fits) {
      AddFinding(plan, Severity::kWarning, "memory-fits", std::nullopt, std::nullopt,
                 fmt::format("{} need {} per device but the device has {}", r.name,
                             ToString(r.memory.total), ToString(r.memory.capacity)),
                 "shard more states, recompute activations, use a smaller micro-batch or more "
                 "devices");
    }
  }
}

bool ModeTargetsNvme(const StrategySpec& strategy, State s) {
  return OffloadTargetOf(strategy, s) == OffloadTarget::kNvme;
}

// The placement as the plan models it: as written, except that activations on tp are S
// when sequence parallelism is in effect, and activations on dp are M when full recompute is
// in effect and no axis says M already.
std::array<std::array<Placement, kNumStates>, topology::kNumAxes> EffectivePlacement(
    const StrategySpec& strategy, bool sequence_parallel, Recompute recompute) {
  auto placement = strategy.placement;
  const int act = static_cast<int>(State::kActivations);
  if (sequence_parallel) {
    placement[static_cast<int>(Axis::kTensor)][act] = Placement{Mode::kSharded};
  }
  bool materialized = false;
  for (int a = 0; a < topology::kNumAxes; ++a) {
    if (placement[a][act].mode == Mode::kMaterialized) materialized = true;
  }
  Placement& dp = placement[static_cast<int>(Axis::kData)][act];
  if (recompute == Recompute::kFull && !materialized && dp.mode == Mode::kReplicated) {
    dp = Placement{Mode::kMaterialized};
  }
  return placement;
}

// strategy.pipeline_stage_layers, when given: one entry per stage, summing to the model's
// layers, each at least one layer per model chunk (virtual_stages of them when interleaved).
void ValidateStageLayers(const ModelSpec& model, const TrainingSpec& training,
                         const StrategySpec& strategy, ErrorList& errors) {
  const std::vector<int>& split = strategy.pipeline_stage_layers;
  if (split.empty()) return;
  const topology::MeshShape& mesh = strategy.mesh;
  const int v = std::max(1, training.virtual_stages);
  int64_t sum = 0;
  bool enough = true;
  for (int n : split) {
    sum += n;
    enough &= n >= v;
  }
  const std::string value = fmt::format("[{}]", fmt::join(split, ", "));
  if (static_cast<int64_t>(split.size()) != mesh.pp) {
    errors.Add("strategy.pipeline_stage_layers", value,
               fmt::format("must have pp = {} entries, one per stage", mesh.pp));
  } else if (!enough) {
    errors.Add("strategy.pipeline_stage_layers", value,
               v == 1 ? std::string("every stage needs at least 1 layer")
                      : fmt::format("every stage needs at least virtual_stages = {} layers, one "
                                    "per model chunk",
                                    v));
  } else if (model.has_architecture() && sum != model.transformer.layers) {
    errors.Add("strategy.pipeline_stage_layers", value,
               fmt::format("sums to {}; must sum to the model's {} layers", sum,
                           model.transformer.layers));
  }
}

// The shape of a transformer: positive sizes that divide as attention needs, and routing
// settings that make sense for its experts.
void ValidateTransformer(const TransformerSpec& t, ErrorList& errors) {
  const std::pair<const char*, int64_t> positive[] = {
      {"hidden", t.hidden}, {"heads", t.heads}, {"seq_len", t.seq_len}};
  for (const auto& [field, value] : positive) {
    if (value < 1)
      errors.Add(fmt::format("model.transformer.{}", field), std::to_string(value), "must be >= 1");
  }
  if (t.vocab < 0 || t.ffn_hidden < 0 || t.kv_heads < 0 || t.experts < 0)
    errors.Add("model.transformer", "negative size",
               "vocab, ffn_hidden, kv_heads and "
               "experts must be >= 0");
  if (t.heads > 0 && t.head_dim == 0 && t.kv_lora_rank == 0 && t.hidden % t.heads != 0)
    errors.Add("model.transformer.heads", std::to_string(t.heads),
               fmt::format("must divide hidden {}", t.hidden));
  if (t.heads > 0 && t.kv_heads > 0 && t.heads % t.kv_heads != 0)
    errors.Add("model.transformer.kv_heads", std::to_string(t.kv_heads),
               fmt::format("must divide heads {}", t.heads));
  if (t.kv_lora_rank > 0 && (t.qk_rope_head_dim < 1 || t.qk_nope_head_dim < 1 || t.v_head_dim < 1))
    errors.Add("model.transformer.kv_lora_rank", std::to_string(t.kv_lora_rank),
               "multi-head latent attention needs qk_rope_head_dim, qk_nope_head_dim and "
               "v_head_dim >= 1");
  if (t.head_dim < 0 || t.expert_ffn_hidden < 0 || t.shared_experts < 0 ||
      t.first_dense_layers < 0 || t.moe_layer_interval < 0 || t.q_lora_rank < 0 ||
      t.kv_lora_rank < 0)
    errors.Add("model.transformer", "negative size",
               "head_dim, expert_ffn_hidden, shared_experts, first_dense_layers, "
               "moe_layer_interval and the MLA ranks must be >= 0");
  if (t.experts > 1 && (t.top_k < 1 || t.top_k > t.experts))
    errors.Add("model.transformer.top_k", std::to_string(t.top_k),
               fmt::format("must be between 1 and experts {}", t.experts));
  if (t.experts > 1 && !(t.capacity_factor >= 0 && std::isfinite(t.capacity_factor)))
    errors.Add("model.transformer.capacity_factor", fmt::format("{}", t.capacity_factor),
               "must be > 0, or 0 for dropless routing");
  if (!(t.routing_imbalance >= 1 && std::isfinite(t.routing_imbalance)))
    errors.Add("model.transformer.routing_imbalance", fmt::format("{}", t.routing_imbalance),
               "must be a finite number >= 1 (1 = balanced)");
  else if (t.routing_imbalance != 1 && (t.experts <= 1 || t.capacity_factor > 0))
    errors.Add("model.transformer.routing_imbalance", fmt::format("{}", t.routing_imbalance),
               t.experts <= 1 ? "applies to mixture-of-experts models only"
                              : fmt::format("applies to dropless routing (capacity_factor 0); "
                                            "with capacity_factor {} every expert computes its "
                                            "padded capacity and drops the rest",
                                            t.capacity_factor));
}

Status Validate(const ModelSpec& model, const TrainingSpec& training,
                const StrategySpec& strategy) {
  ErrorList errors;
  const topology::MeshShape& mesh = strategy.mesh;
  for (int a = 0; a < topology::kNumAxes; ++a) {
    const Axis axis = static_cast<Axis>(a);
    if (mesh.size(axis) < 1) {
      errors.Add(fmt::format("strategy.mesh.{}", AxisName(axis)), std::to_string(mesh.size(axis)),
                 "must be >= 1");
    }
  }
  if (training.micro_batch < 1)
    errors.Add("training.micro_batch", std::to_string(training.micro_batch), "must be >= 1");
  if (training.global_batch < 1)
    errors.Add("training.global_batch", std::to_string(training.global_batch), "must be >= 1");
  if (training.virtual_stages < 1)
    errors.Add("training.virtual_stages", std::to_string(training.virtual_stages), "must be >= 1");
  ValidateStageLayers(model, training, strategy, errors);
  if (strategy.layers_per_unit < 1)
    errors.Add("strategy.layers_per_unit", std::to_string(strategy.layers_per_unit),
               "must be >= 1");
  if (strategy.shard_group_size < 0)
    errors.Add("strategy.shard_group_size", std::to_string(strategy.shard_group_size),
               "must be >= 0 (0 = the whole dp axis)");
  if (!model.has_architecture()) {
    if (model.parameter_count <= 0) {
      errors.Add("model", model.name.empty() ? "\"\"" : model.name,
                 "needs an architecture (layers > 0) or a parameter_count > 0");
    }
  } else {
    ValidateTransformer(model.transformer, errors);
  }
  return errors.ToStatus();
}

// True when some axis places activations as M (rebuilt by recomputation).
bool ActivationsMaterialized(const StrategySpec& strategy) {
  for (int a = 0; a < topology::kNumAxes; ++a) {
    if (strategy.placement[a][static_cast<int>(State::kActivations)].mode == Mode::kMaterialized)
      return true;
  }
  return false;
}

// Everything the stages share, derived once from validated inputs. The pointers alias the
// arguments, which must outlive the Context.
Context MakeContext(const ModelSpec& model, const TrainingSpec& training,
                    const StrategySpec& strategy, const topology::ClusterSpec& cluster,
                    const AnalyzeOptions& options) {
  Context c;
  c.model = &model;
  c.training = &training;
  c.strategy = &strategy;
  c.cluster = &cluster;
  c.options = options;
  c.options.prefetch_depth = std::max(0, options.prefetch_depth);
  const topology::MeshShape& mesh = strategy.mesh;
  c.dp = mesh.dp;
  c.tp = mesh.tp;
  c.pp = mesh.pp;
  c.cp = mesh.cp;
  c.ep = mesh.ep;
  c.v = c.pp > 1 ? training.virtual_stages : 1;
  c.arch = model.has_architecture();
  if (c.arch) {
    c.params = CountParameters(model.transformer);
    std::vector<int64_t> stage_layers;
    for (int i = 0; i < c.pp; ++i) stage_layers.push_back(StageLayers(c, i));
    c.chunks = PipelineChunkLayers(stage_layers, c.v);
  }
  c.bpp = BytesPerParameter(training);
  c.m = std::max<int64_t>(1, training.global_batch / (training.micro_batch * c.dp));
  c.s_local = c.arch ? CeilDiv(model.transformer.seq_len, c.cp) : 0;
  const Mode tp_act = strategy.at(Axis::kTensor, State::kActivations).mode;
  c.sp = c.tp > 1 &&
         (training.sequence_parallel || tp_act == Mode::kSharded || tp_act == Mode::kShardedGather);
  c.recompute = training.recompute;
  if (ActivationsMaterialized(strategy) && c.recompute == Recompute::kNone) {
    c.recompute = Recompute::kFull;
  }
  const int g = strategy.shard_group_size;
  c.shard_group = (g > 0 && g <= c.dp && c.dp % g == 0) ? g : c.dp;
  c.reshard = options.reshard_after_forward.value_or(true);
  // DeepSpeed's re-fetch after recompute: per-parameter gathers of a dense model under full
  // recompute, with a reuse distance (the scenario's, else the preset's framework's). Only S*
  // parameters are gathered, which AddDataParallelComm checks.
  const FrameworkOverheads framework = FrameworkDefaults(strategy.name);
  const bool per_parameter =
      options.gather_per_parameter.value_or(framework.gather == GatherGranularity::kPerParameter);
  const std::optional<int64_t> reuse = options.max_reuse_distance.has_value()
                                           ? options.max_reuse_distance
                                           : framework.max_reuse_distance;
  if (c.arch && c.reshard && reuse.has_value() && per_parameter && model.transformer.experts <= 1 &&
      c.recompute == Recompute::kFull && !c.Offloaded(State::kParams)) {
    c.refetch = RefetchAfterRecompute(model.transformer, c.tp, *reuse);
  }
  if (c.cp > 1) {
    c.cp_joins_dp = true;
    for (State s : kModelStates) {
      if (strategy.at(Axis::kContext, s).mode != strategy.at(Axis::kData, s).mode)
        c.cp_joins_dp = false;
    }
  }
  return c;
}

// The plan's scenario-wide figures: the echo of its inputs, FLOPs, the bubble, and the notes
// on what the model leaves out.
Plan PlanHeader(const Context& c) {
  const ModelSpec& model = *c.model;
  const TrainingSpec& training = *c.training;
  const StrategySpec& strategy = *c.strategy;
  Plan plan;
  plan.model_name = model.name;
  plan.strategy_name = strategy.name;
  plan.mesh = strategy.mesh;
  plan.placement = EffectivePlacement(strategy, c.sp, c.recompute);
  plan.training = training;
  plan.world = strategy.mesh.world();
  plan.cluster_devices = int64_t{c.cluster->nodes} * c.cluster->node.gpus;
  plan.parameter_count = ParameterCount(model);
  plan.has_architecture = c.arch;
  plan.micro_batches = c.m;
  plan.effective_recompute = c.recompute;
  plan.effective_sequence_parallel = c.sp;
  if (c.arch) {
    plan.flops_per_iteration =
        ModelFlopsPerIteration(model.transformer, training.global_batch, c.recompute);
  }
  if (c.pp > 1) {
    const bool interleaved = training.pipeline_schedule == PipelineSchedule::kInterleaved1F1B;
    plan.bubble_fraction =
        static_cast<double>(c.pp - 1) / static_cast<double>((interleaved ? c.v : 1) * c.m);
  }
  if (!c.arch) {
    plan.notes.push_back(
        "bare parameter count: model states only; activations, gather and staging buffers and "
        "tensor/pipeline/context/expert traffic need an architecture");
  }
  if (ActivationsMaterialized(strategy) && training.recompute == Recompute::kNone) {
    plan.notes.push_back("activations are M: full recompute assumed");
  }
  if (ModeTargetsNvme(strategy, State::kOptimizer)) {
    plan.notes.push_back(
        "optimizer on NVMe: the host-side NVMe swap of optimizer state at "
        "each step is not listed among the device copies");
  }
  if (c.arch && model.transformer.experts > 1) {
    plan.notes.push_back(
        "FLOPs use Narayanan eq. 3 over the model's shapes, each token's expert MLP counted "
        "top_k times (x capacity_factor when set), plus the router");
  }
  return plan;
}

// One role per stage, identical neighbours merged; then each role's name and memory totals
// against the device's HBM, and the largest role.
void BuildRoles(const Context& c, Plan& plan) {
  for (int i = 0; i < c.pp; ++i) {
    RankRole r = BuildStage(c, i);
    if (!plan.roles.empty() && SameRole(plan.roles.back(), r)) {
      plan.roles.back().last_stage = i;
      plan.roles.back().ranks += r.ranks;
    } else {
      plan.roles.push_back(std::move(r));
    }
  }
  const Bytes capacity = c.cluster->node.gpu.hbm_capacity;
  for (size_t k = 0; k < plan.roles.size(); ++k) {
    RankRole& r = plan.roles[k];
    r.name = RoleName(c, r);
    MemoryBreakdown& mem = r.memory;
    mem.total = mem.params + mem.grads + mem.optimizer + mem.activations + mem.gather_buffers +
                mem.offload_staging;
    mem.capacity = capacity;
    mem.headroom = capacity - mem.total;
    mem.fits = mem.total <= capacity;
    SetOffDeviceTiers(c, mem);
    if (mem.total > plan.roles[static_cast<size_t>(plan.largest_role)].memory.total)
      plan.largest_role = static_cast<int>(k);
  }
}

// Byte counts are saturating (base/units.h): one that reached Bytes::Overflow() came from
// inputs whose product leaves int64. Names the figure and the fields it grows with.
Status CheckSizesFit(const Plan& plan) {
  constexpr const char* kActivationFields =
      "model.seq_len, training.micro_batch, model.hidden, model.layers";
  for (const RankRole& r : plan.roles) {
    const MemoryBreakdown& m = r.memory;
    const std::pair<const char*, Bytes> memory[] = {
        {"params (model.layers, model.hidden, model.vocab, model.experts)", m.params},
        {"grads (model.layers, model.hidden, model.vocab, model.experts)", m.grads},
        {"optimizer (model.layers, model.hidden, model.vocab, model.experts)", m.optimizer},
        {"activations", m.activations},
        {"gather buffers (model.hidden, model.ffn_hidden, strategy.layers_per_unit)",
         m.gather_buffers},
        {"total", m.total}};
    for (const auto& [what, bytes] : memory) {
      if (!bytes.overflowed()) continue;
      return InvalidArgumentError(
          fmt::format("memory per device ({}): {} exceeds 2^63 bytes; it grows with {}", r.name,
                      what, kActivationFields));
    }
    for (const Collective& c : r.collectives) {
      if (!c.total_bytes.overflowed() && !c.bytes_per_call.overflowed()) continue;
      return InvalidArgumentError(fmt::format(
          "communication per device per step ({}): {} over {} exceeds 2^63 bytes; it grows "
          "with training.global_batch, {}, model.capacity_factor and model.top_k",
          r.name, CollectiveKindName(c.kind), AxisName(c.axis), kActivationFields));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Plan> Analyze(const ModelSpec& model, const TrainingSpec& training,
                       const StrategySpec& strategy, const topology::ClusterSpec& cluster,
                       const AnalyzeOptions& options) {
  RETURN_IF_ERROR(Validate(model, training, strategy));
  const Context c = MakeContext(model, training, strategy, cluster, options);
  Plan plan = PlanHeader(c);
  BuildRoles(c, plan);
  CheckPlacement(c, plan);
  CheckComposition(c, plan);
  CheckCapacities(c, plan);
  RETURN_IF_ERROR(CheckSizesFit(plan));
  return plan;
}

}  // namespace placesim::strategies
