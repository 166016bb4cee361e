// The merge engine (see merge.h): first the shards (same sweep, same split, each once), then
// the points (each in the shard that owns its index, each once).
#include "sim/study/merge.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "base/errors.h"
#include "base/status.h"

namespace placesim::study {
namespace {

// The shard of each K = 1..count, or the problems that prevent it.
std::vector<const ShardHeader*> AssignShards(const std::vector<ShardHeader>& shards, int64_t count,
                                             ErrorList* errors) {
  const ShardHeader& first = shards.front();
  std::vector<const ShardHeader*> by_shard(static_cast<size_t>(count), nullptr);
  for (const ShardHeader& s : shards) {
    if (s.fingerprint != first.fingerprint || s.total_points != first.total_points) {
      errors->AddLine(fmt::format(
          "{}: from a different sweep (fingerprint {}, {} points) than {} (fingerprint {}, {} "
          "points): the scenario file, --set, --vary, --mode or --network differ",
          s.name, s.fingerprint, s.total_points, first.name, first.fingerprint,
          first.total_points));
      continue;
    }
    const int64_t k = s.shard.index, n = s.shard.count;
    if (n != count) {
      errors->AddLine(fmt::format("{}: shard {}/{} does not belong to a split into {} shards",
                                  s.name, k, n, count));
      continue;
    }
    if (k < 1 || k > n) {
      errors->AddLine(fmt::format("{}: shard {}/{} is out of range", s.name, k, n));
      continue;
    }
    const ShardHeader*& slot = by_shard[static_cast<size_t>(k - 1)];
    if (slot != nullptr) {
      errors->AddLine(fmt::format("{}: shard {}/{} overlaps {}, which holds the same shard", s.name,
                                  k, n, slot->name));
      continue;
    }
    slot = &s;
  }
  // A split into a million shards of which one is given misses 999,999: the first few
  // name them, the count says the rest.
  constexpr size_t kListed = 10;
  std::vector<std::string> missing;
  int64_t missing_count = 0;
  for (int64_t k = 1; k <= count; ++k) {
    if (by_shard[static_cast<size_t>(k - 1)] != nullptr) continue;
    if (++missing_count <= static_cast<int64_t>(kListed)) {
      missing.push_back(fmt::format("{}/{}", k, count));
    }
  }
  if (missing_count > 0 && errors->empty()) {
    const int64_t more = missing_count - static_cast<int64_t>(missing.size());
    errors->AddLine(
        fmt::format("missing shards: {}{}", JoinNames(missing),
                    more > 0 ? fmt::format(" and {} more ({} in all)", more, missing_count) : ""));
  }
  return by_shard;
}

}  // namespace

StatusOr<MergePlan> PlanMerge(const std::vector<ShardHeader>& shards) {
  const ShardHeader& first = shards.front();
  const int64_t total = first.total_points;
  const int64_t count = first.shard.count;
  if (total < 0 || total > kMaxSweepPoints || count < 1 || count > kMaxSweepPoints) {
    return InvalidArgumentError(
        fmt::format("{}: {} points in {} shards is out of range", first.name, total, count));
  }
  ErrorList errors;
  std::vector<const ShardHeader*> by_shard = AssignShards(shards, count, &errors);
  if (!errors.empty()) return InvalidArgumentError("cannot merge:\n" + errors.ToStatus().message());

  // Every point exactly once, each in the shard that owns its index.
  constexpr PointSource kNone{SIZE_MAX, SIZE_MAX};
  MergePlan plan;
  plan.points.assign(static_cast<size_t>(total), kNone);
  plan.first_shard = static_cast<size_t>(by_shard.front() - shards.data());
  for (const ShardHeader* s : by_shard) {
    const int64_t k = s->shard.index;
    for (size_t pos = 0; pos < s->point_indices.size(); ++pos) {
      const int64_t i = s->point_indices[pos];
      if (i < 0 || i >= total || i % count != k - 1) {
        errors.AddLine(
            fmt::format("{}: point {} does not belong to shard {}/{}", s->name, i, k, count));
      } else if (plan.points[static_cast<size_t>(i)].shard != SIZE_MAX) {
        errors.AddLine(fmt::format("{}: point {} appears twice", s->name, i));
      } else {
        plan.points[static_cast<size_t>(i)] = {static_cast<size_t>(s - shards.data()), pos};
      }
    }
  }
  for (int64_t i = 0; i < total && errors.size() < 20; ++i) {
    if (plan.points[static_cast<size_t>(i)].shard == SIZE_MAX) {
      errors.AddLine(fmt::format("point {} is missing from shard {}/{}", i, i % count + 1, count));
    }
  }
  if (!errors.empty()) return InvalidArgumentError("cannot merge:\n" + errors.ToStatus().message());
  return plan;
}

}  // namespace placesim::study
