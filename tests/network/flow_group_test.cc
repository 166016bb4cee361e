// FlowNetwork::StartGroup against starting the same flows one by one: the transfers must end at
// the same times in the same order, the network must wake its caller at the same instants,
// and every link must report the same bytes, busy time and peak. Hand-derived cases (lone
// flows, a flow joining a group's link in transfer and in latency, a group flow leaving at the
// instant another enters, flows of one phase meeting) and a randomized differential run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "sim/network/flow_network.h"
#include "sim/network/phase.h"
#include "tests/network/flow_driver.h"

namespace placesim::sim {
namespace {

struct Transfer {
  SimTime start;
  std::vector<FlowPath> paths;
  Bytes size;
  int64_t extra_steps = 0;
  int phase = -1;  // >= 0: starts phases[phase] (shared, with its GroupCache) instead of paths
};

using testing::ExpectSame;
using testing::Outcome;
using testing::Path;

// Runs `transfers` (sorted by start) to the end, each as one group when `grouped`; a transfer
// naming a phase starts that phase's flows, passing its GroupCache so that a phase started
// again and again is held as a template (from its third start on, phases of any size).
// epoch_limit > 0 sets the grouped network's FlowNetwork::set_epoch_limit.
Outcome Simulate(const std::vector<LinkSpec>& specs, const std::vector<Transfer>& transfers,
                 bool grouped, const std::vector<std::vector<FlowPath>>& phases = {},
                 uint64_t epoch_limit = 0) {
  std::vector<GroupCache> caches(phases.size());
  std::vector<testing::TransferView> views;
  for (const Transfer& x : transfers) {
    const std::vector<FlowPath>& paths = x.phase >= 0 ? phases[x.phase] : x.paths;
    views.push_back({x.start, paths, x.size, x.extra_steps});
  }
  const auto start_as_one = [&](FlowNetwork& net, size_t k, Outcome& out) {
    if (!grouped) return false;
    if (k == 0 && epoch_limit > 0) net.set_epoch_limit(epoch_limit);
    const testing::TransferView& x = views[k];
    GroupCache* cache = transfers[k].phase >= 0 ? &caches[transfers[k].phase] : nullptr;
    out.groups.push_back(net.StartGroup(x.start, x.paths, x.size, x.extra_steps, k, cache));
    return out.groups.back() == GroupStart::kStarted;
  };
  return testing::Drive(specs, views, start_as_one, /*template_min_flows=*/1);
}

int Uniform(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

// lo to hi links of 10 to 40 GB/s and 0 to 1.5 us.
std::vector<LinkSpec> RandomLinks(std::mt19937& rng, int lo, int hi) {
  std::vector<LinkSpec> links;
  const int num_links = Uniform(rng, lo, hi);
  for (int i = 0; i < num_links; ++i) {
    links.push_back({GBps(Uniform(rng, 1, 4) * 10), Nanoseconds(Uniform(rng, 0, 3) * 500)});
  }
  return links;
}

TEST(FlowGroup, LoneFlowsEndAtTheirAlphaBetaTimes) {
  // 1 GB per flow, alone on its links: latency + 1e9 B / bottleneck. Flow 0: 1 us + 1e9 / 1e10
  // s = 100.001 ms; flow 1: 2 us + 50 ms; flow 2 crosses links 2 (40 GB/s) and 3 (80 GB/s):
  // 4 us + 25 ms. The transfer ends with flow 0, at 100,001,000,000 ps.
  const std::vector<LinkSpec> links = {{GBps(10), Microseconds(1)},
                                       {GBps(20), Microseconds(2)},
                                       {GBps(40), Microseconds(1)},
                                       {GBps(80), Microseconds(3)}};
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), {Path(links, {0}), Path(links, {1}), Path(links, {2, 3})}, GB(1)}};
  const Outcome grouped = Simulate(links, transfers, true);
  ASSERT_EQ(grouped.groups, std::vector<GroupStart>{GroupStart::kStarted});
  ASSERT_EQ(grouped.ends.size(), 1u);
  EXPECT_EQ(grouped.ends[0].first, 100'001'000'000);
  EXPECT_EQ(grouped.links[3].bytes_carried, GB(1));
  EXPECT_EQ(grouped.links[3].busy_time, Milliseconds(25));
  EXPECT_EQ(grouped.links[0].peak_flows, 1u);
  ExpectSame(grouped, Simulate(links, transfers, false));
}

TEST(FlowGroup, AFlowJoiningAGroupLinkMakesItOrdinary) {
  // Group flow a (link 0, 20 GB/s, 1 GB) alone from 0 to 10 ms drains 200 MB; flow b joins link
  // 0 at 10 ms and each gets 10 GB/s: a's 800 MB take 80 ms (ends at 90 ms), b drains 800 MB
  // by then and its last 200 MB at 20 GB/s take 10 ms more (ends at 100 ms).
  const std::vector<LinkSpec> links = {{GBps(20), Duration::Zero()}, {GBps(20), Duration::Zero()}};
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), {Path(links, {0}), Path(links, {1})}, GB(1)},
      {Milliseconds(10), {Path(links, {0})}, GB(1)}};
  const Outcome grouped = Simulate(links, transfers, true);
  EXPECT_EQ(grouped.groups[0], GroupStart::kStarted);
  ASSERT_EQ(grouped.ends.size(), 2u);
  EXPECT_EQ(grouped.ends[0], std::make_pair(Milliseconds(90).picoseconds(), uint64_t{0}));
  EXPECT_EQ(grouped.ends[1], std::make_pair(Milliseconds(100).picoseconds(), uint64_t{1}));
  EXPECT_EQ(grouped.links[0].peak_flows, 2u);
  EXPECT_EQ(grouped.links[0].busy_time, Milliseconds(100));
  ExpectSame(grouped, Simulate(links, transfers, false));
}

