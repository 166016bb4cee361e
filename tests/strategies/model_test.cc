// Oracle tests of the transformer maths against the published figures (Megatron-LM eq. 2
// and Table 1, Korthikanti et al. Table 2, model cards, the ZeRO paper's K).
#include "strategies/model.h"

#include <gtest/gtest.h>

#include "strategies/presets.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::Model;

TEST(MegatronParameterCount, OneTrillionConfigIs1008Billion) {
  // Narayanan et al. 2021 Table 1: l = 128, h = 25600, V = 51200, s = 2048 → 1008 B.
  // 12 l h^2 = 12 * 128 * 655,360,000 = 1,006,632,960,000
  // 13 l h   = 13 * 128 * 25600      =        42,598,400
  // (V+s) h  = 53248 * 25600         =     1,363,148,800
  const int64_t p = MegatronParameterCount(128, 25600, 51200, 2048);
  EXPECT_EQ(p, 1'008'038'707'200);
  EXPECT_NEAR(static_cast<double>(p) / 1e12, 1.008, 0.0005);
}

TEST(MegatronParameterCount, Gpt3ShapeIs174Point6Billion) {
  // l = 96, h = 12288, V = 51200, s = 2048:
  // 12 * 96 * 12288^2 = 173,946,175,488; 13 * 96 * 12288 = 15,335,424;
  // 53248 * 12288 = 654,311,424 → 174,615,822,336 ≈ 174.6 B.
  EXPECT_EQ(MegatronParameterCount(96, 12288, 51200, 2048), 174'615'822'336);
}

TEST(CountParameters, GptShapeIsEquationTwoPlusTheFinalLayerNorm) {
  // The general count adds only the final LayerNorm (2h) that eq. 2 leaves out.
  for (const char* name : {"gpt3-175b", "megatron-1t", "megatron-gpt-22b", "megatron-530b"}) {
    const TransformerSpec& t = Model(name).transformer;
    EXPECT_EQ(CountParameters(t).total(),
              MegatronParameterCount(t.layers, t.hidden, t.vocab, t.seq_len) + 2 * t.hidden)
        << name;
  }
}

TEST(CountParameters, Llama2SevenBillionMatchesTheModelCard) {
  // Per layer 4h^2 + 3 h f + 2h = 67,108,864 + 135,266,304 + 8,192 = 202,383,360; x 32 =
  // 6,476,267,520; untied embedding and head 2 x 32000 x 4096 = 262,144,000; final norm
  // 4096 → 6,738,415,616 (the Hugging Face checkpoint's count).
  EXPECT_EQ(CountParameters(Model("llama2-7b").transformer).total(), 6'738'415'616);
}

TEST(CountParameters, Llama3EightBillionWithGroupedQueryAttention) {
  // Attention 2h^2 + 2h(8 x 128) = 41,943,040; MLP 3 x 4096 x 14336 = 176,160,768; norms
  // 8192 → 218,112,000 x 32 = 6,979,584,000; embedding and head 2 x 128256 x 4096 =
  // 1,050,673,152; final norm 4096 → 8,030,261,248.
  EXPECT_EQ(CountParameters(Model("llama3-8b").transformer).total(), 8'030'261'248);
}

TEST(CountParameters, MixtralCountsEveryExpertAndTheRouter) {
  // Per layer: attention 41,943,040 + 8 experts x 3 x 4096 x 14336 = 1,409,286,144 + router
  // 4096 x 8 = 32,768 + norms 8,192 = 1,451,270,144; x 32 = 46,440,644,608; embedding and
  // head 262,144,000; final norm 4096 → 46,702,792,704 (the "46.7B" of the model card).
  EXPECT_EQ(CountParameters(Model("mixtral-8x7b").transformer).total(), 46'702'792'704);
}

TEST(CountParameters, LargeLlamaPresetsAreNearTheirNames) {
  EXPECT_NEAR(CountParameters(Model("llama2-70b").transformer).total() / 1e9, 68.98, 0.05);
  EXPECT_NEAR(CountParameters(Model("llama3-70b").transformer).total() / 1e9, 70.55, 0.05);
  EXPECT_NEAR(CountParameters(Model("llama3-405b").transformer).total() / 1e9, 405.85, 0.1);
}

TEST(ParameterCount, BareCountIsUsedWithoutAnArchitecture) {
  EXPECT_EQ(ParameterCount(Model("zero-7.5b")), 7'500'000'000);
}

TEST(BytesPerParameter, MixedPrecisionKValues) {
  TrainingSpec t;
  // ZeRO paper: 2 (fp16 params) + 2 (fp16 grads) + K = 12 (fp32 master, momentum, variance).
  t.optimizer = Optimizer::kAdam;
  EXPECT_EQ(BytesPerParameter(t).params, 2);
  EXPECT_EQ(BytesPerParameter(t).grads, 2);
  EXPECT_EQ(BytesPerParameter(t).optimizer, 12);
  t.optimizer = Optimizer::kAdamW;
  EXPECT_EQ(BytesPerParameter(t).optimizer, 12);
  t.optimizer = Optimizer::kSgdMomentum;  // master 4 + momentum 4
  EXPECT_EQ(BytesPerParameter(t).optimizer, 8);
  t.optimizer = Optimizer::kAdam8bit;  // master 4 + two 1-byte moments
  EXPECT_EQ(BytesPerParameter(t).optimizer, 6);
  t.precision = Precision::kBf16;  // no master copy
  t.optimizer = Optimizer::kAdam;
  EXPECT_EQ(BytesPerParameter(t).optimizer, 8);
}

TEST(BytesPerParameter, Fp32MainGradsAreFourBytes) {
  // Megatron Core's distributed optimizer guide (docs.nvidia.com/megatron-core/developer-guide/
  // latest/distrib_optimizer.html, table of bytes per parameter), row "float16 param, fp32
  // grads": 18 without the distributed optimizer = 2 (bf16 param) + 4 (fp32 grad) + 12 (fp32
  // main param, Adam momentum and variance). Only the gradient changes.
  TrainingSpec t;
  t.main_grads_fp32 = true;
  for (Precision p : {Precision::kBf16Mixed, Precision::kFp16Mixed, Precision::kFp8Mixed}) {
    t.precision = p;
    const StateBytes b = BytesPerParameter(t);
    EXPECT_EQ(b.params, 2);
    EXPECT_EQ(b.grads, 4);
    EXPECT_EQ(b.optimizer, 12);
    EXPECT_EQ(b.params + b.grads + b.optimizer, 18);
  }
}

// Korthikanti et al. 2022 Table 2 with the 22B shape: s = 2048, b = 4, h = 6144, a = 64,
// t = 8. s b h = 2048 x 4 x 6144 = 50,331,648; 5 a s^2 b = 5 x 64 x 2048^2 x 4 =
// 5,368,709,120 (so 5as/h = 106.67).
class KorthikantiTable2 : public ::testing::Test {
 protected:
  const TransformerSpec& t_ = Model("megatron-gpt-22b").transformer;
  static constexpr int64_t kSbh = 50'331'648;
  static constexpr int64_t kScores = 5'368'709'120;
};

TEST_F(KorthikantiTable2, NoParallelism) {
  // s b h (34 + 5as/h) = 34 x 50,331,648 + 5,368,709,120 = 7,079,985,152.
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 1, false, Recompute::kNone).count(),
            34 * kSbh + kScores);
  EXPECT_EQ(34 * kSbh + kScores, 7'079'985'152);
}

TEST_F(KorthikantiTable2, TensorParallel) {
  // s b h (10 + 24/8 + 5as/(8h)) = 13 s b h + 5as^2b/8 = 654,311,424 + 671,088,640.
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 8, false, Recompute::kNone).count(),
            1'325'400'064);
}

TEST_F(KorthikantiTable2, TensorAndSequenceParallel) {
  // s b h (34/8 + 5as/(8h)) = 213,909,504 + 671,088,640.
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 8, true, Recompute::kNone).count(), 884'998'144);
}

TEST_F(KorthikantiTable2, TensorParallelWithSelectiveRecompute) {
  // s b h (10 + 24/8) = 13 x 50,331,648.
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 8, false, Recompute::kSelective).count(),
            654'311'424);
}

