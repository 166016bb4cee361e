// The economics figures in the command outputs (analyze, simulate, and per point or row in
// sweep, merge and search), compare's directions for them, and the validation of the
// `economics` message: present only when asked, derived from the same facts the rest of the
// output (or that point or row) shows, and every bad value named with its allowed range
// (exit 2).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/study/compare.h"
#include "tests/sim/cli_test_util.h"
#include "topology/presets.h"

namespace placesim::sim {
namespace {

using cli_test::Example;
using cli_test::Outcome;
using cli_test::RunCommand;
using Json = nlohmann::json;

// Two H100s on a DGX-H100 NVSwitch plane (a step simulates in milliseconds).
const std::string kTiny = "tiny-gpt-zero3-2gpu.textproto";

Outcome Placesim(std::vector<std::string> args, const std::vector<std::string>& sets) {
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return RunCommand(&RunCli, args);
}

TEST(PresetPowerTest, DatasheetFigures) {
  // NVIDIA A100 datasheet: 400 W; H100 SXM and H200 SXM: up to 700 W; AMD MI300X: 750 W.
  EXPECT_EQ(topology::FindDevicePreset("A100-SXM-80GB")->tdp, Watts(400));
  EXPECT_EQ(topology::FindDevicePreset("H100-SXM-80GB")->tdp, Watts(700));
  EXPECT_EQ(topology::FindDevicePreset("H200-SXM-141GB")->tdp, Watts(700));
  EXPECT_EQ(topology::FindDevicePreset("MI300X")->tdp, Watts(750));
  // Every preset has a power figure, and idle below it (the model needs idle < TDP).
  for (const topology::DeviceSpec& d : topology::DevicePresets()) {
    EXPECT_GT(d.tdp, Power::Zero()) << d.name;
    EXPECT_LT(d.idle_power, d.tdp) << d.name;
  }
}

TEST(EconomicsCliTest, AbsentMessageAddsNothing) {
  for (const char* format : {"table", "json", "csv"}) {
    Outcome sim = Placesim({"simulate", Example(kTiny), "--format", format}, {});
    ASSERT_EQ(sim.code, 0) << sim.err;
    EXPECT_EQ(sim.out.find("economics"), std::string::npos) << format;
    EXPECT_EQ(sim.out.find("gpu_power_w"), std::string::npos) << format;
    Outcome an = Placesim({"analyze", Example(kTiny), "--format", format}, {});
    EXPECT_EQ(an.out.find("economics"), std::string::npos) << format;
  }
}

TEST(EconomicsCliTest, SimulateJsonAgreesWithTheStep) {
  Outcome o = Placesim({"simulate", Example(kTiny), "--format", "json"},
                       {"economics.price_per_gpu_hour_usd=2.5", "economics.steps_to_train=1000",
                        "economics.grid_intensity_gco2_per_kwh=300", "economics.pue=1.2"});
  ASSERT_EQ(o.code, 0) << o.err;
  const Json j = Json::parse(o.out);
  const Json& e = j.at("economics");
  const double step_s = j.at("step_time_s").get<double>();
  EXPECT_EQ(e.at("gpus"), 2);
  EXPECT_FALSE(e.at("tdp_bound").get<bool>());
  // P = 70 + 630 u per GPU (H100 preset), u the compute-busy fraction.
  const double u = e.at("utilization").get<double>();
  EXPECT_GT(u, 0);
  EXPECT_LE(u, 1);
  EXPECT_NEAR(e.at("gpu_power_w").get<double>(), 70 + 630 * u, 1e-9);
  // Facility = 2 GPUs x P x 1.2; per step = facility x step time.
  const double facility = 2 * e.at("gpu_power_w").get<double>() * 1.2;
  EXPECT_NEAR(e.at("facility_power_w").get<double>(), facility, 1e-9);
  EXPECT_NEAR(e.at("energy_per_step_j").get<double>(), facility * step_s, 1e-9);
  // 1,000 steps: time = 1,000 x step; GPU-hours = 2 x time / 3,600; cost = GPU-hours x $2.5.
  EXPECT_EQ(e.at("steps_to_train"), 1000);
  EXPECT_NEAR(e.at("time_to_train_s").get<double>(), 1000 * step_s, 1e-9);
  const double gpu_hours = 2 * 1000 * step_s / 3600;
  EXPECT_NEAR(e.at("gpu_hours").get<double>(), gpu_hours, 1e-12);
  EXPECT_NEAR(e.at("cost_usd").get<double>(), gpu_hours * 2.5, 1e-12);
  // kWh = facility x time / 3.6e6; CO2 kg = kWh x 300 / 1,000.
  const double kwh = facility * 1000 * step_s / 3.6e6;
  EXPECT_NEAR(e.at("energy_to_train_kwh").get<double>(), kwh, 1e-12);
  EXPECT_NEAR(e.at("co2_kg").get<double>(), kwh * 0.3, 1e-12);
}

TEST(EconomicsCliTest, TableAndCsvCarryTheFigures) {
  const std::vector<std::string> sets = {"economics.price_per_gpu_hour_usd=2",
                                         "economics.tokens_to_train=1000000"};
  Outcome table = Placesim({"simulate", Example(kTiny)}, sets);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("economics       (model and sources: docs/economics.md)"),
            std::string::npos);
  EXPECT_NE(table.out.find("  to train      "), std::string::npos);
  // Per hour: 2 GPUs x $2 = $4.00.
  EXPECT_NE(table.out.find("$4.00"), std::string::npos) << table.out;