TEST(FlowGroup, AFlowJoiningOneFlowOfALargerGroupSplitsItOff) {
  // Group of four 1 GB flows, each alone on its link: links 0 to 2 at 20 GB/s (50 ms), link 3
  // at 10 GB/s (100 ms). Flow b joins link 0 at 10 ms: as above, group flow 0 ends at 90 ms and
  // b at 100 ms; flows 1 and 2 still end at 50 ms and flow 3 at 100 ms, so the group's
  // transfer ends at 100 ms with flow 3 (start order 3), reported before b (start order 4).
  // Only flow 0 becomes ordinary; the caller is still woken at 50 ms.
  const std::vector<LinkSpec> links = {{GBps(20), Duration::Zero()},
                                       {GBps(20), Duration::Zero()},
                                       {GBps(20), Duration::Zero()},
                                       {GBps(10), Duration::Zero()}};
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(),
       {Path(links, {0}), Path(links, {1}), Path(links, {2}), Path(links, {3})},
       GB(1)},
      {Milliseconds(10), {Path(links, {0})}, GB(1)}};
  const Outcome grouped = Simulate(links, transfers, true);
  EXPECT_EQ(grouped.groups[0], GroupStart::kStarted);
  ASSERT_EQ(grouped.ends.size(), 2u);
  EXPECT_EQ(grouped.ends[0], std::make_pair(Milliseconds(100).picoseconds(), uint64_t{0}));
  EXPECT_EQ(grouped.ends[1], std::make_pair(Milliseconds(100).picoseconds(), uint64_t{1}));
  EXPECT_NE(std::find(grouped.wakes.begin(), grouped.wakes.end(), Milliseconds(50).picoseconds()),
            grouped.wakes.end());
  EXPECT_EQ(grouped.links[0].peak_flows, 2u);
  EXPECT_EQ(grouped.links[0].busy_time, Milliseconds(100));
  EXPECT_EQ(grouped.links[1].busy_time, Milliseconds(50));
  ExpectSame(grouped, Simulate(links, transfers, false));
}

TEST(FlowGroup, AFlowEnteringDuringAGroupLatencyShares) {
  // The group's flows wait 1 ms on link 2's latency; a flow started at 0 on link 0 alone enters
  // transfer at once and is joined at 1 ms: the group is made ordinary before it activates.
  const std::vector<LinkSpec> links = {
      {GBps(10), Duration::Zero()}, {GBps(10), Duration::Zero()}, {GBps(100), Milliseconds(1)}};
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), {Path(links, {2, 0}), Path(links, {1})}, GB(1)},
      {Microseconds(500), {Path(links, {0})}, GB(1)}};
  ExpectSame(Simulate(links, transfers, true), Simulate(links, transfers, false));
}

