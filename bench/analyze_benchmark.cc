// Benchmarks of `placesim analyze`'s analytic path: Analyze followed by FormatPlanJson, on
// three scenarios of increasing shape (a bare parameter count under ZeRO-3, a 70B model under
// TP8 + ZeRO-1, and GPT-3 175B under TP8 x PP8 with one role per pipeline stage). The target
// is well under 100 ms per call; the analytic model is expected to take microseconds.
// Reports items/s (one item = one analyzed and printed plan).
#include <benchmark/benchmark.h>

#include <string>

#include "base/check.h"
#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "strategies/report.h"
#include "topology/spec.h"

namespace placesim::strategies {
namespace {

// 8 nodes of 8 GPUs with `hbm` each.
topology::ClusterSpec Cluster(Bytes hbm) {
  topology::ClusterSpec c;
  c.nodes = 8;
  c.node.gpus = 8;
  c.node.gpu.hbm_capacity = hbm;
  c.node.host_memory = TB(2);
  c.node.nvme_capacity = TB(30);
  return c;
}

void RunScenario(benchmark::State& state, const char* model_name, const char* strategy_name,
                 const topology::MeshShape& mesh, const TrainingSpec& training,
                 const topology::ClusterSpec& cluster) {
  const ModelSpec* model = FindModelPreset(model_name);
  PLACESIM_CHECK(model != nullptr);
  StatusOr<StrategySpec> strategy = ExpandStrategyPreset(strategy_name, mesh);
  PLACESIM_CHECK(strategy.ok());
  for (auto _ : state) {
    StatusOr<Plan> plan = Analyze(*model, training, *strategy, cluster);
    PLACESIM_CHECK(plan.ok());
    std::string json = FormatPlanJson(*plan);
    benchmark::DoNotOptimize(json);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Zero75bZero3On64Gpus(benchmark::State& state) {
  TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = 64;
  RunScenario(state, "zero-7.5b", "zero3", {.dp = 64}, t, Cluster(GB(80)));
}
BENCHMARK(BM_Zero75bZero3On64Gpus);

void BM_Llama3_70bTp8Zero1On64H100(benchmark::State& state) {
  TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = 64;
  t.sequence_parallel = true;
  t.recompute = Recompute::kSelective;
  RunScenario(state, "llama3-70b", "zero1", {.dp = 8, .tp = 8}, t, Cluster(GB(80)));
}
BENCHMARK(BM_Llama3_70bTp8Zero1On64H100);

void BM_Gpt3_175bTp8Pp8On64A100(benchmark::State& state) {
  TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = 64;
  t.sequence_parallel = true;
  t.recompute = Recompute::kSelective;
  RunScenario(state, "gpt3-175b", "megatron", {.tp = 8, .pp = 8}, t, Cluster(GB(80)));
}
BENCHMARK(BM_Gpt3_175bTp8Pp8On64A100);

}  // namespace
}  // namespace placesim::strategies

BENCHMARK_MAIN();