  Outcome csv = Placesim({"simulate", Example(kTiny), "--format", "csv"}, sets);
  ASSERT_EQ(csv.code, 0) << csv.err;
  const std::string header = csv.out.substr(0, csv.out.find('\n'));
  EXPECT_NE(header.find(",gpu_power_w,facility_power_w,energy_per_step_j,steps_to_train,"
                        "time_to_train_s,gpu_hours,energy_to_train_kwh,cost_usd,co2_kg"),
            std::string::npos);
  // No grid intensity: the CO2 cell of the row is empty (the row ends with a comma).
  const std::string row = csv.out.substr(header.size() + 1);
  EXPECT_EQ(row.substr(row.size() - 2), ",\n");
}

TEST(EconomicsCliTest, AnalyzeReportsTheTdpBoundPerHour) {
  Outcome o = Placesim({"analyze", Example(kTiny), "--format", "json"},
                       {"economics.price_per_gpu_hour_usd=2", "economics.steps_to_train=10"});
  ASSERT_EQ(o.code, 0) << o.err;
  const Json e = Json::parse(o.out).at("economics");
  EXPECT_TRUE(e.at("tdp_bound").get<bool>());
  // 2 GPUs x 700 W = 1,400 W; 1.4 kWh per hour; 2 x $2 = $4 per hour.
  EXPECT_DOUBLE_EQ(e.at("facility_power_w").get<double>(), 1400);
  EXPECT_NEAR(e.at("energy_per_hour_kwh").get<double>(), 1.4, 1e-12);
  EXPECT_DOUBLE_EQ(e.at("cost_per_hour_usd").get<double>(), 4);
  // No step time in analyze: no time to train is claimed.
  EXPECT_FALSE(e.contains("time_to_train_s"));
  Outcome table = Placesim({"analyze", Example(kTiny)}, {"economics.pue=1.1"});
  EXPECT_NE(table.out.find("needs a step time"), std::string::npos) << table.out;
}

// Each bad value is reported as "PATH: VALUE: RULE" with exit code 2 (bad input).
TEST(EconomicsValidationTest, NamesFieldValueAndRange) {
  const struct {
    std::string set;
    std::string message;
  } cases[] = {
      {"economics.pue=0.5", "economics.pue: 0.5: must be from 1 to 3"},
      {"economics.pue=3.5", "economics.pue: 3.5: must be from 1 to 3"},
      {"economics.price_per_gpu_hour_usd=-1",
       "economics.price_per_gpu_hour_usd: -1: must be from 0 to 1000 US dollars"},
      {"economics.grid_intensity_gco2_per_kwh=2500",
       "economics.grid_intensity_gco2_per_kwh: 2500: must be from 0 to 2000 gCO2e/kWh"},
      {"economics.tokens_to_train=0",
       "economics.tokens_to_train: 0: must be from 1 to 1000000000000000000"},
      {"economics.steps_to_train=-5", "economics.steps_to_train: -5: must be from 1 to "},
      {"economics.gpu_tdp_watts=6000", "economics.gpu_tdp_watts: 6000: must be from 1 to 5000 W"},
      // The H100 preset's limit is 700 W: idle must stay below it.
      {"economics.gpu_idle_watts=800",
       "economics.gpu_idle_watts: 800: must be below the GPU's power limit (700 W)"},
  };
  for (const auto& c : cases) {
    Outcome o = Placesim({"simulate", Example(kTiny)}, {c.set});
    EXPECT_EQ(o.code, 2) << c.set;
    EXPECT_NE(o.err.find(c.message), std::string::npos) << c.set << "\n" << o.err;
  }
  Outcome both = Placesim({"analyze", Example(kTiny)},
                          {"economics.tokens_to_train=100", "economics.steps_to_train=10"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("set either tokens_to_train or steps_to_train, not both"),
            std::string::npos)
      << both.err;
}

// ------------------------------------------------------------------- sweep, merge, search
const std::vector<std::string> kPriced = {"economics.steps_to_train=1000",
                                          "economics.grid_intensity_gco2_per_kwh=300"};

TEST(EconomicsStudyTest, SweepWithoutEconomicsHasNoFigures) {
  for (const char* mode : {"analyze", "simulate"}) {
    for (const char* format : {"table", "json", "csv"}) {
      Outcome o = Placesim({"sweep", Example(kTiny), "--vary", "training.micro_batch=2,4", "--mode",
                            mode, "--format", format},
                           {});
      ASSERT_EQ(o.code, 0) << o.err;
      EXPECT_EQ(o.out.find("economics"), std::string::npos) << mode << " " << format;
      EXPECT_EQ(o.out.find("cost"), std::string::npos) << mode << " " << format;
      EXPECT_EQ(o.out.find("energy"), std::string::npos) << mode << " " << format;
    }
  }
}

TEST(EconomicsStudyTest, SimulatedSweepPointsCarryTheirRunsCost) {
  Outcome o = Placesim({"sweep", Example(kTiny), "--vary", "economics.price_per_gpu_hour_usd=1,3",
                        "--mode", "simulate", "--format", "json"},
                       kPriced);
  ASSERT_EQ(o.code, 0) << o.err;
  const Json points = Json::parse(o.out).at("points");
  ASSERT_EQ(points.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Json& p = points[i];
    const Json& e = p.at("economics");
    const double price = i == 0 ? 1.0 : 3.0;
    const double step_s = p.at("step_time_s").get<double>();
    EXPECT_EQ(e.at("gpus"), 2);
    EXPECT_FALSE(e.at("tdp_bound").get<bool>());
    // 1,000 steps: time = 1,000 x step; GPU-hours = 2 GPUs x time / 3,600 s;
    // cost = GPU-hours x price; CO2 = kWh x 300 g / 1,000.
    EXPECT_NEAR(e.at("time_to_train_s").get<double>(), 1000 * step_s, 1e-9);
    const double gpu_hours = 2 * 1000 * step_s / 3600;
    EXPECT_NEAR(e.at("gpu_hours").get<double>(), gpu_hours, 1e-12);
    EXPECT_NEAR(e.at("cost_usd").get<double>(), gpu_hours * price, 1e-12);
    // kWh = 2 x P (PUE 1) x time / 3.6e6 J.
    const double kwh = 2 * e.at("gpu_power_w").get<double>() * 1000 * step_s / 3.6e6;
    EXPECT_NEAR(e.at("energy_to_train_kwh").get<double>(), kwh, 1e-12);
    EXPECT_NEAR(e.at("co2_kg").get<double>(), kwh * 300 / 1000, 1e-12);
  }
  // The price moves the cost only: the same step, so three times the dollars.
  EXPECT_NEAR(points[1]["economics"]["cost_usd"].get<double>(),
              3 * points[0]["economics"]["cost_usd"].get<double>(), 1e-12);
}

TEST(EconomicsStudyTest, AnalyzedSweepShowsTheTdpBoundPerHour) {
  Outcome json =
      Placesim({"sweep", Example(kTiny), "--vary", "economics.pue=1,1.5", "--format", "json"},
               {"economics.price_per_gpu_hour_usd=2"});
  ASSERT_EQ(json.code, 0) << json.err;
  const Json points = Json::parse(json.out).at("points");
  ASSERT_EQ(points.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Json& e = points[i].at("economics");
    const double pue = i == 0 ? 1.0 : 1.5;
    EXPECT_TRUE(e.at("tdp_bound").get<bool>());
    // 2 H100s at their 700 W TDP x PUE for one hour; $2 x 2 GPUs per hour.
    EXPECT_NEAR(e.at("energy_per_hour_kwh").get<double>(), 2 * 700 * pue / 1000, 1e-12);
    EXPECT_NEAR(e.at("cost_per_hour_usd").get<double>(), 4.0, 1e-12);
    EXPECT_FALSE(e.contains("time_to_train_s"));  // no step time in analyze
  }
  Outcome csv =
      Placesim({"sweep", Example(kTiny), "--vary", "economics.pue=1,1.5", "--format", "csv"},
               {"economics.price_per_gpu_hour_usd=2"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",cost_per_hour_usd,energy_per_hour_kwh,error\n"), std::string::npos)
      << csv.out;
  // 2 x 700 W x 1.5 = 2.1 kWh per hour.
  EXPECT_NE(csv.out.find(",4,2.1,"), std::string::npos) << csv.out;
  Outcome table = Placesim({"sweep", Example(kTiny), "--vary", "economics.pue=1,1.5"},
                           {"economics.price_per_gpu_hour_usd=2"});
  EXPECT_NE(table.out.find("cost/h"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("$4.00"), std::string::npos) << table.out;
}

TEST(EconomicsStudyTest, MergedShardsKeepTheFigures) {
  auto shard = [](int k, const std::string& name) {
    const std::string path = cli_test::TempPath(name);
    Outcome o = Placesim({"sweep", Example(kTiny), "--vary", "economics.pue=1,1.5,2", "--shard",
                          std::to_string(k) + "/2", "--format", "json"},
                         {"economics.price_per_gpu_hour_usd=2"});
    EXPECT_EQ(o.code, 0) << o.err;
    std::ofstream(path, std::ios::binary) << o.out;
    return path;
  };
  Outcome whole =
      Placesim({"sweep", Example(kTiny), "--vary", "economics.pue=1,1.5,2", "--format", "json"},
               {"economics.price_per_gpu_hour_usd=2"});
  Outcome merged = Placesim({"merge", shard(2, "econ_2of2.json"), shard(1, "econ_1of2.json")}, {});
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
  EXPECT_NE(merged.out.find("\"cost_per_hour_usd\""), std::string::npos);
}

TEST(EconomicsStudyTest, SearchRowsArePricedAtTheirOwnStep) {
  Outcome o = Placesim(
      {"search", Example(kTiny), "--simulate-top", "1", "--top", "100", "--format", "json"},
      {"economics.price_per_gpu_hour_usd=2", "economics.steps_to_train=1000"});
  ASSERT_EQ(o.code, 0) << o.err;
  const Json rows = Json::parse(o.out).at("rows");
  ASSERT_GE(rows.size(), 2u);
  int simulated = 0;
  for (const Json& r : rows) {
    const Json& e = r.at("economics");
    const bool sim = r.at("source") == "simulated";
    simulated += sim ? 1 : 0;
    // An estimated row has no compute-busy share: priced at the TDP bound (u = 1, 700 W).
    EXPECT_EQ(e.at("tdp_bound").get<bool>(), !sim);
    if (!sim) {
      EXPECT_DOUBLE_EQ(e.at("gpu_power_w").get<double>(), 700);
    }
    // time = 1,000 x the row's step; cost = 2 GPUs x time / 3,600 x $2.
    const double step_s = r.at("step_time_s").get<double>();
    EXPECT_NEAR(e.at("time_to_train_s").get<double>(), 1000 * step_s, 1e-9);
    EXPECT_NEAR(e.at("cost_usd").get<double>(), 2 * 1000 * step_s / 3600 * 2, 1e-9);
  }
  EXPECT_EQ(simulated, 1);
  Outcome csv = Placesim({"search", Example(kTiny), "--simulate-top", "1", "--format", "csv"},
                         {"economics.price_per_gpu_hour_usd=2", "economics.steps_to_train=1000"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",time_to_train_s,gpu_hours,cost_usd,energy_to_train_kwh\n"),
            std::string::npos)
      << csv.out;
  Outcome plain =
      Placesim({"search", Example(kTiny), "--simulate-top", "1", "--format", "json"}, {});
  EXPECT_EQ(plain.out.find("economics"), std::string::npos);
}

TEST(EconomicsStudyTest, CompareCountsLessCostAndEnergyAsBetter) {
  for (const char* leaf : {"cost_usd", "gpu_hours", "energy_to_train_kwh", "co2_kg",
                           "time_to_train_s", "cost_per_hour_usd", "energy_per_hour_kwh"}) {
    EXPECT_EQ(study::DirectionOf(leaf), study::MetricDirection::kLowerIsBetter) << leaf;
  }
  // Inputs and counts are not better or worse.
  for (const char* leaf : {"gpus", "utilization", "pue", "price_per_gpu_hour_usd"}) {
    EXPECT_EQ(study::DirectionOf(leaf), study::MetricDirection::kNeutral) << leaf;
  }
}

}  // namespace
}  // namespace placesim::sim
