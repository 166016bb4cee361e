// MemoryTracker: live bytes per (space, tag), peaks, and the device memory counter samples
// (see memory_tracker.h).
#include "sim/memory/memory_tracker.h"

#include <algorithm>
#include <utility>

namespace placesim::sim {

using strategies::MemorySpace;
using strategies::MemoryTag;

static_assert(kNumMemoryTags == static_cast<int>(MemoryTag::kStaging) + 1,
              "kNumMemoryTags must count strategies::MemoryTag");
static_assert(kNumMemorySpaces == static_cast<int>(MemorySpace::kNvme) + 1,
              "kNumMemorySpaces must count strategies::MemorySpace");

void MemoryTracker::TraceTo(traces::TraceSink* sink, std::span<const uint32_t> pids) {
  sink_ = pids.empty() ? nullptr : sink;
  pids_ = pids;
}

void MemoryTracker::Change(MemorySpace space, MemoryTag tag, int64_t delta, Duration now) {
  const size_t s = Index(space);
  live_[s][static_cast<size_t>(tag)] += delta;
  live_total_[s] += delta;
  const Bytes total = Bytes::Count(live_total_[s]);
  switch (space) {
    case MemorySpace::kDevice:
      // Strictly greater: the peak is the first instant the maximum is reached.
      if (total > device_peak_) {
        device_peak_ = total;
        device_peak_at_ = now;
        for (size_t t = 0; t < live_at_peak_.size(); ++t) {
          live_at_peak_[t] = Bytes::Count(live_[s][t]);
        }
      }
      if (sink_ != nullptr) TraceDevice(now);
      break;
    case MemorySpace::kHost:
      host_peak_ = std::max(host_peak_, total);
      break;
    case MemorySpace::kNvme:
      nvme_peak_ = std::max(nvme_peak_, total);
      break;
  }
}

void MemoryTracker::TraceDevice(Duration now) const {
  const auto& live = live_[Index(MemorySpace::kDevice)];
  const auto make_series = [&]<size_t... k>(std::index_sequence<k...>) {
    return std::array<traces::TraceArg, kNumMemoryTags>{
        traces::TraceArg(strategies::MemoryTagName(static_cast<MemoryTag>(k)), live[k])...};
  };
  const auto series = make_series(std::make_index_sequence<kNumMemoryTags>());
  for (uint32_t pid : pids_) sink_->Counter(pid, "device memory", now, series);
}

}  // namespace placesim::sim
