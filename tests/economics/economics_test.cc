// The cost and energy arithmetic (sim/economics/economics.h) on hand-made step facts; every
// expected value is derived in a comment from the formulas of docs/economics.md.
#include "sim/economics/economics.h"

#include <gtest/gtest.h>

namespace placesim::sim::economics {
namespace {

// An H100 SXM as the preset describes it: TDP 700 W (datasheet), idle 70 W (assumed 10%).
EconomicsSettings H100() {
  EconomicsSettings s;
  s.gpu_tdp = Watts(700);
  s.gpu_idle = Watts(70);
  return s;
}

TEST(GpuPowerTest, InterpolatesBetweenIdleAndTdp) {
  // P = 70 + (700 - 70) x u.
  EXPECT_DOUBLE_EQ(GpuPower(H100(), 0.0).watts(), 70);
  EXPECT_DOUBLE_EQ(GpuPower(H100(), 0.5).watts(), 385);  // 70 + 630 / 2
  EXPECT_DOUBLE_EQ(GpuPower(H100(), 1.0).watts(), 700);
  // u is a fraction: out-of-range inputs are clamped, never extrapolated.
  EXPECT_DOUBLE_EQ(GpuPower(H100(), 1.5).watts(), 700);
  EXPECT_DOUBLE_EQ(GpuPower(H100(), -1).watts(), 70);
}

TEST(TdpBoundTest, ThousandGpusForAnHour) {
  EconomicsSettings s = H100();
  s.price_per_gpu_hour_usd = 2.0;
  s.grid_intensity_gco2_per_kwh = 400;
  const Figures f = TdpBoundFigures(s, 1024);
  EXPECT_TRUE(f.tdp_bound);
  // 1,024 GPUs x 700 W = 716.8 kW; for 1 h: 716.8 kWh.
  EXPECT_DOUBLE_EQ(f.facility_power.watts(), 716800);
  EXPECT_NEAR(f.energy_per_hour.ToKilowattHours(), 716.8, 1e-9);
  // 1,024 GPU-hours x $2 = $2,048 per hour.
  EXPECT_DOUBLE_EQ(*f.cost_per_hour_usd, 2048);
  // 716.8 kWh x 400 g/kWh = 286,720 g = 286.72 kg.
  EXPECT_NEAR(*f.co2_kg_per_hour, 286.72, 1e-9);
  // analyze has no step time: nothing per step, no run total.
  EXPECT_FALSE(f.energy_per_step.has_value());
  EXPECT_FALSE(f.steps.has_value());
}

TEST(ComputeFiguresTest, TokensToGoRoundUpToWholeSteps) {
  EconomicsSettings s = H100();
  s.price_per_gpu_hour_usd = 3.0;
  s.grid_intensity_gco2_per_kwh = 500;
  s.pue = 1.5;
  s.tokens_to_train = 10'000;
  const Figures f = ComputeFigures(
      s, {.gpus = 8, .tokens_per_step = 4096, .step_time = Seconds(2), .utilization = 0.5});
  // P = 385 W per GPU (above); facility = 8 x 385 x 1.5 = 4,620 W.
  EXPECT_DOUBLE_EQ(f.facility_power.watts(), 4620);
  // Per step: 4,620 W x 2 s = 9,240 J.
  EXPECT_DOUBLE_EQ(f.energy_per_step->joules(), 9240);
  // ceil(10,000 / 4,096) = 3 steps; 3 x 2 s = 6 s.
  EXPECT_EQ(*f.steps, 3);
  EXPECT_DOUBLE_EQ(*f.time_to_train_s, 6);
  // 8 GPUs x 6 s / 3,600 = 1/75 GPU-hours; x $3 = $0.04.
  EXPECT_DOUBLE_EQ(*f.gpu_hours, 8.0 * 6 / 3600);
  EXPECT_NEAR(*f.cost_usd, 0.04, 1e-12);
  // 4,620 W x 6 s = 27,720 J = 0.0077 kWh; x 500 g/kWh = 3.85 g = 0.00385 kg.
  EXPECT_NEAR(f.energy_to_train->ToKilowattHours(), 0.0077, 1e-12);
  EXPECT_NEAR(*f.co2_kg, 0.00385, 1e-12);
}

TEST(ComputeFiguresTest, StepsToGoAndNothingUnasked) {
  EconomicsSettings s = H100();
  s.steps_to_train = 1000;
  const Figures f = ComputeFigures(
      s, {.gpus = 1024, .tokens_per_step = 1, .step_time = Seconds(3.6), .utilization = 1});
  // 1,000 steps x 3.6 s = 3,600 s = 1 h on 1,024 GPUs: 1,024 GPU-hours and 716.8 kWh.
  EXPECT_DOUBLE_EQ(*f.gpu_hours, 1024);
  EXPECT_NEAR(f.energy_to_train->ToKilowattHours(), 716.8, 1e-9);
  // No price, no grid intensity: no cost and no CO2, not a zero.
  EXPECT_FALSE(f.cost_usd.has_value());
  EXPECT_FALSE(f.cost_per_hour_usd.has_value());
  EXPECT_FALSE(f.co2_kg.has_value());
}

TEST(ComputeFiguresTest, NoTrainingLengthGivesPerStepFiguresOnly) {
  const Figures f = ComputeFigures(
      H100(), {.gpus = 2, .tokens_per_step = 8, .step_time = Seconds(1), .utilization = 0});
  // Idle all step: 2 x 70 W x 1 s = 140 J.
  EXPECT_DOUBLE_EQ(f.energy_per_step->joules(), 140);
  EXPECT_FALSE(f.steps.has_value());
  EXPECT_FALSE(f.gpu_hours.has_value());
}

TEST(ComputeBusyFractionTest, WeightsRolesByRanksOverTheSlowestStep) {
  SimResult r;
  r.step_time = Seconds(1);
  RoleResult a;
  a.ranks = 3;
  a.compute_busy = Milliseconds(500);
  RoleResult b;
  b.ranks = 1;
  b.compute_busy = Seconds(1);
  r.roles = {a, b};
  // (3 x 0.5 + 1 x 1.0) / 4 = 0.625.
  EXPECT_DOUBLE_EQ(ComputeBusyFraction(r), 0.625);
  r.step_time = Duration::Zero();
  EXPECT_EQ(ComputeBusyFraction(r), 0);
}

}  // namespace
}  // namespace placesim::sim::economics
