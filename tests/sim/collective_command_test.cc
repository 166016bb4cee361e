// `placesim collective`: its input checks, its output, and the calibration points of
// docs/calibration.md ("Collectives") that it holds against published nccl-tests figures.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/collective.h"

namespace placesim::sim {
namespace {

using cli_test::Outcome;
using cli_test::RunCommand;

std::string Calibration(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/tests/data/calibration/" + name;
}

TEST(CollectiveCommand, BadInputExitsTwoNamingTheFlag) {
  const std::string s = Calibration("p4de-2node.textproto");
  Outcome none = RunCommand(RunCollective, {s});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--op is required"), std::string::npos) << none.err;
  Outcome op = RunCommand(RunCollective, {s, "--op", "broadcast"});
  EXPECT_EQ(op.code, 2);
  EXPECT_NE(op.err.find("--op"), std::string::npos) << op.err;
  Outcome sizes = RunCommand(RunCollective, {s, "--op", "all-reduce", "--sizes", "8B..4B:x2"});
  EXPECT_EQ(sizes.code, 2);
  EXPECT_NE(sizes.err.find("--sizes"), std::string::npos) << sizes.err;
  Outcome gpus = RunCommand(RunCollective, {s, "--op", "all-reduce", "--gpus", "3"});
  EXPECT_EQ(gpus.code, 2);
  EXPECT_NE(gpus.err.find("--gpus"), std::string::npos) << gpus.err;
  Outcome both =
      RunCommand(RunCollective, {s, "--op", "all-reduce", "--gpus", "8", "--group", "dp"});
  EXPECT_EQ(both.code, 2);
}

TEST(CollectiveCommand, PrintsOneRowPerSizeWithNcclTestsBusBandwidth) {
  Outcome r = RunCommand(RunCollective,
                         {Calibration("p4de-2node.textproto"), "--op", "all-gather", "--gpus", "8",
                          "--sizes", "1MiB..4MiB:x2", "--algorithm", "auto", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);  // 1, 2 and 4 MiB
  for (const auto& row : j["rows"]) {
    // nccl-tests: algbw = size / time; all-gather busbw = algbw x (n - 1) / n = 7/8 algbw.
    const double algbw = row["size_bytes"].get<double>() / row["time_us"].get<double>() / 1e3;
    EXPECT_NEAR(row["algbw_gb_per_s"].get<double>(), algbw, 1e-9 * algbw);
    EXPECT_NEAR(row["busbw_gb_per_s"].get<double>(), algbw * 7 / 8, 1e-9 * algbw);
  }
}

// Published: aws-samples/awsome-distributed-training commit 0162aacd,
// micro-benchmarks/nccl-tests/README.md, "Results" (docs/data/nccl_tests_all_reduce_p5_2node.csv):
// all_reduce_perf on 2x p5.48xlarge (16 H100s, 3200 Gb/s EFA per node), out-of-place busbw
// 1 GiB 436.95, 2 GiB 443.72, 4 GiB 465.87, 8 GiB 479.28, 16 GiB 487.09 GB/s. There the
// pipelined hierarchical all-reduce is NVLink-bound, 2(N-1)/N / (2(L-1)/L) x 450 GB/s =
// 15/8 / (14/8) x 450 = 482 GB/s, which the published curve approaches; docs/calibration.md
// lists every size, including those it does not hold.
TEST(CollectiveCommand, AllReduceOnTwoP5MatchesPublishedBusBandwidthWithinTenPercent) {
  Outcome r =
      RunCommand(RunCollective, {Calibration("p5-2node.textproto"), "--op", "all-reduce", "--sizes",
                                 "1GiB..16GiB:x2", "--algorithm", "auto", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::vector<double> published = {436.95, 443.72, 465.87, 479.28, 487.09};
  ASSERT_EQ(j["rows"].size(), published.size());
  for (size_t k = 0; k < published.size(); ++k) {
    const double busbw = j["rows"][k]["busbw_gb_per_s"].get<double>();
    EXPECT_NEAR(busbw, published[k], 0.10 * published[k]) << "size " << j["rows"][k]["size_bytes"];
  }
}

// The published time of every size from `from` to `to` (bytes) in a docs/data nccl-tests CSV
// (op,gpus,size_bytes,time_us,busbw_gb_per_s after its # comments and header).
std::vector<std::pair<int64_t, double>> PublishedTimes(const std::string& csv, int64_t from,
                                                       int64_t to) {
  std::ifstream in(std::string(PLACESIM_SOURCE_DIR) + "/docs/data/" + csv);
  std::vector<std::pair<int64_t, double>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.starts_with("op,")) continue;
    std::stringstream fields(line);
    std::string op, gpus, size, time;
    std::getline(fields, op, ',');
    std::getline(fields, gpus, ',');
    std::getline(fields, size, ',');
    std::getline(fields, time, ',');
    const int64_t bytes = std::stoll(size);
    if (bytes >= from && bytes <= to) out.emplace_back(bytes, std::stod(time));
  }
  return out;
}

// placesim's all-reduce time on `scenario` is within 10% of every published time of `csv` from
// `from` to `to` bytes.
void ExpectAllReduceWithinTenPercent(const std::string& scenario, const std::string& csv,
                                     int64_t from, int64_t to) {
  const auto published = PublishedTimes(csv, from, to);
  ASSERT_FALSE(published.empty()) << csv;
  for (const auto& [bytes, time_us] : published) {
    Outcome r = RunCommand(
        RunCollective, {Calibration(scenario), "--op", "all-reduce", "--sizes",
                        std::to_string(bytes) + "B", "--algorithm", "auto", "--format", "json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["rows"].size(), 1u);
    EXPECT_NEAR(j["rows"][0]["time_us"].get<double>(), time_us, 0.10 * time_us)
        << scenario << ", " << bytes << " B";
  }
}

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;

// EFA's per-message latency (topology/presets.cc, docs/calibration.md "EFA"): the mean published
// time of 8 B - 1 KiB set each instance's nic_latency, (162.31 - 24.6) / 4 = 34.43 us on p4de
// and (71.135 - 24.6) / 4 = 11.63 us on p5, so those sizes come back at 162.3 and 71.1 us. The
// flat start of each curve beyond them is held out: p4de 2 - 8 KiB (177.6, 169.4, 175.9 us),
// p5 2 - 4 KiB (72.22, 78.58 us).
TEST(CollectiveCommand, SmallAllReducesOnEfaMatchPublishedLatencyWithinTenPercent) {
  ExpectAllReduceWithinTenPercent("p4de-2node.textproto", "nccl_tests_all_reduce_p4de_2node.csv", 8,
                                  8 * kKiB);
  ExpectAllReduceWithinTenPercent("p5-2node.textproto", "nccl_tests_all_reduce_p5_2node.csv", 8,
                                  4 * kKiB);
}

// A check no figure was set from: 2x p4d.24xlarge (aws-samples/aws-efa-eks, README.md "Step 5",
// docs/data/nccl_tests_all_reduce_p4d_2node.csv; NCCL 2.8.3), the same first-generation EFA as
// p4de, whose preset takes p4de's latency. Its flat start, 8 - 256 B, was published at 167.3 -
// 168.6 us; placesim gives p4de's 162.3 us. (Its large sizes are not held: that older NCCL
// reached 32.71 GB/s busbw at 1 GiB, 42% of p4de's 78.35, docs/calibration.md.)
TEST(CollectiveCommand, SmallAllReducesOnTwoP4dMatchTheLatencySetOnP4de) {
  ExpectAllReduceWithinTenPercent("p4d-2node.textproto", "nccl_tests_all_reduce_p4d_2node.csv", 8,
                                  256);
}

// 2x p4de.24xlarge: the pipelined hierarchical all-reduce is NIC-bound, each of the 4 NICs
// carrying the rail traffic of its two GPUs, 2 x 2(M-1)/(ML) S = S/4 per NIC, so busbw =
// 2(N-1)/N x 4 x B_nic = 15/8 x 4 x 83.98 Gb/s / 8 = 78.73 GB/s at large sizes, B_nic = EFA's
// achievable 83.98 Gb/s set from the published 2 GiB point (topology/presets.cc). The published
// sizes it was not set from, 256 MiB - 1 GiB (7201.7, 13552, 26217 us), are held out.
TEST(CollectiveCommand, LargeAllReducesOnTwoP4deAreBoundByEfaBandwidth) {
  Outcome r =
      RunCommand(RunCollective, {Calibration("p4de-2node.textproto"), "--op", "all-reduce",
                                 "--sizes", "2GiB", "--algorithm", "auto", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_NEAR(j["rows"][0]["busbw_gb_per_s"].get<double>(), 78.73, 0.01 * 78.73);
  ExpectAllReduceWithinTenPercent("p4de-2node.textproto", "nccl_tests_all_reduce_p4de_2node.csv",
                                  256 * kMiB, 1 * kGiB);
}

}  // namespace
}  // namespace placesim::sim
