// The merge engine of sharded sweeps: checks that the shards of one sweep (see sweep.h) are
// all there, once each, and hold exactly their own points, and says where every point of
// the whole sweep is. It sees only each shard's identity and point indices, so it works the
// same whatever the shards were read from; `placesim merge` reads the JSON files.
// Thread-safety: reentrant.
#ifndef PLACESIM_SIM_STUDY_MERGE_H_
#define PLACESIM_SIM_STUDY_MERGE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/study/sweep.h"

namespace placesim::study {

// What the merge needs of one shard.
struct ShardHeader {
  std::string name;         // the file it came from, for messages
  std::string fingerprint;  // SweepFingerprint of its sweep
  int64_t total_points = 0;
  ShardSpec shard;
  std::vector<int64_t> point_indices;  // global indices, in the shard's order
};

// Where a point of the merged sweep lives: shards[shard].point_indices[position].
struct PointSource {
  size_t shard = 0;
  size_t position = 0;
};

// The source of every point 0 .. total_points - 1, in index order, and the shard whose
// header the merged result keeps (the one holding shard 1).
struct MergePlan {
  std::vector<PointSource> points;
  size_t first_shard = 0;
};

// REQUIRES: !shards.empty(). Errors (kInvalidArgument; one problem per line, after the
// header line "cannot merge:" or, for an impossible size, the first shard's name):
// shards of different sweeps, of different splits, out of range, overlapping or missing;
// points outside their shard, twice, or missing (at most 20 of those listed).
// Complexity: O(total points + shards).
StatusOr<MergePlan> PlanMerge(const std::vector<ShardHeader>& shards);

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_MERGE_H_
