// One test per correctness and composition rule, asserting the rule, state, axis, severity
// and the message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::MakeCluster;
using test_util::MakeTraining;
using test_util::Model;
using ::testing::HasSubstr;
using topology::Axis;
using topology::MeshShape;

StrategySpec Preset(const char* name, const MeshShape& mesh) {
  return *ExpandStrategyPreset(name, mesh);
}

Plan Check(const ModelSpec& model, const StrategySpec& s, const TrainingSpec& t,
           const topology::ClusterSpec& c) {
  StatusOr<Plan> p = Analyze(model, t, s, c);
  PLACESIM_CHECK(p.ok());
  return *std::move(p);
}

// The findings of `plan` with `rule`.
std::vector<Finding> With(const Plan& plan, const std::string& rule) {
  std::vector<Finding> out;
  for (const Finding& f : plan.findings)
    if (f.rule == rule) out.push_back(f);
  return out;
}

TEST(Correctness, PublishedStrategiesAreCorrect) {
  for (const char* s : {"ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp-hybrid", "megatron",
                        "zero-offload", "zero-infinity", "zero-infinity-host"}) {
    const Plan p = Check(Model("llama2-7b"), Preset(s, {.dp = 4, .tp = 2}), MakeTraining(1, 4),
                         MakeCluster(1));
    EXPECT_TRUE(p.ok()) << s << ": " << (p.findings.empty() ? "" : p.findings[0].message);
  }
}

TEST(Correctness, ShardedGradsWithReplicatedOptimizerBreakGradientIntegrity) {
  StrategySpec s = Preset("ddp", {.dp = 8});
  s.at(Axis::kData, State::kGrads).mode = Mode::kSharded;
  const Plan p = Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1));
  EXPECT_FALSE(p.ok());
  const auto f = With(p, "gradient-integrity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].state, State::kGrads);
  EXPECT_EQ(f[0].axis, Axis::kData);
  EXPECT_THAT(f[0].message, HasSubstr("grads are sharded (S) on dp while the optimizer is "
                                      "replicated (R) on dp"));
  EXPECT_THAT(f[0].message, HasSubstr("no device holds the full averaged gradient"));
  EXPECT_THAT(f[0].fix, HasSubstr("shard the optimizer on dp"));
}

TEST(Correctness, ReplicatedOptimizerOverTensorSlicesBreaksStateConsistency) {
  StrategySpec s = Preset("megatron", {.tp = 8});
  s.at(Axis::kTensor, State::kOptimizer).mode = Mode::kReplicated;
  const Plan p = Check(Model("llama2-7b"), s, MakeTraining(1, 1), MakeCluster(1));
  const auto f = With(p, "state-consistency");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].state, State::kOptimizer);
  EXPECT_EQ(f[0].axis, Axis::kTensor);
  EXPECT_THAT(f[0].message, HasSubstr("optimizer replicas"));
  // Grads are sharded on tp too, so gradient integrity fails as well.
  EXPECT_EQ(With(p, "gradient-integrity").size(), 1u);
  EXPECT_TRUE(With(p, "model-parallel-placement").empty());
}

TEST(Correctness, ReplicatedParamsOverShardedOptimizerIsConsistentThroughTheAllGather) {
  // ZeRO-1: no finding, and the plan carries the all-gather of updated params that keeps the
  // replicated Θ identical.
  const Plan p =
      Check(Model("zero-7.5b"), Preset("zero1", {.dp = 8}), MakeTraining(1, 8), MakeCluster(1));
  EXPECT_TRUE(p.findings.empty());
  EXPECT_EQ(p.largest().collectives.back().kind, CollectiveKind::kAllGather);
  EXPECT_EQ(p.largest().collectives.back().state, State::kParams);
}

TEST(Correctness, ShardedParamsWithoutGatherOnDp) {
  StrategySpec s = Preset("zero3", {.dp = 8});
  s.at(Axis::kData, State::kParams).mode = Mode::kSharded;
  const auto f =
      With(Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1)), "params-need-gather");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].state, State::kParams);
  EXPECT_THAT(f[0].message, HasSubstr("params are sharded (S) on dp without gather"));
  EXPECT_THAT(f[0].fix, HasSubstr("use S*"));
}

TEST(Correctness, ShardedParamsWithReplicatedOptimizerOnDpIsAWarning) {
  StrategySpec s = Preset("ddp", {.dp = 8});
  s.at(Axis::kData, State::kParams).mode = Mode::kShardedGather;
  const Plan p = Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1));
  const auto f = With(p, "redundant-optimizer");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_THAT(f[0].message, HasSubstr("every rank updates every parameter"));
  EXPECT_TRUE(p.ok());
}

