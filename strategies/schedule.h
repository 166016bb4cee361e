// Step schedules: the hardware-agnostic work of one training step, one Schedule (a DAG of
// plain ops, strategies/schedule/ops.h) per pipeline stage, for the executor to replay.
// Generated for the data-parallel family on dp (DDP, ZeRO-1/2/3, FSDP, hybrid sharding,
// ZeRO-Offload, ZeRO-Infinity) composed with Megatron tensor parallelism (with or without
// sequence parallelism) on tp, pipeline parallelism (GPipe, 1F1B, interleaved 1F1B) on pp,
// context parallelism (ring attention or all-gather) on cp and, for mixture-of-experts models,
// expert parallelism on ep. Every rank of a stage plays the same role, so one schedule
// describes them all; stages exchange activations through matched send / receive ops.
// docs/schedule.md derives what a step holds, axis by axis, and maps the files that build it.
//
// Invariants of the result (tests/strategies/schedule_test.cc, against Analyze's plan):
//   - deps point backwards (index order is a topological order); each stream runs in order.
//   - static allocs equal the plan's memory per state to the byte; live activations peak at
//     the plan's figure; every Free names its Alloc; only static allocs outlive the step.
//   - collective bytes per (kind, state, axis) equal the plan's; compute FLOPs x tp x cp x dp,
//     over the stages, equal Plan::flops_per_iteration.
//   - every kRecv matches one send of its peer stage.
// Units: Flops and Bytes (base/units.h); no durations. Thread-safety: plain values;
// BuildSchedules is a pure function of its inputs.
#ifndef PLACESIM_STRATEGIES_SCHEDULE_H_
#define PLACESIM_STRATEGIES_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "strategies/analyzer.h"
#include "strategies/plan.h"
#include "strategies/schedule/ops.h"
#include "strategies/spec.h"
#include "topology/spec.h"

