// Writing Chakra execution traces: one rank's file (GlobalMetadata version "0.0.4", then one
// length-delimited Node per record, proto/et_def.proto) and the communicator-groups JSON in the
// symbolic_tensor_graph generator's format ({"1": [0, 1], ...}), which ASTRA-sim reads with
// the traces.
//
// Encodings, as the files ASTRA-sim ships: num_ops, comm_size and comm_type int64, tensor_size
// uint64, comm_src / comm_dst / comm_tag int32, the group as pg_name (its id as text). The
// placesim extensions (elementwise_bytes, nvme; trace.h) are written only when non-zero.
// Thread-safety: pure functions; WriteWorkload writes only the files it names.
#ifndef PLACESIM_SIM_CHAKRA_WRITER_H_
#define PLACESIM_SIM_CHAKRA_WRITER_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/chakra/trace.h"

namespace placesim::chakra {

// The bytes of rank `t`'s .et file. Complexity: O(nodes).
std::string SerializeRankTrace(const RankTrace& t);

// The communicator-groups document, keys in increasing group id, one line.
std::string CommGroupsJson(const std::map<int64_t, std::vector<int64_t>>& groups);

// Writes `<prefix>.<rank>.et` for each rank of `ranks` (every rank when empty) and
// `<prefix>.json` (the groups), each through a temporary renamed over the target.
// Errors (kInvalidArgument): a rank out of range; a file that cannot be written (its path).
Status WriteWorkload(const Workload& w, const std::string& prefix, std::span<const int64_t> ranks);

}  // namespace placesim::chakra

#endif  // PLACESIM_SIM_CHAKRA_WRITER_H_
