// Names of the hardware-description enums, as they appear in scenario files, summaries and
// error messages. The strings are part of the user interface: keep them stable.
// Thread-safety: pure functions over string literals.
#include "topology/spec.h"

namespace placesim::topology {

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kFp32:
      return "fp32";
    case DataType::kTf32:
      return "tf32";
    case DataType::kBf16:
      return "bf16";
    case DataType::kFp16:
      return "fp16";
    case DataType::kFp8:
      return "fp8";
  }
  return "unknown";
}

const char* AttentionKernelName(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kDeviceDefault:
      return "device default";
    case AttentionKernel::kCudnn:
      return "cuDNN";
    case AttentionKernel::kFlashAttention2:
      return "FlashAttention-2";
  }
  return "unknown";
}

const AttentionProfile* KernelProfile::Attention(AttentionKernel kernel) const {
  const AttentionKernel k = kernel == AttentionKernel::kDeviceDefault ? default_attention : kernel;
  if (k == AttentionKernel::kDeviceDefault) return nullptr;
  const AttentionProfile& p = attention[static_cast<int>(k)];
  return p.present() ? &p : nullptr;
}

const char* FabricKindName(FabricKind k) {
  switch (k) {
    case FabricKind::kSingleNode:
      return "single_node";
    case FabricKind::kFatTree:
      return "fat_tree";
    case FabricKind::kRailOptimized:
      return "rail_optimized";
    case FabricKind::kExplicit:
      return "explicit";
    case FabricKind::kClos:
      return "three_tier_clos";
  }
  return "unknown";
}

const char* VertexKindName(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu:
      return "gpu";
    case VertexKind::kNvSwitch:
      return "nvswitch";
    case VertexKind::kPcieSwitch:
      return "pcie_switch";
    case VertexKind::kNic:
      return "nic";
    case VertexKind::kHostMemory:
      return "host_memory";
    case VertexKind::kNvme:
      return "nvme";
    case VertexKind::kSwitch:
      return "switch";
  }
  return "unknown";
}

const char* LinkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::kNvlink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kNetwork:
      return "network";
    case LinkKind::kFabric:
      return "fabric";
    case LinkKind::kMemory:
      return "memory";
  }
  return "unknown";
}

}  // namespace placesim::topology
