// Analyze: the analytic model behind `placesim analyze`. From a model, a training setup, a
// strategy in placement semantics and a cluster description it derives, without simulating,
// per-device memory for every rank role, the collectives and offload copies of one step, the
// pipeline bubble, FLOPs per iteration, and the correctness verdict. Microseconds per call.
//
// Placement semantics as modelled (per state, per axis of size N > 1):
//   R   the full state (of what the other axes leave) on every device of the axis.
//   S   1/N of it. On dp and cp this is ZeRO sharding; on tp Megatron's slicing of the
//       layer matrices (norms and row-parallel biases stay whole); on pp the layers of one
//       stage; on ep the experts of one rank.
//   S*  1/N resident, gathered unit by unit before use (forward and again in backward);
//       the gathered units in flight are counted as gather buffers.
//   M   activations only: only the checkpoints are kept and the rest is recomputed (read as
//       full recompute unless the training setup asks for selective).
//   O   the device's 1/N shard lives on the host or NVMe; double-buffered staging on device.
// Mode combinations and the collectives they imply on the data-parallel axes (dp, and cp
// when cp carries the same placement as dp, in which case dp x cp form one group as in
// Megatron-Core):
//   G R, Ω R   all-reduce of gradients once per step                       (DDP)
//   G R, Ω S   reduce-scatter of gradients once per step                   (ZeRO-1)
//   G S        reduce-scatter of gradients after every micro-batch         (ZeRO-2/3)
//   Θ R, Ω S   all-gather of updated parameters once per step              (ZeRO-1/2)
//   Θ S*       all-gather of parameters in forward and in backward, per micro-batch (ZeRO-3)
// With hybrid sharding (shard_group_size g) the shards are all-reduced across the dp/g
// replica groups once per step. So at N devices, m = 1: DDP moves 2(N-1)/N·2Ψ bytes per
// device, ZeRO-1/2 the same, ZeRO-3 3(N-1)/N·2Ψ (ZeRO paper Section 7; 1.5x).
//
// Correctness (findings in Plan::findings, never a Status): gradient integrity — sharded
// gradients need a sharded optimizer on the same axis; state consistency — a replicated
// optimizer over sharded parameters on a model-parallel axis drifts; a replicated Θ over a
// sharded Ω is consistent only because the plan all-gathers the updated parameters (no
// finding). Plus the composition rules: divisibility of heads, hidden, ffn, layers, batch,
// experts and sequence; world size; offload targets and capacities; TP across nodes
// (warning). See correctness rules in analyzer.cc for the full list and their messages.
//
// Thread-safety: Analyze is a pure function of its inputs.
#ifndef PLACESIM_STRATEGIES_ANALYZER_H_
#define PLACESIM_STRATEGIES_ANALYZER_H_

#include <cstdint>
#include <optional>

#include "base/status.h"
#include "strategies/plan.h"
#include "strategies/spec.h"
#include "topology/spec.h"

namespace placesim::strategies {

struct AnalyzeOptions {
  // Units gathered ahead of the one in use under S* (FSDP forward_prefetch / ZeRO-3
  // prefetch). Default 1: two units are live, the one computing and the one arriving.
  // Larger hides more latency and costs one unit of memory each.
  int prefetch_depth = 1;
  // Framework overheads that move bytes (docs/overheads.md); unset: the defaults of the
  // strategy preset's framework (FrameworkDefaults, strategies/schedule.h). Whether ZeRO-3
  // gathers each weight matrix on its own (DeepSpeed) or a unit at once (FSDP), and DeepSpeed's
  // stage3_max_reuse_distance in elements (>= 0): with per-parameter gathers under full
  // recompute, the matrices it releases between a layer's recompute and its backward are
  // all-gathered again, every micro-batch (CommPurpose::kParamRefetch).
  std::optional<bool> gather_per_parameter;
  std::optional<int64_t> max_reuse_distance;
  // Gathered (S*) parameters freed after each unit's forward and all-gathered again for its
  // backward (true: FSDP FULL_SHARD, DeepSpeed ZeRO-3), or held from a micro-batch's forward
  // to its backward (false: FSDP SHARD_GRAD_OP): one gather per unit and micro-batch instead
  // of two, none re-fetched after recompute, and the stage's whole gathered parameters on the
  // device at the turn from forward to backward. Meant for pp = 1 (the simulator refuses
  // false with pipeline parallelism). Unset: true.
  std::optional<bool> reshard_after_forward;
};

// Builds the plan. Returns kInvalidArgument (every problem at once, one per line) only when
// the inputs make analysis impossible: a model with neither an architecture nor a
// parameter count, non-positive mesh sizes, batch sizes or shapes, heads not dividing hidden.
// Everything else — placements that break correctness, sizes that do not divide, a world
// that does not match the cluster, memory that does not fit — is a finding inside the plan.
StatusOr<Plan> Analyze(const ModelSpec& model, const TrainingSpec& training,
                       const StrategySpec& strategy, const topology::ClusterSpec& cluster,
                       const AnalyzeOptions& options = {});

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_ANALYZER_H_
