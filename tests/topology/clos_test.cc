// The three-tier Clos builder (FabricKind::kClos): switch and link counts, where NICs attach,
// the bandwidth each tier passes up, routes inside and between pods, and the refusals of each
// field. Every expected count is derived in a comment from the rules in topology/build.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "test_clusters.h"
#include "topology/dot.h"
#include "topology/routing.h"
#include "topology/summary.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using test_clusters::MustBuild;
using test_clusters::V;

// 12 DGX-H100 nodes (8 GPUs, 8 NICs of 400 Gb/s = 50 GB/s each) in pods of 4 on radix-16
// switches, leaves 1:1, spines 4:1 towards the cores.
ClusterSpec SmallClos(int nodes = 12, int pod_nodes = 4, double pod_oversubscription = 4.0) {
  ClusterSpec spec = DgxH100Spec(nodes, FabricKind::kClos, 1.0, /*radix=*/16);
  spec.fabric.pod_nodes = pod_nodes;
  spec.fabric.pod_oversubscription = pod_oversubscription;
  return spec;
}

// Total per-direction bandwidth of the links going up into the tier `to_part` ("spine": from
// leaves; "core": from spines).
Bandwidth UpBandwidth(const Cluster& c, const std::string& to_part) {
  Bandwidth total;
  for (int l = 0; l < c.num_links(); ++l) {
    const LinkInfo& info = c.link(LinkId{l});
    const std::string& from = c.vertex(info.from).name;
    const std::string& to = c.vertex(info.to).name;
    const bool up = (to_part == "spine" && from.find("leaf") != std::string::npos) ||
                    (to_part == "core" && from.find("spine") != std::string::npos);
    if (up && to.find(to_part) != std::string::npos) total += info.bandwidth;
  }
  return total;
}

TEST(Clos, TwelveNodesInThreePodsHaveTheDerivedSwitchAndLinkCounts) {
  // Radix k = 16 at 1:1: a leaf has d = 8 down and u = 8 up ports; a spine s = 16 / 2 = 8.
  // A pod: 4 nodes x 8 NICs = 32 ports -> Lp = 32 / 8 = 4 leaves. Spines per pod: smallest
  // divisor Sp of u = 8 with Sp * s >= Lp * u = 32 -> Sp = 4, u / Sp = 2 cables per
  // leaf-spine pair (a spine's 8 down ports full). Pods: 12 / 4 = 3. Cores per plane: smallest
  // divisor Cp of s = 8 with Cp * 16 >= 3 pods * 8 = 24 -> Cp = 2, s / Cp = 4 cables per
  // spine-core pair (a core uses 3 x 4 = 12 of 16 ports); cores = Sp * Cp = 8.
  Cluster c = MustBuild(SmallClos());
  const FabricShape& s = c.fabric_shape();
  EXPECT_EQ(s.pods, 3);
  EXPECT_EQ(s.leaves_per_pod, 4);
  EXPECT_EQ(s.leaves, 12);
  EXPECT_EQ(s.spines_per_pod, 4);
  EXPECT_EQ(s.spines, 12);
  EXPECT_EQ(s.links_per_leaf_spine, 2);
  EXPECT_EQ(s.spine_ports, 8);
  EXPECT_EQ(s.cores_per_plane, 2);
  EXPECT_EQ(s.cores, 8);
  EXPECT_EQ(s.links_per_spine_core, 4);
  // A DGX-H100 node is 27 vertices and 41 cables, its 8 NIC-leaf cables included
  // (builders_test.cc). Switches 12 + 12 + 8 = 32.
  EXPECT_EQ(c.CountVertices(VertexKind::kSwitch), 32);
  EXPECT_EQ(c.num_vertices(), 12 * 27 + 32);
  // Cables: 12 x 41 in and at the nodes, 12 leaves x 8 up, 12 spines x 8 up; two directions.
  EXPECT_EQ(c.num_links(), 2 * (12 * 41 + 12 * 8 + 12 * 8));
  EXPECT_EQ(c.CountLinks(LinkKind::kNetwork), 2 * 96);
  EXPECT_EQ(c.CountLinks(LinkKind::kFabric), 2 * (96 + 96));
}

