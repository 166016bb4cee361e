// The model vocabulary of current models (head_dim, MLA, shared experts, expert width, dense
// layers mixed with MoE layers): FLOPs and activations derived from the shapes, the classic
// shapes unchanged when the new fields spell out their defaults, the analyzer placing dense
// and MoE layers per stage, and the schedule refusing the mix with its reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "strategies/analyzer.h"
#include "strategies/model.h"
#include "strategies/presets.h"
#include "strategies/schedule.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::MakeCluster;
using test_util::MakeTraining;
using test_util::Model;
using ::testing::HasSubstr;

// A small DeepSeek-like MoE model: MLA, one shared expert, the first `dense` layers dense.
TransformerSpec SmallDeepSeek(int64_t dense) {
  TransformerSpec t;
  t.layers = 8;
  t.hidden = 512;
  t.heads = 8;
  t.kv_heads = 8;
  t.ffn_hidden = 1536;
  t.vocab = 1000;
  t.seq_len = 256;
  t.gated_mlp = true;
  t.experts = 16;
  t.top_k = 2;
  t.capacity_factor = 0;
  t.expert_ffn_hidden = 256;
  t.shared_experts = 1;
  t.first_dense_layers = dense;
  t.q_lora_rank = 128;
  t.kv_lora_rank = 64;
  t.qk_rope_head_dim = 16;
  t.qk_nope_head_dim = 32;
  t.v_head_dim = 32;
  return t;
}

// Spelling out head_dim = hidden / heads changes nothing, to the bit (goldens rely on it).
TEST(ModelShapes, ExplicitDefaultHeadDimIsTheClassicShape) {
  TransformerSpec t = Model("llama3-70b").transformer;
  const Flops before = ModelFlopsPerIteration(t, 64, Recompute::kSelective);
  const Bytes act_before = ActivationBytesPerLayer(t, 1, t.seq_len, 8, true, Recompute::kNone);
  const int64_t params_before = CountParameters(t).total();
  t.head_dim = t.hidden / t.heads;
  EXPECT_EQ(ModelFlopsPerIteration(t, 64, Recompute::kSelective).count(), before.count());
  EXPECT_EQ(ActivationBytesPerLayer(t, 1, t.seq_len, 8, true, Recompute::kNone), act_before);
  EXPECT_EQ(CountParameters(t).total(), params_before);
}

