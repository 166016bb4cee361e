// Names of the op IR's enums (ops.h), as traces and tests print them.
// Thread-safety: pure functions.
#include "strategies/schedule/ops.h"

namespace placesim::strategies {

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kCompute:
      return "compute";
    case OpKind::kCollective:
      return "collective";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kHostCompute:
      return "host-compute";
    case OpKind::kAlloc:
      return "alloc";
    case OpKind::kFree:
      return "free";
    case OpKind::kRecv:
      return "recv";
  }
  return "unknown";
}

const char* StreamName(Stream s) {
  switch (s) {
    case Stream::kCompute:
      return "compute";
    case Stream::kComm:
      return "comm";
    case Stream::kCopy:
      return "copy";
    case Stream::kHost:
      return "host";
    case Stream::kP2p:
      return "p2p";
    case Stream::kDpComm:
      return "dp-comm";
  }
  return "unknown";
}

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kStep:
      return "step";
    case Phase::kForward:
      return "forward";
    case Phase::kBackwardInput:
      return "backward-input";
    case Phase::kBackwardWeight:
      return "backward-weight";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kOptimizer:
      return "optimizer";
  }
  return "unknown";
}

const char* CopyKindName(CopyKind k) {
  switch (k) {
    case CopyKind::kDeviceToHost:
      return "d2h";
    case CopyKind::kHostToDevice:
      return "h2d";
    case CopyKind::kNvmeRead:
      return "nvme-read";
    case CopyKind::kNvmeWrite:
      return "nvme-write";
  }
  return "unknown";
}

const char* MemoryTagName(MemoryTag t) {
  switch (t) {
    case MemoryTag::kParams:
      return "params";
    case MemoryTag::kGatheredParams:
      return "gathered-params";
    case MemoryTag::kGrads:
      return "grads";
    case MemoryTag::kGradBuckets:
      return "grad-buckets";
    case MemoryTag::kOptimizer:
      return "optimizer";
    case MemoryTag::kActivations:
      return "activations";
    case MemoryTag::kCheckpoints:
      return "checkpoints";
    case MemoryTag::kStaging:
      return "staging";
  }
  return "unknown";
}

const char* MemorySpaceName(MemorySpace m) {
  switch (m) {
    case MemorySpace::kDevice:
      return "device";
    case MemorySpace::kHost:
      return "host";
    case MemorySpace::kNvme:
      return "nvme";
  }
  return "unknown";
}

const char* GroupKindName(GroupKind g) {
  switch (g) {
    case GroupKind::kAxis:
      return "axis";
    case GroupKind::kShardGroup:
      return "shard-group";
    case GroupKind::kReplicaGroup:
      return "replica-group";
  }
  return "unknown";
}

}  // namespace placesim::strategies
