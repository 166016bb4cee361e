// Validation: one test per rule, asserting the message; and all problems at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "test_clusters.h"
#include "topology/cluster.h"

namespace placesim::topology {
namespace {

using test_clusters::DgxH100Spec;
using ::testing::HasSubstr;

std::string Errors(const ClusterSpec& spec) {
  StatusOr<Cluster> c = BuildCluster(spec);
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  return c.status().message();
}

// Two GPUs on two nodes joined by one switch; each with its own host memory.
ClusterSpec TwoNodeExplicit() {
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"g0", VertexKind::kGpu, 0},
                   {"g1", VertexKind::kGpu, 1},
                   {"h0", VertexKind::kHostMemory, 0},
                   {"h1", VertexKind::kHostMemory, 1},
                   {"sw", VertexKind::kSwitch, 0}};
  spec.links = {{"g0", "sw", LinkKind::kNetwork, GBps(50), Microseconds(1)},
                {"g1", "sw", LinkKind::kNetwork, GBps(50), Microseconds(1)},
                {"g0", "h0", LinkKind::kPcie, GBps(64), Microseconds(1)},
                {"g1", "h1", LinkKind::kPcie, GBps(64), Microseconds(1)}};
  return spec;
}

TEST(Validation, TheExplicitBaseSpecIsValid) { EXPECT_TRUE(BuildCluster(TwoNodeExplicit()).ok()); }

TEST(Validation, ZeroPcieBandwidthIsRefused) {
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.pcie_bandwidth = Bandwidth::Zero();
  EXPECT_EQ(Errors(spec), "cluster.node.pcie_bandwidth: 0.00 B/s: must be > 0");
}

TEST(Validation, NegativeNvlinkBandwidthIsRefusedButZeroMeansNone) {
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.nvlink_bandwidth = GBps(-1);
  EXPECT_EQ(Errors(spec), "cluster.node.nvlink_bandwidth: -1.00 GB/s: must be >= 0");
  spec.node.nvlink_bandwidth = Bandwidth::Zero();
  EXPECT_TRUE(BuildCluster(spec).ok());
}

TEST(Validation, ZeroBandwidthOnAnExplicitLinkIsRefused) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.links[3].bandwidth = Bandwidth::Zero();
  EXPECT_EQ(Errors(spec), "cluster.links[3].bandwidth: 0.00 B/s: must be > 0");
}

TEST(Validation, UnknownVertexNameIsRefusedListingValidNames) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.links[1].to = "swx";
  EXPECT_EQ(Errors(spec),
            "cluster.links[1].to: \"swx\": unknown vertex; valid: \"g0\", \"g1\", \"h0\", "
            "\"h1\", \"sw\"");
}

TEST(Validation, DuplicateVertexNameIsRefused) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.vertices[4].name = "g1";
  EXPECT_THAT(Errors(spec),
              HasSubstr("cluster.vertices[4].name: \"g1\": duplicate name (first used by "
                        "cluster.vertices[1]); vertex names must be unique"));
}

TEST(Validation, GpuWithoutHostMemoryInItsNodeIsRefused) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.vertices[3].node = 0;  // h1 moves to node 0, leaving g1's node without host memory
  EXPECT_THAT(Errors(spec),
              HasSubstr("cluster.vertices[1]: GPU \"g1\": node 1 has no host_memory vertex; "
                        "every node with GPUs needs one"));
}

TEST(Validation, SecondHostMemoryInANodeIsRefused) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.vertices.push_back({"h0b", VertexKind::kHostMemory, 0});
  EXPECT_EQ(Errors(spec),
            "cluster.vertices[5].kind: host_memory: node 0 already has one (\"h0\"); at most "
            "one host_memory vertex per node");
}

TEST(Validation, UnreachableGpuIsRefused) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.links.erase(spec.links.begin() + 1);  // g1 loses its only link to the switch
  EXPECT_EQ(Errors(spec),
            "cluster.links: GPU \"g1\": neither reaches nor is reached from GPU \"g0\"; every "
            "GPU must reach, in both directions, every other GPU and its node's host memory\n"
            "cluster.links: host memory \"h1\": neither reaches nor is reached from GPU \"g0\"; "
            "every GPU must reach, in both directions, every other GPU and its node's host "
            "memory");
}

TEST(Validation, OneWayLinkLeavesAGpuUnreachableInOneDirection) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.links[1].full_duplex = false;  // g1 -> sw only: g1 sends but cannot receive
  EXPECT_THAT(Errors(spec), HasSubstr("GPU \"g1\": is not reached from GPU \"g0\""));
}

TEST(Validation, ExplicitGraphNeedsAGpu) {
  ClusterSpec spec;
  spec.fabric.kind = FabricKind::kExplicit;
  spec.vertices = {{"h", VertexKind::kHostMemory, 0}};
  EXPECT_EQ(Errors(spec), "cluster.vertices: 1 vertices: must include at least one GPU");
}

TEST(Validation, SelfLinkIsRefused) {
  ClusterSpec spec = TwoNodeExplicit();
  spec.links.push_back({"sw", "sw", LinkKind::kNetwork, GBps(1), Microseconds(0)});
  EXPECT_EQ(Errors(spec), "cluster.links[4].to: \"sw\": a link must join two different vertices");
}

