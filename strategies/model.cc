// Transformer parameter, activation and FLOP formulas; the maths and sources are in model.h.
// Thread-safety: pure functions.
#include "strategies/model.h"

#include <cmath>

#include "strategies/cost/arith.h"

namespace placesim::strategies {
namespace {

using cost::CeilDiv;

int64_t KvHeads(const TransformerSpec& t) { return t.kv_heads > 0 ? t.kv_heads : t.heads; }
bool IsMoe(const TransformerSpec& t) { return t.experts > 1; }

}  // namespace

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
  return StateBytes{.params = 2, .grads = 2, .optimizer = moments + (master ? 4 : 0)};
}

ParameterBreakdown CountParameters(const TransformerSpec& t) {
  ParameterBreakdown p;
  const int64_t h = t.hidden;
  const int64_t kv_width = KvHeads(t) * (h / t.heads);  // k d
  const int64_t f = t.ffn_hidden > 0 ? t.ffn_hidden : 4 * h;
  const int64_t mlp_matrices = (t.gated_mlp ? 3 : 2) * h * f;
  const int64_t mlp_column_bias = t.biases ? (t.gated_mlp ? 2 : 1) * f : 0;
  const int64_t mlp_row_bias = t.biases ? h : 0;

  p.layers = t.layers;
  p.embedding = t.vocab * h + (t.learned_position_embeddings ? t.seq_len * h : 0);
  p.head = t.tied_embeddings ? 0 : t.vocab * h;
  p.final_norm = t.biases ? 2 * h : h;

  const int64_t attention = 2 * h * h + 2 * h * kv_width;
  const int64_t qkv_bias = t.biases ? h + 2 * kv_width : 0;
  const int64_t out_bias = t.biases ? h : 0;
  const int64_t norms = 2 * (t.biases ? 2 * h : h);
  p.layer_tp_split = attention + qkv_bias;
  p.layer_tp_replicated = norms + out_bias;
  if (IsMoe(t)) {
    p.layer_experts = t.experts * (mlp_matrices + mlp_column_bias + mlp_row_bias);
    p.layer_router = h * t.experts;
  } else {
    p.layer_tp_split += mlp_matrices + mlp_column_bias;
    p.layer_tp_replicated += mlp_row_bias;
  }
  return p;
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
  const int64_t kv_width = KvHeads(t) * (h / a);
  const int64_t f = t.ffn_hidden > 0 ? t.ffn_hidden : 4 * h;
  // Korthikanti's 10 s b h: LayerNorm inputs, QKV and MLP inputs, dropout masks.
  const int64_t unsplit = 10 * sb * h;
  // Korthikanti's 24 s b h, generalized: Q (2h), K and V (2kd each), output-projection
  // input (2h), and the MLP's inner activations.
  int64_t mlp = sb * (t.gated_mlp ? 6 * f : 4 * f);
  if (IsMoe(t)) {
    // The busiest rank's expert activations: its memory is the peak.
    mlp = static_cast<int64_t>(
        std::llround(static_cast<double>(mlp) * MoeBusiestExpertMultiplier(t)));
  }
  const int64_t split = sb * (2 * h + 4 * kv_width + 2 * h) + mlp;
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
  const int64_t f = t.ffn_hidden > 0 ? t.ffn_hidden : 4 * h;
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
  const auto kd = static_cast<double>(KvHeads(t) * (t.hidden / t.heads));
  const auto f = static_cast<double>(t.ffn_hidden > 0 ? t.ffn_hidden : 4 * t.hidden);
  return LayerGemmFlops{2.0 * h * (h + 2.0 * kd) + 2.0 * h * h,
                        2.0 * (t.gated_mlp ? 3.0 : 2.0) * h * f};
}

double MoeExtraForwardFlopsPerToken(const TransformerSpec& t) {
  if (t.experts <= 1) return 0.0;
  const auto h = static_cast<double>(t.hidden);
  return (MoeExpertMultiplier(t) - 1.0) * LayerGemmFlopsPerToken(t).mlp +
         2.0 * h * static_cast<double>(t.experts);
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
  const LayerGemmFlops gemm = LayerGemmFlopsPerToken(t);
  const double layer =
      B * s * l * (gemm.attention + gemm.mlp + 4.0 * s * h + MoeExtraForwardFlopsPerToken(t));
  const double logits = 6.0 * B * s * h * V;
  switch (recompute) {
    case Recompute::kFull:
      return Flops::Count(4.0 * layer + logits);
    case Recompute::kSelective:
      return Flops::Count(3.0 * layer + logits + 4.0 * B * s * s * h * l);
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
