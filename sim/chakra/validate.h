// Structural checks of a Chakra workload before it is replayed, so that a bad trace is a
// clear error (kInvalidArgument naming rank, node id and field), never a hang or a crash:
//   - node ids unique within a rank; every data_deps / ctrl_deps entry names a node of the
//     same rank (no dangling dependency); the dependency graph is acyclic;
//   - a collective's comm_group is a group of the groups file (or absent: every rank) and
//     holds the rank; every member of a group issues the same number of collectives on it,
//     and the k-th of each is the same collective type;
//   - a send's comm_dst and a recv's comm_src are other ranks of the workload, and every send
//     (src, dst, tag) has exactly one recv (dst, src, tag) and the other way round.
// Thread-safety: pure function.
#ifndef PLACESIM_SIM_CHAKRA_VALIDATE_H_
#define PLACESIM_SIM_CHAKRA_VALIDATE_H_

#include "base/status.h"
#include "sim/chakra/trace.h"

namespace placesim::chakra {

// The first problem found, in rank order then node order. Complexity: O(nodes log nodes).
Status ValidateWorkload(const Workload& w);

// The members of `group` (kWorld: every rank). REQUIRES: ValidateWorkload passed, or `group`
// is kWorld or a key of w.groups.
std::vector<int64_t> GroupMembers(const Workload& w, int64_t group);

}  // namespace placesim::chakra

#endif  // PLACESIM_SIM_CHAKRA_VALIDATE_H_
