// `placesim simulate --trace FILE` streams the trace into a temporary next to FILE and renames it
// over FILE only when the run succeeded: a failed simulation leaves no partial file and keeps an
// existing FILE as it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fresh folder private to the running test.
fs::path TestDir() {
  const fs::path dir = cli_test::TempPath("dir");
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

std::string Read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A scenario that loads but fails in the simulation, after the trace file was opened: 1e7
// micro-batches exceed the schedule's op limit.
cli_test::Outcome FailingSimulate(const fs::path& trace) {
  return cli_test::RunCommand(
      &RunCli, {"simulate", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"), "--set",
                "training.global_batch=80000000", "--trace", trace.string()});
}

TEST(SimulateTrace, AFailedRunWritesNoFile) {
  const fs::path dir = TestDir();
  const cli_test::Outcome r = FailingSimulate(dir / "trace.json");
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("10000000 micro-batches"));
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(SimulateTrace, AFailedRunKeepsAnExistingFileAsItWas) {
  const fs::path dir = TestDir();
  const fs::path trace = dir / "trace.json";
  std::ofstream(trace, std::ios::binary) << "the previous trace";
  const cli_test::Outcome r = FailingSimulate(trace);
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(Read(trace), "the previous trace");
  EXPECT_THAT(Entries(dir), ElementsAre("trace.json"));
}

TEST(SimulateTrace, ASuccessfulRunReplacesTheFileAndLeavesNothingElse) {
  const fs::path dir = TestDir();
  const fs::path trace = dir / "trace.json";
  std::ofstream(trace, std::ios::binary) << "the previous trace";
  const cli_test::Outcome r = cli_test::RunCommand(
      &RunCli,
      {"simulate", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"), "--trace", trace.string()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string text = Read(trace);
  EXPECT_THAT(text, ::testing::StartsWith("{\"traceEvents\":["));
  EXPECT_THAT(text, ::testing::EndsWith("],\"displayTimeUnit\":\"ns\"}\n"));
  EXPECT_THAT(Entries(dir), ElementsAre("trace.json"));
}

TEST(SimulateTrace, AMissingFolderIsBadInputBeforeTheRun) {
  const fs::path trace = TestDir() / "missing" / "trace.json";
  const cli_test::Outcome r = cli_test::RunCommand(
      &RunCli,
      {"simulate", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"), "--trace", trace.string()});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("placesim simulate --trace: cannot write"));
  EXPECT_FALSE(fs::exists(trace.parent_path()));
}

}  // namespace
}  // namespace placesim::sim
