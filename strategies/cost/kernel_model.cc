// The kernel model (see kernel_model.h for the formulas and docs/calibration.md for the
// calibration). Thread-safety: pure functions.
#include "strategies/cost/kernel_model.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "strategies/cost/arith.h"
#include "strategies/model.h"

namespace placesim::strategies::cost {
namespace {

using topology::AttentionKernel;
using topology::AttentionProfile;
using topology::DataType;
using topology::DeviceSpec;
using topology::KernelProfile;

int64_t RoundUp(int64_t v, int64_t to) { return to <= 1 ? v : CeilDiv(v, to) * to; }

int64_t InputBytes(DataType type) {
  switch (type) {
    case DataType::kFp8:
      return 1;
    case DataType::kFp32:
    case DataType::kTf32:
      return 4;
    case DataType::kBf16:
    case DataType::kFp16:
      return 2;
  }
  return 2;
}

// The saturated GEMM efficiency for `type`: the profile's, else the device's flat one.
double GemmEfficiency(const DeviceSpec& d, DataType type) {
  const double e = d.kernels.gemm_efficiency[static_cast<int>(type)];
  return e > 0 ? e : d.matmul_efficiency;
}

// The 16-bit peak attention kernels run at, whatever the GEMMs' type (fp8 recipes keep the
// attention core in bf16).
FlopRate Peak16(const DeviceSpec& d) {
  const FlopRate bf16 = d.Peak(DataType::kBf16);
  return bf16 > FlopRate::Zero() ? bf16 : d.Peak(DataType::kFp16);
}

double Saturation(int64_t keys, int64_t half) {
  return half <= 0 ? 1.0 : static_cast<double>(keys) / static_cast<double>(keys + half);
}

// The head-width factor at width w (linear between the compiled widths, the widest's beyond).
double WidthFactor(const topology::AttentionWidthFactors& f, double w) {
  const auto& widths = topology::kAttentionHeadWidths;
  if (w <= static_cast<double>(widths.front())) return f.front();
  for (size_t i = 1; i < widths.size(); ++i) {
    const double hi = static_cast<double>(widths[i]);
    if (w <= hi) {
      const double lo = static_cast<double>(widths[i - 1]);
      return f[i - 1] + (f[i] - f[i - 1]) * (w - lo) / (hi - lo);
    }
  }
  return f.back();
}

// One pass of a fused kernel: `passes` times the forward work at the padded head widths, at
// the profile's efficiency, saturation over the keys and head-width factor.
Duration FusedTime(const DeviceSpec& d, const AttentionShape& a, double passes,
                   double efficiency, int64_t half, const topology::AttentionWidthFactors& f) {
  const int64_t v = a.v_head_dim > 0 ? a.v_head_dim : a.head_dim;
  const int64_t padded = PaddedHeadWidth(a.head_dim) + PaddedHeadWidth(v);
  const Flops work = a.forward_work() * (passes * static_cast<double>(padded) /
                                         static_cast<double>(a.head_dim + v));
  const double width = WidthFactor(f, static_cast<double>(padded) / 2);
  const FlopRate rate = Peak16(d) * (efficiency * Saturation(a.keys, half) * width);
  return work / rate + d.kernels.kernel_launch;
}

// Time and counted FLOPs of a set of kernels, for a ratio.
struct Tally {
  double flops = 0;    // as the model counts them
  double seconds = 0;  // as the kernel model runs them

