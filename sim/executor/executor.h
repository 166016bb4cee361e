// Executor: replays the schedules of one training step (strategies/schedule.h), one per
// pipeline stage, together on the event engine, over the cluster graph, and reports the step
// time and its breakdown.
//
// Model.
//   Lanes      every schedule given runs as one lane of a single engine over one shared network
//              (flow network or analytic accounting), so the stages' traffic contends as it
//              would on the cluster. Lane k is simulated for the rank whose mesh coordinate is
//              that of ExecutionContext::rank with pp replaced by the schedule's stage. Each lane
//              has its own streams, memory and counters; ops are numbered globally (the lane's
//              offset plus the op's index) for events and flow tags.
//   Streams    each op runs on its stream (compute, comm, copy, host, p2p); a stream runs one op
//              at a time, in index order; an op starts when its deps have finished and its stream
//              has finished every earlier op. Alloc, Free and Recv take no time; a Recv waits,
//              at its place in its stream, for the send it matches (Op::match in the lane of
//              Op::peer_stage), which is one of its deps. Pipeline sends run on the p2p stream,
//              so they never queue behind the comm stream's collectives.
//   Exchanges  a pipeline send on the compute stream is blocking (strategies/schedule/ops.h):
//              the blocking sends and receives adjacent on one stream form an exchange, posted
//              when the stream reaches it and its sends' deps are done; a send's transfer
//              starts once its receive's exchange is posted too, and the stream resumes when
//              every transfer of its exchange has finished. Its waiting is idle time, its
//              transfers p2p busy time (traced on the p2p thread). Exchanges that wait on each
//              other in a cycle end the run with kInternal, naming the exchange.
//   Compute    roofline of the GEMMs plus the memory-bound kernels between them:
//                max(flops / (peak x matmul_efficiency),
//                    (bytes read + written) / (hbm_bandwidth x memory_efficiency))
//                + elementwise_bytes / (hbm_bandwidth x memory_efficiency) + kernel_overhead,
//              with the peak of the precision's compute type (bf16 for bf16 and bf16-mixed,
//              fp16 for fp16-mixed, fp8 for fp8-mixed). Norms, softmax, dropout and activation
//              functions are separate kernels in the frameworks modelled, so their traffic
//              takes its own time; it is what makes small layers less efficient than large
//              ones (it grows with s b h, the GEMMs with s b h^2). The optimizer update uses
//              the same roofline; it is memory-bound in practice.
//   HostCompute max(flops / host_flops, bytes / host_memory_bandwidth), no kernel overhead.
//   Copy       one flow over the route GPU -> host memory (d2h), host memory -> GPU (h2d),
//              NVMe -> GPU (nvme-read) or GPU -> NVMe (nvme-write) of the rank's node.
//   Send       a send-recv on the pp axis with a peer stage (a pipeline send): one flow from
//              the rank's GPU to the GPU of the rank with the same coordinate on the peer stage,
//              carrying the op's bytes in one step (it pays its route latency once).
//   Collective the group's GPUs g_0 .. g_{N-1} (the rank's mesh coordinate with the group's
//              coordinates on the op's axis, dp, tp or cp; an ep group is ep consecutive dp
//              coordinates, one of each ep coordinate, as ep coordinate = dp mod ep (mesh.h);
//              GPUs from PlaceRanks, so with tp innermost a tp group is consecutive GPUs of
//              one node), S = the op's buffer_bytes,
//              alpha = a flow's route latency, B = its route bottleneck. An op runs its phases
//              one after the other; a phase starts its flows together and ends when the last
//              one ends; the op ends with its last phase. A pipelined plan (hierarchical;
//              CommPlan::pipelined) runs its phases at once, each its own transfer, and ends
//              with the last of them plus the pipeline fill (collectives::PipelineFill). A flow
//              that stands for k pipelined steps pays k x its route latency (the flow network
//              charges the route latency once, so it gets (k-1) x the route latency as extra
//              latency).
//     algorithm the registered collective algorithm that runs the call (sim/collectives:
//              ring, tree, hierarchical, pairwise; each file states its phases and volumes):
//              ExecutorOptions::algorithm when it applies to the op and its groups, else
//              "auto"'s choice (sim/collectives/registry.h: ring within one node; across nodes
//              the lower analytic estimate of hierarchical and, for all-reduce, tree; all-to-all
//              always pairwise). Pipeline sends are counted under the ring.
//              Groups of one rank, and empty buffers, finish at once.
//   Network    the registered network model ExecutorOptions::network names
//              (sim/network/network_model.h) over every directed link of the cluster: "flow",
//              the FlowNetwork (max-min fair sharing, flow_network.h); "analytic", a phase takes
//              the longest of its flows alone, AlphaBetaTime(route bottleneck, k x route
//              latency, bytes), no contention.
//
// Symmetry folding. A schedule describes every rank of its role (the ranks of its pipeline
// stage), and those ranks run it in lockstep. Only one rank per lane is simulated op by op, but
// whatever it puts on the network, every rank of its stage does at the same moment: a
// collective starts the flows of every group of its partition whose ranks play the lane's stage
// (all N ranks of every group send at once: every tp group of every dp replica of the stage for
// a tp collective, every dp group of the stage for a dp one; a collective on the pp axis, whose
// groups join stages, folds over the whole world), a send starts one flow per rank of the
// stage, and a copy starts one flow per GPU of the simulated rank's node that plays the stage
// (only the rank's own GPU when the schedule does not hold every rank of its stage). The op
// finishes when all of those flows have finished. Contention between the replicas, and between
// the stages, is thereby modeled, at the cost of one replica's compute per stage.
// One exception keeps large jobs fast: a group that lies inside one node holding no simulated
// rank, and whose flows stay on NVLink, is not replayed. No flow from outside a node crosses
// its NVLink links, so its flows meet only its own kind, which run on every such node exactly
// as on the simulated ranks' nodes. Its bytes still count in the link statistics (bytes per
// kind, and its links among those used); busy times and peaks are the replayed links' (the
// others repeat them). Groups that span nodes are always replayed in full.
// A dp collective whose op spans cp (Op::spans_context) groups the dp x cp ranks of the stage
// with the same tp coordinate, ordered (dp, cp) with cp innermost.
//
// Results, per lane. step_time is when the lane's last op finishes (the step's is the latest
// lane's). exposed_comm is the time a comm or dp-comm stream is busy while the compute stream
// is idle, the two streams' intervals merged (pipeline sends are not counted: the time a stage
// waits for its peer shows as idle); idle is
// step_time minus the compute stream's busy time. MFU = model FLOPs per rank / (step_time x
// peak), with the model FLOPs of Narayanan et al. 2021 eq. 3 without recompute (coefficient 72)
// over the world; HFU uses the plan's FLOPs instead (what the hardware executes, recomputation
// included: 96 with full recompute).
// Memory: each lane's MemoryTracker (sim/memory/memory_tracker.h) follows its Alloc and Free
// ops: the live bytes per MemoryTag on the lane's device, their peak (first instant the total
// reaches its maximum) and what was live then, and the host's and NVMe's peaks; an
// "out-of-memory" finding per lane whose peak exceeds the GPU's HBM.
// Links: per LinkKind, from FlowNetwork::link_stats of every directed link of the cluster
// (folding puts every replica's traffic on the network, so these are the whole cluster's
// links): links that carried bytes, their bytes, busy time (at least one flow transferring)
// max and mean over those links, utilisation = busy / the step's step_time, and the peak
// number of concurrent flows on one link. The lanes share the network, so these are the
// step's, the same for every lane. The analytic model has no flow network: every flow adds its
// bytes to each link of its route, busy time = bytes / link bandwidth (so utilisation is the
// load the step puts on the link, which may exceed 1 where flows would have contended), and
// the peak is the most flows of one phase on one link.
//
// Trace. Written to ExecutorOptions::trace, a traces::TraceSink (trace_sink.h), as the run
// produces it: nothing is held back, so memory does not grow with the trace; one virtual call
// per traced rank and op or memory change, none per engine event. One process per traced rank,
// pid = the rank (rank r runs on GPU r), named "rank 3 (node0/gpu3)" and sorted by rank; one
// thread per stream (compute, comm, copy, host, and p2p where the lane has ops on it); a
// complete event per op that takes time, at its finish, with args op (its index in its
// schedule), layer, micro_batch, bytes (and, for collectives, algorithm and group); a counter
// track "device memory" with one series per MemoryTag, a sample at every device Alloc or Free
// (written by the lane's MemoryTracker).
// ExecutorOptions::trace_ranks chooses the ranks; a rank is traced by the lane of its pipeline
// stage: because of symmetry folding every rank of the stage shares the simulated rank's
// timeline, so each requested rank gets a copy of it under its own process.
//
// Determinism: the result (and the trace) is a pure function of the inputs; events are ordered
// by the engine's (time, phase, sequence) key; lanes, and the streams of a lane, are polled in
// a fixed order (the lowest lane with work first).
// Thread-safety: SimulateStep, ExecuteSchedules and ExecuteSchedule keep all state local; calls
// on different inputs may run concurrently (a trace sink must not be shared between them).
#ifndef PLACESIM_SIM_EXECUTOR_EXECUTOR_H_
#define PLACESIM_SIM_EXECUTOR_EXECUTOR_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/collectives/registry.h"
#include "sim/collectives/simulation_settings.h"
#include "sim/memory/memory_tracker.h"
#include "sim/network/network_model.h"
#include "strategies/plan.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "topology/mesh.h"
#include "traces/trace_sink.h"

