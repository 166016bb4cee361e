// MemoryTracker against hand-derived timelines: the device peak is the first instant of the
// maximum with what was live then per tag; host and NVMe peaks are kept apart; every device
// change, and only those, writes one "device memory" counter sample per traced process.
#include "sim/memory/memory_tracker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace placesim::sim {
namespace {

using strategies::MemorySpace;
using strategies::MemoryTag;

constexpr size_t Idx(MemoryTag t) { return static_cast<size_t>(t); }

// A TraceSink that records the counter samples it receives (the only calls a tracker makes).
class RecordingSink final : public traces::TraceSink {
 public:
  struct Sample {
    uint32_t pid;
    std::string name;
    Duration at;
    std::vector<std::pair<std::string, int64_t>> series;
  };
  void ProcessName(uint32_t, std::string_view, int64_t) override { ++other_calls; }
  void ThreadName(uint32_t, uint32_t, std::string_view, int64_t) override { ++other_calls; }
  void Complete(uint32_t, uint32_t, std::string_view, std::string_view, Duration, Duration,
                std::span<const traces::TraceArg>) override {
    ++other_calls;
  }
  void Counter(uint32_t pid, std::string_view name, Duration at,
               std::span<const traces::TraceArg> series) override {
    Sample s{pid, std::string(name), at, {}};
    for (const traces::TraceArg& a : series) s.series.emplace_back(std::string(a.key), a.i);
    samples.push_back(std::move(s));
  }
  Status Finish() override { return OkStatus(); }

