// `placesim sweep` and `placesim merge`: what-if studies over any scenario field.
//
//   placesim sweep SCENARIO --vary FIELD.PATH=V1,V2,... [--vary ...] [--set FIELD.PATH=VALUE]
//                  [--mode analyze|simulate] [--network flow|analytic] [--jobs N]
//                  [--shard K/N] [--format table|csv|json]
//   placesim merge SHARD.json... [--format table|csv|json]
//
// A sweep parses the scenario once, applies the --set overrides, and runs the cartesian
// product of the --vary lists: each point is a copy of the document with one value of every
// varied field applied (ScenarioDocument::ApplyOverride, the --set mechanism), then
// Resolve(), Analyze() and, with --mode simulate, SimulateStep(). Points are numbered in
// nested-loop order: the first --vary is the outermost loop, the last varies fastest.
//
// Values of --vary. A comma-separated list; commas inside single or double quotes do not
// split, surrounding blanks are trimmed, matching outer quotes are removed, and values keep
// their units ("cluster.node.nic_bandwidth=200 Gb/s,400 Gb/s"). An element may be a range
// of decimal numbers, inclusive of its end when the end is reached:
//   a..b        a, a+1, ..., b
//   a..b:+k     a, a+k, a+2k, ... <= b
//   a..b:xk     a, a·k, a·k², ... <= b   (k an integer >= 2, a > 0): 1..64:x2 is 7 values
// Ranges are computed exactly on decimals (scaled to integers), so 0.3..0.6:+0.1 is
// 0.3, 0.4, 0.5, 0.6. Every value is checked against the field (applied once to a scratch
// copy of the document) before any point runs; all bad values, bad ranges, empty lists and
// duplicates are reported at once with what the field allows, and the command exits 2.
//
// Output: one row per point with the varied values, then status (ok or error), fits,
// memory_total_bytes (the analyzer's largest rank role), comm_bytes_per_device_per_step,
// correctness_ok and, with --mode simulate, step_time_s, mfu, tokens_per_second,
// sim_peak_memory_bytes and exposed_comm_s (the largest over rank roles), then error. A
// point that fails (an invalid combination, a refused simulation) gets a row with its error
// message; the sweep goes on and exits 0 (it reports the failed points on stderr).
//
// Parallelism: --jobs N worker threads (default: the hardware's concurrency) take point
// indices from an atomic counter and store each result by index, so the output is the same
// bytes for every N. While it runs, a progress bar with an ETA is drawn on stderr when (and
// only when) file descriptor 2 is a terminal.
//
// Sharding: --shard K/N (K from 1 to N) runs the points whose global index i has
// i % N == K - 1 (round-robin, so shards get a balanced mix of small and large points).
// The JSON output records the sweep's fingerprint (a hash of the scenario file's bytes, the
// --set list, the expanded --vary lists, the mode and the network model), the total number
// of points, the shard, and every point's global index. `placesim merge` joins the JSON of
// all N shards into exactly the bytes an unsharded `--format json` run prints, and refuses
// (exit 2) shards that overlap, are missing, or come from different sweeps.
//
// The engines are the library's (placesim/placesim.h: Sweep; sim/study/sweep.h and merge.h);
// these commands add the flags and the formatting.
//
// Thread-safety: the functions are reentrant; each run keeps its state local.
#ifndef PLACESIM_SIM_CLI_SWEEP_H_
#define PLACESIM_SIM_CLI_SWEEP_H_

#include <ostream>
#include <string>
#include <vector>

namespace placesim::sim {

// The subcommands; `args` excludes the program and command names. Exit codes as in
// sim/cli/commands.h: 0 ok, 2 bad input.
int RunSweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunMerge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_SWEEP_H_
