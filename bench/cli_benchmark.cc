// End-to-end cost of the commands users run interactively: `placesim analyze` and
// `placesim topology` on every shipped example, from reading the file to the formatted
// report — what a user waits for. Target: well under 100 ms per analyze.
#include <benchmark/benchmark.h>

#include <sstream>
#include <string>
#include <vector>

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

BENCHMARK(BM_AnalyzeZero7_5B)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnalyzeLlama3_70B_Tp8Zero1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnalyzeGpt3_175B_Tp8Pp8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopologyLlama3_70B)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
