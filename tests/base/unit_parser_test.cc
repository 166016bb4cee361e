#include "base/unit_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace placesim {
namespace {

using ::testing::HasSubstr;

TEST(ParseBytes, AcceptsSiAndIecPrefixes) {
  EXPECT_EQ(ParseBytes("80 GiB")->count(), 80LL << 30);
  EXPECT_EQ(ParseBytes("141 GB")->count(), 141'000'000'000LL);
  EXPECT_EQ(ParseBytes("1.5KiB")->count(), 1536);  // 1.5 × 1024
  EXPECT_EQ(ParseBytes("2e3 B")->count(), 2000);
}

TEST(ParseBytes, BitsAreDividedByEight) {
  // 8 Gb = 8e9 bits = 1e9 bytes.
  EXPECT_EQ(ParseBytes("8 Gb")->count(), 1'000'000'000LL);
}

TEST(ParseBytes, RejectsAFractionOfAByte) {
  // 3 bits is 0.375 bytes.
  auto r = ParseBytes("3 b");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("not a whole number of bytes"));
}

TEST(ParseBytes, RequiresAUnit) {
  auto r = ParseBytes("80");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("\"80\" has no unit"));
  EXPECT_THAT(r.status().message(), HasSubstr("GiB"));
}

TEST(ParseBytes, RejectsUnknownUnitListingValidOnes) {
  auto r = ParseBytes("80 gigs");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unknown unit \"gigs\""));
  EXPECT_THAT(r.status().message(), HasSubstr("valid: B, KB"));
}

TEST(ParseBytes, UnitIsCaseSensitive) {
  // "gb" is neither GB (bytes) nor Gb (bits); guessing would be a silent 8x error.
  EXPECT_FALSE(ParseBytes("80 gb").ok());
}

TEST(ParseBytes, RejectsGarbageEmptyNegativeAndHuge) {
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("   ").ok());
  EXPECT_FALSE(ParseBytes("GiB").ok());
  EXPECT_FALSE(ParseBytes("abc").ok());
  EXPECT_FALSE(ParseBytes("1.2.3 GB").ok());
  EXPECT_FALSE(ParseBytes("\x01\xff GB").ok());
  auto neg = ParseBytes("-1 GB");
  ASSERT_FALSE(neg.ok());
  EXPECT_THAT(neg.status().message(), HasSubstr("must not be negative"));
  auto huge = ParseBytes("1e300 GB");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("out of range"));
}

TEST(ParseBandwidth, TellsBitsFromBytes) {
  // 400 Gb/s = 50e9 B/s; 900 GB/s = 900e9 B/s.
  EXPECT_DOUBLE_EQ(ParseBandwidth("400 Gb/s")->bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(ParseBandwidth("400 Gbps")->bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(ParseBandwidth("400 Gbit/s")->bytes_per_second(), 50e9);
  EXPECT_DOUBLE_EQ(ParseBandwidth("900 GB/s")->bytes_per_second(), 900e9);
  EXPECT_DOUBLE_EQ(ParseBandwidth("1 GiB/s")->bytes_per_second(), 1073741824.0);
}

TEST(ParseBandwidth, RejectsASizeWithoutPerSecond) {
  auto r = ParseBandwidth("900 GB");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unknown unit \"GB\" for a bandwidth"));
}

TEST(ParseDuration, AcceptsPicosecondsToSeconds) {
  EXPECT_EQ(ParseDuration("5 us")->picoseconds(), 5'000'000);
  EXPECT_EQ(ParseDuration("5 \xC2\xB5s")->picoseconds(), 5'000'000);
  EXPECT_EQ(ParseDuration("700ns")->picoseconds(), 700'000);
  EXPECT_EQ(ParseDuration("1.5 ms")->picoseconds(), 1'500'000'000);
  EXPECT_EQ(ParseDuration("2 s")->picoseconds(), 2'000'000'000'000);
  EXPECT_EQ(ParseDuration("3 ps")->picoseconds(), 3);
}

TEST(ParseDuration, RejectsMillionsOfSecondsBeyondTheClock) {
  // The picosecond clock holds at most 2^63 ps ≈ 9.22e6 s.
  EXPECT_TRUE(ParseDuration("9e6 s").ok());
  EXPECT_FALSE(ParseDuration("1e7 s").ok());
}

TEST(ParseFlopRate, AcceptsTeraFlopsPerSecond) {
  EXPECT_DOUBLE_EQ(ParseFlopRate("989 TFLOP/s")->per_second(), 989e12);
  EXPECT_DOUBLE_EQ(ParseFlopRate("1.979 PFLOPS")->per_second(), 1.979e15);
  EXPECT_FALSE(ParseFlopRate("989 T").ok());
}

}  // namespace
}  // namespace placesim

// Case variants (unit_parser.h): accepted only where one unit matches and no bit becomes a
// byte; the ambiguous ones are refused naming the alternatives.
namespace placesim {
namespace {

TEST(UnitCase, AcceptsUnambiguousCaseVariants) {
  // "bps" exists only in bits: 100 Gbps = 100e9 / 8 bytes/s.
  EXPECT_EQ(ParseBandwidth("100 gbps")->bytes_per_second(), 100e9 / 8);
  EXPECT_EQ(ParseBandwidth("100 GBPS").ok(), false);   // GBPS would turn the bit into a byte
  EXPECT_EQ(*ParseDuration("5 MS"), Milliseconds(5));  // durations have no mega-seconds
  EXPECT_EQ(*ParseFlopRate("989 tflops"), TeraFlopRate(989));
}

TEST(UnitCase, RefusesBitsOrBytesGuesses) {
  // Sizes: GB or Gb, KB or Kb, GiB or Gib.
  for (const char* text : {"80 gb", "80 kb", "80 gib"}) {
    Status r = ParseBytes(text).status();
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.message(), HasSubstr("is ambiguous")) << text;
    EXPECT_THAT(r.message(), HasSubstr("\"B\" is a byte")) << text;
  }
  for (const char* text : {"100 gb/s", "100 tb/s"}) {
    Status r = ParseBandwidth(text).status();
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.message(), HasSubstr("is ambiguous")) << text;
  }
  auto gb = ParseBandwidth("100 gb/s");
  EXPECT_THAT(gb.status().message(), HasSubstr("write \"GB/s\" or \"Gb/s\""));
  // One match that flips a "b" to "B": refused too.
  auto gib = ParseBandwidth("1 gib/s");
  ASSERT_FALSE(gib.ok());
  EXPECT_THAT(gib.status().message(), HasSubstr("write \"GiB/s\""));
}

TEST(UnitCase, UnknownUnitsSuggestTheClosest) {
  auto r = ParseBandwidth("450 GBs");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("unknown unit \"GBs\""));
  EXPECT_THAT(r.status().message(), HasSubstr("did you mean"));
}

}  // namespace
}  // namespace placesim
