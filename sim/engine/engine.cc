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

void Engine::AdvanceClockTo(SimTime t) {
  if (t > queue_.now()) queue_.AdvanceClock(t);
}

}  // namespace placesim::sim
