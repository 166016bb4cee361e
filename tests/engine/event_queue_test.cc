#include "sim/engine/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "sim/engine/engine.h"

namespace placesim::sim {
namespace {

static_assert(sizeof(Event) <= 32);
static_assert(std::is_trivially_copyable_v<Event>);

Event At(int64_t ps, Phase phase = 0, uint64_t payload = 0) {
  Event e;
  e.time = Picoseconds(ps);
  e.phase = phase;
  e.payload = payload;
  return e;
}

TEST(EventQueue, PopsInTimeOrder) {
  EventQueue q;
  for (int64_t t : {50, 10, 40, 20, 30}) q.Push(At(t));
  std::vector<int64_t> times;
  while (!q.empty()) times.push_back(q.Pop().time.picoseconds());
  EXPECT_EQ(times, (std::vector<int64_t>{10, 20, 30, 40, 50}));
  EXPECT_EQ(q.now(), Picoseconds(50));
}

TEST(EventQueue, SameTimeOrdersByPhaseThenInsertion) {
  EventQueue q;
  // Pushed: (t=5, phase 1, #0), (t=5, phase 0, #1), (t=5, phase 1, #2), (t=5, phase 0, #3),
  // (t=4, phase 9, #4). Expected: t=4 first whatever its phase, then phase 0 in insertion
  // order (#1, #3), then phase 1 in insertion order (#0, #2).
  q.Push(At(5, 1, 0));
  q.Push(At(5, 0, 1));
  q.Push(At(5, 1, 2));
  q.Push(At(5, 0, 3));
  q.Push(At(4, 9, 4));
  std::vector<uint64_t> order;
  while (!q.empty()) order.push_back(q.Pop().payload);
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 1, 3, 0, 2}));
}

TEST(EventQueue, EqualKeysAreFifoAtScale) {
  // 10,000 events at one instant and phase pop exactly in insertion order.
  EventQueue q;
  for (uint64_t i = 0; i < 10000; ++i) q.Push(At(7, 0, i));
  for (uint64_t i = 0; i < 10000; ++i) ASSERT_EQ(q.Pop().payload, i);
}

TEST(EventQueue, PushAssignsIncreasingSequences) {
  EventQueue q;
  EXPECT_EQ(q.Push(At(3)), 0u);
  EXPECT_EQ(q.Push(At(1)), 1u);
  EXPECT_EQ(q.Pop().sequence, 1u);
  EXPECT_EQ(q.pushed(), 2u);
  EXPECT_EQ(q.size(), 1u);
}

TEST(EventQueue, MatchesASortedReferenceOnRandomInput) {
  std::mt19937_64 rng(42);
  EventQueue q;
  std::vector<std::tuple<int64_t, Phase, uint64_t>> reference;
  int64_t now = 0;
  // Interleaved pushes and pops, with pushes never earlier than the last pop.
  std::vector<std::tuple<int64_t, Phase, uint64_t>> popped, expected;
  std::vector<std::tuple<int64_t, Phase, uint64_t>> pending;
  for (int round = 0; round < 20000; ++round) {
    if (rng() % 3 != 0 || q.empty()) {
      Event e = At(now + static_cast<int64_t>(rng() % 100), static_cast<Phase>(rng() % 3));
      uint64_t seq = q.Push(e);
      pending.emplace_back(e.time.picoseconds(), e.phase, seq);
    } else {
      auto it = std::min_element(pending.begin(), pending.end());
      expected.push_back(*it);
      pending.erase(it);
      Event e = q.Pop();
      popped.emplace_back(e.time.picoseconds(), e.phase, e.sequence);
      now = e.time.picoseconds();
    }
  }
  EXPECT_EQ(popped, expected);
}

// An owner dispatching on kind with a switch: a chain of pings re-scheduling themselves.
struct PingPong {
  enum Kind : uint16_t { kPing, kPong };
  std::vector<std::tuple<int64_t, uint16_t, uint32_t>> log;
  void operator()(Engine& engine, const Event& e) {
    log.emplace_back(e.time.picoseconds(), e.kind, e.target);
    switch (e.kind) {
      case kPing:
        if (e.payload > 0) engine.ScheduleAfter(Picoseconds(3), kPong, e.target, e.payload - 1);
        break;
      case kPong:
        if (e.payload > 0) engine.ScheduleAfter(Picoseconds(2), kPing, e.target, e.payload - 1);
        break;
    }
  }
};

