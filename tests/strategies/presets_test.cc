// Presets: every model and strategy preset expands; unknown names answer with the valid ones;
// placements match the published strategies.
#include "strategies/presets.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "strategies/model.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using topology::Axis;
using topology::MeshShape;

std::string Row(const StrategySpec& s, Axis axis) {
  std::string out;
  for (int i = 0; i < kNumStates; ++i) {
    if (i > 0) out += ",";
    out += ModeSymbol(s.at(axis, static_cast<State>(i)).mode);
  }
  return out;
}

TEST(ModelPresets, RequiredNamesExistWithDescriptionAndSource) {
  for (const char* name :
       {"gpt3-175b", "llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b",
        "mixtral-8x7b", "zero-7.5b", "megatron-1t", "megatron-gpt-22b"}) {
    const ModelSpec* m = FindModelPreset(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->name, name);
    EXPECT_FALSE(m->description.empty()) << name;
    EXPECT_FALSE(m->source.empty()) << name;
  }
  EXPECT_EQ(FindModelPreset("gpt5"), nullptr);
}

TEST(ModelPresets, EveryPresetHasAParameterCount) {
  for (const ModelSpec& m : ModelPresets()) EXPECT_GT(ParameterCount(m), 0) << m.name;
  EXPECT_EQ(ModelPresetNames().size(), ModelPresets().size());
}

TEST(ModelPresets, ZeroModelIsABareParameterCount) {
  const ModelSpec& m = test_util::Model("zero-7.5b");
  EXPECT_FALSE(m.has_architecture());
  EXPECT_EQ(m.parameter_count, 7'500'000'000);
}

TEST(StrategyPresets, EveryPresetExpandsOnEveryMesh) {
  for (const StrategyPresetInfo& info : StrategyPresets()) {
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_FALSE(info.source.empty()) << info.name;
    for (const MeshShape& mesh :
         {MeshShape{.dp = 8}, MeshShape{.dp = 4, .tp = 2, .pp = 2, .cp = 2, .ep = 2}}) {
      StatusOr<StrategySpec> s = ExpandStrategyPreset(info.name, mesh);
      ASSERT_TRUE(s.ok()) << info.name;
      EXPECT_EQ(s->name, info.name);
      EXPECT_EQ(s->mesh.world(), mesh.world());
    }
  }
}

TEST(StrategyPresets, UnknownNameListsTheValidOnes) {
  StatusOr<StrategySpec> s = ExpandStrategyPreset("zero4", MeshShape{.dp = 8});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("unknown strategy \"zero4\""), std::string::npos);
  EXPECT_NE(s.status().message().find("valid: ddp, zero1, zero2, zero3, fsdp"), std::string::npos);
}

TEST(StrategyPresets, DataParallelPlacementsFollowThePapers) {
  const MeshShape mesh{.dp = 8};
  EXPECT_EQ(Row(*ExpandStrategyPreset("ddp", mesh), Axis::kData), "R,R,R,R");
  EXPECT_EQ(Row(*ExpandStrategyPreset("zero1", mesh), Axis::kData), "R,S,R,R");
  EXPECT_EQ(Row(*ExpandStrategyPreset("zero2", mesh), Axis::kData), "R,S,S,R");
  EXPECT_EQ(Row(*ExpandStrategyPreset("zero3", mesh), Axis::kData), "S*,S,S,R");
  EXPECT_EQ(Row(*ExpandStrategyPreset("fsdp", mesh), Axis::kData), "S*,S,S,R");
  const StrategySpec offload = *ExpandStrategyPreset("zero-offload", mesh);
  EXPECT_EQ(Row(offload, Axis::kData), "R,O,O,R");
  EXPECT_EQ(offload.at(Axis::kData, State::kOptimizer).target, OffloadTarget::kHost);
  const StrategySpec infinity = *ExpandStrategyPreset("zero-infinity", mesh);
  EXPECT_EQ(infinity.at(Axis::kData, State::kParams).target, OffloadTarget::kNvme);
  EXPECT_EQ(infinity.at(Axis::kData, State::kOptimizer).target, OffloadTarget::kNvme);
}

TEST(StrategyPresets, Tp8Pp4Zero1ComposesMegatronAxesWithZeroOnDp) {
  const StrategySpec s = *ExpandStrategyPreset("zero1", MeshShape{.dp = 2, .tp = 8, .pp = 4});
  EXPECT_EQ(Row(s, Axis::kData), "R,S,R,R");
  EXPECT_EQ(Row(s, Axis::kTensor), "S,S,S,R");
  EXPECT_EQ(Row(s, Axis::kPipeline), "S,S,S,S");
  EXPECT_EQ(Row(s, Axis::kContext), "R,R,R,R");  // cp = 1: nothing placed there
}

TEST(StrategyPresets, ContextAndExpertAxes) {
  const StrategySpec s =
      *ExpandStrategyPreset("zero1", MeshShape{.dp = 4, .tp = 1, .pp = 1, .cp = 2, .ep = 4});
  EXPECT_EQ(Row(s, Axis::kContext), "R,S,R,S");  // joins dp's group; shards A
  EXPECT_EQ(Row(s, Axis::kExpert), "S,S,S,R");
}

TEST(StrategyPresets, FsdpHybridShardsInsideANode) {
  // 16 dp ranks, 8 GPUs per node: shard over the 8 of a node, replicate across 2 nodes.
  EXPECT_EQ(ExpandStrategyPreset("fsdp-hybrid", MeshShape{.dp = 16}, 8)->shard_group_size, 8);
  // With tp 2 inside the node only 4 dp ranks share it.
  EXPECT_EQ(ExpandStrategyPreset("fsdp-hybrid", MeshShape{.dp = 8, .tp = 2}, 8)->shard_group_size,
            4);
  EXPECT_EQ(ExpandStrategyPreset("fsdp", MeshShape{.dp = 16})->shard_group_size, 0);
}

}  // namespace
}  // namespace placesim::strategies
