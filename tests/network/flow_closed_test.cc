// FlowNetwork::StartClosed against starting the same flows one by one: the transfers must end
// at the same times in the same order, the network must wake its caller at the same instants,
// and every link must report the same bytes, busy time, peak and active flows. Hand-derived
// cases (a phase replayed, a flow entering a replayed phase's link in transfer, at the instant a
// phase flow leaves, and during its latency) and randomized differential runs, alone and mixed
// with groups as FlowModelNetwork starts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/network/flow_network.h"
#include "sim/network/phase.h"
#include "tests/network/flow_driver.h"

namespace placesim::sim {
namespace {

enum class Mode {
  kFlowByFlow,  // every flow with StartWithLatency
  kClosed,      // StartClosed, else flow by flow
  kMixed,       // as FlowModelNetwork: StartGroup (a repeated phase held as a template) unless
                // refused for good, then StartClosed
};

struct Phase {  // a phase's flows and what the network keeps for it
  std::vector<FlowPath> paths;
  ClosedRunCache cache;
  GroupCache group_cache;
  bool ungroupable = false;
};

struct Transfer {
  SimTime start;
  size_t phase;  // index into the phases
  Bytes size;
  int64_t extra_steps = 0;
};

using testing::ExpectSame;
using testing::Outcome;
using testing::Path;

bool StartAsOne(FlowNetwork& net, Mode mode, Phase& ph, const Transfer& x, uint64_t tag) {
  if (mode == Mode::kFlowByFlow) return false;
  if (mode == Mode::kMixed && !ph.ungroupable) {
    const GroupStart g =
        net.StartGroup(x.start, ph.paths, x.size, x.extra_steps, tag, &ph.group_cache);
    if (g == GroupStart::kStarted) return true;
    if (g != GroupStart::kUngroupable) return false;
    ph.ungroupable = true;
  }
  return net.StartClosed(x.start, ph.paths, x.size, x.extra_steps, tag, ph.cache);
}

// Runs `transfers` (sorted by start) to the end. `phases` is taken by value: its caches are the
// run's own. Phases of any size become templates (FlowNetwork::set_template_min_flows(1)), so
// lazy holds meet closed phases' holds.
Outcome Simulate(const std::vector<LinkSpec>& specs, std::vector<Phase> phases,
                 const std::vector<Transfer>& transfers, Mode mode) {
  std::vector<testing::TransferView> views;
  for (const Transfer& x : transfers) {
    views.push_back({x.start, phases[x.phase].paths, x.size, x.extra_steps});
  }
  return testing::Drive(
      specs, views,
      [&](FlowNetwork& net, size_t k, Outcome& out) {
        const bool one = StartAsOne(net, mode, phases[transfers[k].phase], transfers[k], k);
        out.closed += one ? 1 : 0;
        return one;
      },
      /*template_min_flows=*/1);
}

// Two flows of 1 GB sharing link 0 (10 GB/s), one of them also crossing link 1.
std::vector<Phase> SharedLinkPhase(const std::vector<LinkSpec>& links) {
  std::vector<Phase> phases(1);
  phases[0].paths = {Path(links, {0}), Path(links, {0, 1})};
  return phases;
}

TEST(FlowClosed, ARepeatedPhaseReplaysItsRun) {
  // Each flow gets 5 GB/s: 1 GB takes 200 ms. The first start records the phase's key and runs
  // flow by flow; the second (at 1 s) replays the run alone: it ends at 1.2 s.
  const std::vector<LinkSpec> links = {{GBps(10), Duration::Zero()}, {GBps(40), Duration::Zero()}};
  const std::vector<Transfer> transfers = {{SimTime::Zero(), 0, GB(1)},
                                           {Milliseconds(1000), 0, GB(1)}};
  const Outcome closed = Simulate(links, SharedLinkPhase(links), transfers, Mode::kClosed);
  EXPECT_EQ(closed.closed, 1);
  ASSERT_EQ(closed.ends.size(), 2u);
  EXPECT_EQ(closed.ends[0], std::make_pair(Milliseconds(200).picoseconds(), uint64_t{0}));
  EXPECT_EQ(closed.ends[1], std::make_pair(Milliseconds(1200).picoseconds(), uint64_t{1}));
  EXPECT_EQ(closed.links[0].bytes_carried, GB(4));
  EXPECT_EQ(closed.links[0].busy_time, Milliseconds(400));
  EXPECT_EQ(closed.links[0].peak_flows, 2u);
  EXPECT_EQ(closed.links[1].busy_time, Milliseconds(400));
  ExpectSame(closed, Simulate(links, SharedLinkPhase(links), transfers, Mode::kFlowByFlow));
}

TEST(FlowClosed, AFlowEnteringAReplayedLinkMakesThePhaseOrdinary) {
  // The replayed phase starts at 1 s; by 1.1 s each of its flows drained 0.5 GB at 5 GB/s. A
  // flow enters link 0 then: three flows at 10/3 GB/s, so the phase's 0.5 GB left take 150 ms
  // (it ends at 1.25 s) while the newcomer drains 0.5 GB, and its other 0.5 GB alone at 10 GB/s
  // take 50 ms more (it ends at 1.3 s). Peak on link 0: 3.
  const std::vector<LinkSpec> links = {{GBps(10), Duration::Zero()}, {GBps(40), Duration::Zero()}};
  std::vector<Phase> phases = SharedLinkPhase(links);
  phases.push_back(Phase{{Path(links, {0})}, {}, false});
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), 0, GB(1)}, {Milliseconds(1000), 0, GB(1)}, {Milliseconds(1100), 1, GB(1)}};
  const Outcome closed = Simulate(links, phases, transfers, Mode::kClosed);
  EXPECT_EQ(closed.closed, 1);
  ASSERT_EQ(closed.ends.size(), 3u);
  EXPECT_EQ(closed.ends[1], std::make_pair(Milliseconds(1250).picoseconds(), uint64_t{1}));
  EXPECT_EQ(closed.ends[2], std::make_pair(Milliseconds(1300).picoseconds(), uint64_t{2}));
  EXPECT_EQ(closed.links[0].peak_flows, 3u);
  EXPECT_EQ(closed.links[0].bytes_carried, GB(5));
  ExpectSame(closed, Simulate(links, phases, transfers, Mode::kFlowByFlow));
}

