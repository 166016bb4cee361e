// ChromeTraceWriter: a streaming writer of the Chrome Trace Event Format (the JSON that
// Perfetto and chrome://tracing open):
//   {"traceEvents":[
//   {...},
//   ...
//   ],"displayTimeUnit":"ns"}
// One event per line. Events go to the std::ostream as they are written, through a bounded
// buffer (64 KiB), so a trace of any length costs constant memory.
//
// Mapping: one process per GPU (pid), one thread per stream (tid), named and ordered by
// metadata events; work as complete events ("ph":"X"); memory as counter events ("ph":"C");
// dependencies as flow arrows ("ph":"s" -> "ph":"f", bound to the enclosing slice, "bp":"e").
// It is the TraceSink (trace_sink.h) that `placesim simulate --trace` writes through; the
// instants and flow arrows are extras of this format, outside the interface.
//
// Output is valid JSON for any input and deterministic:
//   - strings are escaped (quote, backslash, control characters) and invalid UTF-8 becomes
//     U+FFFD, one per maximal invalid subsequence (the Unicode / WHATWG rule);
//   - timestamps are integer picoseconds printed as microseconds with exactly six decimals by
//     integer arithmetic ("1.234567" for 1,234,567 ps), so no precision is lost and no
//     floating-point rounding drifts;
//   - doubles are printed with std::to_chars (shortest round-trip form, no locale); NaN and
//     infinities, which JSON cannot hold, are written as null.
//
// Thread-safety: none; one writer per output stream.
#ifndef PLACESIM_TRACES_CHROME_TRACE_WRITER_H_
#define PLACESIM_TRACES_CHROME_TRACE_WRITER_H_

#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/units.h"
#include "traces/trace_sink.h"

namespace placesim::traces {

class ChromeTraceWriter final : public TraceSink {
 public:
  // Writes the opening of the document to `out`, which must outlive the writer.
  explicit ChromeTraceWriter(std::ostream& out);
  // Finishes the document if Finish() was not called.
  ~ChromeTraceWriter() override;
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  // Names process `pid` (a GPU) and orders it among processes (lower sort_index first).
  void ProcessName(uint32_t pid, std::string_view name, int64_t sort_index) override;
  // Names thread `tid` (a stream) of process `pid` and orders it within the process.
  void ThreadName(uint32_t pid, uint32_t tid, std::string_view name, int64_t sort_index) override;

  // A slice from `start` lasting `duration` on (pid, tid). REQUIRES: duration >= 0.
  void Complete(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
                Duration start, Duration duration, std::span<const TraceArg> args) override;
  // The same slice without args.
  void Complete(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
                Duration start, Duration duration) {
    Complete(pid, tid, name, category, start, duration, {});
  }
  // A zero-duration marker on (pid, tid) (thread scope).
  void Instant(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
               Duration at, std::span<const TraceArg> args = {});
  // Counter track `name` of process `pid` takes the given series values from `at` on (memory in
  // bytes per state, for example). REQUIRES: every series is numeric (kInt or kDouble).
  void Counter(uint32_t pid, std::string_view name, Duration at,
               std::span<const TraceArg> series) override;
  // The two ends of a flow arrow with id `id`: FlowBegin inside the slice that causes it,
  // FlowEnd binding to the slice enclosing `at` on (pid, tid) ("bp":"e"). Both ends must use the
  // same name, category and id.
  void FlowBegin(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
                 uint64_t id, Duration at);
  void FlowEnd(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
               uint64_t id, Duration at);

  // Closes the document and flushes. Returns an error if the stream failed at any point.
  // Further events after Finish() are a program bug. Idempotent.
  Status Finish() override;

  uint64_t events_written() const { return events_; }

 private:
  void BeginEvent(char phase, uint32_t pid, uint32_t tid, std::string_view name);
  void EndEvent();
  void Args(std::span<const TraceArg> args);
  void Key(std::string_view key);
  void FlushIfFull();
  void Flush();

  std::ostream& out_;
  std::string buffer_;
  uint64_t events_ = 0;
  bool finished_ = false;
};

// Appends `s` to `out` as a JSON string literal (with quotes), escaping as described above.
void AppendJsonString(std::string& out, std::string_view s);
// Appends picoseconds as microseconds with exactly six decimals: 1 -> "0.000001",
// 1234567 -> "1.234567", -1 -> "-0.000001".
void AppendMicroseconds(std::string& out, int64_t ps);
// Appends a double in shortest round-trip form ("0.1", "1e+21"); null for NaN or infinity.
void AppendJsonDouble(std::string& out, double v);

}  // namespace placesim::traces

#endif  // PLACESIM_TRACES_CHROME_TRACE_WRITER_H_
