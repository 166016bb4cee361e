// Plain, typed descriptions of hardware: devices, nodes, the scale-out fabric and the whole
// cluster. The scenario loader fills these from the user's file (after presets and
// overrides); the topology builders turn a ClusterSpec into a Cluster graph.
//
// Every quantity is a unit type from base/units.h. A zero bandwidth or capacity means "this
// node has none" (e.g. no NVMe), never "unlimited".
// Thread-safety: plain values.
#ifndef PLACESIM_TOPOLOGY_SPEC_H_
#define PLACESIM_TOPOLOGY_SPEC_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"

namespace placesim::topology {

// Numeric formats a device computes in. Peak rates are dense (no structured sparsity).
enum class DataType { kFp32, kTf32, kBf16, kFp16, kFp8 };
inline constexpr int kNumDataTypes = 5;
const char* DataTypeName(DataType t);  // "fp32", "tf32", "bf16", "fp16", "fp8"

// The fused attention kernel a training stack runs (training.attention_kernel). Each device
// profile says which one its stack runs by default and carries a profile per kernel.
enum class AttentionKernel {
  kDeviceDefault,    // the device's own default (KernelProfile::default_attention)
  kCudnn,            // cuDNN fused attention (Transformer Engine's on Hopper), sm80 or newer
  kFlashAttention2,  // FlashAttention-2 (the flash-attn package, PyTorch SDPA's flash), sm80+
};
inline constexpr int kNumAttentionKernels = 3;
const char* AttentionKernelName(AttentionKernel k);  // "device default", "cuDNN", ...

// One fused causal attention kernel on one device: the fraction of the 16-bit peak its
// forward and backward sustain on the work they do (causal masking skips half the score
// blocks) at long sequences, and the keys per query at which each reaches half of it (short
// sequences leave the SMs and the softmax pipeline underused).
//
// Head width: a kernel is compiled for a few head widths and runs a head of width d as the
// narrowest of them that holds d (kAttentionHeadWidths; a head of 80 does the work of 96).
// The efficiencies above are at width 128; `width_forward[i]` and `width_backward[i]` scale
// them at kAttentionHeadWidths[i] (1 at 128), measured per kernel (docs/calibration.md,
// "Attention against head width").
inline constexpr std::array<int64_t, 6> kAttentionHeadWidths{32, 64, 96, 128, 192, 256};
using AttentionWidthFactors = std::array<double, kAttentionHeadWidths.size()>;
inline constexpr AttentionWidthFactors kNoWidthEffect{1, 1, 1, 1, 1, 1};

struct AttentionProfile {
  double forward_efficiency = 0.0;
  double backward_efficiency = 0.0;
  int64_t half_saturation_keys_forward = 0;
  int64_t half_saturation_keys_backward = 0;
  AttentionWidthFactors width_forward = kNoWidthEffect;
  AttentionWidthFactors width_backward = kNoWidthEffect;

  bool present() const { return forward_efficiency > 0 && backward_efficiency > 0; }
};

// The device's kernel model (strategies/cost/kernel_model.h), calibrated on microbenchmarks
// (docs/calibration.md): what a GEMM or an attention kernel of a given shape reaches. A
// profile with sms == 0 is absent: every GEMM then runs at DeviceSpec::matmul_efficiency.
struct KernelProfile {
  int sms = 0;  // streaming multiprocessors (the wave size of a GEMM's tiles)
  // GEMM tile edge: M and N are padded up to a multiple of it (tile quantization).
  int tile = 128;
  // Whether the last partial wave of tiles costs a whole wave (wave quantization). Libraries
  // with stream-K / split-K scheduling (cuBLAS 12 on Hopper and Blackwell) spread it instead.
  bool wave_quantization = false;
  // Fraction of the dense peak a GEMM of typical training shapes sustains once it is large
  // (the saturated efficiency), per DataType; 0 = use matmul_efficiency for that type.
  std::array<double, kNumDataTypes> gemm_efficiency{};
  // Fraction of HBM bandwidth a GEMM streams its operands at when memory-bound (thin shapes).
  double gemm_memory_efficiency = 0.0;
  // Fixed cost of one GEMM or attention kernel (launch, prologue, epilogue).
  Duration kernel_launch;
  // Fused attention per kernel, indexed by AttentionKernel (the kDeviceDefault slot unused);
  // an absent entry is a kernel the device does not run (or that placesim has no figures for).
  std::array<AttentionProfile, kNumAttentionKernels> attention{};
  // The fused kernel a scenario that names none runs on this device; kDeviceDefault = none
  // (the attention core runs as batched GEMMs).
  AttentionKernel default_attention = AttentionKernel::kDeviceDefault;

