// Executor: replays the schedule of one training step (strategies/schedule.h) on the event
// engine, over the cluster graph, and reports the step time and its breakdown.
//
// Model.
//   Streams    each op runs on its stream (compute, comm, copy, host); a stream runs one op at a
//              time, in index order; an op starts when its deps have finished and its stream
//              has finished every earlier op. Alloc and Free take no time.
//   Compute    roofline: max(flops / (peak x matmul_efficiency),
//                            (bytes read + written) / (hbm_bandwidth x memory_efficiency))
//              + kernel_overhead, with the peak of the precision's compute type (bf16 for bf16
//              and bf16-mixed, fp16 for fp16-mixed, fp8 for fp8-mixed). The optimizer update
//              uses the same roofline; it is memory-bound in practice.
//   HostCompute max(flops / host_flops, bytes / host_memory_bandwidth), no kernel overhead.
//   Copy       one flow over the route GPU -> host memory (d2h), host memory -> GPU (h2d),
//              NVMe -> GPU (nvme-read) or GPU -> NVMe (nvme-write) of the rank's node.
//   Collective ring algorithm over the group's GPUs g_0 .. g_{N-1} (the rank's mesh
//              coordinate with the group's dp coordinates; GPUs from PlaceRanks): N concurrent
//              flows, one per ring edge g_i -> g_{i+1 mod N}, each carrying the op's per-device
//              ring volume (2(N-1)/N S for all-reduce, (N-1)/N S for reduce-scatter and
//              all-gather). A ring takes k steps (2(N-1) for all-reduce, N-1 otherwise), each
//              paying the edge's path latency; the flow network charges the route latency once,
//              so every flow gets (k-1) x its route latency as extra latency. So an uncontended
//              ring all-reduce over one NVSwitch takes 2(N-1) alpha + 2(N-1)/N S / B.
//              Groups of one rank, and empty buffers, finish at once.
//   Network    kFlow: the FlowNetwork (max-min fair sharing, flow_network.h) over every
//              directed link of the cluster; kAnalytic: each flow alone takes
//              AlphaBetaTime(route bottleneck, route latency x steps, bytes), no contention.
//
// Symmetry folding. The schedule describes every rank of its role, and those ranks run it in
// lockstep. Only the first rank of the role is simulated op by op, but whatever it puts on the
// network, every rank does at the same moment: a collective starts the rings of every group of
// its partition (all N ranks of every group send at once), and a copy starts one flow per GPU
// of the simulated rank's node that plays the role. The op finishes when all of those flows
// have finished. Contention between the replicas is thereby modeled, at the cost of one
// replica's compute. Multi-node groups use the flat ring (no hierarchical algorithm).
//
// Results. step_time is when the last op finishes. exposed_comm is the time the comm stream is
// busy while the compute stream is idle; idle is step_time minus the compute stream's busy
// time. MFU = (flops_per_iteration / world) / (step_time x peak), where flops_per_iteration is
// the plan's Narayanan et al. 2021 eq. 3 figure (96 with full recompute, 72 otherwise: the
// hardware FLOPs of the schedule, not the recompute-free model FLOPs). Memory: the live bytes
// per MemoryTag on the device, their peak (first instant the total reaches its maximum) and
// what was live then; an "out-of-memory" finding when the peak exceeds the GPU's HBM.
//
// Determinism: the result (and the trace) is a pure function of the inputs; events are ordered
// by the engine's (time, phase, sequence) key and streams are polled in a fixed order.
// Thread-safety: SimulateStep and ExecuteSchedule keep all state local; calls on different
// inputs may run concurrently (a trace writer must not be shared between them).
#ifndef PLACESIM_SIM_EXECUTOR_EXECUTOR_H_
#define PLACESIM_SIM_EXECUTOR_EXECUTOR_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "strategies/plan.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "topology/mesh.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::sim {

enum class NetworkModel {
  kFlow,      // flow-level, max-min fair sharing of every link (default)
  kAnalytic,  // alpha-beta per flow, no contention: faster, for sweeps
};
const char* NetworkModelName(NetworkModel m);  // "flow", "analytic"

inline constexpr int kNumMemoryTags = 8;       // strategies::MemoryTag values
inline constexpr int kNumCollectiveKinds = 6;  // strategies::CollectiveKind values

