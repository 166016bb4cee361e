// `placesim replay`: a Chakra execution trace (one `.et` file per rank, MLCommons schema
// v0.0.4) replayed on a scenario's cluster with placesim's collective algorithms and network
// models (sim/chakra/replay.h), and `simulate --chakra-out`'s writer of a simulated step.
//
//   placesim replay TRACE_PREFIX SCENARIO [--comm-groups FILE.json] [--network flow|analytic]
//                   [--flops-per-op N] [--trace FILE [--trace-ranks LIST]] [--format table|json]
//                   [--set FIELD.PATH=VALUE ...]
//
// Reads `<TRACE_PREFIX>.<rank>.et` for ranks 0..N-1 (rank r runs on the scenario's GPU r; its
// model and strategy are not used) and prints the step time, per rank its compute, its
// communication and the exposed part, and link use. Bad traces exit 2 naming rank, node id
// and field. Thread-safety: reentrant; each run keeps its state local.
#ifndef PLACESIM_SIM_CLI_REPLAY_H_
#define PLACESIM_SIM_CLI_REPLAY_H_

#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/scenario/scenario.h"

namespace placesim::sim {

// `args` excludes the program and command names. Exit codes as in sim/cli/commands.h.
int RunReplay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// simulate --chakra-out: writes the scenario's step as `<prefix>.<rank>.et` for `ranks`
// (every rank when empty) and `<prefix>.json`, the communicator groups.
Status WriteChakraStep(const Scenario& scenario, const std::string& prefix,
                       const std::vector<int64_t>& ranks);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_REPLAY_H_
