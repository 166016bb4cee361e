// Resolution of a parsed scenario: presets expanded, their fields overridden by the document's,
// defaults filled in, every rule checked (all problems reported at once) and the result
// converted to the plain structs of scenario.h. Internal to sim/scenario.
//
// Rules are checked in schema order; a rule that depends on another part (e.g. the mesh size
// against the GPU count) is skipped when that part is already in error, so one mistake gives
// one message. At most kMaxReportedProblems lines are listed, then a count of the rest.
// Thread-safety: stateless; the preset catalogues it reads are immutable.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_RESOLVE_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_RESOLVE_H_

#include <cstddef>
#include <string_view>

#include "base/status.h"
#include "sim/scenario/proto/scenario.pb.h"
#include "sim/scenario/scenario.h"

namespace placesim::sim::scenario_internal {

inline constexpr size_t kMaxReportedProblems = 100;

// Limits of what a scenario may ask for; larger values are refused before anything is built.
inline constexpr int kMaxNodes = 65536;
inline constexpr int kMaxGpusPerNode = 1024;
inline constexpr int kMaxExplicitVertices = 1 << 20;
inline constexpr int kMaxExplicitLinks = 1 << 22;
// simulation.zero3_max_reuse_distance, in elements: a million times DeepSpeed's 1e9 default,
// past any model's parameter count.
inline constexpr int64_t kMaxReuseDistance = 1'000'000'000'000'000;

// kInvalidArgument listing every problem as "PATH: VALUE: RULE" under a header line naming
// `display_name`.
StatusOr<Scenario> ResolveScenario(const ::placesim::scenario::proto::Scenario& doc,
                                   std::string_view display_name);

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_RESOLVE_H_
