// ValidateChromeTrace: parse with nlohmann::json, then check events one by one and overlaps
// per thread (see chrome_trace_validator.h).
#include "traces/chrome_trace_validator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"

namespace placesim::traces {
namespace {

using nlohmann::json;

constexpr int kMaxOverlapsReported = 20;

struct Slice {
  int64_t start_ps;
  int64_t end_ps;
  size_t index;
};

int64_t ToPicoseconds(double us) { return std::llround(us * 1e6); }

std::string Path(size_t i, std::string_view field) {
  return fmt::format("traceEvents[{}].{}", i, field);
}

// Reports partial overlaps (and, unless nesting is allowed, any overlap) among the slices of
// one thread. `slices` is sorted by start, longest first.
void CheckThread(const std::vector<Slice>& slices, bool allow_nesting, int& reported,
                 ErrorList& errors) {
  std::vector<const Slice*> open;  // enclosing slices, innermost last
  for (const Slice& s : slices) {
    while (!open.empty() && open.back()->end_ps <= s.start_ps) open.pop_back();
    if (!open.empty()) {
      const Slice& outer = *open.back();
      bool nested = s.end_ps <= outer.end_ps;
      if (!(nested && allow_nesting)) {
        if (reported++ < kMaxOverlapsReported) {
          errors.Add(Path(s.index, "ts"), fmt::format("{} ps", s.start_ps),
                     fmt::format("overlaps traceEvents[{}] ([{}, {}) ps) on the same pid/tid",
                                 outer.index, outer.start_ps, outer.end_ps));
        }
        if (!nested) continue;  // keep the outer slice as the reference
      }
    }
    open.push_back(&s);
  }
}

// The state of one validation: the summary so far, the errors, the slices per thread and the
// flow ends seen. Each Check* handles one kind of event; the order of the calls (events in
// order, then flow pairs, then overlaps) is the order of the messages.
class Validator {
 public:
  explicit Validator(const TraceValidationOptions& options) : options_(options) {}

  void CheckEvent(size_t i, const json& e);
  void CheckFlowPairs();
  void CheckOverlaps();
  StatusOr<TraceSummary> Result() {
    summary_.threads = threads_.size();
    RETURN_IF_ERROR(errors_.ToStatus());
    return summary_;
  }

 private:
  void CheckComplete(size_t i, const json& e, int64_t pid, int64_t tid);
  void CheckCounter(size_t i, const json& e);
  void CheckFlow(size_t i, const json& e, bool begin);

