// Tests of the `placesim search` command, driven in-process through RunSearch: only feasible
// rows, the hand-derived best, --fix narrowing and its errors, tier-2 simulation marks, and
// identical output for any --jobs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/commands.h"
#include "sim/cli/search.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "strategies/analyzer.h"
#include "strategies/search.h"
#include "topology/cluster.h"

namespace placesim::sim {
namespace {

using ::testing::HasSubstr;

using cli_test::Outcome;
using cli_test::RunCommand;

Outcome Search(const std::vector<std::string>& args) { return RunCommand(&RunSearch, args); }

// A 4-layer GPT on the 8 GPUs of one DGX-H100 (the same workload as the library's test).
std::string SmallGptScenario() {
  std::string path = cli_test::TempPath("search-small-gpt.textproto");
  std::ofstream(path, std::ios::binary) << R"pb(
    name: "search-small-gpt"
    cluster { node_preset: "DGX-H100" nodes: 1 }
    model { layers: 4 hidden: 512 heads: 8 vocab: 1024 seq_len: 512 }
    training { global_batch: 128 micro_batch: 1 }
    strategy { preset: "ddp" }
  )pb";
  return path;
}

nlohmann::json Json(const Outcome& o) { return nlohmann::json::parse(o.out); }

TEST(SearchCommand, EveryRowFitsAndTheBestIsTheHandDerivedOne) {
  // See strategies' FindsTheHandDerivedBest: ZeRO-1 over 8, mb 16, no recompute, by estimate.
  Outcome o = Search({SmallGptScenario(), "--simulate-top", "0", "--format", "json"});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  nlohmann::json doc = Json(o);
  ASSERT_FALSE(doc["rows"].empty());
  EXPECT_EQ(doc["rows"][0]["strategy"], "zero1 dp8 tp1 pp1 cp1 mb16 recompute=none");
  EXPECT_EQ(doc["rows"][0]["vs_best"], "best");
  EXPECT_EQ(doc["simulated"], 0);
  EXPECT_LE(doc["rows"].size(), 20u);
  for (const auto& row : doc["rows"]) {
    EXPECT_GE(row["headroom_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(row["source"], "estimated");
  }
  EXPECT_THAT(o.err, HasSubstr("candidates/s"));
}

TEST(SearchCommand, SimulatesTheDataParallelRowsOfTheTopK) {
  Outcome o = Search({SmallGptScenario(), "--simulate-top", "3", "--top", "100000", "--format",
                      "json", "--jobs", "2"});
  ASSERT_EQ(o.code, kExitOk) << o.err;
  nlohmann::json doc = Json(o);
  EXPECT_GE(doc["simulated"].get<int64_t>(), 1);
  EXPECT_LE(doc["simulated"].get<int64_t>(), 3);
  int simulated = 0;
  for (const auto& row : doc["rows"]) {
    if (row["source"] == "simulated") {
      ++simulated;
      EXPECT_EQ(row["tp"], 1);
      EXPECT_EQ(row["pp"], 1);
      EXPECT_GT(row["step_time_s"].get<double>(), 0);
    }
  }
  EXPECT_EQ(simulated, doc["simulated"].get<int64_t>());
  // Rows are ranked by the step time they show.
  for (size_t i = 1; i < doc["rows"].size(); ++i) {
    EXPECT_LE(doc["rows"][i - 1]["step_time_s"].get<double>(),
              doc["rows"][i]["step_time_s"].get<double>());
  }
}

TEST(SearchCommand, OutputIsTheSameForOneAndTwoJobs) {
  for (const char* format : {"table", "csv", "json"}) {
    Outcome one =
        Search({SmallGptScenario(), "--simulate-top", "4", "--jobs", "1", "--format", format});
    Outcome two =
        Search({SmallGptScenario(), "--simulate-top", "4", "--jobs", "2", "--format", format});
    ASSERT_EQ(one.code, kExitOk) << one.err;
    EXPECT_EQ(one.out, two.out) << format;
  }
}

TEST(SearchCommand, FixNarrowsTheSpace) {
  Outcome all = Search({SmallGptScenario(), "--simulate-top", "0", "--format", "json"});
  Outcome fixed = Search({SmallGptScenario(), "--simulate-top", "0", "--format", "json", "--fix",
                          "strategy.tp=2", "--fix", "training.recompute=full"});
  ASSERT_EQ(fixed.code, kExitOk) << fixed.err;
  // Keep the parsed document alive: a range-for over a member of a temporary would iterate
  // freed memory (the temporary dies before the loop body runs).
  const auto fixed_json = Json(fixed);
  EXPECT_LT(fixed_json["candidates"].get<int64_t>(), Json(all)["candidates"].get<int64_t>());
  for (const auto& row : fixed_json["rows"]) {
    EXPECT_EQ(row["tp"], 2);
    EXPECT_EQ(row["recompute"], "full");
  }
}

TEST(SearchCommand, NoFeasibleCandidateHasItsOwnExitCodeAndSaysWhy) {
  // 12 * layers * hidden^2 = 12 * 400 * 32768^2 ~ 5.2e12 parameters: their bf16 weights alone
  // (~10 TB) exceed the 8 x 80 GB of one DGX-H100 under any sharding, so nothing is feasible.
  std::string path = cli_test::TempPath("search-too-big.textproto");
  std::ofstream(path, std::ios::binary) << R"pb(
    name: "search-too-big"
    cluster { node_preset: "DGX-H100" nodes: 1 }
    model { layers: 400 hidden: 32768 heads: 256 vocab: 1024 seq_len: 512 }
    training { global_batch: 128 micro_batch: 1 }
    strategy { preset: "ddp" }
    simulation { gradient_bucket_size: "25 MiB" }  # every preset's, as the ranking was derived
  )pb";
  Outcome o = Search({path, "--simulate-top", "0"});
  EXPECT_EQ(o.code, kExitNoFeasibleCandidate) << o.err;
  EXPECT_EQ(o.out, "");
  EXPECT_THAT(o.err, HasSubstr("no candidate fits in memory and is correct"));
}

TEST(SearchCommand, BadFixValuesExitTwoWithTheValidValues) {
  Outcome o = Search({SmallGptScenario(), "--fix", "strategy.tp=3", "--fix",
                      "training.pipeline_schedule=zigzag", "--fix", "strategy.dp"});
  EXPECT_EQ(o.code, kExitBadInput);
  EXPECT_EQ(o.out, "");
  EXPECT_THAT(o.err, HasSubstr("--fix strategy.tp=3: not in the search space; valid: 1, 2, 4, 8"));
  EXPECT_THAT(o.err, HasSubstr("valid: 1f1b, interleaved-1f1b, gpipe"));
  EXPECT_THAT(o.err, HasSubstr("--fix \"strategy.dp\": must be FIELD=VALUE"));
}

TEST(SearchCommand, ExhaustiveSpaceGivesTheSameOutputForOneAndTwoJobs) {
  for (const char* format : {"table", "csv", "json"}) {
    Outcome one = Search({SmallGptScenario(), "--space", "exhaustive", "--simulate-top", "4",
                          "--jobs", "1", "--format", format});
    Outcome two = Search({SmallGptScenario(), "--space", "exhaustive", "--simulate-top", "4",
                          "--jobs", "2", "--format", format});
    ASSERT_EQ(one.code, kExitOk) << one.err;
    EXPECT_EQ(one.out, two.out) << format;
  }
}

TEST(SearchCommand, ExhaustiveSpaceShowsItsKnobsAndTheDefaultDoesNot) {
  Outcome all = Search(
      {SmallGptScenario(), "--space", "exhaustive", "--simulate-top", "0", "--format", "json"});
  Outcome def = Search({SmallGptScenario(), "--simulate-top", "0", "--format", "json"});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  ASSERT_EQ(def.code, kExitOk) << def.err;
  EXPECT_EQ(Json(all)["space"], "exhaustive");
  EXPECT_FALSE(Json(def).contains("space"));
  EXPECT_GT(Json(all)["candidates"].get<int64_t>(), Json(def)["candidates"].get<int64_t>());
  for (const char* key :
       {"flash_attention", "tp_comm_overlap", "reshard_after_forward", "gradient_bucket"}) {
    EXPECT_TRUE(Json(all)["rows"][0].contains(key)) << key;
    EXPECT_FALSE(Json(def)["rows"][0].contains(key)) << key;
  }
  Outcome table =
      Search({SmallGptScenario(), "--space", "exhaustive", "--simulate-top", "0", "--top", "1"});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out, HasSubstr("tp overlap"));
  Outcome csv = Search({SmallGptScenario(), "--space", "exhaustive", "--simulate-top", "0", "--top",
                        "1", "--format", "csv"});
  EXPECT_THAT(csv.out, HasSubstr(",flash_attention,tp_comm_overlap,reshard_after_forward,"
                                 "gradient_bucket,"));
}

TEST(SearchCommand, HeldParametersAreSearchedSimulatedAndShownWhereTheyApply) {
  // The exhaustive space tries FSDP's reshard_after_forward both ways where FSDP gathers its
  // parameters without a pipeline; DeepSpeed's ZeRO-3 rows show the scenario's value (on),
  // rows that cannot hold parameters (nothing gathered, or a pipeline) "-". Pinned to false,
  // the held rows are simulated, as the simulator accepts them without a pipeline.
  Outcome all = Search({SmallGptScenario(), "--space", "exhaustive", "--simulate-top", "0", "--top",
                        "100000", "--format", "json"});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  const nlohmann::json all_doc = Json(all);
  int held = 0, dashes = 0;
  for (const auto& row : all_doc["rows"]) {
    const std::string preset = row["preset"];
    const bool gathers = (preset == "zero3" || preset == "fsdp" || preset == "fsdp-hybrid") &&
                         row["pp"] == 1 && row["dp"].get<int>() * row["cp"].get<int>() > 1;
    if (!gathers) {
      EXPECT_EQ(row["reshard_after_forward"], "-") << row["strategy"];
      ++dashes;
      continue;
    }
    const bool reshard = row["reshard_after_forward"].get<bool>();
    EXPECT_EQ(row["strategy"].get<std::string>().ends_with(" no-reshard"), !reshard);
    if (preset == "zero3") {
      EXPECT_TRUE(reshard) << row["strategy"];
    }
    held += reshard ? 0 : 1;
  }
  EXPECT_GT(held, 0);
  EXPECT_GT(dashes, 0);

  Outcome pinned =
      Search({SmallGptScenario(), "--space", "exhaustive", "--fix", "strategy.preset=fsdp", "--fix",
              "strategy.pp=1", "--fix", "strategy.cp=1", "--fix",
              "simulation.reshard_after_forward=false", "--simulate-top", "3", "--format", "json"});
  ASSERT_EQ(pinned.code, kExitOk) << pinned.err;
  const nlohmann::json pinned_doc = Json(pinned);
  int simulated = 0;
  for (const auto& row : pinned_doc["rows"]) {
    if (row["dp"] == 1) continue;  // one rank gathers nothing
    EXPECT_TRUE(row["strategy"].get<std::string>().ends_with(" no-reshard")) << row["strategy"];
    EXPECT_EQ(row["reshard_after_forward"], false);
    simulated += row["source"] == "simulated" ? 1 : 0;
  }
  EXPECT_GT(simulated, 0);
  // The default space shows the knob where --fix names it, not the exhaustive-only ones.
  Outcome shown = Search({SmallGptScenario(), "--fix", "simulation.reshard_after_forward=false",
                          "--simulate-top", "0", "--format", "json"});
  ASSERT_EQ(shown.code, kExitOk) << shown.err;
  const nlohmann::json first = Json(shown)["rows"][0];
  EXPECT_TRUE(first.contains("reshard_after_forward"));
  EXPECT_FALSE(first.contains("gradient_bucket"));
  Outcome bad = Search({SmallGptScenario(), "--fix", "simulation.reshard_after_forward=maybe"});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_THAT(bad.err, HasSubstr("valid: true, false"));
}

TEST(SearchCommand, UnknownSpaceExitsTwoWithTheValidOnes) {
  Outcome o = Search({SmallGptScenario(), "--space", "huge"});
  EXPECT_EQ(o.code, kExitBadInput);
  EXPECT_EQ(o.out, "");
  EXPECT_THAT(o.err,
              HasSubstr("--space \"huge\": unknown search space; valid: default, exhaustive"));
}

TEST(SearchCommand, BadFlagsAndScenariosExitTwo) {
  EXPECT_EQ(Search({SmallGptScenario(), "--format", "xml"}).code, kExitBadInput);
  EXPECT_EQ(Search({SmallGptScenario(), "--top", "0"}).code, kExitBadInput);
  EXPECT_EQ(Search({"/nonexistent.textproto"}).code, kExitBadInput);
  EXPECT_EQ(Search({SmallGptScenario(), "--set", "model.layerz=3"}).code, kExitBadInput);
  Outcome help = Search({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_THAT(help.out, HasSubstr("--simulate-top"));
}

}  // namespace
}  // namespace placesim::sim
