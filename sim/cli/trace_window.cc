#include "sim/cli/trace_window.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "base/unit_parser.h"

namespace placesim::sim {
namespace {

constexpr std::string_view kForms =
    "expected a time range FROM-TO (e.g. 0ms-50ms) or a micro-batch range mb:A-B (e.g. mb:0-1)";

Status WindowError(std::string_view text, std::string_view why) {
  return InvalidArgumentError(fmt::format("--trace-window: \"{}\": {}; {}", text, why, kForms));
}

std::optional<int64_t> ParseIndex(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

StatusOr<TraceWindow> ParseMicroBatches(std::string_view text, std::string_view range) {
  size_t dash = range.find('-');
  std::optional<int64_t> first = ParseIndex(range.substr(0, dash));
  std::optional<int64_t> last =
      dash == std::string_view::npos ? first : ParseIndex(range.substr(dash + 1));
  if (!first || !last) return WindowError(text, "micro-batches are whole numbers from 0");
  if (*first > *last) return WindowError(text, "the range ends before it starts");
  TraceWindow w;
  w.micro_batches = std::make_pair(*first, *last);
  return w;
}

// The '-' between FROM and TO: the first one after a digit or unit letter (a duration has no
// sign, so any '-' separates).
StatusOr<TraceWindow> ParseTimes(std::string_view text) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return WindowError(text, "no '-' between FROM and TO");
  StatusOr<Duration> from = ParseDuration(text.substr(0, dash));
  if (!from.ok()) return WindowError(text, from.status().message());
  StatusOr<Duration> to = ParseDuration(text.substr(dash + 1));
  if (!to.ok()) return WindowError(text, to.status().message());
  if (*to < *from) return WindowError(text, "the range ends before it starts");
  TraceWindow w;
  w.time = std::make_pair(*from, *to);
  return w;
}

std::optional<int64_t> IntArg(std::span<const traces::TraceArg> args, std::string_view key) {
  for (const traces::TraceArg& a : args) {
    if (a.key == key && a.type == traces::TraceArg::Type::kInt) return a.i;
  }
  return std::nullopt;
}

// Measures the span of the slices of a micro-batch range; writes nothing.
class SpanProbe : public traces::TraceSink {
 public:
  explicit SpanProbe(std::pair<int64_t, int64_t> micro_batches) : micro_batches_(micro_batches) {}
  void ProcessName(uint32_t, std::string_view, int64_t) override {}
  void ThreadName(uint32_t, uint32_t, std::string_view, int64_t) override {}
  void Complete(uint32_t, uint32_t, std::string_view, std::string_view, Duration start,
                Duration duration, std::span<const traces::TraceArg> args) override {
    std::optional<int64_t> mb = IntArg(args, "micro_batch");
    if (!mb || *mb < micro_batches_.first || *mb > micro_batches_.second) return;
    span_ = span_ ? std::make_pair(std::min(span_->first, start),
                                   std::max(span_->second, start + duration))
                  : std::make_pair(start, start + duration);
  }
  void Counter(uint32_t, std::string_view, Duration, std::span<const traces::TraceArg>) override {}
  Status Finish() override { return OkStatus(); }
  const std::optional<std::pair<Duration, Duration>>& span() const { return span_; }

 private:
  std::pair<int64_t, int64_t> micro_batches_;
  std::optional<std::pair<Duration, Duration>> span_;
};

}  // namespace

StatusOr<TraceWindow> WithMicroBatchSpan(
    TraceWindow window, const std::function<Status(traces::TraceSink& probe)>& simulate) {
  if (!window.micro_batches) return window;
  SpanProbe probe(*window.micro_batches);
  RETURN_IF_ERROR(simulate(probe));
  if (!probe.span()) {
    return InvalidArgumentError(
        fmt::format("--trace-window: \"mb:{}-{}\": no traced op belongs to these micro-batches "
                    "(they are numbered from 0 up to the micro-batches per step)",
                    window.micro_batches->first, window.micro_batches->second));
  }
  window.time = probe.span();
  return window;
}

StatusOr<TraceWindow> ParseTraceWindow(std::string_view text) {
  if (text.substr(0, 3) == "mb:") return ParseMicroBatches(text, text.substr(3));
  return ParseTimes(text);
}

WindowedTraceSink::WindowedTraceSink(traces::TraceSink* inner, TraceWindow window,
                                     std::ostream* warn)
    : inner_(inner), window_(std::move(window)), warn_(warn) {}

void WindowedTraceSink::ExpectEvents(int64_t events) {
  inner_->ExpectEvents(events);
  const Bytes expected = Bytes::Count(events * kTraceBytesPerEvent);
  if (warn_ == nullptr || expected <= kLargeTraceWarning) return;
  const bool windowed = window_.time || window_.micro_batches;
  *warn_ << fmt::format(
      "placesim simulate: warning: the trace will take about {} ({} events{}); to shrink it, "
      "trace fewer ranks (--trace-ranks 0) or a part of the step (--trace-window 0ms-50ms, "
      "--trace-window mb:0-1)\n",
      ToString(expected), events,
      windowed ? ", before --trace-window drops what is outside it" : "");
}

void WindowedTraceSink::ProcessName(uint32_t pid, std::string_view name, int64_t sort_index) {
  inner_->ProcessName(pid, name, sort_index);
}

void WindowedTraceSink::ThreadName(uint32_t pid, uint32_t tid, std::string_view name,
                                   int64_t sort_index) {
  inner_->ThreadName(pid, tid, name, sort_index);
}

void WindowedTraceSink::Complete(uint32_t pid, uint32_t tid, std::string_view name,
                                 std::string_view category, Duration start, Duration duration,
                                 std::span<const traces::TraceArg> args) {
  if (window_.time) {
    const auto [from, to] = *window_.time;
    if (start > to || start + duration < from) return;
  }
  if (window_.micro_batches) {
    std::optional<int64_t> mb = IntArg(args, "micro_batch");
    const auto [first, last] = *window_.micro_batches;
    if (!mb || *mb < first || *mb > last) return;
  }
  inner_->Complete(pid, tid, name, category, start, duration, args);
}

void WindowedTraceSink::FlushCarried(uint32_t pid, const std::string& name) {
  auto it = carried_.find({pid, name});
  if (it == carried_.end()) return;
  inner_->Counter(pid, name, window_.time->first, it->second.series);
  carried_.erase(it);
}

void WindowedTraceSink::Counter(uint32_t pid, std::string_view name, Duration at,
                                std::span<const traces::TraceArg> series) {
  if (!window_.time) {
    inner_->Counter(pid, name, at, series);
    return;
  }
  const auto [from, to] = *window_.time;
  if (at > to) return;
  const std::string key(name);
  if (at < from) {
    // Keep the latest value only: the track's level when the window opens.
    Sample& s = carried_[{pid, key}];
    s.keys.clear();
    s.series.clear();
    for (const traces::TraceArg& a : series) s.keys.emplace_back(a.key);
    for (size_t i = 0; i < series.size(); ++i) {
      s.series.push_back(series[i]);
      s.series.back().key = s.keys[i];
    }
    return;
  }
  if (at > from) FlushCarried(pid, key);
  carried_.erase({pid, key});  // a sample exactly at FROM replaces the carried one
  inner_->Counter(pid, name, at, series);
}

Status WindowedTraceSink::Finish() {
  while (!carried_.empty()) {
    auto it = carried_.begin();
    FlushCarried(it->first.first, it->first.second);
  }
  return inner_->Finish();
}

}  // namespace placesim::sim