TEST(Clos, EachTierPassesTheDerivedBandwidthUpAndTheBisectionIsThePodTiers) {
  // B = 50 GB/s per cable (link_bandwidth unset = the NIC's). NICs: 96 x B = 4800 GB/s.
  // Leaf tier: 12 leaves x 8 up cables x B = 96 B = 4800 GB/s (1:1). Pod tier: 12 spines x 8
  // up cables x B / 4 = 24 B = 1200 GB/s (4:1). Bisection: half the least a tier passes,
  // sum over pods of min(leaves' 32 B, spines' 8 B) / 2 = 3 x 8 B / 2 = 12 B = 600 GB/s.
  Cluster c = MustBuild(SmallClos());
  const double gb = 1e9;
  EXPECT_DOUBLE_EQ(UpBandwidth(c, "spine").bytes_per_second(), 4800 * gb);
  EXPECT_DOUBLE_EQ(UpBandwidth(c, "core").bytes_per_second(), 1200 * gb);
  const TopologyStats st = ComputeTopologyStats(c);
  ASSERT_TRUE(st.bisection.has_value());
  EXPECT_DOUBLE_EQ(st.bisection->bytes_per_second(), 600 * gb);
  // Non-blocking between pods the leaves bind: min(96 B, 3 x min(32 B, 32 B)) / 2 = 48 B.
  const TopologyStats flat = ComputeTopologyStats(MustBuild(SmallClos(12, 4, 1.0)));
  EXPECT_DOUBLE_EQ(flat.bisection->bytes_per_second(), 2400 * gb);
}

TEST(Clos, NicsFillTheirPodsLeavesInOrder) {
  // Pod p holds nodes 4p..4p+3; a NIC port q = (node - 4p) * 8 + j of the pod is on leaf q / 8:
  // node 3's NIC 7 is port 31 (pod0/leaf3), node 4's NIC 0 port 0 of pod 1, node 9's NIC 5
  // port 13 of pod 2 (leaf 1).
  Cluster c = MustBuild(SmallClos());
  const auto leaf_of = [&](std::string_view nic) {
    for (LinkId l : c.out_links(V(c, nic))) {
      if (c.link(l).kind == LinkKind::kNetwork) return c.vertex(c.link(l).to).name;
    }
    return std::string();
  };
  EXPECT_EQ(leaf_of("node3/nic7"), "pod0/leaf3");
  EXPECT_EQ(leaf_of("node4/nic0"), "pod1/leaf0");
  EXPECT_EQ(leaf_of("node9/nic5"), "pod2/leaf1");
}

TEST(Clos, RoutesCrossACoreOnlyBetweenPodsAndThereRunAtOneOverTheOversubscription) {
  // Within pod 0 (nodes 0 and 2 sit on different leaves): GPU, PCIe switch, NIC, leaf,
  // spine, leaf, NIC, PCIe switch, GPU = 8 links, bottleneck the 50 GB/s NIC and leaf cables.
  // Pod 0 to pod 1 adds spine -> core -> spine: 10 links, bottleneck 50 / 4 = 12.5 GB/s.
  // GPU 5 leaves by the NIC on its own PCIe switch, as on the fat tree.
  Cluster c = MustBuild(SmallClos());
  const auto crosses_core = [&](const Route& r) {
    for (LinkId l : r.links) {
      if (c.vertex(c.link(l).to).name.find("core") != std::string::npos) return true;
    }
    return false;
  };
  const std::optional<Route> in_pod = FindRoute(c, V(c, "node0/gpu5"), V(c, "node2/gpu5"));
  ASSERT_TRUE(in_pod.has_value());
  EXPECT_EQ(in_pod->links.size(), 8u);
  EXPECT_FALSE(crosses_core(*in_pod));
  EXPECT_DOUBLE_EQ(in_pod->bottleneck.bytes_per_second(), 50e9);
  const std::optional<Route> across = FindRoute(c, V(c, "node0/gpu5"), V(c, "node4/gpu5"));
  ASSERT_TRUE(across.has_value());
  EXPECT_EQ(across->links.size(), 10u);
  EXPECT_TRUE(crosses_core(*across));
  EXPECT_DOUBLE_EQ(across->bottleneck.bytes_per_second(), 12.5e9);
  // DGX-H100: GPU i and NIC i share PCIe switch i (the preset has 8), so GPU 5 uses rail 5.
  EXPECT_EQ(c.vertex(c.link(across->links[0]).to).name, "node0/pcie5");
  EXPECT_EQ(c.vertex(c.link(across->links[1]).to).name, "node0/nic5");
  EXPECT_EQ(c.vertex(c.link(across->links[8]).to).name, "node4/pcie5");
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Clos, DotDrawsCoresAboveSpinesAboveLeavesWithParallelCablesFolded) {
  // Node level: one edge per switch pair, its cables counted. Leaf-spine: 12 leaves x 4
  // spines of their pod, 2 cables of 50 GB/s each; spine-core: 12 spines x the 2 cores of
  // their plane, 4 cables of 50 / 4 = 12.5 GB/s each. The later-built switch (the higher
  // tier) is the tail, so `dot` ranks cores on top.
  Cluster c = MustBuild(SmallClos());
  std::ostringstream out;
  WriteReadableDot(c, out, DotLevel::kNode);
  const std::string dot = out.str();
  EXPECT_EQ(Count(dot, "tooltip=\"2 x fabric 50.00 GB/s\""), 48);
  EXPECT_EQ(Count(dot, "tooltip=\"4 x fabric 12.50 GB/s\""), 24);
  const std::string core = fmt::format("v{}", V(c, "plane1/core0").value);
  const std::string spine = fmt::format("v{}", V(c, "pod2/spine1").value);
  EXPECT_NE(dot.find("  " + core + " -> " + spine + " "), std::string::npos);
}

