// Reports: stable JSON keys in a fixed order, byte-identical output, units named in tables,
// one CSV row per role.
#include "strategies/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::MakeCluster;
using test_util::MakeTraining;
using test_util::Model;
using ::testing::HasSubstr;

Plan Gpt3Plan() {
  TrainingSpec t = MakeTraining(1, 64);
  t.sequence_parallel = true;
  t.recompute = Recompute::kSelective;
  StrategySpec s = *ExpandStrategyPreset("zero1", {.dp = 2, .tp = 8, .pp = 4});
  return *Analyze(Model("gpt3-175b"), t, s, MakeCluster(8));
}

TEST(FormatBytes, NamesBothUnits) {
  // 31.4e9 / 2^30 = 29.243.
  EXPECT_EQ(FormatBytes(GB(31.4)), "31.40 GB (29.24 GiB)");
}

TEST(FormatPlanJson, HasTheStableKeysInOrder) {
  const Plan plan = Gpt3Plan();
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(FormatPlanJson(plan));
  std::vector<std::string> top;
  for (const auto& [key, value] : j.items()) top.push_back(key);
  EXPECT_EQ(top,
            (std::vector<std::string>{"scenario", "memory", "comm", "offload", "pipeline",
                                      "flops_per_iteration", "roles", "correctness", "notes"}));
  for (const char* key : {"params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                          "total_bytes", "fits"}) {
    EXPECT_TRUE(j["memory"].contains(key)) << key;
  }
  EXPECT_EQ(j["memory"]["total_bytes"].get<int64_t>(), plan.largest().memory.total.count());
  EXPECT_EQ(j["comm"]["bytes_per_device_per_step"].get<int64_t>(),
            plan.largest().comm_bytes.count());
  EXPECT_TRUE(j["comm"]["collectives"].is_array());
  EXPECT_EQ(j["correctness"]["ok"].get<bool>(), plan.ok());
  EXPECT_TRUE(j["correctness"]["findings"].is_array());
  EXPECT_DOUBLE_EQ(j["pipeline"]["bubble_fraction"].get<double>(), 3.0 / 32.0);
  EXPECT_EQ(j["roles"].size(), plan.roles.size());
  EXPECT_EQ(j["scenario"]["model"], "gpt3-175b");
  EXPECT_EQ(j["scenario"]["strategy"], "zero1");
  EXPECT_EQ(j["scenario"]["mesh"]["tp"], 8);
  EXPECT_EQ(j["scenario"]["placement"]["optimizer"]["dp"], "S");
  EXPECT_EQ(j["scenario"]["placement"]["params"]["tp"], "S");
}

TEST(FormatPlanJson, IsByteIdenticalAcrossRuns) {
  EXPECT_EQ(FormatPlanJson(Gpt3Plan()), FormatPlanJson(Gpt3Plan()));
}

TEST(FormatPlanJson, FindingsCarryStateAndAxisOrNull) {
  StrategySpec s = *ExpandStrategyPreset("ddp", {.dp = 8});
  s.at(topology::Axis::kData, State::kGrads).mode = Mode::kSharded;
  const Plan plan = *Analyze(Model("zero-7.5b"), MakeTraining(1, 8), s, MakeCluster(2));
  const auto j = nlohmann::ordered_json::parse(FormatPlanJson(plan));
  bool integrity = false, world = false;
  for (const auto& f : j["correctness"]["findings"]) {
    if (f["rule"] == "gradient-integrity") {
      integrity = true;
      EXPECT_EQ(f["state"], "grads");
      EXPECT_EQ(f["axis"], "dp");
      EXPECT_EQ(f["severity"], "error");
    }
    if (f["rule"] == "world-size") {
      world = true;
      EXPECT_TRUE(f["state"].is_null());
    }
  }
  EXPECT_TRUE(integrity);
  EXPECT_TRUE(world);
  EXPECT_FALSE(j["correctness"]["ok"].get<bool>());
}

TEST(FormatPlanTable, ShowsPlacementMemoryCommAndVerdict) {
  const Plan plan = *Analyze(Model("zero-7.5b"), MakeTraining(1, 64),
                             *ExpandStrategyPreset("zero1", {.dp = 64}), MakeCluster(8));
  const std::string table = FormatPlanTable(plan);
  // ZeRO-1 model state: 31,406,250,000 bytes = 31.41 GB = 29.25 GiB.
  EXPECT_THAT(table, HasSubstr("31.41 GB (29.25 GiB)"));
  EXPECT_THAT(table, HasSubstr("optimizer Ω"));
  EXPECT_THAT(table, HasSubstr("reduce-scatter"));
  EXPECT_THAT(table, HasSubstr("correctness: ok"));
}

TEST(FormatPlacementTable, UsesTheModeSymbols) {
  const Plan plan = *Analyze(Model("llama2-7b"), MakeTraining(1, 8),
                             *ExpandStrategyPreset("zero3", {.dp = 4, .tp = 2}), MakeCluster(1));
  const std::string table = FormatPlacementTable(plan);
  EXPECT_THAT(table, HasSubstr("S*"));
  EXPECT_THAT(table, HasSubstr("dp=4"));
  EXPECT_THAT(table, HasSubstr("tp=2"));
}

TEST(FormatPlanCsv, OneHeaderAndOneRowPerRole) {
  const Plan plan = Gpt3Plan();
  const std::string csv = FormatPlanCsv(plan);
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), plan.roles.size() + 1);
  EXPECT_EQ(csv.rfind("role,first_stage,last_stage,ranks,layers,params_bytes", 0), 0u);
}

