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
StatusOr<StrategySpec> ExpandStrategyPreset(std::string_view name,
                                            const topology::MeshShape& mesh);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_PRESETS_H_
