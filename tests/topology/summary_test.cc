// Summary: injection and bisection bandwidth derived by hand, the text, and the DOT export.
#include "topology/summary.h"

#include <gtest/gtest.h>

#include <sstream>

#include "test_clusters.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using test_clusters::MustBuild;

TEST(Summary, SingleDgxH100BisectionIsHalfTheGpusNvlink) {
  // A balanced cut of 8 GPUs on a non-blocking NVSwitch severs 4 x 450 GB/s = 1.8 TB/s.
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  TopologyStats st = ComputeTopologyStats(c);
  ASSERT_TRUE(st.bisection.has_value());
  EXPECT_DOUBLE_EQ(st.bisection->ToGBps(), 4 * 450);
  EXPECT_DOUBLE_EQ(st.scale_up_per_gpu.ToGBps(), 450);
  EXPECT_DOUBLE_EQ(st.scale_out_per_gpu.ToGBps(), 0);  // NICs are not cabled to anything
  EXPECT_EQ(st.gpus_per_node, 8);
}

TEST(Summary, NonBlockingFatTreeBisectionIsHalfTheNicBandwidth) {
  // 16 nodes x 8 NICs x 50 GB/s = 6.4 TB/s of NIC bandwidth; o = 1, so bisection =
  // 6.4 / 2 / 1 = 3.2 TB/s. Scale-out per GPU: 8 x 50 / 8 = 50 GB/s.
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  TopologyStats st = ComputeTopologyStats(c);
  ASSERT_TRUE(st.bisection.has_value());
  EXPECT_DOUBLE_EQ(st.bisection->ToGBps(), 3200);
  EXPECT_DOUBLE_EQ(st.scale_out_per_gpu.ToGBps(), 50);
  EXPECT_DOUBLE_EQ(st.scale_up_per_gpu.ToGBps(), 450);
}

TEST(Summary, OversubscribedFatTreeBisectionDividesByTheRatio) {
  // 24 nodes, o = 3: 4 full leaves of 48 NICs (2.4 TB/s down, 16 x 50 = 0.8 TB/s up each).
  // NIC total 192 x 50 GB/s = 9.6 TB/s; bisection = 9.6 / 2 / 3 = 1.6 TB/s.
  Cluster c = MustBuild(DgxH100Spec(24, FabricKind::kFatTree, 3.0));
  TopologyStats st = ComputeTopologyStats(c);
  ASSERT_TRUE(st.bisection.has_value());
  EXPECT_DOUBLE_EQ(st.bisection->ToGBps(), 1600);
}

TEST(Summary, RailOptimizedWithOneLeafPerRailCutsOnlyNicLinks) {
  // Every rail is one leaf, so a balanced cut severs half the NIC links: 6.4 / 2 TB/s.
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kRailOptimized));
  TopologyStats st = ComputeTopologyStats(c);
  ASSERT_TRUE(st.bisection.has_value());
  EXPECT_DOUBLE_EQ(st.bisection->ToGBps(), 3200);
}

TEST(Summary, LinkGroupsCountEveryDirectedLinkByKindAndBandwidth) {
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  TopologyStats st = ComputeTopologyStats(c);
  int total = 0;
  for (const LinkGroup& g : st.link_groups) total += g.count;
  EXPECT_EQ(total, c.num_links());
  ASSERT_FALSE(st.link_groups.empty());
  EXPECT_EQ(st.link_groups[0].kind, LinkKind::kNvlink);  // kinds in enum order
  EXPECT_EQ(st.link_groups[0].count, 2 * 128);
  EXPECT_DOUBLE_EQ(st.link_groups[0].bandwidth.ToGBps(), 450);
}

TEST(Summary, TextNamesTheHardwareAndTheHeadlineNumbers) {
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  const std::string text = FormatTopologySummary(c);
  EXPECT_NE(text.find("cluster: 16 nodes of DGX-H100 (fat_tree fabric)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("GPUs: 128 x H100-SXM-80GB, 8 per node"), std::string::npos) << text;
  EXPECT_NE(text.find("fabric: 4 leaves, 2 spines"), std::string::npos) << text;
  EXPECT_NE(text.find("bisection bandwidth: 3.20 TB/s per direction"), std::string::npos) << text;
}

TEST(Summary, ExplicitGraphsReportNoBisection) {
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"g", VertexKind::kGpu, 0}, {"h", VertexKind::kHostMemory, 0}};
  spec.links = {{"g", "h", LinkKind::kPcie, GBps(32), Microseconds(1)}};
  Cluster c = MustBuild(spec);
  EXPECT_FALSE(ComputeTopologyStats(c).bisection.has_value());
  EXPECT_NE(FormatTopologySummary(c).find("not computed"), std::string::npos);
}

TEST(Dot, ContainsEveryVertexAndEveryLink) {
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kRailOptimized));
  std::ostringstream out;
  WriteDot(c, out);
  const std::string dot = out.str();
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  for (int v = 0; v < c.num_vertices(); ++v) {
    EXPECT_NE(dot.find("\"" + c.vertex(VertexId{v}).name + "\\n"), std::string::npos)
        << c.vertex(VertexId{v}).name;
  }
  EXPECT_EQ(static_cast<int>(std::count(dot.begin(), dot.end(), '>')), c.num_links());
  EXPECT_NE(dot.find("nvlink 450.00 GB/s"), std::string::npos);
}

TEST(Dot, EscapesQuotesInNames) {
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"g\"x", VertexKind::kGpu, 0}, {"h", VertexKind::kHostMemory, 0}};
  spec.links = {{"g\"x", "h", LinkKind::kPcie, GBps(32), Microseconds(1)}};
  Cluster c = MustBuild(spec);
  std::ostringstream out;
  WriteDot(c, out);
  EXPECT_NE(out.str().find("g\\\"x"), std::string::npos);
}

}  // namespace
}  // namespace placesim::topology
