// The transformer maths behind the analytic plan: parameter counts, bytes per parameter of
// each model state, activation bytes per layer and FLOPs per iteration.
//
// Parameter count. Megatron-LM (Narayanan et al. 2021, "Efficient Large-Scale Language Model
// Training on GPU Clusters Using Megatron-LM", Section 5.1, eq. 2) gives, for a GPT with l
// layers, hidden size h, vocabulary V and sequence length s,
//     P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) = 12 l h^2 + 13 l h + (V + s) h.
// CountParameters generalizes it. Per layer, with d = h / a the head size and k kv heads:
//     attention  2 h^2 + 2 h (k d)                (Q and output h x h; K and V h x kd)
//     MLP        2 h f  (3 h f when gated)         (f = ffn_hidden; x experts for MoE)
//     router     h E                               (MoE only)
//     biases     h + 2kd (QKV) + h (out) + f (x2 gated) + h (MLP), per expert for the MLP
//     norms      2 x 2h (LayerNorm with biases) or 2 x h (RMSNorm without)
// and for the whole model: word embedding V h, learned positions s h, an untied output
// projection V h, a final norm (2h or h). For the GPT shape (k = a, f = 4h, biases, learned
// positions, tied) this is exactly eq. 2 plus the final LayerNorm's 2h.
//
// Activations. Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", arXiv 2205.05198), Section 4 and Table 2, bytes per layer:
//     no parallelism               s b h (34 + 5 a s / h)
//     tensor parallel              s b h (10 + 24/t + 5 a s / (h t))
//     tensor + sequence parallel   s b h (34/t + 5 a s / (h t))
//     tensor parallel + selective  s b h (10 + 24/t)
//     tensor + sequence + selective s b h (34/t)
//     full recompute               2 s b h (2 s b h / t with sequence parallelism)
// The 10 s b h that tensor parallelism alone cannot split are the two LayerNorm inputs (4),
// the inputs of the QKV and first MLP projections (2 + 2) and the two dropout masks (1 + 1);
// the 24 s b h it splits are Q, K (4), V (2), the output-projection input (2) and the MLP's
// GeLU input and output (8 + 8); 5 a s^2 b are the attention scores, softmax and dropout.
// Generalized here: K and V shrink to k d columns each under grouped-query attention, the
// MLP term is 2f + 2f (3 x 2f when gated), and under MoE the MLP term is multiplied by
// top_k x capacity_factor (each token visits top_k experts). Dropout masks are kept even for
// models trained without dropout (a small over-estimate, 2 s b h per layer).
// These are the bytes a layer keeps until its backward. Under recompute the layer whose
// backward runs also holds what was rebuilt for it: the no-recompute figure less the kept one
// (the kept layer input is the first LayerNorm's input, so it is not rebuilt); Analyze adds
// that working set to the peak.
//
// FLOPs. Narayanan et al. 2021, eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per
// iteration with full recompute (forward, backward = 2 forwards, recomputed forward). Its
// last term is the logit layer, 6 B s h V, which is never recomputed; so without recompute
// F = 72 B s l h^2 (1 + s/(6h)) + 6 B s h V. Selective recompute (Korthikanti Section 5)
// re-runs only the attention core, adding its forward FLOPs 4 B s^2 h per layer.
// Eq. 3's 24 h^2 per token and layer are its GPT shapes' matrix products, 2 FLOPs per
// multiply-add: QKV 6h^2, output projection 2h^2, MLP 2 x 2 h (4h). They are taken here from
// the model's own shapes (LayerGemmFlopsPerToken): QKV 2h (h + 2kd) under grouped-query
// attention (k KV heads of d = h/a), and an MLP of 2 x 2hf, or 2 x 3hf when gated (SwiGLU).
// GPT shapes give eq. 3 exactly; Llama 3 70B (kd = h/8, f = 3.5h, gated) has 25.5 h^2, 6%
// more than eq. 3's 24 h^2. The attention core, 4 s h per token, does not depend on k.
// Mixture of experts (experts > 1): the MLP term (16 s h^2 per sequence for GPT shapes)
// counted once per expert a token is dispatched to, top_k x capacity_factor
// (Shazeer et al. 2017: each token runs its top-k experts; Fedus et al. 2022, Switch
// Transformers, Section 2.2: expert capacity = capacity_factor x tokens x top_k / experts,
// the padded slots computed too, so the experts of a group run top_k x capacity_factor MLPs
// per token); plus the router, 2 h E per token. So a layer's forward adds
// (top_k x cf - 1) M + 2 s h E per sequence (M the MLP term), in every pass that runs it.
// Dropless routing (capacity_factor 0) runs top_k MLPs per token over all ranks, however
// unevenly they are spread: routing_imbalance changes which rank is slowest, not the FLOPs.
//
// Thread-safety: pure functions.
#ifndef PLACESIM_STRATEGIES_MODEL_H_
#define PLACESIM_STRATEGIES_MODEL_H_

