// Trace layout: the traced ranks of each lane and the names of processes and slices (see
// trace_layout.h).
#include "sim/executor/trace_layout.h"

#include <fmt/format.h>

namespace placesim::sim::internal {

using strategies::Op;
using strategies::OpKind;

StatusOr<std::vector<std::vector<int64_t>>> TracedRanksPerLane(
    std::span<const int64_t> trace_ranks, const topology::MeshShape& mesh,
    topology::RankOrder order, std::span<const TracedLane> lanes,
    std::span<const int32_t> lane_of_stage, int64_t max_traced_ops) {
  const int64_t world = mesh.world();
  for (size_t k = 0; k < trace_ranks.size(); ++k) {
    const int64_t r = trace_ranks[k];
    if (r < 0 || r >= world) {
      return InvalidArgumentError(
          fmt::format("trace_ranks[{}]: {}: must be in [0, {})", k, r, world));
    }
    if (k > 0 && r <= trace_ranks[k - 1]) {
      return InvalidArgumentError(fmt::format(
          "trace_ranks[{}]: {}: must be greater than trace_ranks[{}] = {} (sorted, no repeats)", k,
          r, k - 1, trace_ranks[k - 1]));
    }
  }
  // A requested rank goes to the lane of its stage. A lane that holds every rank of its stage
  // traces any of them; otherwise only its simulated rank is known to play it.
  std::vector<std::vector<int64_t>> ranks(lanes.size());
  if (trace_ranks.empty()) {
    for (size_t k = 0; k < lanes.size(); ++k) ranks[k].push_back(lanes[k].rank);
  } else {
    for (int64_t r : trace_ranks) {
      const int32_t k =
          lane_of_stage[static_cast<size_t>(topology::RankToCoord(mesh, order, r).pp)];
      if (k < 0) continue;
      const TracedLane& lane = lanes[static_cast<size_t>(k)];
      if (lane.covers_stage || r == lane.rank) ranks[static_cast<size_t>(k)].push_back(r);
    }
  }
  // Every traced rank repeats its lane's whole timeline in the trace; bound the total so that a
  // wide --trace-ranks cannot write gigabytes.
  int64_t traced_ranks = 0;
  int64_t traced_ops = 0;
  for (size_t k = 0; k < lanes.size(); ++k) {
    traced_ranks += static_cast<int64_t>(ranks[k].size());
    traced_ops += static_cast<int64_t>(ranks[k].size()) * lanes[k].ops;
  }
  if (traced_ops > max_traced_ops) {
    if (lanes.size() == 1) {
      return OutOfRangeError(fmt::format(
          "trace_ranks: {} ranks × {} ops = {} traced ops; the limit is {}: trace fewer ranks",
          traced_ranks, lanes[0].ops, traced_ops, max_traced_ops));
    }
    return OutOfRangeError(fmt::format(
        "trace_ranks: {} ranks over {} schedules trace {} ops; the limit is {}: trace fewer ranks",
        traced_ranks, lanes.size(), traced_ops, max_traced_ops));
  }
  return ranks;
}

std::string ProcessLabel(int64_t rank, const topology::VertexInfo& gpu) {
  std::string where = gpu.name;
  if (gpu.node >= 0 && where.find('/') == std::string::npos) {
    where = fmt::format("node{}/{}", gpu.node, gpu.name);
  }
  return fmt::format("rank {} ({})", rank, where);
}

std::string SliceName(const Op& op) {
  switch (op.kind) {
    case OpKind::kCompute:
    case OpKind::kHostCompute:
      return op.layer >= 0 ? fmt::format("{} L{}", strategies::PhaseName(op.phase), op.layer)
             : op.layer == strategies::kEmbeddingLayer
                 ? fmt::format("{} embedding", strategies::PhaseName(op.phase))
             : op.layer == strategies::kOutputLayer
                 ? fmt::format("{} output", strategies::PhaseName(op.phase))
                 : std::string(strategies::PhaseName(op.phase));
    case OpKind::kCollective:
      return fmt::format("{} {}", strategies::CollectiveKindName(op.collective),
                         strategies::StateName(op.state));
    case OpKind::kCopy:
      return fmt::format("{} {}", strategies::CopyKindName(op.copy),
                         strategies::StateName(op.state));
    case OpKind::kAlloc:
    case OpKind::kFree:
    case OpKind::kRecv:
      break;
  }
  return std::string();
}

}  // namespace placesim::sim::internal