  // The profile of `kernel` (kDeviceDefault: of default_attention); nullptr when absent.
  const AttentionProfile* Attention(AttentionKernel kernel) const;
  bool present() const { return sms > 0; }
};

struct DeviceSpec {
  std::string name;         // preset name, e.g. "H100-SXM-80GB"
  std::string description;  // one line
  std::string source;       // datasheet the figures come from
  Bytes hbm_capacity;
  Bandwidth hbm_bandwidth;
  // Peak dense rate per DataType (index by static_cast<int>(DataType)); zero = unsupported.
  std::array<FlopRate, kNumDataTypes> peak{};
  // Fraction of peak that large matrix multiplies reach in practice (the simulator's compute
  // model); documented per preset and overridable.
  double matmul_efficiency = 0.0;
  // Fraction of HBM bandwidth that memory-bound kernels reach.
  double memory_efficiency = 0.0;
  // Fixed cost added to every kernel (launch and tail effects).
  Duration kernel_overhead;
  // Shape-aware kernel model; absent on devices not from a calibrated preset.
  KernelProfile kernels;
  // Board power limit (TDP / TBP) from the datasheet, and the draw of an idle but powered GPU
  // (an assumption, see presets.cc); used only by the energy figures (sim/economics). Zero =
  // unknown (a device not from a preset).
  Power tdp;
  Power idle_power;

  FlopRate Peak(DataType t) const { return peak[static_cast<int>(t)]; }
};

// One server (or one scale-up domain such as an NVL72 rack): its GPUs on NVLink/NVSwitch,
// PCIe switches to the host, host memory and CPU, NVMe, and scale-out NICs.
struct NodeSpec {
  std::string name;
  std::string description;
  std::string source;
  DeviceSpec gpu;
  int gpus = 0;
  // Scale-up: every GPU connects to the NVSwitch plane with this much bandwidth per direction.
  Bandwidth nvlink_bandwidth;  // per GPU, per direction
  Duration nvlink_latency;
  int nvswitches = 0;  // physical chips, shown in summaries; modeled as one switching plane
  // PCIe: GPUs and NICs hang off PCIe switches, which connect to the host root complex.
  int pcie_switches = 0;
  Bandwidth pcie_bandwidth;  // per x16 link, per direction
  Duration pcie_latency;
  // Host.
  Bytes host_memory;
  Bandwidth host_memory_bandwidth;
  FlopRate host_flops;  // CPU rate for offloaded optimizer steps (fp32)
  // Local NVMe (all drives together).
  Bytes nvme_capacity;
  Bandwidth nvme_bandwidth;  // aggregate read bandwidth
  // Scale-out network interfaces.
  int nics = 0;
  Bandwidth nic_bandwidth;  // per NIC, per direction
  Duration nic_latency;
};

enum class FabricKind {
  kSingleNode,     // nodes == 1, no scale-out switches
  kFatTree,        // two-level leaf/spine; NICs of a node spread over leaves in order
  kRailOptimized,  // NIC i of every node goes to rail i's leaf; leaves joined by spines
  kExplicit,       // the scenario lists every vertex and link itself
  kClos,           // three tiers: leaves and spines per pod, core switches between pods
};
const char* FabricKindName(FabricKind k);

struct FabricSpec {
  FabricKind kind = FabricKind::kSingleNode;
  // Ports of one leaf/spine switch (e.g. 64 for a Quantum-2 class switch).
  int switch_radix = 64;
  // Leaf downlink to uplink bandwidth ratio: 1.0 = non-blocking, 2.0 = 2:1 oversubscribed.
  double oversubscription = 1.0;
  // Bandwidth of one switch port / cable; zero means "same as the node's NIC".
  Bandwidth link_bandwidth;
  Duration switch_latency;
  // kClos only. Nodes per pod (a pod is a two-level leaf/spine fabric); >= 1. The last pod
  // may be partly filled.
  int pod_nodes = 0;
  // kClos only. Pod down:up ratio at the spines, >= 1: every spine-core cable carries
  // link_bandwidth / pod_oversubscription (build.cc says why bandwidth, not cable count).
  double pod_oversubscription = 1.0;
};

// Kinds of vertices in the cluster graph.
enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kNic, kHostMemory, kNvme, kSwitch };
const char* VertexKindName(VertexKind k);

// Kinds of links, for statistics and summaries.
enum class LinkKind { kNvlink, kPcie, kNetwork, kFabric, kMemory };
const char* LinkKindName(LinkKind k);

// For FabricKind::kExplicit: the user's own graph.
struct ExplicitVertex {
  std::string name;  // unique
  VertexKind kind = VertexKind::kGpu;
  int node = 0;  // which node the vertex belongs to (for host memory and rank placement)
};
struct ExplicitLink {
  std::string from;  // vertex names
  std::string to;
  LinkKind kind = LinkKind::kNetwork;
  Bandwidth bandwidth;  // per direction
  Duration latency;
  bool full_duplex = true;  // true adds both directions with the same bandwidth
};

struct ClusterSpec {
  NodeSpec node;  // every node is the same; heterogeneous clusters use kExplicit
  int nodes = 1;
  FabricSpec fabric;
  std::vector<ExplicitVertex> vertices;  // kExplicit only
  std::vector<ExplicitLink> links;       // kExplicit only
};

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_SPEC_H_
