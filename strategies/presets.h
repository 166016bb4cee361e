// Built-in workload presets: models (by architecture, with the paper or model card they come
// from) and named strategies that expand into placements on a mesh.
// Thread-safety: the catalogues are built once on first use and never change.
#ifndef PLACESIM_STRATEGIES_PRESETS_H_
#define PLACESIM_STRATEGIES_PRESETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "strategies/spec.h"
#include "topology/mesh.h"

namespace placesim::strategies {

const std::vector<ModelSpec>& ModelPresets();
const ModelSpec* FindModelPreset(std::string_view name);  // nullptr when unknown
std::vector<std::string> ModelPresetNames();

struct StrategyPresetInfo {
  std::string name;         // e.g. "zero3"
  std::string description;  // one line
  std::string source;       // paper or documentation it follows
};
const std::vector<StrategyPresetInfo>& StrategyPresets();
std::vector<std::string> StrategyPresetNames();

// Expands a named strategy into placements on `mesh` (the mesh is copied into the result).
// Unknown names give kNotFound listing the valid ones.
//
// The name sets the dp-axis placement (and the cp axis, which joins dp in one data-parallel
// group as in Megatron-Core: same Θ/Ω/G modes, A sharded). Whenever an axis has more than
// one rank, the Megatron placements are added on it: tp shards Θ, Ω, G (S) and leaves A
// replicated (R) — sequence parallelism is a training setting (TrainingSpec) and is what
// shards A over tp, so a user who writes A = S on tp also gets it; pp shards all four by
// layer; ep shards the expert Θ, Ω, G (A replicated: tokens move, activations do not
// shard). So "TP8 x PP4 x ZeRO-1" is ExpandStrategyPreset("zero1", {tp 8, pp 4, dp ...}).
StatusOr<StrategySpec> ExpandStrategyPreset(std::string_view name, const topology::MeshShape& mesh);
// As above; "fsdp-hybrid" shards inside a node of `gpus_per_node` GPUs (the dp ranks that
// share a node under the default rank order tp, cp, pp, dp) and replicates across nodes.
// The two-argument form assumes 8 GPUs per node. REQUIRES: gpus_per_node >= 1.
StatusOr<StrategySpec> ExpandStrategyPreset(std::string_view name, const topology::MeshShape& mesh,
                                            int gpus_per_node);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_PRESETS_H_
