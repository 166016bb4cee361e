// Rank placement: which GPU runs each rank of a device mesh.
//
// Rank r runs on global GPU index r (node-major: GPU r is local GPU r % gpus_per_node of
// node r / gpus_per_node). The rank order decides which mesh axis varies fastest along the
// rank numbering (RankToCoord), so with the default order (tp innermost) a tensor-parallel
// group of size <= gpus_per_node fills one node and rides NVLink.
// Thread-safety: pure function.
#ifndef PLACESIM_TOPOLOGY_PLACEMENT_H_
#define PLACESIM_TOPOLOGY_PLACEMENT_H_

#include <vector>

#include "base/status.h"
#include "topology/cluster.h"
#include "topology/mesh.h"

namespace placesim::topology {

// Returns the GPU vertex of every rank (index = rank). Errors (all reported at once):
//   mesh.<axis>: every size must be >= 1, and ep must divide dp;
//   rank_order: each of dp, tp, pp, cp exactly once;
//   mesh: world() must equal cluster.num_gpus() (one rank per GPU).
// O(world).
StatusOr<std::vector<VertexId>> PlaceRanks(const Cluster& cluster, const MeshShape& mesh,
                                           const RankOrder& order);

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_PLACEMENT_H_