// MLA's matrices (h 512, a 8, r_q 128, r_kv 64, d_rope 16, d_nope 32, d_v 32):
//   q_a 512·128 = 65,536; q_b 128·8·48 = 49,152; kv_a 512·80 = 40,960; kv_b 64·8·64 = 32,768;
//   o 8·32·512 = 131,072: 319,488 weights, 2 FLOPs each per token = 638,976.
// Latent norms r_q + r_kv = 192 and the layer's two RMSNorms 1,024 are replicated.
TEST(ModelShapes, MlaAttentionFromItsProjections) {
  const TransformerSpec t = SmallDeepSeek(0);
  EXPECT_EQ(LayerGemmFlopsPerToken(t).attention, 638'976.0);
  const ParameterBreakdown p = CountParameters(t);
  EXPECT_EQ(p.layer_tp_split, 319'488);
  EXPECT_EQ(p.layer_tp_replicated, 192 + 1'024);
  // The core: QK^T over d_qk 48 and AV over d_v 32: a (48 + 32) / 2 = 320 in place of h.
  EXPECT_EQ(AttentionCoreWidth(t), 320);
  // Shared expert 3·512·256 = 393,216 (tp-split, beside the attention); 16 routed experts.
  EXPECT_EQ(p.layer_shared_experts, 393'216);
  EXPECT_EQ(p.layer_experts, 16 * 393'216);
}

// A model of d dense and l - d MoE layers runs what the two homogeneous models would: the
// FLOPs are the all-MoE model's over l - d layers plus the dense model's over d, less the one
// logit layer (6 B s h V) counted twice.
TEST(ModelShapes, MixedLayersSumBothKinds) {
  const TransformerSpec mixed = SmallDeepSeek(3);
  TransformerSpec moe = SmallDeepSeek(0);
  moe.layers = 5;
  TransformerSpec dense = DenseLayerOf(SmallDeepSeek(0));
  dense.layers = 3;
  const double logits = 6.0 * 32 * 256 * 512 * 1000;
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const double want = ModelFlopsPerIteration(moe, 32, r).count() +
                        ModelFlopsPerIteration(dense, 32, r).count() - logits;
    EXPECT_NEAR(ModelFlopsPerIteration(mixed, 32, r).count() / want, 1.0, 1e-12);
  }
  // Parameters: 3 dense layers (attention + 3·512·1536 MLP) and 5 MoE layers.
  const ParameterBreakdown p = CountParameters(mixed);
  EXPECT_EQ(p.dense_layers, 3);
  EXPECT_EQ(p.dense_per_layer(), 319'488 + 1'216 + 3 * 512 * 1536);
  EXPECT_EQ(p.total(), 3 * p.dense_per_layer() + 5 * p.per_layer() + 2 * 1000 * 512 + 512);
  // Active: 14 of 16 routed experts idle in each of the 5 MoE layers.
  EXPECT_EQ(ActiveParameterCount(mixed), p.total() - 5 * 14 * 393'216);
  // Qwen-style interval: layers 1, 3, 5, 7 (0-based) are MoE when every second one is.
  TransformerSpec every_other = SmallDeepSeek(0);
  every_other.moe_layer_interval = 2;
  EXPECT_EQ(DenseLayersIn(every_other, 0, 8), 4);
  EXPECT_FALSE(IsMoeLayer(every_other, 0));
  EXPECT_TRUE(IsMoeLayer(every_other, 1));
}

ModelSpec AsModel(const TransformerSpec& t) {
  ModelSpec m;
  m.name = "custom";
  m.transformer = t;
  return m;
}

// pp 2 over 8 layers, the first 3 dense: stage 0 holds 3 dense + 1 MoE layer and the
// embedding, stage 1 four MoE layers and the head; under ep 2 each MoE layer keeps half its
// routed experts. Parameters per device (ddp-style R on dp, S on pp and ep):
//   stage 0: 3 dense layers + 1 MoE layer's dense part (attention, norms, router, shared) +
//            half its experts + the embedding
//   stage 1: 4 MoE layers' dense parts + half their experts + head + final norm
TEST(ModelShapes, AnalyzerPlacesDenseAndMoeLayersPerStage) {
  const ModelSpec model = AsModel(SmallDeepSeek(3));
  const ParameterBreakdown p = CountParameters(model.transformer);
  const StrategySpec strategy = *ExpandStrategyPreset("megatron", {.dp = 2, .pp = 2, .ep = 2}, 4);
  TrainingSpec training = MakeTraining(1, 8);
  const Plan plan = *Analyze(model, training, strategy, MakeCluster(1, 4));
  const int64_t moe_dense =
      p.layer_tp_split + p.layer_tp_replicated + p.layer_router + p.layer_shared_experts;
  const int64_t stage0 = 3 * p.dense_per_layer() + moe_dense + p.layer_experts / 2 + p.embedding;
  const int64_t stage1 = 4 * (moe_dense + p.layer_experts / 2) + p.head + p.final_norm;
  ASSERT_EQ(plan.roles.size(), 2u);
  EXPECT_EQ(plan.roles[0].memory.params.count(), stage0 * 2);  // bf16
  EXPECT_EQ(plan.roles[1].memory.params.count(), stage1 * 2);
  // Only MoE layers dispatch: 2 all-to-alls (dispatch, combine) in the forward and 2 in the
  // backward per MoE layer and micro-batch (8 / dp 2 = 4): stage 0's one MoE layer 16,
  // stage 1's four 64.
  const auto all_to_alls = [](const RankRole& role) {
    int64_t n = 0;
    for (const Collective& col : role.collectives)
      if (col.reason == CommPurpose::kExpertDispatchCombine) n += col.count;
    return n;
  };
  EXPECT_EQ(all_to_alls(plan.roles[0]), 16);
  EXPECT_EQ(all_to_alls(plan.roles[1]), 64);
}

// MLA without its head widths is refused; tp must divide the expert width too.
TEST(ModelShapes, ValidationNamesTheNewFields) {
  TransformerSpec t = SmallDeepSeek(0);
  t.v_head_dim = 0;
  const StrategySpec ddp = *ExpandStrategyPreset("ddp", {.dp = 4}, 4);
  const StatusOr<Plan> mla = Analyze(AsModel(t), MakeTraining(1, 8), ddp, MakeCluster(1, 4));
  ASSERT_FALSE(mla.ok());
  EXPECT_THAT(mla.status().message(), HasSubstr("multi-head latent attention needs"));
  TransformerSpec wide = SmallDeepSeek(0);
  wide.expert_ffn_hidden = 250;  // not divisible by tp 4
  const StrategySpec tp4 = *ExpandStrategyPreset("megatron", {.tp = 4}, 4);
  const Plan plan = *Analyze(AsModel(wide), MakeTraining(1, 8), tp4, MakeCluster(1, 4));
  bool found = false;
  for (const Finding& f : plan.findings)
    found = found || (f.rule == "tp-divisibility" &&
                      f.message.find("expert_ffn_hidden 250") != std::string::npos);
  EXPECT_TRUE(found);
}

// The schedule gives every layer its own kind: the stage holding the 3 dense layers issues
// all-to-alls for its one MoE layer only (as the plan counts them), and the compute ops of one
// pipeline, times dp 2, do the model's FLOPs (eq. 3 over both kinds: ModelFlopsPerIteration
// over the 8 sequences), the optimizer's element-wise update aside.
TEST(ModelShapes, ScheduleEmitsEachLayerByItsKind) {
  const ModelSpec model = AsModel(SmallDeepSeek(3));
  const StrategySpec strategy = *ExpandStrategyPreset("megatron", {.dp = 2, .pp = 2, .ep = 2}, 4);
  const TrainingSpec training = MakeTraining(1, 8);
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(model, training, strategy, MakeCluster(1, 4));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  double flops = 0;
  std::vector<int64_t> all_to_alls;
  for (const Schedule& stage : *out) {
    int64_t n = 0;
    for (const Op& op : stage.ops) {
      if (op.kind == OpKind::kCompute && op.phase != Phase::kOptimizer) flops += op.flops.count();
      if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllToAll) ++n;
    }
    all_to_alls.push_back(n);
  }
  EXPECT_EQ(all_to_alls, (std::vector<int64_t>{16, 64}));
  EXPECT_NEAR(2.0 * flops / ModelFlopsPerIteration(model.transformer, 8, Recompute::kNone).count(),
              1.0, 1e-9);
}

}  // namespace
}  // namespace placesim::strategies
