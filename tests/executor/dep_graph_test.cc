// DepGraph against hand-drawn graphs: an op becomes ready once, when its last dep is released;
// a recv waits for the send it matches in the other lane; bad dep ranges are refused by name.
#include "sim/executor/dep_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace placesim::sim::internal {
namespace {

using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;

// An op with deps [begin, end) of its schedule's flat list.
Op WithDeps(int32_t begin, int32_t end) {
  Op op;
  op.kind = OpKind::kCompute;
  op.deps_begin = begin;
  op.deps_end = end;
  return op;
}

TEST(DepGraph, AnOpIsReadyOnceItsLastDepIsReleasedAndARecvWaitsForItsSend) {
  // Lane 0 (stage 0): ops 0, 1; op 1 needs op 0. Lane 1 (stage 1, offset 2): op 0 is a recv
  // matching stage 0's op 1, op 1 needs lane 1's op 0 and nothing else.
  // Global numbers: 0, 1 | 2 (recv), 3. Edges: 0->1, 1->2, 2->3.
  Schedule s0;
  s0.stage = 0;
  s0.deps = {0};
  s0.ops = {WithDeps(0, 0), WithDeps(0, 1)};
  Schedule s1;
  s1.stage = 1;
  s1.deps = {0};
  Op recv = WithDeps(0, 0);
  recv.kind = OpKind::kRecv;
  recv.peer_stage = 0;
  recv.match = 1;
  s1.ops = {recv, WithDeps(0, 1)};
  const std::vector<Schedule> schedules = {s0, s1};
  const std::vector<int32_t> offsets = {0, 2};
  const std::vector<int32_t> lane_of_stage = {0, 1};
  StatusOr<DepGraph> g = DepGraph::Build(schedules, offsets, lane_of_stage);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->ready(0));
  EXPECT_FALSE(g->ready(1));
  EXPECT_FALSE(g->ready(2));  // the recv, before its send
  std::vector<int32_t> became_ready;
  const auto note = [&](int32_t i) { became_ready.push_back(i); };
  g->Release(0, note);
  g->Release(1, note);
  g->Release(2, note);
  EXPECT_THAT(became_ready, ::testing::ElementsAre(1, 2, 3));
}

TEST(DepGraph, AnOpWithTwoDepsBecomesReadyOnlyAfterBoth) {
  // Op 2 needs ops 0 and 1: releasing 0 leaves it waiting; releasing 1 makes it ready.
  Schedule s;
  s.deps = {0, 1};
  s.ops = {WithDeps(0, 0), WithDeps(0, 0), WithDeps(0, 2)};
  StatusOr<DepGraph> g =
      DepGraph::Build(std::vector<Schedule>{s}, std::vector<int32_t>{0}, std::vector<int32_t>{0});
  ASSERT_TRUE(g.ok());
  int calls = 0;
  g->Release(0, [&](int32_t) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(g->ready(2));
  g->Release(1, [&](int32_t i) { calls += i == 2; });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(g->ready(2));
}

TEST(DepGraph, RefusesADepRangeOrADepOutsideTheSchedule) {
  Schedule s;
  s.deps = {5};
  s.ops = {WithDeps(0, 2)};
  StatusOr<DepGraph> range =
      DepGraph::Build(std::vector<Schedule>{s}, std::vector<int32_t>{0}, std::vector<int32_t>{0});
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.status().message(),
            "schedules[0].ops[0].deps_begin, deps_end: [0, 2): must lie in the schedule's 1 deps");
  s.ops = {WithDeps(0, 1)};
  StatusOr<DepGraph> dep =
      DepGraph::Build(std::vector<Schedule>{s}, std::vector<int32_t>{0}, std::vector<int32_t>{0});
  ASSERT_FALSE(dep.ok());
  EXPECT_EQ(dep.status().message(), "schedules[0].ops[0]: dep 5: must be an op of the schedule");
}

}  // namespace
}  // namespace placesim::sim::internal
