// Plain, typed descriptions of the workload: the model, the training setup and the parallel
// strategy written in placement semantics. The scenario loader fills these (after presets and
// overrides); the analyzer and the schedule generators read them.
//
// Placement semantics (see docs/architecture.md): four training states — parameters Θ,
// optimizer state Ω, gradients G, activations A — each placed on each mesh axis in one of
// five modes: replicated R, sharded S, sharded-with-gather S*, materialized M, offloaded O.
// Thread-safety: plain values.
#ifndef PLACESIM_STRATEGIES_SPEC_H_
#define PLACESIM_STRATEGIES_SPEC_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"
#include "topology/mesh.h"
#include "topology/spec.h"

namespace placesim::strategies {

// ----------------------------------------------------------------------------- the model
struct TransformerSpec {
  int64_t layers = 0;
  int64_t hidden = 0;      // h
  int64_t heads = 0;       // a
  int64_t kv_heads = 0;    // grouped-query attention; == heads for multi-head attention
  int64_t ffn_hidden = 0;  // MLP inner size
  int64_t vocab = 0;       // V
  int64_t seq_len = 0;     // s
  bool tied_embeddings = false;
  bool gated_mlp = false;  // SwiGLU-style MLP with three matrices instead of two
  // GPT-2/3 and Megatron-LM GPT: learned absolute position embeddings (s x h parameters);
  // false for rotary embeddings (Llama, Mixtral), which have no parameters.
  bool learned_position_embeddings = false;
  // GPT-2/3 and Megatron-LM GPT: every linear layer has a bias and the norms are LayerNorm
  // (scale and shift, 2h each); false for Llama-style bias-free layers with RMSNorm (h each).
  bool biases = false;
  // Mixture of experts (experts <= 1 means a dense model).
  int64_t experts = 0;
  int64_t top_k = 0;
  // Expert capacity = capacity_factor x tokens x top_k / experts (Fedus et al. 2022): each
  // expert computes its padded capacity, and tokens past it are dropped. 0 = dropless
  // routing (MegaBlocks, Megatron-LM's dropless MoE): every token runs, and each expert
  // computes what it is sent.
  double capacity_factor = 1.0;
  // Dropless routing only: the busiest expert's tokens over the mean (>= 1; 1 = balanced).
  // Dispatch, expert compute and combine wait for the busiest rank of an ep group, so the
  // step is paced by it: its compute, all-to-all bytes and dispatch buffers scale by this.
  double routing_imbalance = 1.0;

  // ---- shapes of current models (Hugging Face configs); 0 / false keeps the shapes above.
  // Per-head width of queries, keys and values; 0 = hidden / heads. Qwen3 and Mistral-Nemo
  // have heads x head_dim != hidden (the projections are h x a d and a d x h).
  int64_t head_dim = 0;
  // Biases on the Q, K and V projections only (Qwen2); `biases` puts them everywhere.
  bool qkv_bias = false;
  // RMSNorm over each head's queries and keys (Qwen3): 2 head_dim parameters a layer.
  bool qk_norm = false;
  // Expert MLP inner size (moe_intermediate_size); 0 = ffn_hidden. ffn_hidden stays the
  // width of the dense layers of an MoE model.
  int64_t expert_ffn_hidden = 0;
  // Experts every token runs besides its top_k routed ones (DeepSeek's shared experts), each
  // expert_ffn_hidden wide; they are tensor-parallel like a dense MLP, not expert-parallel.
  int64_t shared_experts = 0;
  // Heterogeneous MoE models: the first `first_dense_layers` layers have a dense MLP
  // (DeepSeek's first_k_dense_replace); after them, layer i (0-based) is an MoE layer when
  // (i + 1) % moe_layer_interval == 0 (Qwen's decoder_sparse_step; 0 or 1 = every layer).
  int64_t first_dense_layers = 0;
  int64_t moe_layer_interval = 0;
  // Multi-head latent attention (DeepSeek-V2/V3) when kv_lora_rank > 0: queries through a
  // q_lora_rank bottleneck (0 = a direct h x a (nope + rope) projection), keys and values
  // through a kv_lora_rank latent plus one shared rope key of qk_rope_head_dim; per head,
  // queries and keys are qk_nope_head_dim + qk_rope_head_dim wide, values v_head_dim.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;
  // Rows of the learned position table (GPT-2's n_positions); 0 = seq_len.
  int64_t position_table = 0;
};

struct ModelSpec {
  std::string name;  // preset name or "custom"
  std::string description;
  std::string source;
  // Either a transformer by its architecture, or a bare parameter count (Ψ) for model-state
  // accounting alone — the ZeRO paper's tables speak of Ψ only. When parameter_count > 0
  // and the transformer has no layers, only model states are accounted (no activations).
  TransformerSpec transformer;
  int64_t parameter_count = 0;

