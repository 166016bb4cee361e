// The analytic network's deferred link charges (sim/network/impl/analytic.cc, "Deferred
// charges") against the per-crossing rule they replace: every start of a phase adds, to each
// link of each flow's route, one flow's bytes and DrainTime(bytes, the link's bandwidth)
// (Duration::Max() for good once a drain is Max), and a link's peak is the most flows of one
// phase on it. The reference below applies that rule crossing by crossing at each start; the
// network must report the same integers whenever its statistics are read, on random starts of
// shared and short-lived phases over links of a few bandwidths (one of them zero).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "sim/network/alpha_beta.h"
#include "sim/network/network_model.h"

namespace placesim::sim {
namespace {

constexpr int64_t kMaxPs = Duration::Max().picoseconds();

// The per-crossing rule, applied at each start.
struct Reference {
  std::vector<double> bandwidth;
  std::vector<int64_t> bytes, busy_ps;
  std::vector<uint32_t> peak;
  // Crossings of the current phase per link. A member rather than a local: GCC 12 warns
  // (-Wfree-nonheap-object, a false positive) on the local vector's inlined free.
  std::vector<uint32_t> on_link;

  void Start(const CommPhase& ph, TransferSize size) {
    const Bytes b = PhaseBytes(ph, size);
    on_link.assign(bandwidth.size(), 0);
    for (const FlowPath& f : ph.flows) {
      for (LinkIndex l : f.links) {
        const int64_t drain = DrainTime(static_cast<double>(b.count()), bandwidth[l]).picoseconds();
        bytes[l] += b.count();
        busy_ps[l] = drain == kMaxPs || busy_ps[l] == kMaxPs ? kMaxPs : busy_ps[l] + drain;
        peak[l] = std::max(peak[l], ++on_link[l]);
      }
    }
  }
};

CommPhase RandomPhase(std::mt19937_64& rng, LinkIndex links) {
  CommPhase ph;
  const int flows = 1 + static_cast<int>(rng() % 5);
  for (int f = 0; f < flows; ++f) {
    FlowPath p;
    const int hops = 1 + static_cast<int>(rng() % 3);
    for (int h = 0; h < hops; ++h) {
      const LinkIndex l = static_cast<LinkIndex>(rng() % links);
      if (std::find(p.links.begin(), p.links.end(), l) == p.links.end()) p.links.push_back(l);
    }
    p.latency = Nanoseconds(100);
    p.bottleneck = GBps(25);
    ph.flows.push_back(std::move(p));
  }
  if (rng() % 3 != 0) {
    ph.num = ph.analytic_num = 1 + static_cast<int64_t>(rng() % 7);
    ph.den = ph.analytic_den = ph.num + static_cast<int64_t>(rng() % 9);
  }
  FinishPhase(ph);
  return ph;
}

TEST(AnalyticCharges, DeferredChargesEqualThePerCrossingRuleAtEveryRead) {
  // Bandwidths that give inexact drains (3 and 7 GB/s), exact ones, and zero (drain Max).
  const std::vector<double> kinds = {3e9, 7e9, 100e9, 25e9, 0.0};
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    const LinkIndex n = 2 + static_cast<LinkIndex>(rng() % 10);
    std::vector<LinkSpec> specs;
    Reference ref;
    for (LinkIndex l = 0; l < n; ++l) {
      const double bw = kinds[rng() % (trial % 2 == 0 ? kinds.size() - 1 : kinds.size())];
      specs.push_back({Bandwidth::BytesPerSecond(bw), Nanoseconds(100)});
      ref.bandwidth.push_back(bw);
    }
    ref.bytes.assign(n, 0);
    ref.busy_ps.assign(n, 0);
    ref.peak.assign(n, 0);
    const NetworkModelRegistry& r = BuiltinNetworkModels();
    StatusOr<std::unique_ptr<Network>> made = r.at(*r.Find("analytic")).Create(specs);
    ASSERT_TRUE(made.ok());
    Network& net = **made;
    // A plan's phases, started again and again, and phases that die after one start.
    std::vector<CommPhase> shared;
    for (int i = 0; i < 4; ++i) shared.push_back(RandomPhase(rng, n));
    for (int step = 0; step < 40; ++step) {
      const TransferSize size{Bytes::Count(static_cast<int64_t>(rng() % 5000)),
                              Bytes::Count(static_cast<int64_t>(rng() % 1000000))};
      if (rng() % 4 == 0) {
        const std::vector<CommPhase> once = {RandomPhase(rng, n)};
        net.Start(SimTime::Zero(), once, size, 0);
        ref.Start(once[0], size);
      } else {
        const size_t i = rng() % shared.size();
        net.Start(SimTime::Zero(), std::span<const CommPhase>(&shared[i], 1), size, 0);
        ref.Start(shared[i], size);
      }
      if (rng() % 8 != 0 && step != 39) continue;
      for (LinkIndex l = 0; l < n; ++l) {
        const LinkStats s = net.link_stats(l);
        ASSERT_EQ(s.bytes_carried.count(), ref.bytes[l]) << "trial " << trial << " link " << l;
        ASSERT_EQ(s.busy_time.picoseconds(), ref.busy_ps[l]) << "trial " << trial << " link " << l;
        ASSERT_EQ(s.peak_flows, ref.peak[l]) << "trial " << trial << " link " << l;
      }
    }
  }
}

}  // namespace
}  // namespace placesim::sim
