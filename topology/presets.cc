// Built-in device and node presets with their public datasheet figures.
//
// Conventions used for every figure below:
//   * Peak FLOP/s are DENSE (no 2:4 structured sparsity). NVIDIA datasheets print tensor-core
//     rates "with sparsity"; the dense rate is half of that. fp32 is the non-tensor (CUDA
//     core) rate on NVIDIA parts and the matrix-core rate on MI300X. Zero = unsupported.
//   * Bandwidths are per direction. NVLink and NVLink-C2C are marketed as bidirectional
//     totals (e.g. 900 GB/s on H100), so the per-direction figure is half of it.
//   * SI units throughout (1 GB = 1e9 bytes; 1 TB/s = 1e12 bytes/s), as the datasheets use.
//
// Compute-model defaults (kernels, matmul_efficiency, memory_efficiency, kernel_overhead) are
// the simulator's own calibration on microbenchmarks, not vendor figures and never fitted to
// end-to-end training runs (docs/calibration.md); every scenario can override them. The
// simulator charges a layer's GEMMs and attention through the kernel model (`kernels`, see
// the profiles below and strategies/cost/kernel_model.h) and the memory-bound kernels between
// them (norms, softmax, dropout, activations; strategies/model.h) at memory_efficiency of HBM
// bandwidth, one after the other:
//   * matmul_efficiency: the profile's saturated bf16 (V100: fp16) GEMM efficiency, used as
//     is only where the kernel model has no figure (a type without one, e.g. tf32) and by
//     tools that want one flat number. A scenario that sets it turns the kernel model off
//     for its device: every GEMM then runs at that fraction of peak, whatever its shape.
//     MI300X keeps 0.38 (about half of its 1307 TF in 2024 measurements, e.g. SemiAnalysis,
//     "MI300X vs H100 vs H200 Benchmark", Dec 2024, times the 0.76 ratio of training to
//     large-GEMM efficiency placesim used before its kernel model) and has no profile.
//   * memory_efficiency: fraction of HBM peak a streaming kernel sustains. Measured on H100
//     SXM: a 1-4 GiB device-to-device copy moves 3.01-3.03 TB/s counting bytes read and
//     written (0.90 of 3.35); H200 4.27-4.29 of 4.8 TB/s by the same copy at 1-4 GiB
//     (measured 2026-11-27) -> 0.89. Other NVIDIA parts keep 0.85 (STREAM-like copies reach ~85-90%
//     on HBM), MI300X 0.8.
//   * kernel_overhead: launch plus tail cost per op (its memory-bound kernels) without
//     CUDA/HIP graphs, ~4 us on NVIDIA and ~6 us on ROCm, the order measured by small-kernel
//     launch benchmarks (on H100 here: 7.3 us a kernel for back-to-back one-element PyTorch
//     adds, bound by host dispatch; the GEMM fit's fixed cost is 4 us).
//
// Power (used only for the energy figures, docs/economics.md):
//   * tdp: the datasheet's maximum board power: A100 SXM 400 W ("Max thermal design power");
//     H100 SXM and H200 SXM "up to 700 W (configurable)"; B200 1,000 W (the HGX configuration
//     the preset models) and 1,200 W in GB200 NVL72 (its description); MI300X 750 W ("total
//     board power, peak", AMD data sheet).
//   * idle_power: ASSUMPTION, 10% of tdp for every part: a powered GPU that holds its
//     memory and clocks between kernels without running any. No datasheet states it; it is a
//     round figure of the order nvidia-smi reports for idle SXM parts (tens of watts), not a
//     measurement. Scenarios override both (economics.gpu_tdp_watts, economics.gpu_idle_watts).
//
// Node-level figures not printed on datasheets are derived and the derivation is stated
// next to them (host FLOP/s = cores x FLOP/cycle x base clock; DRAM bandwidth = channels x
// transfer rate x 8 bytes; PCIe x16 = 32 GB/s per direction at Gen4, 64 GB/s at Gen5).
// Latencies are per link hop of the cluster graph (see cluster.h): 0.5 us for an NVLink or
// PCIe hop (a switch traversal plus DMA setup share), 2 us for a NIC hop (RDMA send/receive
// processing). They are order-of-magnitude defaults for the alpha term of the network model,
// overridable per scenario.
//
// Thread-safety: the catalogues are function-local statics built once (C++ guarantees
// thread-safe initialisation) and never modified.
#include "topology/presets.h"

#include <fmt/format.h>

#include <array>
#include <optional>

#include "base/check.h"
#include "base/suggest.h"

