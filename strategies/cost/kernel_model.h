// The kernel model: how long one GEMM or one fused attention kernel of a given shape takes on
// a device, from the device's KernelProfile (topology/spec.h), and what fraction of peak a
// training step's matrix work reaches given the shapes its mesh and micro-batch produce. The
// profiles are calibrated on microbenchmarks only (docs/calibration.md); no knob here is
// fitted to end-to-end training runs.
//
// GEMM (M x K times K x N, `batch` of them in one kernel):
//   compute  2 M' N' K batch x w / (peak(type) x gemm_efficiency(type)), M' and N' padded up
//            to the tile edge (tile quantization), w = ceil(tiles / sms) x sms / tiles when
//            the library quantizes waves and 1 when it spreads the last wave (stream-K)
//   memory   (s_in (M K + N K) + 2 M N) batch / (hbm x gemm_memory_efficiency), s_in the
//            input element size (1 byte for fp8, 2 for 16-bit types, 4 for fp32 / tf32)
//   time     max(compute, memory) + kernel_launch
// so thin shards and small micro-batches, which are memory-bound or launch-bound, get slower
// per FLOP as they do on hardware, and large GEMMs saturate at gemm_efficiency.
// Fused attention (FlashAttention-style) over B = b x heads rows of q queries and k keys, with
// the profile of the kernel the scenario names (training.attention_kernel: cuDNN,
// FlashAttention-2, or the device's default; topology::KernelProfile::Attention):
//   forward  work 2 B q k (d_qk + d_v) (halved when causal: masked blocks are skipped) at
//            peak16 x e_fwd x k / (k + k_half_fwd) x f_fwd(w)
//   backward 2.5 x the forward work (the scores are recomputed: five products, not two) at
//            peak16 x e_bwd x k / (k + k_half_bwd) x f_bwd(w)
// each plus kernel_launch, peak16 the device's bf16 (else fp16) peak. The kernel runs each
// head width padded up to the narrowest width it is compiled for (32, 64, 96, 128, 192, 256;
// beyond 256 as it is), so the work is counted at the padded widths, and f(w) is the profile's
// head-width factor at w, the mean of the two padded widths (linear between the compiled
// widths, 256's beyond). Without a fused kernel
// (training.flash_attention false, or none on the device) the attention core runs as two
// batched GEMMs over the full q x k scores; training.attention_kernel then has no effect.
//
// Invariants: pure functions of their inputs; every time > 0 for a non-empty shape.
// Thread-safety: pure functions.
#ifndef PLACESIM_STRATEGIES_COST_KERNEL_MODEL_H_
#define PLACESIM_STRATEGIES_COST_KERNEL_MODEL_H_

#include <cstdint>

#include "base/units.h"
#include "strategies/spec.h"
#include "topology/mesh.h"
#include "topology/spec.h"

namespace placesim::strategies::cost {

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;  // independent products in one kernel (batched GEMM)

  Flops flops() const;  // 2 m n k batch
};

// REQUIRES: d.kernels.present(); m, n, k, batch >= 1; d.Peak(type) > 0. O(1).
Duration GemmTime(const topology::DeviceSpec& d, topology::DataType type, const GemmShape& g);

struct AttentionShape {
  int64_t rows = 0;     // micro-batch x heads on this rank
  int64_t queries = 0;  // per row (the rank's tokens of a sequence)
  int64_t keys = 0;     // per row (the whole sequence)
  int64_t head_dim = 0;  // of queries and keys
  bool causal = true;
  int64_t v_head_dim = 0;  // of values; 0 = head_dim (all but multi-head latent attention)

  // 2 rows queries keys (head_dim + v_head_dim), halved when causal: the forward products of
  // the heads as they are (before the kernel pads their width).
  Flops forward_work() const;
};

// The head width a fused kernel runs a head of width d at: the narrowest of
// topology::kAttentionHeadWidths that holds d, or d itself beyond the widest. REQUIRES d >= 1.
int64_t PaddedHeadWidth(int64_t d);

// REQUIRES: d.kernels.Attention(kernel) != nullptr (the device runs that fused kernel; with
// kDeviceDefault, its default one); every field of `a` >= 1. O(1).
Duration FusedAttentionForwardTime(const topology::DeviceSpec& d, topology::AttentionKernel kernel,
                                   const AttentionShape& a);
Duration FusedAttentionBackwardTime(const topology::DeviceSpec& d, topology::AttentionKernel kernel,
                                    const AttentionShape& a);

// The fraction of Peak(type) at which the executor and the step estimate charge the FLOPs of a
// training step's compute ops: the model's forward and backward matrix FLOPs (as
// strategies/model.h counts them, the attention core at its full 4 b s s h / t) over the kernel
// model's time for every GEMM and attention kernel of one micro-batch (one tp / cp / ep shard,
// b sequences of ceil(s / cp) tokens), the output layer's GEMMs counted once per model. The
// GEMMs of a forward product M x K x N run again in backward as M x N x K (input gradient) and
// N x M x K (weight gradient). Recomputation repeats the forward's mix and leaves the ratio
// unchanged. Clamped to at most 1. Without a profile (custom devices, a scenario that sets
// matmul_efficiency), or without a profiled efficiency for `type`, d.matmul_efficiency.
// REQUIRES: t has an architecture; mesh.tp, cp, ep >= 1; training.micro_batch >= 1.
// O(1) in the model's size.
double StepMatmulEfficiency(const TransformerSpec& t, const TrainingSpec& training,
                            const topology::MeshShape& mesh, const topology::DeviceSpec& d,
                            topology::DataType type);

}  // namespace placesim::strategies::cost

#endif  // PLACESIM_STRATEGIES_COST_KERNEL_MODEL_H_