std::vector<std::tuple<int64_t, uint16_t, uint32_t>> RunPingPong() {
  Engine engine;
  for (uint32_t target = 0; target < 4; ++target) {
    engine.ScheduleAt(Picoseconds(target % 2), PingPong::kPing, target, 50);
  }
  PingPong handler;
  auto end = engine.Run(handler);
  EXPECT_TRUE(end.ok());
  EXPECT_EQ(*end, RunEnd::kDrained);
  return handler.log;
}

TEST(Engine, RunsToDrainWithSwitchDispatch) {
  auto log = RunPingPong();
  // 4 chains of 51 events each; the last of target 0 (started at 0) is 25 pings+pongs later:
  // 25 * (3 + 2) = 125 ps, and target 1 started at 1 ps ends at 126 ps.
  ASSERT_EQ(log.size(), 4u * 51u);
  EXPECT_EQ(std::get<0>(log.back()), 126);
}

TEST(Engine, IdenticalSequencesAcrossRuns) { EXPECT_EQ(RunPingPong(), RunPingPong()); }

TEST(Engine, StopsAtTimeLimitAndResumes) {
  Engine engine;
  engine.ScheduleAt(Picoseconds(10), 0);
  engine.ScheduleAt(Picoseconds(20), 0);
  engine.ScheduleAt(Picoseconds(30), 0);
  int handled = 0;
  auto count = [&](Engine&, const Event&) { ++handled; };
  RunLimits limits;
  // Events at exactly `until` still run (t <= until); the one at 30 ps does not.
  limits.until = Picoseconds(20);
  auto end = engine.Run(count, limits);
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(*end, RunEnd::kTimeLimit);
  EXPECT_EQ(handled, 2);
  EXPECT_EQ(engine.now(), Picoseconds(20));
  limits.until = Picoseconds(29);
  EXPECT_EQ(*engine.Run(count, limits), RunEnd::kTimeLimit);
  EXPECT_EQ(engine.now(), Picoseconds(29));
  EXPECT_EQ(handled, 2);
  EXPECT_EQ(*engine.Run(count), RunEnd::kDrained);
  EXPECT_EQ(handled, 3);
  EXPECT_EQ(engine.events_handled(), 3u);
}

TEST(Engine, EventLimitReturnsStatusInsteadOfHanging) {
  Engine engine;
  engine.ScheduleAt(Picoseconds(0), 0);
  // A livelock: every event schedules another at the same instant.
  auto forever = [](Engine& e, const Event&) { e.ScheduleAfter(Duration::Zero(), 0); };
  RunLimits limits;
  limits.max_events = 1000;
  auto end = engine.Run(forever, limits);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(end.status().message().find("event limit exceeded: 1000 events"), std::string::npos)
      << end.status().message();
  EXPECT_EQ(engine.events_handled(), 1000u);
}

TEST(Engine, AnEventPastTheRepresentableTimeFailsTheRunNamingTheLimit) {
  Engine engine;
  engine.ScheduleAt(Picoseconds(10), 0);
  // From t = 10 ps, a delay of Max() would wrap int64 into the past; it must saturate and fail.
  auto overflow = [](Engine& e, const Event&) { e.ScheduleAfter(Duration::Max(), 0); };
  auto end = engine.Run(overflow);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().code(), StatusCode::kOutOfRange);
  // Max() = 2^63 - 1 ps.
  EXPECT_NE(end.status().message().find("simulated time exceeds its limit of "
                                        "9223372036854775807 ps (about 106.75 days) after t = 10"),
            std::string::npos)
      << end.status().message();
  EXPECT_EQ(engine.now(), Picoseconds(10));  // time never went backwards
}

TEST(Engine, HandlerErrorStopsTheRun) {
  Engine engine;
  engine.ScheduleAt(Picoseconds(1), 0);
  engine.ScheduleAt(Picoseconds(2), 1);
  engine.ScheduleAt(Picoseconds(3), 0);
  int handled = 0;
  auto handler = [&](Engine&, const Event& e) -> Status {
    ++handled;
    if (e.kind == 1) return InvalidArgumentError("bad op");
    return OkStatus();
  };
  auto end = engine.Run(handler);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.status().message(), "bad op");
  EXPECT_EQ(handled, 2);
  EXPECT_EQ(engine.pending(), 1u);
}

}  // namespace
}  // namespace placesim::sim
