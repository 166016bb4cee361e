// ParseHfConfig: one function per model family, over a small reader that names the file and
// the JSON path of every problem. Key names and defaults follow transformers'
// configuration_{llama,mistral,mixtral,qwen2,qwen3,qwen3_moe,deepseek_v3,gpt2,gpt_neox}.py.
// Thread-safety: stateless.
#include "sim/scenario/internal/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

namespace placesim::sim::scenario_internal {
namespace {

using Json = nlohmann::json;
using strategies::ModelSpec;
using strategies::TransformerSpec;

// Larger than any real config by far; a guard against reading a wrong file whole.
constexpr int64_t kMaxConfigBytes = int64_t{16} << 20;
// Sizes past these are not a model (and would overflow the parameter arithmetic).
constexpr int64_t kMaxWidth = 100'000'000;

// Reads typed keys of the config's top-level object; the first problem is kept and every
// later read is a no-op, so a family's reader reads straight through and checks once.
class Reader {
 public:
  Reader(const Json& json, std::string_view path) : json_(json), path_(path) {}

  // A required positive integer.
  int64_t Int(const char* key) {
    const std::optional<int64_t> v = Optional(key);
    if (!v && status_.ok()) Fail(key, "required key is missing", "a positive integer");
    return v.value_or(0);
  }
  // An optional positive integer: `fallback` when absent or null.
  int64_t IntOr(const char* key, int64_t fallback) { return Optional(key).value_or(fallback); }
  // An optional count that may be 0: `fallback` when absent or null.
  int64_t CountOr(const char* key, int64_t fallback) { return Optional(key, 0).value_or(fallback); }
  bool Bool(const char* key, bool fallback) {
    if (!status_.ok() || !json_.contains(key) || json_[key].is_null()) return fallback;
    if (!json_[key].is_boolean()) {
      Fail(key, fmt::format("{} is not a boolean", json_[key].dump()), "true or false");
      return fallback;
    }
    return json_[key].get<bool>();
  }
  void Fail(std::string_view key, std::string_view problem, std::string_view allowed) {
    if (status_.ok())
      status_ = InvalidArgumentError(
          fmt::format("{}: $.{}: {}; allowed: {}", path_, key, problem, allowed));
  }
  const Json& json() const { return json_; }
  const Status& status() const { return status_; }

 private:
  std::optional<int64_t> Optional(const char* key, int64_t lo = 1) {
    if (!status_.ok() || !json_.contains(key) || json_[key].is_null()) return std::nullopt;
    const Json& v = json_[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > kMaxWidth) {
      Fail(key, fmt::format("{} is not an integer in range", v.dump()),
           fmt::format("an integer from {} to {}", lo, kMaxWidth));
      return std::nullopt;
    }
    return v.get<int64_t>();
  }

