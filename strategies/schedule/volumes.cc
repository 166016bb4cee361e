// Per-device bytes of every collective: the plan's volume per (kind, state, axis, group),
// split over the schedule's ops in proportion to their buffers, so that the sums agree with
// the plan to the byte. Pipeline sends move what they carry and are left alone.
// Thread-safety: one builder per thread.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "strategies/cost/arith.h"
#include "strategies/schedule/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

Status StageBuilder::AssignCollectiveBytes() {
  using Key = std::tuple<CollectiveKind, State, Axis, GroupKind>;
  std::map<Key, std::pair<int64_t, int64_t>> plan_volume;  // buffer x count, total bytes
  for (const Collective& col : role_->collectives) {
    const bool replica = col.kind == CollectiveKind::kAllReduce && ctx_.grads_reduce_scattered &&
                         col.state == State::kGrads;
    // Under ep > 1 the plan's expert-part collectives (AddDataParallelComm's "expert" part,
    // named so in their purpose) run over the expert replica group.
    const bool expert_col = ctx_.split_expert && col.purpose.starts_with("expert");
    const GroupKind group = col.axis != Axis::kData ? GroupKind::kAxis
                            : expert_col            ? ctx_.expert_group
                                                    : GroupOf(col.group_size, ctx_.dpc, replica);
    auto& vol = plan_volume[Key{col.kind, col.state, col.axis, group}];
    vol.first += col.buffer_bytes.count() * col.count;
    vol.second += col.total_bytes.count();
  }
  std::map<Key, std::vector<size_t>> ops_of;
  for (size_t i = 0; i < sched_.ops.size(); ++i) {
    Op& op = sched_.ops[i];
    if (op.kind != OpKind::kCollective || op.axis == Axis::kPipeline) continue;
    ops_of[Key{op.collective, op.state, op.axis, op.group}].push_back(i);
    // dp groups span cp, as the states are placed on both; a hybrid replica group does not
    // (its members share a cp coordinate), an expert replica group does (ep > 1; no hybrid).
    if (op.axis == Axis::kData) {
      op.spans_context = ctx_.cp > 1 && (op.group != GroupKind::kReplicaGroup || ctx_.split_expert);
    }
  }
  for (const auto& [key, indices] : ops_of) {
    std::vector<int64_t> weights;
    int64_t buffers = 0;
    for (size_t i : indices) {
      weights.push_back(sched_.ops[i].buffer_bytes.count());
      buffers += weights.back();
    }
    const auto it = plan_volume.find(key);
    if (it != plan_volume.end() && it->second.first == buffers) {
      const std::vector<int64_t> parts = Split(it->second.second, weights);
      for (size_t k = 0; k < indices.size(); ++k)
        sched_.ops[indices[k]].bytes = Bytes::Count(parts[k]);
    } else {
      for (size_t i : indices) {
        Op& op = sched_.ops[i];
        op.bytes = cost::RingBytesPerDevice(
            op.buffer_bytes, op.collective == CollectiveKind::kAllReduce ? 2 : 1, op.group_size);
      }
    }
  }
  return OkStatus();
}

}  // namespace placesim::strategies::schedule_internal