TEST(Correctness, ActivationsShardedOverDpAreMeaningless) {
  StrategySpec s = Preset("ddp", {.dp = 8});
  s.at(Axis::kData, State::kActivations).mode = Mode::kSharded;
  const auto f = With(Check(Model("llama2-7b"), s, MakeTraining(1, 8), MakeCluster(1)),
                      "activation-placement");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].state, State::kActivations);
  EXPECT_THAT(f[0].message, HasSubstr("has no meaning"));
}

TEST(Correctness, MaterializedModelStateIsRejected) {
  StrategySpec s = Preset("ddp", {.dp = 8});
  s.at(Axis::kData, State::kOptimizer).mode = Mode::kMaterialized;
  const auto f =
      With(Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1)), "mode-not-applicable");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("only activations can be"));
}

TEST(Correctness, ReplicatedParamsOnTensorAxisBreakModelParallelPlacement) {
  StrategySpec s = Preset("megatron", {.tp = 8});
  s.at(Axis::kTensor, State::kParams).mode = Mode::kReplicated;
  const auto f = With(Check(Model("llama2-7b"), s, MakeTraining(1, 1), MakeCluster(1)),
                      "model-parallel-placement");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].state, State::kParams);
  EXPECT_EQ(f[0].axis, Axis::kTensor);
  EXPECT_THAT(f[0].message, HasSubstr("params are replicated (R) on tp"));
}

TEST(Correctness, OffloadToNvmeNeedsNvme) {
  topology::ClusterSpec c = MakeCluster(1);
  c.node.nvme_capacity = Bytes::Zero();
  const auto f =
      With(Check(Model("zero-7.5b"), Preset("zero-infinity", {.dp = 8}), MakeTraining(1, 8), c),
           "offload-target");
  ASSERT_EQ(f.size(), 2u);  // params and optimizer
  EXPECT_THAT(f[0].message, HasSubstr("the node has no NVMe"));
}

TEST(Correctness, OffloadWithoutTarget) {
  StrategySpec s = Preset("zero-offload", {.dp = 8});
  s.at(Axis::kData, State::kGrads).target = OffloadTarget::kNone;
  const auto f =
      With(Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1)), "offload-target");
  ASSERT_FALSE(f.empty());
  EXPECT_THAT(f[0].message, HasSubstr("without a target"));
}

TEST(Correctness, OffloadToHostMustFitHostMemory) {
  // 8 devices x 13.125e9 offloaded bytes = 105 GB > 64 GB of host memory.
  topology::ClusterSpec c = MakeCluster(1);
  c.node.host_memory = GB(64);
  const auto f =
      With(Check(Model("zero-7.5b"), Preset("zero-offload", {.dp = 8}), MakeTraining(1, 8), c),
           "offload-capacity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("105.00 GB of host memory per node"));
}

TEST(Correctness, TensorParallelMustDivideHeads) {
  ModelSpec m = Model("gpt3-175b");  // 96 heads, hidden 12288
  const Plan p = Check(m, Preset("megatron", {.tp = 64}), MakeTraining(1, 1), MakeCluster(8));
  const auto f = With(p, "tp-divisibility");
  ASSERT_EQ(f.size(), 2u);  // heads and kv_heads (96); hidden and ffn divide
  EXPECT_EQ(f[0].axis, Axis::kTensor);
  EXPECT_THAT(f[0].message, HasSubstr("tp 64 does not divide heads 96"));
  EXPECT_THAT(f[1].message, HasSubstr("kv_heads 96"));
}

TEST(Correctness, TensorParallelMustDivideKvHeads) {
  // llama3-8b: 32 heads, 8 kv heads; tp 16 divides heads, hidden, ffn but not kv heads.
  const Plan p =
      Check(Model("llama3-8b"), Preset("megatron", {.tp = 16}), MakeTraining(1, 1), MakeCluster(2));
  const auto f = With(p, "tp-divisibility");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("kv_heads 8"));
}

TEST(Correctness, TensorParallelAcrossNodesIsAWarning) {
  const Plan p =
      Check(Model("llama3-8b"), Preset("megatron", {.tp = 16}), MakeTraining(1, 1), MakeCluster(2));
  const auto f = With(p, "tp-within-node");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_THAT(f[0].message, HasSubstr("tp 16 is larger than the 8 GPUs of a node"));
}

TEST(Correctness, PipelineMustDivideLayers) {
  // llama2-7b has 32 layers; pp 3 on 3 single-GPU nodes.
  const Plan p = Check(Model("llama2-7b"), Preset("megatron", {.pp = 3}), MakeTraining(1, 3),
                       MakeCluster(3, 1));
  const auto f = With(p, "pp-divisibility");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("does not divide the 32 layers"));
  EXPECT_EQ(p.roles.front().layers, 11);  // 11 + 11 + 10
}

