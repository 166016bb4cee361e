// Every shipped example loads and resolves, and the headline examples carry the values their
// comments promise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/units.h"
#include "sim/scenario/scenario.h"
#include "tests/sim/scenario_test_util.h"

namespace placesim::sim {
namespace {

using strategies::Mode;
using strategies::State;
using testing::SourcePath;
using topology::Axis;

Scenario LoadOrDie(const std::string& relative) {
  StatusOr<Scenario> s = LoadScenarioFile(SourcePath(relative), {});
  EXPECT_TRUE(s.ok()) << relative << ": " << s.status().message();
  return s.ok() ? *s : Scenario{};
}

TEST(ScenarioExamples, EveryShippedExampleLoads) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(SourcePath("examples"))) {
    std::string ext = entry.path().extension().string();
    if (ext == ".textproto" || ext == ".json") files.push_back(entry.path().string());
  }
  ASSERT_GE(files.size(), 5u);
  for (const std::string& f : files) {
    StatusOr<Scenario> s = LoadScenarioFile(f, {});
    EXPECT_TRUE(s.ok()) << f << ": " << s.status().message();
    if (s.ok()) {
      // Every example's mesh covers its cluster exactly.
      EXPECT_EQ(s->strategy.mesh.world(), int64_t{s->cluster.nodes} * s->cluster.node.gpus) << f;
    }
  }
}

TEST(ScenarioExamples, Zero75bIsZero3OnSixtyFourA100s) {
  Scenario s = LoadOrDie("examples/zero-7.5b.textproto");
  EXPECT_EQ(s.name, "zero-7.5b");
  EXPECT_EQ(s.cluster.nodes * s.cluster.node.gpus, 64);
  EXPECT_EQ(s.cluster.node.gpu.name, "A100-SXM-80GB");
  EXPECT_EQ(s.model.parameter_count, 7'500'000'000);
  EXPECT_FALSE(s.model.has_architecture());
  // dp derived: 64 / (1 · 1 · 1).
  EXPECT_EQ(s.strategy.mesh.dp, 64);
  // ZeRO-3 on dp: Θ S*, Ω S, G S, A R.
  EXPECT_EQ(s.strategy.at(Axis::kData, State::kParams).mode, Mode::kShardedGather);
  EXPECT_EQ(s.strategy.at(Axis::kData, State::kOptimizer).mode, Mode::kSharded);
  EXPECT_EQ(s.strategy.at(Axis::kData, State::kGrads).mode, Mode::kSharded);
  EXPECT_EQ(s.strategy.at(Axis::kData, State::kActivations).mode, Mode::kReplicated);
  EXPECT_EQ(s.training.precision, strategies::Precision::kBf16Mixed);
  EXPECT_EQ(s.training.optimizer, strategies::Optimizer::kAdam);
}

TEST(ScenarioExamples, Llama70bIsTp8Zero1OverDp8) {
  Scenario s = LoadOrDie("examples/llama3-70b-tp8-zero1.textproto");
  EXPECT_EQ(s.cluster.node.name, "DGX-H100");
  EXPECT_EQ(s.cluster.fabric.kind, topology::FabricKind::kFatTree);
  EXPECT_EQ(s.cluster.fabric.switch_latency, Nanoseconds(600));
  EXPECT_EQ(s.strategy.mesh.tp, 8);
  EXPECT_EQ(s.strategy.mesh.dp, 8);
  EXPECT_EQ(s.model.transformer.layers, 80);
  EXPECT_EQ(s.model.transformer.seq_len, 8192);
  EXPECT_EQ(s.training.global_batch, 512);
  EXPECT_EQ(s.training.recompute, strategies::Recompute::kSelective);
  EXPECT_TRUE(s.training.sequence_parallel);
  EXPECT_EQ(s.strategy.at(Axis::kData, State::kOptimizer).mode, Mode::kSharded);
  EXPECT_EQ(s.strategy.at(Axis::kTensor, State::kParams).mode, Mode::kSharded);
}

TEST(ScenarioExamples, Gpt3IsTp8Pp8WithOneReplica) {
  Scenario s = LoadOrDie("examples/gpt3-175b-tp8-pp8.textproto");
  EXPECT_EQ(s.cluster.node.gpu.name, "A100-SXM-80GB");
  EXPECT_EQ(s.cluster.fabric.kind, topology::FabricKind::kRailOptimized);
  EXPECT_EQ(s.strategy.mesh.tp, 8);
  EXPECT_EQ(s.strategy.mesh.pp, 8);
  EXPECT_EQ(s.strategy.mesh.dp, 1);
  EXPECT_EQ(s.model.transformer.layers, 96);
  EXPECT_EQ(s.training.global_batch, 1536);
  EXPECT_EQ(s.training.recompute, strategies::Recompute::kFull);
  EXPECT_EQ(s.training.pipeline_schedule, strategies::PipelineSchedule::k1F1B);
}

TEST(ScenarioExamples, ExplicitTwoGpuGraph) {
  Scenario s = LoadOrDie("examples/explicit-2gpu.textproto");
  EXPECT_EQ(s.cluster.fabric.kind, topology::FabricKind::kExplicit);
  EXPECT_EQ(s.cluster.node.gpus, 2);
  EXPECT_EQ(s.cluster.node.host_memory, GiB(512));
  ASSERT_EQ(s.cluster.vertices.size(), 4u);
  ASSERT_EQ(s.cluster.links.size(), 4u);
  EXPECT_EQ(s.cluster.vertices[3].kind, topology::VertexKind::kHostMemory);
  EXPECT_EQ(s.cluster.links[0].kind, topology::LinkKind::kNvlink);
  EXPECT_EQ(s.cluster.links[0].bandwidth, GBps(450));
  EXPECT_EQ(s.cluster.links[0].latency, Microseconds(1));
  EXPECT_EQ(s.strategy.mesh.dp, 2);
  EXPECT_EQ(s.training.global_batch, 16);
}

TEST(ScenarioExamples, ExamplesResolveTheSameTwice) {
  StatusOr<ScenarioDocument> doc =
      ScenarioDocument::ReadFile(SourcePath("examples/llama3-70b-tp8-zero1.textproto"));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  StatusOr<Scenario> a = doc->Resolve();
  StatusOr<Scenario> b = doc->Resolve();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(testing::Dump(*a), testing::Dump(*b));
}

}  // namespace
}  // namespace placesim::sim
