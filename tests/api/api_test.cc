// Tests of the library facade (include/placesim/placesim.h), called from C++ without argv:
// every function once with an expected value derived in its comment, and every error path
// with its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "placesim/placesim.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::api {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Example(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/" + name;
}

// A path under TempDir() private to the running test (ctest runs tests in parallel).
std::string WriteTemp(const std::string& name, const std::string& text) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path =
      ::testing::TempDir() + "/" + info->test_suite_name() + "." + info->name() + "-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The ZeRO paper's 7.5B model (Ψ = 7.5e9, model states only) on 64 A100s under ZeRO-3.
constexpr int64_t kPsi = 7'500'000'000;

// A 4-layer GPT on the 8 GPUs of one DGX-H100 (the workload of the search tests).
constexpr const char* kSmallGpt = R"pb(
  name: "search-small-gpt"
  cluster { node_preset: "DGX-H100" nodes: 1 }
  model { layers: 4 hidden: 512 heads: 8 vocab: 1024 seq_len: 512 }
  training { global_batch: 128 micro_batch: 1 }
  strategy { preset: "ddp" }
)pb";

Scenario MustResolve(const ScenarioSource& source) {
  StatusOr<Scenario> s = Resolve(source);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

// ------------------------------------------------------------------------------ analyze
TEST(Api, AnalyzeGivesTheZeroPapersModelStatePerDevice) {
  StatusOr<ScenarioSource> source = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(source.ok()) << source.status().message();
  StatusOr<Plan> plan = Analyze(MustResolve(*source));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // ZeRO-3 shards all 16Ψ bytes of model state over N = 64: 16 x 7.5e9 / 64 = 1.875 GB.
  const strategies::MemoryBreakdown& m = plan->largest().memory;
  EXPECT_EQ((m.params + m.grads + m.optimizer).count(), 16 * kPsi / 64);
  EXPECT_EQ(m.total.count(), 1'875'000'000);
  EXPECT_TRUE(plan->ok());
}

TEST(Api, OverridesTurnZeroThreeIntoDdp) {
  StatusOr<ScenarioSource> source = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(source.ok());
  ASSERT_TRUE(ApplyOverrides(&*source, {"strategy.preset=ddp"}).ok());
  EXPECT_EQ(source->overrides, std::vector<std::string>{"strategy.preset=ddp"});
  StatusOr<Plan> plan = Analyze(MustResolve(*source));
  ASSERT_TRUE(plan.ok());
  // DDP replicates all of it: 16Ψ = 120 GB per device, more than the A100's 80 GB.
  EXPECT_EQ(plan->largest().memory.total.count(), 16 * kPsi);
  EXPECT_FALSE(plan->largest().memory.fits);
}

TEST(Api, LoadScenarioTextReadsJsonAndTextFormat) {
  StatusOr<ScenarioSource> text = LoadScenarioText(kSmallGpt, ScenarioFormat::kTextProto);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text->text, kSmallGpt);
  StatusOr<ScenarioSource> json = LoadScenarioText(
      R"({"cluster": {"nodePreset": "DGX-H100", "nodes": 1},
          "model": {"preset": "zero-7.5b"}, "strategy": {"preset": "zero3"}})");
  ASSERT_TRUE(json.ok()) << json.status().message();
  // 8 GPUs: 16Ψ / 8 = 15 GB of model state.
  StatusOr<Plan> plan = Analyze(MustResolve(*json));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->largest().memory.total.count(), 16 * kPsi / 8);
}

