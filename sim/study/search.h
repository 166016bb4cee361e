// Tier 2 of the strategy search, as a library: screen the space analytically
// (strategies/search.h), simulate the best K by estimate with SimulateStep, and rank every
// feasible candidate by step time (simulated where available, else estimated). No I/O: the
// `placesim search` command formats the ranking.
//
// Thread-safety: reentrant; simulations run on worker threads that each write only their
// own row.
#ifndef PLACESIM_SIM_STUDY_SEARCH_H_
#define PLACESIM_SIM_STUDY_SEARCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/collectives/simulation_settings.h"
#include "sim/economics/economics.h"
#include "sim/scenario/scenario.h"
#include "strategies/search.h"

namespace placesim::study {

// What to search and how much of it to simulate.
struct SearchRequest {
  std::string space = "default";     // strategies::SearchSpaceNames()
  std::vector<std::string> fixes;    // "FIELD=VALUE", each pins a knob of the space
  int64_t simulate_top = 32;         // >= 0: simulate the best K by estimate
  int64_t top = 20;                  // >= 1: the rows a report keeps
  std::string network = "analytic";  // tier 2's network: analytic, flow or scenario
  int64_t jobs = 0;                  // 0 to 4096 threads; 0 = the hardware's concurrency
};

// Appends one line per bad field of `request` (jobs, simulate_top, top, space, network).
void CheckSearchRequest(const SearchRequest& request, ErrorList* errors);

// Appends a line when the scenario's model cannot be searched (no transformer architecture).
void CheckSearchScenario(const sim::Scenario& scenario, ErrorList* errors);

// The named space of `request` narrowed by its fixes; every bad fix appended to `errors`.
// REQUIRES: CheckSearchRequest and CheckSearchScenario found nothing.
strategies::SearchSpace BuildSearchSpace(const sim::Scenario& scenario,
                                         const SearchRequest& request, ErrorList* errors);

// One feasible candidate and, when tier 2 simulated it, its simulated step.
struct RankedCandidate {
  strategies::ScreenedCandidate screened;
  std::optional<Duration> simulated_step;
  double simulated_mfu = 0;
  double simulated_utilization = 0;  // the simulated step's compute-busy share
  bool folded = false;               // simulated_step was folded (fold.h), not replayed in full
  std::string simulation_error;      // why the executor refused it; empty otherwise
  // Only when the scenario has an `economics` message: the simulated step's figures, else
  // the estimate's step time at the TDP bound (u = 1, tdp_bound set: an upper bound on power).
  std::optional<sim::economics::Figures> economics;
  Duration step() const { return simulated_step ? *simulated_step : screened.estimate.total; }
};

struct SearchStudy {
  strategies::SearchStats stats;
  Duration screening_time;  // wall clock of tier 1
  int64_t threads = 1;      // the jobs it ran on
  // Every feasible candidate, by step time, then the space's preference order.
  std::vector<RankedCandidate> ranked;
  int64_t simulated = 0;  // rows with a simulated step
  // Set when tier 2 could not run at all (the cluster does not build); every row keeps its
  // estimate.
  std::string simulation_warning;
};

// Screens `space` and simulates the best request.simulate_top on request.jobs threads.
// Errors: ScreenCandidates' (kInvalidArgument). REQUIRES: CheckSearchRequest found nothing.
// Complexity: tier 1 is O(candidates); tier 2 is simulate_top simulated steps.
StatusOr<SearchStudy> RunSearchStudy(const sim::Scenario& scenario,
                                     const strategies::SearchSpace& space,
                                     const SearchRequest& request);

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_SEARCH_H_
