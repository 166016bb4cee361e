// Unit tests of the HTML report generator and the timeline recorder: names are escaped, every
// chart's data reaches the page, the page is self-contained and deterministic. Expected values
// are derived in the comments from the inputs built here; the browser test
// (browser_test.sh) checks that the charts draw.
#include "sim/report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "sim/report/timeline_recorder.h"
#include "strategies/schedule.h"

namespace placesim::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr std::string_view kStubChartJs = "window.Chart = function () {};";

// The JSON the page's driver reads (between the report-data script tags).
Json ReportData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t start = begin + open.size();
  const size_t end = html.find("</script>", start);
  return Json::parse(html.substr(start, end - start));
}

sim::RoleResult Role(std::string name, int32_t stage) {
  sim::RoleResult r;
  r.role = std::move(name);
  r.stage = stage;
  r.ranks = 8;
  r.simulated_rank = stage * 8;
  r.step_time = Milliseconds(10);
  r.compute_busy = Milliseconds(6);
  r.exposed_comm = Milliseconds(1);
  r.idle = Milliseconds(4);
  r.capacity = GiB(80);
  return r;
}

MemorySample Sample(double ms, int64_t params_gib, int64_t activations_gib) {
  MemorySample s;
  s.at = Milliseconds(ms);
  s.live[static_cast<size_t>(strategies::MemoryTag::kParams)] = GiB(params_gib);
  s.live[static_cast<size_t>(strategies::MemoryTag::kActivations)] = GiB(activations_gib);
  return s;
}

SimulationReport TwoStageReport() {
  SimulationReport r;
  r.title = "examples/<b>&\"x\".textproto";
  r.subject = "model 'm'";
  r.result.step_time = Milliseconds(10);
  r.result.roles = {Role("stage <script>alert(1)</script>", 0), Role("stage 1", 1)};
  sim::LinkKindStats nvlink;
  nvlink.kind = topology::LinkKind::kNvlink;
  nvlink.links = 16;
  nvlink.links_used = 16;
  nvlink.utilization_max = 0.5;
  nvlink.utilization_avg = 0.25;
  r.result.links = {nvlink};
  for (int32_t s = 0; s < 2; ++s) {
    r.memory.push_back({r.result.roles[static_cast<size_t>(s)].role,
                        s,
                        GiB(80),
                        {Sample(0, 10, 0), Sample(4, 10, 20), Sample(10, 10, 0)}});
  }
  LayerTimes t;
  t.forward = Milliseconds(1);
  t.backward = Milliseconds(2);
  r.layers = {{0, 3, t}};
  return r;
}

