// Built-in models and named strategies. Every model carries the paper or model card its
// shape comes from; every strategy the paper or documentation whose placement it encodes.
//
// Strategy placements on the dp axis, (Θ, Ω, G, A) in placement semantics:
//   ddp            (R, R, R, R)                  PyTorch DDP
//   zero1          (R, S, R, R)                  ZeRO stage 1
//   zero2          (R, S, S, R)                  ZeRO stage 2
//   zero3          (S*, S, S, R)                 ZeRO stage 3
//   fsdp           (S*, S, S, R), one layer per wrap unit
//   fsdp-hybrid    fsdp sharded inside a node, replicated across nodes
//   zero-offload   (R, O host, O host, R)        ZeRO-Offload (ZeRO-2 + CPU Adam)
//   zero-infinity  (O nvme, O nvme, O host, R)   ZeRO-Infinity, NVMe tier
//   zero-infinity-host (O host, O host, O host, R)  ZeRO-Infinity, CPU tier
//   megatron       (R, R, R, R) on dp, Megatron placements on tp/pp/cp/ep
// Thread-safety: the catalogues are function-local constants, built once (thread-safe
// static initialization) and never modified.
#include "strategies/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "base/errors.h"
#include "base/suggest.h"

namespace placesim::strategies {
namespace {

using topology::Axis;

ModelSpec Gpt(std::string name, int64_t layers, int64_t hidden, int64_t heads,
              std::string description, std::string source) {
  ModelSpec m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.source = std::move(source);
  TransformerSpec& t = m.transformer;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = heads;
  t.kv_heads = heads;
  t.ffn_hidden = 4 * hidden;
  t.vocab = 51200;
  t.seq_len = 2048;
  t.tied_embeddings = true;
  t.learned_position_embeddings = true;
  t.biases = true;
  return m;
}

ModelSpec Llama(std::string name, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                int64_t ffn, int64_t vocab, int64_t seq_len, std::string description,
                std::string source) {
  ModelSpec m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.source = std::move(source);
  TransformerSpec& t = m.transformer;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = heads;
  t.kv_heads = kv_heads;
  t.ffn_hidden = ffn;
  t.vocab = vocab;
  t.seq_len = seq_len;
  t.gated_mlp = true;
  return m;
}

std::vector<ModelSpec> BuildModels() {
  std::vector<ModelSpec> models;
  models.push_back(Gpt("gpt3-175b", 96, 12288, 96,
                       "GPT-3 175B: 96 layers, hidden 12288, 96 heads, seq 2048 (174.6B "
                       "parameters by Megatron-LM eq. 2)",
                       "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1; "
                       "vocabulary 51200 as padded in Megatron-LM (Narayanan et al. 2021, "
                       "Table 1) rather than GPT-3's 50257"));
  models.push_back(Gpt("megatron-gpt-22b", 48, 6144, 64,
                       "Megatron GPT 22B: 48 layers, hidden 6144, 64 heads, seq 2048",
                       "Korthikanti et al. 2022, Reducing Activation Recomputation in Large "
                       "Transformer Models (arXiv 2205.05198), Table 3"));
  models.push_back(Gpt("megatron-145b", 80, 12288, 96,
                       "Megatron GPT 145.6B: 80 layers, hidden 12288, 96 heads, seq 2048",
                       "Narayanan et al. 2021, Efficient Large-Scale Language Model Training "
                       "on GPU Clusters Using Megatron-LM, Table 1"));
  models.push_back(Gpt("megatron-310b", 96, 16384, 128,
                       "Megatron GPT 310.1B: 96 layers, hidden 16384, 128 heads, seq 2048",
                       "Narayanan et al. 2021, Table 1"));
  models.push_back(Gpt("megatron-530b", 105, 20480, 128,
                       "Megatron GPT 529.6B: 105 layers, hidden 20480, 128 heads, seq 2048",
                       "Narayanan et al. 2021, Table 1; Korthikanti et al. 2022, Table 3"));
  models.push_back(Gpt("megatron-1t", 128, 25600, 160,
                       "Megatron GPT 1T (1008B): 128 layers, hidden 25600, 160 heads, seq 2048",
                       "Narayanan et al. 2021, Table 1; Korthikanti et al. 2022, Table 3"));
  models.push_back(Llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096,
                         "Llama 2 7B: 32 layers, hidden 4096, 32 heads, SwiGLU 11008, "
                         "vocab 32000, seq 4096",
                         "Touvron et al. 2023, Llama 2 (arXiv 2307.09288), Table 1; "
                         "meta-llama/Llama-2-7b-hf config.json"));
  models.push_back(Llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096,
                         "Llama 2 70B: 80 layers, hidden 8192, 64 heads / 8 kv heads (GQA), "
                         "SwiGLU 28672, vocab 32000, seq 4096",
                         "Touvron et al. 2023, Llama 2, Table 1; meta-llama/Llama-2-70b-hf "
                         "config.json"));
  models.push_back(Llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192,
                         "Llama 3 8B: 32 layers, hidden 4096, 32 heads / 8 kv heads, SwiGLU "
                         "14336, vocab 128256, seq 8192",
                         "Llama Team 2024, The Llama 3 Herd of Models (arXiv 2407.21783), "
                         "Table 3; meta-llama/Meta-Llama-3-8B config.json"));
  models.push_back(Llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192,
                         "Llama 3 70B: 80 layers, hidden 8192, 64 heads / 8 kv heads, SwiGLU "
                         "28672, vocab 128256, seq 8192",
                         "Llama Team 2024, The Llama 3 Herd of Models, Table 3; "
                         "meta-llama/Meta-Llama-3-70B config.json"));
  models.push_back(Llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192,
                         "Llama 3.1 405B: 126 layers, hidden 16384, 128 heads / 8 kv heads, "
                         "SwiGLU 53248, vocab 128256, seq 8192",
                         "Llama Team 2024, The Llama 3 Herd of Models, Table 3"));
  ModelSpec mixtral = Llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096,
                            "Mixtral 8x7B: 32 layers, hidden 4096, 32 heads / 8 kv heads, 8 "
                            "SwiGLU experts of 14336, top-2 routing, vocab 32000; seq 4096 "
                            "(the model supports 32768)",
                            "Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088), Table 1; "
                            "mistralai/Mixtral-8x7B-v0.1 config.json");
  mixtral.transformer.experts = 8;
  mixtral.transformer.top_k = 2;
  mixtral.transformer.capacity_factor = 1.0;
  models.push_back(std::move(mixtral));
  ModelSpec zero;
  zero.name = "zero-7.5b";
  zero.description = "the ZeRO paper's 7.5B-parameter model, as a bare parameter count Ψ";
  zero.source =
      "Rajbhandari et al. 2020, ZeRO: Memory Optimizations Toward Training Trillion Parameter "
      "Models, Figure 1 and Section 1";
  zero.parameter_count = 7'500'000'000;
  models.push_back(std::move(zero));
  return models;
}

