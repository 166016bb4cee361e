// ComputePassCosts: the schedule's per-op work, derived once (see pass_costs.h). The
// expressions keep the schedule's evaluation order so that the doubles are bit-identical.
// Thread-safety: pure functions.
#include "strategies/cost/pass_costs.h"

#include <cmath>

#include "strategies/cost/arith.h"

namespace placesim::strategies::cost {
namespace {

Work Make(double flops, int64_t read, int64_t written, Bytes elementwise = Bytes::Zero()) {
  return Work{Flops::Count(flops), Bytes::Count(read), Bytes::Count(written), elementwise};
}

// Backward element-wise kernels move kElementwiseBackwardFactor times the forward's bytes.
Bytes Backward(Bytes x) {
  return Bytes::Count(std::llround(static_cast<double>(x.count()) * kElementwiseBackwardFactor));
}

// FLOPs of one layer pass's blocks on one rank (eq. 3 over the model's shapes, model.h).
struct LayerFlops {
  double attention = 0;  // QKV, projection and the attention core
  double router = 0;     // MoE
  double experts = 0;    // MoE: busiest-rank multiplier x one MLP
  double layer = 0;      // the whole layer
  double mlp = 0;        // layer - attention
  double core = 0;       // the attention core alone
};

LayerFlops LayerFlopsOf(const TransformerSpec& t, int64_t b, int64_t sc, int64_t tp, bool moe) {
  const int64_t s = t.seq_len;
  const int64_t h = t.hidden;
  const int64_t core = AttentionCoreWidth(t);  // = h for the classic shapes
  const auto td = static_cast<double>(tp);
  const LayerGemmFlops gemm = LayerGemmFlopsPerToken(t);
  const double tokens = static_cast<double>(b * sc);
  LayerFlops f;
  f.core = 4.0 * b * sc * s * core / td;
  f.attention = (tokens * gemm.attention + 4.0 * b * sc * s * core) / td;
  // With balanced routing every rank of an ep group receives top_k x cf x its own tokens, so
  // its experts compute that many MLPs / t whatever ep is. The router is counted 1/t per rank.
  f.router = moe ? 2.0 * b * sc * h * static_cast<double>(t.experts) / td : 0.0;
  // Shared experts run every local token, tensor-parallel, beside the router (before the
  // dispatch), so they join the router's op.
  if (moe && t.shared_experts > 0)
    f.router += static_cast<double>(t.shared_experts) * tokens * gemm.mlp / td;
  f.experts = moe ? MoeBusiestExpertMultiplier(t) * tokens * gemm.mlp / td : 0.0;
  f.layer = moe ? f.attention + f.router + f.experts : f.attention + tokens * gemm.mlp / td;
  f.mlp = f.layer - f.attention;
  return f;
}

// Bytes of one layer's weights and activations that the blocks split between them.
struct LayerBytes {
  int64_t params = 0;     // the layer's weights
  int64_t attention = 0;  // of which the attention block's
  int64_t router = 0;     // MoE
  int64_t experts = 0;    // MoE
  int64_t io = 0;         // the layer's input or output
  int64_t kept = 0;       // activations kept under the recompute policy
  int64_t full = 0;       // activations without recompute
  int64_t extra = 0;      // what recompute rebuilds: full - kept
};

void FillForward(const LayerFlops& f, const LayerBytes& x, const LayerTraffic& tr, int64_t tp,
                 bool moe, LayerPass& out) {
  const Bytes attention_traffic = tr.attention + tr.scores;
  // A layer's activations are split half and half between its attention and MLP blocks.
  const int64_t kept_attn = x.kept / 2;
  if (moe) {
    out.attention = Make(f.attention, x.attention + x.io, kept_attn + x.io, attention_traffic);
    out.router = Make(f.router, x.router + x.io, x.io);
    out.experts = Make(f.experts, x.experts + x.io, x.kept - kept_attn + x.io, tr.mlp);
  } else if (tp == 1) {
    out.whole = Make(f.layer, x.params + x.io, x.kept + x.io, attention_traffic + tr.mlp);
  } else {
    out.attention = Make(f.attention, x.attention + x.io, kept_attn + x.io, attention_traffic);
    out.mlp = Make(f.mlp, x.params - x.attention + x.io, x.kept - kept_attn + x.io, tr.mlp);
  }
}

void FillRecompute(const LayerFlops& f, const LayerBytes& x, const LayerTraffic& tr, int64_t tp,
                   bool moe, Recompute recompute, LayerPass& out) {
  const Bytes attention_traffic = tr.attention + tr.scores;
  const int64_t rebuilt_attn = x.extra / 2;
  if (recompute == Recompute::kSelective) {
    // Rebuilds the attention core from the kept Q, K and V.
    out.whole = Make(f.core, x.params + x.kept, x.extra, tr.scores);
  } else if (recompute != Recompute::kFull) {
    return;
  } else if (moe) {
    out.attention = Make(f.attention, x.attention + x.kept, rebuilt_attn, attention_traffic);
    out.router = Make(f.router, x.router + x.io, x.io);
    out.experts = Make(f.experts, x.experts + x.io, x.extra - rebuilt_attn + x.io, tr.mlp);
  } else if (tp == 1) {
    out.whole = Make(f.layer, x.params + x.kept, x.extra, attention_traffic + tr.mlp);
  } else {
    out.attention = Make(f.attention, x.attention + x.kept, rebuilt_attn, attention_traffic);
    out.mlp = Make(f.mlp, x.params - x.attention, x.extra - rebuilt_attn, tr.mlp);
  }
}

void FillBackwardInput(const LayerFlops& f, const LayerBytes& x, const LayerTraffic& tr, int64_t tp,
                       bool moe, LayerPass& out) {
  const Bytes attention_traffic = Backward(tr.attention + tr.scores);
  const int64_t read_attn = x.full / 2;
  if (moe) {
    out.attention = Make(f.attention, x.attention + read_attn + x.io, x.io, attention_traffic);
    out.router = Make(f.router, x.router + x.io, x.io);
    out.experts = Make(f.experts, x.experts + x.io + (x.full - read_attn), x.io, Backward(tr.mlp));
  } else if (tp == 1) {
    out.whole =
        Make(f.layer, x.params + x.full + x.io, x.io, Backward(tr.attention + tr.scores + tr.mlp));
  } else {
    out.mlp =
        Make(f.mlp, x.params - x.attention + x.full - read_attn + x.io, x.io, Backward(tr.mlp));
    out.attention = Make(f.attention, x.attention + read_attn + x.io, x.io, attention_traffic);
  }
}

}  // namespace

Work PassCosts::OutputBackwardWeight(int64_t head_elements) const {
  Work w = output_forward;
  w.read = output_activations;
  w.written = Bytes::Count(head_elements * bpp.grads);
  w.elementwise = Bytes::Zero();
  return w;
}

Work PassCosts::OptimizerStep(int64_t elements) const {
  return Make(OptimizerFlopsPerElement(optimizer) * static_cast<double>(elements),
              elements * (bpp.grads + bpp.optimizer), elements * (bpp.optimizer + bpp.params));
}

PassCosts ComputePassCosts(const TransformerSpec& t, const TrainingSpec& training,
                           const topology::MeshShape& mesh, Recompute recompute,
                           bool sequence_parallel) {
  PassCosts c;
  c.tp = mesh.tp;
  c.cp = mesh.cp;
  c.ep = mesh.ep;
  c.sequence_parallel = sequence_parallel;
  c.moe = t.experts > 1;
  c.recompute = recompute;
  c.bpp = BytesPerParameter(training);
  c.optimizer = training.optimizer;
  const int64_t b = training.micro_batch;
  const int64_t h = t.hidden;
  const int64_t V = t.vocab;
  const int64_t tp = c.tp;
  const int64_t sc = CeilDiv(t.seq_len, c.cp);
  c.tokens = sc;
  // Sequence parallelism keeps 1/t of the sequence in a layer's input and output.
  const int64_t split = sequence_parallel ? tp : 1;

  const ParameterBreakdown p = CountParameters(t);
  c.layer_expert_elements = CeilDiv(CeilDiv(p.layer_experts, c.ep), tp);
  c.layer_elements = CeilDiv(p.layer_tp_split, tp) + p.layer_tp_replicated + p.layer_router +
                     c.layer_expert_elements;
  const int64_t shared_elements = CeilDiv(p.layer_shared_experts, tp);
  c.layer_elements += shared_elements;
  c.vocab_elements = CeilDiv(V * h, tp);

  c.io = Bytes::Count(CeilDiv(2 * b * sc * h, split));
  c.tp_buffer = Bytes::Count(2 * b * sc * h);
  c.p2p = Bytes::Count(CeilDiv(2 * b * sc * h, tp));
  c.kv = Bytes::Count(2 * b * sc * (CeilDiv(KeyWidth(t), tp) + CeilDiv(ValueWidth(t), tp)));
  c.all_to_all = c.moe && c.ep > 1 ? Scale(Bytes::Count(CeilDiv(2 * b * sc * h, split)),
                                           MoeBusiestExpertMultiplier(t))
                                   : Bytes::Zero();

  const auto tpi = static_cast<int>(tp);
  c.layer_kept = ActivationBytesPerLayer(
      t, b, sc, tpi, SplitsKeptInput(training, tp, sequence_parallel, recompute), recompute,
      training.flash_attention);
  c.layer_full = ActivationBytesPerLayer(t, b, sc, tpi, sequence_parallel, Recompute::kNone,
                                         training.flash_attention);
  c.embedding_activations = Bytes::Count(CeilDiv(b * sc * h, split));
  c.output_activations = Bytes::Count(CeilDiv(4 * b * sc * h + 4 * b * sc * V, tp));

  const LayerFlops f = LayerFlopsOf(t, b, sc, tp, c.moe);
  LayerBytes x;
  x.params = c.layer_elements * c.bpp.params;
  // Dense layers give their attention block a third of the weights (4h^2 of 12h^2); MoE
  // layers the attention matrices and the replicated norms and biases.
  x.attention =
      c.moe ? (CeilDiv(p.layer_tp_split, tp) + p.layer_tp_replicated) * c.bpp.params : x.params / 3;
  x.router = (p.layer_router + shared_elements) * c.bpp.params;
  x.experts = c.layer_expert_elements * c.bpp.params;
  x.io = c.io.count();
  x.kept = c.layer_kept.count();
  x.full = c.layer_full.count();
  x.extra = x.full - x.kept;
  const LayerTraffic traffic = ElementwiseTrafficPerLayer(
      t, b, sc, t.seq_len, tpi, sequence_parallel, training.flash_attention);
  FillForward(f, x, traffic, tp, c.moe, c.forward);
  FillRecompute(f, x, traffic, tp, c.moe, recompute, c.recompute_pass);
  FillBackwardInput(f, x, traffic, tp, c.moe, c.backward_input);
  c.backward_weight = Make(f.layer, x.full + x.io, c.layer_elements * c.bpp.grads);
  c.attention_core = Make(f.core, 0, 0);

  // The embedding lookup has no FLOPs; it reads the looked-up rows and writes their output.
  c.embedding_forward = Make(0, b * sc * h * c.bpp.params, 2 * b * sc * h);
  c.embedding_backward_weight = Make(0, x.io + c.embedding_activations.count(), x.io);
  // The output layer: 2 b s h V / t a pass (Narayanan et al. 2021 eq. 3), never recomputed.
  const double head_pass = 2.0 * static_cast<double>(b * sc * h * V) / static_cast<double>(tp);
  const Bytes head_traffic = OutputLayerTraffic(t, b, sc, tpi);
  c.output_forward = Make(head_pass, c.vocab_elements * c.bpp.params + x.io,
                          c.output_activations.count(), head_traffic);
  c.output_backward_input =
      Make(head_pass, c.vocab_elements * c.bpp.params + c.output_activations.count(), x.io,
           head_traffic);
  return c;
}

}  // namespace placesim::strategies::cost
