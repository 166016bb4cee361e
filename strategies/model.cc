// Transformer parameter, activation and FLOP formulas; the maths and sources are in model.h.
// Thread-safety: pure functions.
#include "strategies/model.h"

#include <algorithm>
#include <cmath>

#include "strategies/cost/arith.h"

namespace placesim::strategies {
namespace {

using cost::CeilDiv;

int64_t KvHeads(const TransformerSpec& t) { return t.kv_heads > 0 ? t.kv_heads : t.heads; }
bool IsMoe(const TransformerSpec& t) { return t.experts > 1; }
bool IsMla(const TransformerSpec& t) { return t.kv_lora_rank > 0; }
int64_t DenseFfn(const TransformerSpec& t) {
  return t.ffn_hidden > 0 ? t.ffn_hidden : 4 * t.hidden;
}
// The MLP width of a layer of `t`: one expert's under MoE, the dense MLP's otherwise.
int64_t MlpWidth(const TransformerSpec& t) {
  return IsMoe(t) && t.expert_ffn_hidden > 0 ? t.expert_ffn_hidden : DenseFfn(t);
}
// Per-head width of Q / K / V without MLA.
int64_t HeadDim(const TransformerSpec& t) {
  return t.head_dim > 0 ? t.head_dim : t.hidden / t.heads;
}

struct AttentionParameters {
  int64_t matrices = 0;     // the projections' weights
  int64_t split_extra = 0;  // tp-split column biases and per-head norms
  int64_t replicated = 0;   // biases of the row-parallel output projection, latent norms
};

AttentionParameters CountAttention(const TransformerSpec& t) {
  const int64_t h = t.hidden;
  const int64_t a = t.heads;
  AttentionParameters out;
  if (IsMla(t)) {
    const int64_t qk = t.qk_nope_head_dim + t.qk_rope_head_dim;
    const int64_t q = t.q_lora_rank > 0 ? h * t.q_lora_rank + t.q_lora_rank * a * qk : h * a * qk;
    const int64_t kv = h * (t.kv_lora_rank + t.qk_rope_head_dim) +
                       t.kv_lora_rank * a * (t.qk_nope_head_dim + t.v_head_dim);
    out.matrices = q + kv + a * t.v_head_dim * h;
    out.replicated = t.q_lora_rank + t.kv_lora_rank;  // the latents' RMSNorms
    return out;
  }
  const int64_t q_width = a * HeadDim(t);
  const int64_t kv_width = KvHeads(t) * HeadDim(t);
  out.matrices = 2 * h * q_width + 2 * h * kv_width;
  if (t.biases || t.qkv_bias) out.split_extra += q_width + 2 * kv_width;
  if (t.qk_norm) out.replicated += 2 * HeadDim(t);
  if (t.biases) out.replicated += h;  // the output projection's
  return out;
}

}  // namespace

int64_t QkHeadDim(const TransformerSpec& t) {
  return IsMla(t) ? t.qk_nope_head_dim + t.qk_rope_head_dim : HeadDim(t);
}
int64_t VHeadDim(const TransformerSpec& t) { return IsMla(t) ? t.v_head_dim : HeadDim(t); }
int64_t KeyWidth(const TransformerSpec& t) {
  return (IsMla(t) ? t.heads : KvHeads(t)) * QkHeadDim(t);
}
int64_t ValueWidth(const TransformerSpec& t) {
  return (IsMla(t) ? t.heads : KvHeads(t)) * VHeadDim(t);
}
int64_t AttentionCoreWidth(const TransformerSpec& t) {
  return t.heads * (QkHeadDim(t) + VHeadDim(t)) / 2;
}

bool IsMoeLayer(const TransformerSpec& t, int64_t i) {
  if (!IsMoe(t) || i < t.first_dense_layers) return false;
  return t.moe_layer_interval <= 1 || (i + 1) % t.moe_layer_interval == 0;
}

int64_t DenseLayersIn(const TransformerSpec& t, int64_t first, int64_t count) {
  if (!IsMoe(t)) return 0;
  int64_t dense = 0;
  for (int64_t i = first; i < first + count; ++i) dense += IsMoeLayer(t, i) ? 0 : 1;
  return dense;
}

bool HasMixedLayers(const TransformerSpec& t) { return DenseLayersIn(t, 0, t.layers) > 0; }

TransformerSpec DenseLayerOf(const TransformerSpec& t) {
  TransformerSpec dense = t;
  dense.experts = 0;
  dense.top_k = 0;
  dense.shared_experts = 0;
  dense.first_dense_layers = 0;
  dense.moe_layer_interval = 0;
  return dense;
}

StateBytes BytesPerParameter(const TrainingSpec& training) {
  const bool master = training.precision != Precision::kBf16;
  int64_t moments = 0;
  switch (training.optimizer) {
    case Optimizer::kAdam:
    case Optimizer::kAdamW:
      moments = 8;  // fp32 momentum and variance
      break;
    case Optimizer::kSgdMomentum:
      moments = 4;  // fp32 momentum
      break;
    case Optimizer::kAdam8bit:
      moments = 2;  // two 1-byte block-quantized moments
      break;
  }
  return StateBytes{.params = 2,
                    .grads = training.main_grads_fp32 ? 4 : 2,
                    .optimizer = moments + (master ? 4 : 0)};
}

ParameterBreakdown CountParameters(const TransformerSpec& t) {
  ParameterBreakdown p;
  const int64_t h = t.hidden;
  // One MLP of width w: its matrices and column biases (tp-split), its row bias (replicated).
  const auto mlp_split = [&](int64_t w) {
    return (t.gated_mlp ? 3 : 2) * h * w + (t.biases ? (t.gated_mlp ? 2 : 1) * w : 0);
  };
  const int64_t mlp_row_bias = t.biases ? h : 0;

  p.layers = t.layers;
  const int64_t positions = t.position_table > 0 ? t.position_table : t.seq_len;
  p.embedding = t.vocab * h + (t.learned_position_embeddings ? positions * h : 0);
  p.head = t.tied_embeddings ? 0 : t.vocab * h;
  p.final_norm = t.biases ? 2 * h : h;

  const AttentionParameters attention = CountAttention(t);
  const int64_t norms = 2 * (t.biases ? 2 * h : h);
  p.layer_tp_split = attention.matrices + attention.split_extra;
  p.layer_tp_replicated = norms + attention.replicated;
  if (IsMoe(t)) {
    const int64_t fe = MlpWidth(t);
    p.layer_experts = t.experts * (mlp_split(fe) + mlp_row_bias);
    p.layer_router = h * t.experts;
    p.layer_shared_experts = t.shared_experts * (mlp_split(fe) + mlp_row_bias);
    p.dense_layers = DenseLayersIn(t, 0, t.layers);
    if (p.dense_layers > 0) {
      p.dense_layer_tp_split = p.layer_tp_split + mlp_split(DenseFfn(t));
      p.dense_layer_tp_replicated = p.layer_tp_replicated + mlp_row_bias;
    }
  } else {
    p.layer_tp_split += mlp_split(DenseFfn(t));
    p.layer_tp_replicated += mlp_row_bias;
  }
  return p;
}

int64_t ActiveParameterCount(const TransformerSpec& t) {
  const ParameterBreakdown p = CountParameters(t);
  if (!IsMoe(t)) return p.total();
  const int64_t idle_experts = t.experts - std::min(t.top_k, t.experts);
  const int64_t idle_per_layer = p.layer_experts / t.experts * idle_experts;
  return p.total() - (p.layers - p.dense_layers) * idle_per_layer;
}

int64_t ParameterCount(const ModelSpec& model) {
  if (model.has_architecture()) return CountParameters(model.transformer).total();
  return model.parameter_count;
}

int64_t MegatronParameterCount(int64_t layers, int64_t hidden, int64_t vocab, int64_t seq_len) {
  return 12 * layers * hidden * hidden + 13 * layers * hidden + (vocab + seq_len) * hidden;
}

Bytes ActivationBytesPerLayer(const TransformerSpec& t, int64_t micro_batch, int64_t seq_len,
                              int tp, bool sequence_parallel, Recompute recompute,
                              bool flash_attention) {
  const int64_t s = seq_len;
  const int64_t b = micro_batch;
  const int64_t h = t.hidden;
  const int64_t a = t.heads;
  const int64_t sb = s * b;
  if (recompute == Recompute::kFull) {
    // Only the layer input (2 s b h bytes in 16-bit) is kept; sequence parallelism splits it.
    const int64_t input = 2 * sb * h;
    return Bytes::Count(sequence_parallel ? CeilDiv(input, tp) : input);
  }
  const int64_t f = MlpWidth(t);
  // Korthikanti's 10 s b h: LayerNorm inputs, QKV and MLP inputs, dropout masks.
  const int64_t unsplit = 10 * sb * h;
  // Korthikanti's 24 s b h, generalized: Q (2 a d_qk), K and V (2 x their widths),
  // output-projection input (2 a d_v), and the MLP's inner activations. (MLA's latents,
  // r_q + r_kv + d_rope wide, are not counted: under 1/10 of Q, K and V for DeepSeek-V3.)
  int64_t mlp = sb * (t.gated_mlp ? 6 * f : 4 * f);
  if (IsMoe(t)) {
    // The busiest rank's expert activations: its memory is the peak.
    mlp = static_cast<int64_t>(
        std::llround(static_cast<double>(mlp) * MoeBusiestExpertMultiplier(t)));
    // Shared experts run every token once.
    if (t.shared_experts > 0) mlp += t.shared_experts * sb * (t.gated_mlp ? 6 * f : 4 * f);
  }
  const int64_t split =
      sb * (2 * a * QkHeadDim(t) + 2 * KeyWidth(t) + 2 * ValueWidth(t) + 2 * a * VHeadDim(t)) + mlp;
  // Attention scores (2), softmax dropout mask (1) and its output (2): 5 a s^2 b.
  const int64_t scores =
      recompute == Recompute::kSelective || flash_attention ? 0 : 5 * a * s * s * b;
  int64_t bytes = 0;
  if (sequence_parallel) {
    bytes = CeilDiv(unsplit + split, tp) + CeilDiv(scores, tp);
  } else {
    bytes = unsplit + CeilDiv(split, tp) + CeilDiv(scores, tp);
  }
  return Bytes::Count(bytes);
}

LayerTraffic ElementwiseTrafficPerLayer(const TransformerSpec& t, int64_t micro_batch, int64_t s,
                                        int64_t s_kv, int tp, bool sequence_parallel,
                                        bool flash_attention) {
  const int64_t b = micro_batch;
  const int64_t h = t.hidden;
  const int64_t f = MlpWidth(t);
  const int64_t split = sequence_parallel ? tp : 1;
  const int64_t norms = CeilDiv(11 * s * b * h, split);
  LayerTraffic out;
  out.attention = Bytes::Count(norms);
  out.scores =
      flash_attention ? Bytes::Zero() : Bytes::Count(CeilDiv(9 * t.heads * s * s_kv * b, tp));
  out.mlp = Bytes::Count(norms + CeilDiv((t.gated_mlp ? 6 : 4) * s * b * f, tp));
  return out;
}

Bytes OutputLayerTraffic(const TransformerSpec& t, int64_t micro_batch, int64_t s, int tp) {
  return Bytes::Count(CeilDiv(8 * s * micro_batch * t.vocab, tp));
}

double MoeExpertMultiplier(const TransformerSpec& t) {
  if (t.experts <= 1) return 1.0;
  const double top_k = static_cast<double>(t.top_k > 0 ? t.top_k : 1);
  return t.capacity_factor > 0 ? top_k * t.capacity_factor : top_k;
}

double MoeBusiestExpertMultiplier(const TransformerSpec& t) {
  if (t.experts <= 1 || t.capacity_factor > 0) return MoeExpertMultiplier(t);
  return MoeExpertMultiplier(t) * t.routing_imbalance;
}

LayerGemmFlops LayerGemmFlopsPerToken(const TransformerSpec& t) {
  const auto h = static_cast<double>(t.hidden);
  const auto f = static_cast<double>(MlpWidth(t));
  const double mlp = 2.0 * (t.gated_mlp ? 3.0 : 2.0) * h * f;
  // Two FLOPs per weight: the projections' matrices are the layer's GEMMs.
  if (IsMla(t)) return LayerGemmFlops{2.0 * static_cast<double>(CountAttention(t).matrices), mlp};
  const auto q = static_cast<double>(t.heads * HeadDim(t));  // = h unless head_dim says otherwise
  const auto kd = static_cast<double>(KvHeads(t) * HeadDim(t));
  return LayerGemmFlops{2.0 * h * (q + 2.0 * kd) + 2.0 * q * h, mlp};
}

double MoeExtraForwardFlopsPerToken(const TransformerSpec& t) {
  if (t.experts <= 1) return 0.0;
  const auto h = static_cast<double>(t.hidden);
  const double mlp = LayerGemmFlopsPerToken(t).mlp;
  const double extra =
      (MoeExpertMultiplier(t) - 1.0) * mlp + 2.0 * h * static_cast<double>(t.experts);
  return t.shared_experts > 0 ? extra + static_cast<double>(t.shared_experts) * mlp : extra;
}

Flops ModelFlopsPerIteration(const TransformerSpec& t, int64_t global_batch, Recompute recompute) {
  const double B = static_cast<double>(global_batch);
  const double s = static_cast<double>(t.seq_len);
  const double l = static_cast<double>(t.layers);
  const double h = static_cast<double>(t.hidden);
  const double V = static_cast<double>(t.vocab);
  // Eq. 3 is 96·Bslh²(1 + s/6h) + 6BshV: the transformer layers run four passes (forward,
  // recomputed forward, two for backward) at 24Bsh²(1 + s/6h) each, and the logit layer
  // three passes at 2BshV, never recomputed. Its V/(16lh) term is 6BshV written over
  // 96·Bslh². Without recompute the layers run three passes (72) and the logit layer
  // still 6BshV; selective recompute adds the recomputed attention scores, 4Bs²hl.
  // A layer's forward is Bs(A + M + 4sh) for its matrix products A + M (24h² for GPT shapes)
  // and attention core 4sh; mixture of experts adds MoeExtraForwardFlopsPerToken per token
  // (the MLP term counted top_k x capacity_factor times, and the router).
  // The attention core is 4 s x AttentionCoreWidth (= h for the classic shapes).
  // Heterogeneous MoE models sum their MoE and dense layers, each kind over its own shapes.
  const auto core = static_cast<double>(AttentionCoreWidth(t));
  const LayerGemmFlops gemm = LayerGemmFlopsPerToken(t);
  const auto dense_layers = static_cast<double>(DenseLayersIn(t, 0, t.layers));
  double layer = 0;
  if (dense_layers > 0) {
    const LayerGemmFlops dense = LayerGemmFlopsPerToken(DenseLayerOf(t));
    layer = B * s *
            ((l - dense_layers) *
                 (gemm.attention + gemm.mlp + 4.0 * s * core + MoeExtraForwardFlopsPerToken(t)) +
             dense_layers * (dense.attention + dense.mlp + 4.0 * s * core));
  } else {
    layer =
        B * s * l * (gemm.attention + gemm.mlp + 4.0 * s * core + MoeExtraForwardFlopsPerToken(t));
  }
  const double logits = 6.0 * B * s * h * V;
  switch (recompute) {
    case Recompute::kFull:
      return Flops::Count(4.0 * layer + logits);
    case Recompute::kSelective:
      return Flops::Count(3.0 * layer + logits + 4.0 * B * s * s * core * l);
    case Recompute::kNone:
      break;
  }
  return Flops::Count(3.0 * layer + logits);
}

double OptimizerFlopsPerElement(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam:
    case Optimizer::kAdamW:
      return 12;
    case Optimizer::kSgdMomentum:
      return 4;
    case Optimizer::kAdam8bit:
      return 16;
  }
  return 12;
}

}  // namespace placesim::strategies
