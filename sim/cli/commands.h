// The `placesim` command line: subcommands, their flags, output formats and exit codes.
//
// Exit codes (documented in the README):
//   0  success
//   1  a command ran and found a regression or internal failure
//   2  bad input: unknown command or flag, unreadable or invalid scenario, bad --set
//   3  `analyze`: the strategy violates a correctness condition or composition rule
//      (the full report is still printed)
//
// RunCli writes results to `out` and diagnostics to `err`, and never calls exit(), so tests
// drive it in-process. Thread-safety: reentrant; no global state.
#ifndef PLACESIM_SIM_CLI_COMMANDS_H_
#define PLACESIM_SIM_CLI_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

namespace placesim::sim {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitIncorrectStrategy = 3;
// `search` found no candidate that fits in memory and is correct: a valid question whose answer
// is "none", neither bad input (2) nor a regression (1, `compare`'s alone).
inline constexpr int kExitNoFeasibleCandidate = 4;

// args excludes the program name: {"analyze", "examples/x.textproto", "--format", "json"}.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_COMMANDS_H_
