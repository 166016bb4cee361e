// PluginRegistry: plug-ins (network models, collective algorithms) registered by name, each
// with a one-line description and a citation, in the manner of SimGrid's model registry. A
// registry is an object, filled by explicit Register calls (RegisterBuiltin... functions, or a
// test's own), never by static initializers; an id is a plug-in's position in registration
// order, dense from 0, so per-plug-in counters are plain vectors and outputs list plug-ins in
// that order.
//
// Reserved names (e.g. "auto" for collective algorithms) are choices the owner handles itself:
// they cannot be registered and lead the list of valid names.
//
// Thread-safety: Register is not thread-safe; the const members are, so a registry filled
// once may be shared by concurrent simulations.
#ifndef PLACESIM_SIM_NETWORK_PLUGIN_REGISTRY_H_
#define PLACESIM_SIM_NETWORK_PLUGIN_REGISTRY_H_

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/status.h"

namespace placesim::sim {

// Plugin: any type with name(), description() and citation() returning string views.
template <typename Plugin>
class PluginRegistry {
 public:
  // `kind` names a plug-in in messages ("network model"); `reserved` lists the names the
  // owner answers itself.
  explicit PluginRegistry(std::string kind, std::vector<std::string> reserved = {})
      : kind_(std::move(kind)), reserved_(std::move(reserved)) {}

  // Adds `plugin` under plugin->name() and returns its id.
  // REQUIRES: the name is non-empty, not reserved and not registered yet. O(plug-ins).
  int Register(std::unique_ptr<const Plugin> plugin) {
    PLACESIM_CHECK(plugin != nullptr && !plugin->name().empty());
    PLACESIM_CHECK(!Find(plugin->name()).has_value() && !IsReserved(plugin->name()));
    plugins_.push_back(std::move(plugin));
    return static_cast<int>(plugins_.size()) - 1;
  }

  int size() const { return static_cast<int>(plugins_.size()); }
  // REQUIRES: 0 <= id < size().
  const Plugin& at(int id) const {
    PLACESIM_CHECK(id >= 0 && id < size());
    return *plugins_[static_cast<size_t>(id)];
  }
  // The id of the plug-in registered as `name`; nullopt when none. O(plug-ins).
  std::optional<int> Find(std::string_view name) const {
    for (size_t k = 0; k < plugins_.size(); ++k) {
      if (plugins_[k]->name() == name) return static_cast<int>(k);
    }
    return std::nullopt;
  }
  bool IsReserved(std::string_view name) const {
    for (const std::string& r : reserved_) {
      if (r == name) return true;
    }
    return false;
  }
  // The id of `name`; kInvalidArgument `unknown network model "foo"; valid: flow, analytic`
  // when it is neither registered nor reserved (a reserved name also answers that error: the
  // owner checks those first).
  StatusOr<int> Lookup(std::string_view name) const {
    if (std::optional<int> id = Find(name)) return *id;
    return InvalidArgumentError(
        fmt::format("unknown {} \"{}\"; valid: {}", kind_, name, ValidNames()));
  }
  // Reserved names, then registered ones in id order: "auto, ring, tree".
  std::string ValidNames() const {
    std::string out;
    for (const std::string& r : reserved_) out += (out.empty() ? "" : ", ") + r;
    for (const auto& p : plugins_) {
      out += (out.empty() ? "" : ", ") + std::string(p->name());
    }
    return out;
  }

 private:
  std::string kind_;
  std::vector<std::string> reserved_;
  std::vector<std::unique_ptr<const Plugin>> plugins_;
};

// A registry of type R filled by `Fill` on first use and never changed after: the immutable
// built-ins (thread-safe static initialization; no mutable global state).
template <typename R, void (*Fill)(R&)>
const R& BuiltOnce() {
  static const R* const kRegistry = [] {
    auto* registry = new R();
    Fill(*registry);
    return registry;
  }();
  return *kRegistry;
}

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_NETWORK_PLUGIN_REGISTRY_H_
