// Resolution of the `economics` message; see economics.h.
#include "sim/scenario/internal/economics.h"

#include <fmt/format.h>

#include <cmath>

namespace placesim::sim::scenario_internal {
namespace {

namespace pb = ::placesim::scenario::proto;

// The value as the user would write it again: integers without exponent, doubles shortest.
std::string Show(double v) { return fmt::format("{}", v); }

void CheckRange(const char* path, double v, double lo, double hi, const char* unit,
                std::vector<EconomicsProblem>* problems) {
  if (std::isfinite(v) && v >= lo && v <= hi) return;
  problems->push_back({path, Show(v), fmt::format("must be from {} to {}{}", lo, hi, unit)});
}

void CheckCount(const char* path, int64_t v, int64_t hi, std::vector<EconomicsProblem>* problems) {
  if (v >= 1 && v <= hi) return;
  problems->push_back({path, fmt::format("{}", v), fmt::format("must be from 1 to {}", hi)});
}

}  // namespace

economics::EconomicsSettings ResolveEconomics(const pb::Economics& doc,
                                              const topology::DeviceSpec& gpu,
                                              std::vector<EconomicsProblem>* problems) {
  economics::EconomicsSettings out;
  if (doc.has_price_per_gpu_hour_usd()) {
    out.price_per_gpu_hour_usd = doc.price_per_gpu_hour_usd();
    CheckRange("economics.price_per_gpu_hour_usd", doc.price_per_gpu_hour_usd(), 0,
               kMaxPricePerGpuHourUsd, " US dollars", problems);
  }
  if (doc.has_tokens_to_train() && doc.has_steps_to_train()) {
    problems->push_back({"economics.steps_to_train", fmt::format("{}", doc.steps_to_train()),
                         "set either tokens_to_train or steps_to_train, not both"});
  }
  if (doc.has_tokens_to_train()) {
    out.tokens_to_train = doc.tokens_to_train();
    CheckCount("economics.tokens_to_train", doc.tokens_to_train(), kMaxTokensToTrain, problems);
  }
  if (doc.has_steps_to_train()) {
    out.steps_to_train = doc.steps_to_train();
    CheckCount("economics.steps_to_train", doc.steps_to_train(), kMaxStepsToTrain, problems);
  }
  if (doc.has_grid_intensity_gco2_per_kwh()) {
    out.grid_intensity_gco2_per_kwh = doc.grid_intensity_gco2_per_kwh();
    CheckRange("economics.grid_intensity_gco2_per_kwh", doc.grid_intensity_gco2_per_kwh(), 0,
               kMaxGridIntensity, " gCO2e/kWh", problems);
  }
  out.pue = doc.has_pue() ? doc.pue() : 1.0;
  CheckRange("economics.pue", out.pue, kMinPue, kMaxPue, "", problems);

  out.gpu_tdp = doc.has_gpu_tdp_watts() ? Watts(doc.gpu_tdp_watts()) : gpu.tdp;
  out.gpu_idle = doc.has_gpu_idle_watts() ? Watts(doc.gpu_idle_watts()) : gpu.idle_power;
  if (doc.has_gpu_tdp_watts()) {
    CheckRange("economics.gpu_tdp_watts", doc.gpu_tdp_watts(), kMinGpuWatts, kMaxGpuWatts, " W",
               problems);
  } else if (gpu.tdp <= Power::Zero()) {
    problems->push_back({"economics.gpu_tdp_watts", "(unset)",
                         fmt::format("the GPU \"{}\" has no power figure; set it, from {} to {} W",
                                     gpu.name, kMinGpuWatts, kMaxGpuWatts)});
    return out;
  }
  if (doc.has_gpu_idle_watts()) {
    CheckRange("economics.gpu_idle_watts", doc.gpu_idle_watts(), 0, kMaxGpuWatts, " W", problems);
  }
  if (out.gpu_idle >= out.gpu_tdp) {
    problems->push_back(
        {"economics.gpu_idle_watts", Show(out.gpu_idle.watts()),
         fmt::format("must be below the GPU's power limit ({} W)", Show(out.gpu_tdp.watts()))});
  }
  return out;
}

}  // namespace placesim::sim::scenario_internal
