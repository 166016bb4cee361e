// `placesim replay` and `simulate --chakra-out` in-process: output, JSON, the trace, exit code
// 2 for bad traces, and the export replayed by the command.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "chakra_test_util.h"
#include "cli_test_util.h"
#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

using chakra::test::AstraScenario;
using chakra::test::SourcePath;
using cli_test::Outcome;
using cli_test::RunCommand;
using cli_test::TempPath;
using ::testing::HasSubstr;

Outcome RunPlacesim(const std::vector<std::string>& args) { return RunCommand(&RunCli, args); }

const std::string kTiny = "tests/data/chakra/tiny-gpt-zero3-2gpu";

TEST(ChakraCli, ReplayPrintsStepTimeRanksAndLinks) {
  Outcome r = RunPlacesim({"replay", SourcePath(kTiny),
                           SourcePath("examples/tiny-gpt-zero3-2gpu.textproto"), "--comm-groups",
                           SourcePath(kTiny + ".json")});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("step time"));
  EXPECT_THAT(r.out, HasSubstr("exposed ms"));
  EXPECT_THAT(r.out, HasSubstr("nvlink"));
}

TEST(ChakraCli, ReplayJsonAndTraceAreDeterministic) {
  const std::vector<std::string> args = {"replay",
                                         SourcePath(kTiny),
                                         SourcePath("examples/tiny-gpt-zero3-2gpu.textproto"),
                                         "--comm-groups",
                                         SourcePath(kTiny + ".json"),
                                         "--format",
                                         "json",
                                         "--trace",
                                         TempPath("t.json")};
  Outcome a = RunPlacesim(args);
  ASSERT_EQ(a.code, kExitOk) << a.err;
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_EQ(j["ranks"].size(), 2u);
  std::ifstream in(TempPath("t.json"));
  const nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_FALSE(trace["traceEvents"].empty());
  EXPECT_EQ(RunPlacesim(args).out, a.out);
}

TEST(ChakraCli, SimulateChakraOutThenReplayGivesTheSameStepTime) {
  const std::string prefix = TempPath("astra");
  Outcome sim =
      RunPlacesim({"simulate", AstraScenario(), "--chakra-out", prefix, "--format", "json", "--set",
                   "simulation.protocol_cost=false"});  // the replay has no protocol cost
  ASSERT_EQ(sim.code, kExitOk) << sim.err;
  for (int r = 0; r < 8; ++r) {
    EXPECT_TRUE(std::filesystem::exists(prefix + "." + std::to_string(r) + ".et")) << r;
  }
  Outcome rep = RunPlacesim(
      {"replay", prefix, AstraScenario(), "--comm-groups", prefix + ".json", "--format", "json"});
  ASSERT_EQ(rep.code, kExitOk) << rep.err;
  const double want = nlohmann::json::parse(sim.out)["step_time_s"].get<double>();
  EXPECT_NEAR(nlohmann::json::parse(rep.out)["step_time_s"].get<double>(), want, 0.01 * want);
}

TEST(ChakraCli, ChakraOutTraceRanksWritesOnlyThose) {
  const std::string prefix = TempPath("some");
  for (int r = 0; r < 8; ++r) std::filesystem::remove(prefix + "." + std::to_string(r) + ".et");
  Outcome sim =
      RunPlacesim({"simulate", AstraScenario(), "--chakra-out", prefix, "--trace-ranks", "0,5"});
  ASSERT_EQ(sim.code, kExitOk) << sim.err;
  EXPECT_TRUE(std::filesystem::exists(prefix + ".0.et"));
  EXPECT_TRUE(std::filesystem::exists(prefix + ".5.et"));
  EXPECT_FALSE(std::filesystem::exists(prefix + ".1.et"));
  EXPECT_TRUE(std::filesystem::exists(prefix + ".json"));
}

TEST(ChakraCli, BadTraceExitsTwoNamingRankNodeAndField) {
  const std::string prefix = TempPath("bad");
  std::filesystem::copy_file(SourcePath(kTiny + ".0.et"), prefix + ".0.et",
                             std::filesystem::copy_options::overwrite_existing);
  // Rank 1: the shipped file cut short.
  std::ifstream in(SourcePath(kTiny + ".1.et"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  chakra::test::WriteBytes(prefix + ".1.et", bytes.substr(0, bytes.size() - 5));
  Outcome r = RunPlacesim({"replay", prefix, SourcePath("examples/tiny-gpt-zero3-2gpu.textproto"),
                           "--comm-groups", SourcePath(kTiny + ".json")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("placesim replay: rank 1: truncated file"));
  // A collective naming a group with no groups file.
  Outcome g = RunPlacesim(
      {"replay", SourcePath(kTiny), SourcePath("examples/tiny-gpt-zero3-2gpu.textproto")});
  EXPECT_EQ(g.code, kExitBadInput);
  EXPECT_THAT(g.err, HasSubstr("comm_group: group 1 is not in the communicator-groups file"));
}

TEST(ChakraCli, HelpListsReplayAndChakraOut) {
  EXPECT_THAT(RunPlacesim({"help"}).out, HasSubstr("replay TRACE_PREFIX SCENARIO"));
  EXPECT_THAT(RunPlacesim({"help", "replay"}).out, HasSubstr("--comm-groups"));
  EXPECT_THAT(RunPlacesim({"simulate", "--help"}).out, HasSubstr("--chakra-out"));
}

}  // namespace
}  // namespace placesim::sim
