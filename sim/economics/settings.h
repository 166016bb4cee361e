// The `economics` message of a scenario, resolved: what a user asked to be priced and how.
// Filled by the scenario loader (sim/scenario); read by the figures in economics.h. A
// scenario without the message carries no EconomicsSettings at all, and then no output shows
// a cost or energy figure.
//
// Invariants (checked by the loader): price, grid intensity >= 0; pue in [1, 3]; at most one
// of tokens_to_train and steps_to_train, each > 0; 0 <= gpu_idle < gpu_tdp.
// Thread-safety: a plain value.
#ifndef PLACESIM_SIM_ECONOMICS_SETTINGS_H_
#define PLACESIM_SIM_ECONOMICS_SETTINGS_H_

#include <cstdint>
#include <optional>

#include "base/units.h"

namespace placesim::sim::economics {

struct EconomicsSettings {
  // US dollars per GPU per hour; unset = no cost is printed (there is no honest default).
  std::optional<double> price_per_gpu_hour_usd;
  // Training still to go; unset = per-step and per-hour figures only.
  std::optional<int64_t> tokens_to_train;
  std::optional<int64_t> steps_to_train;
  // Grams of CO2-equivalent per kWh drawn; unset = no CO2 is printed.
  std::optional<double> grid_intensity_gco2_per_kwh;
  // Facility energy / IT energy (power usage effectiveness); 1.0 = the GPUs' energy only.
  double pue = 1.0;
  // Per-GPU board power limit and idle draw: the preset's unless the scenario overrides them.
  Power gpu_tdp;
  Power gpu_idle;
};

}  // namespace placesim::sim::economics

#endif  // PLACESIM_SIM_ECONOMICS_SETTINGS_H_
