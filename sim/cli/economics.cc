// Formatting of the cost and energy figures; see economics.h.
#include "sim/cli/economics.h"

#include <fmt/format.h>

#include <optional>

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

// Adds `key` only when the figure was asked for (and so computed).
template <typename T>
void Put(nlohmann::ordered_json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

std::string Cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.9g}", *v) : std::string();
}
std::string Cell(const std::optional<int64_t>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}

}  // namespace

economics::Figures SimulatedEconomics(const Scenario& s, const SimResult& r) {
  return economics::ComputeFigures(
      *s.economics, {.gpus = s.strategy.mesh.world(),
                     .tokens_per_step = s.training.global_batch * s.model.transformer.seq_len,
                     .step_time = r.step_time,
                     .utilization = economics::ComputeBusyFraction(r)});
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

nlohmann::ordered_json EconomicsJson(const Figures& f) {
  nlohmann::ordered_json j;
  j["gpus"] = f.gpus;
  j["utilization"] = f.utilization;
  j["tdp_bound"] = f.tdp_bound;
  j["gpu_idle_w"] = f.gpu_idle.watts();
  j["gpu_tdp_w"] = f.gpu_tdp.watts();
  j["gpu_power_w"] = f.gpu_power.watts();
  j["pue"] = f.pue;
  j["facility_power_w"] = f.facility_power.watts();
  j["energy_per_hour_kwh"] = f.energy_per_hour.ToKilowattHours();
  Put(j, "price_per_gpu_hour_usd", f.price_per_gpu_hour_usd);
  Put(j, "cost_per_hour_usd", f.cost_per_hour_usd);
  Put(j, "grid_intensity_gco2_per_kwh", f.grid_intensity_gco2_per_kwh);
  Put(j, "co2_kg_per_hour", f.co2_kg_per_hour);
  if (f.energy_per_step) j["energy_per_step_j"] = f.energy_per_step->joules();
  Put(j, "steps_to_train", f.steps);
  Put(j, "time_to_train_s", f.time_to_train_s);
  Put(j, "gpu_hours", f.gpu_hours);
  if (f.energy_to_train) j["energy_to_train_kwh"] = f.energy_to_train->ToKilowattHours();
  Put(j, "cost_usd", f.cost_usd);
  Put(j, "co2_kg", f.co2_kg);
  return j;
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
  j["economics"] = EconomicsJson(f);
  return j.dump(2) + "\n";
}

}  // namespace placesim::sim
