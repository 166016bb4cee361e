// Builders: vertex, link and switch counts of DGX-H100 clusters, derived from the rules in
// topology/build.cc.
//
// One DGX-H100 node (preset: 8 GPUs, 8 PCIe switches, 8 NICs, NVMe) has
//   vertices 8 GPU + 1 NVSwitch plane + 8 PCIe + 8 NIC + 1 host + 1 NVMe = 27;
//   cables   8 GPU-NVSwitch + 8 GPU-PCIe + 8 NIC-PCIe + 8 PCIe-host + 1 NVMe-host = 33,
//            plus 8 NIC-leaf cables when a scale-out fabric exists: 41.
// Every cable is two directed links.
// Radix-64 switches at 1:1: d = 64 * 1 / 2 = 32 down and u = 32 up ports per leaf.
#include <gtest/gtest.h>

#include "test_clusters.h"
#include "topology/cluster.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using test_clusters::MustBuild;
using test_clusters::V;

TEST(SingleNode, DgxH100HasItsDerivedVertexAndLinkCounts) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  EXPECT_EQ(c.num_gpus(), 8);
  EXPECT_EQ(c.num_nodes(), 1);
  EXPECT_EQ(c.num_vertices(), 27);
  EXPECT_EQ(c.num_links(), 2 * 33);
  EXPECT_EQ(c.CountVertices(VertexKind::kNvSwitch), 1);
  EXPECT_EQ(c.CountVertices(VertexKind::kSwitch), 0);
  EXPECT_EQ(c.CountLinks(LinkKind::kNvlink), 2 * 8);
  // 8 GPU-PCIe + 8 NIC-PCIe + 8 PCIe-host cables.
  EXPECT_EQ(c.CountLinks(LinkKind::kPcie), 2 * 24);
  EXPECT_EQ(c.CountLinks(LinkKind::kMemory), 2 * 1);
  EXPECT_EQ(c.CountLinks(LinkKind::kNetwork), 0);
}

TEST(SingleNode, NamesIndicesAndMemoriesFollowTheConvention) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  const VertexInfo& g5 = c.vertex(c.gpu(5));
  EXPECT_EQ(g5.name, "node0/gpu5");
  EXPECT_EQ(g5.kind, VertexKind::kGpu);
  EXPECT_EQ(g5.node, 0);
  EXPECT_EQ(g5.local_index, 5);
  EXPECT_EQ(g5.capacity, GB(80));
  EXPECT_EQ(c.gpu_index(c.gpu(5)), 5);
  EXPECT_EQ(c.gpu_index(c.host_memory(0)), -1);
  EXPECT_EQ(c.vertex(c.host_memory(0)).name, "node0/host");
  EXPECT_EQ(c.vertex(c.host_memory(0)).capacity, TB(2));
  ASSERT_TRUE(c.nvme(0).valid());
  EXPECT_EQ(c.vertex(c.nvme(0)).kind, VertexKind::kNvme);
  EXPECT_EQ(c.node_gpus(0).size(), 8u);
  EXPECT_FALSE(c.FindVertex("node0/gpu8").has_value());
}

TEST(SingleNode, NodeWithoutNvmeHasNoNvmeVertex) {
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.nvme_capacity = Bytes::Zero();
  Cluster c = MustBuild(spec);
  EXPECT_FALSE(c.nvme(0).valid());
  EXPECT_EQ(c.num_vertices(), 26);
}

TEST(SingleNode, EveryDirectedLinkHasItsReverse) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  for (int i = 0; i < c.num_links(); ++i) {
    const LinkInfo& l = c.link(LinkId{i});
    ASSERT_TRUE(l.reverse.valid());
    const LinkInfo& r = c.link(l.reverse);
    EXPECT_EQ(r.from, l.to);
    EXPECT_EQ(r.to, l.from);
    EXPECT_EQ(r.reverse, LinkId{i});
    EXPECT_EQ(r.bandwidth, l.bandwidth);
  }
}

TEST(SingleNode, GpuAndItsRailNicShareAPcieSwitch) {
  // 8 GPUs and 8 NICs over 8 PCIe switches: GPU i and NIC i both on switch i.
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  const auto pcie_of = [&](std::string_view name) {
    for (LinkId l : c.out_links(V(c, name))) {
      if (c.vertex(c.link(l).to).kind == VertexKind::kPcieSwitch) return c.link(l).to;
    }
    return VertexId{};
  };
  EXPECT_EQ(pcie_of("node0/gpu3"), pcie_of("node0/nic3"));
  EXPECT_NE(pcie_of("node0/gpu3"), pcie_of("node0/nic4"));
}

