// End-to-end cost of the commands users run interactively: `placesim analyze` and
// `placesim topology` on every shipped example, from reading the file to the formatted
// report — what a user waits for. Target: well under 100 ms per analyze. And the same work
// through the library facade (placesim/placesim.h), without flags or formatting, with a
// sweep's cost per point.
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>
#include <vector>

#include "placesim/placesim.h"
#include "sim/cli/commands.h"

namespace {

std::string Example(const char* name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/" + name;
}

void RunCommand(benchmark::State& state, const std::vector<std::string>& args) {
  for (auto _ : state) {
    std::ostringstream out, err;
    int code = placesim::sim::RunCli(args, out, err);
    if (code != 0 && code != 3) {
      state.SkipWithError(err.str().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.str().size());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_AnalyzeZero7_5B(benchmark::State& state) {
  RunCommand(state, {"analyze", Example("zero-7.5b.textproto"), "--format", "json"});
}
void BM_AnalyzeLlama3_70B_Tp8Zero1(benchmark::State& state) {
  RunCommand(state, {"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--format", "json"});
}
void BM_AnalyzeGpt3_175B_Tp8Pp8(benchmark::State& state) {
  RunCommand(state, {"analyze", Example("gpt3-175b-tp8-pp8.textproto")});
}
void BM_TopologyLlama3_70B(benchmark::State& state) {
  RunCommand(state, {"topology", Example("llama3-70b-tp8-zero1.textproto")});
}

// Load, resolve and analyze through the facade: the CLI's analyze minus flags and the report.
void BM_FacadeAnalyzeZero7_5B(benchmark::State& state) {
  namespace api = placesim::api;
  const std::string path = Example("zero-7.5b.textproto");
  for (auto _ : state) {
    placesim::StatusOr<api::Scenario> scenario = api::LoadScenario(path);
    if (!scenario.ok()) {
      state.SkipWithError(scenario.status().message().c_str());
      break;
    }
    placesim::StatusOr<api::Plan> plan = api::Analyze(*scenario);
    benchmark::DoNotOptimize(plan.ok());
  }
  state.SetItemsProcessed(state.iterations());
}

// A 16-point analyze sweep on one thread (4 ZeRO stages x 4 cluster sizes); items are points.
void BM_FacadeSweepZero7_5B(benchmark::State& state) {
  namespace api = placesim::api;
  placesim::StatusOr<api::ScenarioSource> source =
      api::LoadScenarioFile(Example("zero-7.5b.textproto"));
  if (!source.ok()) {
    state.SkipWithError(source.status().message().c_str());
    return;
  }
  api::SweepOptions options;
  options.vary = {"strategy.preset=ddp,zero1,zero2,zero3", "cluster.nodes=1..8:x2"};
  options.jobs = 1;
  int64_t points = 0;
  for (auto _ : state) {
    placesim::StatusOr<api::SweepResult> result = api::Sweep(*source, options);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      break;
    }
    points += static_cast<int64_t>(result->points.size());
  }
  state.SetItemsProcessed(points);
}

BENCHMARK(BM_AnalyzeZero7_5B)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnalyzeLlama3_70B_Tp8Zero1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnalyzeGpt3_175B_Tp8Pp8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopologyLlama3_70B)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FacadeAnalyzeZero7_5B)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FacadeSweepZero7_5B)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
