// Built-in hardware presets: devices (GPUs) and nodes, with their public datasheet figures.
// The catalogues are immutable; a scenario names a preset and overrides fields of its copy.
// Thread-safety: the catalogues are built once on first use and never change.
#ifndef PLACESIM_TOPOLOGY_PRESETS_H_
#define PLACESIM_TOPOLOGY_PRESETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "topology/spec.h"

namespace placesim::topology {

// Every device preset, in a stable order (for `placesim presets`).
const std::vector<DeviceSpec>& DevicePresets();
// nullptr when there is no preset of that name (names are case-sensitive).
const DeviceSpec* FindDevicePreset(std::string_view name);
std::vector<std::string> DevicePresetNames();

const std::vector<NodeSpec>& NodePresets();
const NodeSpec* FindNodePreset(std::string_view name);
std::vector<std::string> NodePresetNames();

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_PRESETS_H_
