// Money, time and energy figures; see economics.h for the model.
#include "sim/economics/economics.h"

#include <algorithm>

namespace placesim::sim::economics {
namespace {

constexpr double kSecondsPerHour = 3600;

// Grams per kilogram: intensity is in g/kWh, CO2 is reported in kg.
double Co2Kg(const EconomicsSettings& s, Energy e) {
  return e.ToKilowattHours() * *s.grid_intensity_gco2_per_kwh / 1000.0;
}

// Whole steps to go: steps_to_train, or the tokens rounded up to whole steps.
std::optional<int64_t> StepsToGo(const EconomicsSettings& s, int64_t tokens_per_step) {
  if (s.steps_to_train) return *s.steps_to_train;
  if (s.tokens_to_train && tokens_per_step > 0) {
    return (*s.tokens_to_train + tokens_per_step - 1) / tokens_per_step;
  }
  return std::nullopt;
}

// The run's totals from the step's; REQUIRES f.step_time and f.steps.
void AddRunTotals(const EconomicsSettings& s, Figures& f) {
  const double seconds = static_cast<double>(*f.steps) * f.step_time->ToSeconds();
  f.time_to_train_s = seconds;
  f.gpu_hours = static_cast<double>(f.gpus) * seconds / kSecondsPerHour;
  f.energy_to_train = Joules(f.facility_power.watts() * seconds);
  if (s.price_per_gpu_hour_usd) f.cost_usd = *f.gpu_hours * *s.price_per_gpu_hour_usd;
  if (s.grid_intensity_gco2_per_kwh) f.co2_kg = Co2Kg(s, *f.energy_to_train);
}

}  // namespace

Power GpuPower(const EconomicsSettings& s, double utilization) {
  const double u = std::clamp(utilization, 0.0, 1.0);
  return s.gpu_idle + (s.gpu_tdp - s.gpu_idle) * u;
}

Figures ComputeFigures(const EconomicsSettings& s, const StepFacts& facts) {
  Figures f;
  f.gpus = facts.gpus;
  f.utilization = std::clamp(facts.utilization, 0.0, 1.0);
  f.gpu_idle = s.gpu_idle;
  f.gpu_tdp = s.gpu_tdp;
  f.pue = s.pue;
  f.price_per_gpu_hour_usd = s.price_per_gpu_hour_usd;
  f.grid_intensity_gco2_per_kwh = s.grid_intensity_gco2_per_kwh;
  f.gpu_power = GpuPower(s, f.utilization);
  f.facility_power = f.gpu_power * (static_cast<double>(facts.gpus) * s.pue);
  f.energy_per_hour = f.facility_power * Seconds(kSecondsPerHour);
  if (s.price_per_gpu_hour_usd) {
    f.cost_per_hour_usd = static_cast<double>(facts.gpus) * *s.price_per_gpu_hour_usd;
  }
  if (s.grid_intensity_gco2_per_kwh) f.co2_kg_per_hour = Co2Kg(s, f.energy_per_hour);
  if (facts.step_time <= Duration::Zero()) return f;
  f.step_time = facts.step_time;
  f.energy_per_step = f.facility_power * facts.step_time;
  f.steps = StepsToGo(s, facts.tokens_per_step);
  if (f.steps) AddRunTotals(s, f);
  return f;
}

Figures TdpBoundFigures(const EconomicsSettings& s, int64_t gpus) {
  Figures f = ComputeFigures(
      s, {.gpus = gpus, .tokens_per_step = 0, .step_time = Duration::Zero(), .utilization = 1.0});
  f.tdp_bound = true;
  return f;
}

double ComputeBusyFraction(const SimResult& r) {
  if (r.step_time <= Duration::Zero()) return 0;
  double busy = 0;
  int64_t ranks = 0;
  for (const RoleResult& role : r.roles) {
    busy += static_cast<double>(role.ranks) * (role.compute_busy / r.step_time);
    ranks += role.ranks;
  }
  return ranks > 0 ? busy / static_cast<double>(ranks) : 0;
}

}  // namespace placesim::sim::economics
