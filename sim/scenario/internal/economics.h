// Resolution of the scenario's `economics` message: defaults filled in (the GPU preset's
// power, PUE 1.0) and every rule checked, each broken rule reported as "PATH: VALUE: RULE"
// like the rest of the scenario. Internal to sim/scenario; kept apart from the model and
// hardware resolution, which it only reads (the resolved GPU's power figures).
// Thread-safety: stateless.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_ECONOMICS_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_ECONOMICS_H_

#include <string>
#include <vector>

#include "sim/economics/settings.h"
#include "sim/scenario/proto/scenario.pb.h"
#include "topology/spec.h"

namespace placesim::sim::scenario_internal {

// Allowed ranges, inclusive; stated in the schema and in the messages.
inline constexpr double kMaxPricePerGpuHourUsd = 1000;
inline constexpr int64_t kMaxTokensToTrain = 1'000'000'000'000'000'000;  // 1e18
inline constexpr int64_t kMaxStepsToTrain = 1'000'000'000'000;           // 1e12
inline constexpr double kMaxGridIntensity = 2000;                        // gCO2e/kWh
inline constexpr double kMinPue = 1.0;
inline constexpr double kMaxPue = 3.0;
inline constexpr double kMinGpuWatts = 1;
inline constexpr double kMaxGpuWatts = 5000;

struct EconomicsProblem {
  std::string path;   // e.g. "economics.pue"
  std::string value;  // as written
  std::string rule;   // what is allowed
};

// `gpu` is the resolved device (its tdp and idle_power are the defaults). Appends one entry to
// `problems` per broken rule; the returned settings are meaningful only when none was added.
economics::EconomicsSettings ResolveEconomics(const ::placesim::scenario::proto::Economics& doc,
                                              const topology::DeviceSpec& gpu,
                                              std::vector<EconomicsProblem>* problems);

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_ECONOMICS_H_
