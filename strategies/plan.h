// The analytic plan: what `placesim analyze` derives from a placement specification alone —
// bytes per state per device for every distinct rank role, the collectives and offload
// copies of one optimizer step, the pipeline bubble, FLOPs, and the correctness verdict.
// Built by Analyze (strategies/analyzer.h), printed by strategies/report.h.
//
// Invariants: roles is never empty; largest_role indexes the role with the largest memory
// total; for every role, memory.total is the sum of its parts and comm_bytes is the sum of
// its collectives' total_bytes. A Plan is the same for the same inputs, to the byte.
// Thread-safety: plain values.
#ifndef PLACESIM_STRATEGIES_PLAN_H_
#define PLACESIM_STRATEGIES_PLAN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/units.h"
#include "strategies/spec.h"
#include "topology/mesh.h"

namespace placesim::strategies {

// -------------------------------------------------------------------------- memory
// Per-device bytes resident in device memory (HBM).
struct MemoryBreakdown {
  Bytes params;
  Bytes grads;
  Bytes optimizer;
  Bytes activations;      // at their peak: what is kept for backward plus recompute's working set
  Bytes gather_buffers;   // S*: gathered units in flight (and their full gradients)
  Bytes offload_staging;  // O: device-side buffers that stream offloaded states
  Bytes total;            // the sum of the above
  Bytes capacity;         // the device's HBM
  Bytes headroom;         // capacity - total; negative when it does not fit
  bool fits = false;      // total <= capacity (the GPU tier)
  // Off-device bytes this device's offloaded states occupy.
  Bytes offloaded_host;
  Bytes offloaded_nvme;
  // The other tiers. A node's host memory and NVMe are shared by the job's ranks on it
  // (min(GPUs per node, world)); each device's share is the tier's capacity over them, and the
  // tier fits when every rank's offloaded bytes fit in its share (offloaded x ranks per node
  // <= capacity). A tier with nothing offloaded to it fits, whatever its size.
  Bytes host_capacity;  // this device's share of the node's host memory
  Bytes nvme_capacity;  // this device's share of the node's NVMe
  bool fits_host = true;
  bool fits_nvme = true;

  Bytes model_states() const { return params + grads + optimizer; }
};

// -------------------------------------------------------------------------- communication
enum class CollectiveKind : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kSendRecv,
  kAllToAll,
  kBroadcast
};
const char* CollectiveKindName(CollectiveKind k);  // "all-reduce", "reduce-scatter", ...

// Why the strategy moves these bytes: one value per distinct reason the analyzer emits a
// collective or an offload copy. Consumers key on it (the schedule runs the expert part's
// data-parallel collectives over the expert replica group); `purpose` strings are for people
// and may be reworded. "Expert" values are the expert parameters' part of a data-parallel
// exchange; their dense twins cover the dense part, or every parameter where cp has its own
// placement.
enum class CommPurpose : uint8_t {
  // Data-parallel (dp, cp, or dp x cp) exchanges of model states.
  kGradSync,                  // grads reduced over the group: all-reduce or reduce-scatter
  kExpertGradSync,            // the same for the expert parameters' grads
  kGradReplicaSync,           // reduced grad shards all-reduced across hybrid replica groups
  kExpertGradReplicaSync,     // the same for the expert parameters' grad shards
  kParamGather,               // sharded params all-gathered before use (forward and backward)
  kExpertParamGather,         // the same for the expert parameters
  kUpdatedParamGather,        // replicated params all-gathered after a sharded optimizer step
  kExpertUpdatedParamGather,  // the same for the expert parameters
  // Tensor parallelism (Megatron-LM) and its sequence parallelism.
  kTensorParallelReduce,     // attention and MLP outputs (and input grads) all-reduced
  kSequenceParallelGather,   // sequence shards all-gathered before attention and MLP
  kSequenceParallelScatter,  // attention and MLP outputs reduce-scattered to sequence shards
  kEmbeddingCombine,         // the vocab-parallel embedding's output combined
  // Pipeline parallelism.
  kPipelineActivations,      // activations sent to the next stage
  kPipelineActivationGrads,  // activation grads sent to the previous stage
  kTiedEmbeddingSync,        // tied word-embedding grads all-reduced, first and last stage
  // Context parallelism: keys and values exchanged for attention.
  kContextKvGather,       // K/V all-gathered before every attention pass
  kContextKvGradScatter,  // K/V grads reduce-scattered after the attention backward
  kContextKvRing,         // K/V chunks (and their grads) passed around the ring
  // Expert parallelism.
  kExpertDispatchCombine,  // tokens all-to-all'd to their experts and back
  // Offload copies.
  kActivationOffload,    // activations saved to the offload target in forward
  kActivationReload,     // activations brought back for backward
  kGradToHostOptimizer,  // grad shard copied to the host for the host optimizer step
  kUpdatedParamReturn,   // updated param shard copied back from the host optimizer
  kGradOffload,          // grad shard offloaded after backward
  kGradReload,           // grad shard brought back for the device optimizer step
  kParamFetch,           // offloaded param shard fetched before its all-gather
  // Data-parallel again: the weight matrices DeepSpeed ZeRO-3 released after a layer's full
  // recompute, all-gathered again for its backward (stage3_max_reuse_distance).
  kParamRefetch,
  // Tensor parallel again: a layer's input kept split over tp under full recompute,
  // all-gathered before its recompute (Megatron-LM's --distribute-saved-activations).
  kSavedActivationGather,
};
// A stable identifier: "grad-sync", "expert-grad-sync", ... (kebab case of the value).
const char* CommPurposeName(CommPurpose p);
// True for the expert parameters' part of a data-parallel exchange (the four kExpert*Sync and
// kExpert*Gather values), which runs over the expert replica group when ep > 1.
bool IsExpertPartSync(CommPurpose p);

