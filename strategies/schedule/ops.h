// The op IR of a training step: what BuildSchedules (strategies/schedule.h) emits and the
// executor (sim/executor) replays. A Schedule is the work of one pipeline stage's ranks as a
// DAG of plain ops; durations are not part of it (the device that runs an op decides them).
//
// Invariants of a built Schedule (checked by tests/strategies/schedule_test.cc):
//   - every dependency of op i has an index < i, so index order is a topological order; ops
//     of one stream run in index order, and deps name only what the stream order does not.
//   - every kFree names its kAlloc (same bytes, tag and memory space).
//   - a kRecv's match is the index of its send in the schedule of stage peer_stage.
// Units: Flops and Bytes (base/units.h). Thread-safety: plain values.
#ifndef PLACESIM_STRATEGIES_SCHEDULE_OPS_H_
#define PLACESIM_STRATEGIES_SCHEDULE_OPS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/units.h"
#include "strategies/plan.h"
#include "strategies/spec.h"
#include "topology/mesh.h"

namespace placesim::strategies {

// kRecv: the arrival of a point-to-point transfer from another pipeline stage. It takes no
// time of its own: it finishes when the matching send (Op::match in the schedule of stage
// Op::peer_stage) has delivered its bytes, and the compute that reads the data depends on it.
// Blocking exchange: a pipeline send on the stream of the stage's program (kCompute; see
// ScheduleOptions::blocking_p2p) is a rendezvous. The pipeline sends and receives adjacent in
// one stream's order form one exchange, posted together when the stream reaches it (once the
// sends' deps are done); a send's transfer starts once both its exchange and its receive's are
// posted, and the stream resumes when every transfer of its exchange has finished. A receive
// of such a send waits, at its place in its stream, for that exchange: its own deps are
// ignored, so it needs none.
enum class OpKind : uint8_t { kCompute, kCollective, kCopy, kHostCompute, kAlloc, kFree, kRecv };
const char* OpKindName(OpKind k);  // "compute", "collective", "copy", "host-compute", ...

// Each stream runs its ops one at a time in index order; streams run concurrently. Each
// communicator has a stream of its own, as each PyTorch process group has its own NCCL stream:
// kComm holds the tensor-, context- and expert-parallel collectives of a layer's passes; kDpComm
// the data-parallel ones (gradient all-reduces and reduce-scatters, ZeRO / FSDP parameter
// all-gathers), so a layer's tensor-parallel collective never queues behind the gradient
// reduction of the layer before it; kP2p the pipeline sends (Megatron-LM's p2p ops), which
// never queue behind either. Streams contend only for the links they share.
enum class Stream : uint8_t { kCompute, kComm, kCopy, kHost, kP2p, kDpComm };
inline constexpr int kNumStreams = 6;
const char* StreamName(Stream s);  // "compute", "comm", "copy", "host", "p2p", "dp-comm"

enum class Phase : uint8_t {
  kStep,  // step-level: static allocs
  kForward,
  kBackwardInput,
  kBackwardWeight,  // also the gradient synchronization
  kRecompute,
  kOptimizer,  // the update and the all-gather of updated parameters
};
const char* PhaseName(Phase p);  // "step", "forward", "backward-input", ...

// NVMe copies go between the device and NVMe through a host bounce buffer; the executor
// models that path.
enum class CopyKind : uint8_t { kDeviceToHost, kHostToDevice, kNvmeRead, kNvmeWrite };
const char* CopyKindName(CopyKind k);  // "d2h", "h2d", "nvme-read", "nvme-write"

// What an Alloc / Free holds.
enum class MemoryTag : uint8_t {
  kParams,          // the resident parameters (full, or this rank's shard)
  kGatheredParams,  // a unit's all-gathered parameters, live from gather to last use
  kGrads,           // the gradient accumulation buffer (full, or this rank's shard)
  kGradBuckets,     // a bucket or unit of full gradients awaiting its reduce-scatter
  kOptimizer,       // optimizer state (and fp32 master weights)
  kActivations,     // activations kept for backward, or rebuilt by recompute
  kCheckpoints,     // the layer inputs kept under full recompute
  kStaging,         // device buffers that stream offloaded states
};
const char* MemoryTagName(MemoryTag t);  // "params", "gathered-params", ...

enum class MemorySpace : uint8_t { kDevice, kHost, kNvme };
const char* MemorySpaceName(MemorySpace m);  // "device", "host", "nvme"

// Which ranks of the collective's axis take part, for the simulator to resolve with the
// rank's coordinate: the whole axis; the shard group (shard_group_size consecutive dp ranks);
// or the replica group (the dp ranks holding the same shard, one per shard group; under
// ep > 1 also the dp / ep ranks holding the same experts, stride ep).
enum class GroupKind : uint8_t { kAxis, kShardGroup, kReplicaGroup };
const char* GroupKindName(GroupKind g);  // "axis", "shard-group", "replica-group"

// Layer of an op that belongs to no transformer layer.
inline constexpr int32_t kNoLayer = -1;
inline constexpr int32_t kEmbeddingLayer = -2;
inline constexpr int32_t kOutputLayer = -3;

struct Op {
  // Fields are ordered by size so that an op takes 104 bytes: a step holds millions of them.
  OpKind kind = OpKind::kCompute;
  Stream stream = Stream::kCompute;
  Phase phase = Phase::kStep;
  // kCollective.
  CollectiveKind collective = CollectiveKind::kAllReduce;
  topology::Axis axis = topology::Axis::kData;
  GroupKind group = GroupKind::kAxis;
  State state = State::kGrads;  // the training state moved (collectives and copies)
  // kCollective on the dp axis: the group also spans the cp axis (gradients and ZeRO shards
  // are synchronized over dp x cp, as in Megatron-LM), its members ordered by (dp, cp) with cp
  // innermost; group_size counts them all. A replica group that spans cp is a dp replica
  // group times the whole cp axis (the experts' under ep, dp / ep x cp ranks).
  bool spans_context = false;
  // kCopy.
  CopyKind copy = CopyKind::kDeviceToHost;
  // kAlloc, kFree.
  MemoryTag tag = MemoryTag::kParams;
  MemorySpace space = MemorySpace::kDevice;
  int32_t layer = kNoLayer;  // 0..L-1, kEmbeddingLayer, kOutputLayer or kNoLayer
  int32_t unit = -1;         // gather / wrap unit, -1 when none
  int32_t micro_batch = -1;  // 0..m-1, -1 for step-level ops
  // The model chunk (virtual pipeline stage, 0..v-1) the op works on; -1 when none.
  int32_t chunk = -1;
  int32_t group_size = 1;  // kCollective
  // Pipeline point-to-point. A send is a kCollective of kind kSendRecv on the pp axis
  // (group_size 2, buffer_bytes = bytes = what it moves): peer_stage is the receiving stage.
  // A kRecv: peer_stage is the sending stage and match the index of the send in its schedule.
  int32_t peer_stage = -1;
  int32_t match = -1;
  int32_t alloc = -1;  // kFree: the index of its Alloc
  // This op starts only after ops deps[deps_begin, deps_end) have finished.
  int32_t deps_begin = 0;
  int32_t deps_end = 0;
  // kCompute, kHostCompute: the work, for a roofline on the device (or host) that runs it.
  Flops flops;
  Bytes bytes_read;
  Bytes bytes_written;
  // kCompute: HBM bytes of the memory-bound kernels between the op's GEMMs (norms, softmax,
  // dropout, activation functions, residual adds; ElementwiseTrafficPerLayer in model.h). They
  // run as kernels of their own, so their time adds to the GEMMs' instead of hiding under it.
  Bytes elementwise_bytes;
  Bytes buffer_bytes;  // kCollective: the full (unsharded) buffer S of the collective
  // kCollective: bytes this device sends (ring volume, as Collective::bytes_per_call);
  // kCopy: bytes moved; kAlloc/kFree: the allocation's size.
  Bytes bytes;
};
static_assert(sizeof(Op) <= 104, "an op grew: a step holds millions of them");

struct Schedule {
  std::string role;   // the plan's rank role ("all ranks", "pp stage 0 (first)", ...)
  int32_t stage = 0;  // the pipeline stage whose ranks run it (0 when pp = 1)
  int64_t ranks = 0;  // ranks that run this schedule (world / pp)
  int64_t micro_batches = 0;
  int64_t units = 0;  // gather / wrap units (embedding, layer groups, output layer)
  std::vector<Op> ops;
  std::vector<int32_t> deps;  // flat; each op names its range

  std::span<const int32_t> DepsOf(size_t op) const {
    const Op& o = ops[op];
    return std::span<const int32_t>(deps).subspan(static_cast<size_t>(o.deps_begin),
                                                  static_cast<size_t>(o.deps_end - o.deps_begin));
  }
};

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_SCHEDULE_OPS_H_
