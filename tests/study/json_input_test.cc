// Tests of the JSON readers of `compare` and `merge` against hostile input (issue 17): nesting
// too deep to walk, fields of the wrong type, integers at the ends of int64, and a merge that
// misses a million shards. Each case is one of the issue's reproducers.
#include "sim/study/json_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "sim/study/compare.h"
#include "sim/study/merge.h"

namespace placesim::study {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A file in the test's temporary folder, removed with the fixture.
class JsonInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("placesim_json_input_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(JsonInputTest, ANumberPastADoublesRangeIsBadInputNotAnEscapedException) {
  // Found by results_fuzz: nlohmann throws out_of_range (406), not parse_error, for a number
  // whose exponent leaves a double; it escaped the reader and aborted the process.
  const std::string huge(100000, '9');
  for (const std::string& number :
       std::vector<std::string>{"1e400", "-331e300333", "0.1990684825419E4645", huge + "e999"}) {
    const std::string path = Write("big.json", "{\"step_time_s\": " + number + "}");
    StatusOr<ResultMetrics> r = LoadResultFile(path);
    ASSERT_FALSE(r.ok()) << number.substr(0, 40);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("big.json: not valid JSON: number overflow"));
    // The quoted number is cut short: 100,000 digits do not make a 100 KB message.
    EXPECT_LT(r.status().message().size(), 300u);
  }
}

TEST_F(JsonInputTest, ASweepWithTwoPointsOfTheSameValuesIsRefused) {
  // Found by results_fuzz: points match between files by their values, so the second point
  // with [model.layers=2] was compared with the first, and a file "regressed" against itself.
  const std::string path = Write("dup.json",
                                 R"({"kind": "sweep", "points": [
            {"values": {"model.layers": "2"}, "status": "ok", "step_time_s": 1.0},
            {"values": {"model.layers": "1"}, "status": "ok", "step_time_s": 0.5},
            {"values": {"model.layers": "2"}, "status": "ok", "step_time_s": 3.0}]})");
  StatusOr<ResultMetrics> r = LoadResultFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("dup.json: $.points[2].values: [model.layers=2]: the same values as "
                        "$.points[0]"));
}

TEST_F(JsonInputTest, ABenchmarkNamedTwiceIsRefusedButRepetitionsAreKeptApart) {
  const std::string twice =
      Write("twice.json", R"({"benchmarks": [{"name": "BM_a", "real_time": 1.0},
                                             {"name": "BM_a", "real_time": 2.0}]})");
  StatusOr<ResultMetrics> r = LoadResultFile(twice);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("$.benchmarks[1].name: \"BM_a\": the same benchmark as $.benchmarks[0]"));
  // Two repetitions: BM_a's real_time and cpu_time, then the same of repetition 1.
  const std::string reps = Write("reps.json", R"({"benchmarks": [
          {"name": "BM_a", "repetition_index": 0, "real_time": 1.0, "cpu_time": 1.0},
          {"name": "BM_a", "repetition_index": 1, "real_time": 2.0, "cpu_time": 2.0}]})");
  StatusOr<ResultMetrics> ok = LoadResultFile(reps);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->metrics.size(), 4u);
  EXPECT_EQ(ok->metrics[2].name, "BM_a (repetition 1) real_time");
  // Compared with itself, nothing changes.
  StatusOr<Comparison> c = CompareResults(*ok, *ok, 0.02, "a", "b");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->unchanged, 4);
}

std::string Nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

TEST_F(JsonInputTest, RefusesNestingPastTheLimitQuickly) {
  // 30,000 deep segfaulted compare's Flatten; 20,000 deep took 24 s. The scan stops at
  // kMaxJsonDepth + 1 brackets whatever follows.
  const std::string path = Write("deep.json", "{\"step_time_s\": " + Nested(300000) + "}");
  const auto start = std::chrono::steady_clock::now();
  StatusOr<ResultMetrics> r = LoadResultFile(path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("nested deeper than 64 levels"));
  EXPECT_LT(seconds, 5.0);
}

