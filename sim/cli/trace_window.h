// Trace control for `placesim simulate --trace`: a window that limits what the trace holds
// (`--trace-window 0ms-50ms` or `mb:0-1`), and the size warning before a large trace. Both
// sit between the executor and the Chrome trace writer as a traces::TraceSink decorator, so
// the executor and the library facade stay unaware of them.
//
// Window semantics:
//   time  FROM-TO: a slice is kept when it overlaps [FROM, TO]; a counter sample is kept at
//         times in [FROM, TO], and the last value before FROM is repeated at FROM so the
//         counter tracks start at their true level.
//   mb:A-B: the slices of micro-batches A..B (inclusive; ops of no micro-batch, such as the
//         optimizer step, are left out), and the counters over the time span from the first
//         of those slices to the last (WithMicroBatchSpan finds it with a first, traceless
//         run: counters are most of a trace, so leaving them whole would hardly shrink it).
// Thread-safety: one WindowedTraceSink per trace, used by one thread (as the writer).
#ifndef PLACESIM_SIM_CLI_TRACE_WINDOW_H_
#define PLACESIM_SIM_CLI_TRACE_WINDOW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "traces/trace_sink.h"

namespace placesim::sim {

struct TraceWindow {
  std::optional<std::pair<Duration, Duration>> time;         // [from, to], from <= to
  std::optional<std::pair<int64_t, int64_t>> micro_batches;  // [first, last], first <= last
};

// "0ms-50ms", "1.5 ms-2 ms" (any ParseDuration unit, spaces allowed) or "mb:0-1" / "mb:3".
// Errors: kInvalidArgument naming --trace-window, the text and the accepted forms.
StatusOr<TraceWindow> ParseTraceWindow(std::string_view text);

// For a micro-batch window: calls `simulate` once with a sink that only measures the time
// span of those micro-batches' slices (over every traced rank), and returns the window with
// `time` set to it. Other windows come back unchanged without a call. Errors: `simulate`'s;
// kInvalidArgument when no slice belongs to the micro-batches (the step has fewer).
StatusOr<TraceWindow> WithMicroBatchSpan(
    TraceWindow window, const std::function<Status(traces::TraceSink& probe)>& simulate);

// Traces estimated above this size get the warning.
inline constexpr Bytes kLargeTraceWarning = Bytes::Count(100'000'000);

// Bytes one event takes in the Chrome trace JSON, measured on the shipped GPT-3 175B
// example (its default trace: 528,209,696 bytes for 2,566,692 expected events, 206 each;
// rounded up): an estimate, not a bound.
inline constexpr int64_t kTraceBytesPerEvent = 210;

// Forwards every call to `inner` (not owned), dropping what falls outside `window`, and on
// ExpectEvents warns on `warn` when the expected size exceeds kLargeTraceWarning.
class WindowedTraceSink : public traces::TraceSink {
 public:
  WindowedTraceSink(traces::TraceSink* inner, TraceWindow window, std::ostream* warn);

  void ExpectEvents(int64_t events) override;
  void ProcessName(uint32_t pid, std::string_view name, int64_t sort_index) override;
  void ThreadName(uint32_t pid, uint32_t tid, std::string_view name, int64_t sort_index) override;
  void Complete(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
                Duration start, Duration duration, std::span<const traces::TraceArg> args) override;
  void Counter(uint32_t pid, std::string_view name, Duration at,
               std::span<const traces::TraceArg> series) override;
  // Writes the carried-in counter values no in-window sample replaced, then finishes `inner`.
  Status Finish() override;

 private:
  struct Sample {
    std::vector<std::string> keys;  // the series' names (TraceArg holds views)
    std::vector<traces::TraceArg> series;
  };
  void FlushCarried(uint32_t pid, const std::string& name);

  traces::TraceSink* inner_;
  TraceWindow window_;
  std::ostream* warn_;
  // The last sample of each counter track before the time window opens.
  std::map<std::pair<uint32_t, std::string>, Sample> carried_;
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_TRACE_WINDOW_H_
