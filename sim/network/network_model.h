// Network models: how the transfers of one simulation share the cluster's links. A model is a
// plug-in registered by name (NetworkModelRegistry); for each run it creates a Network over
// the run's directed links, which the executor drives:
//   Start      a transfer (the phases of a collective, a send or a copy; phase.h) begins;
//              the model either times it at once (no contention: the analytic model) or
//              reports its end later through AdvanceTo (the flow model);
//   NextEventTime / version / AdvanceTo   the model's own events, which the executor arms on
//              the engine (a model that times transfers at once has none);
//   link_stats per link: bytes carried, busy time, peak concurrent flows.
//
// Built-in models (impl/): "flow" (FlowNetwork, max-min fair sharing of every link; SimGrid's
// CM02 flow model) and "analytic" (alpha-beta per phase, no contention; Hockney 1994).
// Adding a model: one file in impl/ with a NetworkModel subclass and its factory, and one line
// in RegisterBuiltinNetworkModels (network_model.cc).
//
// Thread-safety: a Network belongs to one run. A registry filled once may be shared (see
// plugin_registry.h); BuiltinNetworkModels() is immutable and safe to share.
#ifndef PLACESIM_SIM_NETWORK_NETWORK_MODEL_H_
#define PLACESIM_SIM_NETWORK_NETWORK_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/engine/event_queue.h"
#include "sim/network/flow_network.h"
#include "sim/network/phase.h"
#include "sim/network/plugin_registry.h"

namespace placesim::sim {

// One run's network.
class Network {
 public:
  virtual ~Network() = default;

  // Starts transfer `tag` at `now`: `phases` run one after another (empty phases are
  // skipped), each flow of a phase carrying PhaseBytes(phase, size) and paying (steps - 1) x its
  // route latency beyond the route's own. Returns the transfer's duration when the model
  // knows it now; nullopt when AdvanceTo will report `tag` once its last phase ends.
  // REQUIRES: `phases` outlive the transfer and hold at least one flow; now >= the last time
  // given. Complexity: the model's (flow: O(flows x route length) plus deferred re-solves).
  virtual std::optional<Duration> Start(SimTime now, std::span<const CommPhase> phases,
                                        TransferSize size, uint64_t tag) = 0;
  // The earliest time AdvanceTo will change something; SimTime::Max() when nothing is pending.
  virtual SimTime NextEventTime() = 0;
  // True once a pending event's time saturated at SimTime::Max(): NextEventTime() then answers
  // Max() with work still pending, and the executor must fail the run (the time limit), not
  // wait for an event that will never come.
  virtual bool time_overflowed() const { return false; }
  // Changes whenever NextEventTime() may have changed (see FlowNetwork::version).
  virtual uint64_t version() const = 0;
  // Moves the model to `now` and appends the tags of the transfers that ended, in order of
  // their last flow's completion, then start order.
  virtual void AdvanceTo(SimTime now, std::vector<uint64_t>& finished) = 0;
  // What the link carried so far (bytes, busy time, peak concurrent flows).
  virtual LinkStats link_stats(LinkIndex link) const = 0;
};

// A registered network model: its name, a one-line description, its source, and a factory.
class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  virtual std::string_view citation() const = 0;
  // A network over `links` (link i is LinkIndex i). Errors: the model's validation of the
  // links (kInvalidArgument naming the link).
  virtual StatusOr<std::unique_ptr<Network>> Create(std::vector<LinkSpec> links) const = 0;
};

// Unknown names answer `unknown network model "packet"; valid: flow, analytic`.
class NetworkModelRegistry : public PluginRegistry<NetworkModel> {
 public:
  NetworkModelRegistry() : PluginRegistry<NetworkModel>("network model") {}
};

// Registers "flow" then "analytic".
void RegisterBuiltinNetworkModels(NetworkModelRegistry& registry);
// The built-in models, built on first use and immutable after.
const NetworkModelRegistry& BuiltinNetworkModels();

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_NETWORK_NETWORK_MODEL_H_
