// ValidateChromeTrace: checks that a Chrome Trace Event Format document is one placesim is
// willing to hand to a user. Used by the trace writer's tests and by the simulator's end-to-end
// tests.
//
// Checks, all reported at once (one line per problem, "traceEvents[12].dur: -1: must be >= 0"):
//   - the text parses as JSON: an object with a "traceEvents" array of objects;
//   - every event has a "ph" string, a non-empty "name" string and an integer "pid";
//   - complete events ("X") have numeric "ts" and "dur" >= 0, and on one (pid, tid) no two
//     overlap (touching — one ending exactly where the next starts — is fine; strict nesting
//     is accepted only when allow_nesting is set);
//   - counter events ("C") have an "args" object of numbers, none negative;
//   - flow events ("s", "f") have an "id", and every id that ends also begins, and vice versa;
//   - metadata events ("M") carry "args".
// Times are compared as integer picoseconds (microseconds * 1e6, rounded), so events written
// back to back by ChromeTraceWriter never look overlapped through floating-point noise.
//
// Thread-safety: pure function.
#ifndef PLACESIM_TRACES_CHROME_TRACE_VALIDATOR_H_
#define PLACESIM_TRACES_CHROME_TRACE_VALIDATOR_H_

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace placesim::traces {

struct TraceValidationOptions {
  // Accept complete events strictly nested in another on the same thread (a child slice).
  // Default false: placesim puts one operation at a time on a stream.
  bool allow_nesting = false;
};

struct TraceSummary {
  uint64_t events = 0;
  uint64_t complete_events = 0;
  uint64_t counter_events = 0;
  uint64_t flow_events = 0;
  uint64_t metadata_events = 0;
  uint64_t threads = 0;  // distinct (pid, tid) with complete events
};

// Returns a summary of a valid trace, or kInvalidArgument listing every problem found
// (overlaps are listed up to 20 per document). Complexity: O(n log n) for n events.
StatusOr<TraceSummary> ValidateChromeTrace(std::string_view json,
                                           const TraceValidationOptions& options = {});

}  // namespace placesim::traces

#endif  // PLACESIM_TRACES_CHROME_TRACE_VALIDATOR_H_
