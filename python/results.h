// The facade's results as the JSON documents of the `placesim` command line (`--format json`),
// for the Python module to hand out as dicts: the same keys, with their units in the names
// (`step_time_s`, `peak_memory_bytes`), so a notebook and a script reading the CLI's output
// see one vocabulary.
//
// Invariant: every function here writes the keys, order and units its CLI counterpart writes
// (sim/cli/commands.cc SimulationJson, sim/cli/sweep.cc SweepJson, sim/cli/search.cc
// SearchJson, sim/cli/compare.cc CompareJson); tests/python checks them by name. The facade
// does not export those writers yet, hence this mirror.
//
// Thread-safety: pure functions of their arguments.
#ifndef PLACESIM_PYTHON_RESULTS_H_
#define PLACESIM_PYTHON_RESULTS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "placesim/placesim.h"

namespace placesim::python {

using Json = nlohmann::ordered_json;

// `placesim simulate --format json`.
Json SimulationJson(const api::SimResult& r);

// `placesim sweep --format json`; `scenario` names the scenario (its path, or "<dict>"), `sets`
// are its overrides, `network` the network option as given.
Json SweepJson(const api::SweepResult& r, const std::string& scenario,
               const std::vector<std::string>& sets, const std::string& network);

// `placesim search --format json` over `scenario` (the input the search ran on).
Json SearchJson(const api::SearchResult& r, const api::SearchOptions& options,
                const api::Scenario& scenario, const std::string& scenario_name);

// `placesim compare --format json` of `baseline` and `current` (their names as given).
Json CompareJson(const study::Comparison& c, const std::string& baseline,
                 const std::string& current, double threshold);

}  // namespace placesim::python

#endif  // PLACESIM_PYTHON_RESULTS_H_
