// Reading Chakra execution traces: one rank's file (length-delimited records, GlobalMetadata
// then one Node per record; proto/et_def.proto), a whole workload (`<prefix>.<rank>.et` for
// every rank) and the communicator-groups JSON (`{"1": [0, 1], ...}`, group id -> ranks, as
// the symbolic_tensor_graph generator writes it).
//
// Errors are kInvalidArgument (the CLI's exit code 2) and name the rank, the node id (or the
// record's byte offset when no node id is known yet) and the field: a truncated record, a
// record that is not a message, a node type or collective type placesim does not run, an
// attribute of the wrong kind or out of range, a missing rank file, a group naming a rank
// that has no file. Structural checks (deps, cycles, matching) are validate.h's.
// Thread-safety: pure functions.
#ifndef PLACESIM_SIM_CHAKRA_READER_H_
#define PLACESIM_SIM_CHAKRA_READER_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/chakra/trace.h"

namespace placesim::chakra {

// Parses the contents of rank `rank`'s file. Complexity: O(bytes).
StatusOr<RankTrace> ParseRankTrace(std::string_view bytes, int64_t rank);

// Parses a communicator-groups document; `what` (its path) opens error messages. Group ids are
// decimal integers, members distinct ranks >= 0.
StatusOr<std::map<int64_t, std::vector<int64_t>>> ParseCommGroups(std::string_view json,
                                                                  std::string_view what);

// The ranks `<prefix>.<rank>.et` exist for: rank 0 up to the highest one found in prefix's
// directory. Errors: none found; a rank below the highest without a file (a missing rank).
StatusOr<int64_t> CountRanks(const std::string& prefix);

// Reads every rank's file and, when `groups_file` is non-empty, the groups; checks that every
// group names only ranks that have a file. Does not validate the graphs (ValidateWorkload).
StatusOr<Workload> ReadWorkload(const std::string& prefix, const std::string& groups_file);

}  // namespace placesim::chakra

#endif  // PLACESIM_SIM_CHAKRA_READER_H_
