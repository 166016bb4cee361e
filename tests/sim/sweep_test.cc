// Tests of `placesim sweep` and `placesim merge`, driven in-process through RunSweep and
// RunMerge: --vary parsing and its errors, the cartesian product and its order, ranges,
// identical output for any --jobs, and shards merged back into the unsharded bytes.
#include "sim/cli/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using cli_test::Example;
using cli_test::Outcome;
using cli_test::RunCommand;
using cli_test::WriteTemp;

Outcome Sweep(const std::vector<std::string>& args) { return RunCommand(&RunSweep, args); }
Outcome Merge(const std::vector<std::string>& args) { return RunCommand(&RunMerge, args); }

// A 2-layer GPT on 2 H100s with ZeRO-3: small enough that a step simulates in milliseconds.
constexpr const char* kTinyGpt = R"pb(
  name: "tiny-gpt"
  cluster {
    node_preset: "DGX-H100"
    node { gpus: 2 pcie_switches: 1 }
    nodes: 1
  }
  model { layers: 2 hidden: 512 heads: 8 vocab: 1024 seq_len: 512 }
  training {
    precision: PRECISION_BF16_MIXED
    optimizer: OPTIMIZER_ADAM
    micro_batch: 4
    global_batch: 16
  }
  strategy { preset: "zero3" }
)pb";

// ---------------------------------------------------------------------------- validation
TEST(SweepCommand, UnknownFieldListsTheValidNamesAndRunsNothing) {
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--vary", "cluster.nodez=1,2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("nodez"));
  EXPECT_THAT(r.err, HasSubstr("valid:"));
  EXPECT_THAT(r.err, HasSubstr("nodes"));
}

TEST(SweepCommand, ReportsEveryBadValueAtOnce) {
  // A bad enum name and an integer out of range, on two different --vary flags.
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--vary", "training.recompute=full,bogus",
                     "--vary", "cluster.nodes=1,x"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("\"bogus\": unknown value; valid:"));
  EXPECT_THAT(r.err, HasSubstr("\"x\""));
}

TEST(SweepCommand, BadRangesEmptyListsAndBadValuesAreReportedTogether) {
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--vary", "cluster.nodes=1..", "--vary",
                     "strategy.tp=", "--vary", "training.recompute=bogus", "--shard", "0/2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("ranges are a..b"));
  EXPECT_THAT(r.err, HasSubstr("strategy.tp: the list of values is empty"));
  EXPECT_THAT(r.err, HasSubstr("\"bogus\": unknown value; valid:"));
  EXPECT_THAT(r.err, HasSubstr("--shard \"0/2\""));
}

