// Every published training run of validation/runs.json, replayed through the facade and held
// to the tolerance its row states. The expected values are the published figures themselves
// (each row cites its paper, table and configuration); nothing here is placesim's output.
//
// A row's metric is one of:
//   step_time_s           the simulated step (s)
//   hfu_tflops            HFU x the row's peak_tflops: the FLOPs of Narayanan et al. eq. 3,
//                         recomputation included, per GPU per second (TFLOP/s)
//   mfu_tflops            MFU x peak_tflops: model FLOPs only (TFLOP/s)
//   tokens_per_s_per_gpu  global_batch x seq_len / step / world
//   max_model_params_b    the parameter count (billions) of the largest model of the row's
//                         family that fits in device memory: the row's `search` field (e.g.
//                         model.layers) is bisected over [min, max] on the analytic plan
// A row with `pending` (the cause) is one today's physics is known not to reproduce: it must
// stay outside its tolerance, so that a change which brings it in fails here until the mark
// is removed and the row counts.
//
// Thread-safety: rows are independent; gtest runs them one at a time in one process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "placesim/placesim.h"

namespace placesim {
namespace {

using nlohmann::json;

struct Row {
  std::string id;
  json spec;
};

// gtest prints a parameter that fails; the id says which row.
void PrintTo(const Row& row, std::ostream* os) { *os << row.id; }

std::string SourceDir() { return PLACESIM_SOURCE_DIR; }

std::vector<Row> LoadRows() {
  std::ifstream in(SourceDir() + "/validation/runs.json");
  std::vector<Row> rows;
  if (!in) return rows;
  const json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("runs")) return rows;
  for (const json& r : doc["runs"]) rows.push_back({r.value("id", ""), r});
  return rows;
}

std::vector<std::string> Overrides(const json& row) {
  return row.value("overrides", std::vector<std::string>{});
}

// The predicted value of a simulation metric, or NaN (with a failure) when the row names
// another.
double SimulatedMetric(const json& row, const api::Scenario& scenario) {
  api::SimulateOptions options;
  options.network = row.value("network", std::string("analytic"));
  if (options.network == "scenario") options.network.clear();
  StatusOr<api::SimResult> r = api::Simulate(scenario, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return NAN;
  const std::string metric = row.at("metric").get<std::string>();
  if (metric == "step_time_s") return r->step_time.ToSeconds();
  if (metric == "tokens_per_s_per_gpu") {
    return r->tokens_per_second / static_cast<double>(r->plan.world);
  }
  if (metric == "hfu_tflops" || metric == "mfu_tflops") {
    // The row's peak is the published figure's denominator; it must be the device's.
    const double peak = row.at("peak_tflops").get<double>();
    const double device_peak = r->peak.ToTflops();
    EXPECT_NEAR(device_peak, peak, 0.005 * peak) << "peak_tflops differs from the device's";
    return (metric == "hfu_tflops" ? r->hfu : r->mfu) * peak;
  }
  ADD_FAILURE() << "unknown metric " << metric;
  return NAN;
}

// Whether every role of the analytic plan fits with `field` = n; the plan's parameter count.
struct Fit {
  bool fits = false;
  int64_t parameters = 0;
};

Fit FitsAt(const api::ScenarioSource& base, const std::string& field, int64_t n) {
  api::ScenarioSource source = base;
  if (!api::ApplyOverrides(&source, {field + "=" + std::to_string(n)}).ok()) return {};
  StatusOr<api::Scenario> scenario = api::Resolve(source);
  if (!scenario.ok()) return {};
  StatusOr<api::Plan> plan = api::Analyze(*scenario);
  if (!plan.ok()) return {};
  Fit fit{.fits = true, .parameters = plan->parameter_count};
  for (const auto& role : plan->roles) fit.fits = fit.fits && role.memory.fits;
  return fit;
}

// Bisection over [min, max]: memory grows with the searched size, so fitting is monotone.
// Complexity: log2(max - min) analyses.
double MaxModelBillions(const json& row, const api::ScenarioSource& base) {
  const json& search = row.at("search");
  const std::string field = search.at("field").get<std::string>();
  int64_t lo = search.at("min").get<int64_t>();
  int64_t hi = search.at("max").get<int64_t>();
  if (!FitsAt(base, field, lo).fits) return 0;
  if (FitsAt(base, field, hi).fits) return FitsAt(base, field, hi).parameters / 1e9;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (FitsAt(base, field, mid).fits ? lo : hi) = mid;
  }
  return FitsAt(base, field, lo).parameters / 1e9;
}

class PublishedRun : public ::testing::TestWithParam<Row> {};

TEST_P(PublishedRun, WithinTolerance) {
  const json& row = GetParam().spec;
  StatusOr<api::ScenarioSource> source =
      api::LoadScenarioFile(SourceDir() + "/" + row.at("scenario").get<std::string>());
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE(api::ApplyOverrides(&*source, Overrides(row)).ok());

  double predicted = NAN;
  if (row.at("metric") == "max_model_params_b") {
    predicted = MaxModelBillions(row, *source);
  } else {
    StatusOr<api::Scenario> scenario = api::Resolve(*source);
    ASSERT_TRUE(scenario.ok()) << scenario.status().message();
    predicted = SimulatedMetric(row, *scenario);
  }
  ASSERT_FALSE(std::isnan(predicted));

  const double published = row.at("published").get<double>();
  const double tolerance = row.value("tolerance", 0.15);
  const double error = (predicted - published) / published;
  const bool within = std::abs(error) <= tolerance;
  const std::string what = row.value("citation", "") + ": published " + std::to_string(published) +
                           ", predicted " + std::to_string(predicted) + ", error " +
                           std::to_string(100 * error) + "%, tolerance " +
                           std::to_string(100 * tolerance) + "%";
  if (row.contains("pending")) {
    EXPECT_FALSE(within) << what << "\nThe row is marked pending (" << row["pending"]
                         << ") but is within its tolerance now: remove the mark.";
  } else {
    EXPECT_TRUE(within) << what;
  }
}

TEST(PublishedRuns, TableIsComplete) {
  // The floor: at least 40 runs from at least 6 sources, each row well formed.
  const std::vector<Row> rows = LoadRows();
  ASSERT_GE(rows.size(), 40u) << "validation/runs.json is missing or short";
  std::vector<std::string> sources, ids;
  for (const Row& r : rows) {
    for (const char* key : {"id", "source", "citation", "config", "scenario", "metric", "published",
                            "unit", "tolerance", "looked_at"}) {
      EXPECT_TRUE(r.spec.contains(key)) << r.id << " lacks " << key;
    }
    // Above the default 15% only with the cause written beside it.
    if (r.spec.value("tolerance", 0.15) > 0.15) {
      EXPECT_TRUE(r.spec.contains("tolerance_cause"))
          << r.id << ": tolerance above 15% without a cause";
    }
    EXPECT_EQ(std::count(ids.begin(), ids.end(), r.id), 0) << "duplicate id " << r.id;
    ids.push_back(r.id);
    const std::string s = r.spec.value("source", "");
    if (std::count(sources.begin(), sources.end(), s) == 0) sources.push_back(s);
  }
  EXPECT_GE(sources.size(), 6u);
}

std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  std::string name = info.param.id;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Runs, PublishedRun, ::testing::ValuesIn(LoadRows()), RowName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PublishedRun);

}  // namespace
}  // namespace placesim
