// A caller of FlowNetwork for the tests that compare ways of starting the same flows (groups,
// closed phases, flow by flow): it starts transfers at their times, advances to every instant
// the network asks for, and records what a caller sees: when each transfer ends and in which
// order, every wake-up instant, and every link's statistics at the end. Two runs of the same
// transfers must agree on all of it (ExpectSame).
// Thread-safety: none; test helpers.
#ifndef PLACESIM_TESTS_NETWORK_FLOW_DRIVER_H_
#define PLACESIM_TESTS_NETWORK_FLOW_DRIVER_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/network/flow_network.h"
#include "sim/network/phase.h"

namespace placesim::sim::testing {

struct Outcome {
  std::vector<std::pair<int64_t, uint64_t>> ends;  // (time ps, transfer) in report order
  std::vector<int64_t> wakes;                      // NextEventTime answers, in order
  std::vector<LinkStats> links;
  std::vector<GroupStart> groups;  // what StartGroup answered per transfer, where asked
  int closed = 0;                  // transfers started by StartClosed
};

// A transfer as the driver starts it: `paths` each carry `size` bytes from `start`, paying
// extra_steps more route latencies.
struct TransferView {
  SimTime start;
  std::span<const FlowPath> paths;
  Bytes size;
  int64_t extra_steps = 0;
};

inline FlowPath Path(const std::vector<LinkSpec>& links, std::vector<LinkIndex> route) {
  Duration latency = Duration::Zero();
  for (LinkIndex l : route) latency = latency + links[l].latency;
  return FlowPath{std::move(route), latency, Bandwidth::Zero()};
}

// Runs `transfers` (sorted by start) to the end on a network of `specs`. Transfer k is tagged
// k; start_as_one(net, k, out) may start it whole (true), else its flows start one by one.
// template_min_flows > 0 sets the network's FlowNetwork::set_template_min_flows.
template <typename StartAsOne>
Outcome Drive(const std::vector<LinkSpec>& specs, std::span<const TransferView> transfers,
              StartAsOne start_as_one, int template_min_flows = 0) {
  auto created = FlowNetwork::Create(specs);
  PLACESIM_CHECK(created.ok());
  FlowNetwork net = std::move(created).value();
  if (template_min_flows > 0) net.set_template_min_flows(template_min_flows);
  Outcome out;
  std::vector<int64_t> left(transfers.size());
  std::vector<FlowCompletion> done;
  size_t next = 0;
  for (;;) {
    const SimTime wake = net.NextEventTime();
    out.wakes.push_back(wake.picoseconds());
    if (next == transfers.size() && wake == SimTime::Max()) break;
    const SimTime t = next < transfers.size() ? std::min(wake, transfers[next].start) : wake;
    done.clear();
    net.AdvanceTo(t, done);
    for (const FlowCompletion& c : done) {
      if ((left[c.tag] -= c.flows) == 0) out.ends.emplace_back(c.time.picoseconds(), c.tag);
    }
    for (; next < transfers.size() && transfers[next].start == t; ++next) {
      const TransferView& x = transfers[next];
      left[next] = static_cast<int64_t>(x.paths.size());
      if (start_as_one(net, next, out)) continue;
      for (const FlowPath& p : x.paths) {
        net.StartWithLatency(t, p.links, p.latency, x.size, next, p.latency * x.extra_steps);
      }
    }
  }
  for (LinkIndex l = 0; l < specs.size(); ++l) out.links.push_back(net.link_stats(l));
  return out;
}

inline void ExpectSame(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.ends, b.ends);
  EXPECT_EQ(a.wakes, b.wakes);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t l = 0; l < a.links.size(); ++l) {
    EXPECT_EQ(a.links[l].bytes_carried, b.links[l].bytes_carried) << "link " << l;
    EXPECT_EQ(a.links[l].busy_time, b.links[l].busy_time) << "link " << l;
    EXPECT_EQ(a.links[l].peak_flows, b.links[l].peak_flows) << "link " << l;
    EXPECT_EQ(a.links[l].active_flows, b.links[l].active_flows) << "link " << l;
  }
}

}  // namespace placesim::sim::testing

#endif  // PLACESIM_TESTS_NETWORK_FLOW_DRIVER_H_