namespace placesim::strategies {

// The most ops one schedule may hold. A step's ops grow with micro-batches × (layers + units
// + gradient buckets); past this the schedule and its replay would take gigabytes and
// minutes, so BuildSchedules refuses it up front (kOutOfRange) instead of building it.
// Real jobs stay far below: 126 layers × 512 micro-batches is about half a million ops.
inline constexpr int64_t kMaxScheduleOps = int64_t{1} << 22;  // 4,194,304

// How a framework all-gathers one gathered unit (ZeRO-3 / FSDP): the unit's flat parameter in
// one collective (FSDP), or one collective per weight matrix of each of its layers (DeepSpeed
// ZeRO-3, whose module hooks fetch parameter by parameter; the norms and biases, below
// stage3_param_persistence_threshold, ride along with the matrices here). The bytes are the
// same either way; the count of collectives, and so the per-call latency paid, is not.
enum class GatherGranularity : uint8_t { kPerUnit, kPerParameter };
const char* GatherGranularityName(GatherGranularity g);  // "per-unit", "per-parameter"

// What a training framework adds to a schedule beyond the placement (docs/overheads.md).
struct FrameworkOverheads {
  GatherGranularity gather = GatherGranularity::kPerUnit;
  // Gradient reduction beside the backward (true), or not: the backward waits for each
  // reduce-scatter of sharded gradients, and replicated gradients are reduced after the
  // stage's last backward op (false).
  bool overlap_grad_reduce = true;
  // Pipeline exchanges as rendezvous (Megatron-LM's batched isend / irecv, waited for;
  // DeepSpeed's blocking send / recv): a pipeline send runs on the compute stream, its
  // transfer starts once the receiving stage has reached its receive, and each stage's
  // compute waits for every transfer posted with it. false: sends on the p2p stream as soon
  // as their data is ready (PyTorch's own async p2p).
  bool blocking_p2p = false;
  // Megatron-LM's training arguments default overlap_p2p_comm to true for the interleaved
  // schedule and force it off for the others (megatron/training/arguments.py,
  // --no-overlap-p2p-communication); with it the sends and receives are neither batched nor
  // waited for before the next pass. So blocking_p2p holds only outside interleaved 1F1B.
  bool overlap_p2p_interleaved = false;
  // Gradient buckets sized as Megatron-LM's DDP sizes them (GradientBucket) instead of
  // PyTorch DDP's fixed bucket_cap_mb of 25 MiB.
  bool megatron_buckets = false;
  // DeepSpeed ZeRO-3's stage3_max_reuse_distance, in parameter elements: under full
  // recompute with per-parameter gathers, the weight matrices whose backward lies at least
  // this many fetched elements after their recompute are released and gathered again
  // (LayerRefetch). Unset: parameters are never released between recompute and backward.
  std::optional<int64_t> max_reuse_distance;
};

// stage3_max_reuse_distance's documented default, 1e9 elements (deepspeed.ai/docs/config-json).
inline constexpr int64_t kDeepSpeedMaxReuseDistance = 1'000'000'000;

// The defaults of the framework a strategy preset stands for: DeepSpeed for zero2, zero3,
// zero-offload and zero-infinity* (per-parameter fetch under ZeRO-3; overlap_comm false, its
// documented default; stage3_max_reuse_distance 1e9); Megatron-LM for megatron and zero1 (its
// distributed optimizer; overlap_grad_reduce false, its default: gradients reduced after the
// backward; its own gradient bucket sizes); both frameworks' pipeline exchanges block
// (blocking_p2p; Megatron-LM's not under interleaved 1F1B); PyTorch FSDP and DDP for the
// others (one flat parameter per unit, gradient reduction on its own stream during the
// backward). An unknown or "custom" name gets the latter. O(1).
FrameworkOverheads FrameworkDefaults(std::string_view strategy_preset);

// A gradient bucket that holds a rank's whole gradient (1 PiB, beyond any rank's): the
// data-parallel sync then starts after the last backward, overlapping none of it.
inline constexpr Bytes kWholeGradientBucket = Bytes::Count(int64_t{1} << 50);

// PyTorch DDP's bucket_cap_mb = 25: the bucket of every framework but Megatron-LM.
inline constexpr Bytes kDefaultGradientBucket = MiB(25);

// The gradient bucket a schedule uses: `set` when given (>= 1 byte), else the framework
// default of the strategy's preset. Megatron-LM (megatron, zero1): without
// overlap_grad_reduce the whole gradient buffer is one bucket (kWholeGradientBucket); with
// it, max(40,000,000, 1,000,000 x dp) parameters of the gradient dtype the schedule reduces
// (BytesPerParameter(training).grads). Every other preset: kDefaultGradientBucket.
// `overlap_grad_reduce` unset is the preset's default. O(1).
Bytes GradientBucket(std::optional<Bytes> set, const StrategySpec& strategy,
                     const TrainingSpec& training, std::optional<bool> overlap_grad_reduce);

// The weight matrices of one transformer layer in the order its forward uses them, in
// elements before any sharding: the fused Q/K/V projection, the output projection, and the
// MLP's two (three when gated) matrices. Multi-latent attention is counted as plain
// projections of its head width; the norms and biases are left out. O(1).
std::vector<int64_t> LayerWeightMatrices(const TransformerSpec& t);

// What DeepSpeed ZeRO-3 gathers again for a dense layer's backward after its full recompute
// (docs/overheads.md, "Re-fetch after recompute"). Its PartitionedParameterCoordinator
// releases a module's parameters after use unless they recur within max_reuse_distance
// elements of the modules traced next. Between a layer's recompute forward and its backward
// the trace is M_1 .. M_k (recompute) then M_k .. M_1 (backward), so matrix i recurs after
// D_i = 2 x (s_{i+1} + ... + s_k) elements, s_j the tp rank's elements of matrix j; it is
// released, and fetched again, when D_i >= max_reuse_distance.
struct LayerRefetch {
  std::vector<int64_t> matrices;  // the re-fetched matrices' elements, forward order
  int64_t refetched = 0;          // their sum
  int64_t total = 0;              // the sum over all of the layer's matrices
  // The share of a layer's gathered bytes that is gathered again:
  // floor(layer_bytes x refetched / total). Plan and schedule both count it this way.
  Bytes Of(Bytes layer_bytes) const;
};
// REQUIRES: tp >= 1, max_reuse_distance >= 0. O(1).
LayerRefetch RefetchAfterRecompute(const TransformerSpec& t, int64_t tp,
                                   int64_t max_reuse_distance);

struct ScheduleOptions {
  // Gradient bucket size (PyTorch DDP bucket_cap_mb = 25, i.e. 25 MiB; DeepSpeed's
  // reduce_bucket_size plays the same role for ZeRO-1/2). Must be >= 1 byte. Unset: the
  // framework's (GradientBucket).
  std::optional<Bytes> bucket_bytes = std::nullopt;
  // Units gathered ahead of the one in use under S* or streamed under O (as AnalyzeOptions).
  int prefetch_depth = 1;
  // Replicated gradients: synchronize after every micro-batch instead of only after the last
  // (DDP without no_sync).
  bool sync_grads_every_micro_batch = false;
  // Tensor-parallel communication overlapped with compute (Megatron-LM's --tp-comm-overlap,
  // Transformer Engine's chunked GEMMs): each tensor-parallel block runs in tp chunks of its
  // sequence. Under sequence parallelism the chunks' all-gathers are issued first, each chunk
  // computes as soon as its own has arrived, and each chunk's reduce-scatter follows its
  // compute; without it, each chunk's all-reduce follows its compute. The next block waits
  // for the last chunk's collective, so only the first all-gather and the last closing
  // collective stay exposed. Volumes are unchanged (tp collectives of 1/tp the buffer each).
  // Blocks holding ring attention (cp > 1) are not chunked.
  bool tp_comm_overlap = false;
  // The most ops one stage's schedule may hold, in [1, kMaxScheduleOps]:
  // past it BuildSchedules refuses the step (kOutOfRange). Smaller limits make a caller fold
  // long steps sooner (sim/study/fold.h); tests use them to force folding.
  int64_t max_ops = kMaxScheduleOps;
  // Framework overheads; unset = FrameworkDefaults(strategy.name).
  std::optional<GatherGranularity> gather_granularity = std::nullopt;
  std::optional<bool> overlap_grad_reduce = std::nullopt;
  std::optional<bool> blocking_p2p = std::nullopt;
  // DeepSpeed ZeRO-3's stage3_max_reuse_distance in elements, >= 0 (FrameworkOverheads).
  std::optional<int64_t> max_reuse_distance = std::nullopt;
  // Gathered parameters freed after each unit's forward (true, FSDP FULL_SHARD) or held until
  // its backward in the same micro-batch (false, SHARD_GRAD_OP; pp = 1 only, CheckScope).
  // Unset: true.
  std::optional<bool> reshard_after_forward = std::nullopt;
};

// Whether `status` is BuildSchedules' refusal of a step over options.max_ops (and not another
// kOutOfRange, such as the executor's trace limit): the cue for a caller to fold the step.
bool IsOpLimitRefusal(const Status& status);

// One schedule per pipeline stage, in stage order (one when pp = 1), every kRecv's match set.
// Errors: kInvalidArgument for inputs Analyze rejects or a set bucket_bytes < 1 byte;
// kFailedPrecondition, naming the reason, for what is not generated (docs/schedule.md,
// "Scope": an axis whose model states are not sliced on it, cp states placed unlike dp's,
// ep > 1 with offloaded states or hybrid shard groups, M / O activations on tp, offloaded or
// dp-sharded activations, no architecture, correctness errors); kOutOfRange, with the count and
// what reduces it, when a stage could exceed options.max_ops; kInternal when a collective has
// no counterpart in the plan (a bug). The cluster serves Analyze only; no duration is derived.
// Complexity: Analyze, then O(ops) per stage (ops ~ m x (layers + units) + buckets x syncs),
// O(ops log ops) to match receives; memory reserved up front at the stage's op bound.
StatusOr<std::vector<Schedule>> BuildSchedules(const ModelSpec& model, const TrainingSpec& training,
                                               const StrategySpec& strategy,
                                               const topology::ClusterSpec& cluster,
                                               const ScheduleOptions& options = {});

// The analyze options a schedule built with `options` agrees with (its prefetch depth, gather
// granularity and reuse distance).
AnalyzeOptions ScheduleAnalyzeOptions(const ScheduleOptions& options);

// BuildSchedules for a caller that already holds the plan, so a simulation analyzes once.
// REQUIRES: `plan` is Analyze(model, training, strategy, cluster, ScheduleAnalyzeOptions(options))
// for the same inputs; the schedule's volumes are taken from it. Errors as BuildSchedules',
// less Analyze's own.
StatusOr<std::vector<Schedule>> BuildSchedulesForPlan(const ModelSpec& model,
                                                      const TrainingSpec& training,
                                                      const StrategySpec& strategy,
                                                      const Plan& plan,
                                                      const ScheduleOptions& options = {});

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_SCHEDULE_H_
