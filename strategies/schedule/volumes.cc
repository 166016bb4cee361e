// Per-device bytes of every collective: the plan's volume per (kind, state, axis, group),
// split over the schedule's ops in proportion to their buffers (Split), so that the sums agree
// with the plan to the byte. Pipeline sends move what they carry and are left alone.
// Every other collective must have its plan counterpart with the same total buffer: a missing
// or different one is a bug in the schedule or the plan, reported as kInternal.
// Thread-safety: one builder per thread.
#include <fmt/format.h>

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

namespace {

using Key = std::tuple<CollectiveKind, State, Axis, GroupKind>;

std::string KeyName(const Key& key) {
  return fmt::format("{} of {} on {} ({})", CollectiveKindName(std::get<0>(key)),
                     StateName(std::get<1>(key)), topology::AxisName(std::get<2>(key)),
                     GroupKindName(std::get<3>(key)));
}

}  // namespace

Status StageBuilder::AssignCollectiveBytes() {
  // The plan counts a replicated gradient's sync once per step (DDP no_sync); under
  // sync_grads_every_micro_batch the schedule runs it after every micro-batch: m times the
  // plan's volume. Sharded gradients are synchronized every micro-batch either way.
  const bool sync_each = ctx_.options->sync_grads_every_micro_batch && !ctx_.g_sharded;
  std::map<Key, std::pair<int64_t, int64_t>> plan_volume;  // buffer x count, total bytes
  for (const Collective& col : role_->collectives) {
    const bool replica = col.kind == CollectiveKind::kAllReduce && ctx_.grads_reduce_scattered &&
                         col.state == State::kGrads;
    // Under ep > 1 the plan's expert-part collectives run over the expert replica group.
    const bool expert_col = ctx_.split_expert && IsExpertPartSync(col.reason);
    const GroupKind group = col.axis != Axis::kData ? GroupKind::kAxis
                            : expert_col            ? ctx_.expert_group
                                                    : GroupOf(col.group_size, ctx_.dpc, replica);
    const bool grad_sync =
        col.reason == CommPurpose::kGradSync || col.reason == CommPurpose::kExpertGradSync;
    const int64_t times = sync_each && grad_sync ? ctx_.m : 1;
    auto& vol = plan_volume[Key{col.kind, col.state, col.axis, group}];
    vol.first += col.buffer_bytes.count() * col.count * times;
    vol.second += col.total_bytes.count() * times;
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
    if (it == plan_volume.end() || it->second.first != buffers) {
      return InternalError(fmt::format(
          "stage {}: the schedule's {} move {} buffer bytes in {} ops; the plan has {}", stage_,
          KeyName(key), buffers, indices.size(),
          it == plan_volume.end() ? std::string("none") : fmt::format("{}", it->second.first)));
    }
    const std::vector<int64_t> parts = Split(it->second.second, weights);
    for (size_t k = 0; k < indices.size(); ++k)
      sched_.ops[indices[k]].bytes = Bytes::Count(parts[k]);
  }
  return OkStatus();
}

}  // namespace placesim::strategies::schedule_internal
