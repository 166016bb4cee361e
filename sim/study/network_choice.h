// The network-model choice of the studies that simulate (sweep, search): "scenario" keeps
// each scenario's simulation.network_model; a registered network model's name ("flow",
// "analytic", sim/network/network_model.h) overrides it.
// Thread-safety: immutable data.
#ifndef PLACESIM_SIM_STUDY_NETWORK_CHOICE_H_
#define PLACESIM_SIM_STUDY_NETWORK_CHOICE_H_

#include <optional>
#include <string>
#include <vector>

#include "sim/network/network_model.h"

namespace placesim::study {

// "scenario", then the built-in network models in registration order ("flow", "analytic").
inline const std::vector<std::string>& NetworkChoices() {
  static const std::vector<std::string> choices = [] {
    std::vector<std::string> out = {"scenario"};
    const sim::NetworkModelRegistry& models = sim::BuiltinNetworkModels();
    for (int id = 0; id < models.size(); ++id) out.emplace_back(models.at(id).name());
    return out;
  }();
  return choices;
}

// The override a choice asks for; nullopt for "scenario" (and for unknown names, which the
// callers check against NetworkChoices first).
inline std::optional<std::string> NetworkOverride(const std::string& choice) {
  if (choice == "scenario" || !sim::BuiltinNetworkModels().Find(choice)) return std::nullopt;
  return choice;
}

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_NETWORK_CHOICE_H_
