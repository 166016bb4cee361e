// The network models behind one interface: the registry's names and unknown-name message, and
// each model running a two-phase transfer over a tiny network of two links, against the
// alpha-beta arithmetic; the flow model against contention as well.
#include "sim/network/network_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/network/alpha_beta.h"

namespace placesim::sim {
namespace {

// Links 0 and 1: 100 GB/s, 1 us each.
std::vector<LinkSpec> TwoLinks() {
  return {{GBps(100), Microseconds(1)}, {GBps(100), Microseconds(1)}};
}

// A phase of `flows` flows over link `link`, each carrying num / den of S over `steps` steps.
CommPhase Phase(LinkIndex link, int flows, int64_t num, int64_t den, int64_t steps = 1) {
  CommPhase ph;
  for (int f = 0; f < flows; ++f) ph.flows.push_back({{link}, Microseconds(1), GBps(100)});
  ph.num = ph.analytic_num = num;
  ph.den = ph.analytic_den = den;
  ph.steps = steps;
  FinishPhase(ph);
  return ph;
}

std::unique_ptr<Network> Create(std::string_view model) {
  const NetworkModelRegistry& r = BuiltinNetworkModels();
  StatusOr<std::unique_ptr<Network>> n = r.at(*r.Find(model)).Create(TwoLinks());
  PLACESIM_CHECK(n.ok());
  return std::move(n).value();
}

// Runs the network's own events to the end; returns when transfer `tag` finished.
Duration RunUntilDone(Network& net, uint64_t tag) {
  std::vector<uint64_t> done;
  while (net.NextEventTime() != SimTime::Max()) {
    const SimTime t = net.NextEventTime();
    net.AdvanceTo(t, done);
    for (uint64_t d : done) {
      if (d == tag) return t;
    }
  }
  return Duration::Max();
}

TEST(NetworkModels, TheBuiltinsAreFlowThenAnalyticWithTheirSources) {
  const NetworkModelRegistry& r = BuiltinNetworkModels();
  EXPECT_EQ(r.ValidNames(), "flow, analytic");
  for (int id = 0; id < r.size(); ++id) {
    EXPECT_FALSE(r.at(id).description().empty()) << r.at(id).name();
    EXPECT_FALSE(r.at(id).citation().empty()) << r.at(id).name();
  }
  StatusOr<int> unknown = r.Lookup("packet");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "unknown network model \"packet\"; valid: flow, analytic");
}

TEST(NetworkModels, BothModelsRunPhasesOneAfterAnotherAlone) {
  // S = 1 GB. Phase 1: one flow of S/2 on link 0 over 3 steps: 3 x 1 us + 0.5 GB / 100 GB/s =
  // 3 us + 5 ms. Phase 2: one flow of S on link 1, one step: 1 us + 10 ms. Alone, both models
  // give the sum, 10.004 ms + 5 ms.
  const std::vector<CommPhase> phases = {Phase(0, 1, 1, 2, 3), Phase(1, 1, 1, 1)};
  const TransferSize size{GB(1), GB(1)};
  const Duration expected =
      Microseconds(3) + DrainTime(0.5e9, 100e9) + Microseconds(1) + DrainTime(1e9, 100e9);
  std::unique_ptr<Network> analytic = Create("analytic");
  EXPECT_EQ(analytic->Start(SimTime::Zero(), phases, size, 7), expected);
  EXPECT_EQ(analytic->NextEventTime(), SimTime::Max());
  EXPECT_EQ(analytic->link_stats(0).bytes_carried, MB(500));
  EXPECT_EQ(analytic->link_stats(1).busy_time, DrainTime(1e9, 100e9));

  std::unique_ptr<Network> flow = Create("flow");
  EXPECT_EQ(flow->Start(SimTime::Zero(), phases, size, 7), std::nullopt);
  EXPECT_EQ(RunUntilDone(*flow, 7), expected);
  EXPECT_EQ(flow->link_stats(0).bytes_carried, MB(500));
  EXPECT_EQ(flow->link_stats(1).bytes_carried, GB(1));
}

TEST(NetworkModels, OnlyTheFlowModelSharesALinkBetweenConcurrentFlows) {
  // Two flows of S = 1 GB on link 0 at once: max-min gives each 50 GB/s, so the phase takes
  // 1 us + 1 GB / 50 GB/s = 20.001 ms; the analytic model charges each flow alone,
  // 1 us + 10 ms, and counts both flows at the link's peak.
  const std::vector<CommPhase> phases = {Phase(0, 2, 1, 1)};
  const TransferSize size{GB(1), GB(1)};
  std::unique_ptr<Network> flow = Create("flow");
  EXPECT_EQ(flow->Start(SimTime::Zero(), phases, size, 1), std::nullopt);
  EXPECT_EQ(RunUntilDone(*flow, 1), Microseconds(1) + DrainTime(1e9, 50e9));
  std::unique_ptr<Network> analytic = Create("analytic");
  EXPECT_EQ(analytic->Start(SimTime::Zero(), phases, size, 1),
            Microseconds(1) + DrainTime(1e9, 100e9));
  EXPECT_EQ(analytic->link_stats(0).peak_flows, 2u);
}

}  // namespace
}  // namespace placesim::sim