TEST(Validation, ZeroNodesAndZeroGpusAreRefusedTogether) {
  ClusterSpec spec = DgxH100Spec(0, FabricKind::kSingleNode);
  spec.node.gpus = 0;
  spec.node.pcie_switches = 1;
  EXPECT_EQ(Errors(spec),
            "cluster.node.gpus: 0: must be between 1 and 65536\n"
            "cluster.nodes: 0: must be between 1 and 65536");
}

TEST(Validation, MultiNodeNeedsAScaleOutFabricAndNics) {
  ClusterSpec spec = DgxH100Spec(2, FabricKind::kSingleNode);
  spec.node.nics = 0;
  EXPECT_EQ(Errors(spec),
            "cluster.fabric.kind: single_node: a single-node fabric needs nodes == 1 (got 2); "
            "use fat_tree, rail_optimized or explicit\n"
            "cluster.node.nics: 0: must be >= 1 when nodes > 1 (the nodes need a scale-out "
            "network)");
}

TEST(Validation, MillionNodesAreRefusedBeforeAnythingIsBuilt) {
  // Refused from the numbers alone (no allocation proportional to the request).
  ClusterSpec spec = DgxH100Spec(1'000'000, FabricKind::kFatTree);
  EXPECT_EQ(Errors(spec), "cluster.nodes: 1000000: must be between 1 and 65536");
}

TEST(Validation, TooManyGpusInTotalAreRefusedWithTheLimit) {
  // 65,536 nodes x 8 GPUs = 524,288 GPUs > 262,144.
  ClusterSpec spec = DgxH100Spec(65'536, FabricKind::kFatTree, 1.0, 4096);
  EXPECT_EQ(Errors(spec),
            "cluster.nodes: 65536: 65536 nodes x 8 GPUs = 524288 GPUs; placesim simulates at "
            "most 262144 GPUs");
}

TEST(Validation, FatTreeBeyondTwoLevelsIsRefusedNamingTheLimit) {
  // Radix 64 at 1:1 holds 64 leaves x 32 = 2048 NIC ports; 257 nodes x 8 = 2056 ports.
  ClusterSpec spec = DgxH100Spec(257, FabricKind::kFatTree);
  EXPECT_EQ(Errors(spec),
            "cluster.nodes: 257: 257 nodes x 8 NICs = 2056 NIC ports, but a two-level fat-tree "
            "of radix-64 switches with 32 down ports per leaf (oversubscription 1) connects at "
            "most 2048 NIC ports (64 leaves x 32); raise cluster.fabric.switch_radix or "
            "oversubscription, or use fewer nodes");
}

TEST(Validation, RailOptimizedBeyondTwoLevelsIsRefusedNamingTheLimit) {
  // 8 rails share 64 leaves: 8 leaves per rail x 32 ports = 256 nodes at most.
  ClusterSpec spec = DgxH100Spec(257, FabricKind::kRailOptimized);
  EXPECT_THAT(Errors(spec), HasSubstr("has at most 64 leaves, but 8 rails x 9 leaves per rail "
                                      "(32 down ports each) = 72; at most 256 nodes fit"));
}

TEST(Validation, OversubscriptionThatLeavesNoDownlinkIsRefused) {
  // d = floor(64 * 0.01 / 1.01) = floor(0.63) = 0 down ports.
  ClusterSpec spec = DgxH100Spec(2, FabricKind::kFatTree, 0.01, 64);
  EXPECT_EQ(Errors(spec),
            "cluster.fabric.oversubscription: 0.01: gives radix-64 leaves 0 down and 64 up "
            "ports; both must be >= 1");
  spec.fabric.oversubscription = -1;
  EXPECT_EQ(Errors(spec),
            "cluster.fabric.oversubscription: -1: must be > 0 (1 = non-blocking, 2 = 2:1 "
            "down:up)");
}

TEST(Validation, EveryProblemIsReportedAtOnce) {
  ClusterSpec spec = DgxH100Spec(4, FabricKind::kFatTree);
  spec.node.pcie_bandwidth = Bandwidth::Zero();
  spec.node.nic_bandwidth = Bandwidth::Zero();
  spec.node.nvlink_latency = Microseconds(-1);
  spec.node.gpu.matmul_efficiency = 1.5;
  spec.fabric.switch_radix = 1;
  StatusOr<Cluster> c = BuildCluster(spec);
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_THAT(m, HasSubstr("cluster.node.pcie_bandwidth: 0.00 B/s: must be > 0"));
  EXPECT_THAT(m, HasSubstr("cluster.node.nic_bandwidth: 0.00 B/s: must be > 0"));
  EXPECT_THAT(m, HasSubstr("cluster.node.nvlink_latency: -1.000 us: must be >= 0"));
  EXPECT_THAT(m, HasSubstr("cluster.node.gpu.matmul_efficiency: 1.5: must be between 0 and 1"));
  EXPECT_THAT(m, HasSubstr("cluster.fabric.switch_radix: 1: must be between 2 and 65536"));
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 4);  // five lines
}

TEST(Validation, NvmeCapacityNeedsBandwidth) {
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.nvme_bandwidth = Bandwidth::Zero();
  EXPECT_EQ(Errors(spec),
            "cluster.node.nvme_bandwidth: 0.00 B/s: must be > 0 when nvme_capacity is > 0");
}

TEST(Validation, PcieSwitchCountMustFitTheGpus) {
  ClusterSpec spec = DgxH100Spec(1, FabricKind::kSingleNode);
  spec.node.pcie_switches = 0;
  EXPECT_EQ(Errors(spec), "cluster.node.pcie_switches: 0: must be between 1 and 8");
}

}  // namespace
}  // namespace placesim::topology