TEST_F(KorthikantiTable2, TensorSequenceParallelWithSelectiveRecompute) {
  // s b h 34/8 = 213,909,504.
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 8, true, Recompute::kSelective).count(),
            34 * kSbh / 8);
}

TEST_F(KorthikantiTable2, FullRecomputeKeepsOnlyTheLayerInput) {
  // 2 s b h, split by t under sequence parallelism.
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 8, false, Recompute::kFull).count(), 2 * kSbh);
  EXPECT_EQ(ActivationBytesPerLayer(t_, 4, 2048, 8, true, Recompute::kFull).count(), 2 * kSbh / 8);
}

TEST(MegatronFlops, RecomputeAddsOneForwardPass) {
  const TransformerSpec& t = Model("gpt3-175b").transformer;
  const double none = ModelFlopsPerIteration(t, 1536, Recompute::kNone).count();
  const double full = ModelFlopsPerIteration(t, 1536, Recompute::kFull).count();
  // Full recompute adds one forward pass of the layers, 24 B s l h^2 (1 + s/6h), and
  // nothing for the logit layer, which is never recomputed (Narayanan et al. 2021, eq. 3).
  const double B = 1536, s = 2048, l = 96, h = 12288;
  EXPECT_DOUBLE_EQ(full - none, 24.0 * B * s * l * h * h * (1.0 + s / (6.0 * h)));
  // With recompute it is eq. 3 as printed: 96 B s l h^2 (1 + s/6h + V/16lh), V = 51200.
  const double V = 51200;
  EXPECT_NEAR(full / (96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h))), 1.0,
              1e-12);
  // Without recompute the leading term 72 B s l h^2 is 6 x (12 l h^2) per token: the familiar
  // 6 Ψ FLOPs per token, so F / (B s) is within a few percent of 6 x 174.6e9.
  const double per_token = none / (1536.0 * 2048.0);
  EXPECT_NEAR(per_token / (6 * 174.6e9), 1.0, 0.05);
  // Selective recompute adds the attention core's forward: 4 B s^2 h l.
  const double selective = ModelFlopsPerIteration(t, 1536, Recompute::kSelective).count();
  EXPECT_DOUBLE_EQ(selective - none, 4.0 * 1536 * 2048.0 * 2048.0 * 12288 * 96);
}

