// `placesim report` driven in-process: it writes a page holding the step's figures, refuses a
// missing Chart.js before simulating, and needs -o. A stub Chart.js keeps these tests free of
// the Debian package; the browser test uses the real one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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
  // The same input, the same bytes.
  ASSERT_EQ(
      cli_test::RunCommand(&RunCli, {"report", cli_test::Example("tiny-gpt-zero3-2gpu.textproto"),
                                     "-o", page + ".2", "--chartjs", chartjs})
          .code,
      0);
  EXPECT_EQ(html, ReadFile(page + ".2"));
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
