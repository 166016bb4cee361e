#include "sim/network/flow_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/network/alpha_beta.h"

namespace placesim::sim {
namespace {

FlowNetwork MakeNetwork(std::vector<LinkSpec> links) {
  auto net = FlowNetwork::Create(std::move(links));
  PLACESIM_CHECK(net.ok());
  return std::move(net).value();
}

LinkSpec Link(Bandwidth capacity, Duration latency = Duration::Zero()) {
  return LinkSpec{capacity, latency};
}

std::vector<LinkIndex> Route(std::initializer_list<LinkIndex> links) { return links; }

TEST(FlowNetwork, OneFlowOnOneLinkTakesSizeOverCapacityPlusLatency) {
  // 1 GB at 100 GB/s drains in 1e9 / 1e11 s = 10 ms = 1e10 ps; the link's 1 us latency comes
  // first, so the flow completes at 10 ms + 1 us = 10,001,000,000 ps.
  FlowNetwork net = MakeNetwork({Link(GBps(100), Microseconds(1))});
  FlowId f = net.Start(SimTime::Zero(), Route({0}), GB(1), /*tag=*/7);
  const SimTime done = Milliseconds(10) + Microseconds(1);
  EXPECT_EQ(net.State(f), FlowState::kLatency);
  EXPECT_EQ(net.NextEventTime(), Microseconds(1));  // end of the latency phase
  EXPECT_TRUE(net.AdvanceTo(Microseconds(1)).empty());
  EXPECT_EQ(net.State(f), FlowState::kTransfer);
  EXPECT_DOUBLE_EQ(net.Rate(f).bytes_per_second(), 100e9);
  EXPECT_EQ(net.NextEventTime(), done);
  // Probed at t - 1 and t.
  EXPECT_TRUE(net.AdvanceTo(done - Picoseconds(1)).empty());
  EXPECT_NEAR(net.RemainingBytes(f), 0.1, 1e-3);  // 1 ps at 1e11 B/s is 0.1 byte
  auto completed = net.AdvanceTo(done);
  ASSERT_EQ(completed.size(), 1u);
  EXPECT_EQ(completed[0].id, f);
  EXPECT_EQ(completed[0].tag, 7u);
  EXPECT_EQ(completed[0].time, done);
  EXPECT_EQ(net.State(f), FlowState::kGone);
  EXPECT_EQ(net.NextEventTime(), SimTime::Max());
  EXPECT_EQ(net.num_flows(), 0u);
}

TEST(FlowNetwork, LoneFlowMatchesAlphaBetaTime) {
  // Awkward figures: 123,456,789 B at 37 GB/s after 1.5 us; both models round the same way.
  FlowNetwork net =
      MakeNetwork({Link(GBps(37), Nanoseconds(500)), Link(GBps(90), Microseconds(1))});
  auto route = Route({0, 1});
  net.Start(SimTime::Zero(), route, Bytes::Count(123456789));
  Duration expected =
      AlphaBetaTime(net.RouteBottleneck(route), net.RouteLatency(route), Bytes::Count(123456789));
  EXPECT_EQ(net.NextEventTime(), Nanoseconds(1500));
  net.AdvanceTo(Nanoseconds(1500));
  EXPECT_EQ(net.NextEventTime(), expected);
  // 123456789 / 37e9 s = 3,336,669.972... ns, rounded up to the ps: 3,336,669,973 ps.
  EXPECT_EQ(expected, Nanoseconds(1500) + Picoseconds(3336669973));
}

TEST(FlowNetwork, TwoFlowsShareABottleneckEqually) {
  // Two flows on one 100 GB/s link get 50 GB/s each, so 1 GB each takes 20 ms; both complete
  // at the same picosecond and are reported in start order.
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  FlowId a = net.Start(SimTime::Zero(), Route({0}), GB(1));
  FlowId b = net.Start(SimTime::Zero(), Route({0}), GB(1));
  EXPECT_DOUBLE_EQ(net.Rate(a).bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(net.Rate(b).bytes_per_second(), 50e9);
  EXPECT_EQ(net.NextEventTime(), Milliseconds(20));
  auto completed = net.AdvanceTo(Milliseconds(20));
  ASSERT_EQ(completed.size(), 2u);
  EXPECT_EQ(completed[0].id, a);
  EXPECT_EQ(completed[1].id, b);
  EXPECT_EQ(completed[1].time, Milliseconds(20));
}

TEST(FlowNetwork, FlowAcrossTwoLinksRunsAtTheSlower) {
  // 100 GB/s then 25 GB/s: the flow runs at 25 GB/s, so 1 GB takes 40 ms, after the two
  // latencies 1 us + 2 us.
  FlowNetwork net =
      MakeNetwork({Link(GBps(100), Microseconds(1)), Link(GBps(25), Microseconds(2))});
  FlowId f = net.Start(SimTime::Zero(), Route({0, 1}), GB(1));
  net.AdvanceTo(Microseconds(3));
  EXPECT_DOUBLE_EQ(net.Rate(f).bytes_per_second(), 25e9);
  EXPECT_EQ(net.NextEventTime(), Milliseconds(40) + Microseconds(3));
}

TEST(FlowNetwork, MaxMinDiffersFromAnEqualSplitPerLink) {
  // Link A (10 GB/s) carries f1 and f2; link B (4 GB/s) carries f2 and f3.
  // Shares: A 10/2 = 5, B 4/2 = 2. B is the bottleneck: f2 = f3 = 2 GB/s. A keeps 10 - 2 = 8
  // for its one unfixed flow: f1 = 8 GB/s. (An equal split of each link would give f1 only 5
  // and leave 3 GB/s of A idle.)
  FlowNetwork net = MakeNetwork({Link(GBps(10)), Link(GBps(4))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  FlowId f2 = net.Start(SimTime::Zero(), Route({0, 1}), GB(1));
  FlowId f3 = net.Start(SimTime::Zero(), Route({1}), GB(1));
  EXPECT_DOUBLE_EQ(net.Rate(f1).bytes_per_second(), 8e9);
  EXPECT_DOUBLE_EQ(net.Rate(f2).bytes_per_second(), 2e9);
  EXPECT_DOUBLE_EQ(net.Rate(f3).bytes_per_second(), 2e9);
}

TEST(FlowNetwork, MaxMinWithEqualCapacitiesAndUnequalLoads) {
  // A and B both 10 GB/s; f1 on A, f2 on A and B, f3 and f4 on B.
  // Shares: A 10/2 = 5, B 10/3. B is the bottleneck: f2 = f3 = f4 = 10/3 GB/s; f1 gets what is
  // left of A: 10 - 10/3 = 20/3 GB/s.
  FlowNetwork net = MakeNetwork({Link(GBps(10)), Link(GBps(10))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  FlowId f2 = net.Start(SimTime::Zero(), Route({0, 1}), GB(1));
  FlowId f3 = net.Start(SimTime::Zero(), Route({1}), GB(1));
  FlowId f4 = net.Start(SimTime::Zero(), Route({1}), GB(1));
  EXPECT_NEAR(net.Rate(f1).bytes_per_second(), 20e9 / 3, 1e-3);
  EXPECT_NEAR(net.Rate(f2).bytes_per_second(), 10e9 / 3, 1e-3);
  EXPECT_NEAR(net.Rate(f3).bytes_per_second(), 10e9 / 3, 1e-3);
  EXPECT_NEAR(net.Rate(f4).bytes_per_second(), 10e9 / 3, 1e-3);
}

TEST(FlowNetwork, AFlowThatEndsEarlyFreesBandwidth) {
  // One 100 GB/s link; f1 = 0.5 GB and f2 = 1 GB start together at 50 GB/s each.
  // f1 ends at 0.5e9 / 50e9 = 10 ms, when f2 has sent 0.5 GB; f2's last 0.5 GB then runs alone
  // at 100 GB/s for 5 ms: f2 ends at 15 ms.
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0}), GB(0.5));
  FlowId f2 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  EXPECT_EQ(net.NextEventTime(), Milliseconds(10));
  auto first = net.AdvanceTo(Milliseconds(10));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].id, f1);
  EXPECT_DOUBLE_EQ(net.Rate(f2).bytes_per_second(), 100e9);
  EXPECT_EQ(net.NextEventTime(), Milliseconds(15));
  EXPECT_TRUE(net.AdvanceTo(Milliseconds(15) - Picoseconds(1)).empty());
  EXPECT_EQ(net.AdvanceTo(Milliseconds(15)).size(), 1u);
}

TEST(FlowNetwork, ALateFlowSlowsAnEarlierOne) {
  // f1 = 1 GB starts at 0 alone on 100 GB/s: by 5 ms it has sent 0.5 GB. f2 = 1 GB joins at
  // 5 ms; both run at 50 GB/s, so f1's last 0.5 GB ends at 5 + 10 = 15 ms, when f2 has sent
  // 0.5 GB; f2 then finishes alone in 5 ms: 20 ms. (Work-conserving: 2 GB at 100 GB/s = 20 ms.)
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  EXPECT_EQ(net.NextEventTime(), Milliseconds(10));
  FlowId f2 = net.Start(Milliseconds(5), Route({0}), GB(1));
  EXPECT_DOUBLE_EQ(net.RemainingBytes(f1), 0.5e9);
  EXPECT_EQ(net.NextEventTime(), Milliseconds(15));
  auto a = net.AdvanceTo(Milliseconds(15));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].id, f1);
  EXPECT_EQ(net.NextEventTime(), Milliseconds(20));
  auto b = net.AdvanceTo(Milliseconds(30));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].id, f2);
  EXPECT_EQ(b[0].time, Milliseconds(20));
  EXPECT_EQ(net.now(), Milliseconds(30));
}