TEST(Clos, OnePodHasNoCores) {
  // 4 nodes in pods of 8: a single (partly filled, pod of min(8, 4) = 4 nodes) pod, so the
  // spines are the top tier: 4 leaves, 4 spines, no cores and no spine uplinks.
  Cluster c = MustBuild(SmallClos(4, 8));
  EXPECT_EQ(c.fabric_shape().pods, 1);
  EXPECT_EQ(c.fabric_shape().cores, 0);
  EXPECT_EQ(c.num_links(), 2 * (4 * 41 + 4 * 8));
}

TEST(Clos, LastPodMayBePartlyFilled) {
  // 10 nodes in pods of 4: 3 pods, the last holding nodes 8 and 9 but cabled as a full pod.
  Cluster c = MustBuild(SmallClos(10));
  EXPECT_EQ(c.fabric_shape().pods, 3);
  EXPECT_EQ(c.num_vertices(), 10 * 27 + 32);
  EXPECT_EQ(c.num_gpus(), 80);
  // Bisection, non-blocking between pods (B = 50 GB/s): pods 0 and 1 pass min(32 B, spines'
  // 4 x 8 x B = 32 B) each; pod 2 has 16 ports on leaves 0 and 1 (8 B each), its leaves 2 and
  // 3 empty: min(16 B, 32 B). min(80 NICs x B, 80 B) / 2 = 40 B = 2000 GB/s.
  const TopologyStats st = ComputeTopologyStats(MustBuild(SmallClos(10, 4, 1.0)));
  ASSERT_TRUE(st.bisection.has_value());
  EXPECT_DOUBLE_EQ(st.bisection->bytes_per_second(), 2000e9);
}

std::string BuildError(const ClusterSpec& spec) {
  StatusOr<Cluster> c = BuildCluster(spec);
  return c.ok() ? "OK" : std::string(c.status().message());
}

TEST(Clos, PodNodesOutOfRangeIsRefusedNamingTheField) {
  EXPECT_NE(BuildError(SmallClos(12, 0))
                .find("cluster.fabric.pod_nodes: 0: must be between 1 and "
                      "65536"),
            std::string::npos)
      << BuildError(SmallClos(12, 0));
}

TEST(Clos, PodOversubscriptionBelowOneIsRefusedNamingTheField) {
  const std::string e = BuildError(SmallClos(12, 4, 0.5));
  EXPECT_NE(e.find("cluster.fabric.pod_oversubscription: 0.5: must be >= 1"), std::string::npos)
      << e;
}

TEST(Clos, APodTooLargeForItsSpinesIsRefusedWithTheLimit) {
  // 9 nodes x 8 NICs = 72 ports = 9 leaves of 8, but a radix-16 spine has 8 down ports:
  // at most 8 x 8 / 8 = 8 nodes per pod.
  const std::string e = BuildError(SmallClos(18, 9));
  EXPECT_NE(e.find("cluster.fabric.pod_nodes: 9: a pod of 9 nodes x 8 NICs needs 9 leaves"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("at most 8 nodes per pod fit"), std::string::npos) << e;
}

TEST(Clos, MorePodsThanACorePortsIsRefusedWithTheLimit) {
  // Pods of 1 node on radix 16: a core joins at most 16 pods, so 17 nodes do not fit.
  const std::string e = BuildError(SmallClos(17, 1));
  EXPECT_NE(e.find("cluster.nodes: 17: 17 nodes in pods of 1 make 17 pods, but a radix-16 core "
                   "switch joins at most 16 pods"),
            std::string::npos)
      << e;
  EXPECT_EQ(BuildError(SmallClos(16, 1)), "OK");
}

}  // namespace
}  // namespace placesim::topology
