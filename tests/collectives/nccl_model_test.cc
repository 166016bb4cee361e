// NCCL's protocol choice and per-call cost (sim/collectives/nccl_model.h). Expected values are
// NCCL's tuning constants (src/graph/tuning.cc at NVIDIA/nccl 01afd20a) applied by hand:
// ring baseLat {LL 6.6, LL128 14, Simple 8.4} us; ring hwLat NVLink {0.47, 1.9, 3.4} us and
// network {2.7, 4.0, 9.6} us per step; bandwidth shares LL 1/4, LL128 0.92, Simple 1.
#include "sim/collectives/nccl_model.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/collectives/registry.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;

// One ring phase of an all-reduce over n ranks: 2(n-1) steps, each flow carrying 2(n-1)/n S,
// on a route of `latency` and `bandwidth`.
CommPhase RingAllReduce(int64_t n, Duration latency, Bandwidth bandwidth) {
  CommPhase ph;
  ph.flows.push_back(FlowPath{{0}, latency, bandwidth});
  ph.steps = 2 * (n - 1);
  ph.num = ph.analytic_num = 2 * (n - 1);
  ph.den = ph.analytic_den = n;
  FinishPhase(ph);
  return ph;
}

TEST(NcclModel, ATinyAllReduceRunsLLAndPaysItsBaseLatency) {
  // 8 ranks on NVLink, route latency 1 us (above LL's 0.47 us hop: no extra per step). LL:
  // 6.6 us + the wire's 14 B at 100 GB/s = 140 ps, three times over (a quarter of the
  // bandwidth) = 420 ps. LL128: 14 + 14 x 0.9 = 26.6 us; Simple: 8.4 + 14 x 2.4 = 42 us.
  const std::vector<CommPhase> phases = {RingAllReduce(8, Microseconds(1), GBps(100))};
  const std::vector<uint8_t> net = {0};
  const ProtocolCost c = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllReduce, 8, phases,
                                          net, {Bytes::Count(14), Bytes::Count(8)});
  EXPECT_EQ(c.protocol, Protocol::kLL);
  EXPECT_EQ(c.overhead, Microseconds(6.6) + Duration::Picoseconds(420));
}

TEST(NcclModel, AMidSizeAllReduceRunsLL128) {
  // 4 MiB over 8 ranks at 450 GB/s: the wire time 1.75 x 4 MiB / 450 GB/s = 16.3 us. LL adds
  // three times that (49 us) to 6.6 us; LL128 adds 26.6 us and 8.7% of it (1.4 us); Simple
  // 42 us. So LL128, between 26.6 and 28.1 us.
  const std::vector<CommPhase> phases = {RingAllReduce(8, Microseconds(1), GBps(450))};
  const std::vector<uint8_t> net = {0};
  const ProtocolCost c = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllReduce, 8, phases,
                                          net, {MiB(7), MiB(4)});
  EXPECT_EQ(c.protocol, Protocol::kLL128);
  EXPECT_GT(c.overhead, Microseconds(26.6));
  EXPECT_LT(c.overhead, Microseconds(28.1));
}

TEST(NcclModel, ALargeAllReduceRunsSimpleAtFullBandwidth) {
  // 1 GiB: Simple costs 8.4 + 14 x (3.4 - 1) = 42 us and gives up no bandwidth.
  const std::vector<CommPhase> phases = {RingAllReduce(8, Microseconds(1), GBps(450))};
  const std::vector<uint8_t> net = {0};
  const ProtocolCost c = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllReduce, 8, phases,
                                          net, {GiB(1) * 2 - GiB(1) / 4, GiB(1)});
  EXPECT_EQ(c.protocol, Protocol::kSimple);
  EXPECT_EQ(c.overhead, Microseconds(42));
}

TEST(NcclModel, AMultiNodeRingAllReducePaysTheRingPlateau) {
  // 16 ranks across nodes, route latency 5 us: Simple's latency 8.4 + 30 x (9.6 - 5) =
  // 146.4 us, x 1.9 once 1 GiB >= 16 / 16 x 64 KiB (NCCL's plateau) = 278.16 us.
  const std::vector<CommPhase> phases = {RingAllReduce(16, Microseconds(5), GBps(50))};
  const std::vector<uint8_t> net = {1};
  const ProtocolCost c = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllReduce, 16, phases,
                                          net, {GiB(2), GiB(1)});
  EXPECT_EQ(c.protocol, Protocol::kSimple);
  EXPECT_EQ(c.overhead, Microseconds(278.16));
}

TEST(NcclModel, NoCostWhenTheCallAsksForNone) {
  CommPlan plan;
  plan.phases = {RingAllReduce(8, Microseconds(1), GBps(450))};
  plan.on_network = {0};
  plan.ranks = 8;
  const Algorithm& ring = BuiltinRegistry().at(*BuiltinRegistry().Lookup("ring"));
  CollectiveCall call{CollectiveKind::kAllReduce, Bytes::Count(14), Bytes::Count(8)};
  EXPECT_EQ(ring.Cost(plan, call).overhead, Duration::Zero());
  call.protocol_cost = true;
  EXPECT_EQ(ring.Cost(plan, call).overhead, Microseconds(6.6) + Duration::Picoseconds(96));
}

TEST(NcclModel, ProtocolNamesAreNcclProtos) {
  EXPECT_EQ(ProtocolName(Protocol::kLL), "LL");
  EXPECT_EQ(ProtocolName(Protocol::kLL128), "LL128");
  EXPECT_EQ(ProtocolName(Protocol::kSimple), "Simple");
}

}  // namespace
}  // namespace placesim::sim::collectives
