// `placesim search`: the best strategies for a scenario's model and cluster, ranked.
//
//   placesim search SCENARIO [--set FIELD.PATH=VALUE ...] [--fix FIELD=VALUE ...]
//                   [--simulate-top K] [--top N] [--jobs N] [--format table|csv|json]
//
// The scenario (after --set) gives the model, the cluster and the training basics (precision,
// optimizer, global batch); its strategy and the knobs the search varies are ignored. Tier 1
// (strategies/search.h) enumerates every mesh, data-parallel preset, micro-batch, recompute
// policy, sequence-parallel choice and pipeline schedule, keeps the candidates that fit in
// HBM and are correct by the analytic plan, and ranks them by an analytic step-time
// estimate. --fix FIELD=VALUE pins a knob (repeatable; e.g. --fix strategy.tp=8 --fix
// training.recompute=full); a value outside the space exits 2 with the valid values.
//
// Tier 2: the best K (--simulate-top, default 32) by estimate are simulated with SimulateStep
// when the executor replays them (a row it refuses keeps its estimate), on the
// analytic network by default (--network flow for contention; about twice as long); the
// others keep their estimate, and every row says which ("simulated" or "estimated"). The
// output ranks by step time (simulated where available, else estimated) and shows the best
// N rows (--top, default 20) with memory, headroom, MFU and, against the first row, the part
// of the analytic breakdown that costs the most extra ("+12% exposed dp communication").
// The search statistics (candidates, pruned, analyzed, feasible, screening rate) go to
// stderr; stdout is the same bytes for every --jobs.
//
// Thread-safety: reentrant; each run keeps its state local.
#ifndef PLACESIM_SIM_CLI_SEARCH_H_
#define PLACESIM_SIM_CLI_SEARCH_H_

#include <ostream>
#include <string>
#include <vector>

namespace placesim::sim {

// `args` excludes the program and command names. Exit codes as in sim/cli/commands.h: 0 ok,
// 2 bad input (flags, scenario, --set, --fix), 1 when no candidate fits.
int RunSearch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_SEARCH_H_
