// Tests of the readable Graphviz picture (topology/dot.h): one edge per cable, a box per node,
// colours and a legend, and the node-level picture past kMaxGpusPerGpuDot GPUs.
#include "topology/dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "test_clusters.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using test_clusters::MustBuild;

std::string Dot(const Cluster& c, DotLevel level) {
  std::ostringstream out;
  WriteReadableDot(c, out, level);
  return out.str();
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

TEST(ReadableDot, OneEdgePerCableAndABoxPerNode) {
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kRailOptimized));
  const std::string dot = Dot(c, DotLevel::kGpu);
  EXPECT_EQ(dot.rfind("digraph placesim {", 0), 0u);
  // Every link of the generated fabrics is full duplex: two directed links per cable.
  EXPECT_EQ(Count(dot, " -> "), c.num_links() / 2);
  EXPECT_EQ(Count(dot, "subgraph cluster_node"), 2);
  for (int v = 0; v < c.num_vertices(); ++v) {
    EXPECT_NE(dot.find("label=\"" + c.vertex(VertexId{v}).name + "\""), std::string::npos);
  }
  // NVLink's colour and the legend's row for it, with the DGX H100's 450 GB/s.
  EXPECT_NE(dot.find("color=\"#4d9221\""), std::string::npos);
  EXPECT_NE(dot.find("nvlink 450.00 GB/s"), std::string::npos);
  EXPECT_NE(dot.find("legend"), std::string::npos);
}

TEST(ReadableDot, NodeLevelFoldsTheCablesOfANode) {
  // 16 nodes x 8 GPUs = 128 GPUs > kMaxGpusPerGpuDot: kAuto draws nodes.
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kRailOptimized));
  const std::string dot = Dot(c, DotLevel::kAuto);
  EXPECT_EQ(dot, Dot(c, DotLevel::kNode));
  EXPECT_EQ(Count(dot, "shape=box3d"), 16);
  EXPECT_EQ(dot.find("gpu0\""), std::string::npos);  // no GPU vertex
  EXPECT_EQ(Count(dot, "subgraph cluster_node"), 0);
  // Rail-optimized: NIC i of every node goes to a leaf of rail i, so each node reaches 8
  // leaves with one cable each; the node's cables are drawn once per (node, leaf).
  EXPECT_NE(dot.find("-> n0 "), std::string::npos);  // switches above, nodes below
  EXPECT_LT(Count(dot, " -> "), c.num_links() / 2);
}

TEST(ReadableDot, SmallClustersDrawEveryGpu) {
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kFatTree));  // 16 GPUs
  EXPECT_EQ(Dot(c, DotLevel::kAuto), Dot(c, DotLevel::kGpu));
}

TEST(ReadableDot, EscapesNamesAndDrawsADuplexLinkOnce) {
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"g\"x", VertexKind::kGpu, 0}, {"h", VertexKind::kHostMemory, 0}};
  spec.links = {{"g\"x", "h", LinkKind::kPcie, GBps(32), Microseconds(1)}};  // full duplex
  Cluster c = MustBuild(spec);
  ASSERT_EQ(c.num_links(), 2);
  const std::string dot = Dot(c, DotLevel::kGpu);
  EXPECT_NE(dot.find("g\\\"x"), std::string::npos);  // the quote escaped
  EXPECT_EQ(Count(dot, " -> "), 1);
  EXPECT_EQ(dot.find("dir=forward"), std::string::npos);
}

}  // namespace
}  // namespace placesim::topology