TEST(FatTree, OneDgxH100NodeNeedsOneLeafAndNoSpine) {
  // 8 NIC ports <= d = 32: one leaf; a single leaf needs no spines.
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kFatTree));
  EXPECT_EQ(c.fabric_shape().leaves, 1);
  EXPECT_EQ(c.fabric_shape().spines, 0);
  EXPECT_EQ(c.num_vertices(), 27 + 1);
  EXPECT_EQ(c.num_links(), 2 * 41);
}

TEST(FatTree, TwoDgxH100NodesShareOneLeaf) {
  // 16 NIC ports <= 32: one leaf, no spines.
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kFatTree));
  EXPECT_EQ(c.num_gpus(), 16);
  EXPECT_EQ(c.CountVertices(VertexKind::kSwitch), 1);
  EXPECT_EQ(c.num_vertices(), 2 * 27 + 1);
  EXPECT_EQ(c.num_links(), 2 * (2 * 41));
  EXPECT_EQ(c.vertex(c.gpu(13)).name, "node1/gpu5");  // 13 = 1 * 8 + 5
}

TEST(FatTree, SixteenDgxH100NodesHaveTheDerivedSwitchCount) {
  // 16 x 8 = 128 NIC ports; leaves L = 128 / 32 = 4, each with u = 32 uplinks.
  // Spines: smallest divisor S of 32 with S * 64 >= 4 * 32 = 128, so S = 2, and each leaf
  // has 32 / 2 = 16 cables to each spine (each spine uses 4 * 16 = 64 ports: full).
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  const FabricShape& s = c.fabric_shape();
  EXPECT_EQ(s.leaves, 4);
  EXPECT_EQ(s.spines, 2);
  EXPECT_EQ(s.down_ports_per_leaf, 32);
  EXPECT_EQ(s.up_ports_per_leaf, 32);
  EXPECT_EQ(s.links_per_leaf_spine, 16);
  EXPECT_EQ(c.num_gpus(), 128);
  EXPECT_EQ(c.CountVertices(VertexKind::kSwitch), 4 + 2);
  EXPECT_EQ(c.num_vertices(), 16 * 27 + 6);
  // 16 nodes x 41 cables + 4 leaves x 32 uplinks.
  EXPECT_EQ(c.num_links(), 2 * (16 * 41 + 4 * 32));
  EXPECT_EQ(c.CountLinks(LinkKind::kNetwork), 2 * 128);
  EXPECT_EQ(c.CountLinks(LinkKind::kFabric), 2 * 128);
}

TEST(FatTree, NicsFillLeavesInOrder) {
  // NIC port p = node * 8 + j sits on leaf p / 32: node 3's NICs are ports 24..31 (leaf 0),
  // node 4's are 32..39 (leaf 1).
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  const auto leaf_of = [&](std::string_view nic) {
    for (LinkId l : c.out_links(V(c, nic))) {
      if (c.link(l).kind == LinkKind::kNetwork) return c.vertex(c.link(l).to).name;
    }
    return std::string();
  };
  EXPECT_EQ(leaf_of("node3/nic7"), "leaf0");
  EXPECT_EQ(leaf_of("node4/nic0"), "leaf1");
  EXPECT_EQ(leaf_of("node15/nic7"), "leaf3");
}

TEST(FatTree, OversubscriptionSplitsLeafPortsDownToUp) {
  // o = 3 on radix 64: d = floor(64 * 3 / 4) = 48 down, u = 16 up. 24 nodes x 8 = 192 ports
  // -> 4 leaves; spines: smallest divisor S of 16 with S * 64 >= 4 * 16 = 64 -> S = 1.
  Cluster c = MustBuild(DgxH100Spec(24, FabricKind::kFatTree, 3.0));
  const FabricShape& s = c.fabric_shape();
  EXPECT_EQ(s.down_ports_per_leaf, 48);
  EXPECT_EQ(s.up_ports_per_leaf, 16);
  EXPECT_EQ(s.leaves, 4);
  EXPECT_EQ(s.spines, 1);
  EXPECT_EQ(s.links_per_leaf_spine, 16);
}

TEST(FatTree, LargestNonBlockingTwoLevelFabricFitsExactly) {
  // Radix 64 at 1:1 connects 64 leaves x 32 = 2048 NIC ports = 256 DGX-H100 nodes; then 32
  // spines with one cable to every leaf.
  Cluster c = MustBuild(DgxH100Spec(256, FabricKind::kFatTree));
  EXPECT_EQ(c.fabric_shape().leaves, 64);
  EXPECT_EQ(c.fabric_shape().spines, 32);
  EXPECT_EQ(c.fabric_shape().links_per_leaf_spine, 1);
  EXPECT_EQ(c.num_gpus(), 2048);
}

