// Replay of a Chakra workload on placesim's engine: every rank's node graph runs on the GPU of
// the same index of the cluster, on the event engine (sim/engine), with placesim's collective
// algorithms (sim/collectives, "auto" or a forced one) and network models (sim/network, "flow"
// or "analytic"), and the timeline goes to a traces::TraceSink like simulate's.
//
// Why not the op IR and executor: the executor replays one schedule per pipeline stage whose
// collectives name mesh axes (dp, tp, pp, cp) and folds symmetric replicas; a Chakra trace has
// one arbitrary graph per rank and groups that are plain rank lists. So the replay keeps the
// executor's physics (the same roofline, the same algorithms' phases of flows, the same network
// models, the same routes through sim/executor's CommPlanner) but drives the graphs itself.
//
// Model, per rank r (GPU r):
//   a node starts when its data and control deps have finished and its resource is free;
//   compute  one at a time, lowest file index first among the ready ones:
//              max(num_ops x flops_per_op / (peak x matmul_efficiency),
//                  tensor_size / (hbm_bandwidth x memory_efficiency))
//              + elementwise_bytes / (hbm_bandwidth x memory_efficiency) + kernel_overhead,
//            the executor's roofline (peak of ReplayOptions::compute_type, which simulate's
//            scenarios take from their precision: ComputeTypeOf);
//   host     (is_cpu_op compute) one at a time: max(flops / host_flops, tensor_size /
//            host_memory_bandwidth);
//   memory   load/store one at a time: one flow host memory (or NVMe) -> GPU / GPU -> host
//            memory (or NVMe) carrying tensor_size, as the executor's offload copies;
//   collective  concurrent with anything: the k-th collective on a group starts when every
//            member has reached its k-th; it runs the algorithm's phases over the group's
//            GPUs with S = comm_size (x n for all-gather, whose comm_size is the member's
//            shard) and ends on every member at once;
//   send     concurrent: one flow from GPU r to GPU comm_dst carrying comm_size, started when
//            the send is ready (eager, as ASTRA-sim); the recv with the same (src, dst, tag)
//            finishes when it is ready and the data has arrived.
// Results: step_time = the last node's finish over all ranks; per rank its finish, compute
// busy time, communication busy time (collectives, sends and recvs waiting for data), exposed
// communication (communication busy while the compute stream is idle) and idle time; link
// statistics as the executor's (sim::LinkKindStats, utilisation over step_time).
// Trace: one process per traced rank (pid = rank), threads compute, comm, memory, host, p2p;
// transfers in flight together take further threads ("comm 2", "p2p 2", ...), so no two
// slices of one thread overlap.
// Determinism: events in the engine's (time, phase, sequence) order, ready nodes by index.
// Thread-safety: Replay keeps all state local.
#ifndef PLACESIM_SIM_CHAKRA_REPLAY_H_
#define PLACESIM_SIM_CHAKRA_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/chakra/trace.h"
#include "sim/collectives/registry.h"
#include "sim/executor/executor.h"
#include "sim/network/network_model.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "traces/trace_sink.h"

namespace placesim::chakra {

// The peak a training precision computes at, as the executor picks it: bf16 for bf16 and
// bf16-mixed, fp16 for fp16-mixed, fp8 for fp8-mixed.
topology::DataType ComputeTypeOf(strategies::Precision p);

struct ReplayOptions {
  std::string network = "flow";    // a network model by name
  std::string algorithm = "auto";  // a collective algorithm by name, forced where it applies
  const sim::collectives::Registry* collectives = nullptr;  // null: the built-ins
  const sim::NetworkModelRegistry* network_models = nullptr;
  // FLOPs per unit of num_ops. Trace generators count multiply-accumulates, each two FLOPs;
  // 1 reproduces ASTRA-sim, which divides num_ops by its peak-perf.
  double flops_per_op = 2;
  topology::DataType compute_type = topology::DataType::kBf16;  // ComputeTypeOf(precision)
  traces::TraceSink* trace = nullptr;  // not owned; the caller calls Finish()
  std::vector<int64_t> trace_ranks;    // strictly increasing; empty: every rank
};

struct RankReplay {
  int64_t rank = 0;
  Duration finish;        // its last node's end
  Duration compute_busy;  // compute (GPU) busy time
  Duration comm_busy;     // time with at least one collective, send or recv in flight
  Duration exposed_comm;  // comm_busy while the compute stream is idle
  Duration idle;          // step_time - compute_busy
  Flops flops;            // num_ops x flops_per_op over its GPU compute nodes
  Bytes comm_bytes;       // comm_size over its collectives and sends
  int64_t nodes = 0;
};

struct ReplayResult {
  Duration step_time;
  std::vector<RankReplay> ranks;
  std::vector<sim::LinkKindStats> links;
  std::vector<std::string> algorithm_names;  // by registry id
  std::vector<int64_t> algorithm_calls;      // collective calls per algorithm id
  uint64_t events = 0;
};

// Replays `w` on `cluster`. Errors (kInvalidArgument): ValidateWorkload's; more ranks than the
// cluster has GPUs; an unknown network model or algorithm; a compute node on a device without
// the peak or HBM bandwidth, host compute without host rates, a memory node without a route
// to host memory or NVMe; trace_ranks out of range or not increasing; a workload that
// deadlocks (a node that can never run, named with its rank and id).
// Complexity: O(nodes log nodes) plus the network model's work.
StatusOr<ReplayResult> Replay(const topology::Cluster& cluster, const Workload& w,
                              const ReplayOptions& options = {});

}  // namespace placesim::chakra

#endif  // PLACESIM_SIM_CHAKRA_REPLAY_H_
