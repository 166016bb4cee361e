// Cost and energy figures (sim/economics) in the commands' outputs: table lines, a JSON
// object and CSV columns. Every function here is called only when the scenario has an
// `economics` message, so outputs of scenarios without one are unchanged.
// Thread-safety: reentrant.
#ifndef PLACESIM_SIM_CLI_ECONOMICS_H_
#define PLACESIM_SIM_CLI_ECONOMICS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/economics/economics.h"
#include "sim/scenario/scenario.h"

namespace placesim::sim {

// The figures of a simulated step of `s`. REQUIRES: s.economics.
economics::Figures SimulatedEconomics(const Scenario& s, const SimResult& r);
// analyze's: per hour at the TDP bound. REQUIRES: s.economics.
economics::Figures AnalyzedEconomics(const Scenario& s);

// Lines for the table outputs, headed "economics".
std::string EconomicsTable(const economics::Figures& f);
// A cost or energy column of the sweep and search tables and CSV: a key of the rows'
// "economics" objects and the table's heading.
struct EconomicsColumn {
  const char* key;
  const char* header;
};
// The columns `rows` (a JSON array of objects, each with or without "economics") show: the
// run's totals where some row has them, else the per-hour figures; none without economics.
std::vector<EconomicsColumn> EconomicsColumns(const nlohmann::ordered_json& rows);
// The cell of `column` for a row's "economics" value (an object, null, or absent: pass
// nullptr); "-" in a table and empty in CSV where the figure is missing.
std::string EconomicsCell(const EconomicsColumn& column, const nlohmann::ordered_json* economics,
                          bool csv);

// `csv` (a header line, then rows) with the economics columns appended to every line; a
// figure not asked for is an empty cell.
std::string AppendEconomicsCsv(const std::string& csv, const economics::Figures& f);
// Adds "economics" to the JSON text `json` (an object, as dumped with indent 2 and a final
// newline) and returns it dumped the same way.
std::string AddEconomicsToJson(const std::string& json, const economics::Figures& f);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_ECONOMICS_H_
