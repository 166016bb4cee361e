// Simulation settings: the knobs of `placesim simulate` that a scenario file can set (the
// `simulation` message of sim/scenario/proto/scenario.proto), as a plain struct. Every one of
// them shapes communication: which network model and collective algorithm run, how gradients
// are bucketed, how far gathers prefetch. The scenario loader fills it (and checks the names
// against the built-in registries); ExecutorOptionsFromSettings (sim/executor/executor.h)
// turns it into executor options. Plain values only, so the scenario library includes it
// without the executor. Thread-safety: plain values.
#ifndef PLACESIM_SIM_COLLECTIVES_SIMULATION_SETTINGS_H_
#define PLACESIM_SIM_COLLECTIVES_SIMULATION_SETTINGS_H_

#include <optional>
#include <string>

#include "base/units.h"

namespace placesim::sim {

// Defaults match the executor's and the schedule builder's.
struct SimulationSettings {
  // A registered network model (sim/network/network_model.h): "flow" (default, max-min fair
  // sharing of every link) or "analytic" (alpha-beta, no contention: faster, for sweeps).
  std::string network_model = "flow";
  // "auto" (default: per call, NCCL-like; sim/collectives/registry.h) or a registered
  // collective algorithm ("ring", "tree", "hierarchical", "pairwise"), forced where it applies.
  std::string collective_algorithm = "auto";
  // Trade-off: smaller buckets overlap more of the gradient sync with backward but pay the
  // collective latency more often. >= 1 byte. Unset: the strategy preset's framework's
  // (strategies::GradientBucket: Megatron-LM's rule for megatron and zero1, PyTorch DDP's
  // bucket_cap_mb = 25 MiB otherwise); set, it holds for every framework.
  std::optional<Bytes> gradient_bucket_size;
  // Units gathered ahead of use under S* (and streamed ahead under O), 0 to 64. Deeper
  // prefetch hides more of the gathers and holds more gathered parameters.
  int prefetch_depth = 1;
  // Synchronize replicated gradients after every micro-batch (DDP without no_sync).
  bool sync_grads_every_micro_batch = false;
  // Chunked tensor-parallel blocks whose collectives overlap the next chunk's compute.
  bool tp_comm_overlap = false;
  // NCCL's per-call protocol cost on every collective and pipeline send (nccl_model.h).
  bool protocol_cost = true;
  // Framework overheads (docs/overheads.md); unset = the strategy preset's framework's.
  // "per-unit" or "per-parameter": how a gathered unit's parameters are all-gathered.
  std::optional<std::string> gather_granularity;
  // Gradient reduction beside the backward (true), or not (false: sharded gradients'
  // reduce-scatters waited for, replicated gradients reduced after the backward).
  std::optional<bool> overlap_grad_reduce;
  // Pipeline exchanges as rendezvous that hold the compute stream (true), or sends on their
  // own stream (false).
  std::optional<bool> blocking_p2p;
  // DeepSpeed ZeRO-3's stage3_max_reuse_distance in parameter elements, 0 to 1e15: weight
  // matrices released between a layer's full recompute and its backward are gathered again.
  std::optional<int64_t> zero3_max_reuse_distance;
  // Gathered parameters freed after each unit's forward and gathered again for its backward
  // (true, FSDP FULL_SHARD), or held until the backward (false, SHARD_GRAD_OP). Unset: true.
  std::optional<bool> reshard_after_forward;
  // Host time to issue one layer's kernels in a forward (or recompute) pass and in a backward
  // pass; the GPU waits when they are shorter. The backward one unset = the forward one.
  Duration host_time_per_layer = Duration::Zero();
  std::optional<Duration> host_time_per_layer_backward;
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_COLLECTIVES_SIMULATION_SETTINGS_H_