TEST(FlowNetwork, StartingPastACompletionReportsItOnTheNextAdvance) {
  // f1 (1 GB at 100 GB/s) is due at 10 ms; a Start at 12 ms completes it first, and the next
  // AdvanceTo reports it with its true time.
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  net.NextEventTime();
  net.Start(Milliseconds(12), Route({0}), GB(1));
  EXPECT_EQ(net.NextEventTime(), Milliseconds(12));
  auto done = net.AdvanceTo(Milliseconds(12));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, f1);
  EXPECT_EQ(done[0].time, Milliseconds(10));
}

TEST(FlowNetwork, ZeroByteAndLocalFlowsCompleteAfterTheirLatency) {
  FlowNetwork net = MakeNetwork({Link(GBps(100), Microseconds(2))});
  FlowId empty = net.Start(SimTime::Zero(), Route({0}), Bytes::Zero());
  FlowId local = net.Start(SimTime::Zero(), Route({}), GB(1), 0, Microseconds(1));
  FlowId instant = net.Start(SimTime::Zero(), Route({}), Bytes::Zero());
  // The instant one is due now, the local one at 1 us, the empty one at 2 us.
  EXPECT_EQ(net.NextEventTime(), SimTime::Zero());
  auto now = net.AdvanceTo(SimTime::Zero());
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].id, instant);
  auto later = net.AdvanceTo(Microseconds(5));
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].id, local);
  EXPECT_EQ(later[0].time, Microseconds(1));
  EXPECT_EQ(later[1].id, empty);
  EXPECT_EQ(later[1].time, Microseconds(2));
  EXPECT_EQ(net.link_stats(0).busy_time, Duration::Zero());
}