  const Json& json_;
  std::string_view path_;
  Status status_;
};

// The decoder shape every Llama-style family shares: RMSNorm, rotary positions, a SwiGLU MLP,
// bias-free projections, grouped-query attention.
TransformerSpec LlamaShape(Reader& r, int64_t default_head_dim) {
  TransformerSpec t;
  t.layers = r.Int("num_hidden_layers");
  t.hidden = r.Int("hidden_size");
  t.heads = r.Int("num_attention_heads");
  t.kv_heads = r.IntOr("num_key_value_heads", t.heads);
  t.ffn_hidden = r.Int("intermediate_size");
  t.vocab = r.Int("vocab_size");
  t.tied_embeddings = r.Bool("tie_word_embeddings", false);
  t.gated_mlp = true;
  // head_dim is written as hidden / heads when it is that; only a different value is kept.
  const int64_t head_dim = r.IntOr("head_dim", default_head_dim);
  if (t.heads > 0 && head_dim > 0 && head_dim * t.heads != t.hidden) t.head_dim = head_dim;
  // Llama's attention_bias puts biases on Q, K, V and the output projection; the output
  // projection's h per layer is not counted (under 10^-6 of a layer).
  t.qkv_bias = r.Bool("attention_bias", false);
  return t;
}

void ReadRoutedExperts(Reader& r, const char* experts_key, TransformerSpec& t) {
  t.experts = r.Int(experts_key);
  t.top_k = r.Int("num_experts_per_tok");
  if (r.status().ok() && t.top_k > t.experts)
    r.Fail("num_experts_per_tok", fmt::format("{} exceeds {} {}", t.top_k, experts_key, t.experts),
           fmt::format("1 to {}", t.experts));
  t.capacity_factor = 0;  // these models route dropless
}

TransformerSpec Llama(Reader& r) { return LlamaShape(r, 0); }

TransformerSpec Mixtral(Reader& r) {
  TransformerSpec t = LlamaShape(r, 0);
  ReadRoutedExperts(r, "num_local_experts", t);
  return t;
}

TransformerSpec Qwen2(Reader& r) {
  TransformerSpec t = LlamaShape(r, 0);
  t.qkv_bias = true;  // Qwen2Attention: q, k and v projections with bias=True, o without
  return t;
}

TransformerSpec Qwen3(Reader& r) {
  TransformerSpec t = LlamaShape(r, 128);  // Qwen3Config's head_dim default
  t.qk_norm = true;
  return t;
}

TransformerSpec Qwen3Moe(Reader& r) {
  TransformerSpec t = Qwen3(r);
  ReadRoutedExperts(r, "num_experts", t);
  t.expert_ffn_hidden = r.Int("moe_intermediate_size");
  t.moe_layer_interval = r.IntOr("decoder_sparse_step", 1);
  const Json& only = r.json().contains("mlp_only_layers") ? r.json()["mlp_only_layers"] : Json();
  if (!only.is_null() && !(only.is_array() && only.empty()))
    r.Fail("mlp_only_layers", fmt::format("{}: dense layers at listed positions", only.dump()),
           "[] or null (dense layers by first_dense_layers / decoder_sparse_step only)");
  return t;
}

TransformerSpec DeepseekV3(Reader& r) {
  TransformerSpec t = LlamaShape(r, 0);
  t.head_dim = 0;  // MLA sets its own per-head widths
  ReadRoutedExperts(r, "n_routed_experts", t);
  t.expert_ffn_hidden = r.Int("moe_intermediate_size");
  t.shared_experts = r.CountOr("n_shared_experts", 0);
  t.first_dense_layers = r.CountOr("first_k_dense_replace", 0);
  if (r.IntOr("moe_layer_freq", 1) != 1)
    r.Fail("moe_layer_freq", r.json()["moe_layer_freq"].dump(),
           "1 (every layer after first_k_dense_replace is MoE, as in DeepSeek-V3)");
  t.q_lora_rank = r.IntOr("q_lora_rank", 0);  // null: queries without a bottleneck
  t.kv_lora_rank = r.Int("kv_lora_rank");
  t.qk_rope_head_dim = r.Int("qk_rope_head_dim");
  t.qk_nope_head_dim = r.Int("qk_nope_head_dim");
  t.v_head_dim = r.Int("v_head_dim");
  t.kv_heads = t.heads;  // MLA: every head has its own keys and values
  // num_nextn_predict_layers (the multi-token-prediction module) is not part of the model
  // the published 671B counts, and is not read.
  return t;
}

// GPT-2 and GPT-NeoX: LayerNorm and biases everywhere, a GeLU MLP.
TransformerSpec Gpt2(Reader& r) {
  TransformerSpec t;
  t.layers = r.Int("n_layer");
  t.hidden = r.Int("n_embd");
  t.heads = r.Int("n_head");
  t.kv_heads = t.heads;
  t.ffn_hidden = r.IntOr("n_inner", 4 * t.hidden);
  t.vocab = r.Int("vocab_size");
  t.position_table = r.Int("n_positions");
  t.tied_embeddings = r.Bool("tie_word_embeddings", true);
  t.learned_position_embeddings = true;
  t.biases = true;
  return t;
}

TransformerSpec GptNeox(Reader& r) {
  TransformerSpec t;
  t.layers = r.Int("num_hidden_layers");
  t.hidden = r.Int("hidden_size");
  t.heads = r.Int("num_attention_heads");
  t.kv_heads = t.heads;
  t.ffn_hidden = r.Int("intermediate_size");
  t.vocab = r.Int("vocab_size");
  t.tied_embeddings = r.Bool("tie_word_embeddings", false);
  t.biases = true;
  return t;
}

using FamilyReader = std::function<TransformerSpec(Reader&)>;

const std::map<std::string, FamilyReader>& Families() {
  static const auto* families = new std::map<std::string, FamilyReader>{
      {"llama", Llama},     {"mistral", Llama},      {"mixtral", Mixtral},        {"qwen2", Qwen2},
      {"qwen3", Qwen3},     {"qwen3_moe", Qwen3Moe}, {"deepseek_v3", DeepseekV3}, {"gpt2", Gpt2},
      {"gpt_neox", GptNeox}};
  return *families;
}

}  // namespace

const std::vector<std::string>& HfModelTypes() {
  static const auto* types = [] {
    auto* v = new std::vector<std::string>;
    for (const auto& [name, reader] : Families()) v->push_back(name);
    return v;
  }();
  return *types;
}

StatusOr<ModelSpec> ParseHfConfig(std::string_view text, std::string_view path) {
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object())
    return InvalidArgumentError(
        fmt::format("{}: $: not a JSON object; allowed: a Hugging Face config.json", path));
  Reader r(json, path);
  const std::string allowed = fmt::format("{}", fmt::join(HfModelTypes(), ", "));
  if (!json.contains("model_type") || !json["model_type"].is_string()) {
    r.Fail("model_type", "required key is missing or not a string", allowed);
    return r.status();
  }
  const std::string type = json["model_type"].get<std::string>();
  const auto family = Families().find(type);
  if (family == Families().end()) {
    r.Fail("model_type", fmt::format("unknown \"{}\"", type), allowed);
    return r.status();
  }
  TransformerSpec t = family->second(r);
  if (!r.status().ok()) return r.status();
  ModelSpec model;
  model.name = type;
  std::string architecture = type;
  if (json.contains("architectures") && json["architectures"].is_array() &&
      !json["architectures"].empty() && json["architectures"][0].is_string())
    architecture = json["architectures"][0].get<std::string>();
  model.description = fmt::format("{} from a Hugging Face config", architecture);
  model.source = std::string(path);
  model.transformer = t;
  return model;
}

StatusOr<ModelSpec> ReadHfConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("{}: cannot open the Hugging Face config", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (static_cast<int64_t>(text.str().size()) > kMaxConfigBytes)
    return InvalidArgumentError(
        fmt::format("{}: larger than {} MiB; allowed: a config.json", path, kMaxConfigBytes >> 20));
  return ParseHfConfig(text.str(), path);
}

}  // namespace placesim::sim::scenario_internal
