// LaneSet: lanes are taken lowest first, across 64-bit words, each once per mark.
#include "sim/executor/lane_set.h"

#include <gtest/gtest.h>

namespace placesim::sim::internal {
namespace {

TEST(LaneSet, StartsWithEveryLaneMarkedAndTakesThemLowestFirst) {
  LaneSet set(3);
  EXPECT_EQ(set.TakeLowest(), 0u);
  EXPECT_EQ(set.TakeLowest(), 1u);
  EXPECT_EQ(set.TakeLowest(), 2u);
  EXPECT_EQ(set.TakeLowest(), std::nullopt);
}

TEST(LaneSet, ALaneMarkedTwiceIsTakenOnceAndALowerMarkJumpsTheQueue) {
  // 130 lanes span three words (0-63, 64-127, 128-129).
  LaneSet set(130);
  for (int k = 0; k < 130; ++k) set.TakeLowest();
  set.Mark(129);
  set.Mark(129);
  set.Mark(64);
  EXPECT_EQ(set.TakeLowest(), 64u);
  set.Mark(5);  // marked while 129 waits: taken before it
  EXPECT_EQ(set.TakeLowest(), 5u);
  EXPECT_EQ(set.TakeLowest(), 129u);
  EXPECT_EQ(set.TakeLowest(), std::nullopt);
}

}  // namespace
}  // namespace placesim::sim::internal