  std::vector<Sample> samples;
  int other_calls = 0;
};

TEST(MemoryTracker, ThePeakIsTheFirstInstantOfTheMaximumWithWhatWasLiveThen) {
  // Device timeline (bytes):
  //   t=1 us  +100 params                 total 100
  //   t=2 us  +50 activations             total 150  <- new maximum
  //   t=3 us  -50 activations             total 100
  //   t=4 us  +30 grads, +20 activations  total 150  equal, not greater: the peak stays at t=2
  //   t=5 us  -150 (everything freed)     total 0
  // So peak = 150 at 2 us, with params 100, activations 50 and grads 0 live then.
  MemoryTracker m;
  const auto dev = MemorySpace::kDevice;
  m.Allocate(dev, MemoryTag::kParams, Bytes::Count(100), Microseconds(1));
  m.Allocate(dev, MemoryTag::kActivations, Bytes::Count(50), Microseconds(2));
  m.Free(dev, MemoryTag::kActivations, Bytes::Count(50), Microseconds(3));
  m.Allocate(dev, MemoryTag::kGrads, Bytes::Count(30), Microseconds(4));
  m.Allocate(dev, MemoryTag::kActivations, Bytes::Count(20), Microseconds(4));
  EXPECT_EQ(m.live_total(dev), Bytes::Count(150));
  EXPECT_EQ(m.live(dev, MemoryTag::kGrads), Bytes::Count(30));
  m.Free(dev, MemoryTag::kParams, Bytes::Count(100), Microseconds(5));
  m.Free(dev, MemoryTag::kGrads, Bytes::Count(30), Microseconds(5));
  m.Free(dev, MemoryTag::kActivations, Bytes::Count(20), Microseconds(5));

  EXPECT_EQ(m.device_peak(), Bytes::Count(150));
  EXPECT_EQ(m.device_peak_at(), Microseconds(2));
  const auto& at_peak = m.live_at_device_peak();
  EXPECT_EQ(at_peak[Idx(MemoryTag::kParams)], Bytes::Count(100));
  EXPECT_EQ(at_peak[Idx(MemoryTag::kActivations)], Bytes::Count(50));
  EXPECT_EQ(at_peak[Idx(MemoryTag::kGrads)], Bytes::Count(0));
  Bytes sum;
  for (Bytes b : at_peak) sum += b;
  EXPECT_EQ(sum, m.device_peak());
  EXPECT_EQ(m.live_total(dev), Bytes::Count(0));
}

TEST(MemoryTracker, HostAndNvmePeaksAreKeptApartFromTheDevice) {
  // Host: +1000, -400, +300 -> live 600 then 900; the peak is the first 1000.
  // NVMe: +5, +7 -> 12. The device never allocates: its peak stays 0 at time 0.
  MemoryTracker m;
  m.Allocate(MemorySpace::kHost, MemoryTag::kOptimizer, Bytes::Count(1000), Microseconds(1));
  m.Free(MemorySpace::kHost, MemoryTag::kOptimizer, Bytes::Count(400), Microseconds(2));
  m.Allocate(MemorySpace::kHost, MemoryTag::kGrads, Bytes::Count(300), Microseconds(3));
  m.Allocate(MemorySpace::kNvme, MemoryTag::kOptimizer, Bytes::Count(5), Microseconds(3));
  m.Allocate(MemorySpace::kNvme, MemoryTag::kParams, Bytes::Count(7), Microseconds(4));
  EXPECT_EQ(m.host_peak(), Bytes::Count(1000));
  EXPECT_EQ(m.live_total(MemorySpace::kHost), Bytes::Count(900));
  EXPECT_EQ(m.nvme_peak(), Bytes::Count(12));
  EXPECT_EQ(m.device_peak(), Bytes::Count(0));
  EXPECT_EQ(m.device_peak_at(), Duration::Zero());
}

TEST(MemoryTracker, EveryDeviceChangeWritesOneCounterSamplePerTracedProcess) {
  // Two traced processes (3 and 7), two device changes and one host change: 2 x 2 = 4
  // samples, in call order, each with every tag's live bytes in MemoryTag order.
  RecordingSink sink;
  const std::vector<uint32_t> pids = {3, 7};
  MemoryTracker m;
  m.TraceTo(&sink, pids);
  m.Allocate(MemorySpace::kDevice, MemoryTag::kParams, Bytes::Count(64), Microseconds(1));
  m.Allocate(MemorySpace::kHost, MemoryTag::kOptimizer, Bytes::Count(99), Microseconds(1));
  m.Allocate(MemorySpace::kDevice, MemoryTag::kStaging, Bytes::Count(8), Microseconds(2));
  ASSERT_EQ(sink.samples.size(), 4u);
  EXPECT_EQ(sink.other_calls, 0);
  EXPECT_EQ(sink.samples[0].pid, 3u);
  EXPECT_EQ(sink.samples[1].pid, 7u);
  EXPECT_EQ(sink.samples[2].at, Microseconds(2));
  for (const RecordingSink::Sample& s : sink.samples) {
    EXPECT_EQ(s.name, "device memory");
    ASSERT_EQ(s.series.size(), static_cast<size_t>(kNumMemoryTags));
    for (int t = 0; t < kNumMemoryTags; ++t) {
      EXPECT_EQ(s.series[static_cast<size_t>(t)].first,
                strategies::MemoryTagName(static_cast<MemoryTag>(t)));
    }
  }
  // The last sample: params 64 and staging 8; the host's 99 bytes are not device memory.
  const auto& last = sink.samples[3].series;
  EXPECT_EQ(last[Idx(MemoryTag::kParams)].second, 64);
  EXPECT_EQ(last[Idx(MemoryTag::kStaging)].second, 8);
  EXPECT_EQ(last[Idx(MemoryTag::kOptimizer)].second, 0);
}

TEST(MemoryTracker, WithoutTracedProcessesNothingIsWritten) {
  RecordingSink sink;
  MemoryTracker m;
  m.TraceTo(&sink, {});
  m.Allocate(MemorySpace::kDevice, MemoryTag::kParams, Bytes::Count(1), Microseconds(1));
  EXPECT_TRUE(sink.samples.empty());
}

}  // namespace
}  // namespace placesim::sim
