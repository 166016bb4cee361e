// NCCL's multi-channel ring across nodes (sim/collectives/impl/ring.cc): its flows, per-flow
// bytes and steps, and the protocol cost its NVLink and network steps pay (nccl_model.h), on a
// hand-made routing of M nodes of L GPUs (no cluster needed). Expected values are worked from
// the ring's volume and NCCL's latency formula, ncclTopoTuneModel in NVIDIA/nccl
// src/graph/tuning.cc at 01afd20a: baseLat + (nsteps - nInterSteps) x hwLat[NVLINK]
// + nInterSteps x hwLat[NET], nsteps = N-1 and nInterSteps = M-1 for all-gather and
// reduce-scatter, 2(N-1) and 2(M-1) for all-reduce.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "sim/collectives/registry.h"
#include "sim/network/alpha_beta.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;

constexpr int kGpusPerNode = 8;

// GPU g sits on node g / 8 at local position g % 8; link ids: 1000 + g is GPU g's NVLink,
// 2000 + g its rail NIC's uplink. An NVLink route costs `nvlink_latency` at 450 GB/s, a rail
// route `rail_latency` at 50 GB/s.
class FakeRoutes final : public Routes {
 public:
  explicit FakeRoutes(Duration nvlink_latency = Microseconds(1),
                      Duration rail_latency = Microseconds(6))
      : nvlink_latency_(nvlink_latency), rail_latency_(rail_latency) {}
  StatusOr<FlowPath> Between(VertexId from, VertexId to, const char* what) override {
    if (from.value / kGpusPerNode != to.value / kGpusPerNode) return OverRail(from, to, what);
    return FlowPath{{static_cast<LinkIndex>(1000 + from.value)}, nvlink_latency_, GBps(450)};
  }
  StatusOr<FlowPath> OverRail(VertexId from, VertexId to, const char* /*what*/) override {
    return FlowPath{
        {static_cast<LinkIndex>(2000 + from.value), static_cast<LinkIndex>(2000 + to.value)},
        rail_latency_,
        GBps(50)};
  }

 private:
  Duration nvlink_latency_;
  Duration rail_latency_;
};

// One group of the first `per_node` GPUs of each of `nodes` nodes, in node order.
GroupLayout Group(int nodes, int per_node) {
  GroupLayout l;
  l.n = nodes * per_node;
  l.multi_node = nodes > 1;
  std::vector<VertexId> members;
  std::vector<std::vector<VertexId>> by_node(static_cast<size_t>(nodes));
  for (int k = 0; k < nodes; ++k) {
    for (int i = 0; i < per_node; ++i) {
      const VertexId v{k * kGpusPerNode + i};
      members.push_back(v);
      by_node[static_cast<size_t>(k)].push_back(v);
    }
  }
  l.groups.push_back(std::move(members));
  l.per_node.push_back(std::move(by_node));
  return l;
}

const Algorithm& Ring() { return BuiltinRegistry().at(*BuiltinRegistry().Find("ring")); }

std::vector<CommPhase> PlanOf(CollectiveKind kind, const GroupLayout& layout,
                              FakeRoutes routes = FakeRoutes()) {
  StatusOr<std::vector<CommPhase>> phases = Ring().Plan(kind, layout, routes, "test");
  PLACESIM_CHECK(phases.ok());
  for (CommPhase& ph : *phases) {
    ph.analytic_num = ph.num;
    ph.analytic_den = ph.den;
    FinishPhase(ph);
  }
  return *std::move(phases);
}

TEST(RingChannels, AnAllGatherAcrossNodesRunsOneChannelPerMemberOfANode) {
  // M = 3 nodes of L = 4, N = 12: the ring volume V = (N-1)/N S = 11/12 S per member. Each
  // in-node edge carries L-1 = 3 of the 4 channels, 3/4 V = 33/48 S, over N - M = 9 NVLink
  // steps; each crossing one channel, V / 4 = 11/48 S, over M - 1 = 2 network steps.
  const std::vector<CommPhase> p = PlanOf(CollectiveKind::kAllGather, Group(3, 4));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].flows.size(), 12u);  // L per node
  EXPECT_EQ(p[0].num, 33);
  EXPECT_EQ(p[0].den, 48);
  EXPECT_EQ(p[0].steps, 9);
  EXPECT_EQ(p[1].flows.size(), 12u);
  EXPECT_EQ(p[1].num, 11);
  EXPECT_EQ(p[1].den, 48);
  EXPECT_EQ(p[1].steps, 2);
  // A member sends 3/4 V on NVLink and V / 4 across, V in all, as on a single ring.
  EXPECT_EQ(p[0].num + p[1].num, 11 * 4);
  // Every member's NIC carries one channel out of its node and one into the next: the node's
  // four NICs share the crossing bytes, where a single ring sends them all through one.
  std::set<LinkIndex> out, in;
  for (const FlowPath& f : p[1].flows) {
    ASSERT_EQ(f.links.size(), 2u);
    out.insert(f.links[0]);
    in.insert(f.links[1]);
    EXPECT_EQ(f.links[0] % kGpusPerNode, f.links[1] % kGpusPerNode);  // along one rail
    EXPECT_NE(f.links[0] / kGpusPerNode, f.links[1] / kGpusPerNode);  // to the next node
  }
  EXPECT_EQ(out.size(), 12u);
  EXPECT_EQ(in.size(), 12u);
}

