// Strategy search, tier 1: enumeration and analytic screening of GPT-3 175B on 64 A100s
// (examples/gpt3-175b-tp8-pp8.textproto), over the default and the exhaustive search space.
// Reports candidates/s (items) and the candidate, pruned, analyzed and feasible counts.
#include <benchmark/benchmark.h>

#include <string>

#include "sim/scenario/scenario.h"
#include "strategies/search.h"

namespace placesim {
namespace {

// Screens GPT-3 175B on 64 A100s over the named space (default, exhaustive) on
// state.range(0) threads.
void ScreenGpt3On64A100(benchmark::State& state, const char* space_name) {
  StatusOr<sim::Scenario> s = sim::LoadScenarioFile(
      std::string(PLACESIM_SOURCE_DIR) + "/examples/gpt3-175b-tp8-pp8.textproto", {});
  if (!s.ok()) {
    state.SkipWithError(s.status().message().c_str());
    return;
  }
  StatusOr<strategies::SearchSpace> space =
      strategies::NamedSearchSpace(space_name, s->model, s->training, s->cluster);
  if (!space.ok()) {
    state.SkipWithError(space.status().message().c_str());
    return;
  }
  strategies::SearchOptions options;
  options.jobs = static_cast<int>(state.range(0));
  strategies::SearchStats stats;
  for (auto _ : state) {
    StatusOr<strategies::SearchResult> r =
        strategies::ScreenCandidates(s->model, s->training, s->cluster, *space, options);
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

void BM_SearchGpt3On64A100(benchmark::State& state) { ScreenGpt3On64A100(state, "default"); }
BENCHMARK(BM_SearchGpt3On64A100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Calculon's exhaustive space on placesim's knobs (README, "Strategy search"): seconds per
// screen, so a few iterations suffice.
void BM_SearchGpt3On64A100Exhaustive(benchmark::State& state) {
  ScreenGpt3On64A100(state, "exhaustive");
}
BENCHMARK(BM_SearchGpt3On64A100Exhaustive)
    ->Arg(2)
    ->Iterations(3)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace placesim

BENCHMARK_MAIN();
