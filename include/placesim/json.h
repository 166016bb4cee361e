// The facade's results as the JSON documents `placesim ... --format json` prints: one writer
// per study, shared by the command line (sim/cli) and the Python module (python/), so both
// hand out the same keys, in the same order, with the units in the names (`step_time_s`,
// `peak_memory_bytes`). Kept out of placesim.h so that header stays free of any JSON type;
// link placesim_json to use it.
//
// Invariant: these writers define the documents; the goldens (tests/golden) and the Python
// tests (which compare every dict with the CLI's output) hold them to the byte.
//
// Thread-safety: pure functions of their arguments.
#ifndef PLACESIM_INCLUDE_PLACESIM_JSON_H_
#define PLACESIM_INCLUDE_PLACESIM_JSON_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "placesim/placesim.h"
#include "sim/economics/economics.h"

namespace placesim::api {

// `placesim simulate --format json`. One role: its figures at the top level; several (one per
// pipeline stage): the step's figures at the top level, with the highest memory peak, and
// each role's under "roles". REQUIRES: r.roles is not empty.
nlohmann::ordered_json SimulationJson(const SimResult& r);

// The "economics" object of analyze, simulate, each sweep point and each search row, when the
// scenario has an `economics` message (docs/economics.md): figures not asked for (no price,
// no grid intensity, no run length, no step time) are left out.
nlohmann::ordered_json EconomicsJson(const sim::economics::Figures& f);

// A sweep document's "kind" and "version"; `placesim merge` accepts only shards that carry
// both.
inline constexpr char kSweepKind[] = "sweep";
inline constexpr int kSweepVersion = 1;

// `placesim sweep --format json`: `scenario` names the input (its path, or "<dict>"), `sets`
// are its overrides, `network` the network option as given. Every point has every key, null
// where not computed; "economics" (EconomicsJson) only when some point's scenario has an
// `economics` message, and then on every point (null where the point failed).
nlohmann::ordered_json SweepJson(const SweepResult& r, const std::string& scenario,
                                 const std::vector<std::string>& sets, const std::string& network);

// `placesim search --format json` of `r`, run with `options` over `scenario` (named
// `scenario_name`); an exhaustive space adds the knobs only it searches to each row, and a
// scenario with an `economics` message adds "economics" (EconomicsJson) to each row: the
// simulated step's figures, or at the estimated step time with tdp_bound true.
nlohmann::ordered_json SearchJson(const SearchResult& r, const SearchOptions& options,
                                  const Scenario& scenario, const std::string& scenario_name);

// `placesim compare --format json` of `c`, `baseline` and `current` named as given.
nlohmann::ordered_json CompareJson(const study::Comparison& c, const std::string& baseline,
                                   const std::string& current, double threshold);

// A compared metric's value as the compare document writes it; null when the side is missing.
nlohmann::ordered_json MetricValueJson(const std::optional<study::MetricValue>& v);

}  // namespace placesim::api

#endif  // PLACESIM_INCLUDE_PLACESIM_JSON_H_