TEST(FlowNetwork, ResolveTouchesOnlyTheAffectedComponent) {
  // Links 0 and 1 are disjoint. Three flows on link 0, then one on link 1: solving the new
  // flow's component visits 1 flow and 1 link, and link 0's flows keep their rates.
  FlowNetwork net = MakeNetwork({Link(GBps(90)), Link(GBps(10)), Link(GBps(10))});
  FlowId a = net.Start(SimTime::Zero(), Route({0}), GB(1));
  net.Start(SimTime::Zero(), Route({0}), GB(1));
  net.Start(SimTime::Zero(), Route({0}), GB(1));
  net.NextEventTime();
  EXPECT_EQ(net.solver_stats().last_component_flows, 3u);
  uint64_t solved_before = net.solver_stats().flows_solved;
  FlowId d = net.Start(SimTime::Zero(), Route({1}), GB(1));
  net.NextEventTime();
  EXPECT_EQ(net.solver_stats().last_component_flows, 1u);
  EXPECT_EQ(net.solver_stats().last_component_links, 1u);
  EXPECT_EQ(net.solver_stats().flows_solved - solved_before, 1u);
  EXPECT_DOUBLE_EQ(net.Rate(a).bytes_per_second(), 30e9);
  EXPECT_DOUBLE_EQ(net.Rate(d).bytes_per_second(), 10e9);
  // A flow over links 1 and 2 joins link 1's component (2 flows, 2 links), still not link 0's.
  net.Start(SimTime::Zero(), Route({1, 2}), GB(1));
  net.NextEventTime();
  EXPECT_EQ(net.solver_stats().last_component_flows, 2u);
  EXPECT_EQ(net.solver_stats().last_component_links, 2u);
  EXPECT_DOUBLE_EQ(net.Rate(d).bytes_per_second(), 5e9);
}