namespace placesim::sim {

inline constexpr int kNumCollectiveKinds = 6;  // strategies::CollectiveKind values
// kNumLinkKinds (topology::LinkKind values): sim/collectives/algorithm.h.

struct ExecutorOptions {
  // A network model of `network_models` by name: "flow" (default) or "analytic".
  std::string network = "flow";
  // "auto" (default; see the file comment) or a collective algorithm of `collectives` by name,
  // forced where it applies; forcing one is for what-if studies.
  std::string algorithm = "auto";
  // The registries the names refer to; null (default): the built-ins. Not owned; they must
  // outlive the call. A collective registry must hold "ring", under which pipeline sends are
  // counted.
  const collectives::Registry* collectives = nullptr;
  const NetworkModelRegistry* network_models = nullptr;
  strategies::ScheduleOptions schedule;
  // Charge NCCL's per-call protocol cost (sim/collectives/nccl_model.h) on top of each
  // collective's and pipeline send's transfer. Default false: the network model's time alone,
  // as its own maths states it; scenarios turn it on (SimulationSettings::protocol_cost).
  bool protocol_cost = false;
  // Host (CPU) time to issue one transformer layer's kernels in one forward (or recompute)
  // pass, and in one backward pass, of one micro-batch; >= 0. The host issues a pass's kernels
  // while the GPU runs them, so the pass takes max(its kernels' time, this): the GPU waits on
  // the host only when the kernels are short. The host is taken to start each pass with the
  // GPU (never ahead), which over-charges a pass that follows a wait on communication.
  // The backward time unset = the forward one. Default 0 for every framework
  // (docs/overheads.md, "Host dispatch", says why).
  Duration host_time_per_layer = Duration::Zero();
  std::optional<Duration> host_time_per_layer_backward;
  // When set, the timeline is written to it as the run produces it (see "Trace" in the file
  // comment). Not owned; the caller calls Finish(). Default: no trace.
  traces::TraceSink* trace = nullptr;
  // Ranks whose processes the trace holds, strictly increasing, each in [0, world). Empty
  // (default): the simulated rank of each role. A rank is traced by the schedule of its
  // pipeline stage when that schedule holds every rank of the stage, else only when it is the
  // simulated rank; the others are skipped. More ranks cost trace size (each gets a full copy
  // of its role's timeline), not simulation time.
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

// What one schedule (one rank role, one lane) did in one step, as seen by its simulated rank.
struct RoleResult {
  std::string role;
  int32_t stage = 0;           // the schedule's pipeline stage
  int64_t ranks = 0;           // ranks playing the role
  int64_t simulated_rank = 0;  // the rank simulated op by op
  Duration step_time;          // when its last op finished
  Duration compute_busy;       // compute stream busy time
  Duration comm_busy;          // comm + dp-comm streams' busy times, summed (collectives)
  Duration copy_busy;          // copy stream busy time (offload copies)
  Duration host_busy;          // host stream busy time (host compute)
  Duration p2p_busy;           // p2p stream busy time (pipeline sends)
  Duration exposed_comm;       // comm or dp-comm busy while the compute stream is idle
  Duration idle;               // step_time - compute_busy
  // Device memory: live bytes per strategies::MemoryTag at the peak, the peak (their sum), when.
  std::array<Bytes, kNumMemoryTags> live_at_peak{};
  Bytes peak_memory;
  Duration peak_at;
  Bytes capacity;  // the GPU's HBM
  // Host and NVMe bytes allocated by the schedule (static offloaded states), at their peaks.
  Bytes peak_host_memory;
  Bytes peak_nvme;
  // Per strategies::CollectiveKind: bytes this device sent (the ops' ring volumes; a pipeline
  // send's bytes under kSendRecv) and calls.
  std::array<Bytes, kNumCollectiveKinds> collective_bytes{};
  std::array<int64_t, kNumCollectiveKinds> collective_calls{};
  Bytes copy_bytes;  // bytes this device copied to or from host / NVMe
  // Per strategies::CollectiveKind, calls per collective algorithm, indexed by the algorithm's
  // registry id (one entry per registered algorithm): which algorithm ran each call.
  std::array<std::vector<int64_t>, kNumCollectiveKinds> algorithm_calls{};
  std::vector<std::string> algorithm_names;  // by registry id, the names of algorithm_calls
  // Collective and pipeline-send calls per NCCL protocol (collectives::Protocol order: LL,
  // LL128, Simple), as the protocol cost chose them (sim/collectives/nccl_model.h).
  std::array<int64_t, collectives::kNumProtocols> protocol_calls{};
  // One entry per LinkKind present in the cluster, in LinkKind order: the whole step's, the
  // same in every role of one run (the lanes share the network).
  std::vector<LinkKindStats> links;
  int64_t ops = 0;
  uint64_t events = 0;  // engine events handled in the run (all lanes together)