TEST(RailOptimized, OneDgxH100NodeHasEightRailLeavesAndFourSpines) {
  // Rails = 8 NICs; each rail has ceil(1 / 32) = 1 leaf, so 8 leaves with u = 32 uplinks;
  // spines: smallest divisor S of 32 with S * 64 >= 8 * 32 = 256 -> S = 4, 8 cables each.
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kRailOptimized));
  const FabricShape& s = c.fabric_shape();
  EXPECT_EQ(s.rails, 8);
  EXPECT_EQ(s.leaves_per_rail, 1);
  EXPECT_EQ(s.leaves, 8);
  EXPECT_EQ(s.spines, 4);
  EXPECT_EQ(s.links_per_leaf_spine, 8);
  EXPECT_EQ(c.num_vertices(), 27 + 8 + 4);
  EXPECT_EQ(c.num_links(), 2 * (41 + 8 * 32));
}

TEST(RailOptimized, TwoDgxH100NodesReuseTheSameRails) {
  Cluster c = MustBuild(DgxH100Spec(2, FabricKind::kRailOptimized));
  EXPECT_EQ(c.num_vertices(), 2 * 27 + 8 + 4);
  EXPECT_EQ(c.num_links(), 2 * (2 * 41 + 8 * 32));
}

TEST(RailOptimized, SixteenDgxH100NodesHaveTheDerivedSwitchCount) {
  // 16 nodes <= 32 down ports: one leaf per rail, 8 leaves, 4 spines (as for one node).
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kRailOptimized));
  EXPECT_EQ(c.fabric_shape().leaves, 8);
  EXPECT_EQ(c.fabric_shape().spines, 4);
  EXPECT_EQ(c.CountVertices(VertexKind::kSwitch), 12);
  EXPECT_EQ(c.num_vertices(), 16 * 27 + 12);
  EXPECT_EQ(c.num_links(), 2 * (16 * 41 + 8 * 32));
}

TEST(RailOptimized, NicJOfEveryNodeJoinsRailJ) {
  // 40 nodes > 32 down ports: 2 leaves per rail; node n on leaf n / 32 of its rail.
  Cluster c = MustBuild(DgxH100Spec(40, FabricKind::kRailOptimized));
  EXPECT_EQ(c.fabric_shape().leaves_per_rail, 2);
  const auto leaf_of = [&](std::string_view nic) {
    for (LinkId l : c.out_links(V(c, nic))) {
      if (c.link(l).kind == LinkKind::kNetwork) return c.vertex(c.link(l).to).name;
    }
    return std::string();
  };
  EXPECT_EQ(leaf_of("node3/nic5"), "rail5/leaf0");
  EXPECT_EQ(leaf_of("node31/nic5"), "rail5/leaf0");
  EXPECT_EQ(leaf_of("node32/nic5"), "rail5/leaf1");
  EXPECT_EQ(leaf_of("node39/nic0"), "rail0/leaf1");
}

TEST(Explicit, BuildsTheListedGraphWithResolvedNames) {
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.node.gpu.hbm_capacity = GB(80);
  spec.vertices = {{"a", VertexKind::kGpu, 0},
                   {"b", VertexKind::kGpu, 1},
                   {"ha", VertexKind::kHostMemory, 0},
                   {"hb", VertexKind::kHostMemory, 1},
                   {"sw", VertexKind::kSwitch, 0}};
  spec.links = {{"a", "sw", LinkKind::kNetwork, GBps(50), Microseconds(1)},
                {"b", "sw", LinkKind::kNetwork, GBps(25), Microseconds(1)},
                {"a", "ha", LinkKind::kPcie, GBps(64), Microseconds(1)},
                {"b", "hb", LinkKind::kPcie, GBps(64), Microseconds(1)}};
  Cluster c = MustBuild(spec);
  EXPECT_EQ(c.num_gpus(), 2);
  EXPECT_EQ(c.num_nodes(), 2);
  EXPECT_EQ(c.num_vertices(), 5);
  EXPECT_EQ(c.num_links(), 8);
  EXPECT_EQ(c.vertex(c.gpu(1)).name, "b");
  EXPECT_EQ(c.host_memory(1), V(c, "hb"));
  EXPECT_FALSE(c.nvme(0).valid());
  EXPECT_EQ(c.vertex(c.gpu(0)).capacity, GB(80));
}

TEST(Cluster, CopiesAreIndependentAndEqual) {
  Cluster a = MustBuild(DgxH100Spec(2, FabricKind::kFatTree));
  Cluster b = a;
  EXPECT_EQ(b.num_vertices(), a.num_vertices());
  EXPECT_EQ(b.num_links(), a.num_links());
  EXPECT_EQ(b.vertex(b.gpu(9)).name, "node1/gpu1");
  Cluster moved = std::move(a);
  EXPECT_EQ(moved.num_gpus(), 16);
}

}  // namespace
}  // namespace placesim::topology
