// Tests of the "did you mean" helper: the distance on textbook cases, the length-scaled
// threshold, and the names the CLI suggests for the typos its users make.
#include "base/suggest.h"

#include <gtest/gtest.h>

namespace placesim {
namespace {

TEST(EditDistanceTest, CountsEachKindOfEdit) {
  EXPECT_EQ(EditDistance("", ""), 0);
  EXPECT_EQ(EditDistance("abc", ""), 3);               // three deletions
  EXPECT_EQ(EditDistance("", "abc"), 3);               // three insertions
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);     // k->s, e->i, +g (Levenshtein's example)
  EXPECT_EQ(EditDistance("simulte", "simulate"), 1);   // one insertion
  EXPECT_EQ(EditDistance("simualte", "simulate"), 1);  // one adjacent swap ("ua" -> "au")
  EXPECT_EQ(EditDistance("ca", "abc"), 3);  // optimal string alignment: no edit of a swapped pair
}

TEST(EditDistanceTest, IgnoresAsciiCase) {
  EXPECT_EQ(EditDistance("FSDP", "fsdp"), 0);
  EXPECT_EQ(EditDistance("Llama3-70B", "llama3-70b"), 0);
}

TEST(SuggestTest, ThresholdGrowsWithLength) {
  EXPECT_EQ(SuggestionThreshold(2), 1);
  EXPECT_EQ(SuggestionThreshold(4), 1);
  EXPECT_EQ(SuggestionThreshold(5), 2);
  EXPECT_EQ(SuggestionThreshold(8), 2);
  EXPECT_EQ(SuggestionThreshold(9), 3);
}

TEST(SuggestTest, SuggestsTheClosestValidName) {
  const std::vector<std::string> commands = {"analyze", "simulate", "sweep", "search"};
  EXPECT_EQ(ClosestName("simulte", commands), "simulate");
  EXPECT_EQ(DidYouMean("simulte", commands), "; did you mean \"simulate\"?");
  // "training.micro_bach" is one insertion from "micro_batch" after the prefix.
  EXPECT_EQ(ClosestName("micro_bach", {"micro_batch", "global_batch", "seq_len"}), "micro_batch");
}

TEST(SuggestTest, PrefersTheNameOfTheSameLengthAmongEquallyClose) {
  // "nodez" is 1 from "node" (a deletion) and 1 from "nodes" (a substitution).
  EXPECT_EQ(ClosestName("nodez", {"node_preset", "node", "nodes"}), "nodes");
  // Same distance and length gap: the first in order ("zero4": 1 from each of zero1..3).
  EXPECT_EQ(ClosestName("zero4", {"zero1", "zero2", "zero3"}), "zero1");
}

TEST(SuggestTest, StaysQuietWhenNothingIsClose) {
  const std::vector<std::string> commands = {"analyze", "simulate", "sweep", "search"};
  EXPECT_EQ(ClosestName("frobnicate", commands), std::nullopt);
  EXPECT_EQ(DidYouMean("frobnicate", commands), "");
  EXPECT_EQ(ClosestName("simulate", commands), std::nullopt);  // already valid
}

TEST(SuggestTest, CaseVariantMatchesOnlyWhenUnique) {
  EXPECT_EQ(UniqueCaseInsensitiveMatch("FSDP", {"zero2", "fsdp"}), "fsdp");
  EXPECT_EQ(UniqueCaseInsensitiveMatch("gbps", {"GB/s", "Gb/s"}), std::nullopt);  // no match
  // Two names that differ only in case: the variant is ambiguous, so refused.
  EXPECT_EQ(UniqueCaseInsensitiveMatch("gb", {"GB", "Gb"}), std::nullopt);
  EXPECT_EQ(UniqueCaseInsensitiveMatch("GB", {"GB", "Gb"}), std::nullopt);
}

}  // namespace
}  // namespace placesim