TEST(FlowNetwork, StartsAtOneInstantAreSolvedOnce) {
  // 100 flows started at the same time on one link: one component solve, not 100.
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  for (int i = 0; i < 100; ++i) net.Start(SimTime::Zero(), Route({0}), MB(1));
  net.NextEventTime();
  EXPECT_EQ(net.solver_stats().solves, 1u);
  EXPECT_EQ(net.solver_stats().rate_changes, 100u);
}

TEST(FlowNetwork, ALoneFlowJoinedAtTheSameInstantSharesItsLink) {
  // f1 enters transfer alone on links 0 and 1 (both 100 GB/s), then f2 joins link 1 at the
  // same instant: f1 is no longer a component of its own, and link 1 splits 50/50. 1 GB at
  // 50 GB/s takes 20 ms for both. A third flow alone on link 2 keeps its 100 GB/s: 10 ms.
  FlowNetwork net = MakeNetwork({Link(GBps(100)), Link(GBps(100)), Link(GBps(100))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0, 1}), GB(1));
  FlowId f2 = net.Start(SimTime::Zero(), Route({1}), GB(1));
  FlowId f3 = net.Start(SimTime::Zero(), Route({2}), GB(1));
  EXPECT_DOUBLE_EQ(net.Rate(f1).bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(net.Rate(f2).bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(net.Rate(f3).bytes_per_second(), 100e9);
  auto done = net.AdvanceTo(Milliseconds(30));
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].id, f3);
  EXPECT_EQ(done[0].time, Milliseconds(10));
  EXPECT_EQ(done[1].id, f1);
  EXPECT_EQ(done[1].time, Milliseconds(20));
  EXPECT_EQ(done[2].id, f2);
  EXPECT_EQ(done[2].time, Milliseconds(20));
}

TEST(FlowNetwork, ManyCancelledActivationsNeverFireAndTheRestRunOnTime) {
  // 200 flows of 1 GB on one 100 GB/s link, each with a 1 ms latency phase; the first 150 are
  // cancelled before it ends (their queue entries are dropped once they are the majority). The
  // 50 left share the link from 1 ms: 50 GB at 100 GB/s takes 500 ms, so all end at 501 ms.
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  std::vector<FlowId> ids;
  for (int i = 0; i < 200; ++i) {
    ids.push_back(net.Start(SimTime::Zero(), Route({0}), GB(1), i, Milliseconds(1)));
  }
  for (int i = 0; i < 150; ++i) EXPECT_TRUE(net.Cancel(ids[i]));
  EXPECT_EQ(net.NextEventTime(), Milliseconds(1));
  auto done = net.AdvanceTo(Milliseconds(600));
  ASSERT_EQ(done.size(), 50u);
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].tag, 150 + i);  // same instant: start order
    EXPECT_EQ(done[i].time, Milliseconds(501));
  }
  EXPECT_EQ(net.link_stats(0).bytes_carried, GB(50));
}