TEST(Api, LoadScenarioIsLoadOverrideResolve) {
  StatusOr<Scenario> s = LoadScenario(Example("zero-7.5b.textproto"), {"cluster.nodes=4"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  // 4 DGX-A100 nodes of 8 GPUs: dp derived as 32.
  EXPECT_EQ(s->strategy.mesh.world(), 32);
}

// ----------------------------------------------------------------------------- simulate
TEST(Api, SimulateAgreesWithTheAnalyzerAndItsOwnThroughput) {
  StatusOr<Scenario> s = LoadScenario(Example("tiny-gpt-zero3-2gpu.textproto"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  SimulateOptions options;
  options.network = "analytic";
  StatusOr<SimResult> r = Simulate(*s, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_GT(r->step_time, Duration::Zero());
  // tokens/s = global batch x sequence length / step time = 16 x 512 / step.
  EXPECT_DOUBLE_EQ(r->tokens_per_second, 16.0 * 512 / r->step_time.ToSeconds());
  // The simulated peak holds at least the plan's static model state.
  StatusOr<Plan> plan = Analyze(*s);
  ASSERT_TRUE(plan.ok());
  const strategies::MemoryBreakdown& m = plan->largest().memory;
  EXPECT_GE(r->roles.front().peak_memory.count(), (m.params + m.grads + m.optimizer).count());
}

TEST(Api, SimulateWritesTheTracedRanks) {
  StatusOr<Scenario> s = LoadScenario(Example("tiny-gpt-zero3-2gpu.textproto"));
  ASSERT_TRUE(s.ok());
  std::ostringstream text;
  traces::ChromeTraceWriter writer(text);
  SimulateOptions options;
  options.trace = &writer;
  StatusOr<std::vector<int64_t>> ranks = ParseRankList("0-1", s->strategy.mesh.world());
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ(*ranks, (std::vector<int64_t>{0, 1}));
  options.trace_ranks = *ranks;
  ASSERT_TRUE(Simulate(*s, options).ok());
  ASSERT_TRUE(writer.Finish().ok());
  // One process per traced rank, pid = the rank.
  EXPECT_THAT(text.str(), HasSubstr("\"pid\":0"));
  EXPECT_THAT(text.str(), HasSubstr("\"pid\":1"));
}

// -------------------------------------------------------------------------------- sweep
TEST(Api, SweepGivesThePapersFourFigures) {
  StatusOr<ScenarioSource> source = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(source.ok());
  SweepOptions options;
  options.vary = {"strategy.preset=ddp,zero1,zero2,zero3"};
  options.jobs = 2;
  StatusOr<SweepResult> r = Sweep(*source, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->points.size(), 4u);
  EXPECT_EQ(r->total_points, 4);
  EXPECT_EQ(r->failed(), 0);
  // Model state per device at N = 64 (ZeRO paper, Figure 1): DDP 16Ψ; ZeRO-1 4Ψ + 12Ψ/N;
  // ZeRO-2 2Ψ + 14Ψ/N; ZeRO-3 16Ψ/N.
  const int64_t n = 64;
  const int64_t expected[] = {16 * kPsi, 4 * kPsi + 12 * kPsi / n, 2 * kPsi + 14 * kPsi / n,
                              16 * kPsi / n};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(r->points[i].memory_total.has_value());
    EXPECT_EQ(r->points[i].memory_total->count(), expected[i]) << r->points[i].values[0];
    EXPECT_FALSE(r->points[i].step_time.has_value());  // analyze mode
  }
  // Data-parallel traffic per step: a ring all-reduce of 2Ψ gradient bytes moves
  // 2(N-1)/N x 2Ψ; ZeRO-3 adds an all-gather of the parameters in the backward: 3(N-1)/N x 2Ψ.
  EXPECT_EQ(r->points[0].comm_per_device_per_step->count(), 2 * (n - 1) * 2 * kPsi / n);
  EXPECT_EQ(r->points[3].comm_per_device_per_step->count(), 3 * (n - 1) * 2 * kPsi / n);
}

TEST(Api, SweepShardsSplitThePointsRoundRobinUnderOneFingerprint) {
  StatusOr<ScenarioSource> source = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(source.ok());
  SweepOptions options;
  options.vary = {"cluster.nodes=1..8"};
  options.shard = "2/3";
  StatusOr<SweepResult> second = Sweep(*source, options);
  ASSERT_TRUE(second.ok()) << second.status().message();
  // 8 points; shard 2 of 3 holds i % 3 == 1: 1, 4, 7.
  ASSERT_EQ(second->points.size(), 3u);
  EXPECT_EQ(second->points[0].index, 1);
  EXPECT_EQ(second->points[2].index, 7);
  EXPECT_EQ(second->points[2].values, std::vector<std::string>{"8"});
  options.shard = "1/3";
  StatusOr<SweepResult> first = Sweep(*source, options);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->fingerprint, second->fingerprint);
}

TEST(Api, SweepSimulatesEachPoint) {
  StatusOr<ScenarioSource> source = LoadScenarioFile(Example("tiny-gpt-zero3-2gpu.textproto"));
  ASSERT_TRUE(source.ok());
  SweepOptions options;
  options.vary = {"training.micro_batch=2,4"};
  options.mode = study::SweepMode::kSimulate;
  options.network = "analytic";
  StatusOr<SweepResult> r = Sweep(*source, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const study::SweepPoint& p : r->points) {
    ASSERT_TRUE(p.ok) << p.error;
    ASSERT_TRUE(p.step_time.has_value());
    // tokens/s = 16 x 512 / step time, as in SimResult.
    EXPECT_DOUBLE_EQ(*p.tokens_per_second, 16.0 * 512 / p.step_time->ToSeconds());
  }
}

// ------------------------------------------------------------------------------- search
TEST(Api, SearchFindsTheHandDerivedBest) {
  StatusOr<ScenarioSource> source = LoadScenarioText(kSmallGpt);
  ASSERT_TRUE(source.ok());
  SearchOptions options;
  options.simulate_top = 0;
  options.top = 5;
  options.jobs = 2;
  StatusOr<SearchResult> r = Search(MustResolve(*source), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // See strategies' FindsTheHandDerivedBest: ZeRO-1 over 8, mb 16, no recompute.
  ASSERT_EQ(r->ranked.size(), 5u);
  EXPECT_EQ(strategies::CandidateLabel(r->ranked.front().screened.candidate),
            "zero1 dp8 tp1 pp1 cp1 mb16 recompute=none");
  EXPECT_EQ(r->simulated, 0);
  for (size_t i = 1; i < r->ranked.size(); ++i) {
    EXPECT_LE(r->ranked[i - 1].step(), r->ranked[i].step());
  }
}

TEST(Api, SearchSimulatesTheTopK) {
  StatusOr<ScenarioSource> source = LoadScenarioText(kSmallGpt);
  ASSERT_TRUE(source.ok());
  SearchOptions options;
  options.simulate_top = 2;
  options.fixes = {"strategy.tp=1", "strategy.pp=1"};
  StatusOr<SearchResult> r = Search(MustResolve(*source), options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Pure data-parallel candidates all replay: exactly the 2 asked for are simulated.
  EXPECT_EQ(r->simulated, 2);
}

// ------------------------------------------------------------------------------ compare
TEST(Api, CompareFindsAPlantedRegression) {
  // step time 1.0 s -> 1.1 s is +10% (lower is better: regressed); mfu 0.5 -> 0.5 unchanged;
  // tokens 1000 -> 1010 is +1%, within 2%.
  std::string base =
      WriteTemp("base.json", R"({"step_time_s": 1.0, "mfu": 0.5, "tokens_per_second": 1000})");
  std::string cur =
      WriteTemp("cur.json", R"({"step_time_s": 1.1, "mfu": 0.5, "tokens_per_second": 1010})");
  StatusOr<study::Comparison> c = Compare(base, cur, 0.02);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->kind, study::ResultKind::kSimulate);
  EXPECT_EQ(c->regressed, 1);
  EXPECT_EQ(c->unchanged, 1);
  EXPECT_EQ(c->within_threshold, 1);
  ASSERT_EQ(c->changes.size(), 1u);
  EXPECT_EQ(c->changes[0].metric, "step_time_s");
  EXPECT_EQ(c->changes[0].verdict, study::Verdict::kRegressed);
  EXPECT_NEAR(*c->changes[0].relative, 0.1, 1e-12);
}

// ------------------------------------------------------------------------- error paths
TEST(ApiErrors, AMissingFileIsNotFound) {
  StatusOr<ScenarioSource> s = LoadScenarioFile("/nonexistent/x.textproto");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("/nonexistent/x.textproto"));
}

TEST(ApiErrors, AParseErrorHasALineAndColumn) {
  StatusOr<ScenarioSource> s =
      LoadScenarioText("cluster { nodes: }", ScenarioFormat::kTextProto, "bad.textproto");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), StartsWith("bad.textproto:1:"));
}

TEST(ApiErrors, AnUnknownOverrideFieldListsTheValidOnes) {
  StatusOr<ScenarioSource> s = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  Status st = ApplyOverrides(&*s, {"cluster.nodez=2"});
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), StartsWith("bad --set override:\n"));
  EXPECT_THAT(st.message(), HasSubstr("nodez"));
  EXPECT_THAT(st.message(), HasSubstr("valid:"));
  EXPECT_TRUE(s->overrides.empty());
}

