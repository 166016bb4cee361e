// Tests of trace control (sim/cli/trace_window.h): the --trace-window forms, what the window
// keeps, the carried-in counter level, and the warning before a large trace.
#include "sim/cli/trace_window.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace placesim::sim {
namespace {

using ::testing::HasSubstr;

// Records what reaches the writer: "slice NAME" and "counter NAME@PS=VALUE".
class Recorder : public traces::TraceSink {
 public:
  std::vector<std::string> events;
  int64_t expected = -1;
  void ExpectEvents(int64_t n) override { expected = n; }
  void ProcessName(uint32_t, std::string_view, int64_t) override {}
  void ThreadName(uint32_t, uint32_t, std::string_view, int64_t) override {}
  void Complete(uint32_t, uint32_t, std::string_view name, std::string_view, Duration, Duration,
                std::span<const traces::TraceArg>) override {
    events.push_back("slice " + std::string(name));
  }
  void Counter(uint32_t, std::string_view name, Duration at,
               std::span<const traces::TraceArg> series) override {
    events.push_back("counter " + std::string(name) + "@" + std::to_string(at.picoseconds()) + "=" +
                     std::to_string(series[0].i));
  }
  Status Finish() override { return OkStatus(); }
};

void Slice(traces::TraceSink& s, const char* name, double from_ms, double to_ms, int64_t mb) {
  const traces::TraceArg args[] = {traces::TraceArg("micro_batch", mb)};
  s.Complete(0, 0, name, "forward", Milliseconds(from_ms), Milliseconds(to_ms - from_ms), args);
}

void Sample(traces::TraceSink& s, double at_ms, int64_t bytes) {
  const traces::TraceArg series[] = {traces::TraceArg("params", bytes)};
  s.Counter(0, "device memory", Milliseconds(at_ms), series);
}

TEST(ParseTraceWindow, AcceptsTimeAndMicroBatchRanges) {
  StatusOr<TraceWindow> t = ParseTraceWindow("0ms-50ms");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->time->first, Duration::Zero());
  EXPECT_EQ(t->time->second, Milliseconds(50));
  StatusOr<TraceWindow> mb = ParseTraceWindow("mb:0-1");
  ASSERT_TRUE(mb.ok());
  EXPECT_EQ(*mb->micro_batches, std::make_pair(int64_t{0}, int64_t{1}));
  EXPECT_EQ(*ParseTraceWindow("mb:3")->micro_batches, std::make_pair(int64_t{3}, int64_t{3}));
}

TEST(ParseTraceWindow, RefusesWithTheAcceptedForms) {
  for (const char* bad : {"50ms", "50ms-10ms", "mb:2-1", "mb:x", "0 parsecs-1ms"}) {
    StatusOr<TraceWindow> w = ParseTraceWindow(bad);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_THAT(w.status().message(), HasSubstr("--trace-window"));
    EXPECT_THAT(w.status().message(), HasSubstr("mb:0-1"));
  }
}

TEST(WindowedTraceSink, TimeWindowKeepsOverlappingSlicesAndCarriesCounters) {
  Recorder rec;
  WindowedTraceSink sink(&rec, *ParseTraceWindow("10ms-20ms"), nullptr);
  Sample(sink, 0, 100);         // before: carried
  Sample(sink, 5, 200);         // before: replaces the carried value
  Slice(sink, "a", 0, 9, 0);    // ends before 10 ms: dropped
  Slice(sink, "b", 8, 12, 0);   // overlaps: kept
  Sample(sink, 15, 300);        // in: the carried 200 first, at 10 ms
  Slice(sink, "c", 19, 30, 1);  // overlaps: kept
  Slice(sink, "d", 21, 30, 1);  // starts after 20 ms: dropped
  Sample(sink, 25, 400);        // after: dropped
  ASSERT_TRUE(sink.Finish().ok());
  const std::vector<std::string> expected = {"slice b", "counter device memory@10000000000=200",
                                             "counter device memory@15000000000=300", "slice c"};
  EXPECT_EQ(rec.events, expected);
}

TEST(WindowedTraceSink, CarriedLevelIsWrittenEvenWithoutSamplesInTheWindow) {
  Recorder rec;
  WindowedTraceSink sink(&rec, *ParseTraceWindow("10ms-20ms"), nullptr);
  Sample(sink, 5, 200);
  ASSERT_TRUE(sink.Finish().ok());
  EXPECT_EQ(rec.events, std::vector<std::string>{"counter device memory@10000000000=200"});
}

TEST(WindowedTraceSink, MicroBatchRangeAloneFiltersOnlySlices) {
  Recorder rec;
  WindowedTraceSink sink(&rec, *ParseTraceWindow("mb:1-2"), nullptr);
  Slice(sink, "mb0", 0, 1, 0);
  Slice(sink, "mb1", 1, 2, 1);
  Slice(sink, "mb2", 2, 3, 2);
  Slice(sink, "mb3", 3, 4, 3);
  Slice(sink, "optimizer", 4, 5, -1);  // no micro-batch
  Sample(sink, 0, 1);
  ASSERT_TRUE(sink.Finish().ok());
  const std::vector<std::string> expected = {"slice mb1", "slice mb2", "counter device memory@0=1"};
  EXPECT_EQ(rec.events, expected);
}

TEST(WithMicroBatchSpan, SetsTheTimeSpanOfTheMicroBatches) {
  auto simulate = [](traces::TraceSink& probe) {
    Slice(probe, "mb0", 0, 4, 0);
    Slice(probe, "mb1", 2, 6, 1);
    Slice(probe, "mb1 backward", 9, 12, 1);
    Slice(probe, "mb2", 7, 8, 2);
    Sample(probe, 1, 5);
    return OkStatus();
  };
  StatusOr<TraceWindow> w = WithMicroBatchSpan(*ParseTraceWindow("mb:1"), simulate);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // mb 1 runs from its first slice's start (2 ms) to its last slice's end (12 ms).
  EXPECT_EQ(*w->time, std::make_pair(Milliseconds(2), Milliseconds(12)));
  EXPECT_EQ(*w->micro_batches, std::make_pair(int64_t{1}, int64_t{1}));

  StatusOr<TraceWindow> none = WithMicroBatchSpan(*ParseTraceWindow("mb:7"), simulate);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("no traced op belongs"));

  int calls = 0;
  auto counting = [&](traces::TraceSink&) { return ++calls, OkStatus(); };
  ASSERT_TRUE(WithMicroBatchSpan(*ParseTraceWindow("0ms-1ms"), counting).ok());
  EXPECT_EQ(calls, 0);  // a time window needs no first run
}

TEST(WindowedTraceSink, WarnsBeforeALargeTrace) {
  Recorder rec;
  std::ostringstream warn;
  WindowedTraceSink sink(&rec, TraceWindow{}, &warn);
  // 100 MB / kTraceBytesPerEvent events is the threshold; half of it stays quiet.
  const int64_t at_threshold = kLargeTraceWarning.count() / kTraceBytesPerEvent;
  sink.ExpectEvents(at_threshold / 2);
  EXPECT_EQ(warn.str(), "");
  EXPECT_EQ(rec.expected, at_threshold / 2);  // forwarded
  // 2.5 M events x 210 B = 525 MB, about the GPT-3 175B example's default trace.
  sink.ExpectEvents(2'500'000);
  EXPECT_THAT(warn.str(), HasSubstr("525.00 MB"));
  EXPECT_THAT(warn.str(), HasSubstr("--trace-ranks"));
  EXPECT_THAT(warn.str(), HasSubstr("--trace-window"));
}

}  // namespace
}  // namespace placesim::sim
