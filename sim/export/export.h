// The plan as a run: a resolved scenario's strategy, training setup and simulation knobs
// written as a framework's own configuration — Megatron-LM command-line arguments (a bash
// array), a DeepSpeed config JSON, or a PyTorch FSDP (torch.distributed.fsdp) Python snippet.
//
// Every field is derived from placesim's placement semantics, never guessed: the data-parallel
// axis's (Θ, Ω, G) placement picks the ZeRO stage / sharding strategy / distributed
// optimizer, its offload targets the offload sections, shard_group_size the hybrid groups,
// the mesh the parallel sizes, the training setup the batch, precision and recompute fields.
// docs/export.md tabulates the mapping and its sources.
//
// A strategy the framework cannot express (FSDP with tensor parallelism, DeepSpeed with
// pipeline parallelism and ZeRO-2/3, Megatron-LM with the GPipe schedule, ...) is refused:
// kInvalidArgument, "FRAMEWORK cannot express WHAT: WHY", one line per problem, all at once.
// Where the framework has a documented way outside its configuration (DeepSpeed's pipeline
// stages are set in code), the export goes ahead and says so in `notes` (and, where the
// format has comments, in the text).
//
// Output is deterministic: the same scenario gives the same bytes.
// Thread-safety: reentrant; no state.
#ifndef PLACESIM_SIM_EXPORT_EXPORT_H_
#define PLACESIM_SIM_EXPORT_EXPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/scenario/scenario.h"
#include "strategies/search.h"

namespace placesim::exporting {

enum class Framework { kMegatron, kDeepSpeed, kFsdp };
const char* FrameworkName(Framework f);  // "megatron", "deepspeed", "fsdp"
std::vector<std::string> FrameworkNames();
// kInvalidArgument naming the value and the valid names.
StatusOr<Framework> ParseFramework(std::string_view name);

struct Exported {
  Framework framework = Framework::kMegatron;
  std::string text;                // the configuration file, ending in a newline
  std::vector<std::string> notes;  // what the user must do outside the file, or knows differs
};

// The scenario's plan as `framework`'s configuration. Errors: kInvalidArgument for a strategy
// the framework cannot express (every reason, one per line). Complexity: O(layers).
StatusOr<Exported> Export(const sim::Scenario& scenario, Framework framework);

// The scenario a search candidate stands for: its strategy preset on its mesh, its training
// knobs, and its tier-2 simulation knobs (tp overlap, gradient bucket), as `placesim search`
// screened and simulated it; its name says which row. kNotFound for an unknown preset.
StatusOr<sim::Scenario> ScenarioForCandidate(const sim::Scenario& scenario,
                                             const strategies::Candidate& candidate);

}  // namespace placesim::exporting

#endif  // PLACESIM_SIM_EXPORT_EXPORT_H_
