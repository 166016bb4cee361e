// Oracle tests of Analyze: memory and communication against the ZeRO paper, Megatron-LM and
// Korthikanti et al.; expected values are derived in the comments.
#include "strategies/analyzer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "strategies/model.h"
#include "strategies/presets.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::MakeCluster;
using test_util::MakeTraining;
using test_util::Model;
using topology::Axis;
using topology::MeshShape;

Plan MustAnalyze(const std::string& model, const std::string& strategy, const MeshShape& mesh,
                 const TrainingSpec& training, const topology::ClusterSpec& cluster) {
  StatusOr<StrategySpec> s = ExpandStrategyPreset(strategy, mesh, cluster.node.gpus);
  PLACESIM_CHECK(s.ok());
  StatusOr<Plan> plan = Analyze(Model(model), training, *s, cluster);
  PLACESIM_CHECK(plan.ok());
  return *std::move(plan);
}

Bytes SumCollectives(const RankRole& role, Axis axis) {
  Bytes total;
  for (const Collective& c : role.collectives)
    if (c.axis == axis) total += c.total_bytes;
  return total;
}

// Rajbhandari et al. 2020, Figure 1: Ψ = 7.5e9, N_d = 64, K = 12, mixed precision.
TEST(Analyze, ZeroFigure1ModelStatesOn64Gpus) {
  const auto states = [](const char* strategy) {
    const Plan p =
        MustAnalyze("zero-7.5b", strategy, {.dp = 64}, MakeTraining(1, 64), MakeCluster(8));
    EXPECT_TRUE(p.ok()) << strategy;
    return p.largest().memory.model_states().count();
  };
  // DDP: (2 + 2 + 12) x 7.5e9 = 120 GB.
  EXPECT_EQ(states("ddp"), 120'000'000'000);
  // ZeRO-1: 4Ψ + 12Ψ/64 = 30e9 + 1.40625e9 = 31.40625 GB ("31.4 GB").
  EXPECT_EQ(states("zero1"), 31'406'250'000);
  // ZeRO-2: 2Ψ + 14Ψ/64 = 15e9 + 1.640625e9 = 16.640625 GB ("16.6 GB").
  EXPECT_EQ(states("zero2"), 16'640'625'000);
  // ZeRO-3: 16Ψ/64 = 1.875 GB ("1.88 GB").
  EXPECT_EQ(states("zero3"), 1'875'000'000);
}

// Megatron Core's distributed optimizer (docs.nvidia.com/megatron-core/developer-guide/latest/
// distrib_optimizer.html): bf16 params and fp32 grads replicated over the d data-parallel
// ranks, the fp32 main params and Adam moments sharded. Its table of bytes per parameter, row
// "float16 param, fp32 grads": 18 without it, 6 + 12/d with it. In placements that is `ddp`
// and `zero1` with main_grads_fp32.
TEST(Analyze, Fp32MainGradsGiveMegatronsDistributedOptimizerBytes) {
  TrainingSpec t = MakeTraining(1, 64);
  t.main_grads_fp32 = true;
  const auto states = [&](const char* strategy, int dp) {
    t.global_batch = dp;
    const Plan p = MustAnalyze("zero-7.5b", strategy, {.dp = dp}, t, MakeCluster(8));
    return p.largest().memory.model_states().count();
  };
  // Ψ = 7.5e9. Non-distributed: 18Ψ = 135e9.
  EXPECT_EQ(states("ddp", 8), 135'000'000'000);
  // d = 8: (6 + 12/8)Ψ = 7.5Ψ = 56.25e9; d = 64: 6Ψ + 12Ψ/64 = 45e9 + 1.40625e9.
  EXPECT_EQ(states("zero1", 8), 56'250'000'000);
  EXPECT_EQ(states("zero1", 64), 46'406'250'000);
  // Against 2-byte grads (ZeRO Figure 1, 31.40625e9 at d = 64) the fp32 grads add 2Ψ = 15e9.
  t.main_grads_fp32 = false;
  EXPECT_EQ(states("zero1", 64), 31'406'250'000);
}

TEST(Analyze, Fp32MainGradsAreReducedInFp32) {
  // Megatron reduces its fp32 main grads as fp32 (grad_reduce_in_fp32): the gradient
  // reduction moves 4Ψ, the parameter all-gather still 2Ψ. dp 8, ring (N-1)/N = 7/8, Ψ = 7.5e9:
  // DDP all-reduce 2 x 7/8 x 30e9 = 52.5e9 (26.25e9 with bf16 grads);
  // ZeRO-1 reduce-scatter 7/8 x 30e9 = 26.25e9 + all-gather 7/8 x 15e9 = 13.125e9.
  TrainingSpec t = MakeTraining(1, 8);
  t.main_grads_fp32 = true;
  const Plan ddp = MustAnalyze("zero-7.5b", "ddp", {.dp = 8}, t, MakeCluster(1));
  EXPECT_EQ(ddp.largest().comm_bytes.count(), 52'500'000'000);
  const Plan z1 = MustAnalyze("zero-7.5b", "zero1", {.dp = 8}, t, MakeCluster(1));
  ASSERT_EQ(z1.largest().collectives.size(), 2u);
  EXPECT_EQ(z1.largest().collectives[0].kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(z1.largest().collectives[0].total_bytes.count(), 26'250'000'000);
  EXPECT_EQ(z1.largest().collectives[1].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(z1.largest().collectives[1].total_bytes.count(), 13'125'000'000);
}

TEST(Analyze, Fp32MainGradsGoToTheHostAsFp32UnderZeroOffload) {
  // One GPU, 4 micro-batches: the host holds (4 + 12)Ψ = 120e9; each micro-batch's fp32 grads
  // leave the device (4 x 4Ψ = 120e9) and the bf16 params come back once (2Ψ = 15e9).
  TrainingSpec t = MakeTraining(1, 4);
  t.main_grads_fp32 = true;
  const Plan p = MustAnalyze("zero-7.5b", "zero-offload", {.dp = 1}, t, MakeCluster(1, 1));
  EXPECT_EQ(p.largest().memory.params.count(), 15'000'000'000);
  EXPECT_EQ(p.largest().memory.offloaded_host.count(), 120'000'000'000);
  EXPECT_EQ(p.largest().copy_bytes.count(), 135'000'000'000);
}

TEST(Analyze, Zero3AtEightDevicesHoldsEightTimesLessAndMovesOnePointFiveTimesMore) {
  const Plan ddp = MustAnalyze("zero-7.5b", "ddp", {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
  const Plan z3 = MustAnalyze("zero-7.5b", "zero3", {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
  // Model state: 16Ψ = 120e9 vs 16Ψ/8 = 2Ψ = 15e9 (8x less).
  EXPECT_EQ(ddp.largest().memory.model_states().count(), 120'000'000'000);
  EXPECT_EQ(z3.largest().memory.model_states().count(), 15'000'000'000);
  // Communication with 2Ψ = 15e9 bytes of bf16 params/grads, N = 8, ring (N-1)/N = 7/8:
  // DDP all-reduce 2 x 7/8 x 15e9 = 26.25e9; ZeRO-3 all-gather (forward) + all-gather
  // (backward) + reduce-scatter = 3 x 7/8 x 15e9 = 39.375e9. Ratio exactly 1.5.
  EXPECT_EQ(ddp.largest().comm_bytes.count(), 26'250'000'000);
  EXPECT_EQ(z3.largest().comm_bytes.count(), 39'375'000'000);
  EXPECT_DOUBLE_EQ(z3.largest().comm_bytes / ddp.largest().comm_bytes, 1.5);
}

TEST(Analyze, Zero1And2MoveWhatDdpMoves) {
  // Reduce-scatter + all-gather = 2 x 7/8 x 2Ψ, the same as DDP's all-reduce (ZeRO Section 7).
  for (const char* s : {"zero1", "zero2"}) {
    const Plan p = MustAnalyze("zero-7.5b", s, {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
    EXPECT_EQ(p.largest().comm_bytes.count(), 26'250'000'000) << s;
    ASSERT_EQ(p.largest().collectives.size(), 2u) << s;
    EXPECT_EQ(p.largest().collectives[0].kind, CollectiveKind::kReduceScatter);
    EXPECT_EQ(p.largest().collectives[1].kind, CollectiveKind::kAllGather);
  }
}

TEST(Analyze, Zero2ReduceScattersEveryMicroBatch) {
  // 4 micro-batches per step (global 32 = micro 1 x dp 8 x 4): sharded grads cannot be
  // accumulated whole, so the reduce-scatter runs 4 times; ZeRO-1 keeps full grads and
  // reduces once.
  const Plan z2 = MustAnalyze("zero-7.5b", "zero2", {.dp = 8}, MakeTraining(1, 32), MakeCluster(1));
  const Plan z1 = MustAnalyze("zero-7.5b", "zero1", {.dp = 8}, MakeTraining(1, 32), MakeCluster(1));
  EXPECT_EQ(z2.micro_batches, 4);
  EXPECT_EQ(z2.largest().collectives[0].count, 4);
  EXPECT_EQ(z1.largest().collectives[0].count, 1);
}

TEST(Analyze, HybridShardingShardsInsideANodeAndAllReducesAcross) {
  // dp 16 on 2 nodes of 8: shard over 8, replicate over 2. Params 2Ψ/8 = 1.875e9.
  // Comm: reduce-scatter 7/8 x 15e9 = 13.125e9; all-gathers 2 x 13.125e9 = 26.25e9;
  // all-reduce of the 1.875e9 shard across 2 replicas: 2 x 1/2 x 1.875e9 = 1.875e9.
  const Plan p =
      MustAnalyze("zero-7.5b", "fsdp-hybrid", {.dp = 16}, MakeTraining(1, 16), MakeCluster(2));
  EXPECT_EQ(p.largest().memory.params.count(), 1'875'000'000);
  EXPECT_EQ(p.largest().comm_bytes.count(), 13'125'000'000 + 26'250'000'000 + 1'875'000'000);
}

TEST(Analyze, Llama3With8WayTensorParallelAndZero1) {
  // 64 H100: tp 8 inside each node, ZeRO-1 over dp 8. Params ≈ 2 x 70.55e9 / 8 = 17.64 GB
  // (norms stay whole on every tp rank, a few MB); optimizer ≈ 12 x 70.55e9 / 64 = 13.23 GB.
  TrainingSpec t = MakeTraining(1, 64);
  t.sequence_parallel = true;
  t.recompute = Recompute::kSelective;
  const Plan p = MustAnalyze("llama3-70b", "zero1", {.dp = 8, .tp = 8}, t, MakeCluster(8));
  EXPECT_TRUE(p.ok());
  ASSERT_EQ(p.roles.size(), 1u);
  const MemoryBreakdown& m = p.largest().memory;
  EXPECT_NEAR(m.params.ToGB(), 2 * 70.5537 / 8, 0.02);
  EXPECT_NEAR(m.optimizer.ToGB(), 12 * 70.5537 / 64, 0.02);
  EXPECT_EQ(m.grads.count(), m.params.count());
  EXPECT_TRUE(m.fits);
}

TEST(Analyze, TensorParallelAllReducesFourTimesPerLayer) {
  // llama2-7b, tp 8, b = 1, s = 4096, h = 4096: S = b s h x 2 = 33,554,432 bytes. Megatron:
  // 2 all-reduces forward + 2 backward per layer, 32 layers, 1 micro-batch → 128 calls of
  // 2 x 7/8 x S = 58,720,256 bytes = 7,516,192,768 bytes.
  const Plan p =
      MustAnalyze("llama2-7b", "megatron", {.tp = 8}, MakeTraining(1, 1), MakeCluster(1));
  const Collective& c = p.largest().collectives.front();
  EXPECT_EQ(c.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(c.axis, Axis::kTensor);
  EXPECT_EQ(c.buffer_bytes.count(), 33'554'432);
  EXPECT_EQ(c.count, 128);
  EXPECT_EQ(c.total_bytes.count(), 7'516'192'768);
}

TEST(Analyze, SequenceParallelMovesTheSameVolumeAsTensorParallel) {
  // Korthikanti Section 4.2.2: all-gather + reduce-scatter instead of one all-reduce.
  TrainingSpec sp = MakeTraining(1, 1);
  sp.sequence_parallel = true;
  const Plan p = MustAnalyze("llama2-7b", "megatron", {.tp = 8}, sp, MakeCluster(1));
  Bytes layers;
  for (const Collective& c : p.largest().collectives)
    if (c.count == 128) layers += c.total_bytes;
  EXPECT_EQ(layers.count(), 7'516'192'768);
}

class Gpt3Tp8Pp8 : public ::testing::Test {
 protected:
  // 64 A100-80GB, tp 8 x pp 8, b = 1, 64 micro-batches per step, 1F1B, sequence parallel,
  // selective recompute (the Korthikanti setup).
  void SetUp() override {
    TrainingSpec t = MakeTraining(1, 64);
    t.sequence_parallel = true;
    t.recompute = Recompute::kSelective;
    plan_ = MustAnalyze("gpt3-175b", "megatron", {.tp = 8, .pp = 8}, t, MakeCluster(8));
  }
  Plan plan_;
  // s b h = 2048 x 1 x 12288.
  static constexpr int64_t kSbh = 25'165'824;
};

TEST_F(Gpt3Tp8Pp8, OneRolePerStageUnder1F1B) {
  // Stage i keeps p - i micro-batches: every stage differs.
  ASSERT_EQ(plan_.roles.size(), 8u);
  EXPECT_EQ(plan_.roles[0].name, "pp stage 0 (first)");
  EXPECT_EQ(plan_.roles[7].name, "pp stage 7 (last)");
  EXPECT_DOUBLE_EQ(plan_.roles[0].microbatches_in_flight, 8);
  EXPECT_DOUBLE_EQ(plan_.roles[7].microbatches_in_flight, 1);
  EXPECT_TRUE(plan_.roles[0].has_embedding);
  EXPECT_TRUE(plan_.roles[7].has_head);
  EXPECT_EQ(plan_.roles[3].layers, 12);
}

TEST_F(Gpt3Tp8Pp8, ActivationsFollowKorthikanti) {
  // Table 2, tensor + sequence parallel + selective: per layer s b h x 34/t = 106,954,752.
  const TransformerSpec& gpt3 = Model("gpt3-175b").transformer;
  EXPECT_EQ(ActivationBytesPerLayer(gpt3, 1, 2048, 8, true, Recompute::kSelective).count(),
            kSbh * 34 / 8);
  // While a layer's backward runs, selective recompute rebuilds its attention core beside what
  // is kept: 5 a s^2 b / t = 5 x 96 x 2048^2 / 8 = 251,658,240 bytes.
  constexpr int64_t kScores = int64_t{5} * 96 * 2048 * 2048 / 8;
  // Stage 1 keeps 12 layers x 7 micro-batches.
  EXPECT_EQ(plan_.roles[1].memory.activations.count(), kSbh * 34 / 8 * 12 * 7 + kScores);
  // Stage 0: 12 x 8 micro-batches plus the embedding dropout mask s b h / t per micro-batch.
  EXPECT_EQ(plan_.roles[0].memory.activations.count(),
            kSbh * 34 / 8 * 12 * 8 + kSbh / 8 * 8 + kScores);
  // Stage 7 keeps one micro-batch and its logits, (4 s b h + 4 s b V) / t = 65,011,712 bytes,
  // which its output layer frees before the first layer backward needs the larger scores.
  EXPECT_EQ(plan_.roles[7].memory.activations.count(), kSbh * 34 / 8 * 12 + kScores);
  EXPECT_EQ(plan_.largest_role, 0);
}

TEST_F(Gpt3Tp8Pp8, PipelineSendsActivationsBothWays) {
  // Middle stage: 64 forward sends and 64 backward sends of b s h x 2 / t = 6,291,456 bytes.
  EXPECT_EQ(SumCollectives(plan_.roles[3], Axis::kPipeline).count(), 2 * 64 * 6'291'456);
  EXPECT_DOUBLE_EQ(plan_.bubble_fraction, 7.0 / 64.0);
}

TEST(Analyze, InterleavedFirstStageHoldsKorthikantiFactor) {
  // p = 4, v = 2, m = 16: the first stage holds p (1 + (p-1)/(p v)) = 4 x 11/8 = 5.5
  // micro-batches of its layers; bubble (p-1)/(v m) = 3/32.
  TrainingSpec t = MakeTraining(1, 32);
  t.pipeline_schedule = PipelineSchedule::kInterleaved1F1B;
  t.virtual_stages = 2;
  const Plan p = MustAnalyze("llama2-7b", "megatron", {.dp = 2, .pp = 4}, t, MakeCluster(1));
  EXPECT_DOUBLE_EQ(p.roles.front().microbatches_in_flight, 5.5);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 3.0 / 32.0);
  EXPECT_TRUE(p.ok());
}

TEST(Analyze, GpipeKeepsEveryMicroBatch) {
  TrainingSpec t = MakeTraining(1, 32);
  t.pipeline_schedule = PipelineSchedule::kGpipe;
  const Plan p = MustAnalyze("llama2-7b", "megatron", {.dp = 2, .pp = 4}, t, MakeCluster(1));
  for (const RankRole& r : p.roles) EXPECT_DOUBLE_EQ(r.microbatches_in_flight, 16);
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 3.0 / 16.0);
}

TEST(Analyze, Zero3GatherBuffersHoldTwoUnitsAndOneUnitOfGrads) {
  // llama2-7b, one layer per unit: the layer (202,383,360 parameters) is larger than the
  // embedding (131,072,000). Prefetch depth 1: two units of bf16 params and the unit's full
  // bf16 grads before its reduce-scatter: 3 x 2 x 202,383,360 = 1,214,300,160 bytes.
  const Plan p = MustAnalyze("llama2-7b", "zero3", {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
  EXPECT_EQ(p.largest().memory.gather_buffers.count(), 1'214'300'160);
}

TEST(Analyze, ContextParallelJoinsTheDataParallelGroup) {
  // cp 2 carries dp's placement, so grads are reduce-scattered over dp x cp = 8 ranks, and
  // each rank keeps the activations of s / 2 tokens.
  TrainingSpec t = MakeTraining(1, 4);
  t.recompute = Recompute::kSelective;
  const Plan p = MustAnalyze("llama3-8b", "zero1", {.dp = 4, .cp = 2}, t, MakeCluster(1));
  EXPECT_TRUE(p.ok());
  const RankRole& r = p.largest();
  EXPECT_EQ(r.collectives[0].kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(r.collectives[0].group_size, 8);
  const TransformerSpec& m = Model("llama3-8b").transformer;
  const Bytes per_layer = ActivationBytesPerLayer(m, 1, 4096, 1, false, Recompute::kSelective);
  EXPECT_GT(r.memory.activations, per_layer * 32);
  EXPECT_GT(SumCollectives(r, Axis::kContext).count(), 0);
}

TEST(Analyze, ZeroOffloadMovesOptimizerAndGradsToTheHost) {
  // dp 8: the host holds (12 + 2) x 7.5e9 / 8 = 13.125e9 per device; the device keeps the
  // replicated bf16 params (15e9). Each step copies the 1.875e9-byte grad shard to the host
  // and the updated 1.875e9-byte param shard back.
  const Plan p =
      MustAnalyze("zero-7.5b", "zero-offload", {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
  const MemoryBreakdown& m = p.largest().memory;
  EXPECT_EQ(m.params.count(), 15'000'000'000);
  EXPECT_EQ(m.optimizer.count(), 0);
  EXPECT_EQ(m.grads.count(), 0);
  EXPECT_EQ(m.offloaded_host.count(), 13'125'000'000);
  EXPECT_EQ(p.largest().copy_bytes.count(), int64_t{2} * 1'875'000'000);
  EXPECT_TRUE(p.ok());
}

TEST(Analyze, DdpOfASeventyBillionModelDoesNotFitIn80Gb) {
  // 16 bytes x 70.55e9 = 1.13 TB per device.
  const Plan p = MustAnalyze("llama3-70b", "ddp", {.dp = 64}, MakeTraining(1, 64), MakeCluster(8));
  EXPECT_FALSE(p.largest().memory.fits);
  EXPECT_LT(p.largest().memory.headroom.count(), 0);
  EXPECT_TRUE(p.ok());  // correct, just too big: a warning
  EXPECT_EQ(p.warnings(), 1);
  EXPECT_EQ(p.findings[0].rule, "memory-fits");
}

TEST(Analyze, TotalIsTheSumOfItsParts) {
  const Plan p =
      MustAnalyze("mixtral-8x7b", "zero1", {.dp = 8, .ep = 8}, MakeTraining(1, 8), MakeCluster(1));
  for (const RankRole& r : p.roles) {
    const MemoryBreakdown& m = r.memory;
    EXPECT_EQ(m.total, m.params + m.grads + m.optimizer + m.activations + m.gather_buffers +
                           m.offload_staging);
    Bytes comm;
    for (const Collective& c : r.collectives) comm += c.total_bytes;
    EXPECT_EQ(comm, r.comm_bytes);
  }
}

TEST(Analyze, ImpossibleInputsAreAStatus) {
  ModelSpec empty;
  empty.name = "empty";
  StrategySpec s = *ExpandStrategyPreset("ddp", MeshShape{.dp = 8});
  StatusOr<Plan> p = Analyze(empty, MakeTraining(1, 8), s, MakeCluster(1));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("needs an architecture"), std::string::npos);

  TrainingSpec bad = MakeTraining(0, 8);
  p = Analyze(Model("llama2-7b"), bad, s, MakeCluster(1));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("training.micro_batch"), std::string::npos);
}

TEST(Analyze, ExpertPartCollectivesSayTheyAreTheExperts) {
  // mixtral-8x7b, ZeRO-1 over dp 8 with ep 2: the dense part's grads are reduce-scattered over
  // all 8 dp ranks and its updated params all-gathered there; the experts' part over the
  // dp / ep = 4 ranks holding the same experts; tokens are exchanged over ep = 2. Hybrid
  // replica groups have one member here, so no replica all-reduce is emitted.
  const Plan p =
      MustAnalyze("mixtral-8x7b", "zero1", {.dp = 8, .ep = 2}, MakeTraining(1, 8), MakeCluster(1));
  std::vector<CommPurpose> reasons;
  std::vector<int> groups;
  for (const Collective& c : p.largest().collectives) {
    reasons.push_back(c.reason);
    groups.push_back(c.group_size);
    EXPECT_EQ(IsExpertPartSync(c.reason), c.axis == Axis::kData && c.group_size == 4)
        << CommPurposeName(c.reason);
  }
  EXPECT_EQ(reasons, (std::vector<CommPurpose>{
                         CommPurpose::kGradSync, CommPurpose::kUpdatedParamGather,
                         CommPurpose::kExpertGradSync, CommPurpose::kExpertUpdatedParamGather,
                         CommPurpose::kExpertDispatchCombine}));
  EXPECT_EQ(groups, (std::vector<int>{8, 8, 4, 4, 2}));
}

TEST(Analyze, OffloadCopiesSayWhyTheyMove) {
  // ZeRO-Offload: the grad shard goes to the host optimizer, the updated params come back.
  const Plan p =
      MustAnalyze("llama2-7b", "zero-offload", {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
  ASSERT_EQ(p.largest().copies.size(), 2u);
  EXPECT_EQ(p.largest().copies[0].reason, CommPurpose::kGradToHostOptimizer);
  EXPECT_EQ(p.largest().copies[1].reason, CommPurpose::kUpdatedParamReturn);
}

// Offload is where a state lives, whatever the size of the axis that says so (issue 12: on
// one GPU, or on dp 1 with tp > 1, it used to be dropped and all 16 bytes per parameter stayed
// on the device).
TEST(Analyze, ZeroOffloadOnOneGpuKeepsOptimizerAndGradsOnTheHost) {
  // Ψ = 7.5e9 on one GPU, 4 micro-batches: the device keeps the bf16 params (2Ψ = 15e9); the
  // host the grads and Adam state ((2 + 12)Ψ = 105e9). Every micro-batch's grads (2Ψ) go to
  // the host, where they are accumulated (4 x 15e9 = 60e9), and the updated params (2Ψ) come
  // back once: 75e9 bytes of copies per step.
  const Plan p =
      MustAnalyze("zero-7.5b", "zero-offload", {.dp = 1}, MakeTraining(1, 4), MakeCluster(1, 1));
  const MemoryBreakdown& m = p.largest().memory;
  EXPECT_EQ(m.params.count(), 15'000'000'000);
  EXPECT_EQ(m.grads.count(), 0);
  EXPECT_EQ(m.optimizer.count(), 0);
  EXPECT_EQ(m.offloaded_host.count(), 105'000'000'000);
  EXPECT_EQ(m.offloaded_nvme.count(), 0);
  ASSERT_EQ(p.largest().copies.size(), 2u);
  EXPECT_EQ(p.largest().copies[0].bytes_per_step.count(), 60'000'000'000);
  EXPECT_EQ(p.largest().copies[1].bytes_per_step.count(), 15'000'000'000);
  EXPECT_TRUE(m.fits);
  EXPECT_TRUE(p.ok());
}

TEST(Analyze, ZeroOffloadOnDataParallelOneWithTensorParallelTwo) {
  // dp 1 x tp 2: each tp rank keeps its bf16 slice (2 bytes per element of params_local) and
  // offloads grads and Adam state of the same slice (14 bytes per element).
  const Plan p = MustAnalyze("llama2-7b", "zero-offload", {.dp = 1, .tp = 2}, MakeTraining(1, 2),
                             MakeCluster(1, 2));
  const RankRole& r = p.largest();
  EXPECT_EQ(r.memory.params.count(), 2 * r.params_local);
  EXPECT_EQ(r.memory.grads.count(), 0);
  EXPECT_EQ(r.memory.optimizer.count(), 0);
  EXPECT_EQ(r.memory.offloaded_host.count(), 14 * r.params_local);
  // Two micro-batches of grads out (2 x 2 bytes), the updated params back (2 bytes).
  EXPECT_EQ(r.copy_bytes.count(), 6 * r.params_local);
  EXPECT_TRUE(p.ok());
}

TEST(Analyze, ZeroInfinityOnOneGpuStreamsParamsFromNvme) {
  // Params and optimizer on NVMe ((2 + 12)Ψ = 105e9), grads on the host (2Ψ = 15e9); nothing
  // but staging on the device. Per micro-batch the params come in twice (forward and
  // backward, 2 x 15e9) and the grads go out once (15e9): 2 micro-batches, 90e9 bytes.
  const Plan p =
      MustAnalyze("zero-7.5b", "zero-infinity", {.dp = 1}, MakeTraining(1, 2), MakeCluster(1, 1));
  const MemoryBreakdown& m = p.largest().memory;
  EXPECT_EQ(m.model_states().count(), 0);
  EXPECT_EQ(m.offloaded_nvme.count(), 105'000'000'000);
  EXPECT_EQ(m.offloaded_host.count(), 15'000'000'000);
  EXPECT_EQ(p.largest().copy_bytes.count(), 90'000'000'000);
}

TEST(Analyze, OffloadTiersReportTheirOwnFit) {
  // ZeRO-Offload of Ψ = 7.5e9 on one GPU puts (2 + 12)Ψ = 105e9 bytes on the host. The one rank
  // has the node's whole host memory: 2 TB fits, 100 GB does not, while the GPU (15e9 of
  // params) fits either way.
  topology::ClusterSpec cluster = MakeCluster(1, 1);
  Plan p = MustAnalyze("zero-7.5b", "zero-offload", {.dp = 1}, MakeTraining(1, 1), cluster);
  EXPECT_EQ(p.largest().memory.host_capacity.count(), 2'000'000'000'000);
  EXPECT_TRUE(p.largest().memory.fits_host);
  cluster.node.host_memory = GB(100);
  p = MustAnalyze("zero-7.5b", "zero-offload", {.dp = 1}, MakeTraining(1, 1), cluster);
  EXPECT_TRUE(p.largest().memory.fits);
  EXPECT_FALSE(p.largest().memory.fits_host);
  EXPECT_TRUE(p.largest().memory.fits_nvme);  // nothing on NVMe
  // Eight ranks on a node share it: each has 2 TB / 8 = 250 GB of host memory and
  // 30 TB / 8 = 3.75 TB of NVMe. ZeRO-Infinity on dp 8 puts 14Ψ / 8 = 13.125e9 on NVMe.
  p = MustAnalyze("zero-7.5b", "zero-infinity", {.dp = 8}, MakeTraining(1, 8), MakeCluster(1));
  EXPECT_EQ(p.largest().memory.host_capacity.count(), 250'000'000'000);
  EXPECT_EQ(p.largest().memory.nvme_capacity.count(), 3'750'000'000'000);
  EXPECT_EQ(p.largest().memory.offloaded_nvme.count(), 13'125'000'000);
  EXPECT_TRUE(p.largest().memory.fits_nvme);
  cluster = MakeCluster(1);
  cluster.node.nvme_capacity = GB(100);  // 12.5 GB a rank
  p = MustAnalyze("zero-7.5b", "zero-infinity", {.dp = 8}, MakeTraining(1, 8), cluster);
  EXPECT_FALSE(p.largest().memory.fits_nvme);
  EXPECT_TRUE(p.largest().memory.fits_host);
}

TEST(CommPurpose, EveryValueHasItsOwnName) {
  std::set<std::string> names;
  const int count = static_cast<int>(CommPurpose::kParamFetch) + 1;
  for (int i = 0; i < count; ++i) {
    const std::string name = CommPurposeName(static_cast<CommPurpose>(i));
    EXPECT_NE(name, "unknown") << i;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(count));
}

}  // namespace
}  // namespace placesim::strategies