  Bytes comm_bytes() const;  // sum of collective_bytes
};

struct SimResult {
  Duration step_time;             // the slowest role's
  Flops model_flops_per_rank;     // eq. 3 over the model's shapes, no recompute (model.h) / world
  Flops hardware_flops_per_rank;  // the plan's FLOPs, recomputation included / world
  FlopRate peak;                  // per-GPU peak of the precision's compute type
  double mfu = 0;                 // model_flops_per_rank / (step_time x peak)
  double hfu = 0;                 // hardware_flops_per_rank / (step_time x peak)
  double tokens_per_second = 0;   // global_batch x seq_len / step_time
  std::vector<RoleResult> roles;  // one per schedule, in stage order
  // Per LinkKind, the step's traffic of every role on the shared network; utilisation over
  // step_time.
  std::vector<LinkKindStats> links;
  std::vector<strategies::Finding> findings;  // "out-of-memory", one per role that does not fit
  strategies::Plan plan;                      // the analytic plan of the same inputs
  // Empty when every micro-batch was replayed. Else the step was folded (sim/study/fold.h):
  // the micro-batch counts of the shorter replays its figures were extrapolated from.
  std::vector<int64_t> folded_from;
};

// What ExecuteSchedules needs besides the schedules: where the ranks sit and how fast they are.
struct ExecutionContext {
  topology::MeshShape mesh;
  topology::RankOrder rank_order;
  strategies::Precision precision = strategies::Precision::kBf16Mixed;
  // Fraction of peak the compute ops' FLOPs run at; 0 = the device's matmul_efficiency.
  // SimulateStep sets the kernel model's figure for the step's shapes
  // (strategies/cost/kernel_model.h).
  double matmul_efficiency = 0.0;
  // The rank simulated (its coordinate, with pp set to each schedule's stage, picks each
  // lane's rank). REQUIRES: 0 <= rank < mesh.world().
  int64_t rank = 0;
};

// What ExecuteSchedules did: one RoleResult per schedule, in the order given, and the shared
// network's link statistics (also in every role), once.
struct ExecutionResult {
  std::vector<RoleResult> roles;
  std::vector<LinkKindStats> links;
  uint64_t events = 0;  // engine events handled
};

// Builds the plan (Analyze) and the schedules (BuildSchedules) of the inputs and executes them
// together on `cluster` (ExecuteSchedules). Errors: whatever Analyze, BuildSchedules or
// PlaceRanks refuse (kInvalidArgument / kFailedPrecondition, passed through), and the
// ExecuteSchedules errors.
// REQUIRES: `cluster` was built from the ClusterSpec the plan should be analyzed against.
// Complexity: O(ops x log(events)) plus the flow solver's work per collective.
StatusOr<SimResult> SimulateStep(const topology::Cluster& cluster,
                                 const strategies::ModelSpec& model,
                                 const strategies::TrainingSpec& training,
                                 const strategies::StrategySpec& strategy,
                                 const ExecutorOptions& options = {});

// The most ops one run may trace, summed over the traced ranks (about 200 bytes each in the
// trace, so the bound keeps a trace file under about 1 GB): one rank of the largest schedule
// (strategies::kMaxScheduleOps) always fits.
inline constexpr int64_t kMaxTracedOps = int64_t{1} << 22;

// Executes the schedules of one step together, one lane each, on `cluster` (see the file
// comment). Errors (kInvalidArgument, naming the schedule, op and field): a network model or
// collective algorithm name its registry does not hold (the message lists the valid ones); no
// schedule; a stage outside [0, pp) or given twice; a dep outside the schedule; a Recv whose
// peer_stage has no schedule, whose match is out of range, or whose match is not a pipeline
// send to the Recv's stage; a send whose peer_stage is outside [0, pp) or its own; trace_ranks
// out of range or not strictly increasing; a blocking send that no recv, or more than one,
// matches; a compute op on a device without a peak for the
// precision, without HBM bandwidth or with a non-positive efficiency; host compute without
// host_flops or host_memory_bandwidth; a copy, send or ring edge with no route; a collective
// whose group does not divide its axis. kFailedPrecondition: the mesh does not match the cluster.
// kOutOfRange: the traced ranks × ops exceed kMaxTracedOps. kInternal: the lanes deadlock (ops
// left that can never start), naming the role, stream and op.
// Complexity: O(ops x log(events)) plus the flow solver's work; setup O(ops + world x distinct
// groups).
StatusOr<ExecutionResult> ExecuteSchedules(const topology::Cluster& cluster,
                                           std::span<const strategies::Schedule> schedules,
                                           const ExecutionContext& context,
                                           const ExecutorOptions& options = {});

// ExecuteSchedules of one schedule; its RoleResult carries the links.
StatusOr<RoleResult> ExecuteSchedule(const topology::Cluster& cluster,
                                     const strategies::Schedule& schedule,
                                     const ExecutionContext& context,
                                     const ExecutorOptions& options = {});

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_EXECUTOR_EXECUTOR_H_
