// The search's two tiers against each other: the tier-1 analytic estimate
// (strategies/search.h) and the step that tier 2 simulates (sim/study/search.h) agree on the
// shipped data-parallel examples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "sim/study/search.h"
#include "strategies/analyzer.h"
#include "strategies/schedule.h"
#include "strategies/search.h"
#include "topology/cluster.h"

namespace placesim::sim {
namespace {

// The tier-1 estimate (strategies/search.h) of data-parallel candidates on the shipped examples
// agrees with the simulator within 15%: presets with per-step and per-micro-batch dp traffic,
// one and several micro-batches, every recompute policy, on one node and on eight, with the
// presets' framework overheads (DeepSpeed's zero2 / zero3 reduce without overlap). Measured
// with per-call NCCL costs, full buckets and per-matrix ZeRO-3 gathers in the estimate: 0.0% on
// one DGX-H100 (Llama-3-8B), -0.1% to -6.4% on 8 DGX-H100 (GPT 32 layers; ZeRO-3 with
// selective recompute the farthest), 0.0% to -0.1% on 2 DGX-A100 (Llama-2-7B). The GPT's
// scenario runs the flow network, whose contention between rails the estimate leaves out: on
// the analytic network its five are within 0.1% too. FSDP with its units held from forward to
// backward (reshard_after_forward false) is checked on all three.
TEST(SearchEstimate, DataParallelCandidatesAreWithinFifteenPercentOfTheSimulator) {
  struct Case {
    const char* example;
    const char* preset;
    int64_t micro_batch;
    strategies::Recompute recompute;
    bool held = false;  // simulation.reshard_after_forward false (FSDP SHARD_GRAD_OP)
  };
  using strategies::Recompute;
  const Case cases[] = {
      {"llama3-8b-fsdp.textproto", "zero3", 1, Recompute::kFull},
      {"llama3-8b-fsdp.textproto", "zero3", 2, Recompute::kFull},
      {"llama3-8b-fsdp.textproto", "zero2", 1, Recompute::kFull},
      {"llama3-8b-fsdp.textproto", "zero1", 1, Recompute::kFull},
      {"gpt-32l-fsdp-64gpu.textproto", "zero3", 8, Recompute::kFull},
      {"gpt-32l-fsdp-64gpu.textproto", "zero3", 2, Recompute::kSelective},
      {"gpt-32l-fsdp-64gpu.textproto", "zero2", 4, Recompute::kFull},
      {"gpt-32l-fsdp-64gpu.textproto", "zero1", 8, Recompute::kFull},
      {"gpt-32l-fsdp-64gpu.textproto", "fsdp-hybrid", 8, Recompute::kFull},
      {"llama2-7b-ddp.textproto", "ddp", 1, Recompute::kFull},
      {"llama2-7b-ddp.textproto", "zero3", 2, Recompute::kSelective},
      {"llama2-7b-ddp.textproto", "zero3", 1, Recompute::kFull},
      {"llama2-7b-ddp.textproto", "zero2", 1, Recompute::kSelective},
      {"llama2-7b-ddp.textproto", "zero1", 4, Recompute::kFull},
      {"llama3-8b-fsdp.textproto", "fsdp", 1, Recompute::kFull, true},
      {"gpt-32l-fsdp-64gpu.textproto", "fsdp", 8, Recompute::kFull, true},
      {"llama2-7b-ddp.textproto", "fsdp", 2, Recompute::kSelective, true},
  };
  int checked = 0;
  for (const Case& k : cases) {
    const std::string path = std::string(PLACESIM_SOURCE_DIR) + "/examples/" + k.example;
    StatusOr<Scenario> scenario = LoadScenarioFile(path, {});
    ASSERT_TRUE(scenario.ok()) << scenario.status().message();
    StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
    ASSERT_TRUE(cluster.ok()) << cluster.status().message();
    strategies::Candidate c;
    c.mesh = {static_cast<int>(scenario->cluster.nodes * scenario->cluster.node.gpus), 1, 1, 1, 1};
    c.preset = k.preset;
    c.micro_batch = k.micro_batch;
    c.recompute = k.recompute;
    const std::string label =
        std::string(k.example) + ": " + strategies::CandidateLabel(c) + (k.held ? " held" : "");
    StatusOr<strategies::StrategySpec> strategy =
        strategies::CandidateStrategy(c, scenario->cluster);
    ASSERT_TRUE(strategy.ok()) << label;
    const strategies::TrainingSpec training = strategies::CandidateTraining(c, scenario->training);
    ExecutorOptions options = ExecutorOptionsFromSettings(scenario->simulation);
    if (k.held) options.schedule.reshard_after_forward = false;
    const strategies::AnalyzeOptions analyze = strategies::ScheduleAnalyzeOptions(options.schedule);
    StatusOr<strategies::Plan> plan =
        strategies::Analyze(scenario->model, training, *strategy, scenario->cluster, analyze);
    ASSERT_TRUE(plan.ok()) << label;
    ASSERT_TRUE(plan->ok() && plan->largest().memory.fits) << label << " does not fit";
    const strategies::StepEstimate estimate =
        strategies::EstimateStep(scenario->model, training, *strategy, scenario->cluster, *plan,
                                 strategies::GradientBucket(options.schedule.bucket_bytes,
                                                            *strategy, training, std::nullopt));
    StatusOr<SimResult> sim = SimulateStep(*cluster, scenario->model, training, *strategy, options);
    ASSERT_TRUE(sim.ok()) << label << ": " << sim.status().message();
    const double simulated = sim->step_time.ToSeconds();
    const double estimated = estimate.total.ToSeconds();
    const double error = (estimated - simulated) / simulated;
    std::printf("%-70s simulated %8.3f s  estimated %8.3f s  error %+6.1f%%\n", label.c_str(),
                simulated, estimated, 100 * error);
    EXPECT_LT(std::abs(error), 0.15)
        << label << ": simulated " << simulated << " s, estimated " << estimated << " s";
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(std::size(cases)));
}

// training.attention_kernel reaches both tiers through one source (cost::StepMatmulEfficiency):
// on one DGX-H100 (Llama-3-8B, sequence 8192, FSDP, full recompute) naming cuDNN changes
// nothing (it is the H100's default), and FlashAttention-2, whose attention core takes 1.83x
// (forward) and 1.88x (backward) cuDNN's time at 4096 keys (kernel_model_test), lengthens the
// estimated and the simulated step by the same time. Per layer and micro-batch (s = 8192, b = 1, tp
// 1): the GEMMs, 3 x 2 s x 218.1 M weights = 10.72 TFLOP at 0.70 x 989.4 TFLOP/s, take 15.48 ms;
// the causal attention core, W = 2 x 32 x 8192^2 x 128 = 0.550 TFLOP forward and 2.5 W
// backward, takes 0.91 + 2.76 = 3.67 ms under cuDNN (0.64 x 8192 / 8576 and 0.55 x 8192 /
// 8960 of peak) and 1.66 + 5.14 = 6.80 ms under FlashAttention-2 (0.35 x 8192 / 8576 and
// 0.30 x 8192 / 9088): the matrix time grows by (15.48 + 6.80) / (15.48 + 3.67) - 1 = 16.3%.
// The step, which also holds memory-bound kernels and communication, grows by less, but by
// more than half of that.
TEST(SearchEstimate, TheAttentionKernelMovesTheEstimateAndTheSimulatorAlike) {
  const std::string path = std::string(PLACESIM_SOURCE_DIR) + "/examples/llama3-8b-fsdp.textproto";
  struct Step {
    double estimated = 0;
    double simulated = 0;
  };
  const auto step = [&](const char* kernel) {
    std::vector<std::string> overrides;
    if (*kernel != '\0') overrides.push_back(std::string("training.attention_kernel=") + kernel);
    StatusOr<Scenario> scenario = LoadScenarioFile(path, overrides);
    PLACESIM_CHECK(scenario.ok());
    StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
    PLACESIM_CHECK(cluster.ok());
    const ExecutorOptions options = ExecutorOptionsFromSettings(scenario->simulation);
    strategies::AnalyzeOptions analyze;
    analyze.prefetch_depth = options.schedule.prefetch_depth;
    StatusOr<strategies::Plan> plan = strategies::Analyze(
        scenario->model, scenario->training, scenario->strategy, scenario->cluster, analyze);
    PLACESIM_CHECK(plan.ok());
    const strategies::StepEstimate estimate = strategies::EstimateStep(
        scenario->model, scenario->training, scenario->strategy, scenario->cluster, *plan,
        strategies::GradientBucket(options.schedule.bucket_bytes, scenario->strategy,
                                   scenario->training, std::nullopt));
    StatusOr<SimResult> sim =
        SimulateStep(*cluster, scenario->model, scenario->training, scenario->strategy, options);
    PLACESIM_CHECK(sim.ok());
    return Step{estimate.total.ToSeconds(), sim->step_time.ToSeconds()};
  };
  const Step unset = step("");
  const Step cudnn = step("cudnn");
  const Step flash2 = step("flash_attention_2");
  EXPECT_EQ(cudnn.estimated, unset.estimated);
  EXPECT_EQ(cudnn.simulated, unset.simulated);
  const double estimated_delta = flash2.estimated - cudnn.estimated;
  const double simulated_delta = flash2.simulated - cudnn.simulated;
  std::printf("cuDNN estimated %.4f s simulated %.4f s; FlashAttention-2 %.4f s, %.4f s\n",
              cudnn.estimated, cudnn.simulated, flash2.estimated, flash2.simulated);
  EXPECT_GT(simulated_delta / cudnn.simulated, 0.163 / 2);
  EXPECT_LT(simulated_delta / cudnn.simulated, 0.163);
  EXPECT_NEAR(estimated_delta / simulated_delta, 1.0, 0.05);
}

// What a user needs from tier 1: it ranks the candidates as the simulator would. Runs the
// search of `scenario` with its best `top` by estimate simulated (analytic network, as
// `placesim search` does by default) and holds each estimate within `tolerance` of its
// simulated step, which keeps their order wherever the simulated steps differ by more than
// twice that. Returns the label of the simulator's best.
std::string CheckRankingAgainstTheSimulator(const Scenario& scenario, int64_t top, double tolerance,
                                            const std::vector<std::string>& fixes = {},
                                            const std::string& space_name = "default") {
  study::SearchRequest request;
  request.space = space_name;
  request.fixes = fixes;
  request.simulate_top = top;
  request.jobs = 2;
  ErrorList errors;
  const strategies::SearchSpace space = study::BuildSearchSpace(scenario, request, &errors);
  EXPECT_TRUE(errors.empty());
  StatusOr<study::SearchStudy> r = study::RunSearchStudy(scenario, space, request);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return "";
  EXPECT_EQ(r->simulated, top);
  std::vector<std::pair<double, double>> rows;  // (estimated, simulated) seconds
  std::string best;
  double best_step = 0;
  for (const study::RankedCandidate& row : r->ranked) {
    if (!row.simulated_step) continue;
    const std::string label = strategies::CandidateLabel(row.screened.candidate);
    const double est = row.screened.estimate.total.ToSeconds();
    const double sim = row.simulated_step->ToSeconds();
    EXPECT_LT(std::abs(est - sim) / sim, tolerance)
        << label << ": estimated " << est << " s, simulated " << sim << " s";
    if (best.empty() || sim < best_step) {
      best = label;
      best_step = sim;
    }
    rows.push_back({est, sim});
  }
  EXPECT_EQ(static_cast<int64_t>(rows.size()), top);
  for (const auto& a : rows) {
    for (const auto& b : rows) {
      if (a.second < b.second * (1 - 2 * tolerance)) {
        EXPECT_LT(a.first, b.first);
      }
    }
  }
  return best;
}

// The 4-layer GPT of the search tests on one DGX-H100, each preset with its framework's
// defaults.
StatusOr<Scenario> SmallGpt() {
  return LoadScenarioText(R"pb(
                            name: "search-small-gpt"
                            cluster { node_preset: "DGX-H100" nodes: 1 }
                            model { layers: 4 hidden: 512 heads: 8 vocab: 1024 seq_len: 512 }
                            training { global_batch: 128 micro_batch: 1 }
                            strategy { preset: "ddp" }
                          )pb",
                          ScenarioFormat::kTextProto, {});
}

// The 4-layer GPT of the search tests on one DGX-H100 (strategies' FindsTheHandDerivedBest),
// each preset with its framework's defaults, the eight best by estimate: each within 1% of
// the simulator. Why 1%: these are data-parallel meshes on one node, where the estimate follows
// the executor's schedule op by op: the same roofline compute, the same collective phases and
// NCCL per-call cost (strategies/cost/nccl_tuning.h), buckets complete unit by unit as the
// backward runs its units, gathers one unit ahead of the compute; what is left is rounding
// (measured: all eight within 0.1%). Before the estimate charged per-call costs and full
// buckets it ranked zero2 and zero3 first, 3.3% and 5.5% below the simulator.
TEST(SearchEstimate, RanksTheSmallGptAsTheSimulatorDoes) {
  StatusOr<Scenario> scenario = SmallGpt();
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  EXPECT_EQ(CheckRankingAgainstTheSimulator(*scenario, 8, 0.01),
            "zero1 dp8 tp1 pp1 cp1 mb16 recompute=none");
}

// The same GPT with a host slower than its layers' kernels (docs/overheads.md, "Host
// dispatch"): 0.5 ms to issue a layer's forward and 0.9 ms its backward, about PyTorch eager's
// measured figures, where each of these layers computes in well under that. The simulator
// makes each such pass last the host's time; the estimate charges the same wait per layer
// pass. Within 3% and in the simulator's order (measured: seven of the eight within 1%, ddp
// at micro-batch 16 2.3% under: the executor puts a pass's wait before its last op, so each
// layer's gradient bucket is ready that much later and the last all-reduce ends later, which
// the estimate, charging the wait but not placing it, does not see). Left out of the
// estimate, the wait made the same rows come out up to 59% under (ddp at micro-batch 8:
// 4.6 ms estimated, 11.2 ms simulated, with 490 / 850 us).
TEST(SearchEstimate, ChargesHostDispatchAsTheSimulatorDoes) {
  StatusOr<Scenario> scenario = SmallGpt();
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  scenario->simulation.host_time_per_layer = Microseconds(500);
  scenario->simulation.host_time_per_layer_backward = Microseconds(900);
  CheckRankingAgainstTheSimulator(*scenario, 8, 0.03);
}

// The same GPT with ring attention over cp 4 (and 8), no pipeline: every exchange of a forward
// but the first runs beside the next attention part, the backward's last beside the layer's
// weight-gradient op (HideBesideWeightGradients). Within 1% for the reasons above (measured:
// all within 0.1%; before those overlaps, up to 13% over).
TEST(SearchEstimate, RanksRingAttentionAsTheSimulatorDoes) {
  StatusOr<Scenario> scenario = SmallGpt();
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  CheckRankingAgainstTheSimulator(*scenario, 6, 0.01, {"strategy.cp=4", "strategy.pp=1"});
  CheckRankingAgainstTheSimulator(*scenario, 6, 0.01, {"strategy.cp=8"});
}

// The same GPT under PyTorch FSDP (the exhaustive space's fsdp preset: one gather per unit,
// reduce-scatters beside the backward), held and resharded: within 1% as above (measured: all
// equal to the simulator). The backward runs the units last to first, so on the last
// micro-batch the second unit's (the first layer's) reduce-scatter, 7/8 x 6.3 MB / 450 GB/s
// = 12 us plus NCCL's per-call cost, runs beside the embedding unit's backward of a few
// microseconds; the estimate once charged that only before a next micro-batch and came out
// 1.1-1.3% under the simulator. With micro-batches of 8 (128 / (8 x 8) = 2 of them) the
// first's last reduce-scatter, the embedding unit's (786,432 parameters, 1.57 MB: 3 us plus
// the per-call cost), is queued on the data-parallel stream ahead of the second micro-batch's
// second gather, which its embedding forward cannot hide; uncharged, the estimate came out
// 0.43% under.
TEST(SearchEstimate, RanksFsdpAsTheSimulatorDoes) {
  StatusOr<Scenario> scenario = SmallGpt();
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  CheckRankingAgainstTheSimulator(
      *scenario, 8, 0.01, {"strategy.preset=fsdp", "strategy.pp=1", "strategy.cp=1"}, "exhaustive");
  CheckRankingAgainstTheSimulator(
      *scenario, 4, 0.002,
      {"strategy.preset=fsdp", "strategy.pp=1", "strategy.cp=1", "training.micro_batch=8"},
      "exhaustive");
}

// GPT-3 175B on 64 A100s (examples/gpt3-175b-tp8-pp8), the eight best by estimate: pipelined
// meshes with tp, cp and sequence parallelism, folded by the simulator. Each within 2%: the
// estimate's bubble is the closed form (p-1)/m or (p-1)/(v m) of the busy time, which the
// simulated schedule approaches but does not meet exactly (measured over the 31 best: mean
// 0.4%, largest 1.3%, interleaved v = 4); before the per-call costs and the tensor-parallel
// calls hidden beside the weight-gradient ops, up to 4.9% and a different best.
TEST(SearchEstimate, RanksGpt3AsTheSimulatorDoes) {
  const std::string path =
      std::string(PLACESIM_SOURCE_DIR) + "/examples/gpt3-175b-tp8-pp8.textproto";
  StatusOr<Scenario> scenario = LoadScenarioFile(path, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  CheckRankingAgainstTheSimulator(*scenario, 8, 0.02);
}

}  // namespace
}  // namespace placesim::sim
