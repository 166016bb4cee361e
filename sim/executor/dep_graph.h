// DepGraph (internal to sim/executor): the dependency edges between the ops of every lane, in
// compressed rows, and each op's count of unfinished deps. Ops are numbered globally, lane k's
// op j being offsets[k] + j. An op's deps are its schedule's deps; a recv also depends on the
// pipeline send it matches, in the lane of its peer stage (validated beforehand).
//
// Invariants: waiting(i) counts i's deps not yet released; Release visits each edge once, so
// an op becomes ready exactly once. Thread-safety: one graph per execution.
#ifndef PLACESIM_SIM_EXECUTOR_DEP_GRAPH_H_
#define PLACESIM_SIM_EXECUTOR_DEP_GRAPH_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "strategies/schedule.h"

namespace placesim::sim::internal {

class DepGraph {
 public:
  // The graph of `schedules` (lane k runs schedules[k], its op 0 numbered offsets[k];
  // lane_of_stage maps a pp stage to its lane or -1).
  // Errors (kInvalidArgument, naming schedule and op): deps_begin / deps_end outside the
  // schedule's deps; a dep outside the schedule. kOutOfRange: more than 2^31 - 1 edges.
  // REQUIRES: every recv's peer_stage has a lane and its match is an op of it.
  // Complexity: O(ops + deps), two passes over the edges (count, then fill).
  static StatusOr<DepGraph> Build(std::span<const strategies::Schedule> schedules,
                                  std::span<const int32_t> offsets,
                                  std::span<const int32_t> lane_of_stage);

  // Whether op i waits for no dep.
  bool ready(int32_t i) const { return waiting_[static_cast<size_t>(i)] == 0; }

  // Op i finished: each successor loses a dep, and `now_ready(successor)` is called for those
  // left with none, in edge order. O(successors), no allocation.
  template <typename F>
  void Release(int32_t i, F&& now_ready) {
    const int32_t end = succ_begin_[static_cast<size_t>(i) + 1];
    for (int32_t k = succ_begin_[static_cast<size_t>(i)]; k < end; ++k) {
      const int32_t succ = succ_[static_cast<size_t>(k)];
      if (--waiting_[static_cast<size_t>(succ)] == 0) now_ready(succ);
    }
  }

 private:
  std::vector<int32_t> waiting_;  // per op, unfinished deps
  // Op i's successors are succ_[succ_begin_[i] .. succ_begin_[i + 1]).
  std::vector<int32_t> succ_begin_;
  std::vector<int32_t> succ_;
};

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_EXECUTOR_DEP_GRAPH_H_
