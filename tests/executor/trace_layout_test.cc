// The trace's layout: which lane traces which ranks, and the names of processes and slices
// (executor.h, "Trace").
#include "sim/executor/trace_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace placesim::sim::internal {
namespace {

using strategies::Op;
using strategies::OpKind;
using ::testing::ElementsAre;

TEST(TraceLayout, AProcessIsNamedByItsRankAndItsGpuUnderItsNode) {
  topology::VertexInfo bare;
  bare.name = "gpu3";
  bare.node = 0;
  EXPECT_EQ(ProcessLabel(3, bare), "rank 3 (node0/gpu3)");
  topology::VertexInfo qualified;
  qualified.name = "node1/gpu1";
  qualified.node = 1;
  EXPECT_EQ(ProcessLabel(9, qualified), "rank 9 (node1/gpu1)");
}

TEST(TraceLayout, SlicesAreNamedByPhaseAndLayerOrByKindAndState) {
  Op compute;
  compute.kind = OpKind::kCompute;
  compute.phase = strategies::Phase::kForward;
  compute.layer = 3;
  EXPECT_EQ(SliceName(compute), "forward L3");
  compute.layer = strategies::kEmbeddingLayer;
  EXPECT_EQ(SliceName(compute), "forward embedding");
  compute.layer = strategies::kNoLayer;
  EXPECT_EQ(SliceName(compute), "forward");
  Op collective;
  collective.kind = OpKind::kCollective;
  collective.collective = strategies::CollectiveKind::kReduceScatter;
  collective.state = strategies::State::kGrads;
  EXPECT_EQ(SliceName(collective), "reduce-scatter grads");
  Op alloc;
  alloc.kind = OpKind::kAlloc;
  EXPECT_EQ(SliceName(alloc), "");  // takes no time: no slice
}

TEST(TraceLayout, RequestedRanksGoToTheLaneOfTheirStage) {
  // dp 2 x pp 2 in the default order (tp, cp, pp, dp from inner to outer: pp inside dp), so
  // rank r plays stage r mod 2: ranks 0, 2 on stage 0, ranks 1, 3 on stage 1. Lane 0 (stage 0)
  // covers its stage and traces 0 and 2; lane 1 (stage 1) simulates rank 1 only, so rank 3 is
  // skipped.
  topology::MeshShape mesh;
  mesh.dp = 2;
  mesh.pp = 2;
  const topology::RankOrder order{};
  ASSERT_EQ(topology::RankToCoord(mesh, order, 3).pp, 1);
  const std::vector<TracedLane> lanes = {{0, true, 10}, {1, false, 10}};
  const std::vector<int32_t> lane_of_stage = {0, 1};
  const std::vector<int64_t> wanted = {0, 1, 2, 3};
  auto ranks = TracedRanksPerLane(wanted, mesh, order, lanes, lane_of_stage, 1000);
  ASSERT_TRUE(ranks.ok()) << ranks.status().message();
  EXPECT_THAT((*ranks)[0], ElementsAre(0, 2));
  EXPECT_THAT((*ranks)[1], ElementsAre(1));
  // 3 traced ranks x 10 ops = 30 ops against a limit of 29.
  auto over = TracedRanksPerLane(wanted, mesh, order, lanes, lane_of_stage, 29);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(),
            "trace_ranks: 3 ranks over 2 schedules trace 30 ops; the limit is 29: trace fewer "
            "ranks");
}

}  // namespace
}  // namespace placesim::sim::internal