TEST(FlowGroup, AGroupFlowLeavingAsAnotherEntersCountsTowardsThePeak) {
  // Group flow on link 0: 1 GB at 10 GB/s, 0 to 100 ms. The other flow's route starts with a
  // 100 ms latency link, so it enters link 0 at 100 ms, while the group flow, as an ordinary
  // flow, is still on it (an instant's completions leave after its activations): peak 2.
  const std::vector<LinkSpec> links = {{GBps(10), Duration::Zero()},
                                       {GBps(100), Milliseconds(100)}};
  const std::vector<Transfer> transfers = {{SimTime::Zero(), {Path(links, {0})}, GB(1)},
                                           {SimTime::Zero(), {Path(links, {1, 0})}, GB(1)}};
  const Outcome grouped = Simulate(links, transfers, true);
  EXPECT_EQ(grouped.links[0].peak_flows, 2u);
  ExpectSame(grouped, Simulate(links, transfers, false));
}

TEST(FlowGroup, FlowsOfOneGroupThatMeetAreLeftOut) {
  // Eight flows on links of their own, except flows 2 and 6, which share link 9: those two
  // start one by one (and split link 9), the other six as the group.
  std::vector<LinkSpec> links;
  for (int i = 0; i < 10; ++i) links.push_back({GBps(10 + i), Nanoseconds(100 * i)});
  std::vector<FlowPath> paths;
  for (LinkIndex i = 0; i < 8; ++i) {
    paths.push_back(i == 2 || i == 6 ? Path(links, {i, 9}) : Path(links, {i}));
  }
  const std::vector<Transfer> transfers = {{SimTime::Zero(), paths, MB(100), 3}};
  const Outcome grouped = Simulate(links, transfers, true);
  EXPECT_EQ(grouped.groups[0], GroupStart::kStarted);
  EXPECT_EQ(grouped.links[9].peak_flows, 2u);
  ExpectSame(grouped, Simulate(links, transfers, false));
}

TEST(FlowGroup, MostlyMeetingFlowsAreRefused) {
  // Four flows on one link: the group would leave out all of them.
  const std::vector<LinkSpec> links = {{GBps(10), Duration::Zero()}};
  const std::vector<Transfer> transfers = {
      {SimTime::Zero(), std::vector<FlowPath>(4, Path(links, {0})), MB(1)}};
  const Outcome grouped = Simulate(links, transfers, true);
  EXPECT_EQ(grouped.groups[0], GroupStart::kUngroupable);
  ExpectSame(grouped, Simulate(links, transfers, false));
}

TEST(FlowGroup, RandomTransfersMatchFlowByFlow) {
  // 2000 sets of random phases on a small network, so that groups meet each other and ordinary
  // flows, are made ordinary, left out and started back to back; every outcome must be equal.
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    auto uniform = [&rng](int lo, int hi) { return Uniform(rng, lo, hi); };
    const std::vector<LinkSpec> links = RandomLinks(rng, 4, 24);
    const int num_links = static_cast<int>(links.size());
    std::vector<Transfer> transfers;
    const int num_transfers = uniform(1, 12);
    for (int k = 0; k < num_transfers; ++k) {
      Transfer x;
      x.start = Microseconds(uniform(0, 5) * 100);
      x.size = KB(uniform(1, 64) * 125);
      x.extra_steps = uniform(0, 2);
      const int flows = uniform(1, 10);
      for (int f = 0; f < flows; ++f) {
        std::vector<LinkIndex> route;
        const int hops = uniform(1, 3);
        for (int h = 0; h < hops; ++h)
          route.push_back(static_cast<LinkIndex>(uniform(0, num_links - 1)));
        x.paths.push_back(Path(links, route));
      }
      transfers.push_back(std::move(x));
    }
    std::stable_sort(transfers.begin(), transfers.end(),
                     [](const Transfer& a, const Transfer& b) { return a.start < b.start; });
    SCOPED_TRACE(seed);
    ExpectSame(Simulate(links, transfers, true), Simulate(links, transfers, false));
  }
}

