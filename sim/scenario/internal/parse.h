// Parsing scenario text (Protobuf text format or JSON) into the generated Scenario message,
// with errors as values: "NAME:LINE:COLUMN: message" for text format and JSON syntax errors,
// "NAME: PATH: message" for JSON structure errors. Nothing is logged.
// Internal to sim/scenario. Thread-safety: stateless.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_PARSE_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_PARSE_H_

#include <string>
#include <string_view>

#include "base/status.h"
#include "sim/scenario/proto/scenario.pb.h"
#include "sim/scenario/scenario.h"

namespace placesim::sim::scenario_internal {

// Parses `text` into `out` (cleared first). kAuto sniffs the format. Refuses texts larger
// than kMaxScenarioBytes.
Status ParseScenario(std::string_view text, ScenarioFormat format, std::string_view display_name,
                     ::placesim::scenario::proto::Scenario* out);

// The format a file name implies: kTextProto or kJson by extension, kAuto otherwise.
ScenarioFormat FormatForPath(std::string_view path);

// Reads at most kMaxScenarioBytes + 1 bytes of a file (so a huge or endless file is refused
// without reading it whole). kNotFound when it cannot be opened or is a directory.
StatusOr<std::string> ReadScenarioFile(const std::string& path);

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_PARSE_H_