TEST(FlowClosed, AFlowEnteringAsThePhaseLeavesCountsTowardsThePeak) {
  // The replayed phase ends at 1.2 s; a flow whose route starts with a 200 ms latency link
  // enters link 0 at that instant, while the phase's two flows, leaving in the instant's
  // completions, still count: peak 3 on link 0, and the newcomer then runs alone.
  const std::vector<LinkSpec> links = {
      {GBps(10), Duration::Zero()}, {GBps(40), Duration::Zero()}, {GBps(100), Milliseconds(200)}};
  std::vector<Phase> phases = SharedLinkPhase(links);
  phases.push_back(Phase{{Path(links, {2, 0})}, {}, false});
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), 0, GB(1)}, {Milliseconds(1000), 0, GB(1)}, {Milliseconds(1000), 1, GB(1)}};
  const Outcome closed = Simulate(links, phases, transfers, Mode::kClosed);
  EXPECT_EQ(closed.links[0].peak_flows, 3u);
  ExpectSame(closed, Simulate(links, phases, transfers, Mode::kFlowByFlow));
}

TEST(FlowClosed, AFlowEnteringDuringThePhaseLatencyShares) {
  // The replayed phase's flows wait 100 ms on link 2's latency (1 s to 1.1 s); a flow enters
  // link 0 at 1.05 s, in that latency: the phase is made ordinary with its flows in latency, and
  // they share link 0 with the newcomer from 1.1 s.
  const std::vector<LinkSpec> links = {
      {GBps(10), Duration::Zero()}, {GBps(40), Duration::Zero()}, {GBps(100), Milliseconds(100)}};
  std::vector<Phase> phases(2);
  phases[0].paths = {Path(links, {2, 0}), Path(links, {2, 0, 1})};
  phases[1].paths = {Path(links, {0})};
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), 0, GB(1)}, {Milliseconds(1000), 0, GB(1)}, {Milliseconds(1050), 1, GB(1)}};
  const Outcome closed = Simulate(links, phases, transfers, Mode::kClosed);
  EXPECT_EQ(closed.closed, 1);
  ExpectSame(closed, Simulate(links, phases, transfers, Mode::kFlowByFlow));
}

TEST(FlowClosed, RandomPhasesMatchFlowByFlow) {
  // Random phases on a small network, each started several times with a few sizes, so that
  // replays start on idle links, are refused on busy ones, meet ordinary flows, groups and each
  // other, and are made ordinary in latency, in transfer and at their flows' last instants.
  int closed_starts = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    std::mt19937 rng(seed);
    auto uniform = [&rng](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    std::vector<LinkSpec> links;
    const int num_links = uniform(4, 24);
    for (int i = 0; i < num_links; ++i) {
      links.push_back({GBps(uniform(1, 4) * 10), Nanoseconds(uniform(0, 3) * 500)});
    }
    std::vector<Phase> phases(static_cast<size_t>(uniform(1, 4)));
    for (Phase& ph : phases) {
      const int flows = uniform(1, 8);
      for (int f = 0; f < flows; ++f) {
        std::vector<LinkIndex> route;
        const int hops = uniform(1, 3);
        for (int h = 0; h < hops; ++h)
          route.push_back(static_cast<LinkIndex>(uniform(0, num_links - 1)));
        ph.paths.push_back(Path(links, route));
      }
    }
    std::vector<Transfer> transfers;
    const int num_transfers = uniform(2, 16);
    for (int k = 0; k < num_transfers; ++k) {
      transfers.push_back(Transfer{Microseconds(uniform(0, 40) * 100),
                                   static_cast<size_t>(uniform(0, int(phases.size()) - 1)),
                                   KB(uniform(1, 3) * 1000), uniform(0, 1)});
    }
    std::stable_sort(transfers.begin(), transfers.end(),
                     [](const Transfer& a, const Transfer& b) { return a.start < b.start; });
    SCOPED_TRACE(seed);
    const Outcome flow_by_flow = Simulate(links, phases, transfers, Mode::kFlowByFlow);
    const Outcome closed = Simulate(links, phases, transfers, Mode::kClosed);
    ExpectSame(closed, flow_by_flow);
    ExpectSame(Simulate(links, phases, transfers, Mode::kMixed), flow_by_flow);
    closed_starts += closed.closed;
    if (HasFailure()) break;
  }
  EXPECT_GT(closed_starts, 1000);
}

}  // namespace
}  // namespace placesim::sim
