// DepGraph: successors in compressed rows, built by counting, prefix-summing and filling
// (see dep_graph.h).
#include "sim/executor/dep_graph.h"

#include <fmt/format.h>

#include <limits>

namespace placesim::sim::internal {

using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;

StatusOr<DepGraph> DepGraph::Build(std::span<const Schedule> schedules,
                                   std::span<const int32_t> offsets,
                                   std::span<const int32_t> lane_of_stage) {
  size_t n_ops = 0;
  for (const Schedule& s : schedules) n_ops += s.ops.size();
  DepGraph g;
  g.waiting_.assign(n_ops, 0);
  g.succ_begin_.assign(n_ops + 1, 0);
  // Calls edge(from, to) for every edge, validating the deps on the way.
  auto for_each_edge = [&](auto&& edge) -> Status {
    for (size_t k = 0; k < schedules.size(); ++k) {
      const Schedule& s = schedules[k];
      const int32_t offset = offsets[k];
      for (size_t j = 0; j < s.ops.size(); ++j) {
        const Op& op = s.ops[j];
        const int32_t i = offset + static_cast<int32_t>(j);
        if (op.deps_begin < 0 || op.deps_end < op.deps_begin ||
            static_cast<size_t>(op.deps_end) > s.deps.size()) {
          return InvalidArgumentError(
              fmt::format("schedules[{}].ops[{}].deps_begin, deps_end: [{}, {}): must lie in "
                          "the schedule's {} deps",
                          k, j, op.deps_begin, op.deps_end, s.deps.size()));
        }
        for (int32_t d : s.DepsOf(j)) {
          if (d < 0 || static_cast<size_t>(d) >= s.ops.size()) {
            return InvalidArgumentError(fmt::format(
                "schedules[{}].ops[{}]: dep {}: must be an op of the schedule", k, j, d));
          }
          edge(offset + d, i);
        }
        if (op.kind == OpKind::kRecv) {
          const int32_t peer = lane_of_stage[static_cast<size_t>(op.peer_stage)];
          edge(offsets[static_cast<size_t>(peer)] + op.match, i);
        }
      }
    }
    return Status();
  };
  RETURN_IF_ERROR(for_each_edge([&](int32_t from, int32_t to) {
    ++g.succ_begin_[static_cast<size_t>(from) + 1];
    ++g.waiting_[static_cast<size_t>(to)];
  }));
  int64_t edges = 0;
  for (size_t i = 0; i < n_ops; ++i) {
    edges += g.succ_begin_[i + 1];
    if (edges > std::numeric_limits<int32_t>::max()) {
      return OutOfRangeError(
          fmt::format("schedules: more than {} deps in all", std::numeric_limits<int32_t>::max()));
    }
    g.succ_begin_[i + 1] = static_cast<int32_t>(edges);
  }
  g.succ_.resize(static_cast<size_t>(g.succ_begin_[n_ops]));
  std::vector<int32_t> fill(g.succ_begin_.begin(), g.succ_begin_.end() - 1);
  RETURN_IF_ERROR(for_each_edge([&](int32_t from, int32_t to) {
    g.succ_[static_cast<size_t>(fill[static_cast<size_t>(from)]++)] = to;
  }));
  return g;
}

}  // namespace placesim::sim::internal