namespace placesim::topology {
namespace {

std::array<FlopRate, kNumDataTypes> Peaks(double fp32_tf, double tf32_tf, double bf16_tf,
                                          double fp16_tf, double fp8_tf) {
  std::array<FlopRate, kNumDataTypes> p{};
  p[static_cast<int>(DataType::kFp32)] = TeraFlopRate(fp32_tf);
  p[static_cast<int>(DataType::kTf32)] = TeraFlopRate(tf32_tf);
  p[static_cast<int>(DataType::kBf16)] = TeraFlopRate(bf16_tf);
  p[static_cast<int>(DataType::kFp16)] = TeraFlopRate(fp16_tf);
  p[static_cast<int>(DataType::kFp8)] = TeraFlopRate(fp8_tf);
  return p;
}

// Kernel profiles (strategies/cost/kernel_model.h), calibrated on GEMM and attention
// microbenchmarks only; docs/calibration.md holds the measurements and the sources.
//   H100: measured on one H100 80GB HBM3 SXM (132 SMs, driver 580.159.04, PyTorch 2.11 +
//     CUDA 13.0, cuBLAS through torch.mm / torch._scaled_mm, cuDNN 9.19 fused attention) at
//     sustained (power-limited, ~685 W, 1.3-1.6 GHz) clocks, 123 GEMM shapes (M 128..16384
//     by the N x K of 4096- and 12288-wide layers, and squares), each the mean of two shuffled
//     passes: saturated efficiency 0.70 bf16 and 0.61 fp8, operands streamed at 0.80 of HBM
//     when memory-bound, 6 us fixed cost per kernel; no wave quantization (cuBLAS 12 spreads
//     the last wave: the rates show no step at multiples of 132 tiles). Fused causal
//     attention (cuDNN, the kernel Transformer Engine runs on Hopper): forward 0.64 and
//     backward 0.55 of the bf16 peak at long sequences, half of that at 384 / 768 keys.
//   H200 SXM, measured 2026-11-27 the same way (scripts/gemm_sustained.py, 114 shapes over
//     35 us, power-limited at ~690 W, 1.4-1.5 GHz): saturated efficiency 0.68 bf16 and 0.61
//     fp8, the least mean |error| on a 0.01 grid, the rest as the H100's. Its attention
//     (scripts/attention_headdim.py) is the H100's within 12% at every point: the H100
//     profiles are kept.
//   Other parts, FALLBACK where nothing was measured here: the H100 ratio of typical-shape
//     to best-shape efficiency (0.70 / 0.803 = 0.87 bf16, 0.61 / 0.709 = 0.86 fp8) times each
//     part's published Maximum Achievable Matmul FLOPS (S. Bekman, "Machine Learning Engineering",
//     compute/accelerator/README.md, MAMF table: A100 SXM 271.2 of 312 bf16; H100 SXM 794.5
//     of 989, fp8 1402.6 of 1979; B200 1745.0 of 2250, fp8 3432.5 of 4500; GB200 1822.0 of
//     2500, fp8 3615.6 of 5000): A100 0.76; B200 0.68 / 0.66; B200-NVL72 0.64 / 0.62. The
//     rule gave the H200 (MAMF bf16 "the same" as H100, fp8 1453.4) 0.70 / 0.63, two points
//     above its measured 0.68 / 0.61. V100 has no published MAMF row: it takes the A100's
//     0.76 (fp16). Ampere and Volta cuBLAS quantize waves (NVIDIA,
//     "Matrix Multiplication Background User's Guide", section 3.2); the tile edge is 128
//     (its section 2.3, typical cuBLAS tiles). MI300X has no profile.
//   Attention, per kernel (docs/calibration.md, "Attention kernels per device"; the default
//     is the kernel a scenario that names none runs):
//     H100  cuDNN (default) as above; FlashAttention-2 (SDPA's FLASH_ATTENTION backend, same
//           run) fitted by scripts/attention-fit.py: forward 0.35, half at 384 keys, backward
//           0.30, half at 896.
//     H200  the H100's (same GH100 die and clocks), checked on an H200 (above).
//     A100  FlashAttention-2 (default) from its paper (Dao 2023, arXiv 2307.08691, abstract:
//           "50-73% of the theoretical maximum FLOPs/s on A100"): forward 0.73, backward
//           0.50, the H100 cuDNN half-saturation points; cuDNN, not measured on an A100 here,
//           takes the same figures (FALLBACK).
//     B200, B200-NVL72  cuDNN (default) and FlashAttention-2: the H100 kernel's ratio of
//           attention to GEMM efficiency (cuDNN 0.64 / 0.70 and 0.55 / 0.70, FlashAttention-2
//           0.35 / 0.70 and 0.30 / 0.70) times the part's e_gemm, truncated to two places,
//           the H100 kernel's half-saturation points (FALLBACK).
//     V100  neither (both kernels need sm80 or newer): the attention core runs as GEMMs.
//   Head-width factors (widths 32, 64, 96, 128, 192, 256; topology/spec.h), per kernel,
//     forward and backward, measured on the H100 (scripts/attention_headdim.py, fitted by
//     scripts/attention-width-fit.py: the geometric mean over s = 1024..8192 of the efficiency
//     at that width over the efficiency at 128, same sitting). Every other device's profile
//     takes its kernel's H100 factors: checked on the H200 (above), a FALLBACK elsewhere.
constexpr AttentionWidthFactors kH100CudnnWidthForward{0.37, 0.73, 0.78, 1.00, 1.05, 1.09};
constexpr AttentionWidthFactors kH100CudnnWidthBackward{0.43, 0.79, 0.81, 1.00, 0.68, 0.79};
constexpr AttentionWidthFactors kH100Flash2WidthForward{0.59, 0.87, 0.99, 1.00, 0.94, 0.96};
constexpr AttentionWidthFactors kH100Flash2WidthBackward{0.69, 0.90, 0.88, 1.00, 0.92, 0.88};

constexpr AttentionProfile Cudnn(double forward, double backward) {
  return {forward, backward, 384, 768, kH100CudnnWidthForward, kH100CudnnWidthBackward};
}
constexpr AttentionProfile FlashAttention2(double forward, double backward, int64_t half_bwd) {
  return {forward, backward, 384, half_bwd, kH100Flash2WidthForward, kH100Flash2WidthBackward};
}

constexpr AttentionProfile kH100Cudnn = Cudnn(0.64, 0.55);
constexpr AttentionProfile kH100FlashAttention2 = FlashAttention2(0.35, 0.30, 896);
constexpr AttentionProfile kA100FlashAttention2 = FlashAttention2(0.73, 0.50, 768);

KernelProfile Kernels(int sms, bool waves, double e16, double e8, AttentionKernel default_attention,
                      const AttentionProfile& cudnn, const AttentionProfile& flash2) {
  KernelProfile k;
  k.sms = sms;
  k.tile = 128;
  k.wave_quantization = waves;
  k.gemm_efficiency[static_cast<int>(DataType::kBf16)] = e16;
  k.gemm_efficiency[static_cast<int>(DataType::kFp16)] = e16;
  k.gemm_efficiency[static_cast<int>(DataType::kFp8)] = e8;
  k.gemm_memory_efficiency = 0.80;
  k.kernel_launch = Microseconds(6);
  k.attention[static_cast<int>(AttentionKernel::kCudnn)] = cudnn;
  k.attention[static_cast<int>(AttentionKernel::kFlashAttention2)] = flash2;
  k.default_attention = default_attention;
  return k;
}

// The Ampere and Volta parts (A100 80/40 GB, V100 16/32 GB).
void AddAmpereAndVoltaDevices(std::vector<DeviceSpec>& d) {
  // NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column): FP32 19.5 TF; TF32 156 TF
  // (312 with sparsity); BF16/FP16 312 TF (624 with sparsity); no FP8; 80 GB HBM2e at
  // 2,039 GB/s.
  d.push_back({.name = "A100-SXM-80GB",
               .description = "NVIDIA A100 80GB SXM4 (Ampere)",
               .source = "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column",
               .hbm_capacity = GB(80),
               .hbm_bandwidth = GBps(2039),
               .peak = Peaks(19.5, 156, 312, 312, 0),
               .matmul_efficiency = 0.76,
               .memory_efficiency = 0.85,
               .kernel_overhead = Microseconds(4),
               .kernels = Kernels(108, true, 0.76, 0, AttentionKernel::kFlashAttention2,
                                  kA100FlashAttention2, kA100FlashAttention2),
               .tdp = Watts(400),
               .idle_power = Watts(40)});

  // NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM column): the same compute as the
  // 80GB part (same GA100 die and clocks); 40 GB HBM2 at 1,555 GB/s; 400 W.
  d.push_back({.name = "A100-SXM-40GB",
               .description = "NVIDIA A100 40GB SXM4 (Ampere)",
               .source = "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column",
               .hbm_capacity = GB(40),
               .hbm_bandwidth = GBps(1555),
               .peak = Peaks(19.5, 156, 312, 312, 0),
               .matmul_efficiency = 0.76,
               .memory_efficiency = 0.85,
               .kernel_overhead = Microseconds(4),
               .kernels = Kernels(108, true, 0.76, 0, AttentionKernel::kFlashAttention2,
                                  kA100FlashAttention2, kA100FlashAttention2),
               .tdp = Watts(400),
               .idle_power = Watts(40)});

  // NVIDIA Tesla V100 GPU datasheet (V100 SXM2 column): FP32 15.7 TF; Tensor (fp16 inputs,
  // fp32 accumulate) 125 TF; no bf16, tf32 or fp8 (Volta has none); 16 or 32 GB HBM2 at
  // 900 GB/s; 300 W.
  for (const int gb : {16, 32}) {
    d.push_back({.name = fmt::format("V100-SXM2-{}GB", gb),
                 .description = fmt::format("NVIDIA Tesla V100 {}GB SXM2 (Volta)", gb),
                 .source = "NVIDIA Tesla V100 GPU datasheet, V100 SXM2 column",
                 .hbm_capacity = GB(gb),
                 .hbm_bandwidth = GBps(900),
                 .peak = Peaks(15.7, 0, 0, 125, 0),
                 .matmul_efficiency = 0.76,
                 .memory_efficiency = 0.85,
                 .kernel_overhead = Microseconds(4),
                 .kernels = Kernels(80, true, 0.76, 0, AttentionKernel::kDeviceDefault, {}, {}),
                 .tdp = Watts(300),
                 .idle_power = Watts(30)});
  }
}

// The Hopper, Blackwell and AMD parts.
void AddHopperAndLaterDevices(std::vector<DeviceSpec>& d) {
  // NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): FP32 67 TF; TF32 989 TF,
  // BF16/FP16 1,979 TF, FP8 3,958 TF, all "with sparsity", hence dense 494.7 / 989.4 /
  // 1,978.9 TF; 80 GB HBM3 at 3.35 TB/s.
  d.push_back({.name = "H100-SXM-80GB",
               .description = "NVIDIA H100 80GB SXM5 (Hopper)",
               .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column "
                         "(tensor rates halved from the with-sparsity figures)",
               .hbm_capacity = GB(80),
               .hbm_bandwidth = GBps(3350),
               .peak = Peaks(67, 494.7, 989.4, 989.4, 1978.9),
               .matmul_efficiency = 0.70,
               .memory_efficiency = 0.90,
               .kernel_overhead = Microseconds(4),
               .kernels = Kernels(132, false, 0.70, 0.61, AttentionKernel::kCudnn, kH100Cudnn,
                                  kH100FlashAttention2),
               .tdp = Watts(700),
               .idle_power = Watts(70)});

  // NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column): the same compute as H100 SXM
  // (same GH100 die and clocks); 141 GB HBM3e at 4.8 TB/s.
  d.push_back({.name = "H200-SXM-141GB",
               .description = "NVIDIA H200 141GB SXM5 (Hopper, HBM3e)",
               .source = "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column "
                         "(tensor rates halved from the with-sparsity figures)",
               .hbm_capacity = GB(141),
               .hbm_bandwidth = GBps(4800),
               .peak = Peaks(67, 494.7, 989.4, 989.4, 1978.9),
               .matmul_efficiency = 0.68,
               .memory_efficiency = 0.89,
               .kernel_overhead = Microseconds(4),
               .kernels = Kernels(132, false, 0.68, 0.61, AttentionKernel::kCudnn, kH100Cudnn,
                                  kH100FlashAttention2),
               .tdp = Watts(700),
               .idle_power = Watts(70)});

  // NVIDIA HGX B200 specifications, per GPU (1,000 W configuration): FP32 75 TF (600 TF per
  // 8-GPU board); TF32 2.2 PF, BF16/FP16 4.5 PF, FP8 9 PF with sparsity, hence dense 1.1 /
  // 2.25 / 4.5 PF; 180 GB HBM3e (1,440 GB per board) at 7.7 TB/s.
  d.push_back({.name = "B200",
               .description = "NVIDIA B200 180GB SXM (Blackwell, HGX 1000 W configuration)",
               .source = "NVIDIA HGX B200 / DGX B200 datasheet, per-GPU figures "
                         "(tensor rates halved from the with-sparsity figures)",
               .hbm_capacity = GB(180),
               .hbm_bandwidth = GBps(7700),
               .peak = Peaks(75, 1100, 2250, 2250, 4500),
               .matmul_efficiency = 0.68,
               .memory_efficiency = 0.85,
               .kernel_overhead = Microseconds(4),
               .kernels = Kernels(148, false, 0.68, 0.66, AttentionKernel::kCudnn,
                                  Cudnn(0.62, 0.53), FlashAttention2(0.34, 0.29, 896)),
               .tdp = Watts(1000),
               .idle_power = Watts(100)});

  // The Blackwell GPU of a GB200 superchip runs at a higher power limit (1,200 W). NVIDIA
  // GB200 NVL72 specifications, rack totals for 72 GPUs: FP32 5,760 TF; TF32 180 PF,
  // BF16/FP16 360 PF, FP8 720 PF with sparsity; 13.4 TB HBM3e at 576 TB/s. Per GPU, dense:
  // 80 TF fp32, 1.25 PF tf32, 2.5 PF bf16, 5 PF fp8, 186 GB, 8 TB/s.
  d.push_back({.name = "B200-NVL72",
               .description = "NVIDIA Blackwell GPU of a GB200 superchip (NVL72, 1200 W)",
               .source = "NVIDIA GB200 NVL72 specifications, rack totals divided by 72 "
                         "(tensor rates halved from the with-sparsity figures)",
               .hbm_capacity = GB(186),
               .hbm_bandwidth = GBps(8000),
               .peak = Peaks(80, 1250, 2500, 2500, 5000),
               .matmul_efficiency = 0.64,
               .memory_efficiency = 0.85,
               .kernel_overhead = Microseconds(4),
               .kernels = Kernels(148, false, 0.64, 0.62, AttentionKernel::kCudnn,
                                  Cudnn(0.58, 0.50), FlashAttention2(0.32, 0.27, 896)),
               .tdp = Watts(1200),
               .idle_power = Watts(120)});

  // AMD Instinct MI300X data sheet: FP32 matrix 163.4 TF; TF32 653.7 TF, FP16/BF16
  // 1,307.4 TF, FP8 2,614.9 TF dense (the sheet lists sparsity figures separately, at twice
  // these); 192 GB HBM3 at 5.3 TB/s.
  d.push_back({.name = "MI300X",
               .description = "AMD Instinct MI300X 192GB OAM (CDNA 3)",
               .source = "AMD Instinct MI300X accelerator data sheet (dense figures)",
               .hbm_capacity = GB(192),
               .hbm_bandwidth = GBps(5300),
               .peak = Peaks(163.4, 653.7, 1307.4, 1307.4, 2614.9),
               .matmul_efficiency = 0.38,
               .memory_efficiency = 0.80,
               .kernel_overhead = Microseconds(6),
               .kernels = {},  // no profile: GEMMs at matmul_efficiency
               .tdp = Watts(750),
               .idle_power = Watts(75)});
}

std::vector<DeviceSpec> MakeDevices() {
  std::vector<DeviceSpec> d;
  AddAmpereAndVoltaDevices(d);
  AddHopperAndLaterDevices(d);
  return d;
}

// Per-drive sequential read of a PCIe Gen4 U.2/E1.S enterprise NVMe drive (e.g. the
// 3.84 TB class used in DGX systems): about 6.5 GB/s. Aggregate = drives x 6.5 GB/s.
constexpr double kNvmeDriveGBps = 6.5;

// A GPU preset by name. REQUIRES: it exists (node presets name only built-in GPUs).
DeviceSpec PresetDevice(std::string_view name) {
  const DeviceSpec* d = FindDevicePreset(name);
  PLACESIM_CHECK(d != nullptr);
  return *d;
}

NodeSpec DgxA100() {
  // NVIDIA DGX A100 datasheet and DGX A100 User Guide (640 GB system): 8x A100 80GB; 6
  // NVSwitches, 600 GB/s bidirectional NVLink per GPU (300 GB/s per direction); 8
  // single-port ConnectX-6 200 Gb/s HDR InfiniBand NICs for compute (the storage NICs are
  // not modeled); 4 PCIe Gen4 switches, each with 2 GPUs and 2 NICs; 2 TB DDR4; dual AMD
  // EPYC 7742 (64 cores, 2.25 GHz base); 30 TB internal NVMe (8x 3.84 TB U.2).
  //   host memory bandwidth: 2 sockets x 8 channels x DDR4-3200 (25.6 GB/s) = 409.6 GB/s
  //   host FLOP/s: 128 cores x 32 fp32 FLOP/cycle (2x 256-bit FMA) x 2.25 GHz = 9.216 TF
  return {.name = "DGX-A100",
          .description = "NVIDIA DGX A100 640GB: 8x A100-SXM-80GB, NVSwitch, 8x HDR 200G",
          .source =
              "NVIDIA DGX A100 datasheet; NVIDIA DGX A100 User Guide (hardware "
              "overview)",
          .gpu = PresetDevice("A100-SXM-80GB"),
          .gpus = 8,
          .nvlink_bandwidth = GBps(300),
          .nvlink_latency = Microseconds(0.5),
          .nvswitches = 6,
          .pcie_switches = 4,
          .pcie_bandwidth = GBps(32),
          .pcie_latency = Microseconds(0.5),
          .host_memory = TB(2),
          .host_memory_bandwidth = GBps(409.6),
          .host_flops = TeraFlopRate(9.216),
          .nvme_capacity = TB(8 * 3.84),
          .nvme_bandwidth = GBps(8 * kNvmeDriveGBps),
          .nics = 8,
          .nic_bandwidth = Gbps(200),
          .nic_latency = Microseconds(2)};
}

NodeSpec DgxA100_320GB() {
  // NVIDIA DGX A100 datasheet, 320 GB system: 8x A100 40GB on the same NVSwitch baseboard,
  // NICs, PCIe switches and CPUs as the 640 GB system; 1 TB DDR4 and 15 TB NVMe (4x 3.84 TB).
  NodeSpec n = DgxA100();
  n.name = "DGX-A100-320GB";
  n.description = "NVIDIA DGX A100 320GB: 8x A100-SXM-40GB, NVSwitch, 8x HDR 200G";
  n.source = "NVIDIA DGX A100 datasheet (320 GB system column)";
  n.gpu = PresetDevice("A100-SXM-40GB");
  n.host_memory = TB(1);
  n.nvme_capacity = TB(4 * 3.84);
  n.nvme_bandwidth = GBps(4 * kNvmeDriveGBps);
  return n;
}

NodeSpec Dgx2() {
  // NVIDIA DGX-2 datasheet and DGX-2 User Guide: 16x Tesla V100 32GB on two baseboards joined
  // by 12 NVSwitches, every GPU at 300 GB/s bidirectional NVLink (150 GB/s per direction) to
  // every other; 8x 100 Gb/s EDR InfiniBand / 100 GbE NICs for compute; 1.5 TB DDR4; dual
  // Intel Xeon Platinum 8168 (24 cores, 2.7 GHz base); 30 TB NVMe (8x 3.84 TB). PCIe Gen3
  // (16 GB/s per direction per x16): each baseboard has 4 PCIe switches of 2 GPUs and 1 NIC.
  //   host memory bandwidth: 2 sockets x 6 channels x DDR4-2666 (21.3 GB/s) = 256 GB/s
  //   host FLOP/s: 48 cores x 64 fp32 FLOP/cycle (2x 512-bit FMA) x 2.7 GHz = 8.294 TF
  return {.name = "DGX-2",
          .description = "NVIDIA DGX-2: 16x V100-SXM2-32GB, 12 NVSwitches, 8x EDR 100G",
          .source = "NVIDIA DGX-2 datasheet; NVIDIA DGX-2 User Guide (hardware overview)",
          .gpu = PresetDevice("V100-SXM2-32GB"),
          .gpus = 16,
          .nvlink_bandwidth = GBps(150),
          .nvlink_latency = Microseconds(0.5),
          .nvswitches = 12,
          .pcie_switches = 8,
          .pcie_bandwidth = GBps(16),
          .pcie_latency = Microseconds(0.5),
          .host_memory = TB(1.5),
          .host_memory_bandwidth = GBps(256),
          .host_flops = TeraFlopRate(8.294),
          .nvme_capacity = TB(8 * 3.84),
          .nvme_bandwidth = GBps(8 * kNvmeDriveGBps),
          .nics = 8,
          .nic_bandwidth = Gbps(100),
          .nic_latency = Microseconds(2)};
}

NodeSpec DgxH100() {
  // NVIDIA DGX H100 datasheet and DGX H100 User Guide: 8x H100 80GB; 4 NVSwitches, 900 GB/s
  // bidirectional NVLink per GPU (450 GB/s per direction); 8 single-port ConnectX-7
  // 400 Gb/s NICs (compute fabric); PCIe Gen5 (64 GB/s per direction per x16); 2 TB DDR5;
  // dual Intel Xeon Platinum 8480C (56 cores, 2.0 GHz base); 8x 3.84 TB U.2 NVMe data
  // drives. Each GPU is paired with its own ConnectX-7 behind a PCIe switch (the GPU/NIC
  // pairs `nvidia-smi topo -m` reports as PIX), modeled as 8 switches of 1 GPU + 1 NIC, so
  // GPU i's only nearby NIC is NIC i (rail i).
  //   host memory bandwidth: 2 sockets x 8 channels x DDR5-4800 (38.4 GB/s) = 614.4 GB/s
  //   host FLOP/s: 112 cores x 64 fp32 FLOP/cycle (2x 512-bit FMA) x 2.0 GHz = 14.336 TF
  return {.name = "DGX-H100",
          .description = "NVIDIA DGX H100: 8x H100-SXM-80GB, NVSwitch, 8x NDR 400G",
          .source =
              "NVIDIA DGX H100 datasheet; NVIDIA DGX H100/H200 User Guide "
              "(hardware overview)",
          .gpu = PresetDevice("H100-SXM-80GB"),
          .gpus = 8,
          .nvlink_bandwidth = GBps(450),
          .nvlink_latency = Microseconds(0.5),
          .nvswitches = 4,
          .pcie_switches = 8,
          .pcie_bandwidth = GBps(64),
          .pcie_latency = Microseconds(0.5),
          .host_memory = TB(2),
          .host_memory_bandwidth = GBps(614.4),
          .host_flops = TeraFlopRate(14.336),
          .nvme_capacity = TB(8 * 3.84),
          .nvme_bandwidth = GBps(8 * kNvmeDriveGBps),
          .nics = 8,
          .nic_bandwidth = Gbps(400),
          .nic_latency = Microseconds(2)};
}

NodeSpec HgxH200() {
  // An HGX H200 8-GPU server. NVIDIA's reference host is the DGX H200 (DGX H200 datasheet):
  // the DGX H100 chassis, CPUs, 2 TB memory, NICs and drives with 8x H200 141GB on the same
  // 900 GB/s NVLink/NVSwitch baseboard, so every non-GPU figure is DGX H100's.
  NodeSpec hgx_h200 = DgxH100();
  hgx_h200.name = "HGX-H200";
  hgx_h200.description = "8x H200-SXM-141GB on an HGX baseboard, DGX H200 host configuration";
  hgx_h200.source = "NVIDIA DGX H200 datasheet; NVIDIA DGX H100/H200 User Guide";
  hgx_h200.gpu = PresetDevice("H200-SXM-141GB");
  return hgx_h200;
}

NodeSpec Gb200Nvl72() {
  // NVIDIA GB200 NVL72 specifications: one NVLink domain of 72 Blackwell GPUs and 36 Grace
  // CPUs (18 compute trays of 2 GB200 superchips); fifth-generation NVLink at 1.8 TB/s
  // bidirectional per GPU (900 GB/s per direction) through 18 NVLink switch chips (9
  // switch trays x 2); one ConnectX-7 400 Gb/s NIC per GPU (72). Each Grace CPU joins its
  // two GPUs over NVLink-C2C at 900 GB/s bidirectional (450 GB/s per direction); the model
  // represents each Grace's C2C port as one "PCIe switch" (36 of them, 2 GPUs and 2 NICs
  // each) at 450 GB/s. Host memory: 17 TB LPDDR5X at 18.4 TB/s for the rack (36 x 480 GB at
  // 512 GB/s), modeled as one host memory vertex; Grace-to-Grace traffic is not modeled.
  //   host FLOP/s: the Grace CPU Superchip datasheet lists 7.1 TF fp64 peak for 144 cores;
  //   fp32 SIMD lanes are twice as many, so 14.2 TF fp32 per 144 cores = 7.1 TF per 72-core
  //   Grace, x 36 = 255.6 TF.
  //   NVMe: assumed 4x 3.84 TB E1.S per compute tray (18 trays), 6.5 GB/s each.
  return {.name = "GB200-NVL72",
          .description =
              "NVIDIA GB200 NVL72 rack: 72 Blackwell GPUs in one NVLink "
              "domain, 36 Grace CPUs, 72x 400G",
          .source =
              "NVIDIA GB200 NVL72 specifications; NVIDIA Grace CPU Superchip "
              "datasheet (CPU rate)",
          .gpu = PresetDevice("B200-NVL72"),
          .gpus = 72,
          .nvlink_bandwidth = GBps(900),
          .nvlink_latency = Microseconds(0.5),
          .nvswitches = 18,
          .pcie_switches = 36,
          .pcie_bandwidth = GBps(450),
          .pcie_latency = Microseconds(0.5),
          .host_memory = GB(36 * 480),
          .host_memory_bandwidth = GBps(36 * 512),
          .host_flops = TeraFlopRate(36 * 7.1),
          .nvme_capacity = TB(18 * 4 * 3.84),
          .nvme_bandwidth = GBps(18 * 4 * kNvmeDriveGBps),
          .nics = 72,
          .nic_bandwidth = Gbps(400),
          .nic_latency = Microseconds(2)};
}

// AWS instances, calibrated on the nccl-tests all_reduce_perf tables AWS publishes for them
// (aws-samples/awsome-distributed-training commit 0162aacd, micro-benchmarks/nccl-tests/
// README.md, "Results"; docs/data/nccl_tests_all_reduce_{p4de,p5}_2node.csv). Their NICs are
// AWS Elastic Fabric Adapters (SRD transport, NCCL through the aws-ofi-nccl plugin), whose
// per-message latency as NCCL sees it is far above an InfiniBand NIC's 2 us, and on p4de whose
// achievable bandwidth is below the line rate. Both are set from the published curve of the
// same instance (docs/calibration.md, "EFA"), never from a training run:
//   nic_latency = (mean published time, 8 B - 1 KiB  -  24.6 us) / 4: the model's 8 B all-reduce
//     over 2 nodes takes 24.6 us + 4 x nic_latency (64.6 us at 10 us, 104.6 us at 20 us, for
//     either instance), 4 = 2 rail steps of the hierarchical all-reduce x 2 NIC hops per step
//     (the sender's NIC to its leaf, the leaf to the receiver's NIC);
//   nic_bandwidth (p4de) = line rate x (model time at line rate - model time at 8 B)
//                                    / (published time - published small-message time), at 2 GiB.
// Node figures not on AWS's instance pages (CPU clock, DRAM channels) are stated as derived.
NodeSpec AwsP4de() {
  // AWS EC2 P4 instance page (p4de.24xlarge): 8x A100 80GB on NVSwitch (600 GB/s bidirectional
  // per GPU), 4 x 100 Gb/s EFA (400 Gb/s), 96 vCPUs (2x Intel Xeon Platinum 8275CL, 48 cores,
  // 3.0 GHz), 1152 GiB memory, 8 x 1 TB NVMe. Each EFA NIC sits behind a PCIe switch with two
  // GPUs (4 switches of 2 GPUs + 1 NIC).
  //   host memory bandwidth: 2 sockets x 6 channels x DDR4-2933 (23.46 GB/s) = 281.6 GB/s
  //   host FLOP/s: 48 cores x 64 fp32 FLOP/cycle (2x 512-bit FMA) x 3.0 GHz = 9.216 TF
  //   nic_latency: published 8 B - 1 KiB mean 162.31 us -> (162.31 - 24.6) / 4 = 34.43 us.
  //   nic_bandwidth: published 2 GiB 51406 us, small 162.31 us; model at 100 Gb/s 43195.7 us,
  //     at 8 B 162.3 us -> 100 x 43033 / 51244 = 83.98 Gb/s (0.84 of line rate).
  NodeSpec n = DgxA100();
  n.name = "p4de.24xlarge";
  n.description = "AWS p4de.24xlarge: 8x A100-SXM-80GB, NVSwitch, 4x 100G EFA";
  n.source =
      "AWS EC2 P4 instance types page; EFA latency and bandwidth from AWS's nccl-tests "
      "all_reduce_perf table (docs/calibration.md)";
  n.host_memory = GiB(1152);
  n.host_memory_bandwidth = GBps(281.6);
  n.host_flops = TeraFlopRate(9.216);
  n.nvme_capacity = TB(8);
  n.nics = 4;
  n.nic_bandwidth = Gbps(83.98);
  n.nic_latency = Microseconds(34.43);
  return n;
}

NodeSpec AwsP4d() {
  // AWS EC2 P4 instance page (p4d.24xlarge): p4de.24xlarge with 8x A100 40GB; the same NVSwitch
  // baseboard, 4 x 100 Gb/s EFA (the first generation, as p4de's), CPUs, 1152 GiB and 8 x 1 TB
  // NVMe, so its EFA latency and achievable bandwidth are p4de's, not set from any p4d table.
  NodeSpec n = AwsP4de();
  n.name = "p4d.24xlarge";
  n.description = "AWS p4d.24xlarge: 8x A100-SXM-40GB, NVSwitch, 4x 100G EFA";
  n.source =
      "AWS EC2 P4 instance types page; EFA latency and bandwidth as p4de.24xlarge "
      "(docs/calibration.md)";
  n.gpu = PresetDevice("A100-SXM-40GB");
  return n;
}

NodeSpec AwsP5() {
  // AWS EC2 P5 instance page (p5.48xlarge): 8x H100 80GB on NVSwitch (900 GB/s bidirectional
  // per GPU), 32 x 100 Gb/s EFA (second generation, 3200 Gb/s), 192 vCPUs (3rd generation AMD
  // EPYC, 96 cores), 2 TiB memory, 8 x 3.84 TB NVMe. The 32 EFA NICs are 4 per GPU on the GPU's
  // PCIe switch, modeled as one 400 Gb/s NIC per GPU (the DGX-H100 rail layout).
  //   host memory bandwidth: 2 sockets x 8 channels x DDR4-3200 (25.6 GB/s) = 409.6 GB/s
  //   host FLOP/s: 96 cores x 32 fp32 FLOP/cycle (2x 256-bit FMA) x 2.65 GHz (assumed base
  //     clock; AWS does not publish it) = 8.141 TF
  //   nic_latency: published 8 B - 1 KiB mean 71.135 us -> (71.135 - 24.6) / 4 = 11.63 us.
  //   nic_bandwidth stays at line rate: the published curve is NVLink-bound at every size
  //     (docs/calibration.md), so it cannot set EFA's achievable share.
  NodeSpec n = DgxH100();
  n.name = "p5.48xlarge";
  n.description = "AWS p5.48xlarge: 8x H100-SXM-80GB, NVSwitch, 32x 100G EFA";
  n.source =
      "AWS EC2 P5 instance types page; EFA latency from AWS's nccl-tests all_reduce_perf "
      "table (docs/calibration.md)";
  n.host_memory = GiB(2048);
  n.host_memory_bandwidth = GBps(409.6);
  n.host_flops = TeraFlopRate(8.141);
  n.nvme_capacity = TB(8 * 3.84);
  n.nic_latency = Microseconds(11.63);
  return n;
}

std::vector<NodeSpec> MakeNodes() {
  return {DgxA100(), DgxH100(), HgxH200(), Gb200Nvl72(), DgxA100_320GB(),
          Dgx2(),    AwsP4d(),  AwsP4de(), AwsP5()};
}

template <typename T>
std::vector<std::string> Names(const std::vector<T>& items);

// The exact name, else its one case variant (`H100-SXM` for `h100-sxm`); preset names never
// differ only in case, so a variant is unambiguous (UniqueCaseInsensitiveMatch refuses it
// otherwise).
template <typename T>
const T* FindByName(const std::vector<T>& items, std::string_view name) {
  for (const T& t : items) {
    if (t.name == name) return &t;
  }
  std::optional<std::string> variant = UniqueCaseInsensitiveMatch(name, Names(items));
  if (!variant) return nullptr;
  for (const T& t : items) {
    if (t.name == *variant) return &t;
  }
  return nullptr;
}

template <typename T>
std::vector<std::string> Names(const std::vector<T>& items) {
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const T& t : items) out.push_back(t.name);
  return out;
}

}  // namespace

const std::vector<DeviceSpec>& DevicePresets() {
  static const std::vector<DeviceSpec>* const kDevices = new std::vector<DeviceSpec>(MakeDevices());
  return *kDevices;
}

const DeviceSpec* FindDevicePreset(std::string_view name) {
  return FindByName(DevicePresets(), name);
}

std::vector<std::string> DevicePresetNames() { return Names(DevicePresets()); }

const std::vector<NodeSpec>& NodePresets() {
  static const std::vector<NodeSpec>* const kNodes = new std::vector<NodeSpec>(MakeNodes());
  return *kNodes;
}

const NodeSpec* FindNodePreset(std::string_view name) { return FindByName(NodePresets(), name); }

std::vector<std::string> NodePresetNames() { return Names(NodePresets()); }

}  // namespace placesim::topology
