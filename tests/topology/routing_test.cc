// Routing: shortest paths on DGX-H100 clusters, their bottleneck and latency, and ECMP.
// Preset latencies: NVLink 0.5 us, PCIe 0.5 us, NIC 2 us per hop; the test fabrics use a
// 0.3 us switch latency on leaf-spine cables.
#include "topology/routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "test_clusters.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using test_clusters::MustBuild;
using test_clusters::V;

// Names of the vertices a route enters, in order.
std::vector<std::string> Hops(const Cluster& c, const Route& r) {
  std::vector<std::string> out;
  for (LinkId l : r.links) out.push_back(c.vertex(c.link(l).to).name);
  return out;
}

TEST(Routing, GpusOfOneNodeTalkThroughTheNvswitchInTwoHops) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  std::optional<Route> r = FindRoute(c, c.gpu(0), c.gpu(5));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Hops(c, *r), (std::vector<std::string>{"node0/nvswitch", "node0/gpu5"}));
  // Both links are 450 GB/s NVLink; latency 2 x 0.5 us.
  EXPECT_DOUBLE_EQ(r->bottleneck.ToGBps(), 450);
  EXPECT_EQ(r->latency, Microseconds(1));
}

TEST(Routing, GpusSharingAPcieSwitchStillUseTheWiderNvlink) {
  // Two GPUs on one PCIe switch are two hops apart both through the NVSwitch (450 GB/s per
  // direction) and through their PCIe switch (64 GB/s): the widest of the shortest paths is
  // the NVLink one, as NCCL picks. One switch of 8 GPUs makes every pair share it.
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.pcie_switches = 1;
  Cluster c = MustBuild(spec);
  for (int dst = 1; dst < 8; ++dst) {
    std::optional<Route> r = FindRoute(c, c.gpu(0), c.gpu(dst));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(Hops(c, *r)[0], "node0/nvswitch") << "gpu0 -> gpu" << dst;
    EXPECT_DOUBLE_EQ(r->bottleneck.ToGBps(), 450);
  }
}

TEST(Routing, GpuReachesHostMemoryThroughItsPcieSwitch) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  std::optional<Route> r = FindRoute(c, c.gpu(3), c.host_memory(0));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Hops(c, *r), (std::vector<std::string>{"node0/pcie3", "node0/host"}));
  EXPECT_DOUBLE_EQ(r->bottleneck.ToGBps(), 64);
  // NVMe -> host -> PCIe switch -> GPU; the NVMe link (8 x 6.5 = 52 GB/s) is the bottleneck.
  std::optional<Route> load = FindRoute(c, c.nvme(0), c.gpu(3));
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(Hops(c, *load), (std::vector<std::string>{"node0/host", "node0/pcie3", "node0/gpu3"}));
  EXPECT_DOUBLE_EQ(load->bottleneck.ToGBps(), 52);
}

TEST(Routing, WithoutNvlinkGpusTalkOverPcieThroughTheRootComplex) {
  // nvlink_bandwidth = 0 means no NVLink: GPU 0 and GPU 5 sit on different PCIe switches, so
  // the only path crosses host memory (the root complex) even though it is an endpoint.
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.nvlink_bandwidth = Bandwidth::Zero();
  Cluster c = MustBuild(spec);
  EXPECT_EQ(c.CountVertices(VertexKind::kNvSwitch), 0);
  std::optional<Route> r = FindRoute(c, c.gpu(0), c.gpu(5));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Hops(c, *r),
            (std::vector<std::string>{"node0/pcie0", "node0/host", "node0/pcie5", "node0/gpu5"}));
}

TEST(Routing, SameRailAcrossNodesStaysOnTheRailLeaf) {
  // GPU 3 of node 0 to GPU 3 of node 7 on a rail-optimized fabric: GPU -> PCIe -> NIC 3 ->
  // rail 3's leaf -> NIC 3 -> PCIe -> GPU, 6 hops, no spine.
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kRailOptimized));
  std::optional<Route> r = FindRoute(c, V(c, "node0/gpu3"), V(c, "node7/gpu3"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Hops(c, *r), (std::vector<std::string>{"node0/pcie3", "node0/nic3", "rail3/leaf0",
                                                   "node7/nic3", "node7/pcie3", "node7/gpu3"}));
  // Bottleneck: min(64 GB/s PCIe, 400 Gb/s = 50 GB/s NIC) = 50 GB/s.
  EXPECT_DOUBLE_EQ(r->bottleneck.ToGBps(), 50);
  // Latency: 4 PCIe hops x 0.5 us + 2 NIC hops x 2 us = 6 us.
  EXPECT_EQ(r->latency, Microseconds(6));
  EXPECT_EQ(BottleneckBandwidth(c, r->links), r->bottleneck);
  EXPECT_EQ(RouteLatency(c, r->links), r->latency);
}