#include <cstdint>

#include "base/units.h"
#include "strategies/spec.h"

namespace placesim::strategies {

// Bytes per parameter of each model state.
//   params:    2 (bf16/fp16 weights; fp8 training keeps bf16 weights and casts per matmul)
//   grads:     2 (bf16/fp16, as in the ZeRO paper's 2Ψ); 4 with main_grads_fp32, the fp32
//              buffer Megatron-LM and DeepSpeed's bf16 optimizer accumulate micro-batches in
//              and reduce over data parallelism (so every gradient reduction and gradient
//              copy moves 4 bytes per element too).
//   optimizer: K. Mixed precision keeps an fp32 master copy (4) beside the optimizer's own
//              state: Adam/AdamW fp32 momentum + variance (4 + 4) → K = 12 (ZeRO paper,
//              Rajbhandari et al. 2020, Section 3.1); SGD with fp32 momentum (4) → K = 8;
//              8-bit Adam (Dettmers et al. 2022) two 1-byte moments (1 + 1) → K = 6.
//              Pure bf16 drops the master copy: K = 8, 4 and 2.
struct StateBytes {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer = 0;
};
StateBytes BytesPerParameter(const TrainingSpec& training);

// Parameters by where they live: the embedding on the first pipeline stage, the output
// projection and final norm on the last, and per-layer groups with their tensor/expert
// parallel behaviour. All counts are elements.
struct ParameterBreakdown {
  int64_t layers = 0;
  int64_t embedding = 0;   // word embedding V h (+ learned positions s h)
  int64_t head = 0;        // untied output projection V h; 0 when tied
  int64_t final_norm = 0;  // 2h (LayerNorm) or h (RMSNorm)
  // Per layer.
  int64_t layer_tp_split = 0;        // attention and dense-MLP matrices and column biases
  int64_t layer_tp_replicated = 0;   // norms and the biases of row-parallel projections
  int64_t layer_experts = 0;         // all experts' MLP parameters (MoE only)
  int64_t layer_router = 0;          // router h x E (MoE only)
  int64_t layer_shared_experts = 0;  // shared experts' MLPs, tensor-parallel (MoE only)
  // Heterogeneous MoE models (first_dense_layers, moe_layer_interval): the per-layer fields
  // above describe an MoE layer; `dense_layers` of the `layers` have a dense MLP instead,
  // with these parameters. 0 for every homogeneous model.
  int64_t dense_layers = 0;
  int64_t dense_layer_tp_split = 0;
  int64_t dense_layer_tp_replicated = 0;