TEST(FlowNetwork, CancelFreesBandwidthAndIsNeverReported) {
  // Two 1 GB flows share 100 GB/s; at 5 ms (0.25 GB sent each) f1 is cancelled, so f2's last
  // 0.75 GB runs alone at 100 GB/s: 7.5 ms more, ending at 12.5 ms. A flow cancelled in its
  // latency phase never starts.
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  FlowId f1 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  FlowId f2 = net.Start(SimTime::Zero(), Route({0}), GB(1));
  FlowId f3 = net.Start(SimTime::Zero(), Route({0}), GB(1), 0, Milliseconds(1));
  EXPECT_TRUE(net.Cancel(f3));
  EXPECT_TRUE(net.AdvanceTo(Milliseconds(5)).empty());
  EXPECT_TRUE(net.Cancel(f1));
  EXPECT_FALSE(net.Cancel(f1));
  EXPECT_EQ(net.State(f1), FlowState::kGone);
  EXPECT_EQ(net.NextEventTime(), Microseconds(12500));
  auto done = net.AdvanceTo(Milliseconds(20));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].id, f2);
  EXPECT_EQ(net.link_stats(0).bytes_carried, GB(1));
  EXPECT_EQ(net.num_flows(), 0u);
}

TEST(FlowNetwork, LinkStatistics) {
  // Two 1 GB flows share a 100 GB/s link for 20 ms: busy 20 ms, 2 GB carried, peak 2.
  FlowNetwork net = MakeNetwork({Link(GBps(100)), Link(GBps(100))});
  net.Start(SimTime::Zero(), Route({0}), GB(1));
  net.Start(SimTime::Zero(), Route({0}), GB(1));
  net.AdvanceTo(Milliseconds(10));
  EXPECT_EQ(net.link_stats(0).busy_time, Milliseconds(10));
  EXPECT_EQ(net.link_stats(0).active_flows, 2u);
  net.AdvanceTo(Milliseconds(50));
  LinkStats s = net.link_stats(0);
  EXPECT_EQ(s.bytes_carried, GB(2));
  EXPECT_EQ(s.busy_time, Milliseconds(20));
  EXPECT_EQ(s.peak_flows, 2u);
  EXPECT_EQ(s.active_flows, 0u);
  EXPECT_EQ(net.link_stats(1).bytes_carried, Bytes::Zero());
}

TEST(FlowNetwork, VersionChangesWhenTheNextEventMayChange) {
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  uint64_t v0 = net.version();
  net.Start(SimTime::Zero(), Route({0}), GB(1));
  EXPECT_NE(net.version(), v0);
  uint64_t v1 = net.version();
  net.AdvanceTo(Milliseconds(1));
  EXPECT_NE(net.version(), v1);
}

TEST(FlowNetwork, CreateRejectsBadLinksNamingEach) {
  auto net = FlowNetwork::Create(
      {Link(GBps(100)), Link(Bandwidth::Zero()), Link(GBps(1), Picoseconds(-5))});
  ASSERT_FALSE(net.ok());
  EXPECT_EQ(net.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = net.status().message();
  EXPECT_NE(m.find("links[1].capacity: 0.00 B/s: must be finite and > 0"), std::string::npos) << m;
  EXPECT_NE(m.find("links[2].latency: -5 ps: must be >= 0"), std::string::npos) << m;
}

// ---------------------------------------------------------------------------------------------
// Random workloads: a two-level tree of links, flows with random routes, sizes and starts.

struct RandomFlow {
  int64_t start_ps;
  std::vector<LinkIndex> route;
  int64_t size;
};

std::vector<LinkSpec> TreeLinks(int hosts, int spines) {
  // Flows of 0.5 MB on average arrive every 1 us on average; with 16 hosts that loads each
  // 50 GB/s host link to about 60%, so flows come and go rather than pile up.
  // Host h has uplink h and downlink hosts + h; spine s has 2 * hosts + s.
  std::vector<LinkSpec> links;
  for (int i = 0; i < 2 * hosts; ++i) links.push_back(Link(GBps(50), Nanoseconds(100)));
  for (int s = 0; s < spines; ++s) links.push_back(Link(GBps(200), Nanoseconds(300)));
  return links;
}

std::vector<RandomFlow> RandomFlows(int n, int hosts, int spines, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<RandomFlow> flows;
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    t += static_cast<int64_t>(rng() % 2'000'000);  // up to 2 us apart
    int src = static_cast<int>(rng() % hosts);
    int dst = static_cast<int>(rng() % hosts);
    int spine = static_cast<int>(rng() % spines);
    std::vector<LinkIndex> route = {static_cast<LinkIndex>(src),
                                    static_cast<LinkIndex>(2 * hosts + spine),
                                    static_cast<LinkIndex>(hosts + dst)};
    flows.push_back({t, route, static_cast<int64_t>(rng() % 1'000'000)});
  }
  return flows;
}

