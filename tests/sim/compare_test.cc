// Tests of `placesim compare`, driven in-process through RunCompare: the threshold parser,
// the direction table, planted regressions in analyze, simulate and sweep results, and the
// exit codes.
#include "sim/cli/compare.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/commands.h"
#include "sim/cli/sweep.h"

namespace placesim::sim {
namespace {

using ::testing::DoubleEq;
using ::testing::HasSubstr;
using ::testing::Not;

using cli_test::Example;
using cli_test::Outcome;
using cli_test::RunCommand;
using cli_test::WriteTemp;

Outcome Compare(const std::vector<std::string>& args) { return RunCommand(&RunCompare, args); }

// `placesim analyze --format json` of zero-7.5b with extra --set flags.
nlohmann::ordered_json AnalyzeJson(const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args = {"analyze", Example("zero-7.5b.textproto"), "--format", "json"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  std::ostringstream out, err;
  EXPECT_EQ(RunCli(args, out, err), kExitOk) << err.str();
  return nlohmann::ordered_json::parse(out.str());
}

std::string SweepJson(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {Example("zero-7.5b.textproto"), "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::ostringstream out, err;
  EXPECT_EQ(RunSweep(args, out, err), kExitOk) << err.str();
  return out.str();
}

// ---------------------------------------------------------------------------- analyze
TEST(CompareCommand, AnIdenticalPairPasses) {
  std::string text = AnalyzeJson().dump(2);
  std::string a = WriteTemp("same_a.json", text);
  std::string b = WriteTemp("same_b.json", text);
  Outcome r = Compare({a, b});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 regressed, 0 improved"));
}

TEST(CompareCommand, FlagsAPlantedMemoryRegression) {
  nlohmann::ordered_json base = AnalyzeJson();
  nlohmann::ordered_json cur = base;
  // ZeRO-3 at 64 GPUs: 16Ψ/64 = 1.875e9 bytes; plant +10% (beyond the default 2%).
  ASSERT_EQ(base["memory"]["total_bytes"], 1'875'000'000);
  cur["memory"]["total_bytes"] = 2'062'500'000;
  Outcome r =
      Compare({WriteTemp("mem_base.json", base.dump(2)), WriteTemp("mem_cur.json", cur.dump(2))});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, HasSubstr("memory.total_bytes"));
  EXPECT_THAT(r.out, HasSubstr("+187500000"));
  EXPECT_THAT(r.out, HasSubstr("+10.00%"));
  EXPECT_THAT(r.out, HasSubstr("regressed"));
  EXPECT_THAT(r.err, HasSubstr("1 metric(s) regressed beyond 2%"));
}

TEST(CompareCommand, ChangesWithinTheThresholdPass) {
  nlohmann::ordered_json base = AnalyzeJson();
  nlohmann::ordered_json cur = base;
  // +1% of 1.875e9 = 18,750,000 bytes: within 2%, beyond 0.5%.
  cur["memory"]["total_bytes"] = 1'893'750'000;
  std::string a = WriteTemp("thr_base.json", base.dump(2));
  std::string b = WriteTemp("thr_cur.json", cur.dump(2));
  Outcome loose = Compare({a, b, "--threshold", "2%"});
  EXPECT_EQ(loose.code, kExitOk) << loose.out;
  EXPECT_THAT(loose.out, HasSubstr("1 changed within it"));
  Outcome tight = Compare({a, b, "--threshold", "0.5%"});
  EXPECT_EQ(tight.code, kExitFailure);
  EXPECT_THAT(tight.out, HasSubstr("regressed"));
}

TEST(CompareCommand, ImprovementsDoNotFail) {
  nlohmann::ordered_json base = AnalyzeJson();
  nlohmann::ordered_json cur = base;
  // 10% less memory: 1.6875e9 bytes.
  cur["memory"]["total_bytes"] = 1'687'500'000;
  Outcome r =
      Compare({WriteTemp("imp_base.json", base.dump(2)), WriteTemp("imp_cur.json", cur.dump(2))});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("0 regressed, 1 improved"));
}

TEST(CompareCommand, ATradeOffFailsOnItsRegressedHalf) {
  // ZeRO-3 against a ZeRO-1 baseline at 64 GPUs: model state falls from 4Ψ + 12Ψ/64 =
  // 31.4e9 to 16Ψ/64 = 1.875e9 bytes (improved), traffic grows from 2·63/64·2Ψ to
  // 3·63/64·2Ψ (1.5x, regressed).
  std::string a = WriteTemp("trade_base.json", AnalyzeJson({"strategy.preset=zero1"}).dump(2));
  std::string b = WriteTemp("trade_cur.json", AnalyzeJson().dump(2));
  Outcome r = Compare({a, b});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, HasSubstr("improved"));
  EXPECT_THAT(r.out, HasSubstr("comm.bytes_per_device_per_step"));
  // The reverse direction regresses on memory.
  EXPECT_EQ(Compare({b, a}).code, kExitFailure);
}

TEST(CompareCommand, JsonOutputListsTheFlaggedMetrics) {
  nlohmann::ordered_json base = AnalyzeJson();
  nlohmann::ordered_json cur = base;
  cur["memory"]["total_bytes"] = 2'062'500'000;
  Outcome r = Compare({WriteTemp("js_base.json", base.dump(2)),
                       WriteTemp("js_cur.json", cur.dump(2)), "--format", "json"});
  EXPECT_EQ(r.code, kExitFailure);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["regressed"], 1);
  ASSERT_EQ(j["metrics"].size(), 1u);
  EXPECT_EQ(j["metrics"][0]["metric"], "memory.total_bytes");
  EXPECT_EQ(j["metrics"][0]["verdict"], "regressed");
  EXPECT_THAT(j["metrics"][0]["relative"].get<double>(), DoubleEq(0.1));
}

// ---------------------------------------------------------------------------- simulate
TEST(CompareCommand, LowerMfuAndThroughputRegress) {
  std::string a =
      WriteTemp("sim_base.json", R"({"step_time_s": 2.0, "mfu": 0.5, "tokens_per_second": 1000})");
  // 5% slower: step time up 5%, MFU and throughput down ~4.8%.
  std::string b = WriteTemp("sim_cur.json",
                            R"({"step_time_s": 2.1, "mfu": 0.47619, "tokens_per_second": 952.38})");
  Outcome r = Compare({a, b});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, HasSubstr("3 regressed"));
  // And the other way round everything improved.
  Outcome back = Compare({b, a});
  EXPECT_EQ(back.code, kExitOk);
  EXPECT_THAT(back.out, HasSubstr("0 regressed, 3 improved"));
}

