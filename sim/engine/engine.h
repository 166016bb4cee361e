// Engine: the discrete-event loop. It owns the clock and the EventQueue, and hands each event,
// in (time, phase, sequence) order, to a handler that the owner supplies at Run().
//
// The handler is a template parameter called directly (typically a struct whose operator()
// switches on Event::kind), so dispatch costs one inlined call: no std::function, no virtual
// call, no allocation per event. The handler may schedule further events through the Engine
// it receives.
//
// Determinism: the engine adds nothing that depends on the environment. Given the same initial
// events and a handler that is a pure function of the events it sees, Run() produces the same
// event sequence, times and results on every run (see event_queue.h for the ordering key).
//
// Termination: Run() stops when the queue drains, when the next event lies beyond a time limit,
// or — as a guard against livelock in a buggy or pathological schedule — when a bounded number
// of events has been processed, in which case it returns a Status instead of hanging. Time is
// int64 picoseconds (about 106.75 days): an event past that fails the run with a Status too,
// rather than wrapping into the past.
//
// Thread-safety: none; one engine per simulation.
#ifndef PLACESIM_SIM_ENGINE_ENGINE_H_
#define PLACESIM_SIM_ENGINE_ENGINE_H_

#include <cstdint>
#include <type_traits>

#include "base/status.h"
#include "base/units.h"
#include "sim/engine/event_queue.h"

namespace placesim::sim {

struct RunLimits {
  // Events later than this are left in the queue; Run() then returns OK with now() == until.
  // Default: no limit.
  SimTime until = SimTime::Max();
  // Run() fails with kOutOfRange after processing this many events in one call. The default
  // (one billion) is far beyond any realistic step of a training job yet returns in minutes, so
  // a livelock surfaces as an error rather than a hang.
  uint64_t max_events = 1'000'000'000;
};

// Why Run() returned OK.
enum class RunEnd {
  kDrained,    // no events left
  kTimeLimit,  // the next event lies beyond RunLimits::until
};

class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Current simulated time: the time of the event being handled (or of the last one handled).
  SimTime now() const { return queue_.now(); }

  // Schedules an event at absolute time `at`. REQUIRES: at >= now(). Returns its sequence.
  // An event at SimTime::Max() (a time that saturated: the last picosecond int64 holds) cannot
  // be told from "never"; it marks the run as past the representable time, and the next step of
  // Run() fails with kOutOfRange naming the limit (see SimulatedTimeLimitError).
  // Complexity: O(log n).
  uint64_t ScheduleAt(SimTime at, uint16_t kind, uint32_t target = 0, uint64_t payload = 0,
                      Phase phase = 0) {
    if (at >= SimTime::Max()) time_overflowed_ = true;
    Event e;
    e.time = at;
    e.kind = kind;
    e.phase = phase;
    e.target = target;
    e.payload = payload;
    return queue_.Push(e);
  }

  // Schedules an event `delay` after now(). REQUIRES: delay >= 0. A time past SimTime::Max()
  // saturates there (see ScheduleAt) instead of wrapping into the past; so does a negative
  // delay, which only an overflowed duration computed upstream can produce.
  uint64_t ScheduleAfter(Duration delay, uint16_t kind, uint32_t target = 0, uint64_t payload = 0,
                         Phase phase = 0) {
    const bool fits = delay >= Duration::Zero() && delay <= SimTime::Max() - now();
    return ScheduleAt(fits ? now() + delay : SimTime::Max(), kind, target, payload, phase);
  }

  // Runs events through `handler` until the queue drains or a limit is reached.
  // `handler` is called as handler(Engine&, const Event&) and returns void or Status; a non-OK
  // Status stops the run and is returned as is (the failing event is consumed).
  // Returns: the reason for stopping, or kOutOfRange when limits.max_events events were
  // processed with more still pending, or kOutOfRange when an event was scheduled past the
  // representable time (see ScheduleAt). Run may be called again to continue.
  // Complexity: O(k log n) for k events handled.
  template <typename Handler>
  StatusOr<RunEnd> Run(Handler&& handler, const RunLimits& limits = RunLimits()) {
    uint64_t handled = 0;
    while (!queue_.empty()) {
      if (time_overflowed_) return SimulatedTimeLimitError();
      if (queue_.top().time > limits.until) {
        AdvanceClockTo(limits.until);
        return RunEnd::kTimeLimit;
      }
      if (handled >= limits.max_events) return EventLimitError(limits.max_events);
      const Event e = queue_.Pop();
      ++handled;
      ++events_handled_;
      using Result = std::invoke_result_t<Handler&, Engine&, const Event&>;
      if constexpr (std::is_same_v<Result, Status>) {
        Status s = handler(*this, e);
        if (!s.ok()) return s;
      } else {
        static_assert(std::is_void_v<Result>, "handler must return void or Status");
        handler(*this, e);
      }
    }
    return RunEnd::kDrained;
  }

  // Total events handled by all Run() calls.
  uint64_t events_handled() const { return events_handled_; }
  size_t pending() const { return queue_.size(); }
  EventQueue& queue() { return queue_; }
  const EventQueue& queue() const { return queue_; }

 private:
  Status EventLimitError(uint64_t max_events) const;
  Status SimulatedTimeLimitError() const;
  // Moves the clock forward to `t` without an event (used when stopping at a time limit).
  void AdvanceClockTo(SimTime t);

  EventQueue queue_;
  uint64_t events_handled_ = 0;
  bool time_overflowed_ = false;  // an event was scheduled at SimTime::Max()
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_ENGINE_ENGINE_H_
