#include "base/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace placesim {
namespace {

TEST(Bytes, SiAndIecFactoriesDiffer) {
  // 1 GB = 10^9 bytes; 1 GiB = 2^30 = 1,073,741,824 bytes.
  EXPECT_EQ(GB(1).count(), 1'000'000'000);
  EXPECT_EQ(GiB(1).count(), 1'073'741'824);
  EXPECT_EQ(GiB(80).count(), 80LL * 1'073'741'824);
  EXPECT_EQ(KiB(1).count(), 1024);
}

TEST(Bytes, FractionalFactoriesRoundToNearestByte) {
  // 31.4 GB = 31,400,000,000 bytes exactly.
  EXPECT_EQ(GB(31.4).count(), 31'400'000'000);
}

TEST(Bytes, ShardingTruncatesAndDivCeilRoundsUp) {
  // 10 bytes over 3 devices: floor 3, ceiling 4.
  EXPECT_EQ((Bytes::Count(10) / 3).count(), 3);
  EXPECT_EQ(DivCeil(Bytes::Count(10), 3).count(), 4);
}

TEST(Duration, TransferTimeIsBytesOverBandwidth) {
  // 1 GB at 100 GB/s = 10 ms = 10^10 ps.
  EXPECT_EQ((GB(1) / GBps(100)).picoseconds(), 10'000'000'000LL);
}

TEST(Duration, TransferTimeRoundsUpToThePicosecond) {
  // 1 byte at 3 B/s = 1/3 s = 333,333,333,333.33 ps, rounded up to ...334.
  EXPECT_EQ((Bytes::Count(1) / Bandwidth::BytesPerSecond(3)).picoseconds(), 333'333'333'334LL);
}

TEST(Duration, ZeroBandwidthNeverFinishes) {
  EXPECT_EQ(GB(1) / Bandwidth::Zero(), Duration::Max());
  EXPECT_EQ(Bytes::Zero() / Bandwidth::Zero(), Duration::Zero());
}

TEST(Bandwidth, BitsAreAnEighthOfBytes) {
  // 400 Gb/s = 400e9 / 8 = 50e9 bytes/s = 50 GB/s.
  EXPECT_DOUBLE_EQ(Gbps(400).bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(Gbps(400).ToGBps(), 50.0);
  EXPECT_DOUBLE_EQ(GBps(50).ToGbps(), 400.0);
}

TEST(FlopRate, ComputeTimeIsFlopsOverRate) {
  // 989 TFLOP at 989 TFLOP/s = 1 s.
  EXPECT_EQ((Flops::Count(989e12) / TeraFlopRate(989)).picoseconds(), 1'000'000'000'000LL);
}

TEST(Duration, HugeTimesSaturateInsteadOfOverflowing) {
  // 10^30 bytes at 1 B/s is 10^30 s, far past int64 picoseconds (~9.2e6 s).
  Bytes huge = Bytes::Count(4'000'000'000'000'000'000LL);
  EXPECT_EQ(huge / Bandwidth::BytesPerSecond(1e-12), Duration::Max());
}

TEST(Units, ToStringShowsTheUnit) {
  EXPECT_EQ(ToString(GB(31.4)), "31.40 GB");
  EXPECT_EQ(ToIecString(GiB(80)), "80.00 GiB");
  EXPECT_EQ(ToString(GBps(450)), "450.00 GB/s");
  EXPECT_EQ(ToString(Milliseconds(1.25)), "1.250 ms");
  EXPECT_EQ(ToString(TeraFlopRate(989)), "989.00 TFLOP/s");
}

// The overflow rule (units.h): arithmetic that leaves int64 gives the sticky overflow value
// instead of wrapping (undefined behaviour) — `analyze` once printed -9.04e18 bytes per step.
TEST(UnitsOverflow, BytesSaturateAndStayOverflowed) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const Bytes big = Bytes::Count(kMax / 2 + 1);
  EXPECT_TRUE((big + big).overflowed());
  EXPECT_TRUE((big * 2).overflowed());
  EXPECT_TRUE((3 * big).overflowed());
  EXPECT_FALSE((big * 1).overflowed());
  // Sticky: nothing brings an overflowed value back into range.
  const Bytes over = big * 4;
  EXPECT_TRUE((over - big).overflowed());
  EXPECT_TRUE((over / 1000).overflowed());
  EXPECT_TRUE(DivCeil(over, 7).overflowed());
  EXPECT_TRUE(Scale(over, 1e-9).overflowed());
  Bytes acc = Bytes::Count(1);
  acc += over;
  acc -= Bytes::Count(5);
  EXPECT_TRUE(acc.overflowed());
  // Negative results that do not fit are overflows too: -2 - (2^63 - 2) = -2^63 is INT64_MIN
  // and fits; -3 - (2^63 - 2) = -2^63 - 1 does not.
  EXPECT_EQ((Bytes::Count(-2) - Bytes::Count(kMax - 1)).count(),
            std::numeric_limits<int64_t>::min());
  EXPECT_TRUE((Bytes::Count(-3) - Bytes::Count(kMax - 1)).overflowed());
  // Overflow compares greatest: a size that overflowed never "fits".
  EXPECT_GT(over, Bytes::Count(kMax - 1));
}

TEST(UnitsOverflow, DivCeilRoundsUpForPositiveCounts) {
  // ceil(10 / 4) = 3, ceil(8 / 4) = 2, ceil(0 / 4) = 0.
  EXPECT_EQ(DivCeil(Bytes::Count(10), 4).count(), 3);
  EXPECT_EQ(DivCeil(Bytes::Count(8), 4).count(), 2);
  EXPECT_EQ(DivCeil(Bytes::Zero(), 4).count(), 0);
}

TEST(UnitsOverflow, DurationsSaturateAtMax) {
  const Duration half = Duration::Picoseconds(std::numeric_limits<int64_t>::max() / 2 + 1);
  EXPECT_EQ(half + half, Duration::Max());
  EXPECT_EQ(half * 3, Duration::Max());
  EXPECT_TRUE((Duration::Max() - half).overflowed());
  Duration t = Duration::Max();
  t += Duration::Picoseconds(1);
  EXPECT_EQ(t, Duration::Max());
  EXPECT_EQ((Seconds(1) + Seconds(2)).picoseconds(), 3'000'000'000'000);
}

}  // namespace
}  // namespace placesim
