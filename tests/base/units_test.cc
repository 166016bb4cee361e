#include "base/units.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace placesim
