// EventQueue: the simulator's pending-event set, a 4-ary min-heap of small events held by value.
//
// Ordering. Events pop in increasing (time, phase, sequence) order:
//   time      SimTime, integer picoseconds since the start of the simulation;
//   phase     a small number that orders different kinds of work scheduled for the same
//             picosecond (for example "completions before new starts"), chosen by the owner;
//   sequence  the insertion counter of this queue, so events equal in time and phase pop in
//             the order they were pushed (FIFO).
// The key is total (sequence numbers are unique), so the pop order is a pure function of the
// sequence of Push calls: no pointer values, hash orders, clocks or floating-point ties can leak
// in. That is what makes a whole simulation deterministic, and its output byte-identical from
// run to run and machine to machine.
//
// Hot path. An Event is a 32-byte trivially copyable struct with no pointers to owned memory: a
// `kind` that the owner dispatches on with a switch, and integer `target`/`payload` fields that
// name the work by dense id (an op index in a pool, a flow id, a version counter). There is no
// std::function, heap closure or virtual call per event; Push and Pop are O(log4 n) moves of
// 32-byte values inside one contiguous vector, and a node's four children share two cache lines.
//
// Invariants: no event in the queue is earlier than now() (Push rejects the past with a
// PLACESIM_DCHECK, as scheduling into the past is a program bug); now() never decreases.
//
// Thread-safety: none; one queue per simulation (simulations in parallel use separate queues).
#ifndef PLACESIM_SIM_ENGINE_EVENT_QUEUE_H_
#define PLACESIM_SIM_ENGINE_EVENT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "base/units.h"

namespace placesim::sim {

// A point on the simulated clock: the Duration since the simulation started (picoseconds).
using SimTime = Duration;

// Orders events that share a picosecond; lower phases pop first.
using Phase = uint16_t;

struct Event {
  SimTime time;           // when the event fires
  uint64_t sequence = 0;  // insertion order, assigned by EventQueue::Push
  uint16_t kind = 0;      // what to do; the owner's enum, dispatched with a switch
  Phase phase = 0;        // same-time ordering (see the file comment)
  uint32_t target = 0;    // whom it concerns: a rank, stream, flow network, collective...
  uint64_t payload = 0;   // what it carries: an op index, a flow id, a version counter...
};
static_assert(sizeof(Event) <= 32, "events must stay small: they are copied on every heap move");
static_assert(std::is_trivially_copyable_v<Event>);

// Strict weak order of the heap: true when `a` pops before `b`.
inline bool EventBefore(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.phase != b.phase) return a.phase < b.phase;
  return a.sequence < b.sequence;
}

class EventQueue {
 public:
  EventQueue() = default;

  // Inserts `e` with the next insertion sequence (e.sequence is overwritten) and returns that
  // sequence. REQUIRES: e.time >= now(). Complexity: O(log n), amortised O(1) allocation.
  uint64_t Push(Event e) {
    PLACESIM_DCHECK(e.time >= now_);
    e.sequence = next_sequence_++;
    heap_.push_back(e);
    SiftUp(heap_.size() - 1);
    return e.sequence;
  }

  // The next event without removing it. REQUIRES: !empty(). O(1).
  const Event& top() const {
    PLACESIM_DCHECK(!heap_.empty());
    return heap_.front();
  }

  // Removes and returns the earliest event and advances now() to its time.
  // REQUIRES: !empty(). Complexity: O(log n).
  Event Pop() {
    PLACESIM_DCHECK(!heap_.empty());
    Event result = heap_.front();
    Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDownFromRoot(last);
    now_ = result.time;
    return result;
  }

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // Time of the most recently popped event (zero before the first Pop).
  SimTime now() const { return now_; }
  // Number of events ever pushed.
  uint64_t pushed() const { return next_sequence_; }

  // Moves now() forward to `t` without popping an event (a run that stops at a time limit).
  // REQUIRES: now() <= t and, when !empty(), t <= top().time.
  void AdvanceClock(SimTime t) {
    PLACESIM_DCHECK(t >= now_);
    PLACESIM_DCHECK(heap_.empty() || t <= heap_.front().time);
    now_ = t;
  }

  // Pre-sizes the storage for `n` pending events.
  void Reserve(size_t n) { heap_.reserve(n); }

 private:
  static constexpr size_t kArity = 4;

  void SiftUp(size_t i) {
    Event moving = heap_[i];
    while (i > 0) {
      size_t parent = (i - 1) / kArity;
      if (!EventBefore(moving, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = moving;
  }

  // Places `moving` into the hole at the root, moving smaller children up.
  void SiftDownFromRoot(const Event& moving) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      size_t first = i * kArity + 1;
      if (first >= n) break;
      size_t end = first + kArity < n ? first + kArity : n;
      size_t best = first;
      for (size_t c = first + 1; c < end; ++c) {
        if (EventBefore(heap_[c], heap_[best])) best = c;
      }
      if (!EventBefore(heap_[best], moving)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = moving;
  }

  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
  SimTime now_ = SimTime::Zero();
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_ENGINE_EVENT_QUEUE_H_