// ---------------------------------------------------------------------------- sweeps
TEST(CompareCommand, SweepPointsMatchByTheirValuesNotTheirOrder) {
  std::string a = WriteTemp("sw_a.json", SweepJson({"--vary", "cluster.nodes=1,2,4"}));
  std::string b = WriteTemp("sw_b.json", SweepJson({"--vary", "cluster.nodes=4,2,1"}));
  Outcome r = Compare({a, b});
  EXPECT_EQ(r.code, kExitOk) << r.out;
  EXPECT_THAT(r.out, HasSubstr("0 regressed, 0 improved, 0 changed"));
  EXPECT_THAT(r.out, HasSubstr("0 removed, 0 added"));
}

TEST(CompareCommand, FlagsAPlantedRegressionInOneSweepPoint) {
  nlohmann::ordered_json base =
      nlohmann::ordered_json::parse(SweepJson({"--vary", "cluster.nodes=1,2"}));
  nlohmann::ordered_json cur = base;
  // Point [cluster.nodes=2]: ZeRO-3 at 16 GPUs, 16Ψ/16 = 7.5e9 bytes; plant 8e9.
  ASSERT_EQ(base["points"][1]["memory_total_bytes"], 7'500'000'000);
  cur["points"][1]["memory_total_bytes"] = 8'000'000'000;
  Outcome r =
      Compare({WriteTemp("swp_base.json", base.dump(2)), WriteTemp("swp_cur.json", cur.dump(2))});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, HasSubstr("[cluster.nodes=2] memory_total_bytes"));
  EXPECT_THAT(r.out, Not(HasSubstr("[cluster.nodes=1] memory_total_bytes")));
}

