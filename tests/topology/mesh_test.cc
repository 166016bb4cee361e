// Device mesh: rank-order parsing and its errors, rank <-> coordinate arithmetic.
#include "topology/mesh.h"

#include <gtest/gtest.h>

namespace placesim::topology {
namespace {

TEST(RankOrder, DefaultIsMegatronOrderTensorInnermost) {
  EXPECT_EQ(ToString(RankOrder{}), "tp,cp,pp,dp");
}

TEST(RankOrder, ParsesAPermutationAndPrintsItBack) {
  StatusOr<RankOrder> order = ParseRankOrder("dp, tp ,pp,cp");
  ASSERT_TRUE(order.ok()) << order.status().ToString();
  EXPECT_EQ(order->inner_to_outer[0], Axis::kData);
  EXPECT_EQ(order->inner_to_outer[1], Axis::kTensor);
  EXPECT_EQ(order->inner_to_outer[2], Axis::kPipeline);
  EXPECT_EQ(order->inner_to_outer[3], Axis::kContext);
  EXPECT_EQ(ToString(*order), "dp,tp,pp,cp");
}

TEST(RankOrder, RepeatedAxisIsRejectedNamingTheAxis) {
  StatusOr<RankOrder> order = ParseRankOrder("tp,tp,pp,dp");
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(order.status().message(),
            "rank order \"tp,tp,pp,dp\": axis \"tp\" appears twice; expected each of dp, tp, "
            "pp, cp exactly once");
}

TEST(RankOrder, UnknownAxisIsRejected) {
  StatusOr<RankOrder> order = ParseRankOrder("tp,xp,pp,dp");
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().message(),
            "rank order \"tp,xp,pp,dp\": unknown axis \"xp\"; expected each of dp, tp, pp, cp "
            "exactly once");
}

TEST(RankOrder, MissingAxisIsRejectedNamingIt) {
  StatusOr<RankOrder> order = ParseRankOrder("tp,pp,dp");
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().message(),
            "rank order \"tp,pp,dp\": missing axis \"cp\"; expected each of dp, tp, pp, cp "
            "exactly once");
}

TEST(RankOrder, ExpertAxisOwnsNoRanks) {
  StatusOr<RankOrder> order = ParseRankOrder("tp,ep,pp,dp");
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("axis \"ep\" owns no ranks"), std::string::npos);
}

TEST(RankOrder, EmptyEntryIsRejected) {
  StatusOr<RankOrder> order = ParseRankOrder("tp,,pp,dp,cp");
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("entry 2 is empty"), std::string::npos);
}

TEST(Mesh, AxisNamesAndSizes) {
  MeshShape shape{.dp = 4, .tp = 8, .pp = 2, .cp = 1, .ep = 2};
  EXPECT_STREQ(AxisName(Axis::kExpert), "ep");
  EXPECT_EQ(shape.size(Axis::kData), 4);
  EXPECT_EQ(shape.size(Axis::kTensor), 8);
  EXPECT_EQ(shape.size(Axis::kPipeline), 2);
  EXPECT_EQ(shape.size(Axis::kExpert), 2);
  // ep lives inside dp: 4 x 8 x 2 x 1 = 64 ranks.
  EXPECT_EQ(shape.world(), 64);
}

TEST(Mesh, RankToCoordIsMixedRadixWithTheInnermostAxisFastest) {
  // Order tp, cp, pp, dp with TP = 4, CP = 1, PP = 3, DP = 2: rank 13 has
  //   tp = 13 % 4 = 1; rest 3; cp = 3 % 1 = 0; pp = 3 % 3 = 0; rest 1; dp = 1.
  MeshShape shape{.dp = 2, .tp = 4, .pp = 3, .cp = 1};
  MeshCoord c = RankToCoord(shape, RankOrder{}, 13);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.cp, 0);
  EXPECT_EQ(c.pp, 0);
  EXPECT_EQ(c.dp, 1);
  // Back: 1 + 4 * (0 + 1 * (0 + 3 * 1)) = 13.
  EXPECT_EQ(CoordToRank(shape, RankOrder{}, c), 13);
}

TEST(Mesh, ExpertCoordinateIsDataCoordinateModuloEp) {
  MeshShape shape{.dp = 8, .tp = 2, .ep = 4};
  // Default order: rank = tp + 2 * dp (cp = pp = 1), so rank 13 -> tp 1, dp 6, ep 6 % 4 = 2.
  MeshCoord c = RankToCoord(shape, RankOrder{}, 13);
  EXPECT_EQ(c.dp, 6);
  EXPECT_EQ(c.ep, 2);
}

TEST(Mesh, EveryRankRoundTripsUnderEveryOrder) {
  MeshShape shape{.dp = 3, .tp = 4, .pp = 2, .cp = 2};
  for (const char* text : {"tp,cp,pp,dp", "dp,tp,pp,cp", "pp,dp,cp,tp", "cp,pp,tp,dp"}) {
    StatusOr<RankOrder> order = ParseRankOrder(text);
    ASSERT_TRUE(order.ok());
    for (int64_t r = 0; r < shape.world(); ++r) {
      EXPECT_EQ(CoordToRank(shape, *order, RankToCoord(shape, *order, r)), r) << text;
    }
  }
}

TEST(Mesh, DataOutermostPutsDataReplicasFarthestApart) {
  // With dp outermost and TP * CP * PP = 4, ranks of one data-parallel replica are 4 apart.
  MeshShape shape{.dp = 2, .tp = 2, .pp = 2};
  EXPECT_EQ(RankToCoord(shape, RankOrder{}, 4).dp, 1);
  EXPECT_EQ(RankToCoord(shape, RankOrder{}, 3).dp, 0);
}

}  // namespace
}  // namespace placesim::topology
