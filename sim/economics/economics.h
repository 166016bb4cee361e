// Money, time and energy of a training run: pure functions from a step's facts (GPU count,
// step time, tokens per step, how busy the GPUs are) and the scenario's economics settings to
// GPU-hours, dollars, joules and CO2. The model and its sources: docs/economics.md.
//
// Power model (per GPU):   P = P_idle + (P_tdp - P_idle) x u,   u in [0, 1]
//   u is the simulated compute-busy fraction of the step (the compute stream's busy time over
//   the step time, averaged over ranks); analyze has no step, so it reports the TDP bound
//   (u = 1) per hour only. Facility power = GPUs x P x PUE. Only GPU board power is modelled:
//   CPUs, NICs, switches and fans are left to the PUE (an assumption, stated in the docs).
// Units: energy as Energy (joules), power as Power (watts); money in US dollars and CO2 in
//   kilograms as doubles; time to train in seconds as a double, since a run can outlast
//   Duration's range (about 106 days).
// Thread-safety: stateless pure functions.
#ifndef PLACESIM_SIM_ECONOMICS_ECONOMICS_H_
#define PLACESIM_SIM_ECONOMICS_ECONOMICS_H_

#include <cstdint>
#include <optional>

#include "base/units.h"
#include "sim/economics/settings.h"
#include "sim/executor/executor.h"

namespace placesim::sim::economics {

// What one step costs to run, as simulated.
struct StepFacts {
  int64_t gpus = 0;             // every GPU of the job
  int64_t tokens_per_step = 0;  // global_batch x seq_len
  Duration step_time;           // zero: no step time known (analyze)
  double utilization = 1.0;     // compute-busy fraction, clamped to [0, 1]
};

struct Figures {
  int64_t gpus = 0;
  double utilization = 0;  // the u of the power model
  bool tdp_bound = false;  // true: u = 1 by assumption (analyze), not simulated
  Power gpu_idle;          // the settings the figures were made with, for the reports
  Power gpu_tdp;
  double pue = 1.0;
  std::optional<double> price_per_gpu_hour_usd;
  std::optional<double> grid_intensity_gco2_per_kwh;
  Power gpu_power;                          // one GPU, model above
  Power facility_power;                     // gpus x gpu_power x pue
  Energy energy_per_hour;                   // facility_power x 1 h
  std::optional<double> cost_per_hour_usd;  // gpus x price
  std::optional<double> co2_kg_per_hour;    // kWh per hour x intensity / 1000
  // Per step; set only with a step time.
  std::optional<Duration> step_time;
  std::optional<Energy> energy_per_step;  // facility_power x step_time
  // The run still to go; set only with a step time and tokens_to_train or steps_to_train.
  std::optional<int64_t> steps;           // steps_to_train, or ceil(tokens / tokens_per_step)
  std::optional<double> time_to_train_s;  // steps x step_time
  std::optional<double> gpu_hours;        // gpus x time_to_train / 3600
  std::optional<Energy> energy_to_train;  // facility_power x time_to_train
  std::optional<double> cost_usd;         // gpu_hours x price
  std::optional<double> co2_kg;           // kWh x intensity / 1000
};

// P_idle + (P_tdp - P_idle) x clamp(utilization, 0, 1).
Power GpuPower(const EconomicsSettings& s, double utilization);

// The figures of a step. REQUIRES: facts.gpus >= 1; tokens_per_step >= 1 when
// s.tokens_to_train is set. Complexity O(1).
Figures ComputeFigures(const EconomicsSettings& s, const StepFacts& facts);

// analyze: per-hour figures at the TDP bound (u = 1) for `gpus` GPUs; no step, no run total.
Figures TdpBoundFigures(const EconomicsSettings& s, int64_t gpus);

// The compute-busy fraction of a simulated step: sum over roles of ranks x compute_busy /
// step_time, over the sum of ranks. A faster role's GPUs wait for the slowest, and count as
// idle meanwhile. 0 when the step took no time.
double ComputeBusyFraction(const SimResult& r);

}  // namespace placesim::sim::economics

#endif  // PLACESIM_SIM_ECONOMICS_ECONOMICS_H_