TEST(ApiErrors, ResolveNamesTheInvalidField) {
  StatusOr<ScenarioSource> s = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(ApplyOverrides(&*s, {"strategy.preset=zero4"}).ok());
  StatusOr<Scenario> r = Resolve(*s);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("zero4"));
}

TEST(ApiErrors, AnUnknownNetworkModel) {
  StatusOr<Scenario> s = LoadScenario(Example("tiny-gpt-zero3-2gpu.textproto"));
  ASSERT_TRUE(s.ok());
  SimulateOptions options;
  options.network = "packet";
  StatusOr<SimResult> r = Simulate(*s, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--network: \"packet\": unknown network model; valid: flow, analytic");
}

TEST(ApiErrors, TraceRanksNeedATrace) {
  StatusOr<Scenario> s = LoadScenario(Example("tiny-gpt-zero3-2gpu.textproto"));
  ASSERT_TRUE(s.ok());
  SimulateOptions options;
  options.trace_ranks = {0};
  StatusOr<SimResult> r = Simulate(*s, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "--trace-ranks needs --trace FILE");
}

TEST(ApiErrors, ARankListBeyondTheWorld) {
  StatusOr<std::vector<int64_t>> r = ParseRankList("0-2", 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--trace-ranks: \"0-2\": rank 2 does not exist; expected ranks and ranges below 2, "
            "e.g. 0-7,64");
}