TEST(FormatPlacementTable, ShowsTheEffectivePlacement) {
  // zero1 writes activations R on tp; Gpt3Plan turns sequence parallelism on with tp 8, so
  // the activations the plan models are sharded on tp: the table and the JSON say S.
  const Plan sp = Gpt3Plan();
  EXPECT_EQ(
      sp.placement[static_cast<int>(topology::Axis::kTensor)][static_cast<int>(State::kActivations)]
          .mode,
      Mode::kSharded);
  const nlohmann::json j = nlohmann::json::parse(FormatPlanJson(sp));
  EXPECT_EQ(j["scenario"]["placement"]["activations"]["tp"], "S");
  EXPECT_EQ(j["scenario"]["placement"]["activations"]["dp"], "R");  // selective: not M
  EXPECT_THAT(FormatPlacementTable(sp), HasSubstr("activations A            R         S"));

  // Full recompute from the training setup: activations on dp read M (only checkpoints are
  // kept); without tp, sequence parallelism has no effect and tp stays R.
  TrainingSpec t = MakeTraining(1, 8);
  t.recompute = Recompute::kFull;
  t.sequence_parallel = true;
  const Plan full =
      *Analyze(Model("llama2-7b"), t, *ExpandStrategyPreset("ddp", {.dp = 8}), MakeCluster(1));
  const nlohmann::json jf = nlohmann::json::parse(FormatPlanJson(full));
  EXPECT_EQ(jf["scenario"]["placement"]["activations"]["dp"], "M");
  EXPECT_EQ(jf["scenario"]["placement"]["activations"]["tp"], "R");
  EXPECT_EQ(jf["scenario"]["placement"]["params"]["dp"], "R");
}

TEST(FormatPlanTable, CountsAgreeInNumber) {
  // One micro-batch per step (global 8 = micro 1 x dp 8 x 1); one finding (memory-fits:
  // DDP keeps 16 bytes per parameter, 108 GB for 6.7 B parameters, beyond 80 GB).
  const Plan plan = *Analyze(Model("llama2-7b"), MakeTraining(1, 8),
                             *ExpandStrategyPreset("ddp", {.dp = 8}), MakeCluster(1));
  const std::string table = FormatPlanTable(plan);
  EXPECT_THAT(table, HasSubstr(", 1 micro-batch per step,"));
  EXPECT_THAT(table, HasSubstr("= 8 ranks; cluster 8 devices"));
  EXPECT_THAT(table, HasSubstr("(0 errors, 1 warning)"));
  const Plan four = *Analyze(Model("llama2-7b"), MakeTraining(1, 32),
                             *ExpandStrategyPreset("ddp", {.dp = 8}), MakeCluster(1));
  EXPECT_THAT(FormatPlanTable(four), HasSubstr(", 4 micro-batches per step,"));
}

}  // namespace
}  // namespace placesim::strategies
