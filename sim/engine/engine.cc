// Engine: the out-of-line, cold parts of the event loop (see engine.h).
#include "sim/engine/engine.h"

#include <fmt/format.h>

#include <string>

namespace placesim::sim {

Status Engine::EventLimitError(uint64_t max_events) const {
  return OutOfRangeError(fmt::format(
      "event limit exceeded: {} events handled in one run, {} still pending at t = {} ps; "
      "the schedule may loop forever (raise RunLimits::max_events if it is just large)",
      max_events, queue_.size(), now().picoseconds()));
}

Status Engine::SimulatedTimeLimitError() const {
  // 2^63 - 1 ps = 9,223,372.036854775807 s = 106.75 days.
  return OutOfRangeError(fmt::format(
      "simulated time exceeds its limit of {} ps (about 106.75 days) after t = {} ps: an "
      "operation or transfer lasts longer than can be represented; check the scenario's rates, "
      "efficiencies and latencies",
      SimTime::Max().picoseconds(), now().picoseconds()));
}

void Engine::AdvanceClockTo(SimTime t) {
  if (t > queue_.now()) queue_.AdvanceClock(t);
}

}  // namespace placesim::sim
