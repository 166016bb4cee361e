// Pipelined plans (sim/collectives/algorithm.h): PlanTime, PipelineFill and Transfers, and the
// protocol cost of phases that run at once (nccl_model.h). Expected values are alpha-beta times
// worked by hand from the phases' routes.
#include <gtest/gtest.h>

#include <vector>

#include "sim/collectives/algorithm.h"
#include "sim/collectives/nccl_model.h"
#include "sim/network/alpha_beta.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;

// A phase of one flow carrying num / den of S over `steps` steps of `latency`, at `bandwidth`.
CommPhase Phase(int64_t num, int64_t den, int64_t steps, Duration latency, Bandwidth bandwidth) {
  CommPhase ph;
  ph.flows.push_back(FlowPath{{0}, latency, bandwidth});
  ph.steps = steps;
  ph.num = ph.analytic_num = num;
  ph.den = ph.analytic_den = den;
  FinishPhase(ph);
  return ph;
}

// A two-node hierarchical all-reduce of 8 GPUs per node: the intra phase carries 2 x 7/8 S over
// 14 steps of 1 us at 450 GB/s, the rails 2 x 1/16 S over 2 steps of 6 us at 50 GB/s.
CommPlan TwoNodeAllReduce(bool pipelined) {
  CommPlan plan;
  plan.phases = {Phase(14, 8, 14, Microseconds(1), GBps(450)),
                 Phase(2, 16, 2, Microseconds(6), GBps(50))};
  plan.on_network = {0, 1};
  plan.ranks = 16;
  plan.pipelined = pipelined;
  return plan;
}

TEST(Pipeline, APipelinedPlanTakesItsLongestPhasePlusOneChunksFill) {
  // S = 1 GiB: intra 14 us + 1.75 GiB / 450 GB/s, rails 12 us + 1/8 GiB / 50 GB/s. The first is
  // longer (4.19 ms against 2.70 ms); the fill is the rails' time over 1 GiB / 4 MiB = 256
  // chunks. Summed, as a plan that is not pipelined takes, they add up.
  const TransferSize size{GiB(1), GiB(1)};
  const Duration intra = Microseconds(14) + DrainTime(1.75 * 1073741824.0, 450e9);
  const Duration rails = Microseconds(12) + DrainTime(1073741824.0 / 8, 50e9);
  const CommPlan pipelined = TwoNodeAllReduce(true);
  EXPECT_EQ(PlanTime(pipelined, size), intra);
  EXPECT_EQ(PipelineFill(pipelined, size), Duration::Picoseconds(rails.picoseconds() / 256));
  const CommPlan serial = TwoNodeAllReduce(false);
  EXPECT_EQ(PlanTime(serial, size), intra + rails);
  EXPECT_EQ(PipelineFill(serial, size), Duration::Zero());
}

TEST(Pipeline, ABufferOfOneChunkRunsItsPhasesBackToBack) {
  // 1 MiB is under one 4 MiB chunk: longest + fill = the sum of the phases.
  const TransferSize size{MiB(1), MiB(1)};
  const CommPlan plan = TwoNodeAllReduce(true);
  EXPECT_EQ(PlanTime(plan, size) + PipelineFill(plan, size),
            PlanTime(TwoNodeAllReduce(false), size));
}

TEST(Pipeline, TransfersAreOnePerPhaseWhenPipelinedElseOne) {
  CommPlan plan = TwoNodeAllReduce(true);
  plan.phases.insert(plan.phases.begin(), CommPhase{});  // an empty phase starts nothing
  const std::vector<std::span<const CommPhase>> each = Transfers(plan);
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each[0].data(), &plan.phases[1]);
  EXPECT_EQ(each[1].data(), &plan.phases[2]);
  plan.pipelined = false;
  const std::vector<std::span<const CommPhase>> one = Transfers(plan);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].size(), 3u);
  EXPECT_TRUE(Transfers(CommPlan{}).empty());
}

TEST(Pipeline, AProtocolSlowsOnlyTheSlowestOfPhasesThatRunAtOnce) {
  // 64 MiB under LL128 (0.92 of the bandwidth): the intra phase's wire time t1 = 1.75 x 64 MiB
  // / 450 GB/s, the rails' t2 = 2/16 x 64 MiB = 8 MiB / 50 GB/s, so t1 > t2. Pipelined, LL128 gives
  // up t1 / 0.92 - t1; one after another, (t1 + t2) / 0.92 - (t1 + t2). The latency terms are the
  // same either way, so the difference of the two overheads is t2 x (1 / 0.92 - 1).
  const TransferSize size{MiB(112), MiB(64)};
  const CommPlan plan = TwoNodeAllReduce(true);
  const ProtocolCost at_once = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllReduce, 16,
                                                plan.phases, plan.on_network, size, true);
  const ProtocolCost serial = CheapestProtocol(NcclRow::kRing, CollectiveKind::kAllReduce, 16,
                                               plan.phases, plan.on_network, size, false);
  ASSERT_EQ(at_once.protocol, Protocol::kLL128);
  ASSERT_EQ(serial.protocol, Protocol::kLL128);
  const double t2_ps = static_cast<double>(DrainTime(8.0 * 1048576, 50e9).picoseconds());
  EXPECT_NEAR(static_cast<double>((serial.overhead - at_once.overhead).picoseconds()),
              t2_ps * (1 / 0.92 - 1), 2.0);
}

}  // namespace
}  // namespace placesim::sim::collectives
