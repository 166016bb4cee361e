// Cost and energy figures (sim/economics) in the commands' outputs: table lines, a JSON
// object and CSV columns. Every function here is called only when the scenario has an
// `economics` message, so outputs of scenarios without one are unchanged.
// Thread-safety: reentrant.
#ifndef PLACESIM_SIM_CLI_ECONOMICS_H_
#define PLACESIM_SIM_CLI_ECONOMICS_H_

#include <nlohmann/json.hpp>
#include <string>

#include "sim/economics/economics.h"
#include "sim/scenario/scenario.h"

namespace placesim::sim {

// The figures of a simulated step of `s`. REQUIRES: s.economics.
economics::Figures SimulatedEconomics(const Scenario& s, const SimResult& r);
// analyze's: per hour at the TDP bound. REQUIRES: s.economics.
economics::Figures AnalyzedEconomics(const Scenario& s);

// Lines for the table outputs, headed "economics".
std::string EconomicsTable(const economics::Figures& f);
// The "economics" object of the JSON outputs; figures not asked for are left out.
nlohmann::ordered_json EconomicsJson(const economics::Figures& f);
// `csv` (a header line, then rows) with the economics columns appended to every line; a
// figure not asked for is an empty cell.
std::string AppendEconomicsCsv(const std::string& csv, const economics::Figures& f);
// Adds "economics" to the JSON text `json` (an object, as dumped with indent 2 and a final
// newline) and returns it dumped the same way.
std::string AddEconomicsToJson(const std::string& json, const economics::Figures& f);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_ECONOMICS_H_