  void Gemm(const DeviceSpec& d, DataType type, const GemmShape& g, double count) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return;  // a part the model lacks
    // Forward M x K x N, backward M x N x K (input gradient) and N x M x K (weight gradient).
    const GemmShape dgrad{g.m, g.k, g.n, g.batch};
    const GemmShape wgrad{g.n, g.k, g.m, g.batch};
    flops += 3.0 * g.flops().count() * count;
    seconds +=
        count *
        (GemmTime(d, type, g) + GemmTime(d, type, dgrad) + GemmTime(d, type, wgrad)).ToSeconds();
  }
};

// One dense or MoE layer's projection and MLP GEMMs for `tokens` tokens on one tp / ep shard.
void LayerGemms(const TransformerSpec& t, int64_t tokens, int64_t tp, int64_t ep, bool moe_layer,
                const DeviceSpec& d, DataType type, double layers, Tally* tally) {
  const int64_t h = t.hidden;
  const int64_t dq = QkHeadDim(t);
  const int64_t dv = VHeadDim(t);
  const int64_t qkv = t.heads * dq + t.kv_heads * (dq + dv);
  const int64_t gate = t.gated_mlp ? 2 : 1;
  tally->Gemm(d, type, {tokens, CeilDiv(qkv, tp), h}, layers);
  tally->Gemm(d, type, {tokens, h, CeilDiv(t.heads * dv, tp)}, layers);
  if (!moe_layer) {
    tally->Gemm(d, type, {tokens, CeilDiv(gate * t.ffn_hidden, tp), h}, layers);
    tally->Gemm(d, type, {tokens, h, CeilDiv(t.ffn_hidden, tp)}, layers);
    return;
  }
  const int64_t fe = t.expert_ffn_hidden > 0 ? t.expert_ffn_hidden : t.ffn_hidden;
  const int64_t local_experts = CeilDiv(t.experts, ep);
  // Tokens an expert of the busiest rank computes: the rank receives tokens x multiplier
  // (top_k x capacity or imbalance) spread over its local experts.
  const auto per_expert =
      static_cast<int64_t>(std::ceil(static_cast<double>(tokens) * MoeBusiestExpertMultiplier(t) /
                                     static_cast<double>(local_experts)));
  const double experts = layers * static_cast<double>(local_experts);
  tally->Gemm(d, type, {std::max<int64_t>(per_expert, 1), CeilDiv(gate * fe, tp), h}, experts);
  tally->Gemm(d, type, {std::max<int64_t>(per_expert, 1), h, CeilDiv(fe, tp)}, experts);
  tally->Gemm(d, type, {tokens, t.experts, h}, layers);  // router
  if (t.shared_experts > 0) {
    tally->Gemm(d, type, {tokens, CeilDiv(gate * fe * t.shared_experts, tp), h}, layers);
    tally->Gemm(d, type, {tokens, h, CeilDiv(fe * t.shared_experts, tp)}, layers);
  }
}

// One layer's attention core, forward and backward, as the model counts its FLOPs (4 b s_c s
// width / t a pass, backward twice that) and as the kernels run it.
void AttentionCore(const TransformerSpec& t, const TrainingSpec& training, int64_t sc, int64_t tp,
                   const DeviceSpec& d, DataType type, double layers, Tally* tally) {
  const int64_t b = training.micro_batch;
  const int64_t heads = CeilDiv(t.heads, tp);
  const double counted = 4.0 * static_cast<double>(b * sc) * static_cast<double>(t.seq_len) *
                         static_cast<double>(AttentionCoreWidth(t)) / static_cast<double>(tp);
  tally->flops += 3.0 * counted * layers;
  const AttentionKernel kernel = training.attention_kernel;
  if (training.flash_attention && d.kernels.Attention(kernel) != nullptr) {
    const AttentionShape a{b * heads, sc, t.seq_len, QkHeadDim(t), true, VHeadDim(t)};
    tally->seconds += layers * (FusedAttentionForwardTime(d, kernel, a) +
                                FusedAttentionBackwardTime(d, kernel, a))
                                   .ToSeconds();
    return;
  }
  // Unfused: Q K^T (s_c x d x s) and the scores times V (s_c x s x d), batched over b x heads,
  // each run again twice in backward; the full score matrix is computed (no causal skip).
  const DataType scores_type =
      d.Peak(DataType::kBf16) > FlopRate::Zero() ? DataType::kBf16 : DataType::kFp16;
  const DataType core_type = type == DataType::kFp8 ? scores_type : type;
  Tally core;
  core.Gemm(d, core_type, {sc, t.seq_len, QkHeadDim(t), b * heads}, layers);
  core.Gemm(d, core_type, {sc, VHeadDim(t), t.seq_len, b * heads}, layers);
  tally->seconds += core.seconds;
}

}  // namespace

