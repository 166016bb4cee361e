// The sane range of every physical quantity a scenario writes (sizes, bandwidths, latencies,
// compute rates): a value outside it is a typo or a unit slip ("1 Kb/s" NVLink, a "1e6 s"
// latency), and the model would otherwise turn it into a step of centuries or a product past
// int64. The parser (base/unit_parser.h) bounds what a unit type can hold; these bound what
// hardware can be, generously (a thousand times past today's parts on either side).
//
// Invariants: every range is closed, [lo, hi], with lo > 0 for rates and sizes; zero is not
// judged here (the resolver's own rules say whether 0 means "none" or is an error), so a
// field's problems are never reported twice. Each bound's text parses back to the bound
// (tests/sim/scenario_validation_test.cc).
//
// Thread-safety: pure functions over constant tables.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_FIELD_RANGES_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_FIELD_RANGES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/units.h"

namespace placesim::sim::scenario_internal {

// Dimensionless fields. A kernel at under 0.1% of the GPU's peak is not a kernel the model
// describes; past 1000:1 a fabric's uplinks carry nothing.
inline constexpr double kMinEfficiency = 0.001;
inline constexpr double kMaxOversubscription = 1000;

// The rule `v` breaks at the scenario field `path` ("cluster.node.nvlink_bandwidth",
// "cluster.links[3].latency"; list indices are ignored), e.g.
//   "must be 0 (no such link) or between 1 MB/s and 1000 TB/s"
// nullopt when `v` is within the field's range, is zero, or the field has no range here.
std::optional<std::string> QuantityOutOfRange(std::string_view path, Bytes v);
std::optional<std::string> QuantityOutOfRange(std::string_view path, Bandwidth v);
std::optional<std::string> QuantityOutOfRange(std::string_view path, Duration v);
std::optional<std::string> QuantityOutOfRange(std::string_view path, FlopRate v);

// One ranged field, for the documentation and the tests: its path ("cluster.links[].latency")
// and its bounds as a user writes them ("0 s", "1 s").
struct RangedField {
  std::string path;
  std::string lo, hi;
};
std::vector<RangedField> RangedQuantityFields();

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_FIELD_RANGES_H_
