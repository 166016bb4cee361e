// model.hf_config: the Hugging Face configs under tests/data/hf read into the model vocabulary,
// their parameter counts against the published totals (derived below, layer by layer), the
// reader's errors, and the scenario rule that fields beside hf_config override the config's.
#include "sim/scenario/internal/hf_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "sim/scenario/scenario.h"
#include "strategies/model.h"
#include "tests/sim/scenario_test_util.h"

namespace placesim::sim {
namespace {

using scenario_internal::ParseHfConfig;
using scenario_internal::ReadHfConfig;
using strategies::ActiveParameterCount;
using strategies::CountParameters;
using strategies::TransformerSpec;
using ::testing::HasSubstr;
using testing::SourcePath;

TransformerSpec ReadOrDie(const std::string& file) {
  StatusOr<strategies::ModelSpec> m = ReadHfConfig(SourcePath("tests/data/hf/" + file));
  EXPECT_TRUE(m.ok()) << file << ": " << m.status().message();
  return m.ok() ? m->transformer : TransformerSpec{};
}

// Within `rel` of a published total (model cards round to 3 significant figures).
void ExpectNear(int64_t count, double published, double rel) {
  EXPECT_NEAR(static_cast<double>(count) / published, 1.0, rel) << count << " vs " << published;
}

// DeepSeek-V3 (arXiv 2412.19437, Section 4.2; config.json): h 7168, 61 layers, 128 heads, MLA
// with r_q 1536, r_kv 512, d_rope 64, d_nope 128, d_v 128; the first 3 layers dense (ffn
// 18432), then 58 MoE layers of 256 routed experts (top 8) and 1 shared, each 2048 wide;
// V 129280, untied.
//   attention  q_a 7168·1536 = 11,010,048 + q_a norm 1,536 + q_b 1536·128·192 = 37,748,736
//              + kv_a 7168·576 = 4,128,768 + kv_a norm 512 + kv_b 512·128·256 = 16,777,216
//              + o 128·128·7168 = 117,440,512                        = 187,107,328
//   norms      2·7168 = 14,336
//   dense MLP  3·7168·18432 = 396,361,728       dense layer = 583,483,392   (x3 = 1,750,450,176)
//   expert     3·7168·2048 = 44,040,192; 256 routed = 11,274,289,152; shared 44,040,192;
//              router 7168·256 = 1,835,008      MoE layer = 11,507,286,016 (x58 = 667,422,588,928)
//   embedding and head 2·129280·7168 = 1,853,358,080; final norm 7,168
//   total 671,026,404,352: the report's 671B (which excludes the 14B MTP module, not read).
//   active: each MoE layer runs 8 of 256 routed experts, so 248·44,040,192 = 10,921,967,616
//   fewer a layer: 671,026,404,352 - 58·10,921,967,616 = 37,552,282,624, the report's 37B.
TEST(HfConfig, DeepSeekV3Is671BTotal37BActive) {
  const TransformerSpec t = ReadOrDie("deepseek-v3.json");
  EXPECT_EQ(t.first_dense_layers, 3);
  EXPECT_EQ(t.shared_experts, 1);
  EXPECT_EQ(t.kv_lora_rank, 512);
  EXPECT_EQ(t.capacity_factor, 0);
  const strategies::ParameterBreakdown p = CountParameters(t);
  EXPECT_EQ(p.dense_layers, 3);
  EXPECT_EQ(p.dense_per_layer(), 583'483'392);
  EXPECT_EQ(p.per_layer(), 11'507'286'016);
  EXPECT_EQ(p.total(), 671'026'404'352);
  EXPECT_EQ(ActiveParameterCount(t), 37'552'282'624);
  ExpectNear(p.total(), 671e9, 0.005);
  ExpectNear(ActiveParameterCount(t), 37e9, 0.02);
}

// Qwen3-235B-A22B (model card: 235B total, 22B activated; config.json): h 4096, 94 layers, 64
// heads of head_dim 128 (64 · 128 = 8192 != h), 4 kv heads, QK norms; every layer MoE, 128
// experts (top 8) of 1536; V 151936, untied.
//   attention  q 4096·8192 = 33,554,432 + k, v 2·4096·512 = 4,194,304 + o 8192·4096 =
//              33,554,432 (71,303,168) + q/k norms 2·128 = 256       = 71,303,424
//   norms 8,192; experts 128·3·4096·1536 = 2,415,919,104; router 4096·128 = 524,288
//   layer 2,487,755,008, x94 = 233,848,970,752; + 2·151936·4096 = 1,244,659,712 + 4,096
//   total 235,093,634,560. Active: 120 of 128 experts idle, 120·18,874,368 = 2,264,924,160 a
//   layer: 235,093,634,560 - 94·2,264,924,160 = 22,190,763,520.
TEST(HfConfig, Qwen3MoeIs235BTotal22BActive) {
  const TransformerSpec t = ReadOrDie("qwen3-235b-a22b.json");
  EXPECT_EQ(t.head_dim, 128);
  EXPECT_EQ(t.expert_ffn_hidden, 1536);
  const strategies::ParameterBreakdown p = CountParameters(t);
  EXPECT_EQ(p.dense_layers, 0);
  EXPECT_EQ(p.per_layer(), 2'487'755'008);
  EXPECT_EQ(p.total(), 235'093'634'560);
  EXPECT_EQ(ActiveParameterCount(t), 22'190'763'520);
  ExpectNear(p.total(), 235e9, 0.005);
  ExpectNear(ActiveParameterCount(t), 22e9, 0.01);
}

// Llama-3.1-405B: h 16384, 126 layers, 128 heads, 8 kv heads, ffn 53248, V 128256, untied.
//   attention 2·16384² + 2·16384·1024 = 570,425,344; MLP 3·16384·53248 = 2,617,245,696;
//   norms 32,768: layer 3,187,703,808, x126 = 401,650,679,808; embedding and head
//   2·128256·16384 = 4,202,692,608; final norm 16,384: 405,853,388,800 (the card's 405B).
TEST(HfConfig, Llama31Is405B) {
  const TransformerSpec t = ReadOrDie("llama-3.1-405b.json");
  EXPECT_EQ(CountParameters(t).total(), 405'853'388'800);
  ExpectNear(CountParameters(t).total(), 405e9, 0.005);
}

// Mixtral-8x7B (Jiang et al. 2024: 46.7B total, 12.9B active): h 4096, 32 layers, 32 heads,
// 8 kv heads, 8 experts of 14336 (top 2), V 32000, untied.
//   attention 2·4096² + 2·4096·1024 = 41,943,040; experts 8·3·4096·14336 = 1,409,286,144;
//   router 32,768; norms 8,192: layer 1,451,270,144, x32 = 46,440,644,608; + 2·32000·4096
//   = 262,144,000 + 4,096 = 46,702,792,704. Active: 6 idle experts, 6·176,160,768 a layer:
//   46,702,792,704 - 32·1,056,964,608 = 12,879,925,248.
TEST(HfConfig, MixtralIs46_7BTotal12_9BActive) {
  const TransformerSpec t = ReadOrDie("mixtral-8x7b.json");
  EXPECT_EQ(CountParameters(t).total(), 46'702'792'704);
  EXPECT_EQ(ActiveParameterCount(t), 12'879'925'248);
  ExpectNear(CountParameters(t).total(), 46.7e9, 0.001);
  ExpectNear(ActiveParameterCount(t), 12.9e9, 0.002);
}

// Qwen3-8B (card: 8.2B): h 4096, 36 layers, 32 heads of 128, 8 kv heads, QK norms, ffn 12288,
// V 151936, untied. attention 4096·4096 + 2·4096·1024 + 4096·4096 = 41,943,040 + norms
// 256; MLP 3·4096·12288 = 150,994,944; norms 8,192: layer 192,946,432, x36 = 6,946,071,552;
// + 2·151936·4096 = 1,244,659,712 + 4,096 = 8,190,735,360.
TEST(HfConfig, Qwen3Is8_2B) {
  const TransformerSpec t = ReadOrDie("qwen3-8b.json");
  EXPECT_TRUE(t.qk_norm);
  EXPECT_EQ(CountParameters(t).total(), 8'190'735'360);
  ExpectNear(CountParameters(t).total(), 8.2e9, 0.002);
}

// Qwen2.5-7B (card: 7.61B): h 3584, 28 layers, 28 heads, 4 kv heads, QKV biases, ffn 18944,
// V 152064, untied. attention 2·3584² + 2·3584·512 = 29,360,128 + biases 3584 + 2·512 =
// 4,608; MLP 3·3584·18944 = 203,685,888; norms 7,168: layer 233,057,792, x28 =
// 6,525,618,176; + 2·152064·3584 = 1,089,994,752 + 3,584 = 7,615,616,512.
TEST(HfConfig, Qwen25Is7_61B) {
  const TransformerSpec t = ReadOrDie("qwen2.5-7b.json");
  EXPECT_TRUE(t.qkv_bias);
  EXPECT_EQ(CountParameters(t).total(), 7'615'616'512);
}

// Mistral-7B (card: 7.24B): Mixtral's attention and one 14336-wide MLP: layer 41,943,040 +
// 176,160,768 + 8,192 = 218,112,000, x32 = 6,979,584,000; + 262,144,000 + 4,096.
TEST(HfConfig, MistralIs7_24B) {
  EXPECT_EQ(CountParameters(ReadOrDie("mistral-7b.json")).total(), 7'241'732'096);
}

// GPT-2 small, 124,439,808 parameters (its checkpoint; Narayanan eq. 2 with the 1024-row
// position table: 12·12·768² + 13·12·768 + (50257 + 1024)·768 = 124,438,272, plus the final
// LayerNorm's 1,536).
TEST(HfConfig, Gpt2Is124M) {
  EXPECT_EQ(CountParameters(ReadOrDie("gpt2.json")).total(), 124'439'808);
}

// GPT-NeoX-20B (Black et al. 2022, Table 1: 20,554,567,680): 44 layers of 12h² + 13h at h 6144
// = 453,064,704, x44 = 19,934,846,976; untied 2·50432·6144 = 619,708,416; final norm 12,288.
TEST(HfConfig, GptNeox20B) {
  EXPECT_EQ(CountParameters(ReadOrDie("gpt-neox-20b.json")).total(), 20'554'567'680);
}

TEST(HfConfig, UnknownModelTypeNamesFileKeyAndAllowed) {
  StatusOr<strategies::ModelSpec> m =
      ParseHfConfig(R"({"model_type": "bert", "hidden_size": 768})", "cfg/bert.json");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("cfg/bert.json: $.model_type: unknown \"bert\""));
  EXPECT_THAT(m.status().message(), HasSubstr("deepseek_v3"));
  EXPECT_THAT(m.status().message(), HasSubstr("qwen3_moe"));
}

TEST(HfConfig, MissingRequiredKeyIsNamed) {
  StatusOr<strategies::ModelSpec> m = ParseHfConfig(
      R"({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64, "vocab_size": 100})",
      "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("x.json: $.hidden_size: required key is missing; allowed: a positive"));
}

TEST(HfConfig, WrongTypeAndUnsupportedFeaturesAreRefused) {
  StatusOr<strategies::ModelSpec> typed = ParseHfConfig(
      R"({"model_type": "gpt2", "n_layer": "12", "n_embd": 8, "n_head": 2, "vocab_size": 9,
          "n_positions": 4})",
      "g.json");
  ASSERT_FALSE(typed.ok());
  EXPECT_THAT(typed.status().message(), HasSubstr("$.n_layer: \"12\" is not an integer"));
  StatusOr<strategies::ModelSpec> only = ParseHfConfig(
      R"({"model_type": "qwen3_moe", "num_hidden_layers": 4, "hidden_size": 64,
          "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
          "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
          "mlp_only_layers": [0]})",
      "q.json");
  ASSERT_FALSE(only.ok());
  EXPECT_THAT(only.status().message(), HasSubstr("$.mlp_only_layers"));
  StatusOr<strategies::ModelSpec> bad = ParseHfConfig("{not json", "b.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("b.json: $: not a JSON object"));
}

// The shipped examples name their config relative to themselves; fields set beside
// hf_config (here by --set) override the config's; seq_len is required beside it.
TEST(HfConfig, ScenarioFieldsOverrideTheConfig) {
  const std::string example = SourcePath("examples/qwen3-moe-235b-a22b-ep16.textproto");
  StatusOr<Scenario> s = LoadScenarioFile(example, {"model.layers=92"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->model.transformer.layers, 92);    // overridden
  EXPECT_EQ(s->model.transformer.experts, 128);  // from the config
  EXPECT_EQ(s->model.transformer.seq_len, 4096);
  EXPECT_THAT(s->model.description, HasSubstr("overridden: layers"));
  // Resolved as if it were the example file, so the relative path still resolves.
  StatusOr<Scenario> missing = LoadScenarioText(
      R"(cluster { node_preset: "DGX-H100" nodes: 1 }
         model { hf_config: "../tests/data/hf/mixtral-8x7b.json" }
         strategy { preset: "ddp" })",
      ScenarioFormat::kTextProto, {}, example);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("model.seq_len"));
  EXPECT_THAT(missing.status().message(), HasSubstr("required beside model.hf_config"));
  StatusOr<Scenario> both = LoadScenarioText(
      R"(cluster { node_preset: "DGX-H100" nodes: 1 }
         model { preset: "llama3-8b" hf_config: "../tests/data/hf/gpt2.json" seq_len: 8 }
         strategy { preset: "ddp" })",
      ScenarioFormat::kTextProto, {}, example);
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("either model.preset or model.hf_config"));
}

// The DeepSeek-V3 example: the first 3 layers dense, the other 58 MoE.
TEST(HfConfig, DeepSeekExampleLoadsWithMixedLayers) {
  StatusOr<Scenario> s =
      LoadScenarioFile(SourcePath("examples/deepseek-v3-pp16-ep64.textproto"), {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(strategies::HasMixedLayers(s->model.transformer));
  EXPECT_EQ(strategies::DenseLayersIn(s->model.transformer, 0, 3), 3);
  EXPECT_EQ(strategies::DenseLayersIn(s->model.transformer, 3, 58), 0);
}

}  // namespace
}  // namespace placesim::sim
