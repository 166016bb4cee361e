// TimelineRecorder: a traces::TraceSink that keeps, instead of writing a trace, what a report
// draws from one simulated step: each traced process's device-memory samples (the executor's
// "device memory" counter, one series per MemoryTag) and, per layer, the busy time of its ops by
// phase and stream. The executor already emits both as it runs (sim/executor/executor.h,
// "Trace"), so the report needs no change to the executor and costs nothing when not asked for.
//
// Invariants: samples of one process are in the order received, which is time order (the
// MemoryTracker's `now` never decreases); layer sums are exact sums of the slices' durations.
// Memory: one sample (72 bytes) per device Alloc or Free of each traced process, and one entry
// per (process, layer).
//
// Thread-safety: none; one recorder per simulation, like every sink.
#ifndef PLACESIM_SIM_REPORT_TIMELINE_RECORDER_H_
#define PLACESIM_SIM_REPORT_TIMELINE_RECORDER_H_

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/memory/memory_tracker.h"
#include "traces/trace_sink.h"

namespace placesim::report {

// The live device bytes of every MemoryTag (index: strategies::MemoryTag) from `at` on.
struct MemorySample {
  Duration at;
  std::array<Bytes, sim::kNumMemoryTags> live{};
  Bytes total() const;
};

// Busy time of one layer's ops in one step, summed over micro-batches: compute-stream ops by
// phase (forward; backward = backward-input + backward-weight; recompute), communication =
// the comm and p2p streams (collectives and pipeline sends, busy not exposed), other = the
// optimizer's compute and the copy and host streams.
struct LayerTimes {
  Duration forward;
  Duration backward;
  Duration recompute;
  Duration comm;
  Duration other;
};

class TimelineRecorder final : public traces::TraceSink {
 public:
  void ProcessName(uint32_t, std::string_view, int64_t) override {}
  void ThreadName(uint32_t, uint32_t, std::string_view, int64_t) override {}
  void Complete(uint32_t pid, uint32_t tid, std::string_view name, std::string_view category,
                Duration start, Duration duration, std::span<const traces::TraceArg> args) override;
  void Counter(uint32_t pid, std::string_view name, Duration at,
               std::span<const traces::TraceArg> series) override;
  Status Finish() override { return Status(); }

  // Samples of process `pid` (a traced rank), in time order; empty when it had none.
  const std::vector<MemorySample>& memory(uint32_t pid) const;
  // Per layer (the ops' layer index; -1 for ops outside any layer) of process `pid`.
  const std::map<int64_t, LayerTimes>& layers(uint32_t pid) const;

 private:
  std::map<uint32_t, std::vector<MemorySample>> memory_;
  std::map<uint32_t, std::map<int64_t, LayerTimes>> layers_;
};

// At most `max_points` samples that keep the shape of `samples` over [0, end]: the first and
// the last sample are kept, and [0, end] is cut into max_points - 2 equal buckets, each keeping
// its sample (of the others) with the largest total (the first such), so the peak always
// survives. Returns `samples` unchanged when it is short enough. REQUIRES: max_points >= 3.
// Complexity: O(samples).
std::vector<MemorySample> Downsample(const std::vector<MemorySample>& samples, Duration end,
                                     size_t max_points);

}  // namespace placesim::report

#endif  // PLACESIM_SIM_REPORT_TIMELINE_RECORDER_H_