Flops GemmShape::flops() const {
  return Flops::Count(2.0 * static_cast<double>(m) * static_cast<double>(n) *
                      static_cast<double>(k) * static_cast<double>(batch));
}

Flops AttentionShape::forward_work() const {
  const int64_t v = v_head_dim > 0 ? v_head_dim : head_dim;
  const double full = 2.0 * static_cast<double>(rows) * static_cast<double>(queries) *
                      static_cast<double>(keys) * static_cast<double>(head_dim + v);
  return Flops::Count(causal ? full / 2 : full);
}

int64_t PaddedHeadWidth(int64_t d) {
  for (const int64_t w : topology::kAttentionHeadWidths) {
    if (d <= w) return w;
  }
  return d;
}

Duration GemmTime(const DeviceSpec& d, DataType type, const GemmShape& g) {
  const KernelProfile& k = d.kernels;
  PLACESIM_CHECK(k.present());
  const int64_t mp = RoundUp(g.m, k.tile);
  const int64_t np = RoundUp(g.n, k.tile);
  double waves = 1.0;
  if (k.wave_quantization) {
    const int64_t tiles = CeilDiv(g.m, k.tile) * CeilDiv(g.n, k.tile) * g.batch;
    waves = static_cast<double>(CeilDiv(tiles, k.sms) * k.sms) / static_cast<double>(tiles);
  }
  const Flops padded = GemmShape{mp, np, g.k, g.batch}.flops() * waves;
  const Duration compute = padded / (d.Peak(type) * GemmEfficiency(d, type));
  const Bytes moved =
      Bytes::Count((InputBytes(type) * (g.m * g.k + g.n * g.k) + 2 * g.m * g.n) * g.batch);
  const Duration memory = moved / (d.hbm_bandwidth * k.gemm_memory_efficiency);
  return std::max(compute, memory) + k.kernel_launch;
}

Duration FusedAttentionForwardTime(const DeviceSpec& d, AttentionKernel kernel,
                                   const AttentionShape& a) {
  const AttentionProfile* p = d.kernels.Attention(kernel);
  PLACESIM_CHECK(p != nullptr);
  return FusedTime(d, a, 1.0, p->forward_efficiency, p->half_saturation_keys_forward,
                   p->width_forward);
}

Duration FusedAttentionBackwardTime(const DeviceSpec& d, AttentionKernel kernel,
                                    const AttentionShape& a) {
  const AttentionProfile* p = d.kernels.Attention(kernel);
  PLACESIM_CHECK(p != nullptr);
  return FusedTime(d, a, 2.5, p->backward_efficiency, p->half_saturation_keys_backward,
                   p->width_backward);
}

double StepMatmulEfficiency(const TransformerSpec& t, const TrainingSpec& training,
                            const topology::MeshShape& mesh, const DeviceSpec& d, DataType type) {
  const FlopRate peak = d.Peak(type);
  if (!d.kernels.present() || d.kernels.gemm_efficiency[static_cast<int>(type)] <= 0 ||
      !(peak > FlopRate::Zero()) || t.layers <= 0 || t.hidden <= 0 || t.heads <= 0) {
    return d.matmul_efficiency;
  }
  const int64_t sc = CeilDiv(t.seq_len, mesh.cp);
  const int64_t tokens = training.micro_batch * sc;
  const int64_t tp = mesh.tp;
  const int64_t dense = t.experts > 1 ? DenseLayersIn(t, 0, t.layers) : t.layers;
  Tally tally;
  if (dense > 0) {
    LayerGemms(t, tokens, tp, mesh.ep, false, d, type, static_cast<double>(dense), &tally);
  }
  if (t.layers > dense) {
    LayerGemms(t, tokens, tp, mesh.ep, true, d, type, static_cast<double>(t.layers - dense),
               &tally);
  }
  AttentionCore(t, training, sc, tp, d, type, static_cast<double>(t.layers), &tally);
  tally.Gemm(d, type, {tokens, CeilDiv(t.vocab, tp), t.hidden}, 1.0);  // output layer
  if (!(tally.seconds > 0)) return d.matmul_efficiency;
  return std::min(1.0, tally.flops / (tally.seconds * peak.per_second()));
}

}  // namespace placesim::strategies::cost