  const TraceValidationOptions& options_;
  ErrorList errors_;
  TraceSummary summary_;
  std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> threads_;
  std::map<std::string, size_t> flow_begins_, flow_ends_;  // "cat/name/id" -> event index
};

void Validator::CheckEvent(size_t i, const json& e) {
  ++summary_.events;
  if (!e.is_object()) {
    errors_.Add(fmt::format("traceEvents[{}]", i), e.dump(), "must be an object");
    return;
  }
  auto ph_it = e.find("ph");
  if (ph_it == e.end() || !ph_it->is_string() || ph_it->get<std::string>().empty()) {
    errors_.Add(Path(i, "ph"), ph_it == e.end() ? "missing" : ph_it->dump(),
                "must be a non-empty string");
    return;
  }
  const std::string ph = ph_it->get<std::string>();
  auto name_it = e.find("name");
  if (name_it == e.end() || !name_it->is_string() || name_it->get<std::string>().empty()) {
    errors_.Add(Path(i, "name"), name_it == e.end() ? "missing" : name_it->dump(),
                "must be a non-empty string");
  }
  auto pid_it = e.find("pid");
  if (pid_it == e.end() || !pid_it->is_number_integer()) {
    errors_.Add(Path(i, "pid"), pid_it == e.end() ? "missing" : pid_it->dump(),
                "must be an integer");
    return;
  }
  const int64_t pid = pid_it->get<int64_t>();
  const int64_t tid =
      e.contains("tid") && e["tid"].is_number_integer() ? e["tid"].get<int64_t>() : 0;
  bool timed = ph != "M";
  if (timed && (!e.contains("ts") || !e["ts"].is_number())) {
    errors_.Add(Path(i, "ts"), e.contains("ts") ? e["ts"].dump() : "missing",
                "must be a number (microseconds)");
    return;
  }
  if (ph == "X") {
    CheckComplete(i, e, pid, tid);
  } else if (ph == "C") {
    CheckCounter(i, e);
  } else if (ph == "s" || ph == "f") {
    CheckFlow(i, e, ph == "s");
  } else if (ph == "M") {
    ++summary_.metadata_events;
    if (!e.contains("args") || !e["args"].is_object()) {
      errors_.Add(Path(i, "args"), "missing", "metadata events carry an args object");
    }
  }
}

void Validator::CheckComplete(size_t i, const json& e, int64_t pid, int64_t tid) {
  ++summary_.complete_events;
  if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
    errors_.Add(Path(i, "dur"), e.contains("dur") ? e["dur"].dump() : "missing",
                "must be a number >= 0 (microseconds)");
    return;
  }
  int64_t start = ToPicoseconds(e["ts"].get<double>());
  int64_t end = start + ToPicoseconds(e["dur"].get<double>());
  threads_[{pid, tid}].push_back(Slice{start, end, i});
}

void Validator::CheckCounter(size_t i, const json& e) {
  ++summary_.counter_events;
  auto args = e.find("args");
  if (args == e.end() || !args->is_object() || args->empty()) {
    errors_.Add(Path(i, "args"), args == e.end() ? "missing" : args->dump(),
                "a counter needs an object of numeric series");
    return;
  }
  for (auto it = args->begin(); it != args->end(); ++it) {
    if (!it->is_number()) {
      errors_.Add(Path(i, "args." + it.key()), it->dump(), "counter values must be numbers");
    } else if (it->get<double>() < 0) {
      errors_.Add(Path(i, "args." + it.key()), it->dump(), "counter values must be >= 0");
    }
  }
}

void Validator::CheckFlow(size_t i, const json& e, bool begin) {
  ++summary_.flow_events;
  if (!e.contains("id") || !(e["id"].is_number_integer() || e["id"].is_string())) {
    errors_.Add(Path(i, "id"), e.contains("id") ? e["id"].dump() : "missing",
                "a flow event needs an integer or string id");
    return;
  }
  std::string key =
      fmt::format("{}/{}/{}", e.value("cat", ""), e.value("name", ""), e["id"].dump());
  (begin ? flow_begins_ : flow_ends_).emplace(key, i);
}

void Validator::CheckFlowPairs() {
  for (const auto& [key, index] : flow_ends_) {
    if (!flow_begins_.contains(key)) {
      errors_.Add(Path(index, "id"), key, "flow ends without a matching begin (ph \"s\")");
    }
  }
  for (const auto& [key, index] : flow_begins_) {
    if (!flow_ends_.contains(key)) {
      errors_.Add(Path(index, "id"), key, "flow begins without a matching end (ph \"f\")");
    }
  }
}

void Validator::CheckOverlaps() {
  int overlaps = 0;
  for (auto& [thread, slices] : threads_) {
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      if (a.start_ps != b.start_ps) return a.start_ps < b.start_ps;
      if (a.end_ps != b.end_ps) return a.end_ps > b.end_ps;
      return a.index < b.index;
    });
    CheckThread(slices, options_.allow_nesting, overlaps, errors_);
  }
  if (overlaps > kMaxOverlapsReported) {
    errors_.AddLine(fmt::format("... and {} more overlaps", overlaps - kMaxOverlapsReported));
  }
}

}  // namespace

StatusOr<TraceSummary> ValidateChromeTrace(std::string_view text,
                                           const TraceValidationOptions& options) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("chrome trace: not valid JSON");
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return InvalidArgumentError("chrome trace: expected an object with a \"traceEvents\" array");
  }
  const json& events = doc["traceEvents"];
  Validator v(options);
  for (size_t i = 0; i < events.size(); ++i) v.CheckEvent(i, events[i]);
  v.CheckFlowPairs();
  v.CheckOverlaps();
  return v.Result();
}

}  // namespace placesim::traces
