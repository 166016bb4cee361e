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
//   Collective the group's GPUs g_0 .. g_{N-1} (the rank's mesh coordinate with the group's
//              coordinates on the op's axis, dp or tp; GPUs from PlaceRanks, so with tp
//              innermost a tp group is consecutive GPUs of one node), S = the op's buffer_bytes,
//              alpha = a flow's route latency, B = its route bottleneck. An op runs its phases
//              one after the other; a phase starts its flows together and ends when the last
//              one ends; the op ends with its last phase. A flow that stands for k pipelined
//              steps pays k x its route latency (the flow network charges the route latency
//              once, so it gets (k-1) x the route latency as extra latency).
//     ring     one phase: N flows, one per ring edge g_i -> g_{i+1 mod N}, each carrying the
//              op's per-device ring volume (2(N-1)/N S for all-reduce, (N-1)/N S for
//              reduce-scatter and all-gather), k = 2(N-1) for all-reduce, N-1 otherwise. So an
//              uncontended ring all-reduce over one NVSwitch takes 2(N-1) alpha + 2(N-1)/N S / B.
//     hierarchical  for a group of M nodes with L members on each (NCCL's two-level
//              algorithm): the member with local position i on each node joins the rail-i
//              ring across nodes, whose flows go through the NIC nearest each end GPU (NIC
//              floor(i' x nics / gpus) for the GPU of local index i'), as rail-optimized
//              fabrics intend. Phases and per-flow volumes:
//                all-reduce      intra reduce-scatter (L-1)/L S, k = L-1;
//                                per-rail all-reduce of S/L: 2(M-1)/M x S/L, k = 2(M-1);
//                                intra all-gather (L-1)/L S, k = L-1.
//                reduce-scatter  intra reduce-scatter (L-1)/L S; per-rail reduce-scatter of
//                                S/L: (M-1)/M x S/L, k = M-1.
//                all-gather      per-rail all-gather to S/L: (M-1)/M x S/L, k = M-1; intra
//                                all-gather (L-1)/L S, k = L-1.
//              A device sends (L-1)/L S + (M-1)/(ML) S = (N-1)/N S per reduce-scatter or
//              all-gather (twice that per all-reduce), the ring's volume, but only 1/L of it
//              crosses the NIC. Phases of one member (L = 1 or M = 1) are skipped.
//     tree     all-reduce only: NCCL's double binary tree (Sanders, Speck and Traeff 2009, as
//              in NVIDIA's "Massively Scale Your Deep Learning Training with NCCL 2.4", 2019).
//              The trees are NCCL's (trees.h): tree A from the ranks' lowest set bits, tree
//              B its mirror (even N) or shift (odd N), so a rank interior in one tree is a
//              leaf in the other and has at most two children in all. Each tree reduces and
//              broadcasts half the buffer, pipelined in chunks: phase 1 (reduce) one flow per
//              edge child -> parent, phase 2 (broadcast) one per edge parent -> child, each
//              carrying S/2 with k = the taller tree's height h (about log2 N). Every device sends
//              and receives at most S per phase, so an uncontended tree all-reduce takes about 2 h
//              alpha + 2 S / B. The analytic model charges each tree flow S (its device's load over
//              both trees), which no-contention alpha-beta would otherwise miss.
//     choice   kAuto (NCCL-like): groups within one node use the ring; groups that span nodes
//              take the candidate with the lower analytic estimate (the kAnalytic duration
//              below) for the op's S: hierarchical (when every node holds the same number of
//              members) and, for all-reduce, tree; ties go to hierarchical. Small all-reduces
//              pick the tree (2 h alpha beats the 2(L-1) + 2(M-1) latency steps), large ones
//              hierarchical (its bandwidth term 2(L-1)/L S / B_nvlink + 2(M-1)/(ML) S / B_nic
//              beats 2 S / B_nic). ExecutorOptions::algorithm forces one; an algorithm that
//              does not apply to the op or group (tree for a reduce-scatter, hierarchical in
//              one node) falls back to kAuto's choice. Send/recv, all-to-all and broadcast
//              use the ring. Groups of one rank, and empty buffers, finish at once.
//   Network    kFlow: the FlowNetwork (max-min fair sharing, flow_network.h) over every
//              directed link of the cluster; kAnalytic: a phase takes the longest of its flows
//              alone, AlphaBetaTime(route bottleneck, k x route latency, bytes), no contention.
//
// Symmetry folding. The schedule describes every rank of its role, and those ranks run it in
// lockstep. Only the first rank of the role is simulated op by op, but whatever it puts on the
// network, every rank does at the same moment: a collective starts the flows of every group of
// its partition (all N ranks of every group send at once: every tp group of every dp replica
// for a tp collective, every dp group for a dp one), and a copy starts one flow per GPU
// of the simulated rank's node that plays the role. The op finishes when all of those flows
// have finished. Contention between the replicas is thereby modeled, at the cost of one
// replica's compute.
//
// Results. step_time is when the last op finishes. exposed_comm is the time the comm stream is
// busy while the compute stream is idle; idle is step_time minus the compute stream's busy
// time. MFU = model FLOPs per rank / (step_time x peak), with the model FLOPs of Narayanan et
// al. 2021 eq. 3 without recompute (coefficient 72) over the world; HFU uses the plan's FLOPs
// instead (what the hardware executes, recomputation included: 96 with full recompute).
// Memory: the live bytes per MemoryTag on the device, their peak (first instant the total
// reaches its maximum) and what was live then; an "out-of-memory" finding when the peak
// exceeds the GPU's HBM.
// Links: per LinkKind, from FlowNetwork::link_stats of every directed link of the cluster
// (folding puts every replica's traffic on the network, so these are the whole cluster's
// links): links that carried bytes, their bytes, busy time (at least one flow transferring)
// max and mean over those links, utilisation = busy / step_time, and the peak number of
// concurrent flows on one link. kAnalytic has no flow network: every flow adds its bytes to
// each link of its route, busy time = bytes / link bandwidth (so utilisation is the load the
// step puts on the link, which may exceed 1 where flows would have contended), and the peak
// is the most flows of one phase on one link.
//
// Trace. One process per traced rank, pid = the rank (rank r runs on GPU r), named
// "rank 3 (node0/gpu3)" and sorted by rank; one thread per stream; a complete event per op
// with args layer, micro_batch, bytes (and, for collectives, algorithm and group); a counter
// track "device memory" with one series per MemoryTag. ExecutorOptions::trace_ranks chooses
// the ranks; because of symmetry folding every rank of a role shares the simulated rank's
// timeline, so each requested rank of the role gets a copy of it under its own process.
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
#include "sim/executor/settings.h"
#include "strategies/plan.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "topology/mesh.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::sim {