TEST(Routing, AcrossRailsGoesThroughASpine) {
  // GPU 0 of node 0 to GPU 2 of node 1: NIC 0 is on rail 0 and NIC 2 on rail 2, so the path
  // is GPU -> PCIe -> NIC0 -> rail0 leaf -> spine -> rail2 leaf -> NIC2 -> PCIe -> GPU
  // (8 hops). Equal-hop detours through node 0's GPU 2 or host memory are endpoint
  // transits, which the metric ranks last.
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kRailOptimized));
  std::optional<Route> r = FindRoute(c, V(c, "node0/gpu0"), V(c, "node1/gpu2"));
  ASSERT_TRUE(r.has_value());
  std::vector<std::string> hops = Hops(c, *r);
  ASSERT_EQ(hops.size(), 8u);
  EXPECT_EQ(hops[1], "node0/nic0");
  EXPECT_EQ(hops[2], "rail0/leaf0");
  EXPECT_EQ(hops[3].rfind("spine", 0), 0u) << hops[3];
  EXPECT_EQ(hops[4], "rail2/leaf0");
  EXPECT_EQ(hops[5], "node1/nic2");
  EXPECT_EQ(hops[7], "node1/gpu2");
  // Latency: 4 PCIe x 0.5 + 2 NIC x 2 + 2 fabric x 0.3 = 6.6 us.
  EXPECT_EQ(r->latency, Microseconds(6.6));
}

TEST(Routing, BottleneckIsTheSlowestLinkOnThePath) {
  // Fat-tree with 25 GB/s leaf-spine cables: node 0 (leaf 0) to node 4 (leaf 1) crosses two
  // of them, so the bottleneck drops from the 50 GB/s NIC to 25 GB/s.
  ClusterSpec spec = DgxH100Spec(16, FabricKind::kFatTree);
  spec.fabric.link_bandwidth = GBps(25);
  Cluster c = MustBuild(spec);
  std::optional<Route> far = FindRoute(c, V(c, "node0/gpu1"), V(c, "node4/gpu1"));
  ASSERT_TRUE(far.has_value());
  EXPECT_EQ(far->links.size(), 8u);
  EXPECT_DOUBLE_EQ(far->bottleneck.ToGBps(), 25);
  std::optional<Route> near = FindRoute(c, V(c, "node0/gpu1"), V(c, "node3/gpu1"));
  ASSERT_TRUE(near.has_value());
  EXPECT_EQ(near->links.size(), 6u);  // same leaf
  EXPECT_DOUBLE_EQ(near->bottleneck.ToGBps(), 50);
}

TEST(Routing, RouteToItselfIsEmptyWithUnboundedBandwidth) {
  Cluster c = MustBuild(DgxH100Spec(1, FabricKind::kSingleNode));
  std::optional<Route> r = FindRoute(c, c.gpu(2), c.gpu(2));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->links.empty());
  EXPECT_TRUE(std::isinf(r->bottleneck.bytes_per_second()));
  EXPECT_EQ(r->latency, Duration::Zero());
}

TEST(Routing, RelaysThroughAGpuOnlyWhenNothingElseConnects) {
  // A line a - b - c of GPUs with one host memory on b: a reaches c only through b.
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"a", VertexKind::kGpu, 0},
                   {"b", VertexKind::kGpu, 0},
                   {"c", VertexKind::kGpu, 0},
                   {"h", VertexKind::kHostMemory, 0}};
  spec.links = {{"a", "b", LinkKind::kNvlink, GBps(100), Microseconds(1)},
                {"b", "c", LinkKind::kNvlink, GBps(100), Microseconds(1)},
                {"b", "h", LinkKind::kPcie, GBps(32), Microseconds(1)}};
  Cluster c = MustBuild(spec);
  std::optional<Route> r = FindRoute(c, V(c, "a"), V(c, "c"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Hops(c, *r), (std::vector<std::string>{"b", "c"}));
}

TEST(Routing, UnreachableVertexHasNoRoute) {
  // A switch with no links is legal (GPUs still reach each other) but unreachable.
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"g", VertexKind::kGpu, 0},
                   {"h", VertexKind::kHostMemory, 0},
                   {"island", VertexKind::kSwitch, 0}};
  spec.links = {{"g", "h", LinkKind::kPcie, GBps(32), Microseconds(1)}};
  Cluster c = MustBuild(spec);
  EXPECT_FALSE(FindRoute(c, V(c, "g"), V(c, "island")).has_value());
  Router router(c);
  EXPECT_EQ(router.Find(V(c, "g"), V(c, "island")), nullptr);
  EXPECT_EQ(router.Find(V(c, "g"), V(c, "island")), nullptr);  // cached as unreachable
}

