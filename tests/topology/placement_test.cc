// Rank placement: rank r on GPU r, and its errors.
#include "topology/placement.h"

#include <gtest/gtest.h>

#include "test_clusters.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using test_clusters::MustBuild;

TEST(Placement, RankRRunsOnGpuR) {
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kFatTree));
  StatusOr<std::vector<VertexId>> gpus = PlaceRanks(c, MeshShape{.dp = 2, .tp = 8}, RankOrder{});
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 16u);
  for (int r = 0; r < 16; ++r) EXPECT_EQ((*gpus)[r], c.gpu(r));
}

TEST(Placement, TensorInnermostKeepsATensorGroupOnOneNode) {
  // Default order, tp = 8: ranks with dp = 1 are 8..15, all GPUs of node 1.
  MeshShape mesh{.dp = 2, .tp = 8};
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kFatTree));
  StatusOr<std::vector<VertexId>> gpus = PlaceRanks(c, mesh, RankOrder{});
  ASSERT_TRUE(gpus.ok());
  for (int64_t r = 0; r < mesh.world(); ++r) {
    EXPECT_EQ(c.vertex((*gpus)[r]).node, RankToCoord(mesh, RankOrder{}, r).dp);
  }
}

TEST(Placement, WorldMustEqualTheGpuCount) {
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kFatTree));
  StatusOr<std::vector<VertexId>> gpus = PlaceRanks(c, MeshShape{.dp = 4, .tp = 8}, RankOrder{});
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().message(),
            "mesh: dp=4 x tp=8 x pp=1 x cp=1 = 32 ranks: must equal the cluster's 16 GPUs (one "
            "rank per GPU)");
}

TEST(Placement, BadAxisSizesAndOrderAreAllReported) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  RankOrder order;
  order.inner_to_outer = {Axis::kTensor, Axis::kTensor, Axis::kPipeline, Axis::kData};
  StatusOr<std::vector<VertexId>> gpus = PlaceRanks(c, MeshShape{.dp = 6, .tp = 0, .ep = 4}, order);
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().message(),
            "mesh.tp: 0: must be >= 1\n"
            "mesh.ep: 4: must divide dp (6); expert groups are carved out of the data-parallel "
            "ranks\n"
            "rank_order: \"tp,tp,pp,dp\": expected each of dp, tp, pp, cp exactly once");
}

}  // namespace
}  // namespace placesim::topology
