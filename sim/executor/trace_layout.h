// Trace layout (internal to sim/executor): which lane traces which ranks, and the names the
// executor gives processes and slices (the "Trace" section of executor.h). Pure functions of
// their inputs, so the executor's trace stays deterministic.
//
// Thread-safety: stateless.
#ifndef PLACESIM_SIM_EXECUTOR_TRACE_LAYOUT_H_
#define PLACESIM_SIM_EXECUTOR_TRACE_LAYOUT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "strategies/schedule.h"
#include "topology/cluster.h"
#include "topology/mesh.h"

namespace placesim::sim::internal {

// What the trace needs to know of a lane.
struct TracedLane {
  int64_t rank = 0;           // its simulated rank
  bool covers_stage = false;  // its schedule holds every rank of its stage
  int64_t ops = 0;            // ops in its schedule
};

// The ranks each lane traces, in increasing order: with no `trace_ranks`, each lane's
// simulated rank; otherwise each requested rank goes to the lane of its pp stage
// (lane_of_stage, -1 when none), which traces it when it covers its stage or simulates it.
// Errors: kInvalidArgument when trace_ranks are out of [0, world) or not strictly increasing
// ("trace_ranks[k]: ..."); kOutOfRange when the traced ranks x ops exceed `max_traced_ops`.
StatusOr<std::vector<std::vector<int64_t>>> TracedRanksPerLane(
    std::span<const int64_t> trace_ranks, const topology::MeshShape& mesh,
    topology::RankOrder order, std::span<const TracedLane> lanes,
    std::span<const int32_t> lane_of_stage, int64_t max_traced_ops);

// The process name of rank `rank` on GPU `gpu`: "rank 3 (node0/gpu3)" (the GPU's name, under
// its node's when the name does not say it).
std::string ProcessLabel(int64_t rank, const topology::VertexInfo& gpu);

// The slice name of an op that takes time: compute "<phase> L3", "<phase> embedding",
// "<phase> output" or "<phase>" (no layer); a collective "<kind> <state>" ("all-reduce grads");
// a copy "<copy kind> <state>" ("d2h optimizer"). Empty for Alloc, Free and Recv, which take
// no time.
std::string SliceName(const strategies::Op& op);

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_EXECUTOR_TRACE_LAYOUT_H_