// Random shared phases on `links` lo_links to hi_links links, and transfers that start them
// (some one-off instead) at multiples of 50 us up to `horizon` of them, with sizes and steps
// varying per start. Each phase has 1 to max_flows flows of up to 3 links.
struct RepeatedCase {
  std::vector<LinkSpec> links;
  std::vector<std::vector<FlowPath>> phases;
  std::vector<Transfer> transfers;
};
struct RepeatedShape {
  int lo_links, hi_links;
  int lo_phases, hi_phases;
  int max_flows;
  int lo_transfers, hi_transfers;
  int horizon;
};
RepeatedCase RandomRepeatedCase(uint32_t seed, const RepeatedShape& shape) {
  std::mt19937 rng(seed);
  auto uniform = [&rng](int lo, int hi) { return Uniform(rng, lo, hi); };
  RepeatedCase c;
  c.links = RandomLinks(rng, shape.lo_links, shape.hi_links);
  const int num_links = static_cast<int>(c.links.size());
  auto random_paths = [&](int max_flows) {
    std::vector<FlowPath> paths;
    const int flows = uniform(1, max_flows);
    for (int f = 0; f < flows; ++f) {
      std::vector<LinkIndex> route;
      const int hops = uniform(0, 3);
      for (int h = 0; h < hops; ++h)
        route.push_back(static_cast<LinkIndex>(uniform(0, num_links - 1)));
      paths.push_back(Path(c.links, route));
    }
    return paths;
  };
  c.phases.resize(static_cast<size_t>(uniform(shape.lo_phases, shape.hi_phases)));
  for (std::vector<FlowPath>& p : c.phases) p = random_paths(shape.max_flows);
  const int num_transfers = uniform(shape.lo_transfers, shape.hi_transfers);
  for (int k = 0; k < num_transfers; ++k) {
    Transfer x;
    x.start = Microseconds(uniform(0, shape.horizon) * 50);
    x.size = KB(uniform(1, 3) * 125 * (uniform(0, 5) == 0 ? 0 : 1));
    x.extra_steps = uniform(0, 5) == 0 ? 1 : 0;
    if (uniform(0, 4) == 0) {
      x.paths = random_paths(3);
    } else {
      x.phase = uniform(0, static_cast<int>(c.phases.size()) - 1);
    }
    c.transfers.push_back(std::move(x));
  }
  std::stable_sort(c.transfers.begin(), c.transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return a.start < b.start; });
  return c;
}

TEST(FlowGroup, RepeatedPhasesHeldAsTemplatesMatchFlowByFlow) {
  // Phases started again and again become templates: once clean, a start writes nothing on
  // the links, and the first flow or group that touches one before the holds end writes them
  // as the eager start would have. Random sets of a few shared phases, started back to back,
  // overlapping each other and one-off transfers, with sizes and steps varying per start:
  // every outcome must equal the flow-by-flow run's.
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    const RepeatedCase c = RandomRepeatedCase(seed, {6, 40, 1, 3, 12, 4, 30, 40});
    SCOPED_TRACE(seed);
    ExpectSame(Simulate(c.links, c.transfers, true, c.phases),
               Simulate(c.links, c.transfers, false, c.phases));
  }
}

TEST(FlowGroup, ManyTemplatesMatchFlowByFlow) {
  // More phases than one machine word of templates, and at times more than kMaxTemplates, on
  // few links: a link lies in many templates' sets, sets are shared and grown as templates
  // register, logs fill and overflow. The grouped runs restart the solver's epochs every few
  // solves (set_epoch_limit), so that the restart is exercised too; neither may move an outcome.
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const RepeatedCase c = RandomRepeatedCase(seed, {8, 48, 60, 300, 4, 200, 900, 600});
    SCOPED_TRACE(seed);
    ExpectSame(Simulate(c.links, c.transfers, true, c.phases, /*epoch_limit=*/3 + seed % 8),
               Simulate(c.links, c.transfers, false, c.phases));
  }
}

}  // namespace
}  // namespace placesim::sim
