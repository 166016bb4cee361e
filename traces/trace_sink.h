// TraceSink: where a simulation writes its timeline. The executor names one process per traced
// rank and one thread per stream, emits a complete event per op that takes time and a counter
// sample per memory change, and the caller calls Finish() once the run is over. Implementations
// decide the format and the destination (ChromeTraceWriter streams Chrome Trace Event JSON; a
// test may record the calls).
//
// Contract for implementations: the calls arrive in the order the simulation makes them, which
// is deterministic for given inputs; a sink must not reorder them if its output is to be
// byte-identical across runs. Events may be emitted one virtual call each: the executor makes at
// most one call per traced process and op or memory change, never one per engine event of the
// flow solver.
//
// Thread-safety: none; one sink per simulation (two runs must not share one).
#ifndef PLACESIM_TRACES_TRACE_SINK_H_
#define PLACESIM_TRACES_TRACE_SINK_H_

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/units.h"

namespace placesim::traces {

// A named value in an event's "args" (or a counter series). Views: the key and a string value
// must outlive the call they are passed to.
struct TraceArg {
  enum class Type : uint8_t { kString, kInt, kDouble };

  TraceArg(std::string_view k, std::string_view v) : key(k), type(Type::kString), str(v) {}
  TraceArg(std::string_view k, const char* v) : key(k), type(Type::kString), str(v) {}
  TraceArg(std::string_view k, const std::string& v) : key(k), type(Type::kString), str(v) {}
  template <std::integral T>
  TraceArg(std::string_view k, T v) : key(k), type(Type::kInt), i(static_cast<int64_t>(v)) {}
  TraceArg(std::string_view k, double v) : key(k), type(Type::kDouble), d(v) {}

  std::string_view key;
  Type type;
  std::string_view str;
  int64_t i = 0;
  double d = 0;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;

  // Called once before any event with the number of slices and counter samples the run
  // expects to write at most (ops x traced ranks), so a sink can warn about a large trace
  // before writing it. Default: ignored.
  virtual void ExpectEvents(int64_t events) {}
  // Names process `pid` (a traced rank) and orders it among processes (lower sort_index first).
  virtual void ProcessName(uint32_t pid, std::string_view name, int64_t sort_index) = 0;
  // Names thread `tid` (a stream) of process `pid` and orders it within the process.
  virtual void ThreadName(uint32_t pid, uint32_t tid, std::string_view name,
                          int64_t sort_index) = 0;
  // A slice from `start` lasting `duration` on (pid, tid), with `args` (may be empty).
  // REQUIRES: duration >= 0.
  virtual void Complete(uint32_t pid, uint32_t tid, std::string_view name,
                        std::string_view category, Duration start, Duration duration,
                        std::span<const TraceArg> args) = 0;
  // Counter track `name` of process `pid` takes the given series values from `at` on (bytes
  // per memory tag, for example). REQUIRES: every series is numeric (kInt or kDouble).
  virtual void Counter(uint32_t pid, std::string_view name, Duration at,
                       std::span<const TraceArg> series) = 0;
  // Ends the timeline and flushes it. Returns an error if writing failed at any point. Further
  // events after Finish() are a program bug. Idempotent.
  virtual Status Finish() = 0;
};

}  // namespace placesim::traces

#endif  // PLACESIM_TRACES_TRACE_SINK_H_
