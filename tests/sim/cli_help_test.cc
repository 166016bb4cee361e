// Tests of the command line's help and forgiveness: per-command help that shows the real
// options (exit 0), "did you mean" for misspelled commands, flags, presets and fields (still
// exit 2 with the allowed values), case variants of preset names, and the version.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"
#include "placesim/version.h"
#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using cli_test::Example;
using cli_test::Outcome;
using cli_test::RunCommand;

Outcome RunPlacesim(const std::vector<std::string>& args) { return RunCommand(&RunCli, args); }

TEST(CliHelp, HelpCommandShowsTheCommandsRealOptions) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"help", "simulate"}, {"simulate", "--help"}}) {
    Outcome r = RunPlacesim(args);
    EXPECT_EQ(r.code, kExitOk) << args[0];
    // The options Simulate declares, with their descriptions.
    EXPECT_THAT(r.out, HasSubstr("--trace-ranks"));
    EXPECT_THAT(r.out, HasSubstr("--network"));
    EXPECT_THAT(r.out, HasSubstr("placesim simulate SCENARIO"));
  }
  EXPECT_EQ(RunPlacesim({"help", "simulate"}).out, RunPlacesim({"simulate", "--help"}).out);
}

TEST(CliHelp, BareHelpIsTheOverview) {
  Outcome r = RunPlacesim({"help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("Commands:"));
  EXPECT_THAT(r.out, HasSubstr("placesim help COMMAND"));
}

TEST(CliHelp, HelpOfAnUnknownCommandSuggests) {
  Outcome r = RunPlacesim({"help", "simulte"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("did you mean \"simulate\"?"));
}

TEST(CliHelp, MisspelledCommandSuggestsTheClosest) {
  // "simulte" is one insertion from "simulate" (threshold 2 for 7 characters).
  Outcome r = RunPlacesim({"simulte", Example("llama2-7b-ddp.textproto")});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"simulte\"; valid: analyze, simulate"));
  EXPECT_THAT(r.err, HasSubstr("did you mean \"simulate\"?"));
  // Nothing close: the list alone.
  EXPECT_THAT(RunPlacesim({"frobnicate"}).err, Not(HasSubstr("did you mean")));
}

TEST(CliHelp, MisspelledFlagSuggestsTheClosest) {
  Outcome r = RunPlacesim({"simulate", Example("llama2-7b-ddp.textproto"), "--tracee", "x.json"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--tracee"));
  EXPECT_THAT(r.err, HasSubstr("did you mean \"--trace\"?"));
}

TEST(CliHelp, MisspelledFieldInSetSuggestsTheClosest) {
  Outcome r = RunPlacesim(
      {"analyze", Example("llama2-7b-ddp.textproto"), "--set", "training.micro_bach=2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("unknown field \"micro_bach\""));
  EXPECT_THAT(r.err, HasSubstr("valid: "));
  EXPECT_THAT(r.err, HasSubstr("did you mean \"micro_batch\"?"));
}

TEST(CliHelp, MisspelledPresetSuggestsTheClosest) {
  Outcome r = RunPlacesim(
      {"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--set", "model.preset=llama3-07b"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("model.preset: \"llama3-07b\": unknown model preset; valid: "));
  EXPECT_THAT(r.err, HasSubstr("did you mean \"llama3-70b\"?"));

  r = RunPlacesim(
      {"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--set", "strategy.preset=zero4"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("did you mean \"zero1\"?"));  // the first at distance 1
}

TEST(CliHelp, PresetNamesAcceptAnyCase) {
  Outcome lower = RunPlacesim({"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--format",
                               "json", "--set", "strategy.preset=zero3"});
  Outcome upper = RunPlacesim({"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--format",
                               "json", "--set", "strategy.preset=ZERO3", "--set",
                               "model.preset=Llama3-70B", "--set", "cluster.node_preset=dgx-h100"});
  ASSERT_EQ(lower.code, kExitOk) << lower.err;
  ASSERT_EQ(upper.code, kExitOk) << upper.err;
  // The case variant resolves to the very same preset: the same plan, byte for byte.
  EXPECT_EQ(lower.out, upper.out);
}

TEST(CliHelp, VersionComesFromTheProject) {
  Outcome r = RunPlacesim({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.out, std::string("placesim ") + kPlacesimVersion + "\n");
}

}  // namespace
}  // namespace placesim::sim