TEST(Ecmp, SamePairAlwaysGetsTheSameRoute) {
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  Router router(c);
  const VertexId a = V(c, "node1/gpu6"), b = V(c, "node9/gpu2");
  const Route* first = router.Find(a, b);
  ASSERT_NE(first, nullptr);
  const std::vector<LinkId> links = first->links;
  EXPECT_EQ(router.Find(a, b), first);  // cached: the same object
  EXPECT_EQ(router.cached_pairs(), 1u);
  // An independent, uncached computation (and a second Router) agree link for link.
  std::optional<Route> again = FindRoute(c, a, b);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->links, links);
  Router other(c);
  EXPECT_EQ(other.Find(a, b)->links, links);
}

TEST(Ecmp, DifferentPairsSpreadOverBothSpinesAndParallelCables) {
  // 16-node fat-tree: leaf 0 holds nodes 0-3, leaf 1 nodes 4-7; every leaf0 -> leaf1 route
  // crosses one of 2 spines over one of 16 parallel cables. Over the 32 x 32 GPU pairs the
  // hash must use both spines, each for a fair share, and many distinct cables.
  Cluster c = MustBuild(DgxH100Spec(16, FabricKind::kFatTree));
  Router router(c);
  std::map<std::string, int> spine_use;
  std::set<int32_t> uplinks;
  for (int s = 0; s < 32; ++s) {
    for (int d = 32; d < 64; ++d) {
      const Route* r = router.Find(c.gpu(s), c.gpu(d));
      ASSERT_NE(r, nullptr);
      ASSERT_EQ(r->links.size(), 8u);
      const LinkInfo& up = c.link(r->links[3]);  // leaf -> spine
      ASSERT_EQ(up.kind, LinkKind::kFabric);
      ++spine_use[c.vertex(up.to).name];
      uplinks.insert(r->links[3].value);
    }
  }
  ASSERT_EQ(spine_use.size(), 2u);
  for (const auto& [spine, n] : spine_use) {
    EXPECT_GT(n, 1024 / 4) << spine;  // at least half of the even share of 512
  }
  EXPECT_GT(uplinks.size(), 16u);  // of the 32 leaf0 uplinks
}

TEST(Ecmp, AGpuSpreadsTrafficToAnotherNodeOverBothNicsItCanReach) {
  // DGX-A100: GPUs 0,1 and NICs 0,1 share PCIe switch 0, so node 0's GPU 0 reaches node 1
  // over NIC 0 or NIC 1 at equal cost; across destinations both get used.
  ClusterSpec spec = DgxH100Spec(2, FabricKind::kFatTree);
  spec.node = *FindNodePreset("DGX-A100");
  Cluster c = MustBuild(spec);
  std::set<std::string> first_nics;
  for (int d = 8; d < 16; ++d) {
    std::optional<Route> r = FindRoute(c, c.gpu(0), c.gpu(d));
    ASSERT_TRUE(r.has_value());
    first_nics.insert(c.vertex(c.link(r->links[1]).to).name);
  }
  EXPECT_EQ(first_nics, (std::set<std::string>{"node0/nic0", "node0/nic1"}));
}

// The transit-free first pass of the search, and the Router's searches shared between pairs
// behind the same two fabric switches, must give exactly the route of the full search
// (routing.h), for every ordered pair of vertices of each built fabric, on an explicit graph
// whose routes relay through GPUs, and on an oversubscribed fat tree where the ECMP choice
// depends on the costs of the neighbours of the path. Returns how many routes the Router
// spliced from shared searches.
size_t ExpectSameRoutesAsExhaustiveSearch(const Cluster& c) {
  Router router(c);
  for (int s = 0; s < c.num_vertices(); ++s) {
    for (int d = 0; d < c.num_vertices(); ++d) {
      const Route* fast = router.Find(VertexId{s}, VertexId{d});
      std::optional<Route> full = FindRouteExhaustive(c, VertexId{s}, VertexId{d});
      EXPECT_EQ(fast != nullptr, full.has_value())
          << c.vertex(VertexId{s}).name << " -> " << c.vertex(VertexId{d}).name;
      if (fast == nullptr || !full.has_value()) continue;
      EXPECT_EQ(fast->links, full->links)
          << c.vertex(VertexId{s}).name << " -> " << c.vertex(VertexId{d}).name;
      EXPECT_EQ(fast->latency, full->latency);
      EXPECT_EQ(fast->bottleneck, full->bottleneck);
    }
  }
  return router.shared_routes();
}