// One collective as seen by one device, repeated `count` times per optimizer step.
// Ring volumes per device: all-reduce 2(N-1)/N·S, reduce-scatter and all-gather (N-1)/N·S,
// all-to-all (N-1)/N·S, where S = buffer_bytes is the full (unsharded) buffer; send/recv and
// broadcast move S. total_bytes = bytes_per_call * count.
struct Collective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  topology::Axis axis = topology::Axis::kData;
  State state = State::kGrads;
  int group_size = 1;
  Bytes buffer_bytes;
  Bytes bytes_per_call;
  int64_t count = 0;
  Bytes total_bytes;
  CommPurpose reason = CommPurpose::kGradSync;  // why, for programs
  std::string purpose;                          // one line: why the strategy needs it, for people
};

// A PCIe (or NVMe) copy of an offloaded state, per device per step.
enum class CopyDirection { kDeviceToHost, kHostToDevice };
const char* CopyDirectionName(CopyDirection d);  // "d2h", "h2d"
struct OffloadCopy {
  CopyDirection direction = CopyDirection::kDeviceToHost;
  State state = State::kGrads;
  OffloadTarget target = OffloadTarget::kHost;
  Bytes bytes_per_step;
  CommPurpose reason = CommPurpose::kGradOffload;  // why, for programs
  std::string purpose;                             // why, for people
};

// -------------------------------------------------------------------------- roles
// Ranks that hold the same bytes: with pp == 1 every rank; with pipelining, one role per
// stage, consecutive identical stages merged (the first stage holds the embedding, the last
// the output layer and loss).
struct RankRole {
  std::string name;  // "all ranks", "pp stage 0 (first)", "pp stages 1-2", ...
  int first_stage = 0;
  int last_stage = 0;
  int64_t ranks = 0;   // how many ranks of the world play this role
  int64_t layers = 0;  // transformer layers on each of its stages
  bool has_embedding = false;
  bool has_head = false;
  double microbatches_in_flight = 0;  // activations kept, in micro-batches of the stage
  int64_t params_local = 0;           // parameters this device computes with (after tp/pp/ep)
  MemoryBreakdown memory;
  std::vector<Collective> collectives;
  Bytes comm_bytes;  // per device per step, sum of collectives
  std::vector<OffloadCopy> copies;
  Bytes copy_bytes;  // per device per step, sum of copies
};

// -------------------------------------------------------------------------- correctness
enum class Severity { kWarning, kError };
const char* SeverityName(Severity s);  // "warning", "error"

// One broken rule. `rule` is a stable identifier (e.g. "gradient-integrity").
struct Finding {
  Severity severity = Severity::kError;
  std::string rule;
  std::optional<State> state;
  std::optional<topology::Axis> axis;
  std::string message;  // what goes wrong, naming the state and axis
  std::string fix;      // what would make it right
};

// -------------------------------------------------------------------------- the plan
struct Plan {
  // The scenario, echoed for reports.
  std::string model_name;
  std::string strategy_name;
  topology::MeshShape mesh;
  // The effective placement[axis][state]: as written, except that activations on tp read S
  // when sequence parallelism is in effect (tp > 1), and activations on dp read M when full
  // recompute is in effect (from the training setup) and no axis says M already.
  std::array<std::array<Placement, kNumStates>, topology::kNumAxes> placement{};
  TrainingSpec training;
  int64_t world = 0;            // ranks in the mesh
  int64_t cluster_devices = 0;  // nodes x gpus per node

  // Derived from the workload.
  int64_t parameter_count = 0;  // Ψ
  bool has_architecture = false;
  int64_t micro_batches = 0;  // per step per data-parallel rank: global / (micro x dp)
  Recompute effective_recompute = Recompute::kNone;
  bool effective_sequence_parallel = false;
  Flops flops_per_iteration;   // Narayanan eq. 3; zero without an architecture
  double bubble_fraction = 0;  // (p-1)/m, (p-1)/(v m) interleaved

  std::vector<RankRole> roles;
  int largest_role = 0;

  std::vector<Finding> findings;
  // Notes on what the model leaves out for this scenario (e.g. no activations for a bare
  // parameter count).
  std::vector<std::string> notes;

  const RankRole& largest() const { return roles[static_cast<size_t>(largest_role)]; }
  // True when no finding is an error.
  bool ok() const;
  int errors() const;
  int warnings() const;
};

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_PLAN_H_