TEST_F(JsonInputTest, AcceptsNestingAtTheLimit) {
  // kMaxJsonDepth levels in all: the object and 63 arrays.
  StatusOr<nlohmann::ordered_json> j =
      ReadJsonFile(Write("ok.json", "{\"a\": " + Nested(63) + "}"));
  EXPECT_TRUE(j.ok()) << j.status().message();
  j = ReadJsonFile(Write("over.json", "{\"a\": " + Nested(64) + "}"));
  EXPECT_FALSE(j.ok());
}

TEST_F(JsonInputTest, BracketsInsideStringsDoNotCount) {
  const std::string brackets(1000, '[');
  StatusOr<nlohmann::ordered_json> j =
      ReadJsonFile(Write("s.json", "{\"a\": \"" + brackets + "\\\"" + brackets + "\"}"));
  EXPECT_TRUE(j.ok()) << j.status().message();
}

TEST_F(JsonInputTest, NamesThePositionOfASyntaxError) {
  StatusOr<nlohmann::ordered_json> j = ReadJsonFile(Write("bad.json", "{\"a\": 1,}"));
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(j.status().message(), HasSubstr("not valid JSON (at byte 9)"));
}

TEST_F(JsonInputTest, CompareNamesTheJsonPathOfAFieldOfTheWrongType) {
  struct Case {
    const char* text;
    const char* path;
  } cases[] = {
      {R"({"kind": 5, "step_time_s": 1})", "$.kind"},
      {R"({"kind": "sweep", "points": [{"values": {"tp": 2}, "status": "ok"}]})",
       "$.points[0].values.tp"},
      {R"({"kind": "sweep", "points": [{"values": {"tp": "2"}, "status": 3}]})",
       "$.points[0].status"},
      {R"({"kind": "sweep", "points": [{"status": "ok"}]})", "$.points[0].values"},
      {R"({"kind": "sweep", "points": [7]})", "$.points[0]"},
      {R"({"benchmarks": [{"name": "BM_x", "run_type": 7, "real_time": 1}]})",
       "$.benchmarks[0].run_type"},
      {R"({"benchmarks": [{"name": 3, "real_time": 1}]})", "$.benchmarks[0].name"},
  };
  for (const Case& c : cases) {
    StatusOr<ResultMetrics> r = LoadResultFile(Write("r.json", c.text));
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.path)) << c.text;
  }
}

TEST_F(JsonInputTest, CompareOfInt64ExtremesIsARegression) {
  // INT64_MAX - INT64_MIN = 2^64 - 1 does not fit in int64: the delta is computed in 128 bits,
  // so the change is +1.84467e+19, relative 2^64 / 2^63 = 2 (200%), far beyond 2%.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  StatusOr<ResultMetrics> b = LoadResultFile(
      Write("b.json", "{\"step_time_s\": 1, \"total_bytes\": " + std::to_string(kMin) + "}"));
  StatusOr<ResultMetrics> c = LoadResultFile(
      Write("c.json", "{\"step_time_s\": 1, \"total_bytes\": " + std::to_string(kMax) + "}"));
  ASSERT_TRUE(b.ok() && c.ok());
  StatusOr<Comparison> cmp = CompareResults(*b, *c, 0.02, "b", "c");
  ASSERT_TRUE(cmp.ok());
  EXPECT_EQ(cmp->regressed, 1);
  EXPECT_EQ(cmp->within_threshold, 0);
  ASSERT_EQ(cmp->changes.size(), 1u);
  EXPECT_EQ(cmp->changes[0].delta, "+1.84467e+19");
  ASSERT_TRUE(cmp->changes[0].relative.has_value());
  EXPECT_DOUBLE_EQ(*cmp->changes[0].relative, 2.0);
}

TEST(PlanMerge, ListsAFewMissingShardsAndTheCount) {
  // One shard of a split into a million: 999,999 missing. The message lists 10 and the count,
  // not a 16 MB line.
  ShardHeader h;
  h.name = "s1.json";
  h.fingerprint = "f";
  h.total_points = 1'000'000;
  h.shard = {1, 1'000'000};
  h.point_indices = {0};
  StatusOr<MergePlan> plan = PlanMerge({h});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("missing shards: 2/1000000, 3/1000000"));
  EXPECT_THAT(plan.status().message(), HasSubstr("and 999989 more (999999 in all)"));
  EXPECT_LT(plan.status().message().size(), 1000u);
}

}  // namespace
}  // namespace placesim::study
