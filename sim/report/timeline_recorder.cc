// TimelineRecorder: see timeline_recorder.h.
#include "sim/report/timeline_recorder.h"

#include <algorithm>

#include "strategies/schedule.h"

namespace placesim::report {

Bytes MemorySample::total() const {
  Bytes sum;
  for (Bytes b : live) sum += b;
  return sum;
}

void TimelineRecorder::Complete(uint32_t pid, uint32_t tid, std::string_view /*name*/,
                                std::string_view category, Duration /*start*/, Duration duration,
                                std::span<const traces::TraceArg> args) {
  int64_t layer = -1;
  for (const traces::TraceArg& a : args) {
    if (a.key == "layer" && a.type == traces::TraceArg::Type::kInt) layer = a.i;
  }
  LayerTimes& t = layers_[pid][layer];
  using strategies::Stream;
  const auto stream = static_cast<Stream>(tid);
  if (stream == Stream::kComm || stream == Stream::kDpComm || stream == Stream::kP2p) {
    t.comm += duration;
  } else if (stream != Stream::kCompute) {
    t.other += duration;
  } else if (category == "forward") {
    t.forward += duration;
  } else if (category == "backward-input" || category == "backward-weight") {
    t.backward += duration;
  } else if (category == "recompute") {
    t.recompute += duration;
  } else {
    t.other += duration;
  }
}

void TimelineRecorder::Counter(uint32_t pid, std::string_view name, Duration at,
                               std::span<const traces::TraceArg> series) {
  if (name != "device memory") return;
  MemorySample s;
  s.at = at;
  for (size_t i = 0; i < series.size() && i < s.live.size(); ++i) {
    const traces::TraceArg& a = series[i];
    s.live[i] =
        Bytes::Count(a.type == traces::TraceArg::Type::kInt ? a.i : static_cast<int64_t>(a.d));
  }
  std::vector<MemorySample>& v = memory_[pid];
  // Several changes at one instant: only the last state is ever visible.
  if (!v.empty() && v.back().at == at) {
    v.back() = s;
  } else {
    v.push_back(s);
  }
}

const std::vector<MemorySample>& TimelineRecorder::memory(uint32_t pid) const {
  static const std::vector<MemorySample> kNone;
  auto it = memory_.find(pid);
  return it == memory_.end() ? kNone : it->second;
}

const std::map<int64_t, LayerTimes>& TimelineRecorder::layers(uint32_t pid) const {
  static const std::map<int64_t, LayerTimes> kNone;
  auto it = layers_.find(pid);
  return it == layers_.end() ? kNone : it->second;
}

std::vector<MemorySample> Downsample(const std::vector<MemorySample>& samples, Duration end,
                                     size_t max_points) {
  if (samples.size() <= max_points) return samples;
  const int64_t buckets = static_cast<int64_t>(max_points) - 2;
  const int64_t span = std::max<int64_t>(end.picoseconds(), 1);
  // The first sample (the static states) and the last are always kept; the buckets share the
  // rest of the budget.
  std::vector<MemorySample> out = {samples.front()};
  int64_t current = -1;
  for (size_t i = 1; i + 1 < samples.size(); ++i) {
    const MemorySample& s = samples[i];
    // __int128 keeps at x buckets exact for any step length.
    const auto bucket = static_cast<int64_t>(std::min<__int128>(
        static_cast<__int128>(std::max<int64_t>(s.at.picoseconds(), 0)) * buckets / span,
        buckets - 1));
    if (bucket != current) {
      out.push_back(s);
      current = bucket;
    } else if (s.total() > out.back().total()) {
      out.back() = s;
    }
  }
  out.push_back(samples.back());
  return out;
}

}  // namespace placesim::report
