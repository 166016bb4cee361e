// Factories of the built-in network models, one per file of impl/ (internal to sim/network:
// RegisterBuiltinNetworkModels registers them).
// Thread-safety: the factories are pure.
#ifndef PLACESIM_SIM_NETWORK_IMPL_BUILTINS_H_
#define PLACESIM_SIM_NETWORK_IMPL_BUILTINS_H_

#include <memory>

#include "sim/network/network_model.h"

namespace placesim::sim::network_impl {

std::unique_ptr<const NetworkModel> MakeFlowModel();      // flow.cc
std::unique_ptr<const NetworkModel> MakeAnalyticModel();  // analytic.cc

}  // namespace placesim::sim::network_impl

#endif  // PLACESIM_SIM_NETWORK_IMPL_BUILTINS_H_
