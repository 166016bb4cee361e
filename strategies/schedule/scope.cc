// What BuildSchedules generates (CheckScope) and how large a stage may grow (BoundOps).
// Both run before anything is allocated per op. Thread-safety: pure functions.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <string_view>
#include <vector>

#include "strategies/cost/arith.h"
#include "strategies/schedule.h"
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies {
namespace {
// The opening of BoundOps' refusal, by which IsOpLimitRefusal knows it.
constexpr std::string_view kOpLimitOpening = "the step's schedule would need up to";
}  // namespace

bool IsOpLimitRefusal(const Status& status) {
  return status.code() == StatusCode::kOutOfRange &&
         std::string_view(status.message()).starts_with(kOpLimitOpening);
}

namespace schedule_internal {

using cost::CeilDiv;
using topology::Axis;

namespace {

// Expert parallelism: ep groups carved out of dp, expert gradients synchronized over the
// dp / ep ranks that hold the same experts. Generated for model states on the device (DDP,
// ZeRO-1/2/3, FSDP) in shard groups of all of dp.
Status CheckExpertScope(const StrategySpec& strategy) {
  const topology::MeshShape& mesh = strategy.mesh;
  const Mode theta = strategy.at(Axis::kData, State::kParams).mode;
  const Mode grads = strategy.at(Axis::kData, State::kGrads).mode;
  const Mode omega = strategy.at(Axis::kData, State::kOptimizer).mode;
  const bool sharded_dp = IsShardedMode(theta) || IsShardedMode(grads) || IsShardedMode(omega);
  const bool offloaded =
      theta == Mode::kOffloaded || grads == Mode::kOffloaded || omega == Mode::kOffloaded;
  const bool hybrid =
      sharded_dp && strategy.shard_group_size > 0 && strategy.shard_group_size < mesh.dp;
  if (mesh.dp > 1 && (offloaded || hybrid)) {
    return FailedPreconditionError(fmt::format(
        "ep={} with params {}, grads {}, optimizer {} on dp (shard group {}): expert-parallel "
        "schedules are generated for model states on the device, replicated or sharded over "
        "all of dp (DDP, ZeRO-1/2/3, FSDP without hybrid groups) only",
        mesh.ep, ModeSymbol(theta), ModeSymbol(grads), ModeSymbol(omega),
        strategy.shard_group_size));
  }
  return OkStatus();
}

// Context parallelism: the sequence split on cp, and the model states placed on cp as on dp,
// so that gradients and shards are synchronized over dp x cp.
Status CheckContextScope(const StrategySpec& strategy) {
  for (State st : {State::kParams, State::kOptimizer, State::kGrads}) {
    if (strategy.at(Axis::kContext, st).mode != strategy.at(Axis::kData, st).mode) {
      return FailedPreconditionError(fmt::format(
          "{} {} on cp but {} on dp: context-parallel schedules are generated for model "
          "states placed on cp as on dp (synchronized over dp x cp) only",
          StateName(st), ModeSymbol(strategy.at(Axis::kContext, st).mode),
          ModeSymbol(strategy.at(Axis::kData, st).mode)));
    }
  }
  const Mode act = strategy.at(Axis::kContext, State::kActivations).mode;
  if (act != Mode::kSharded) {
    return FailedPreconditionError(fmt::format(
        "activations {} on cp: context-parallel schedules split the sequence (S on cp) only",
        ModeSymbol(act)));
  }
  return OkStatus();
}

// Θ, Ω and G must be sliced (S) on an axis that splits the model: each pipeline stage holds
// its own layers; each tp rank its Megatron slice; each ep rank its experts.
Status RequireSliced(const StrategySpec& strategy, Axis axis, const char* what) {
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
}

// Activations: whole (R) or sequence-parallel (S, or S* read as S) on tp; R or M on dp.
Status CheckActivationScope(const StrategySpec& strategy) {
  const Mode tp_act = strategy.at(Axis::kTensor, State::kActivations).mode;
  if (strategy.mesh.tp > 1 && (tp_act == Mode::kOffloaded || tp_act == Mode::kMaterialized)) {
    return FailedPreconditionError(fmt::format(
        "activations {} on tp: schedules are generated for R or S (sequence parallel) only",
        ModeSymbol(tp_act)));
  }
  const Mode act = strategy.at(Axis::kData, State::kActivations).mode;
  if (strategy.mesh.dp > 1 &&
      (act == Mode::kOffloaded || act == Mode::kSharded || act == Mode::kShardedGather)) {
    return FailedPreconditionError(
        fmt::format("activations {} on dp: schedules are generated for R or M activations only",
                    ModeSymbol(act)));
  }
  return OkStatus();
}

}  // namespace

Status CheckScope(const ModelSpec& model, const StrategySpec& strategy, const Plan& plan,
                  const ScheduleOptions& options) {
  const topology::MeshShape& mesh = strategy.mesh;
  if (mesh.ep > 1) RETURN_IF_ERROR(CheckExpertScope(strategy));
  if (mesh.cp > 1) RETURN_IF_ERROR(CheckContextScope(strategy));
  if (mesh.pp > 1) RETURN_IF_ERROR(RequireSliced(strategy, Axis::kPipeline, "pipeline"));
  if (mesh.ep > 1) RETURN_IF_ERROR(RequireSliced(strategy, Axis::kExpert, "expert-parallel"));
  if (!model.has_architecture()) {
    return FailedPreconditionError(
        "a schedule needs the model's architecture (layers, hidden, ...); a bare parameter "
        "count supports `analyze` only");
  }
  if (mesh.tp > 1) RETURN_IF_ERROR(RequireSliced(strategy, Axis::kTensor, "tensor-parallel"));
  RETURN_IF_ERROR(CheckActivationScope(strategy));
  if (!plan.ok()) {
    std::vector<std::string> rules;
    for (const Finding& f : plan.findings) {
      if (f.severity == Severity::kError) rules.push_back(f.rule);
    }
    return FailedPreconditionError(
        fmt::format("the placement breaks correctness rules ({}); see `placesim analyze`",
                    fmt::join(rules, ", ")));
  }
  if (options.bucket_bytes.has_value() && options.bucket_bytes->count() < 1) {
    return InvalidArgumentError(
        fmt::format("bucket_bytes {}: must be >= 1 byte", options.bucket_bytes->count()));
  }
  if (options.reshard_after_forward == false && mesh.pp > 1) {
    return InvalidArgumentError(fmt::format(
        "reshard_after_forward false with pp={}: parameters held from forward to backward are "
        "modelled without pipeline parallelism only",
        mesh.pp));
  }
  if (options.max_ops < 1 || options.max_ops > kMaxScheduleOps) {
    return InvalidArgumentError(
        fmt::format("max_ops {}: must be between 1 and {}", options.max_ops, kMaxScheduleOps));
  }
  return OkStatus();
}

Status BoundOps(StepContext& c) {
  // The bound counts the most ops each piece can emit (the builder's loops); doubles, because
  // micro-batches x buckets can pass 2^63. Per micro-batch: per layer alloc + forward, and
  // alloc + recompute + 2 backward + 2 frees; per unit up to 2 gathers of 3 ops, a gradient
  // alloc and a sync of 4; embedding and output layer 9; per chunk pass a send and a receive
  // each way. With tp > 1 a layer's forward, recompute and backward-input are two blocks each
  // (3 more ops) with up to 2 tp collectives per block (12), and the embedding up to 2. Per
  // bucket sync: alloc + 4 (every micro-batch when the gradients are sharded or synchronized
  // each micro-batch). With cp > 1 a layer's three attention passes add up to 3 (cp - 1) ring
  // exchanges and parts. Per-parameter gathers split each unit's two gathers into up to
  // kMaxGatherParts per layer, and a re-fetch after full recompute adds as many again; a
  // distributed saved input, one all-gather per layer and micro-batch. The step:
  // allocs, optimizer, per part a copy back and an all-gather.
  const int64_t tp = c.tp;
  const int64_t vh = c.model->transformer.vocab * c.model->transformer.hidden;
  const int64_t layer_elements =
      std::max(c.pc.layer_elements, c.mixed ? c.pc_dense.layer_elements : 0);
  const int64_t most_local = c.max_stage_layers * layer_elements + CeilDiv(c.p.embedding, tp) +
                             CeilDiv(std::max(c.p.head, vh), tp) + c.p.final_norm;
  const int64_t bucket_count = c.t_gather ? 0 : CeilDiv(most_local, c.per_bucket);
  const auto L = static_cast<double>(c.max_stage_layers);
  const double U =
      2.0 + static_cast<double>(c.v * CeilDiv(CeilDiv(c.max_stage_layers, c.v), c.lpu));
  const auto M = static_cast<double>(c.m);
  const auto K = static_cast<double>(bucket_count);
  const bool each = c.g_sharded || c.host_grads || c.options->sync_grads_every_micro_batch;
  const double per_layer =
      (tp > 1 ? 23.0 : 8.0) + 9.0 * static_cast<double>(c.cp - 1) + (c.moe ? 15.0 : 0.0) +
      (c.options->tp_comm_overlap ? 18.0 * static_cast<double>(tp) : 0.0) +
      (c.gather_per_parameter ? 2.0 * kMaxGatherParts : 0.0) +
      (c.refetch.matrices.empty() ? 0.0 : kMaxGatherParts) + (c.distribute_saved ? 1.0 : 0.0);
  const double bound = M * (per_layer * L + 11.0 * U + 11.0 + 4.0 * c.v) +
                       (K + 1.0) * 5.0 * (each ? M : 1.0) + 2.0 * (K + 1.0 + U) + 20.0;
  c.ops_bound = bound;
  const int64_t limit = c.options->max_ops;
  if (bound <= static_cast<double>(limit)) return OkStatus();
  const std::string buckets_part =
      c.t_gather ? std::string()
                 : fmt::format(", {} gradient buckets of {} elements", bucket_count, c.per_bucket);
  return OutOfRangeError(fmt::format(
      "{} {:.0f} ops ({} micro-batches × {} layers{}); "
      "the limit is {}: use fewer micro-batches (global_batch / (micro_batch × dp)){} layers{}",
      kOpLimitOpening, bound, c.m, c.max_stage_layers, buckets_part, limit,
      c.t_gather ? " or fewer" : ", fewer", c.t_gather ? "" : " or larger gradient buckets"));
}

}  // namespace schedule_internal
}  // namespace placesim::strategies