std::vector<StrategyPresetInfo> BuildStrategies() {
  return {
      {"ddp", "data parallel: every state replicated on dp, grads all-reduced (R, R, R, R)",
       "Li et al. 2020, PyTorch Distributed: Experiences on Accelerating Data Parallel "
       "Training (VLDB)"},
      {"zero1", "ZeRO stage 1: optimizer state sharded on dp (R, S, R, R)",
       "Rajbhandari et al. 2020, ZeRO, Section 5.1 (P_os)"},
      {"zero2", "ZeRO stage 2: optimizer state and grads sharded on dp (R, S, S, R)",
       "Rajbhandari et al. 2020, ZeRO, Section 5.2 (P_os+g)"},
      {"zero3", "ZeRO stage 3: params gathered per layer, everything sharded on dp (S*, S, S, R)",
       "Rajbhandari et al. 2020, ZeRO, Section 5.3 (P_os+g+p)"},
      {"fsdp", "PyTorch FSDP FULL_SHARD, one transformer layer per wrap unit (S*, S, S, R)",
       "Zhao et al. 2023, PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel "
       "(VLDB)"},
      {"fsdp-hybrid",
       "PyTorch FSDP HYBRID_SHARD: FULL_SHARD inside a node, replicated across nodes",
       "Zhao et al. 2023, PyTorch FSDP, Section 3.2.2 (hybrid sharding)"},
      {"zero-offload",
       "ZeRO-Offload: ZeRO-2 with grads and optimizer (and its step) on the host (R, O, O, R)",
       "Ren et al. 2021, ZeRO-Offload: Democratizing Billion-Scale Model Training (USENIX ATC)"},
      {"zero-infinity",
       "ZeRO-Infinity: params and optimizer on NVMe, grads on the host (O, O, O, R)",
       "Rajbhandari et al. 2021, ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme "
       "Scale Deep Learning (SC21)"},
      {"zero-infinity-host",
       "ZeRO-Infinity with the CPU tier: params, optimizer and grads on the host (O, O, O, R)",
       "Rajbhandari et al. 2021, ZeRO-Infinity (SC21)"},
      {"megatron",
       "Megatron-LM: DDP over dp, tensor/pipeline/context/expert parallel on the other axes",
       "Shoeybi et al. 2019 (Megatron-LM); Narayanan et al. 2021 (PTD-P); Korthikanti et al. "
       "2022 (sequence parallelism)"},
  };
}

Placement P(Mode mode, OffloadTarget target = OffloadTarget::kNone) {
  return Placement{mode, target};
}

