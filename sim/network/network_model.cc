// The built-in network models' registration (see network_model.h).
#include "sim/network/network_model.h"

#include "sim/network/impl/builtins.h"

namespace placesim::sim {

void RegisterBuiltinNetworkModels(NetworkModelRegistry& registry) {
  registry.Register(network_impl::MakeFlowModel());
  registry.Register(network_impl::MakeAnalyticModel());
}

const NetworkModelRegistry& BuiltinNetworkModels() {
  return BuiltOnce<NetworkModelRegistry, RegisterBuiltinNetworkModels>();
}

}  // namespace placesim::sim
