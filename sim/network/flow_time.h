// Picosecond arithmetic shared by the flow network's start paths (flow_network.cc, groups;
// flow_network_closed.cc, closed phases): one definition of when a started flow enters
// transfer, so that a group, a closed phase and a flow started by StartWithLatency agree to
// the picosecond. Times saturate at kMaxPs (Duration::Max()) instead of overflowing.
// Thread-safety: pure functions.
#ifndef PLACESIM_SIM_NETWORK_FLOW_TIME_H_
#define PLACESIM_SIM_NETWORK_FLOW_TIME_H_

#include <cstdint>
#include <limits>

#include "base/units.h"
#include "sim/network/phase.h"

namespace placesim::sim::flow_time {

inline constexpr int64_t kMaxPs = std::numeric_limits<int64_t>::max();

// a + b, or kMaxPs where it would not fit. REQUIRES: a, b >= 0.
inline int64_t SaturatingAdd(int64_t a, int64_t b) { return b > kMaxPs - a ? kMaxPs : a + b; }

// The extra latency a flow of `p` pays for extra_steps more steps of its route, saturating at
// Duration::Max().
inline Duration ExtraLatency(const FlowPath& p, int64_t extra_steps) {
  const bool fits =
      extra_steps == 0 || p.latency.picoseconds() <= Duration::Max().picoseconds() / extra_steps;
  return fits ? p.latency * extra_steps : Duration::Max();
}

// When a flow of `p` started at 0 enters transfer (StartWithLatency's saturating sum).
inline int64_t ActivePs(const FlowPath& p, int64_t extra_steps) {
  return SaturatingAdd(ExtraLatency(p, extra_steps).picoseconds(), p.latency.picoseconds());
}

}  // namespace placesim::sim::flow_time

#endif  // PLACESIM_SIM_NETWORK_FLOW_TIME_H_
