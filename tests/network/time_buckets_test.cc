// TimeBuckets, FlowNetwork's pending-event queue: earliest instant first, all entries of one
// instant at once in push order, killed entries never making an instant appear, compaction.
#include "sim/network/internal/time_buckets.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace placesim::sim::internal {
namespace {

struct E {
  int64_t time_ps;
  int id;
};

std::vector<int> Ids(const std::vector<E>& v) {
  std::vector<int> ids;
  for (const E& e : v) ids.push_back(e.id);
  return ids;
}

TEST(TimeBuckets, PopsTheEarliestInstantWholeInPushOrder) {
  TimeBuckets<E> q;
  q.Push({20, 1});
  q.Push({10, 2});
  q.Push({20, 3});
  q.Push({10, 4});
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.MinTime(), 10);
  std::vector<E> out;
  q.PopAt(10, out);
  EXPECT_EQ(Ids(out), (std::vector<int>{2, 4}));
  EXPECT_EQ(q.MinTime(), 20);
  out.clear();
  q.PopAt(20, out);
  EXPECT_EQ(Ids(out), (std::vector<int>{1, 3}));
  EXPECT_EQ(q.MinTime(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(q.size(), 0u);
}

TEST(TimeBuckets, AnInstantWhoseEntriesAreAllKilledIsSkipped) {
  TimeBuckets<E> q;
  const uint32_t b = q.Push({5, 1});
  q.Push({7, 2});
  q.Kill(b);
  EXPECT_EQ(q.dead(), 1u);
  EXPECT_EQ(q.MinTime(), 7);
  EXPECT_EQ(q.dead(), 0u);  // dropped with its bucket
  EXPECT_EQ(q.size(), 1u);
}

TEST(TimeBuckets, ARecycledBucketServesALaterInstant) {
  // The bucket of time 5 is popped, then time 5 is pushed again (an event due at once): it is
  // a new instant of its own, not lost in the recycled bucket.
  TimeBuckets<E> q;
  q.Push({5, 1});
  std::vector<E> out;
  q.PopAt(q.MinTime(), out);
  q.Push({5, 2});
  q.Push({6, 3});
  EXPECT_EQ(q.MinTime(), 5);
  out.clear();
  q.PopAt(5, out);
  EXPECT_EQ(Ids(out), (std::vector<int>{2}));
}

TEST(TimeBuckets, CompactDropsKilledEntriesAndKeepsTheRest) {
  // Ids 0..9 at times 100 + id % 3; the even ids are killed and compacted away.
  TimeBuckets<E> q;
  std::vector<uint32_t> bucket;
  for (int i = 0; i < 10; ++i) bucket.push_back(q.Push({100 + i % 3, i}));
  for (int i = 0; i < 10; i += 2) q.Kill(bucket[i]);
  q.Compact([](const E& e) { return e.id % 2 == 0; });
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.dead(), 0u);
  std::vector<E> out;
  while (q.MinTime() != std::numeric_limits<int64_t>::max()) q.PopAt(q.MinTime(), out);
  // Time 100: ids 3, 9; 101: 1, 7; 102: 5.
  EXPECT_EQ(Ids(out), (std::vector<int>{3, 9, 1, 7, 5}));
}

TEST(TimeBuckets, LargeInstantsReuseSpareBuffersInPushOrder) {
  // Instants larger than a recycled bucket keeps (1024 entries) hand their buffers to a spare
  // pool that later large instants grow into; every entry must still come out once, in push
  // order, whichever buffer held it. Two large instants are open at once (times 1 and 2,
  // pushed alternately), and a small one (time 3) between them.
  constexpr int kLarge = 5000;
  TimeBuckets<E> q;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kLarge; ++i) {
      q.Push({1, i});
      q.Push({2, kLarge + i});
      if (i % 1000 == 0) q.Push({3, -i});
    }
    std::vector<int> want1, want2, want3;
    for (int i = 0; i < kLarge; ++i) {
      want1.push_back(i);
      want2.push_back(kLarge + i);
      if (i % 1000 == 0) want3.push_back(-i);
    }
    for (auto [t, want] : {std::pair{1, &want1}, std::pair{2, &want2}, std::pair{3, &want3}}) {
      ASSERT_EQ(q.MinTime(), t);
      std::vector<E> out;
      q.PopAt(t, out);
      EXPECT_EQ(Ids(out), *want) << "round " << round << " time " << t;
    }
    EXPECT_EQ(q.size(), 0u);
  }
}

}  // namespace
}  // namespace placesim::sim::internal