std::vector<std::pair<uint64_t, int64_t>> Simulate(const std::vector<LinkSpec>& links,
                                                   const std::vector<RandomFlow>& flows) {
  FlowNetwork net = MakeNetwork(links);
  std::vector<std::pair<uint64_t, int64_t>> out;
  std::vector<FlowCompletion> done;
  for (size_t i = 0; i < flows.size(); ++i) {
    net.Start(Picoseconds(flows[i].start_ps), flows[i].route, Bytes::Count(flows[i].size), i);
  }
  while (net.NextEventTime() != SimTime::Max()) net.AdvanceTo(net.NextEventTime(), done);
  for (const auto& c : done) out.emplace_back(c.tag, c.time.picoseconds());
  return out;
}

TEST(FlowNetwork, CrossingListsGrowShrinkAndAreReused) {
  // One 1 GB/s link shared by n = 20 flows of k MB (k = 1..20): the list of its crossings
  // grows from the inline one to 20 and empties one flow at a time. Equal shares:
  // while n - j + 1 flows remain, each gets 1/(n - j + 1) GB/s, so every 1 MB step of the
  // survivors takes (n - j + 1) ms, and flow k ends at sum_{j=1..k} (n - j + 1) ms. A second
  // wave after the link is idle (reusing the freed list, in reverse start order) repeats
  // the same times from its own start.
  constexpr int kFlows = 20;
  FlowNetwork net = MakeNetwork({Link(GBps(1))});
  for (SimTime wave : {SimTime::Zero(), Seconds(1)}) {
    std::vector<FlowId> ids;
    for (int k = 1; k <= kFlows; ++k) {
      const int size = wave == SimTime::Zero() ? k : kFlows + 1 - k;
      ids.push_back(net.Start(wave, Route({0}), MB(size), static_cast<uint64_t>(size)));
    }
    int64_t end_ms = 0;
    for (int k = 1; k <= kFlows; ++k) {
      end_ms += kFlows - k + 1;
      auto done = net.AdvanceTo(wave + Milliseconds(end_ms));
      ASSERT_EQ(done.size(), 1u) << "wave at " << wave.picoseconds() << " ps, flow " << k;
      EXPECT_EQ(done[0].tag, static_cast<uint64_t>(k));
      EXPECT_EQ(done[0].time, wave + Milliseconds(end_ms));
    }
    EXPECT_EQ(net.link_stats(0).active_flows, 0u);
    EXPECT_EQ(net.link_stats(0).peak_flows, static_cast<uint32_t>(kFlows));
  }
}

TEST(FlowNetwork, SameInputsGiveIdenticalCompletions) {
  auto links = TreeLinks(16, 4);
  auto flows = RandomFlows(2000, 16, 4, 7);
  auto a = Simulate(links, flows);
  auto b = Simulate(links, flows);
  ASSERT_EQ(a.size(), flows.size());
  EXPECT_EQ(a, b);
}