TEST(SweepCommand, NeedsAtLeastOneVary) {
  Outcome r = Sweep({Example("zero-7.5b.textproto")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("at least one --vary"));
}

TEST(SweepCommand, RefusesTheSameFieldVariedTwice) {
  Outcome r = Sweep(
      {Example("zero-7.5b.textproto"), "--vary", "cluster.nodes=1", "--vary", "cluster.nodes=2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("varied twice"));
}

TEST(SweepCommand, BadFlagsAreBadInput) {
  const std::string s = Example("zero-7.5b.textproto");
  EXPECT_EQ(Sweep({s, "--vary", "cluster.nodes=1", "--format", "xml"}).code, kExitBadInput);
  EXPECT_EQ(Sweep({s, "--vary", "cluster.nodes=1", "--mode", "guess"}).code, kExitBadInput);
  EXPECT_EQ(Sweep({s, "--vary", "cluster.nodes=1", "--shard", "3/2"}).code, kExitBadInput);
  EXPECT_EQ(Sweep({s, "--vary", "cluster.nodes=1", "--jobs", "-1"}).code, kExitBadInput);
  EXPECT_EQ(Sweep({s, "--vary", "cluster.nodes=1", "--set", "cluster.nope=1"}).code, kExitBadInput);
  EXPECT_EQ(Sweep({"/nonexistent.textproto", "--vary", "cluster.nodes=1"}).code, kExitBadInput);
}

// ---------------------------------------------------------------------------- results
TEST(SweepCommand, RunsTheCartesianProductInNestedLoopOrder) {
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--vary", "strategy.preset=ddp,zero1,zero3",
                     "--vary", "cluster.nodes=1,2", "--format", "json", "--jobs", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  // 3 presets x 2 node counts; the first --vary is the outer loop.
  ASSERT_EQ(j["total_points"], 6);
  ASSERT_EQ(j["points"].size(), 6u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"ddp", "1"}, {"ddp", "2"}, {"zero1", "1"}, {"zero1", "2"}, {"zero3", "1"}, {"zero3", "2"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& p = j["points"][i];
    EXPECT_EQ(p["index"], i);
    EXPECT_EQ(p["values"]["strategy.preset"], expected[i].first);
    EXPECT_EQ(p["values"]["cluster.nodes"], expected[i].second);
    EXPECT_EQ(p["status"], "ok") << p["error"];
  }
}

TEST(SweepCommand, ReproducesZeroOneMemoryAndTrafficAtEightAndSixteenGpus) {
  // ZeRO-1 on Ψ = 7.5e9 (bf16 + Adam, K = 12), N GPUs (8 per node):
  //   memory 4Ψ + 12Ψ/N:  N = 8:  30e9 + 11.25e9  = 41.25e9;  N = 16: 30e9 + 5.625e9 = 35.625e9
  //   traffic: reduce-scatter of 2Ψ gradients plus all-gather of 2Ψ parameters,
  //            2 (N-1)/N 2Ψ:  N = 8: 26.25e9;  N = 16: 28.125e9
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--set", "strategy.preset=zero1", "--vary",
                     "cluster.nodes=1,2", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][0]["memory_total_bytes"], 41'250'000'000);
  EXPECT_EQ(j["points"][1]["memory_total_bytes"], 35'625'000'000);
  EXPECT_EQ(j["points"][0]["comm_bytes_per_device_per_step"], 26'250'000'000);
  EXPECT_EQ(j["points"][1]["comm_bytes_per_device_per_step"], 28'125'000'000);
  EXPECT_EQ(j["points"][0]["fits"], true);
  EXPECT_EQ(j["points"][0]["correctness_ok"], true);
}

TEST(SweepCommand, GeometricRangeMakesOneRowPerValue) {
  // 1..64:x2 is 7 node counts: a header and 7 rows of CSV.
  Outcome r = Sweep(
      {Example("zero-7.5b.textproto"), "--vary", "cluster.nodes=1..64:x2", "--format", "csv"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0],
            "index,cluster.nodes,status,fits,memory_total_bytes,comm_bytes_per_device_per_step,"
            "correctness_ok,error");
  // ZeRO-3 (the file's strategy) at 64 nodes x 8 GPUs: each device holds ceil(Ψ/512) =
  // ceil(14,648,437.5) = 14,648,438 parameters' worth of the 16 bytes per parameter, so
  // 16 x 14,648,438 = 234,375,008 bytes (16Ψ/512 = 234,375,000 rounded up per shard).
  EXPECT_THAT(rows[7], HasSubstr("6,64,ok,true,234375008,"));
}

TEST(SweepCommand, AFailingPointGetsAnErrorRowAndTheSweepGoesOn) {
  // tp = 3 does not divide 64 GPUs: that point cannot resolve; tp = 1 and 2 can.
  Outcome r =
      Sweep({Example("zero-7.5b.textproto"), "--vary", "strategy.tp=1,3,2", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["points"][0]["status"], "ok");
  EXPECT_EQ(j["points"][1]["status"], "error");
  EXPECT_FALSE(j["points"][1]["error"].get<std::string>().empty());
  EXPECT_TRUE(j["points"][1]["memory_total_bytes"].is_null());
  EXPECT_EQ(j["points"][2]["status"], "ok");
  EXPECT_THAT(r.err, HasSubstr("1 of 3 points failed"));
}

TEST(SweepCommand, TableHasOneLinePerPointWithItsError) {
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--vary", "strategy.tp=1,3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_THAT(rows[0], HasSubstr("strategy.tp"));
  EXPECT_THAT(rows[0], HasSubstr("memory/device"));
  EXPECT_THAT(rows[1], HasSubstr("ok"));
  EXPECT_THAT(rows[2], HasSubstr("error"));
}

TEST(SweepCommand, SimulateModeAddsStepTimeMfuAndThroughput) {
  std::string path = WriteTemp("sweep_tiny_gpt.textproto", kTinyGpt);
  Outcome r = Sweep({path, "--mode", "simulate", "--vary", "strategy.preset=zero3,ddp", "--format",
                     "json", "--network", "analytic"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  for (const auto& p : j["points"]) {
    ASSERT_EQ(p["status"], "ok") << p["error"];
    EXPECT_GT(p["step_time_s"].get<double>(), 0);
    EXPECT_GT(p["mfu"].get<double>(), 0);
    EXPECT_GT(p["tokens_per_second"].get<double>(), 0);
    EXPECT_GT(p["sim_peak_memory_bytes"].get<int64_t>(), 0);
    EXPECT_GE(p["exposed_comm_s"].get<double>(), 0);
  }
  // ZeRO-3 keeps 16Ψ/2 of model state per GPU against DDP's 16Ψ: less simulated peak.
  EXPECT_LT(j["points"][0]["sim_peak_memory_bytes"], j["points"][1]["sim_peak_memory_bytes"]);
}

TEST(SweepCommand, ASimulatorRefusalIsARowWithTheAnalyticColumns) {
  // zero-7.5b has a bare parameter count: analyze works, simulate needs an architecture.
  Outcome r = Sweep({Example("zero-7.5b.textproto"), "--mode", "simulate", "--vary",
                     "strategy.preset=zero1,zero3", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  for (const auto& p : j["points"]) {
    EXPECT_EQ(p["status"], "error");
    EXPECT_THAT(p["error"].get<std::string>(), HasSubstr("simulate:"));
    EXPECT_TRUE(p["memory_total_bytes"].is_number());
    EXPECT_TRUE(p["step_time_s"].is_null());
  }
  EXPECT_THAT(r.err, HasSubstr("2 of 2 points failed"));
}

// ---------------------------------------------------------------------------- determinism
TEST(SweepCommand, OutputIsIdenticalForAnyNumberOfJobs) {
  for (const char* format : {"json", "table", "csv"}) {
    std::vector<std::string> args = {Example("zero-7.5b.textproto"),
                                     "--vary",
                                     "strategy.preset=ddp,zero1,zero2,zero3",
                                     "--vary",
                                     "cluster.nodes=1..32:x2",
                                     "--format",
                                     format};
    std::vector<std::string> one = args, two = args, eight = args;
    one.insert(one.end(), {"--jobs", "1"});
    two.insert(two.end(), {"--jobs", "2"});
    eight.insert(eight.end(), {"--jobs", "8"});
    Outcome a = Sweep(one), b = Sweep(two), c = Sweep(eight);
    ASSERT_EQ(a.code, kExitOk) << a.err;
    EXPECT_EQ(a.out, b.out) << format;
    EXPECT_EQ(a.out, c.out) << format;
  }
}

class ShardTest : public ::testing::Test {
 protected:
  std::vector<std::string> Args(const std::string& format) {
    return {Example("zero-7.5b.textproto"),
            "--vary",
            "strategy.preset=ddp,zero1,zero2,zero3",
            "--vary",
            "cluster.nodes=1,2,3,4,8",
            "--format",
            format};
  }
  // Runs shard k/n as JSON into a temporary file and returns its path.
  std::string Shard(int k, int n, const std::string& name, const std::string& extra_vary = "") {
    std::vector<std::string> args = Args("json");
    if (!extra_vary.empty())
      args = {Example("zero-7.5b.textproto"), "--vary", extra_vary, "--format", "json"};
    args.insert(args.end(), {"--shard", std::to_string(k) + "/" + std::to_string(n)});
    Outcome r = Sweep(args);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return WriteTemp(name, r.out);
  }
};

TEST_F(ShardTest, ShardsAreDisjointRoundRobinSlices) {
  // 20 points in 3 shards: shard 2 holds 1, 4, 7, ..., 19 (i % 3 == 1), 7 points.
  std::string path = Shard(2, 3, "rr_2of3.json");
  std::ifstream f(path);
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["total_points"], 20);
  EXPECT_EQ(j["shard"]["index"], 2);
  EXPECT_EQ(j["shard"]["count"], 3);
  ASSERT_EQ(j["points"].size(), 7u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(j["points"][i]["index"], 3 * i + 1);
}

TEST_F(ShardTest, MergedShardsEqualTheUnshardedRunByteForByte) {
  Outcome whole = Sweep(Args("json"));
  ASSERT_EQ(whole.code, kExitOk) << whole.err;
  // Given in any order.
  std::vector<std::string> files = {Shard(3, 3, "m_3of3.json"), Shard(1, 3, "m_1of3.json"),
                                    Shard(2, 3, "m_2of3.json")};
  Outcome merged = Merge(files);
  ASSERT_EQ(merged.code, kExitOk) << merged.err;
  EXPECT_EQ(merged.out, whole.out);

  // And the table a merge prints is the unsharded table.
  std::vector<std::string> as_table = files;
  as_table.insert(as_table.end(), {"--format", "table"});
  Outcome table = Merge(as_table);
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_EQ(table.out, Sweep(Args("table")).out);
}

TEST_F(ShardTest, MergeRefusesOverlappingShards) {
  std::string a = Shard(1, 2, "o_1of2.json");
  std::string b = Shard(2, 2, "o_2of2.json");
  Outcome r = Merge({a, b, a});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("overlaps"));
  EXPECT_EQ(r.out, "");
}

TEST_F(ShardTest, MergeRefusesMissingShards) {
  Outcome r = Merge({Shard(1, 3, "x_1of3.json"), Shard(3, 3, "x_3of3.json")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("missing shards: 2/3"));
}

TEST_F(ShardTest, MergeRefusesShardsOfDifferentSweeps) {
  // Same shape (2 shards) but another --vary list: the fingerprints differ.
  std::string a = Shard(1, 2, "d_1of2.json");
  std::string b = Shard(2, 2, "d_2of2.json", "cluster.nodes=1,2,3");
  Outcome r = Merge({a, b});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("different sweep"));
}

TEST_F(ShardTest, MergeRefusesFilesThatAreNotSweeps) {
  std::string junk = WriteTemp("junk.json", "{\"step_time_s\": 1}");
  std::string broken = WriteTemp("broken.json", "{");
  Outcome r = Merge({junk, broken, "/nonexistent.json"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("not the JSON of `placesim sweep"));
  EXPECT_THAT(r.err, HasSubstr("not valid JSON"));
  EXPECT_THAT(r.err, HasSubstr("cannot read"));
  EXPECT_EQ(Merge({}).code, kExitBadInput);
}

TEST(SweepCommand, HelpPrintsTheOptions) {
  Outcome r = Sweep({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("--vary"));
  EXPECT_THAT(r.out, HasSubstr("--shard"));
  EXPECT_THAT(r.err, Not(HasSubstr("error")));
}

}  // namespace
}  // namespace placesim::sim