TEST(ApiErrors, SweepRefusesAnUnknownNetwork) {
  StatusOr<ScenarioSource> s = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  SweepOptions options;
  options.vary = {"cluster.nodes=1,2"};
  options.network = "packet";
  StatusOr<SweepResult> r = Sweep(*s, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "--network: \"packet\": unknown value; valid: scenario, flow, analytic");
}

TEST(ApiErrors, SweepRefusesTooManyJobs) {
  StatusOr<ScenarioSource> s = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  SweepOptions options;
  options.vary = {"cluster.nodes=1,2"};
  options.jobs = 5000;
  StatusOr<SweepResult> r = Sweep(*s, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "--jobs: 5000: must be between 0 and 4096");
}

TEST(ApiErrors, SweepReportsEveryBadSpecAtOnce) {
  StatusOr<ScenarioSource> s = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  SweepOptions options;
  options.vary = {"cluster.nodes", "strategy.preset=zero4"};
  options.shard = "3/2";
  StatusOr<SweepResult> r = Sweep(*s, options);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_THAT(m, StartsWith("bad input:\n"));
  EXPECT_THAT(m, HasSubstr("--vary \"cluster.nodes\": must be FIELD.PATH=V1,V2,... (no '=')"));
  EXPECT_THAT(m, HasSubstr("--shard \"3/2\": must be K/N with 1 <= K <= N, e.g. 2/4"));
}

TEST(ApiErrors, SweepReportsAValueTheFieldRefuses) {
  StatusOr<ScenarioSource> s = LoadScenarioFile(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  SweepOptions options;
  options.vary = {"cluster.nodes=2,two"};
  StatusOr<SweepResult> r = Sweep(*s, options);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("--vary cluster.nodes: \"two\""));
}

TEST(ApiErrors, SearchNeedsAnArchitecture) {
  StatusOr<Scenario> s = LoadScenario(Example("zero-7.5b.textproto"));
  ASSERT_TRUE(s.ok());
  StatusOr<SearchResult> r = Search(*s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "bad input:\nmodel: search needs a transformer architecture (layers, hidden, heads, "
            "...), not a bare parameter count");
}

TEST(ApiErrors, SearchRefusesBadOptions) {
  StatusOr<ScenarioSource> source = LoadScenarioText(kSmallGpt);
  ASSERT_TRUE(source.ok());
  SearchOptions options;
  options.top = 0;
  options.simulate_top = -1;
  StatusOr<SearchResult> r = Search(MustResolve(*source), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "bad input:\n--simulate-top: -1: must be >= 0\n--top: 0: must be >= 1");
}

TEST(ApiErrors, SearchRefusesAFixWithoutAValue) {
  StatusOr<ScenarioSource> source = LoadScenarioText(kSmallGpt);
  ASSERT_TRUE(source.ok());
  SearchOptions options;
  options.fixes = {"strategy.tp"};
  StatusOr<SearchResult> r = Search(MustResolve(*source), options);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              StartsWith("bad input:\n--fix \"strategy.tp\": must be FIELD=VALUE; fields: "));
}

TEST(ApiErrors, CompareReportsEveryUnreadableFile) {
  StatusOr<study::Comparison> c = Compare("/nonexistent/a.json", "/nonexistent/b.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "/nonexistent/a.json: cannot read the file\n/nonexistent/b.json: cannot read the file");
}

TEST(ApiErrors, CompareRefusesResultsOfDifferentKinds) {
  std::string sim = WriteTemp("sim.json", R"({"step_time_s": 1.0})");
  std::string bench = WriteTemp("bench.json", R"({"benchmarks": []})");
  StatusOr<study::Comparison> c = Compare(sim, bench);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), sim + " is a result of `simulate` and " + bench +
                                      " of `benchmark`; compare results of the same command");
}

}  // namespace
}  // namespace placesim::api
