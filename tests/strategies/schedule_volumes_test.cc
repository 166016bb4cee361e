// The per-device bytes of the schedule's collectives come from the plan (schedule/volumes.cc):
// sync_grads_every_micro_batch multiplies the replicated-gradient sync by m, and a collective
// the plan does not have is an internal error naming its key, never a silent ring estimate.
#include <gtest/gtest.h>

#include <vector>

#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "strategies/schedule.h"
#include "strategies/schedule/internal/stage_builder.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::MakeCluster;
using test_util::MakeTraining;
using test_util::Model;

// llama2-7b under DDP on 8 ranks of one node, micro-batch 1, 4 micro-batches.
struct Ddp {
  StrategySpec strategy = *ExpandStrategyPreset("ddp", {.dp = 8}, 8);
  TrainingSpec training = MakeTraining(1, 32);
  topology::ClusterSpec cluster = MakeCluster(1);
};

TEST(ScheduleVolumes, SyncEveryMicroBatchMovesMTimesThePlansGradientVolume) {
  // llama2-7b: 6,738,415,616 parameters, 2-byte grads = 13,476,831,232 bytes; a ring
  // all-reduce over 8 ranks sends 2 x 7/8 of it = 23,584,454,656 bytes per sync, once per step
  // in the plan (no_sync), 4 times (every micro-batch) here: 94,337,818,624.
  const Ddp s;
  const StatusOr<std::vector<Schedule>> out =
      BuildSchedules(Model("llama2-7b"), s.training, s.strategy, s.cluster,
                     {.sync_grads_every_micro_batch = true});
  ASSERT_TRUE(out.ok()) << out.status().message();
  int64_t sent = 0;
  int64_t syncs = 0;
  for (const Op& op : out->front().ops) {
    if (op.kind != OpKind::kCollective || op.state != State::kGrads) continue;
    sent += op.bytes.count();
    ++syncs;
    // Every bucket is a multiple of 8 bytes (25 MiB, and the last 2,629,632), so the plan's
    // split gives each op exactly its own ring volume, 2 x 7/8 of its buffer.
    EXPECT_EQ(op.bytes.count(), op.buffer_bytes.count() * 2 * 7 / 8);
  }
  EXPECT_EQ(syncs, 4 * 515);  // 515 buckets of 25 MiB, every micro-batch
  EXPECT_EQ(sent, int64_t{94'337'818'624});
}

TEST(ScheduleVolumes, ACollectiveThePlanDoesNotHaveIsAnInternalError) {
  // The same step against a plan stripped of its collectives: the first key the builder
  // meets is the gradient all-reduce over the dp axis.
  const Ddp s;
  StatusOr<Plan> plan = Analyze(Model("llama2-7b"), s.training, s.strategy, s.cluster);
  ASSERT_TRUE(plan.ok());
  for (RankRole& role : plan->roles) role.collectives.clear();
  const ScheduleOptions options;
  schedule_internal::StepContext ctx = schedule_internal::MakeStepContext(
      Model("llama2-7b"), s.training, s.strategy, options, *plan);
  ASSERT_TRUE(schedule_internal::BoundOps(ctx).ok());
  const StatusOr<Schedule> built = schedule_internal::StageBuilder(ctx, 0).Build();
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), StatusCode::kInternal);
  EXPECT_EQ(built.status().message(),
            "stage 0: the schedule's all-reduce of grads on dp (axis) move 13476831232 buffer "
            "bytes in 515 ops; the plan has none");
}

}  // namespace
}  // namespace placesim::strategies
