// Formatting of the cost and energy figures; see economics.h.
#include "sim/cli/economics.h"

#include <fmt/format.h>

#include <optional>

#include "placesim/json.h"
#include "sim/study/sweep.h"

namespace placesim::sim {
namespace {

using economics::Figures;

// Energy with a prefix that keeps 1 to 4 digits before the point: kWh, MWh, GWh.
std::string FormatKwh(Energy e) {
  const double kwh = e.ToKilowattHours();
  if (kwh >= 1e6) return fmt::format("{:.2f} GWh", kwh / 1e6);
  if (kwh >= 1e3) return fmt::format("{:.2f} MWh", kwh / 1e3);
  return fmt::format("{:.2f} kWh", kwh);
}

std::string FormatDays(double seconds) {
  const double days = seconds / 86400;
  if (days >= 1) return fmt::format("{:.1f} days", days);
  return fmt::format("{:.1f} hours", seconds / 3600);
}

std::string FormatCo2(double kg) {
  if (kg >= 1000) return fmt::format("{:.1f} t CO2e", kg / 1000);
  return fmt::format("{:.1f} kg CO2e", kg);
}

std::string Cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.9g}", *v) : std::string();
}
std::string Cell(const std::optional<int64_t>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

}  // namespace

economics::Figures SimulatedEconomics(const Scenario& s, const SimResult& r) {
  return study::SimulatedEconomics(s, r);
}

economics::Figures AnalyzedEconomics(const Scenario& s) {
  return economics::TdpBoundFigures(*s.economics, s.strategy.mesh.world());
}

std::string EconomicsTable(const Figures& f) {
  std::string out = "economics       (model and sources: docs/economics.md)\n";
  out += fmt::format(
      "  power         {:.0f} W per GPU ({}u = {:.1f}%; idle {:.0f} W, TDP {:.0f} W) x {} GPUs x "
      "PUE {:.2f} = {:.1f} kW\n",
      f.gpu_power.watts(), f.tdp_bound ? "upper bound, " : "compute-busy ", 100.0 * f.utilization,
      f.gpu_idle.watts(), f.gpu_tdp.watts(), f.gpus, f.pue, f.facility_power.watts() / 1e3);
  out += fmt::format("  per hour      {}", FormatKwh(f.energy_per_hour));
  if (f.cost_per_hour_usd) out += fmt::format(", ${:.2f}", *f.cost_per_hour_usd);
  if (f.co2_kg_per_hour) out += fmt::format(", {}", FormatCo2(*f.co2_kg_per_hour));
  out += "\n";
  if (f.energy_per_step) {
    out += fmt::format("  per step      {:.4g} MJ ({:.1f} Wh)\n", f.energy_per_step->joules() / 1e6,
                       f.energy_per_step->joules() / 3600);
  }
  if (f.steps) {
    out += fmt::format("  to train      {} steps: {}, {:.0f} GPU-hours, {}", *f.steps,
                       FormatDays(*f.time_to_train_s), *f.gpu_hours, FormatKwh(*f.energy_to_train));
    if (f.cost_usd) out += fmt::format(", ${:.0f}", *f.cost_usd);
    if (f.co2_kg) out += fmt::format(", {}", FormatCo2(*f.co2_kg));
    out += "\n";
  } else if (f.tdp_bound) {
    out +=
        "  to train      needs a step time: placesim simulate (or sweep/search --mode simulate)\n";
  }
  return out;
}

std::vector<EconomicsColumn> EconomicsColumns(const nlohmann::ordered_json& rows) {
  static constexpr EconomicsColumn kTotals[] = {{"time_to_train_s", "time to train"},
                                                {"gpu_hours", "GPU-hours"},
                                                {"cost_usd", "cost"},
                                                {"energy_to_train_kwh", "energy"},
                                                {"co2_kg", "CO2"}};
  static constexpr EconomicsColumn kPerHour[] = {{"cost_per_hour_usd", "cost/h"},
                                                 {"energy_per_hour_kwh", "energy/h"},
                                                 {"co2_kg_per_hour", "CO2/h"}};
  auto any_has = [&](const char* key) {
    for (const auto& r : rows) {
      auto e = r.find("economics");
      if (e != r.end() && e->is_object() && e->contains(key)) return true;
    }
    return false;
  };
  std::vector<EconomicsColumn> out;
  for (const auto& c : kTotals) {
    if (any_has(c.key)) out.push_back(c);
  }
  if (!out.empty()) return out;
  for (const auto& c : kPerHour) {
    if (any_has(c.key)) out.push_back(c);
  }
  return out;
}

std::string EconomicsCell(const EconomicsColumn& column, const nlohmann::ordered_json* economics,
                          bool csv) {
  if (economics == nullptr || !economics->is_object() || !economics->contains(column.key)) {
    return csv ? "" : "-";
  }
  const double v = economics->at(column.key).get<double>();
  if (csv) return fmt::format("{:.9g}", v);
  const std::string_view key = column.key;
  if (key == "time_to_train_s") return FormatDays(v);
  // Whole units from 100 on; small runs keep three significant digits.
  if (key == "gpu_hours") return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
  if (key == "cost_usd") return v >= 100 ? fmt::format("${:.0f}", v) : fmt::format("${:.2f}", v);
  if (key == "cost_per_hour_usd") return fmt::format("${:.2f}", v);
  if (key.ends_with("_kwh")) return FormatKwh(KilowattHours(v));
  return FormatCo2(v);
}

std::string AppendEconomicsCsv(const std::string& csv, const Figures& f) {
  const std::string header =
      ",gpu_power_w,facility_power_w,energy_per_step_j,steps_to_train,time_to_train_s,gpu_hours,"
      "energy_to_train_kwh,cost_usd,co2_kg";
  std::optional<double> step_j, kwh;
  if (f.energy_per_step) step_j = f.energy_per_step->joules();
  if (f.energy_to_train) kwh = f.energy_to_train->ToKilowattHours();
  const std::string row =
      fmt::format(",{:.9g},{:.9g},{},{},{},{},{},{},{}", f.gpu_power.watts(),
                  f.facility_power.watts(), Cell(step_j), Cell(f.steps), Cell(f.time_to_train_s),
                  Cell(f.gpu_hours), Cell(kwh), Cell(f.cost_usd), Cell(f.co2_kg));
  std::string out;
  bool first = true;
  size_t start = 0;
  while (start < csv.size()) {
    size_t end = csv.find('\n', start);
    if (end == std::string::npos) end = csv.size();
    out.append(csv, start, end - start);
    out += first ? header : row;
    out += '\n';
    first = false;
    start = end + 1;
  }
  return out;
}

std::string AddEconomicsToJson(const std::string& json, const Figures& f) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json);
  j["economics"] = api::EconomicsJson(f);
  return j.dump(2) + "\n";
}

}  // namespace placesim::sim