// A deliberately naive fluid simulation: full progressive filling over all links after every
// event, in floating-point seconds. It shares no code with FlowNetwork.
std::vector<double> ReferenceCompletions(const std::vector<LinkSpec>& links,
                                         const std::vector<RandomFlow>& flows) {
  const size_t n = flows.size();
  std::vector<double> latency(n), remaining(n), done(n, -1), rate(n, 0);
  std::vector<double> active_at(n);
  for (size_t i = 0; i < n; ++i) {
    double lat = 0;
    for (LinkIndex l : flows[i].route) lat += links[l].latency.picoseconds() * 1e-12;
    active_at[i] = flows[i].start_ps * 1e-12 + lat;
    remaining[i] = static_cast<double>(flows[i].size);
  }
  double now = 0;
  for (;;) {
    std::vector<size_t> active;
    for (size_t i = 0; i < n; ++i) {
      if (done[i] < 0 && active_at[i] <= now) {
        if (remaining[i] <= 0) {
          done[i] = now;
        } else {
          active.push_back(i);
        }
      }
    }
    // Progressive filling, the textbook way.
    std::vector<double> residual(links.size());
    std::vector<int> count(links.size(), 0);
    for (size_t l = 0; l < links.size(); ++l) residual[l] = links[l].capacity.bytes_per_second();
    std::vector<bool> fixed(n, false);
    for (size_t i : active)
      for (LinkIndex l : flows[i].route) ++count[l];
    for (;;) {
      double best = INFINITY;
      size_t best_link = 0;
      for (size_t l = 0; l < links.size(); ++l) {
        if (count[l] > 0 && residual[l] / count[l] < best) {
          best = residual[l] / count[l];
          best_link = l;
        }
      }
      if (best == INFINITY) break;
      for (size_t i : active) {
        if (fixed[i]) continue;
        const auto& r = flows[i].route;
        if (std::find(r.begin(), r.end(), best_link) == r.end()) continue;
        fixed[i] = true;
        rate[i] = best;
        for (LinkIndex l : r) {
          residual[l] -= best;
          --count[l];
        }
      }
    }
    double next = INFINITY;
    for (size_t i = 0; i < n; ++i) {
      if (done[i] < 0 && active_at[i] > now) next = std::min(next, active_at[i]);
    }
    for (size_t i : active) next = std::min(next, now + remaining[i] / rate[i]);
    if (next == INFINITY) break;
    for (size_t i : active) {
      remaining[i] -= rate[i] * (next - now);
      if (remaining[i] <= 1e-6 * static_cast<double>(flows[i].size)) {
        remaining[i] = 0;
        done[i] = next;
      }
    }
    now = next;
  }
  return done;
}

TEST(FlowNetwork, AgreesWithANaiveReferenceSolver) {
  auto links = TreeLinks(8, 2);
  auto flows = RandomFlows(300, 8, 2, 11);
  auto got = Simulate(links, flows);
  auto expected = ReferenceCompletions(links, flows);
  ASSERT_EQ(got.size(), flows.size());
  for (const auto& [tag, ps] : got) {
    // Completion times agree to within a nanosecond (the reference works in double seconds;
    // FlowNetwork rounds each rate change up to the picosecond).
    EXPECT_NEAR(static_cast<double>(ps) * 1e-12, expected[tag], 1e-9) << "flow " << tag;
  }
}

TEST(FlowNetwork, DrivenByTheEngineWithVersionedEvents) {
  // The executor pattern: after each Start or AdvanceTo, schedule one network event at
  // NextEventTime() carrying version(); a stale event (older version) is ignored.
  enum Kind : uint16_t { kStartFlow, kNetwork };
  FlowNetwork net = MakeNetwork({Link(GBps(100))});
  Engine engine;
  std::vector<FlowCompletion> completions;
  auto reschedule = [&](Engine& e) {
    SimTime t = net.NextEventTime();
    if (t != SimTime::Max()) e.ScheduleAt(t, kNetwork, 0, net.version());
  };
  auto handler = [&](Engine& e, const Event& ev) {
    switch (ev.kind) {
      case kStartFlow:
        net.Start(e.now(), Route({0}), GB(1), ev.payload);
        reschedule(e);
        break;
      case kNetwork:
        if (ev.payload != net.version()) return;  // stale
        net.AdvanceTo(e.now(), completions);
        reschedule(e);
        break;
    }
  };
  engine.ScheduleAt(SimTime::Zero(), kStartFlow, 0, 1);
  engine.ScheduleAt(Milliseconds(5), kStartFlow, 0, 2);
  ASSERT_TRUE(engine.Run(handler).ok());
  // Same derivation as ALateFlowSlowsAnEarlierOne: 15 ms and 20 ms.
  ASSERT_EQ(completions.size(), 2u);
  EXPECT_EQ(completions[0].tag, 1u);
  EXPECT_EQ(completions[0].time, Milliseconds(15));
  EXPECT_EQ(completions[1].tag, 2u);
  EXPECT_EQ(completions[1].time, Milliseconds(20));
}

}  // namespace
}  // namespace placesim::sim
