// Folding (sim/study/fold.h) against the full replay. Every case here fits the op limit, so
// the full replay is the reference; the fold is forced by giving the folded run an op limit
// just below the full schedule's op count (ops <= the builder's bound, so a limit under the
// ops is under the bound too). The fold replays at m1 < m2 < m3 micro-batches (m3 <= m / 16
// here) and extends linearly; a periodic step makes that exact up to rounding, and the
// issue's target is 0.1% on every additive figure, which is the tolerance below. Counts
// (collective calls, bytes) are integers of a periodic schedule, so they must match exactly.
//
// The scenarios (a 2-layer GPT, hidden 512, seq 512, vocab 1024, on DGX-H100 GPUs of one node,
// flow network): ZeRO-2 on dp 2 (gradients reduce-scattered in buckets after every
// micro-batch), 1F1B on pp 4 with 8 layers, interleaved 1F1B on pp 2 with 2 virtual stages,
// and GPipe on pp 2, whose activation peak grows with m (linearly: all m micro-batches' are
// held), to show peak memory extends too.
#include "sim/study/fold.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "placesim/placesim.h"
#include "sim/executor/executor.h"
#include "strategies/schedule.h"
#include "topology/cluster.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::study {
namespace {

struct Case {
  const char* name;
  std::vector<std::string> overrides;  // on the tiny scenario
};

constexpr double kTolerance = 1e-3;  // the 0.1%

std::string TinyScenario() {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/tiny-gpt-zero3-2gpu.textproto";
}

void ExpectNear(Duration folded, Duration full, const std::string& what) {
  const double f = full.ToSeconds();
  EXPECT_LE(std::abs(folded.ToSeconds() - f), kTolerance * std::max(f, 1e-12))
      << what << ": folded " << folded.ToSeconds() << " s, full " << f << " s";
}

TEST(FoldTest, FoldedStepEqualsFullReplay) {
  const std::vector<Case> cases = {
      {"zero2 dp 2, bucket syncs every micro-batch",
       {"strategy.preset=\"zero2\"", "training.micro_batch=1", "training.global_batch=256"}},
      {"1F1B pp 4",
       {"strategy.preset=\"zero1\"", "strategy.dp=1", "strategy.pp=4", "cluster.node.gpus=4",
        "model.layers=8", "training.micro_batch=1", "training.global_batch=256"}},
      {"interleaved 1F1B pp 2 v 2",
       {"strategy.preset=\"zero1\"", "strategy.dp=1", "strategy.pp=2", "model.layers=8",
        "training.pipeline_schedule=PIPELINE_SCHEDULE_INTERLEAVED_1F1B",
        "training.virtual_stages=2", "training.micro_batch=1", "training.global_batch=256"}},
      {"GPipe pp 2",
       {"strategy.preset=\"zero1\"", "strategy.dp=1", "strategy.pp=2", "model.layers=4",
        "training.pipeline_schedule=PIPELINE_SCHEDULE_GPIPE", "training.micro_batch=1",
        "training.global_batch=256"}},
  };
  const std::string path = TinyScenario();
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    StatusOr<api::Scenario> scenario = api::LoadScenario(path, k.overrides);
    ASSERT_TRUE(scenario.ok()) << scenario.status().message();
    StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
    ASSERT_TRUE(cluster.ok()) << cluster.status().message();
    sim::ExecutorOptions options = sim::ExecutorOptionsFromSettings(scenario->simulation);
    StatusOr<sim::SimResult> full = sim::SimulateStep(*cluster, scenario->model, scenario->training,
                                                      scenario->strategy, options);
    ASSERT_TRUE(full.ok()) << full.status().message();
    int64_t ops = 0;
    for (const sim::RoleResult& r : full->roles) ops = std::max(ops, r.ops);
    options.schedule.max_ops = ops - 1;
    StatusOr<sim::SimResult> folded = SimulateStepFolded(
        *cluster, scenario->model, scenario->training, scenario->strategy, options);
    ASSERT_TRUE(folded.ok()) << folded.status().message();
    ASSERT_EQ(folded->folded_from.size(), 3u) << "the step was not folded";
    EXPECT_TRUE(full->folded_from.empty());
    ExpectNear(folded->step_time, full->step_time, "step time");
    EXPECT_NEAR(folded->mfu, full->mfu, kTolerance * full->mfu);
    ASSERT_EQ(folded->roles.size(), full->roles.size());
    for (size_t i = 0; i < full->roles.size(); ++i) {
      const sim::RoleResult& f = folded->roles[i];
      const sim::RoleResult& r = full->roles[i];
      SCOPED_TRACE(r.role);
      ExpectNear(f.step_time, r.step_time, "role step time");
      ExpectNear(f.compute_busy, r.compute_busy, "compute busy");
      ExpectNear(f.comm_busy, r.comm_busy, "comm busy");
      ExpectNear(f.p2p_busy, r.p2p_busy, "p2p busy");
      ExpectNear(f.exposed_comm + f.step_time, r.exposed_comm + r.step_time,
                 "exposed comm (within 0.1% of the step)");
      EXPECT_EQ(f.collective_bytes, r.collective_bytes);
      EXPECT_EQ(f.collective_calls, r.collective_calls);
      EXPECT_EQ(f.ops, r.ops);
      EXPECT_EQ(f.peak_memory, r.peak_memory);
    }
  }
}

TEST(FoldTest, AStepThatFitsIsNotFolded) {
  const std::string path = TinyScenario();
  StatusOr<api::Scenario> scenario = api::LoadScenario(path);
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  StatusOr<api::SimResult> r = api::Simulate(*scenario);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->folded_from.empty());
}

TEST(FoldTest, ATracedStepIsNotFolded) {
  // 128 micro-batches over a 200-op limit, with a trace: the refusal says a folded step has
  // no timeline.
  const std::string path = TinyScenario();
  StatusOr<api::Scenario> scenario =
      api::LoadScenario(path, {"strategy.preset=\"zero2\"", "training.global_batch=256"});
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
  ASSERT_TRUE(cluster.ok());
  sim::ExecutorOptions options = sim::ExecutorOptionsFromSettings(scenario->simulation);
  options.schedule.max_ops = 200;
  std::ostringstream trace;
  traces::ChromeTraceWriter writer(trace);
  options.trace = &writer;
  StatusOr<sim::SimResult> r = SimulateStepFolded(*cluster, scenario->model, scenario->training,
                                                  scenario->strategy, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("drop --trace"), std::string::npos) << r.status().message();
  EXPECT_TRUE(writer.Finish().ok());
}

}  // namespace
}  // namespace placesim::study