void SetAxis(StrategySpec& s, Axis axis, Placement theta, Placement omega, Placement grad,
             Placement act) {
  s.at(axis, State::kParams) = theta;
  s.at(axis, State::kOptimizer) = omega;
  s.at(axis, State::kGrads) = grad;
  s.at(axis, State::kActivations) = act;
}

}  // namespace

const std::vector<ModelSpec>& ModelPresets() {
  static const std::vector<ModelSpec>* const models = new std::vector<ModelSpec>(BuildModels());
  return *models;
}

const ModelSpec* FindModelPreset(std::string_view name) {
  // The exact name, else its one case variant (`Llama3-70B`).
  std::optional<std::string> variant = UniqueCaseInsensitiveMatch(name, ModelPresetNames());
  for (const ModelSpec& m : ModelPresets()) {
    if (m.name == name) return &m;
  }
  for (const ModelSpec& m : ModelPresets()) {
    if (variant && m.name == *variant) return &m;
  }
  return nullptr;
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const ModelSpec& m : ModelPresets()) names.push_back(m.name);
  return names;
}

const std::vector<StrategyPresetInfo>& StrategyPresets() {
  static const std::vector<StrategyPresetInfo>* const strategies =
      new std::vector<StrategyPresetInfo>(BuildStrategies());
  return *strategies;
}

std::vector<std::string> StrategyPresetNames() {
  std::vector<std::string> names;
  for (const StrategyPresetInfo& s : StrategyPresets()) names.push_back(s.name);
  return names;
}

StatusOr<StrategySpec> ExpandStrategyPreset(std::string_view name,
                                            const topology::MeshShape& mesh) {
  return ExpandStrategyPreset(name, mesh, 8);
}

StatusOr<StrategySpec> ExpandStrategyPreset(std::string_view name, const topology::MeshShape& mesh,
                                            int gpus_per_node) {
  const StrategyPresetInfo* info = nullptr;
  // The exact name, else its one case variant (`FSDP`).
  std::optional<std::string> variant = UniqueCaseInsensitiveMatch(name, StrategyPresetNames());
  for (const StrategyPresetInfo& s : StrategyPresets()) {
    if (s.name == name || (info == nullptr && variant && s.name == *variant)) info = &s;
  }
  if (info == nullptr) {
    return NotFoundError(fmt::format("unknown strategy \"{}\"; valid: {}{}", name,
                                     JoinNames(StrategyPresetNames()),
                                     DidYouMean(name, StrategyPresetNames())));
  }
  name = info->name;  // the canonical spelling from here on: `FSDP` expands as `fsdp`
  StrategySpec s;
  s.name = info->name;
  s.description = info->description;
  s.source = info->source;
  s.mesh = mesh;
  s.layers_per_unit = 1;

  const Placement r = P(Mode::kReplicated);
  const Placement sh = P(Mode::kSharded);
  const Placement sg = P(Mode::kShardedGather);
  const Placement host = P(Mode::kOffloaded, OffloadTarget::kHost);
  const Placement nvme = P(Mode::kOffloaded, OffloadTarget::kNvme);
  Placement dp[kNumStates] = {r, r, r, r};
  if (name == "zero1") {
    dp[1] = sh;
  } else if (name == "zero2") {
    dp[1] = dp[2] = sh;
  } else if (name == "zero3" || name == "fsdp" || name == "fsdp-hybrid") {
    dp[0] = sg;
    dp[1] = dp[2] = sh;
  } else if (name == "zero-offload") {
    dp[1] = dp[2] = host;
  } else if (name == "zero-infinity") {
    dp[0] = dp[1] = nvme;
    dp[2] = host;
  } else if (name == "zero-infinity-host") {
    dp[0] = dp[1] = dp[2] = host;
  }
  SetAxis(s, Axis::kData, dp[0], dp[1], dp[2], dp[3]);
  if (mesh.cp > 1) SetAxis(s, Axis::kContext, dp[0], dp[1], dp[2], sh);
  if (mesh.tp > 1) SetAxis(s, Axis::kTensor, sh, sh, sh, r);
  if (mesh.pp > 1) SetAxis(s, Axis::kPipeline, sh, sh, sh, sh);
  if (mesh.ep > 1) SetAxis(s, Axis::kExpert, sh, sh, sh, r);

  if (name == "fsdp-hybrid") {
    // dp ranks on one node under the default rank order (tp, cp, pp inside dp).
    const int64_t inner = int64_t{mesh.tp} * mesh.cp * mesh.pp;
    const int64_t per_node = std::max<int64_t>(1, std::max(1, gpus_per_node) / inner);
    s.shard_group_size =
        static_cast<int>(std::gcd<int64_t>(std::min<int64_t>(per_node, mesh.dp), mesh.dp));
  }
  return s;
}

}  // namespace placesim::strategies