  bool has_architecture() const { return transformer.layers > 0; }
};

// ------------------------------------------------------------------------- training setup
enum class Precision {
  kBf16Mixed,  // bf16 compute, fp32 master weights (2 + 2 + 12 bytes/param with Adam)
  kFp16Mixed,  // fp16 compute with loss scaling, fp32 master weights
  kBf16,       // pure bf16: no fp32 master copy
  kFp8Mixed,   // fp8 matmuls, bf16 weights/grads, fp32 master weights
};
const char* PrecisionName(Precision p);

enum class Optimizer {
  kAdam,         // fp32 momentum + variance (+ fp32 master under mixed precision): K = 12
  kAdamW,        // same memory as Adam
  kSgdMomentum,  // fp32 momentum (+ master): K = 8
  kAdam8bit,     // 8-bit moments (+ master): K = 6
};
const char* OptimizerName(Optimizer o);

enum class Recompute { kNone, kSelective, kFull };
const char* RecomputeName(Recompute r);

enum class PipelineSchedule { kGpipe, k1F1B, kInterleaved1F1B };
const char* PipelineScheduleName(PipelineSchedule s);

// How context parallelism brings every rank the keys and values of the other sequence
// chunks: passed around a ring, overlapping the attention of the chunks already held (ring
// attention; Megatron-LM, Transformer Engine's "p2p"), or all-gathered before the attention
// and the K/V gradients reduce-scattered after its backward (Llama 3's context parallelism,
// Transformer Engine's "all_gather"). Both move (cp - 1) / cp of the full K/V per pass.
enum class ContextParallelComm { kRing, kAllGather };
const char* ContextParallelCommName(ContextParallelComm c);  // "ring", "all-gather"

struct TrainingSpec {
  Precision precision = Precision::kBf16Mixed;
  Optimizer optimizer = Optimizer::kAdam;
  int64_t micro_batch = 1;   // sequences per micro-batch per data-parallel rank
  int64_t global_batch = 1;  // sequences per optimizer step, whole job
  // Micro-batches per step per data-parallel rank: global_batch / (micro_batch * dp).
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;  // Megatron sequence parallelism on the tp axis
  PipelineSchedule pipeline_schedule = PipelineSchedule::k1F1B;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved 1F1B)
  // Fused attention (FlashAttention): the attention scores are never stored, so neither their
  // 5 a s^2 b activation bytes nor the softmax / dropout traffic over them exist.
  bool flash_attention = false;
  // Which fused attention kernel runs when flash_attention is on (cuDNN, FlashAttention-2);
  // kDeviceDefault = the device profile's default (topology::KernelProfile), today's behaviour.
  topology::AttentionKernel attention_kernel = topology::AttentionKernel::kDeviceDefault;
  ContextParallelComm context_parallel_comm = ContextParallelComm::kRing;
  // fp32 main gradients: accumulated and data-parallel reduced in fp32 (4 bytes per
  // parameter, Megatron-LM's main_grad buffer). Only with a mixed precision.
  bool main_grads_fp32 = false;
  // Full recompute's kept layer inputs split over tp and all-gathered before each recompute
  // (Megatron-LM's --distribute-saved-activations); DistributesSavedActivations says when it
  // applies.
  bool distribute_saved_activations = false;
};

// Whether full recompute's kept layer inputs are split over tp (1/tp each) and all-gathered
// before each layer's recompute: distribute_saved_activations under full recompute, tp > 1,
// and no sequence parallelism (`sequence_parallel` effective), which splits them already.
inline bool DistributesSavedActivations(const TrainingSpec& t, int64_t tp, bool sequence_parallel,
                                        Recompute recompute) {
  return t.distribute_saved_activations && recompute == Recompute::kFull && tp > 1 &&
         !sequence_parallel;
}

// Whether a layer's kept input is split over tp: by sequence parallelism, or by distributing
// the saved activations under full recompute (ActivationBytesPerLayer's split argument).
inline bool SplitsKeptInput(const TrainingSpec& t, int64_t tp, bool sequence_parallel,
                            Recompute recompute) {
  return sequence_parallel || DistributesSavedActivations(t, tp, sequence_parallel, recompute);
}

// -------------------------------------------------------------------------- placement
enum class State : uint8_t { kParams = 0, kOptimizer = 1, kGrads = 2, kActivations = 3 };
inline constexpr int kNumStates = 4;
const char* StateName(State s);    // "params", "optimizer", "grads", "activations"
const char* StateSymbol(State s);  // "Θ", "Ω", "G", "A"

enum class Mode { kReplicated, kSharded, kShardedGather, kMaterialized, kOffloaded };
const char* ModeName(Mode m);    // "replicated", ...
const char* ModeSymbol(Mode m);  // "R", "S", "S*", "M", "O"

enum class OffloadTarget { kNone, kHost, kNvme };
const char* OffloadTargetName(OffloadTarget t);

struct Placement {
  Mode mode = Mode::kReplicated;
  OffloadTarget target = OffloadTarget::kNone;  // only with kOffloaded
  friend bool operator==(const Placement&, const Placement&) = default;
};

// A strategy: the mesh, and the placement of every state on every axis.
struct StrategySpec {
  std::string name;  // preset name, or "custom"
  std::string description;
  std::string source;
  topology::MeshShape mesh;
  topology::RankOrder rank_order;
  // placement[axis][state]
  std::array<std::array<Placement, kNumStates>, topology::kNumAxes> placement{};
  // FSDP wrap units / ZeRO-3 gather granularity, in transformer layers per unit.
  int64_t layers_per_unit = 1;
  // Hybrid sharding (FSDP HYBRID_SHARD): shard inside groups of this many dp ranks and
  // replicate across them; 0 = shard over the whole dp axis.
  int shard_group_size = 0;
  // Transformer layers per pipeline stage (pp entries summing to the model's layers); empty =
  // an even split.
  std::vector<int> pipeline_stage_layers;

  const Placement& at(topology::Axis axis, State s) const {
    return placement[static_cast<int>(axis)][static_cast<int>(s)];
  }
  Placement& at(topology::Axis axis, State s) {
    return placement[static_cast<int>(axis)][static_cast<int>(s)];
  }
};

// Where `s` lives when some axis places it O: the target of the first such axis (a plan
// finding reports axes that disagree), else kNone. Every axis counts, whatever its size: O on
// an axis of size 1 (one GPU, or dp 1 with tp > 1) still keeps the state off the device.
// O(axes).
OffloadTarget OffloadTargetOf(const StrategySpec& strategy, State s);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_SPEC_H_