TEST(Correctness, VirtualStagesNeedTheInterleavedSchedule) {
  TrainingSpec t = MakeTraining(1, 8);
  t.virtual_stages = 2;
  const auto f =
      With(Check(Model("llama2-7b"), Preset("megatron", {.dp = 2, .pp = 4}), t, MakeCluster(1)),
           "virtual-stages");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("needs the interleaved-1f1b schedule"));
}

TEST(Correctness, InterleavedScheduleRunsMicroBatchesInGroupsOfPp) {
  // Megatron-LM's interleaved schedule takes micro-batches p at a time: 6 per step on pp 4
  // is refused, 8 is fine.
  TrainingSpec t = MakeTraining(1, 12);
  t.pipeline_schedule = PipelineSchedule::kInterleaved1F1B;
  t.virtual_stages = 2;
  const StrategySpec s = Preset("megatron", {.dp = 2, .pp = 4});
  const auto f = With(Check(Model("llama2-7b"), s, t, MakeCluster(1)), "interleaved-microbatches");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("6 micro-batches per step is not a multiple of pp 4"));
  t.global_batch = 16;
  EXPECT_TRUE(With(Check(Model("llama2-7b"), s, t, MakeCluster(1)), "interleaved-microbatches")
                  .empty());
}

TEST(Correctness, GlobalBatchMustDivideByMicroBatchTimesDp) {
  const auto f =
      With(Check(Model("zero-7.5b"), Preset("ddp", {.dp = 8}), MakeTraining(2, 20), MakeCluster(1)),
           "batch-divisibility");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("global batch 20 is not a multiple of micro-batch 2 x "
                                      "dp 8 = 16"));
}

TEST(Correctness, ExpertParallelMustDivideExpertsAndDp) {
  // mixtral has 8 experts; ep 3 divides neither 8 nor dp 4... use dp 6 on 6 GPUs: 6 % 3 == 0.
  const Plan p = Check(Model("mixtral-8x7b"), Preset("zero1", {.dp = 6, .ep = 3}),
                       MakeTraining(1, 6), MakeCluster(1, 6));
  const auto f = With(p, "ep-divisibility");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("ep 3 does not divide the 8 experts"));
  const Plan q = Check(Model("mixtral-8x7b"), Preset("zero1", {.dp = 4, .ep = 8}),
                       MakeTraining(1, 4), MakeCluster(1, 4));
  const auto g = With(q, "ep-divisibility");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_THAT(g[0].message, HasSubstr("ep 8 does not divide dp 4"));
}

TEST(Correctness, ExpertParallelNeedsExperts) {
  const auto f = With(Check(Model("llama2-7b"), Preset("ddp", {.dp = 8, .ep = 2}),
                            MakeTraining(1, 8), MakeCluster(1)),
                      "ep-divisibility");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("on a dense model"));
}

TEST(Correctness, ContextParallelMustDivideTheSequence) {
  // llama2-7b: seq 4096; cp 3.
  const auto f = With(Check(Model("llama2-7b"), Preset("ddp", {.dp = 2, .cp = 3}),
                            MakeTraining(1, 2), MakeCluster(1, 6)),
                      "cp-divisibility");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("cp 3 does not divide seq_len 4096"));
}

TEST(Correctness, MeshMustMatchTheCluster) {
  const auto f =
      With(Check(Model("zero-7.5b"), Preset("ddp", {.dp = 8}), MakeTraining(1, 8), MakeCluster(2)),
           "world-size");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("= 8 ranks but the cluster has 2 nodes x 8 GPUs = 16"));
}

TEST(Correctness, HybridShardGroupMustDivideDp) {
  StrategySpec s = Preset("fsdp", {.dp = 8});
  s.shard_group_size = 3;
  const auto f =
      With(Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1)), "hybrid-shard-group");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].message, HasSubstr("shard_group_size 3 does not divide dp 8"));
}

TEST(Correctness, FewerMicroBatchesThanStagesIsAWarning) {
  const auto f = With(Check(Model("llama2-7b"), Preset("megatron", {.dp = 2, .pp = 4}),
                            MakeTraining(1, 4), MakeCluster(1)),
                      "pipeline-microbatches");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

TEST(Correctness, OptimizerGatherIsReadAsShard) {
  StrategySpec s = Preset("zero2", {.dp = 8});
  s.at(Axis::kData, State::kOptimizer).mode = Mode::kShardedGather;
  const auto f =
      With(Check(Model("zero-7.5b"), s, MakeTraining(1, 8), MakeCluster(1)), "gather-not-needed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
}

}  // namespace
}  // namespace placesim::strategies
