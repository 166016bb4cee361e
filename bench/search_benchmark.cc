// Strategy search, tier 1: enumeration and analytic screening of GPT-3 175B on 64 A100s
// (examples/gpt3-175b-tp8-pp8.textproto, the scenario's default search space). Reports
// candidates/s (items) and the candidate, pruned, analyzed and feasible counts.
#include <benchmark/benchmark.h>

#include <string>

#include "sim/scenario/scenario.h"
#include "strategies/search.h"

namespace placesim {
namespace {

void BM_SearchGpt3On64A100(benchmark::State& state) {
  StatusOr<sim::Scenario> s = sim::LoadScenarioFile(
      std::string(PLACESIM_SOURCE_DIR) + "/examples/gpt3-175b-tp8-pp8.textproto", {});
  if (!s.ok()) {
    state.SkipWithError(s.status().message().c_str());
    return;
  }
  const strategies::SearchSpace space =
      strategies::DefaultSearchSpace(s->model, s->training, s->cluster);
  strategies::SearchOptions options;
  options.jobs = static_cast<int>(state.range(0));
  strategies::SearchStats stats;
  for (auto _ : state) {
    StatusOr<strategies::SearchResult> r =
        strategies::ScreenCandidates(s->model, s->training, s->cluster, space, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    stats = r->stats;
    benchmark::DoNotOptimize(r->feasible.data());
  }
  state.SetItemsProcessed(state.iterations() * stats.candidates);
  state.counters["candidates"] = static_cast<double>(stats.candidates);
  state.counters["pruned"] = static_cast<double>(stats.pruned);
  state.counters["analyzed"] = static_cast<double>(stats.analyzed);
  state.counters["feasible"] = static_cast<double>(stats.feasible);
}
BENCHMARK(BM_SearchGpt3On64A100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace placesim

BENCHMARK_MAIN();