TEST(CompareCommand, APointThatStartsFailingRegresses) {
  nlohmann::ordered_json base =
      nlohmann::ordered_json::parse(SweepJson({"--vary", "cluster.nodes=1,2"}));
  nlohmann::ordered_json cur = base;
  cur["points"][0]["status"] = "error";
  cur["points"][0]["error"] = "planted";
  Outcome r =
      Compare({WriteTemp("swf_base.json", base.dump(2)), WriteTemp("swf_cur.json", cur.dump(2))});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.out, HasSubstr("[cluster.nodes=1] ok"));
}

// ---------------------------------------------------------------------------- bad input
// Google Benchmark JSON as `--benchmark_out` writes it: one run of BM_Step.
std::string BenchmarkJson(double cpu_time_ms, double items_per_second) {
  return fmt::format(R"({{"context": {{"num_cpus": 2}}, "benchmarks": [
    {{"name": "BM_Step", "run_type": "iteration", "iterations": 10, "real_time": {0},
      "cpu_time": {0}, "time_unit": "ms", "items_per_second": {1}}}]}})",
                     cpu_time_ms, items_per_second);
}

TEST(CompareCommand, GoogleBenchmarkResultsCompareByName) {
  // 40 ms -> 50 ms is +25% time and 25 -> 20 items/s is -20% throughput: both regress at a
  // 10% threshold; 40 -> 41 ms (+2.5%) is within it.
  std::string base = WriteTemp("bench-base.json", BenchmarkJson(40, 25));
  std::string slower = WriteTemp("bench-slower.json", BenchmarkJson(50, 20));
  std::string noise = WriteTemp("bench-noise.json", BenchmarkJson(41, 24.5));
  Outcome regressed = Compare({base, slower, "--threshold", "10%"});
  EXPECT_EQ(regressed.code, 1) << regressed.err;
  EXPECT_THAT(regressed.out, HasSubstr("BM_Step cpu_time"));
  EXPECT_THAT(regressed.out, HasSubstr("3 regressed"));  // real_time, cpu_time, items/s
  Outcome within = Compare({base, noise, "--threshold", "10%"});
  EXPECT_EQ(within.code, 0) << within.out;
  Outcome faster = Compare({slower, base, "--threshold", "10%"});
  EXPECT_EQ(faster.code, 0) << faster.out;
  EXPECT_THAT(faster.out, HasSubstr("3 improved"));
}

TEST(CompareCommand, DifferentKindsOfResultAreBadInput) {
  std::string a = WriteTemp("kind_analyze.json", AnalyzeJson().dump(2));
  std::string b = WriteTemp("kind_sweep.json", SweepJson({"--vary", "cluster.nodes=1"}));
  Outcome r = Compare({a, b});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("same command"));
}

TEST(CompareCommand, UnreadableOrInvalidFilesAreBadInput) {
  std::string good = WriteTemp("good.json", AnalyzeJson().dump(2));
  EXPECT_EQ(Compare({good, "/nonexistent.json"}).code, kExitBadInput);
  EXPECT_EQ(Compare({good, WriteTemp("bad.json", "{ not json")}).code, kExitBadInput);
  EXPECT_EQ(Compare({good, WriteTemp("other.json", R"({"hello": 1})")}).code, kExitBadInput);
  EXPECT_EQ(Compare({good}).code, kExitBadInput);
  EXPECT_EQ(Compare({good, good, "--threshold", "2"}).code, kExitBadInput);
  EXPECT_EQ(Compare({good, good, "--format", "xml"}).code, kExitBadInput);
}

}  // namespace
}  // namespace placesim::sim