TEST(RingChannels, AnAllReduceDoublesTheVolumeAndTheSteps) {
  // M = 2, L = 8, N = 16: V = 2 x 15/16 S; in-node 2 x 7 x 15 / 128, 2(N - M) = 28 steps;
  // crossing 2 x 15 / 128, 2(M - 1) = 2 steps.
  const std::vector<CommPhase> p = PlanOf(CollectiveKind::kAllReduce, Group(2, 8));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].num, 210);
  EXPECT_EQ(p[0].den, 128);
  EXPECT_EQ(p[0].steps, 28);
  EXPECT_EQ(p[1].num, 30);
  EXPECT_EQ(p[1].den, 128);
  EXPECT_EQ(p[1].steps, 2);
}

TEST(RingChannels, TheNodesNicsTogetherBoundTheRing) {
  // 2 nodes of 8, all-gather of S = 1 GB: the crossing flows carry V / 8 = 15/128 GB each at
  // the 50 GB/s of one rail, so the eight NICs of a node together move V at 400 GB/s; the
  // in-node edges carry 7/8 V at 450 GB/s over N - M = 14 steps of 1 us and finish first.
  // Pipelined, the plan takes the longer phase: M - 1 = 1 step of 6 us + 15/128 GB / 50 GB/s.
  CommPlan plan;
  plan.phases = PlanOf(CollectiveKind::kAllGather, Group(2, 8));
  plan.pipelined = Ring().pipelined();
  const TransferSize size{GB(1), GB(1)};
  const Duration crossing = Microseconds(6) + DrainTime(15.0 / 128 * 1e9, 50e9);
  const Duration in_node = Microseconds(14) + DrainTime(7 * 15.0 / 128 * 1e9, 450e9);
  ASSERT_GT(crossing, in_node);
  EXPECT_EQ(PlanTime(plan, size), crossing);
}

TEST(RingChannels, OneMemberPerNodeKeepsTheSingleRing) {
  // Rails (one member on each of 4 nodes): one phase of N = 4 flows of the op's own bytes
  // (den 0), N - 1 = 3 steps, all on the network, as before.
  const std::vector<CommPhase> p = PlanOf(CollectiveKind::kAllGather, Group(4, 1));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].flows.size(), 4u);
  EXPECT_EQ(p[0].den, 0);
  EXPECT_EQ(p[0].steps, 3);
}

TEST(RingChannels, TheProtocolCostSplitsTheStepsIntoNvlinkAndNetworkOnesAsNccl) {
  // 1536 ranks on 192 nodes of 8 (the ZeRO-3 scale of the validation table), all-gather, with
  // routes of no latency so NCCL's per-step floors apply in full:
  //   Simple: 8.4 + (1536 - 192) x 3.4 + 191 x 9.6 = 8.4 + 4569.6 + 1833.6 = 6411.6 us
  //   LL:     6.6 + 1344 x 0.47 x 1.8 + 191 x 2.7 = 6.6 + 1137.024 + 515.7 = 1659.324 us
  //   LL128:  14 + 1344 x 1.9 + 191 x 4.0 = 14 + 2553.6 + 764 = 3331.6 us
  // A tiny message runs LL at 1659.3 us; a huge one Simple at 6411.6 us, several ms per call
  // where charging all 1535 steps at the network's 9.6 us would give 14744.4 us.
  const GroupLayout layout = Group(192, 8);
  const std::vector<CommPhase> phases =
      PlanOf(CollectiveKind::kAllGather, layout, FakeRoutes(Duration::Zero(), Duration::Zero()));
  const std::vector<uint8_t> on_network = {0, 1};
  const ProtocolCost tiny = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllGather, 1536,
                                             phases, on_network, {Bytes::Count(8), Bytes::Count(8)},
                                             /*pipelined=*/true);
  EXPECT_EQ(tiny.protocol, Protocol::kLL);
  EXPECT_NEAR(static_cast<double>(tiny.overhead.picoseconds()), 1659.324e6, 1e3);
  // 64 GB: the crossing phase alone drains 1535/1536 x 64 GB / 8 / 50 GB/s = 160 ms, so
  // LL128's 8% bandwidth loss (14 ms) outweighs Simple's extra 3.08 ms of latency.
  const ProtocolCost huge =
      CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllGather, 1536, phases, on_network,
                       {GB(64), GB(64)}, /*pipelined=*/true);
  EXPECT_EQ(huge.protocol, Protocol::kSimple);
  EXPECT_NEAR(static_cast<double>(huge.overhead.picoseconds()), 6411.6e6, 1e3);
}

}  // namespace
}  // namespace placesim::sim::collectives
