// MemoryTracker: the memory timeline of one simulated rank. Schedules allocate and free bytes
// per (MemorySpace, MemoryTag) as their Alloc and Free ops run; the tracker keeps the live bytes
// of each, the device's peak (the first instant the device total reaches its maximum) with what
// was live then per tag, the host's and the NVMe's peaks, and, when traced, writes a "device
// memory" counter sample (one series per MemoryTag) at every device change.
//
// Invariants: device_peak() >= 0 and equals the sum of live_at_device_peak(); it never
// decreases, and device_peak_at() only moves when it strictly grows. Live bytes may go negative
// only if a schedule frees more than it allocated (the tracker does not judge; the schedule's
// tests hold allocations and frees to balance).
//
// Thread-safety: none; one tracker per simulated rank, used by one thread. Cost: O(1) per change
// (plus one counter event per traced process for a device change).
#ifndef PLACESIM_SIM_MEMORY_MEMORY_TRACKER_H_
#define PLACESIM_SIM_MEMORY_MEMORY_TRACKER_H_

#include <array>
#include <cstdint>
#include <span>

#include "base/units.h"
#include "strategies/schedule.h"
#include "traces/trace_sink.h"

namespace placesim::sim {

inline constexpr int kNumMemoryTags = 8;    // strategies::MemoryTag values
inline constexpr int kNumMemorySpaces = 3;  // strategies::MemorySpace values

class MemoryTracker {
 public:
  // Every later device change writes a counter sample named "device memory" to `sink` for each
  // process of `pids`, at the change's time, with the live bytes of every tag (in MemoryTag
  // order). `sink` (not owned) and the memory `pids` views must outlive the tracker's use; a null
  // sink or no pids traces nothing (the default).
  void TraceTo(traces::TraceSink* sink, std::span<const uint32_t> pids);

  // `bytes` of `tag` become live (Allocate) or are released (Free) in `space` at `now`.
  // REQUIRES: `now` does not decrease from call to call.
  void Allocate(strategies::MemorySpace space, strategies::MemoryTag tag, Bytes bytes,
                Duration now) {
    Change(space, tag, bytes.count(), now);
  }
  void Free(strategies::MemorySpace space, strategies::MemoryTag tag, Bytes bytes, Duration now) {
    Change(space, tag, -bytes.count(), now);
  }

  // Bytes of `tag` live now in `space`, and their total over the tags.
  Bytes live(strategies::MemorySpace space, strategies::MemoryTag tag) const {
    return Bytes::Count(live_[Index(space)][static_cast<size_t>(tag)]);
  }
  Bytes live_total(strategies::MemorySpace space) const {
    return Bytes::Count(live_total_[Index(space)]);
  }

  // The device's peak total, when it was first reached (zero before any allocation), and the
  // bytes of each tag live at that instant (index: MemoryTag).
  Bytes device_peak() const { return device_peak_; }
  Duration device_peak_at() const { return device_peak_at_; }
  const std::array<Bytes, kNumMemoryTags>& live_at_device_peak() const { return live_at_peak_; }
  // The most bytes ever live at once on the host and on the NVMe.
  Bytes host_peak() const { return host_peak_; }
  Bytes nvme_peak() const { return nvme_peak_; }

 private:
  static size_t Index(strategies::MemorySpace space) { return static_cast<size_t>(space); }
  void Change(strategies::MemorySpace space, strategies::MemoryTag tag, int64_t delta,
              Duration now);
  void TraceDevice(Duration now) const;

  std::array<std::array<int64_t, kNumMemoryTags>, kNumMemorySpaces> live_{};
  std::array<int64_t, kNumMemorySpaces> live_total_{};
  Bytes device_peak_;
  Duration device_peak_at_;
  std::array<Bytes, kNumMemoryTags> live_at_peak_{};
  Bytes host_peak_;
  Bytes nvme_peak_;
  traces::TraceSink* sink_ = nullptr;
  std::span<const uint32_t> pids_;
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_MEMORY_MEMORY_TRACKER_H_