inline constexpr int kNumMemoryTags = 8;            // strategies::MemoryTag values
inline constexpr int kNumCollectiveKinds = 6;       // strategies::CollectiveKind values
inline constexpr int kNumLinkKinds = 5;             // topology::LinkKind values
inline constexpr int kNumCollectiveAlgorithms = 4;  // CollectiveAlgorithm values

struct ExecutorOptions {
  NetworkModel network = NetworkModel::kFlow;
  // Default kAuto (see the file comment); forcing one is for what-if studies.
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  strategies::ScheduleOptions schedule;
  // When set, the timeline is written to it (see "Trace" in the file comment). Not owned; the
  // caller calls Finish(). Default: no trace.
  traces::ChromeTraceWriter* trace = nullptr;
  // Ranks whose processes the trace holds, strictly increasing, each in [0, world). Empty
  // (default): the simulated rank of each role. A rank of another role is skipped. More
  // ranks cost trace size (each gets a full copy of its role's timeline), not simulation time.
  std::vector<int64_t> trace_ranks;
};

// The options a scenario's simulation settings ask for (network model, algorithm, bucket
// size, prefetch depth, gradient sync); no trace.
ExecutorOptions ExecutorOptionsFromSettings(const SimulationSettings& settings);

// Traffic on the links of one LinkKind during a step (see "Links" in the file comment).
struct LinkKindStats {
  topology::LinkKind kind = topology::LinkKind::kNetwork;
  int64_t links = 0;           // directed links of the kind in the cluster
  int64_t links_used = 0;      // of those, the ones that carried bytes
  Bytes bytes;                 // carried, summed over the links
  Duration busy_max;           // the busiest link's busy time
  Duration busy_avg;           // mean busy time over the links used
  double utilization_max = 0;  // busy_max / step_time
  double utilization_avg = 0;  // busy_avg / step_time
  uint32_t peak_flows = 0;     // most concurrent flows on one link
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
  // Per strategies::CollectiveKind, calls per algorithm (index: CollectiveAlgorithm, kAuto
  // unused): which algorithm kAuto picked.
  std::array<std::array<int64_t, kNumCollectiveAlgorithms>, kNumCollectiveKinds> algorithm_calls{};
  // One entry per LinkKind present in the cluster, in LinkKind order.
  std::vector<LinkKindStats> links;
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
  // Per LinkKind over the roles: bytes summed (each role's step puts its own traffic on the
  // network); links used, busy times and peaks the largest; utilisation over step_time.
  std::vector<LinkKindStats> links;
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

// The most ops one run may trace, summed over the traced ranks (about 200 bytes each in the
// trace): one rank of the largest schedule (strategies::kMaxScheduleOps) always fits.
inline constexpr int64_t kMaxTracedOps = int64_t{1} << 22;

// Executes one schedule on `cluster` for rank `context.rank` (see the file comment).
// Errors (kInvalidArgument, naming the field): trace_ranks out of range or not strictly
// increasing; a compute op on a device without a peak for the precision, without HBM
// bandwidth or with a non-positive efficiency; host compute without host_flops or
// host_memory_bandwidth; a copy or ring edge with no route; a collective whose group does
// not divide its axis. kFailedPrecondition: the mesh does not match the cluster.
// kOutOfRange: the traced ranks × ops exceed kMaxTracedOps.
StatusOr<RoleResult> ExecuteSchedule(const topology::Cluster& cluster,
                                     const strategies::Schedule& schedule,
                                     const ExecutionContext& context,
                                     const ExecutorOptions& options = {});

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_EXECUTOR_EXECUTOR_H_
