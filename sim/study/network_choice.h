// The network-model choice of the studies that simulate (sweep, search): "scenario" keeps
// each scenario's simulation.network_model, "flow" and "analytic" override it.
// Thread-safety: immutable data.
#ifndef PLACESIM_SIM_STUDY_NETWORK_CHOICE_H_
#define PLACESIM_SIM_STUDY_NETWORK_CHOICE_H_

#include <optional>
#include <string>
#include <vector>

#include "sim/executor/settings.h"

namespace placesim::study {

// "scenario", "flow", "analytic".
inline const std::vector<std::string>& NetworkChoices() {
  static const std::vector<std::string> choices = {"scenario", "flow", "analytic"};
  return choices;
}

// The override a choice asks for; nullopt for "scenario" (and for unknown names, which the
// callers check against NetworkChoices first).
inline std::optional<sim::NetworkModel> NetworkOverride(const std::string& choice) {
  if (choice == "analytic") return sim::NetworkModel::kAnalytic;
  if (choice == "flow") return sim::NetworkModel::kFlow;
  return std::nullopt;
}

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_NETWORK_CHOICE_H_
