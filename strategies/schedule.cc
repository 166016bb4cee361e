// BuildSchedules: analyze the scenario for the plan the schedule must agree with, refuse what
// is out of scope or too large, build each pipeline stage's schedule (StageBuilder,
// strategies/schedule/internal/stage_builder.h), then match the stages' receives to their sends.
// Thread-safety: a pure function.
#include "strategies/schedule.h"

#include <algorithm>
#include <vector>

#include "strategies/analyzer.h"
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies {

StatusOr<std::vector<Schedule>> BuildSchedules(const ModelSpec& model, const TrainingSpec& training,
                                               const StrategySpec& strategy,
                                               const topology::ClusterSpec& cluster,
                                               const ScheduleOptions& options) {
  ASSIGN_OR_RETURN(const Plan plan,
                   Analyze(model, training, strategy, cluster, ScheduleAnalyzeOptions(options)));
  return BuildSchedulesForPlan(model, training, strategy, plan, options);
}

const char* GatherGranularityName(GatherGranularity g) {
  return g == GatherGranularity::kPerParameter ? "per-parameter" : "per-unit";
}

FrameworkOverheads FrameworkDefaults(std::string_view strategy_preset) {
  // DeepSpeed: zero_optimization.overlap_comm defaults to false (deepspeed.ai/docs/config-json,
  // "overlap_comm"); ZeRO-3 fetches each parameter above stage3_param_persistence_threshold in
  // its module's pre-forward hook (deepspeed/runtime/zero/partitioned_param_coordinator.py).
  const bool deepspeed = strategy_preset == "zero2" || strategy_preset == "zero3" ||
                         strategy_preset == "zero-offload" ||
                         strategy_preset.starts_with("zero-infinity");
  // Megatron-LM: DistributedDataParallelConfig.overlap_grad_reduce defaults to false
  // (megatron/core/distributed/distributed_data_parallel_config.py); finish_grad_sync then
  // reduces the gradient buffer after the last micro-batch's backward.
  // Its DDP also sizes the gradient buckets itself (GradientBucket). Both frameworks block on
  // their pipeline exchanges: Megatron-LM waits for its batch_isend_irecv and synchronizes
  // (batch_p2p_comm, batch_p2p_sync default true in model_parallel_config.py); DeepSpeed's
  // pipeline engine sends and receives synchronously (runtime/pipe/p2p.py). Megatron-LM's
  // training arguments turn overlap_p2p_comm (and so batch_p2p_comm off) on for the
  // interleaved schedule only (megatron/training/arguments.py).
  const bool megatron = strategy_preset == "megatron" || strategy_preset == "zero1";
  if (megatron) {
    return FrameworkOverheads{.overlap_grad_reduce = false,
                              .blocking_p2p = true,
                              .overlap_p2p_interleaved = true,
                              .megatron_buckets = true,
                              .max_reuse_distance = std::nullopt};
  }
  if (!deepspeed) return FrameworkOverheads{};
  // stage3_max_reuse_distance (default 1e9) is read by the ZeRO-3 coordinator, which the
  // per-parameter gathers of the other DeepSpeed stages never reach.
  return FrameworkOverheads{.gather = GatherGranularity::kPerParameter,
                            .overlap_grad_reduce = false,
                            .blocking_p2p = true,
                            .max_reuse_distance = kDeepSpeedMaxReuseDistance};
}

Bytes GradientBucket(std::optional<Bytes> set, const StrategySpec& strategy,
                     const TrainingSpec& training, std::optional<bool> overlap_grad_reduce) {
  if (set.has_value()) return *set;
  const FrameworkOverheads framework = FrameworkDefaults(strategy.name);
  if (!framework.megatron_buckets) return kDefaultGradientBucket;
  // Megatron-LM's DistributedDataParallel: DistributedDataParallelConfig.bucket_size unset
  // resolves to max(40000000, 1000000 * dp_size) parameters ("larger DP sizes need larger
  // buckets to ensure collectives do not become latency-bound"), and to None, one bucket for
  // the whole buffer, without overlap_grad_reduce (megatron/core/distributed/
  // distributed_data_parallel.py and distributed_data_parallel_config.py; docs/overheads.md).
  if (!overlap_grad_reduce.value_or(framework.overlap_grad_reduce)) return kWholeGradientBucket;
  const int64_t params = std::max<int64_t>(40'000'000, int64_t{1'000'000} * strategy.mesh.dp);
  return Bytes::Count(params * BytesPerParameter(training).grads);
}

std::vector<int64_t> LayerWeightMatrices(const TransformerSpec& t) {
  const int64_t h = t.hidden;
  const int64_t a = t.heads;
  const int64_t d = t.head_dim > 0 ? t.head_dim : h / std::max<int64_t>(1, a);
  const int64_t kv = t.kv_heads > 0 ? t.kv_heads : a;
  const int64_t f = t.ffn_hidden > 0 ? t.ffn_hidden : 4 * h;
  std::vector<int64_t> m = {h * (a * d + 2 * kv * d), a * d * h, h * f, f * h};
  // A gated MLP's gate, up and down projections are the same size, so their order does not
  // change any distance below.
  if (t.gated_mlp) m.push_back(h * f);
  return m;
}

Bytes LayerRefetch::Of(Bytes layer_bytes) const {
  if (total <= 0) return Bytes::Zero();
  return Bytes::Count(
      static_cast<int64_t>(static_cast<__int128>(layer_bytes.count()) * refetched / total));
}

LayerRefetch RefetchAfterRecompute(const TransformerSpec& t, int64_t tp,
                                   int64_t max_reuse_distance) {
  const std::vector<int64_t> m = LayerWeightMatrices(t);
  LayerRefetch out;
  // after: the tp rank's elements of the matrices used after matrix i in the forward.
  int64_t after = 0;
  std::vector<bool> released(m.size(), false);
  for (size_t i = m.size(); i-- > 0;) {
    released[i] = 2 * after >= max_reuse_distance;
    after += m[i] / std::max<int64_t>(1, tp);
  }
  for (size_t i = 0; i < m.size(); ++i) {
    out.total += m[i];
    if (!released[i]) continue;
    out.matrices.push_back(m[i]);
    out.refetched += m[i];
  }
  return out;
}

AnalyzeOptions ScheduleAnalyzeOptions(const ScheduleOptions& options) {
  AnalyzeOptions analyze_options;
  analyze_options.prefetch_depth = std::max(0, options.prefetch_depth);
  if (options.gather_granularity.has_value()) {
    analyze_options.gather_per_parameter =
        *options.gather_granularity == GatherGranularity::kPerParameter;
  }
  analyze_options.max_reuse_distance = options.max_reuse_distance;
  analyze_options.reshard_after_forward = options.reshard_after_forward;
  return analyze_options;
}

StatusOr<std::vector<Schedule>> BuildSchedulesForPlan(const ModelSpec& model,
                                                      const TrainingSpec& training,
                                                      const StrategySpec& strategy,
                                                      const Plan& plan,
                                                      const ScheduleOptions& options) {
  RETURN_IF_ERROR(schedule_internal::CheckScope(model, strategy, plan, options));
  schedule_internal::StepContext ctx =
      schedule_internal::MakeStepContext(model, training, strategy, options, plan);
  RETURN_IF_ERROR(schedule_internal::BoundOps(ctx));

  std::vector<Schedule> out;
  out.reserve(static_cast<size_t>(ctx.pp));
  for (int stage = 0; stage < ctx.pp; ++stage) {
    ASSIGN_OR_RETURN(Schedule s, schedule_internal::StageBuilder(ctx, stage).Build());
    out.push_back(std::move(s));
  }
  if (ctx.pp > 1) schedule_internal::MatchReceives(out, ctx.pp);
  return out;
}

}  // namespace placesim::strategies
