// `placesim export`: a scenario's plan as a framework's own configuration.
//
//   placesim export SCENARIO --to megatron|deepspeed|fsdp [--set FIELD.PATH=VALUE ...]
//                   [-o FILE]
//
// Megatron-LM: a bash array of pretrain_gpt.py arguments; DeepSpeed: a config JSON; PyTorch
// FSDP: a Python snippet (sim/export/export.h derives them from the placement). The
// configuration goes to stdout, or to FILE, written atomically; what the user must do outside
// it goes to stderr as "placesim export: note: ...". A strategy the framework cannot express
// exits 2 with every reason; so does a bad --to, listing the valid names.
//
// Thread-safety: reentrant; each run keeps its state local.
#ifndef PLACESIM_SIM_CLI_EXPORT_H_
#define PLACESIM_SIM_CLI_EXPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"

namespace placesim::sim {

// `args` excludes the program and command names. Exit codes as in sim/cli/commands.h.
int RunExport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Exports `scenario` to the framework named `to` and writes it to `output` (atomically) or,
// when `output` is empty, to `out`; notes go to `err` as "placesim COMMAND: note: ...".
// Returns the exit code: 0, or 2 for an unknown framework or a refused strategy.
int WriteExport(const Scenario& scenario, const std::string& to, const std::string& output,
                const std::string& command, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_EXPORT_H_