TEST(MegatronFlops, LayerProductsComeFromTheModelsShapes) {
  // GPT shapes (kd = h, f = 4h, plain MLP) give eq. 3's 8h^2 + 16h^2 per token exactly.
  const TransformerSpec& gpt = Model("gpt3-175b").transformer;
  const double h = 12288;
  EXPECT_DOUBLE_EQ(LayerGemmFlopsPerToken(gpt).attention, 8 * h * h);
  EXPECT_DOUBLE_EQ(LayerGemmFlopsPerToken(gpt).mlp, 16 * h * h);
  // Llama 3 70B (Meta's model card: h = 8192, 64 heads, 8 KV heads, f = 28672, SwiGLU):
  // QKV 2 h (h + 2 x 1024) and output 2 h^2; the gated MLP 2 x 3 h f = 21 h^2, so the layer
  // has 25.5 h^2 against eq. 3's 24 h^2.
  const TransformerSpec& llama = Model("llama3-70b").transformer;
  const double H = 8192;
  EXPECT_DOUBLE_EQ(LayerGemmFlopsPerToken(llama).attention, 2 * H * (H + 2048) + 2 * H * H);
  EXPECT_DOUBLE_EQ(LayerGemmFlopsPerToken(llama).mlp, 6 * H * 28672);
  const LayerGemmFlops g = LayerGemmFlopsPerToken(llama);
  EXPECT_DOUBLE_EQ((g.attention + g.mlp) / (H * H), 25.5);
}

}  // namespace
}  // namespace placesim::strategies
