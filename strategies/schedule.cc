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
  // Both block on their pipeline exchanges: Megatron-LM waits for its batch_isend_irecv and
  // synchronizes (batch_p2p_comm, batch_p2p_sync default true in model_parallel_config.py);
  // DeepSpeed's pipeline engine sends and receives synchronously (runtime/pipe/p2p.py).
  const bool megatron = strategy_preset == "megatron" || strategy_preset == "zero1";
  if (megatron) return FrameworkOverheads{.overlap_grad_reduce = false, .blocking_p2p = true};
  if (!deepspeed) return FrameworkOverheads{};
  return FrameworkOverheads{.gather = GatherGranularity::kPerParameter,
                            .overlap_grad_reduce = false,
                            .blocking_p2p = true};
}

AnalyzeOptions ScheduleAnalyzeOptions(const ScheduleOptions& options) {
  AnalyzeOptions analyze_options;
  analyze_options.prefetch_depth = std::max(0, options.prefetch_depth);
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