TEST(EscapeHtml, ReplacesTheFiveSpecialCharacters) {
  EXPECT_EQ(EscapeHtml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(EscapeHtml("plain"), "plain");
}

TEST(SimulationHtml, EscapesNamesInTablesAndScripts) {
  const std::string html = RenderSimulationHtml(TwoStageReport(), kStubChartJs);
  EXPECT_THAT(html, Not(HasSubstr("<script>alert(1)")));
  EXPECT_THAT(html, HasSubstr("stage &lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("<title>examples/&lt;b&gt;&amp;&quot;x&quot;.textproto</title>"));
  // In the chart data the role's '<' is \u003c, so no "</script>" ends the data early.
  EXPECT_THAT(html, HasSubstr("stage \\u003cscript>alert(1)\\u003c/script>"));
  EXPECT_EQ(ReportData(html)["charts"][0]["config"]["data"]["labels"][0],
            "stage <script>alert(1)</script>");
}

TEST(SimulationHtml, HoldsEveryChartsData) {
  const Json charts = ReportData(RenderSimulationHtml(TwoStageReport(), kStubChartJs))["charts"];
  // Step breakdown, link utilisation and one memory chart per stage: 4 charts.
  ASSERT_EQ(charts.size(), 4u);
  const Json& step = charts[0]["config"]["data"]["datasets"];
  // compute 6 ms, exposed 1 ms, pipeline idle and waits = idle 4 - exposed 1 = 3 ms; no copy or
  // host work, so those bars are left out.
  ASSERT_EQ(step.size(), 3u);
  EXPECT_DOUBLE_EQ(step[0]["data"][0].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(step[1]["data"][0].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(step[2]["data"][0].get<double>(), 3.0);
  const Json& links = charts[1]["config"]["data"];
  EXPECT_EQ(links["labels"][0], "nvlink");
  EXPECT_DOUBLE_EQ(links["datasets"][0]["data"][0].get<double>(), 50.0);  // 0.5 as %
  EXPECT_DOUBLE_EQ(links["datasets"][1]["data"][0].get<double>(), 25.0);
  // Memory: params and activations (the tags ever non-zero), then the capacity line.
  const Json& memory = charts[2]["config"]["data"]["datasets"];
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_EQ(memory[0]["label"], "params");
  EXPECT_EQ(memory[1]["label"], "activations");
  EXPECT_EQ(memory[1]["data"][1], (Json{{"x", 4.0}, {"y", 20.0}}));
  EXPECT_EQ(memory[2]["label"], "HBM capacity");
  EXPECT_DOUBLE_EQ(memory[2]["data"][1]["y"].get<double>(), 80.0);
}

TEST(SimulationHtml, ListsLayers) {
  const std::string html = RenderSimulationHtml(TwoStageReport(), kStubChartJs);
  // Stage 0, layer 3: forward 1 ms, backward 2 ms, the rest 0.
  EXPECT_THAT(html, HasSubstr("<td class=\"text\">0</td><td class=\"text\">3</td><td>1.000</td>"
                              "<td>2.000</td><td>0.000</td>"));
}

TEST(SimulationHtml, IsSelfContainedAndDeterministic) {
  const std::string html = RenderSimulationHtml(TwoStageReport(), kStubChartJs);
  EXPECT_THAT(html, HasSubstr(std::string(kStubChartJs)));
  EXPECT_THAT(html, HasSubstr("Content-Security-Policy\" content=\"default-src 'none';"));
  EXPECT_FALSE(std::regex_search(
      html, std::regex(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase)));
  EXPECT_THAT(html, Not(HasSubstr(" src=")));
  EXPECT_EQ(html, RenderSimulationHtml(TwoStageReport(), kStubChartJs));
}

api::SweepResult TwoAxisSweep() {
  api::SweepResult s;
  s.mode = study::SweepMode::kSimulate;
  s.axes = {{"training.micro_batch_size", {"1", "2"}}, {"strategy.preset", {"zero1", "<z3>"}}};
  // Nested-loop order, the first axis outermost: (1,zero1) (1,<z3>) (2,zero1) (2,<z3>).
  const std::vector<std::vector<std::string>> values = {
      {"1", "zero1"}, {"1", "<z3>"}, {"2", "zero1"}, {"2", "<z3>"}};
  for (int64_t i = 0; i < 4; ++i) {
    study::SweepPoint p;
    p.index = i;
    p.values = values[static_cast<size_t>(i)];
    p.step_time = Milliseconds(100 + 10 * static_cast<double>(i));
    p.mfu = 0.4;
    p.sim_peak_memory = GiB(10 + i);
    p.memory_total = GiB(10 + i);
    s.points.push_back(p);
  }
  s.points[3].ok = false;
  s.points[3].error = "does not fit";
  s.total_points = 4;
  return s;
}

TEST(SweepHtml, DrawsOneCurvePerValueOfTheOtherFieldsWithGapsForFailures) {
  const std::string html = RenderSweepHtml("sweep", TwoAxisSweep(), kStubChartJs);
  const Json charts = ReportData(html)["charts"];
  ASSERT_EQ(charts.size(), 3u);  // step time, MFU, memory
  const Json& step = charts[0]["config"]["data"];
  EXPECT_EQ(step["labels"], (Json{"1", "2"}));
  ASSERT_EQ(step["datasets"].size(), 2u);
  EXPECT_EQ(step["datasets"][0]["label"], "strategy.preset=zero1");
  // zero1: points 0 and 2, 100 and 120 ms; <z3>: point 1 (110 ms) and the failed point 3.
  EXPECT_EQ(step["datasets"][0]["data"], (Json{100.0, 120.0}));
  EXPECT_EQ(step["datasets"][1]["data"], (Json{110.0, nullptr}));
  EXPECT_DOUBLE_EQ(charts[1]["config"]["data"]["datasets"][0]["data"][0].get<double>(), 40.0);
  EXPECT_EQ(charts[2]["config"]["data"]["datasets"][1]["data"][0], 11.0);  // GiB(10 + 1)
  EXPECT_THAT(html, HasSubstr("&lt;z3&gt;"));
  EXPECT_THAT(html, HasSubstr("error: does not fit"));
}

TEST(SweepHtml, AnalyzeModeDrawsMemoryOnly) {
  api::SweepResult s = TwoAxisSweep();
  s.mode = study::SweepMode::kAnalyze;
  EXPECT_EQ(ReportData(RenderSweepHtml("sweep", s, kStubChartJs))["charts"].size(), 1u);
}

study::RankedCandidate Candidate(double step_ms, int64_t memory_gib, int64_t micro_batch) {
  study::RankedCandidate c;
  c.screened.candidate.preset = "zero1";
  c.screened.candidate.micro_batch = micro_batch;
  c.screened.estimate.total = Milliseconds(step_ms);
  c.screened.memory = GiB(memory_gib);
  c.screened.capacity = GiB(80);
  return c;
}

api::SearchResult FourCandidates() {
  api::SearchResult r;
  // By step time: A(100 ms, 60 GiB) B(120 ms, 40 GiB) C(130 ms, 50 GiB) D(150 ms, 30 GiB).
  r.ranked = {Candidate(100, 60, 1), Candidate(120, 40, 2), Candidate(130, 50, 4),
              Candidate(150, 30, 8)};
  r.ranked[0].simulated_step = Milliseconds(100);
  return r;
}

TEST(ParetoFront, KeepsTheCandidatesNoOtherBeatsOnBothAxes) {
  // By memory: D(30, 150) B(40, 120) C(50, 130) A(60, 100). Each of D, B, A is faster than
  // every smaller one; C is slower than B, which is smaller: front D, B, A = indices 3, 1, 0.
  EXPECT_EQ(ParetoFront(FourCandidates()), (std::vector<size_t>{3, 1, 0}));
}

TEST(SearchHtml, PlotsEveryCandidateAndTheFront) {
  const std::string html = RenderSearchHtml("search", FourCandidates(), kStubChartJs);
  const Json charts = ReportData(html)["charts"];
  ASSERT_EQ(charts.size(), 1u);
  const Json& datasets = charts[0]["config"]["data"]["datasets"];
  ASSERT_EQ(datasets.size(), 3u);
  EXPECT_EQ(datasets[0]["label"], "Pareto front");
  EXPECT_EQ(datasets[0]["data"].size(), 3u);
  EXPECT_EQ(datasets[0]["data"][0]["x"], 30.0);
  EXPECT_EQ(datasets[0]["data"][0]["y"], 150.0);
  EXPECT_EQ(datasets[1]["data"].size(), 1u);  // simulated: A
  EXPECT_EQ(datasets[2]["data"].size(), 3u);  // estimated: B, C, D
  EXPECT_THAT(datasets[1]["data"][0]["label"].get<std::string>(), HasSubstr("mb1"));
}

TEST(Downsample, KeepsThePeakAndTheLastSample) {
  std::vector<MemorySample> samples;
  // 1000 samples, 1 ms apart; one peak of 50 GiB at 501 ms, 1 GiB elsewhere.
  for (int i = 0; i < 1000; ++i) samples.push_back(Sample(i, i == 501 ? 50 : 1, 0));
  const std::vector<MemorySample> out = Downsample(samples, Milliseconds(999), 11);
  EXPECT_LE(out.size(), 11u);
  EXPECT_TRUE(std::any_of(out.begin(), out.end(),
                          [](const MemorySample& s) { return s.total() == GiB(50); }));
  EXPECT_EQ(out.back().at, Milliseconds(999));
  EXPECT_EQ(Downsample(samples, Milliseconds(999), 2000).size(), 1000u);
}

TEST(TimelineRecorder, SumsLayerTimesByPhaseAndStream) {
  TimelineRecorder r;
  using traces::TraceArg;
  const std::vector<TraceArg> layer2 = {TraceArg("op", 1), TraceArg("layer", 2)};
  const auto compute = static_cast<uint32_t>(strategies::Stream::kCompute);
  const auto comm = static_cast<uint32_t>(strategies::Stream::kComm);
  const auto p2p = static_cast<uint32_t>(strategies::Stream::kP2p);
  r.Complete(5, compute, "f", "forward", Duration(), Milliseconds(1), layer2);
  r.Complete(5, compute, "f", "forward", Duration(), Milliseconds(1), layer2);
  r.Complete(5, compute, "b", "backward-input", Duration(), Milliseconds(2), layer2);
  r.Complete(5, compute, "b", "backward-weight", Duration(), Milliseconds(3), layer2);
  r.Complete(5, compute, "r", "recompute", Duration(), Milliseconds(4), layer2);
  r.Complete(5, comm, "ar", "backward-weight", Duration(), Milliseconds(5), layer2);
  r.Complete(5, p2p, "send", "forward", Duration(), Milliseconds(6), layer2);
  r.Complete(5, compute, "adam", "optimizer", Duration(), Milliseconds(7), {});
  const LayerTimes& t = r.layers(5).at(2);
  EXPECT_EQ(t.forward, Milliseconds(2));   // 1 + 1
  EXPECT_EQ(t.backward, Milliseconds(5));  // 2 + 3
  EXPECT_EQ(t.recompute, Milliseconds(4));
  EXPECT_EQ(t.comm, Milliseconds(11));  // comm 5 + p2p 6
  EXPECT_EQ(r.layers(5).at(-1).other, Milliseconds(7));
  EXPECT_TRUE(r.layers(6).empty());
}

TEST(TimelineRecorder, KeepsTheLastMemoryStateOfAnInstant) {
  TimelineRecorder r;
  using traces::TraceArg;
  r.Counter(0, "device memory", Milliseconds(1), std::vector<TraceArg>{TraceArg("params", 1)});
  r.Counter(0, "device memory", Milliseconds(1), std::vector<TraceArg>{TraceArg("params", 3)});
  r.Counter(0, "other counter", Milliseconds(2), std::vector<TraceArg>{TraceArg("x", 9)});
  ASSERT_EQ(r.memory(0).size(), 1u);
  EXPECT_EQ(r.memory(0)[0].live[0], Bytes::Count(3));
}

TEST(LoadChartJs, NamesTheMissingFileAndThePackage) {
  StatusOr<std::string> js = LoadChartJs("/nonexistent/chart.min.js");
  ASSERT_FALSE(js.ok());
  EXPECT_EQ(js.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(js.status().message(), HasSubstr("/nonexistent/chart.min.js"));
  EXPECT_THAT(js.status().message(), HasSubstr("libjs-chart.js"));
}

TEST(LoadChartJs, RefusesTextThatWouldEndTheInlineScript) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "placesim_report_bad_chart.js").string();
  std::ofstream(path) << "var s = '</SCRIPT>';";
  StatusOr<std::string> js = LoadChartJs(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(js.ok());
  EXPECT_EQ(js.status().code(), StatusCode::kInvalidArgument);
}

TEST(WriteHtml, ReplacesTheFileWhole) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "placesim_report_write.html").string();
  ASSERT_TRUE(WriteHtml(path, "<p>one</p>").ok());
  ASSERT_TRUE(WriteHtml(path, "<p>two</p>").ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  EXPECT_EQ(text, "<p>two</p>");
  EXPECT_FALSE(WriteHtml("/nonexistent-dir/x.html", "x").ok());
}

}  // namespace
}  // namespace placesim::report
