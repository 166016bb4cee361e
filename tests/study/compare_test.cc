// Tests of the comparison engine's rules (sim/study/compare.h): the threshold parser and the
// direction table.
#include "sim/study/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace placesim::study {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------- units
TEST(ParseThreshold, ReadsPercentages) {
  StatusOr<double> t = ParseThreshold("2%");
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(*t, DoubleEq(0.02));
  t = ParseThreshold("0.5%");
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(*t, DoubleEq(0.005));
  t = ParseThreshold("0%");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, 0.0);
}

TEST(ParseThreshold, RejectsBareNumbersNegativesAndJunk) {
  for (const char* text : {"2", "-1%", "abc%", "%", "", "1.2.3%", "2000%", "2 %"}) {
    StatusOr<double> t = ParseThreshold(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_THAT(t.status().message(), HasSubstr("e.g. 2% or 0.5%")) << text;
  }
}

TEST(MetricDirection, FollowsTheDocumentedTable) {
  EXPECT_EQ(DirectionOf("step_time_s"), MetricDirection::kLowerIsBetter);
  EXPECT_EQ(DirectionOf("exposed_comm_s"), MetricDirection::kLowerIsBetter);
  EXPECT_EQ(DirectionOf("total_bytes"), MetricDirection::kLowerIsBetter);
  EXPECT_EQ(DirectionOf("bytes"), MetricDirection::kLowerIsBetter);
  EXPECT_EQ(DirectionOf("bubble_fraction"), MetricDirection::kLowerIsBetter);
  EXPECT_EQ(DirectionOf("mfu"), MetricDirection::kHigherIsBetter);
  EXPECT_EQ(DirectionOf("hfu"), MetricDirection::kHigherIsBetter);
  EXPECT_EQ(DirectionOf("tokens_per_second"), MetricDirection::kHigherIsBetter);
  EXPECT_EQ(DirectionOf("headroom_bytes"), MetricDirection::kHigherIsBetter);
  EXPECT_EQ(DirectionOf("fits"), MetricDirection::kHigherIsBetter);
  EXPECT_EQ(DirectionOf("capacity_bytes"), MetricDirection::kNeutral);
  EXPECT_EQ(DirectionOf("peak_at_s"), MetricDirection::kNeutral);
  EXPECT_EQ(DirectionOf("count"), MetricDirection::kNeutral);
}

}  // namespace
}  // namespace placesim::study
