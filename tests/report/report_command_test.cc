// `placesim report` driven in-process: it writes a page holding the step's figures, refuses a
// missing Chart.js before simulating, and needs -o. A stub Chart.js keeps these tests free of
// the Debian package; the browser test uses the real one.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "tests/sim/cli_test_util.h"

namespace placesim::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReportCommand, WritesOnePageWithTheStepsMemoryAndLayers) {
  const std::string chartjs = cli_test::WriteTemp("chart.js", "window.Chart = function () {};");
  const std::string page = cli_test::TempPath("report.html");
  cli_test::Outcome r =
      cli_test::RunCommand(&RunCli, {"report", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"),
                                     "-o", page, "--chartjs", chartjs});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadFile(page);
  EXPECT_THAT(html, HasSubstr("window.Chart = function () {};"));
  EXPECT_THAT(html, HasSubstr("Step breakdown per role"));
  EXPECT_THAT(html, HasSubstr("device memory by state"));
  EXPECT_THAT(html, HasSubstr("<h2>Per layer</h2>"));
  EXPECT_THAT(html, Not(HasSubstr("omitted")));
  EXPECT_THAT(html, Not(HasSubstr("Cost and energy")));  // the example has no `economics`
  // The same input, the same bytes.
  ASSERT_EQ(
      cli_test::RunCommand(&RunCli, {"report", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"),
                                     "-o", page + ".2", "--chartjs", chartjs})
          .code,
      0);
  EXPECT_EQ(html, ReadFile(page + ".2"));
}

TEST(ReportCommand, ShowsCostAndEnergyWhenTheScenarioAsks) {
  const std::string chartjs = cli_test::WriteTemp("chart.js", "window.Chart = function () {};");
  const std::string page = cli_test::TempPath("report.html");
  const std::string tiny = cli_test::Example("tiny-gpt-zero3-2gpu.textproto");
  const std::vector<std::string> sets = {"--set", "economics.price_per_gpu_hour_usd=2", "--set",
                                         "economics.steps_to_train=3600000"};
  std::vector<std::string> args = {"report", tiny, "-o", page, "--chartjs", chartjs};
  args.insert(args.end(), sets.begin(), sets.end());
  cli_test::Outcome r = cli_test::RunCommand(&RunCli, args);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadFile(page);
  EXPECT_THAT(html, HasSubstr("<h2>Cost and energy</h2>"));
  // The figures of `simulate --format json` for the same scenario, in the page's formats:
  // 3.6e6 steps x step_time_s on 2 GPUs = 2 x 1000 x step_time_s GPU-hours, x $2.
  std::vector<std::string> sim = {"simulate", tiny, "--format", "json"};
  sim.insert(sim.end(), sets.begin(), sets.end());
  cli_test::Outcome s = cli_test::RunCommand(&RunCli, sim);
  ASSERT_EQ(s.code, 0) << s.err;
  const double step_s = nlohmann::json::parse(s.out).at("step_time_s").get<double>();
  const double gpu_hours = 2 * 3.6e6 * step_s / 3600;
  EXPECT_THAT(html, HasSubstr(fmt::format("<td>{:.1f}</td>", gpu_hours)));
  EXPECT_THAT(html, HasSubstr(fmt::format("<td>${:.2f}</td>", gpu_hours * 2)));
}

TEST(ReportCommand, RefusesAMissingChartJsAndLeavesNoFile) {
  const std::string page = cli_test::TempPath("report.html");
  cli_test::Outcome r =
      cli_test::RunCommand(&RunCli, {"report", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"),
                                     "-o", page, "--chartjs", "/nonexistent/chart.min.js"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("placesim report: /nonexistent/chart.min.js: cannot read"));
  EXPECT_FALSE(std::filesystem::exists(page));
}

TEST(ReportCommand, NeedsAnOutputFile) {
  cli_test::Outcome r =
      cli_test::RunCommand(&RunCli, {"report", cli_test::Example("tiny-gpt-zero3-2gpu.textproto")});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("output"));
}

}  // namespace
}  // namespace placesim::sim