TEST(Routing, FirstPassFindsTheRoutesOfTheFullSearch) {
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(DgxH100Spec(1, FabricKind::kSingleNode)));
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(DgxH100Spec(3, FabricKind::kFatTree, 2.0)));
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(DgxH100Spec(3, FabricKind::kRailOptimized)));
  ClusterSpec a100 = DgxH100Spec(2, FabricKind::kFatTree);
  a100.node = *FindNodePreset("DGX-A100");
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(a100));
  // Three-tier Clos: 5 nodes in pods of 2 on radix-16 switches (3 pods, the last half
  // filled), cores at 1:4, so cross-pod routes climb to a core over two equal-cost spines,
  // cores and parallel cables; and leaves at 3:1 (12 down, 4 up: a pod's 16 NICs need two
  // leaves), whose uplinks are narrower than its NIC links.
  ClusterSpec clos = DgxH100Spec(5, FabricKind::kClos, 1.0, /*radix=*/16);
  clos.fabric.pod_nodes = 2;
  clos.fabric.pod_oversubscription = 4.0;
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(clos));
  clos.fabric.oversubscription = 3.0;
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(clos));
  ClusterSpec line;
  line.fabric.kind = FabricKind::kExplicit;
  line.vertices = {{"a", VertexKind::kGpu, 0},
                   {"b", VertexKind::kGpu, 0},
                   {"c", VertexKind::kGpu, 0},
                   {"h", VertexKind::kHostMemory, 0},
                   {"s", VertexKind::kSwitch, 0}};
  line.links = {{"a", "b", LinkKind::kNvlink, GBps(100), Microseconds(1)},
                {"b", "c", LinkKind::kNvlink, GBps(100), Microseconds(1)},
                {"b", "h", LinkKind::kPcie, GBps(32), Microseconds(1)},
                {"c", "s", LinkKind::kPcie, GBps(32), Microseconds(1)}};
  ExpectSameRoutesAsExhaustiveSearch(MustBuild(line));
}

// Pairs on different nodes share the fabric part of their search (Router::Share in
// routing.cc) where a vertex has one fewest-hop way out of (into) its node and no relay path
// crosses a node: the DGX-H100's NIC per PCIe switch, on fat trees with several leaves (radix
// 16: a leaf holds 8 NICs, one node), 1:1 and 3:1, rail-optimized fabrics and three-tier Clos
// fabrics, and a node with fewer NICs than GPUs. Every fabric is compared pair by pair with
// the full search, and must have shared some routes where it can.
TEST(Routing, SharedSearchesFindTheRoutesOfTheFullSearch) {
  EXPECT_GT(ExpectSameRoutesAsExhaustiveSearch(
                MustBuild(DgxH100Spec(4, FabricKind::kFatTree, 1.0, /*radix=*/16))),
            0u);
  EXPECT_GT(ExpectSameRoutesAsExhaustiveSearch(
                MustBuild(DgxH100Spec(5, FabricKind::kFatTree, 3.0, /*radix=*/16))),
            0u);
  EXPECT_GT(ExpectSameRoutesAsExhaustiveSearch(
                MustBuild(DgxH100Spec(4, FabricKind::kRailOptimized, 1.0, /*radix=*/16))),
            0u);
  ClusterSpec clos = DgxH100Spec(5, FabricKind::kClos, 1.0, /*radix=*/16);
  clos.fabric.pod_nodes = 2;
  clos.fabric.pod_oversubscription = 4.0;
  EXPECT_GT(ExpectSameRoutesAsExhaustiveSearch(MustBuild(clos)), 0u);
  // DGX-A100 on a fat tree (radix 32: a leaf holds 16 NICs, two nodes): a PCIe switch's two
  // NICs reach one leaf, so a NIC's fewest-hop way out is its own cable and NIC pairs share,
  // while a GPU has two equal ways out (through either NIC) and is searched pair by pair.
  ClusterSpec a100 = DgxH100Spec(4, FabricKind::kFatTree, 1.0, /*radix=*/32);
  a100.node = *FindNodePreset("DGX-A100");
  EXPECT_GT(ExpectSameRoutesAsExhaustiveSearch(MustBuild(a100)), 0u);
  // On rails the two NICs of a PCIe switch reach two leaves: a relay path across the node,
  // so no pair on it shares.
  a100.fabric.kind = FabricKind::kRailOptimized;
  a100.fabric.switch_radix = 16;
  EXPECT_EQ(ExpectSameRoutesAsExhaustiveSearch(MustBuild(a100)), 0u);
  // Four NICs for eight GPUs on four PCIe switches: two GPUs and one NIC per switch.
  ClusterSpec shared_nic = DgxH100Spec(3, FabricKind::kFatTree, 1.0, /*radix=*/16);
  shared_nic.node.nics = 4;
  shared_nic.node.pcie_switches = 4;
  EXPECT_GT(ExpectSameRoutesAsExhaustiveSearch(MustBuild(shared_nic)), 0u);
}

}  // namespace
}  // namespace placesim::topology
