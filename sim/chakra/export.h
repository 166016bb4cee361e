// A simulated training step as a Chakra workload: the schedule of every rank (its pipeline
// stage's op DAG, strategies/schedule.h) as Chakra nodes, with the concrete rank groups of its
// collectives, so that `placesim replay` or ASTRA-sim can run it (`simulate --chakra-out`).
//
// Mapping (docs/chakra.md): node id = the op's index in its stage's schedule;
//   compute       -> COMP_NODE, num_ops = FLOPs / flops_per_op (multiply-accumulates for the
//                    default 2), tensor_size = bytes read + written, elementwise_bytes;
//   host compute  -> COMP_NODE with is_cpu_op;
//   copy          -> MEM_LOAD_NODE (h2d, nvme-read) / MEM_STORE_NODE (d2h, nvme-write);
//   collective    -> COMM_COLL_NODE, comm_size = S (the member's shard S / n for all-gather),
//                    the group its mesh coordinate gives, numbered in order of first use;
//   pipeline send -> COMM_SEND_NODE to the rank of the peer stage, comm_tag = the send's index;
//   recv          -> COMM_RECV_NODE from that rank with the matched send's tag and bytes;
//   alloc / free  -> dropped (no time); a dep on one is replaced by its own deps.
// Each node also depends (ctrl_deps) on the previous node of its stream, so the executor's
// one-op-at-a-time, in-order streams survive the format.
// Thread-safety: pure function.
#ifndef PLACESIM_SIM_CHAKRA_EXPORT_H_
#define PLACESIM_SIM_CHAKRA_EXPORT_H_

#include <span>

#include "base/status.h"
#include "sim/chakra/trace.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "topology/mesh.h"

namespace placesim::chakra {

// Every rank's schedule as Chakra traces. REQUIRES: one schedule per stage of `mesh`, built
// for `cluster`. Errors (kInvalidArgument): the cluster's placement of the mesh (PlaceRanks);
// an expert-parallel collective (its groups are carved out of dp, which Chakra's flat groups
// would need the executor's layout to express; not exported); a schedule missing a stage.
// Complexity: O(world x ops).
StatusOr<Workload> WorkloadFromSchedules(const topology::Cluster& cluster,
                                         std::span<const strategies::Schedule> schedules,
                                         const topology::MeshShape& mesh,
                                         const topology::RankOrder& order, double flops_per_op = 2);

// Analyze + BuildSchedulesForPlan of the inputs, then WorkloadFromSchedules.
StatusOr<Workload> ExportStep(const topology::Cluster& cluster, const strategies::ModelSpec& model,
                              const strategies::TrainingSpec& training,
                              const strategies::StrategySpec& strategy,
                              const strategies::ScheduleOptions& options = {});

}  // namespace placesim::chakra

#endif  // PLACESIM_SIM_CHAKRA_EXPORT_H_