  int64_t per_layer() const {
    return layer_tp_split + layer_tp_replicated + layer_experts + layer_router +
           layer_shared_experts;
  }
  int64_t dense_per_layer() const { return dense_layer_tp_split + dense_layer_tp_replicated; }
  int64_t total() const {
    return (layers - dense_layers) * per_layer() + dense_layers * dense_per_layer() + embedding +
           head + final_norm;
  }
};

// REQUIRES: t.hidden, t.heads > 0 (kv_heads 0 is read as heads).
//
// Generalizations for current models (all off by default, so the counts above are unchanged):
//   head_dim d       attention  h (a d) + 2 h (k d) + (a d) h; QKV biases a d + 2 k d
//                    (`biases` or `qkv_bias`); QK norms 2 d (`qk_norm`).
//   MLA              q  h r_q + r_q (its RMSNorm) + r_q a (d_nope + d_rope), or h a (d_nope +
//                       d_rope) without a query bottleneck (r_q = 0);
//                    kv h (r_kv + d_rope) + r_kv (its RMSNorm) + r_kv a (d_nope + d_v);
//                    o  a d_v h          (DeepSeek-V2 paper Section 2.1, HF modeling_deepseek_v3)
//   MoE              experts and shared experts each 3 h f_e (2 h f_e ungated), f_e =
//                    expert_ffn_hidden; router h E.
//   dense layers     first_dense_layers / moe_layer_interval layers of an MoE model carry a dense
//                    MLP of ffn_hidden instead of the experts, shared experts and router.
ParameterBreakdown CountParameters(const TransformerSpec& t);

// Parameters one token computes with (Shazeer et al. 2017: a token runs only its top_k of the
// E routed experts): the total less (E - top_k) / E of every MoE layer's routed experts. Equal
// to CountParameters(t).total() for dense models. The "activated" count of model cards.
int64_t ActiveParameterCount(const TransformerSpec& t);

// Whether layer `i` (0-based) is an MoE layer: experts > 1, i >= first_dense_layers and
// (i + 1) % moe_layer_interval == 0 (an interval of 0 or 1 = every layer).
bool IsMoeLayer(const TransformerSpec& t, int64_t i);
// Layers of [first, first + count) whose MLP is dense although the model is MoE; 0 for a
// dense model (its every layer is described by the per-layer fields). O(count).
int64_t DenseLayersIn(const TransformerSpec& t, int64_t first, int64_t count);
// True when an MoE model mixes dense and MoE layers (first_dense_layers > 0 or an interval > 1
// that leaves a layer dense).
bool HasMixedLayers(const TransformerSpec& t);
// A dense layer of `t`: the same attention with experts = 0, so every per-layer formula here
// (activations, FLOPs, traffic) describes the dense layers of a heterogeneous MoE model.
TransformerSpec DenseLayerOf(const TransformerSpec& t);

// Per-head widths of queries/keys (d_qk) and values (d_v): head_dim, or hidden / heads, or
// under MLA d_nope + d_rope and v_head_dim.
int64_t QkHeadDim(const TransformerSpec& t);
int64_t VHeadDim(const TransformerSpec& t);
// Widths of the K and V a rank exchanges for context parallelism (all heads): k d each, or
// under MLA the up-projected a (d_nope + d_rope) and a d_v.
int64_t KeyWidth(const TransformerSpec& t);
int64_t ValueWidth(const TransformerSpec& t);
// a (d_qk + d_v) / 2: the attention core's FLOPs per token are 4 s x this (QK^T and AV,
// 2 s a d each); = h for the classic shape, so eq. 3's 4 s h.
int64_t AttentionCoreWidth(const TransformerSpec& t);

// Ψ: the architecture's count when it has one, else the bare parameter_count.
int64_t ParameterCount(const ModelSpec& model);

// Narayanan et al. 2021 eq. 2, exactly: 12 l h^2 + 13 l h + (V + s) h.
int64_t MegatronParameterCount(int64_t layers, int64_t hidden, int64_t vocab, int64_t seq_len);

// Korthikanti et al. 2022 Table 2 (generalized as described above): activation bytes one
// transformer layer keeps for one micro-batch of `micro_batch` sequences of `seq_len` tokens
// (pass s / cp under context parallelism) with tensor-parallel size `tp`. With flash attention
// the scores, softmax and its dropout (5 a s^2 b) are never stored, as under selective
// recompute. REQUIRES: micro_batch, seq_len, tp >= 1; t.hidden, t.heads > 0.
Bytes ActivationBytesPerLayer(const TransformerSpec& t, int64_t micro_batch, int64_t seq_len,
                              int tp, bool sequence_parallel, Recompute recompute,
                              bool flash_attention = false);

// HBM traffic of the memory-bound kernels that run between one transformer layer's GEMMs in its
// forward pass, for one micro-batch of b sequences on one tp rank, bf16 (2 bytes an element).
// `s` is the rank's tokens per sequence (s / cp under context parallelism) and `s_kv` the keys
// its queries attend to (the whole sequence). A kernel y = f(x) reads x and writes y:
//   attention  LayerNorm (read 2 s b h, write 2 s b h) and the bias-dropout-residual add after
//              the projection (read 2 + 2, write 2 and a 1-byte mask: 7 s b h): 11 s b h, on
//              s / t tokens under sequence parallelism, replicated on every tp rank otherwise
//              (the redundancy Korthikanti et al. 2022 Section 4.2.2 removes).
//   scores     softmax (read and write the 2 a s s_kv b / t scores: 4) and the attention
//              dropout (read 2, write 2 and a 1-byte mask: 5): 9 a s s_kv b / t; zero with
//              flash attention, whose scores stay on chip.
//   mlp        LayerNorm and bias-dropout-residual as above (11 s b h, split like attention's),
//              and the activation function over the f-wide hidden layer: GeLU reads and
//              writes 2 s b f / t (4 s b f / t); a gated unit (SwiGLU) reads two of them and
//              writes one (6 s b f / t).
// A backward kernel reads its output's gradient and what the forward saved and writes its
// input's gradient, about 3 tensors where the forward touched 2: ElementwiseBackwardFactor.
struct LayerTraffic {
  Bytes attention;
  Bytes scores;
  Bytes mlp;
};
LayerTraffic ElementwiseTrafficPerLayer(const TransformerSpec& t, int64_t micro_batch, int64_t s,
                                        int64_t s_kv, int tp, bool sequence_parallel,
                                        bool flash_attention);
inline constexpr double kElementwiseBackwardFactor = 1.5;
// The output layer's softmax cross-entropy over fp32 logits: read 4 s b V / t, write the
// probabilities (the loss gradient) 4 s b V / t, per pass (forward, backward-input).
Bytes OutputLayerTraffic(const TransformerSpec& t, int64_t micro_batch, int64_t s, int tp);

// Narayanan et al. 2021 eq. 3 for one iteration of `global_batch` sequences of the model's
// seq_len (see above for recompute). REQUIRES: t has an architecture.
// Expert MLPs run per token, on average over the ranks: top_k x capacity_factor for an MoE
// model with capacity (padded slots run too), top_k when dropless; 1 when dense.
double MoeExpertMultiplier(const TransformerSpec& t);
// The same on the busiest rank, which paces the step: MoeExpertMultiplier, times
// routing_imbalance when dropless (with a capacity every expert runs exactly its capacity).
double MoeBusiestExpertMultiplier(const TransformerSpec& t);
// Forward FLOPs per token of one layer's matrix products (see above): attention (QKV and
// output projection) and one MLP (one expert's under MoE). REQUIRES: an architecture.
struct LayerGemmFlops {
  double attention = 0;
  double mlp = 0;
};
LayerGemmFlops LayerGemmFlopsPerToken(const TransformerSpec& t);
// Forward FLOPs per token per layer that MoE adds (see above); 0 when dense.
double MoeExtraForwardFlopsPerToken(const TransformerSpec& t);
// Eq. 3 over the model's shapes, for one iteration of `global_batch` sequences.
Flops ModelFlopsPerIteration(const TransformerSpec& t, int64_t global_batch, Recompute recompute);

// FLOPs of the element-wise optimizer update per parameter (approximate: the update is bound
// by memory traffic on every device, so this only matters for host-side steps).
double OptimizerFlopsPerElement(Optimizer o);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_MODEL_H_
