// MakeStepContext: what every stage's builder shares, derived once from the inputs and the
// plan (internal/stage_builder.h). Thread-safety: pure functions.
#include <algorithm>

#include "strategies/cost/arith.h"
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

bool IsShardedMode(Mode m) {
  return m == Mode::kSharded || m == Mode::kShardedGather || m == Mode::kOffloaded;
}

GroupKind GroupOf(int64_t group_size, int64_t dp, bool replica) {
  if (replica) return GroupKind::kReplicaGroup;
  return group_size == dp ? GroupKind::kAxis : GroupKind::kShardGroup;
}

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

Mode StepContext::mode(State st) const { return strategy->at(Axis::kData, st).mode; }

MemorySpace StepContext::target(State st) const {
  return OffloadTargetOf(*strategy, st) == OffloadTarget::kNvme ? MemorySpace::kNvme
                                                                : MemorySpace::kHost;
}

// An explicit split (strategy.pipeline_stage_layers) gives each stage its count.
int64_t StepContext::LayersOn(int stage) const {
  const std::vector<int>& split = strategy->pipeline_stage_layers;
  return split.empty() ? p.layers / pp : split[static_cast<size_t>(stage)];
}

namespace {

// Placement on dp x cp: context parallelism joins dp for the model states (CheckScope), so
// they are sharded and synchronized over the dp x cp ranks of a tp rank and stage.
void PlaceOnData(StepContext& c) {
  const bool shard = c.dpc > 1;
  c.shard = shard;
  c.g_sharded = shard && IsShardedMode(c.mode(State::kGrads));
  c.o_sharded = shard && IsShardedMode(c.mode(State::kOptimizer));
  // Offload holds on any dp x cp, one rank included (as in the plan): offloaded parameters
  // are streamed in per unit and all-gathered only when there is a group to gather from.
  const auto offloaded = [&](State st) {
    return OffloadTargetOf(*c.strategy, st) != OffloadTarget::kNone;
  };
  c.t_offloaded = offloaded(State::kParams);
  c.t_gather = (shard && c.mode(State::kParams) == Mode::kShardedGather) || c.t_offloaded;
  c.o_offloaded = offloaded(State::kOptimizer);
  c.host_grads = c.o_offloaded && offloaded(State::kGrads);
  const bool any_sharded =
      shard && (IsShardedMode(c.mode(State::kParams)) || c.o_sharded || c.g_sharded);
  const int g = c.strategy->shard_group_size;
  const int64_t n_dp = any_sharded ? ((g > 0 && g <= c.dp && c.dp % g == 0) ? g : c.dp) : c.dp;
  c.n = n_dp * c.cp;
  c.replicas = c.dp / n_dp;
  c.shard_group = GroupOf(c.n, c.dpc, false);
  // Expert states are replicated over the dp / ep ranks holding the same experts, the dp
  // coordinates congruent mod ep (ep coordinate = dp mod ep, topology/mesh.h): the replica
  // group of dp / ep (stride ep); with ep = 1 they are placed as the dense states.
  c.split_expert = c.ep > 1;
  c.expert_n = c.split_expert ? c.dp / c.ep * c.cp : c.n;
  c.expert_group = c.split_expert ? GroupKind::kReplicaGroup : c.shard_group;
  c.grads_reduce_scattered = c.g_sharded || c.o_sharded;
}

}  // namespace

StepContext MakeStepContext(const ModelSpec& model, const TrainingSpec& training,
                            const StrategySpec& strategy, const ScheduleOptions& options,
                            const Plan& plan) {
  StepContext c;
  c.model = &model;
  c.training = &training;
  c.strategy = &strategy;
  c.options = &options;
  c.plan = &plan;
  const TransformerSpec& t = model.transformer;
  c.p = CountParameters(t);
  c.bpp = BytesPerParameter(training);
  const topology::MeshShape& mesh = strategy.mesh;
  c.dp = mesh.dp;
  c.tp = mesh.tp;
  c.cp = mesh.cp;
  c.ep = mesh.ep;
  c.pp = mesh.pp;
  c.m = plan.micro_batches;
  c.depth = std::max(0, options.prefetch_depth);
  c.sp = plan.effective_sequence_parallel;
  c.moe = t.experts > 1;
  c.recompute = plan.effective_recompute;
  c.distribute_saved = DistributesSavedActivations(training, c.tp, c.sp, c.recompute);
  c.pc = cost::ComputePassCosts(t, training, mesh, c.recompute, c.sp);
  c.mixed = HasMixedLayers(t);
  if (c.mixed)
    c.pc_dense = cost::ComputePassCosts(DenseLayerOf(t), training, mesh, c.recompute, c.sp);
  // Pipeline parallelism: stage i holds L / p layers (or its explicit count) in v chunks;
  // chunk c of stage i is virtual stage c p + i (Megatron-LM's interleaved assignment).
  c.v = c.pp > 1 && training.pipeline_schedule == PipelineSchedule::kInterleaved1F1B
            ? std::max(1, training.virtual_stages)
            : 1;
  std::vector<int64_t> stage_layers;
  for (int stage = 0; stage < c.pp; ++stage) {
    stage_layers.push_back(c.LayersOn(stage));
    c.max_stage_layers = std::max(c.max_stage_layers, stage_layers.back());
  }
  c.chunks = PipelineChunkLayers(stage_layers, c.v);
  c.dpc = c.dp * c.cp;
  PlaceOnData(c);
  const FrameworkOverheads framework = FrameworkDefaults(strategy.name);
  c.gather_per_parameter =
      options.gather_granularity.value_or(framework.gather) == GatherGranularity::kPerParameter;
  c.overlap_grad_reduce = options.overlap_grad_reduce.value_or(framework.overlap_grad_reduce);
  c.blocking_p2p = options.blocking_p2p.value_or(
      framework.blocking_p2p && !(framework.overlap_p2p_interleaved && c.v > 1));
  // Replicated gradients accumulate in place over the micro-batches, so a framework that does
  // not overlap their reduction runs it after the backward (Megatron-LM's finish_grad_sync);
  // sharded or host-bound gradients leave every micro-batch and cannot wait for the end.
  c.defer_grad_sync = !c.overlap_grad_reduce && !c.g_sharded && !c.host_grads && !c.t_gather;
  c.lpu = std::max<int64_t>(1, strategy.layers_per_unit);
  // DeepSpeed's reuse distance: only its per-parameter fetch of gathered (not streamed)
  // parameters under full recompute, on dense layers (an MoE layer's experts are gathered
  // apart), releases anything between a layer's recompute and its backward.
  const std::optional<int64_t> reuse = options.max_reuse_distance.has_value()
                                           ? options.max_reuse_distance
                                           : framework.max_reuse_distance;
  c.reshard = options.reshard_after_forward.value_or(true) || c.t_offloaded;
  if (reuse.has_value() && c.reshard && c.gather_per_parameter && c.t_gather && !c.t_offloaded &&
      c.n > 1 && !c.moe && c.recompute == Recompute::kFull) {
    c.refetch = RefetchAfterRecompute(t, c.tp, *reuse);
  }
  const Bytes bucket =
      GradientBucket(options.bucket_bytes, strategy, training, options.overlap_grad_reduce);
  c.per_bucket = std::max<int64_t>(1, bucket.count() / c.bpp.grads);
  return c;
}

}  // namespace placesim::strategies::schedule_internal
