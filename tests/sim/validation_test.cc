// Validation properties that are not published figures. The published training runs themselves
// (Korthikanti et al. 2022 Table 5, Narayanan et al. 2021 Tables 1 and 2 and the other
// sources) are rows of validation/runs.json, held to their tolerances by
// tests/validation/published_runs_test.cc and tabulated in docs/validation.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

using cli_test::Example;
using cli_test::RunCommand;
using nlohmann::json;

json Simulate(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"simulate"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--format", "json"});
  const cli_test::Outcome r = RunCommand(RunCli, args);
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

TEST(Validation, TensorParallelOverlapHidesCommunication) {
  // Not a published figure: with tp_comm_overlap the 22B's tensor-parallel collectives run
  // under the next chunk's GEMMs, so less communication is exposed and the step is shorter,
  // but never shorter than its compute.
  const json plain = Simulate({Example("korthikanti-22b-tp8.textproto")});
  const json overlap = Simulate(
      {Example("korthikanti-22b-tp8.textproto"), "--set", "simulation.tp_comm_overlap=true"});
  EXPECT_LT(overlap["exposed_comm_s"].get<double>(), 0.5 * plain["exposed_comm_s"].get<double>());
  EXPECT_LT(overlap["step_time_s"].get<double>(), plain["step_time_s"].get<double>());
  EXPECT_GE(overlap["step_time_s"].get<double>(), overlap["compute_s"].get<double>());
}

}  // namespace
}  // namespace placesim::sim