struct ExecutorOptions {
  NetworkModel network = NetworkModel::kFlow;
  strategies::ScheduleOptions schedule;
  // When set, the timeline is written to it: one process per simulated rank (pid = its GPU
  // index), one thread per stream, a complete event per op, a memory counter per Alloc/Free.
  // Not owned; the caller calls Finish(). Default: no trace.
  traces::ChromeTraceWriter* trace = nullptr;
};

// What one schedule (one rank role) did in one step, as seen by its first rank.
struct RoleResult {
  std::string role;
  int64_t ranks = 0;           // ranks playing the role
  int64_t simulated_rank = 0;  // the rank simulated op by op
  Duration step_time;          // when its last op finished
  Duration compute_busy;       // compute stream busy time
  Duration comm_busy;          // comm stream busy time (collectives)
  Duration copy_busy;          // copy stream busy time (offload copies)
  Duration host_busy;          // host stream busy time (host compute)
  Duration exposed_comm;       // comm stream busy while the compute stream is idle
  Duration idle;               // step_time - compute_busy
  // Device memory: live bytes per strategies::MemoryTag at the peak, the peak (their sum), when.
  std::array<Bytes, kNumMemoryTags> live_at_peak{};
  Bytes peak_memory;
  Duration peak_at;
  Bytes capacity;  // the GPU's HBM
  // Host and NVMe bytes allocated by the schedule (static offloaded states), at their peaks.
  Bytes peak_host_memory;
  Bytes peak_nvme;
  // Per strategies::CollectiveKind: bytes this device sent (the ops' ring volumes) and calls.
  std::array<Bytes, kNumCollectiveKinds> collective_bytes{};
  std::array<int64_t, kNumCollectiveKinds> collective_calls{};
  Bytes copy_bytes;  // bytes this device copied to or from host / NVMe
  int64_t ops = 0;
  uint64_t events = 0;  // engine events handled

  Bytes comm_bytes() const;  // sum of collective_bytes
};

struct SimResult {
  Duration step_time;             // the slowest role's
  Flops model_flops_per_rank;     // Megatron-LM eq. 3 without recompute (72 B s l h^2 ...) / world
  Flops hardware_flops_per_rank;  // the plan's FLOPs, recomputation included / world
  FlopRate peak;                  // per-GPU peak of the precision's compute type
  double mfu = 0;                 // model_flops_per_rank / (step_time x peak)
  double hfu = 0;                 // hardware_flops_per_rank / (step_time x peak)
  double tokens_per_second = 0;   // global_batch x seq_len / step_time
  std::vector<RoleResult> roles;
  std::vector<strategies::Finding> findings;  // "out-of-memory", one per role that does not fit
  strategies::Plan plan;                      // the analytic plan of the same inputs
};

// What ExecuteSchedule needs besides the schedule: where the ranks sit and how fast they are.
struct ExecutionContext {
  topology::MeshShape mesh;
  topology::RankOrder rank_order;
  strategies::Precision precision = strategies::Precision::kBf16Mixed;
  // The first rank that runs the schedule. REQUIRES: 0 <= rank < mesh.world().
  int64_t rank = 0;
};

// Builds the plan (Analyze) and the schedules (BuildSchedules) of the inputs and executes each
// schedule on `cluster`. Errors: whatever Analyze, BuildSchedules or PlaceRanks refuse
// (kInvalidArgument / kFailedPrecondition, passed through), and the ExecuteSchedule errors.
// REQUIRES: `cluster` was built from the ClusterSpec the plan should be analyzed against.
// Complexity: O(ops x log(events)) plus the flow solver's work per collective.
StatusOr<SimResult> SimulateStep(const topology::Cluster& cluster,
                                 const strategies::ModelSpec& model,
                                 const strategies::TrainingSpec& training,
                                 const strategies::StrategySpec& strategy,
                                 const ExecutorOptions& options = {});

// Executes one schedule on `cluster` for rank `context.rank` (see the file comment).
// Errors (kInvalidArgument, naming the field): a compute op on a device without a peak for the
// precision, without HBM bandwidth or with a non-positive efficiency; host compute without
// host_flops or host_memory_bandwidth; a copy or ring edge with no route; a collective whose
// group does not divide the dp axis. kFailedPrecondition: the mesh does not match the cluster.
StatusOr<RoleResult> ExecuteSchedule(const topology::Cluster& cluster,
                                     const strategies::Schedule& schedule,
                                     const ExecutionContext& context,
                                     const ExecutorOptions& options = {});

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_EXECUTOR_EXECUTOR_H_
