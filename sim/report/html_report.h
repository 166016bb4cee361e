// HTML reports: one self-contained file per simulated step, sweep or search, with charts drawn
// by Chart.js (Debian's libjs-chart.js, embedded inline) from the facade's result structs
// (include/placesim/placesim.h). The file opens offline: its Content-Security-Policy forbids
// every request (no src or href leaves the file), and the page marks itself when done:
// <body data-report-status="ok"> once every chart drew data and no script error occurred
// ("failed" otherwise, with the reasons in <pre id="errors">); each canvas gets data-drawn="yes"
// or "no". Browser tests read those marks (tests/report/browser_test.sh).
//
// What the simulation report shows, and where each figure comes from:
//   step breakdown  per role: compute (compute stream busy), exposed communication
//                   (RoleResult::exposed_comm), pipeline idle and waits (idle - exposed_comm),
//                   and, as separate bars because they overlap the others, the copy and host
//                   streams' busy time;
//   links           per LinkKind: the busiest link's and the mean used link's utilisation;
//   memory          per pipeline stage, the simulated rank's live device bytes by MemoryTag
//                   over the step (the executor's memory counter, downsampled keeping peaks);
//   layers          per stage and layer, the busy time of the simulated schedule's ops
//                   (TimelineRecorder's LayerTimes: simulated durations, not the cost model's).
//
// Determinism: the bytes are a pure function of the inputs (no clock, no wall time, numbers
// printed shortest round-trip). Thread-safety: every function is reentrant.
#ifndef PLACESIM_SIM_REPORT_HTML_REPORT_H_
#define PLACESIM_SIM_REPORT_HTML_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "placesim/placesim.h"
#include "sim/economics/economics.h"
#include "sim/report/timeline_recorder.h"
#include "strategies/schedule.h"

namespace placesim::report {

// Where Debian's libjs-chart.js puts Chart.js (set at configure time; see CMakeLists.txt).
std::string DefaultChartJsPath();

// Reads Chart.js from `path` ("" = DefaultChartJsPath()). kNotFound when unreadable (the message
// names the path and the Debian package); kInvalidArgument when the text contains "</script",
// which would end the inline script early.
StatusOr<std::string> LoadChartJs(const std::string& path = "");

// `text` with & < > " ' replaced by their character references.
std::string EscapeHtml(std::string_view text);

// The memory timeline of one pipeline stage's simulated rank.
struct StageMemory {
  std::string role;
  int32_t stage = 0;
  Bytes capacity;
  std::vector<MemorySample> samples;  // time order
};

struct LayerRow {
  int32_t stage = 0;
  // 0..L-1, or strategies::kEmbeddingLayer, kOutputLayer, kNoLayer (optimizer, step-level).
  int64_t layer = strategies::kNoLayer;
  LayerTimes times;
};

struct SimulationReport {
  std::string title;    // shown as the page's heading; the scenario's path, say
  std::string subject;  // one line under it: overrides, model, cluster
  sim::SimResult result;
  std::vector<StageMemory> memory;  // one per role, in role order
  std::vector<LayerRow> layers;     // by stage, then layer
  std::string note;                 // shown when not empty (e.g. why a timeline is missing)
  // The step's cost and energy: set only when the scenario has an `economics` message, and
  // then shown as a "Cost and energy" table.
  std::optional<sim::economics::Figures> economics;
};

// At most this many memory samples per stage reach the page (Downsample keeps the peaks).
inline constexpr size_t kMaxMemoryPoints = 600;

// The report of `result`, with the memory and layers `recorder` saw for each role's simulated
// rank (the recorder was the run's trace sink with the default trace ranks).
SimulationReport CollectSimulation(std::string title, std::string subject,
                                   const sim::SimResult& result, const TimelineRecorder& recorder);

// The pages. `chartjs` is Chart.js's text (LoadChartJs), inlined as is.
std::string RenderSimulationHtml(const SimulationReport& report, std::string_view chartjs);
// Curves of step time, MFU (with --mode simulate) and memory against the first varied field,
// one curve per combination of the other fields' values; failed points leave gaps.
std::string RenderSweepHtml(std::string_view title, const api::SweepResult& sweep,
                            std::string_view chartjs);
// Step time against memory for every feasible candidate, the Pareto front (no other candidate
// is both faster and smaller) drawn as a line and listed.
std::string RenderSearchHtml(std::string_view title, const api::SearchResult& search,
                             std::string_view chartjs);

// The indices into `search.ranked` of the Pareto front, by memory ascending: a candidate is on
// it when every candidate using no more memory is slower (ties: the first in ranked order).
// Complexity: O(n log n).
std::vector<size_t> ParetoFront(const api::SearchResult& search);

// Writes `html` to `path` atomically (traces::AtomicOutputFile): the path holds the old file or
// the whole new one. Errors name the path.
Status WriteHtml(const std::string& path, std::string_view html);

}  // namespace placesim::report

#endif  // PLACESIM_SIM_REPORT_HTML_REPORT_H_
