// Tests of the sweep engine's parsers (sim/study/sweep.h): --vary lists with their ranges and
// errors, and --shard K/N.
#include "sim/study/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace placesim::study {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------- ParseVary
TEST(ParseVary, SplitsOnCommasAndKeepsUnits) {
  StatusOr<VaryAxis> v = ParseVary("cluster.node.nic_bandwidth=200 Gb/s, 400 Gb/s");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->field, "cluster.node.nic_bandwidth");
  EXPECT_THAT(v->values, ElementsAre("200 Gb/s", "400 Gb/s"));
}

TEST(ParseVary, CommasInsideQuotesDoNotSplit) {
  StatusOr<VaryAxis> v = ParseVary("name=\"a,b\",'c',d");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("a,b", "c", "d"));
}

TEST(ParseVary, GeometricRangeDoublesUpToTheEnd) {
  // 1, 2, 4, 8, 16, 32, 64: 2^0 .. 2^6, seven values.
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes=1..64:x2");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("1", "2", "4", "8", "16", "32", "64"));
  // The end is included only when reached: 1, 3, 9, 27 (81 > 50).
  v = ParseVary("cluster.nodes=1..50:x3");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("1", "3", "9", "27"));
}

TEST(ParseVary, ArithmeticRangesAndPlainStepOne) {
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes=1..10:+3");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("1", "4", "7", "10"));
  v = ParseVary("cluster.nodes=2..5");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("2", "3", "4", "5"));
}

TEST(ParseVary, DecimalRangesAreExact) {
  // In doubles 0.3 + 0.1 + 0.1 + 0.1 = 0.6000000000000001 > 0.6 would drop the end; scaled to
  // tenths it is 3..6 step 1.
  StatusOr<VaryAxis> v = ParseVary("cluster.device.matmul_efficiency=0.3..0.6:+0.1");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("0.3", "0.4", "0.5", "0.6"));
}

TEST(ParseVary, RangesMixWithPlainValues) {
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes=1,4..16:x2,64");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("1", "4", "8", "16", "64"));
}

TEST(ParseVary, RejectsAMissingEquals) {
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("FIELD.PATH=V1,V2"));
}

TEST(ParseVary, RejectsAnEmptyList) {
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes=");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("list of values is empty"));
}

TEST(ParseVary, RejectsAnEmptyElement) {
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes=1,,2");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("value 2 of 3 is empty"));
}

TEST(ParseVary, RejectsMalformedRanges) {
  for (const char* spec :
       {"cluster.nodes=1..x", "cluster.nodes=8..1", "cluster.nodes=1..8:x1",
        "cluster.nodes=1..8:*2", "cluster.nodes=1..8:+0", "cluster.nodes=0..8:x2",
        "cluster.nodes=1..8:x1.5", "cluster.nodes=1..8:+"}) {
    StatusOr<VaryAxis> v = ParseVary(spec);
    ASSERT_FALSE(v.ok()) << spec;
    EXPECT_THAT(v.status().message(), HasSubstr("ranges are a..b")) << spec;
  }
}

TEST(ParseVary, RejectsDuplicates) {
  // 1..4 already holds 2.
  StatusOr<VaryAxis> v = ParseVary("cluster.nodes=1..4,2");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("\"2\": listed twice"));
}

TEST(ParseVary, RejectsUnterminatedQuotes) {
  StatusOr<VaryAxis> v = ParseVary("name=\"a,b");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("unterminated"));
}

TEST(ParseShard, AcceptsKOfN) {
  StatusOr<ShardSpec> s = ParseShard("2/4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
}

TEST(ParseShard, RejectsOutOfRangeAndMalformed) {
  for (const char* text : {"0/4", "5/4", "a/b", "3", "1/0", "1.5/4", "-1/4"}) {
    EXPECT_FALSE(ParseShard(text).ok()) << text;
  }
}

// Issue 17: a range near INT64_MAX was refused as "both ends must be decimal numbers";
// INT64_MAX - 1 and INT64_MAX are two decimal numbers, one apart.
TEST(ParseVary, RangeEndingAtInt64MaxExpands) {
  StatusOr<VaryAxis> v =
      ParseVary("training.micro_batch=9223372036854775806..9223372036854775807");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(v->values, ElementsAre("9223372036854775806", "9223372036854775807"));
  // From -INT64_MAX the span hi - lo needs 65 bits; a step of 2^62 gives 4 values:
  // -INT64_MAX + k 2^62 for k = 0..3 (a fifth, 2^63 + 1, would pass INT64_MAX).
  v = ParseVary("x=-9223372036854775807..9223372036854775807:+4611686018427387904");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->values.size(), 4u);
  v = ParseVary("x=1..9223372036854775808");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), HasSubstr("9223372036854775808 is out of range"));
}

}  // namespace
}  // namespace placesim::study
