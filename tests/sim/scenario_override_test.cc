// `--set FIELD.PATH=VALUE` overrides through reflection: every scalar type, indexed repeated
// fields, overrides over presets, and every kind of bad override with its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "base/units.h"
#include "sim/scenario/scenario.h"
#include "strategies/schedule.h"
#include "tests/sim/scenario_test_util.h"

namespace placesim::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SourcePath;

// 2 × DGX-H100 = 16 GPUs; tp 8, so dp is derived as 2.
constexpr std::string_view kBase = R"pb(
  cluster { node_preset: "DGX-H100" nodes: 2 }
  model { preset: "llama3-8b" }
  training { micro_batch: 1 }
  strategy { preset: "zero1" tp: 8 }
)pb";

StatusOr<Scenario> Load(const std::vector<std::string>& overrides) {
  return LoadScenarioText(kBase, ScenarioFormat::kTextProto, overrides);
}

std::string OverrideError(const std::string& path, const std::string& value) {
  StatusOr<ScenarioDocument> doc = ScenarioDocument::Parse(kBase, ScenarioFormat::kTextProto);
  if (!doc.ok()) return "parse failed: " + doc.status().message();
  Status s = doc->ApplyOverride(path, value);
  return s.ok() ? "OK" : s.message();
}

TEST(ScenarioOverride, SetsAnIntAndTheMeshFollows) {
  // 4 nodes × 8 GPUs = 32 GPUs; tp 8 leaves dp = 4.
  StatusOr<Scenario> s = Load({"cluster.nodes=4"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.nodes, 4);
  EXPECT_EQ(s->strategy.mesh.dp, 4);
  // global_batch defaults to micro_batch × dp = 1 × 4.
  EXPECT_EQ(s->training.global_batch, 4);
}

TEST(ScenarioOverride, SetsADouble) {
  StatusOr<Scenario> s = Load({"cluster.fabric.oversubscription=2.5"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->cluster.fabric.oversubscription, 2.5);
}

TEST(ScenarioOverride, SetsABoolInAnyCase) {
  StatusOr<Scenario> s = Load({"training.sequence_parallel=TRUE"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->training.sequence_parallel);
  s = Load({"training.sequence_parallel=true", "training.sequence_parallel=false"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->training.sequence_parallel);
}

TEST(ScenarioOverride, SetsAnEnumByShortOrFullName) {
  StatusOr<Scenario> s = Load({"training.recompute=full"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->training.recompute, strategies::Recompute::kFull);
  s = Load({"training.recompute=RECOMPUTE_SELECTIVE"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->training.recompute, strategies::Recompute::kSelective);
  // '-' reads as '_', any case.
  s = Load({"training.pipeline_schedule=Interleaved-1F1B"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->training.pipeline_schedule, strategies::PipelineSchedule::kInterleaved1F1B);
}

TEST(ScenarioOverride, SetsAStringQuotedOrNot) {
  StatusOr<Scenario> s = Load({"strategy.preset=zero3"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->strategy.name, "zero3");
  s = Load({"strategy.preset=\"zero2\""});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->strategy.name, "zero2");
  s = Load({"name='what if'"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "what if");
}

TEST(ScenarioOverride, SetsAUnitStringOverThePreset) {
  // DGX-H100 ships 400 Gb/s NICs; 800 Gb/s = 100 GB/s.
  StatusOr<Scenario> s = Load({"cluster.node.nic_bandwidth=800 Gb/s"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.node.nic_bandwidth, Gbps(800));
  EXPECT_DOUBLE_EQ(s->cluster.node.nic_bandwidth.ToGBps(), 100.0);
  // The rest of the preset is untouched.
  EXPECT_EQ(s->cluster.node.nvlink_bandwidth, GBps(450));
}

TEST(ScenarioOverride, OverridesAPresetGpuField) {
  StatusOr<Scenario> s = Load({"cluster.node.gpu.hbm_capacity=141 GB"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.node.gpu.hbm_capacity, GB(141));
  EXPECT_EQ(s->cluster.node.gpu.hbm_bandwidth, GBps(3350));  // still the H100's
  // The preset keeps its name; its description says what changed.
  EXPECT_EQ(s->cluster.node.gpu.name, "H100-SXM-80GB");
  EXPECT_THAT(s->cluster.node.gpu.description, HasSubstr("; overridden: hbm_capacity"));
  EXPECT_THAT(s->cluster.node.description, Not(HasSubstr("overridden")));
}

TEST(ScenarioOverride, AZeroOverrideIsToldApartFromUnset) {
  // The preset has NVMe; an explicit "0 B" removes it (proto3 optional presence).
  StatusOr<Scenario> s = Load({"cluster.node.nvme_capacity=0 B"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.node.nvme_capacity, Bytes::Zero());
  // dp = 0 means "derive it": 16 / 8 = 2.
  s = Load({"strategy.dp=0"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->strategy.mesh.dp, 2);
}

TEST(ScenarioOverride, SetsAnIndexedRepeatedField) {
  StatusOr<Scenario> s =
      LoadScenarioFile(SourcePath("examples/explicit-2gpu.textproto"),
                       {"cluster.links[0].bandwidth=100 GB/s", "cluster.vertices[3].name=dram",
                        "cluster.links[3].to=dram"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->cluster.links[0].bandwidth, GBps(100));
  EXPECT_EQ(s->cluster.vertices[3].name, "dram");
  EXPECT_EQ(s->cluster.links[3].to, "dram");
}

TEST(ScenarioOverride, CreatesSubMessagesOnDemand) {
  StatusOr<ScenarioDocument> doc = ScenarioDocument::Parse(
      "cluster { node_preset: \"DGX-A100\" } model { preset: \"llama2-7b\" }",
      ScenarioFormat::kTextProto);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_TRUE(doc->ApplyOverrides({"strategy.preset=zero3", "strategy.placements_dummy=1"})
                  .message()
                  .find("placements_dummy") != std::string::npos);
  // The good override applied, the bad one was reported.
  StatusOr<Scenario> s = doc->Resolve();
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->strategy.name, "zero3");
  EXPECT_EQ(s->strategy.mesh.dp, 8);
}

TEST(ScenarioOverride, UnknownFieldListsTheValidNamesAtThatLevel) {
  EXPECT_EQ(OverrideError("cluster.nodez", "3"),
            "cluster.nodez: unknown field \"nodez\" in cluster; valid: node_preset, node, nodes, "
            "fabric, vertices, links; did you mean \"nodes\"?");
  // The Scenario message's fields in schema order (sim/scenario/proto/scenario.proto).
  EXPECT_EQ(OverrideError("clustr.nodes", "3"),
            "clustr.nodes: unknown field \"clustr\" in the scenario; valid: name, description, "
            "cluster, model, training, strategy, simulation, economics; did you mean \"cluster\"?");
}

TEST(ScenarioOverride, AMessageIsNotAScalar) {
  EXPECT_EQ(OverrideError("cluster.fabric", "3"),
            "cluster.fabric: cluster.fabric is a message, not a scalar; set one of its fields: "
            "kind, switch_radix, oversubscription, link_bandwidth, switch_latency, pod_nodes, "
            "pod_oversubscription");
}

TEST(ScenarioOverride, AScalarHasNoSubfields) {
  EXPECT_EQ(OverrideError("cluster.nodes.count", "3"),
            "cluster.nodes.count: cluster.nodes is a scalar and has no field \"count\"");
}

TEST(ScenarioOverride, OutOfRangeIntNamesTheFieldValueAndRange) {
  EXPECT_EQ(OverrideError("cluster.nodes", "99999999999"),
            "cluster.nodes: 99999999999: out of range: must be an integer from -2147483648 to "
            "2147483647");
  EXPECT_EQ(OverrideError("model.parameter_count", "99999999999999999999"),
            "model.parameter_count: 99999999999999999999: out of range: must be an integer from "
            "-9223372036854775808 to 9223372036854775807");
}

TEST(ScenarioOverride, NonDecimalIntIsRefused) {
  EXPECT_EQ(OverrideError("cluster.nodes", "1e3"),
            "cluster.nodes: \"1e3\": must be an integer from -2147483648 to 2147483647 written "
            "in decimal digits");
  EXPECT_EQ(OverrideError("cluster.nodes", "abc"),
            "cluster.nodes: \"abc\": must be an integer from -2147483648 to 2147483647 written "
            "in decimal digits");
  EXPECT_EQ(OverrideError("cluster.nodes", ""),
            "cluster.nodes: \"\": must be an integer from -2147483648 to 2147483647 written in "
            "decimal digits");
}

TEST(ScenarioOverride, BadDoubleIsRefused) {
  EXPECT_EQ(OverrideError("cluster.fabric.oversubscription", "two"),
            "cluster.fabric.oversubscription: \"two\": must be a finite decimal number, e.g. 0.5");
  EXPECT_EQ(OverrideError("cluster.fabric.oversubscription", "1e999"),
            "cluster.fabric.oversubscription: \"1e999\": must be a finite decimal number, e.g. "
            "0.5");
}

TEST(ScenarioOverride, BadBoolIsRefused) {
  EXPECT_EQ(OverrideError("training.sequence_parallel", "yes"),
            "training.sequence_parallel: \"yes\": must be true or false");
}

TEST(ScenarioOverride, BadEnumListsShortNames) {
  EXPECT_EQ(OverrideError("training.recompute", "sometimes"),
            "training.recompute: \"sometimes\": unknown value; valid: none, selective, full");
  EXPECT_EQ(OverrideError("training.recompute", "unspecified"),
            "training.recompute: \"unspecified\": unknown value; valid: none, selective, full");
}

TEST(ScenarioOverride, RepeatedIndexMustExist) {
  EXPECT_EQ(OverrideError("cluster.links[3].bandwidth", "1 GB/s"),
            "cluster.links[3].bandwidth: index 3 is out of range: cluster.links has 0 elements");
  EXPECT_EQ(OverrideError("cluster.links.bandwidth", "1 GB/s"),
            "cluster.links.bandwidth: cluster.links is a list: index one element, e.g. links[0]");
  EXPECT_EQ(OverrideError("cluster[0].nodes", "1"),
            "cluster[0].nodes: cluster is not a list and takes no index");
  EXPECT_EQ(OverrideError("cluster.links[x].bandwidth", "1"),
            "cluster.links[x].bandwidth: bad index \"x\": must be a non-negative integer");
}

TEST(ScenarioOverride, MalformedPathsAreRefused) {
  EXPECT_EQ(OverrideError("cluster..nodes", "1"),
            "cluster..nodes: \"\" is not a field name: a path is dotted field names, e.g. "
            "cluster.node.gpus or cluster.links[0].bandwidth");
  EXPECT_EQ(OverrideError("", "1"),
            "empty field path: an override is FIELD.PATH=VALUE, e.g. cluster.nodes=32");
}

TEST(ScenarioOverride, AssignmentNeedsAnEqualsSign) {
  StatusOr<Scenario> s = Load({"cluster.nodes"});
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(),
              HasSubstr("\"cluster.nodes\": an override is FIELD.PATH=VALUE, e.g. "
                        "cluster.nodes=32"));
}

TEST(ScenarioOverride, EveryBadOverrideIsReportedAtOnce) {
  StatusOr<Scenario> s = Load({"cluster.nodez=1", "strategy.tp=x", "cluster.nodes=4"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("bad --set override:\n"));
  EXPECT_THAT(s.status().message(), HasSubstr("cluster.nodez: unknown field"));
  EXPECT_THAT(s.status().message(), HasSubstr("strategy.tp: \"x\""));
}

TEST(ScenarioOverride, AFailedOverrideLeavesTheDocumentUnchanged) {
  StatusOr<ScenarioDocument> doc = ScenarioDocument::Parse(kBase, ScenarioFormat::kTextProto);
  ASSERT_TRUE(doc.ok());
  std::string before = doc->ToTextProto();
  // The path is fine up to the value: nothing may be created along it.
  EXPECT_FALSE(doc->ApplyOverride("cluster.fabric.switch_radix", "lots").ok());
  EXPECT_FALSE(doc->ApplyOverride("training.nothing", "1").ok());
  EXPECT_EQ(doc->ToTextProto(), before);
}

TEST(ScenarioOverride, CopiesAreIndependentForSweeps) {
  StatusOr<ScenarioDocument> base = ScenarioDocument::Parse(kBase, ScenarioFormat::kTextProto);
  ASSERT_TRUE(base.ok());
  std::vector<int64_t> dps;
  for (int nodes : {1, 2, 4}) {
    ScenarioDocument point = *base;
    ASSERT_TRUE(point.ApplyOverride("cluster.nodes", std::to_string(nodes)).ok());
    StatusOr<Scenario> s = point.Resolve();
    ASSERT_TRUE(s.ok()) << s.status().message();
    dps.push_back(s->strategy.mesh.dp);
  }
  // nodes × 8 GPUs / tp 8 = nodes.
  EXPECT_EQ(dps, (std::vector<int64_t>{1, 2, 4}));
  StatusOr<Scenario> unchanged = base->Resolve();
  ASSERT_TRUE(unchanged.ok());
  EXPECT_EQ(unchanged->cluster.nodes, 2);
}

TEST(ScenarioOverride, AcceptsTheJsonCamelCaseName) {
  StatusOr<Scenario> s = Load({"training.microBatch=2"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->training.micro_batch, 2);
}

TEST(ScenarioOverride, SimulationSettingsDefaultWhenUnset) {
  StatusOr<Scenario> s = Load({});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.network_model, "flow");
  EXPECT_EQ(s->simulation.collective_algorithm, "auto");
  // Unset: the strategy preset's framework decides (strategies::GradientBucket).
  EXPECT_FALSE(s->simulation.gradient_bucket_size.has_value());
  EXPECT_EQ(s->simulation.prefetch_depth, 1);
  EXPECT_FALSE(s->simulation.sync_grads_every_micro_batch);
  EXPECT_FALSE(s->simulation.gather_granularity.has_value());
  EXPECT_FALSE(s->simulation.overlap_grad_reduce.has_value());
  EXPECT_FALSE(s->simulation.blocking_p2p.has_value());
  EXPECT_FALSE(s->simulation.zero3_max_reuse_distance.has_value());
  EXPECT_FALSE(s->simulation.reshard_after_forward.has_value());
}

TEST(ScenarioOverride, SetsTheFrameworkOverheads) {
  StatusOr<Scenario> s =
      Load({"simulation.gather_granularity=per_parameter", "simulation.overlap_grad_reduce=false"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.gather_granularity, "per-parameter");
  EXPECT_EQ(s->simulation.overlap_grad_reduce, false);
  EXPECT_EQ(s->simulation.host_time_per_layer, Duration::Zero());
  EXPECT_EQ(s->simulation.host_time_per_layer_backward, std::nullopt);
  s = Load({"simulation.blocking_p2p=false"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.blocking_p2p, false);
  s = Load({"simulation.host_time_per_layer=150 us"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.host_time_per_layer, Microseconds(150));
  for (const char* bad : {"150", "2 s"}) {
    s = Load({std::string("simulation.host_time_per_layer=") + bad});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.status().message(), HasSubstr("simulation.host_time_per_layer")) << bad;
  }
  EXPECT_THAT(Load({"simulation.host_time_per_layer=2 s"}).status().message(),
              HasSubstr("must be at most \"1 s\""));
  s = Load({"simulation.host_time_per_layer_backward=0.3 ms"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.host_time_per_layer_backward, Microseconds(300));
  EXPECT_EQ(s->simulation.host_time_per_layer, Duration::Zero());
  for (const char* bad : {"-1 us", "150", "2 s"}) {
    s = Load({std::string("simulation.host_time_per_layer_backward=") + bad});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_THAT(s.status().message(), HasSubstr("simulation.host_time_per_layer_backward")) << bad;
  }
  s = Load({"simulation.gather_granularity=GATHER_GRANULARITY_PER_UNIT"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.gather_granularity, "per-unit");
  EXPECT_THAT(OverrideError("simulation.gather_granularity", "per_layer"),
              HasSubstr("per_parameter"));
  // DeepSpeed's stage3_max_reuse_distance, 0 to 1e15 elements.
  s = Load({"simulation.zero3_max_reuse_distance=200000000"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.zero3_max_reuse_distance, 200'000'000);
  s = Load({"simulation.zero3_max_reuse_distance=0"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.zero3_max_reuse_distance, 0);
  s = Load({"simulation.zero3_max_reuse_distance=-1"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("simulation.zero3_max_reuse_distance"));
  s = Load({"simulation.reshard_after_forward=false"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.reshard_after_forward, false);
  // Held parameters are modelled without pipeline parallelism only.
  s = Load({"strategy.pp=2", "simulation.reshard_after_forward=false"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              AllOf(HasSubstr("simulation.reshard_after_forward"), HasSubstr("false"),
                    HasSubstr("strategy.pp is 2"), HasSubstr("allowed here: true")));
  s = Load({"strategy.pp=2", "simulation.reshard_after_forward=true"});
  EXPECT_TRUE(s.ok()) << s.status().message();
}

TEST(ScenarioOverride, DistributedSavedActivationsNeedFullRecomputeAndTensorParallelism) {
  StatusOr<Scenario> s =
      Load({"training.recompute=RECOMPUTE_FULL", "training.distribute_saved_activations=true"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->training.distribute_saved_activations);
  const std::vector<std::pair<std::vector<std::string>, const char*>> bad = {
      {{"training.distribute_saved_activations=true"}, "needs training.recompute RECOMPUTE_FULL"},
      {{"training.recompute=RECOMPUTE_FULL", "strategy.tp=1",
        "training.distribute_saved_activations=true"},
       "strategy.tp is 1"},
      {{"training.recompute=RECOMPUTE_FULL", "training.sequence_parallel=true",
        "training.distribute_saved_activations=true"},
       "training.sequence_parallel"},
  };
  for (const auto& [overrides, why] : bad) {
    s = Load(overrides);
    ASSERT_FALSE(s.ok()) << why;
    EXPECT_THAT(s.status().message(), AllOf(HasSubstr("training.distribute_saved_activations"),
                                            HasSubstr(why), HasSubstr("allowed here: false")));
  }
}

// A gradient bucket set in the scenario is what the simulation's schedule uses, whatever the
// framework: the zero1 preset's Megatron-LM rule (one bucket for the whole buffer without
// overlap_grad_reduce) gives way to it.
TEST(ScenarioOverride, AnExplicitGradientBucketWinsOverTheFrameworks) {
  StatusOr<Scenario> s = Load({"simulation.gradient_bucket_size=50 MiB"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.gradient_bucket_size, MiB(50));
  EXPECT_EQ(strategies::GradientBucket(s->simulation.gradient_bucket_size, s->strategy, s->training,
                                       s->simulation.overlap_grad_reduce),
            MiB(50));
  s = Load({});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(strategies::GradientBucket(s->simulation.gradient_bucket_size, s->strategy, s->training,
                                       s->simulation.overlap_grad_reduce),
            strategies::kWholeGradientBucket);
}

TEST(ScenarioOverride, SetsEverySimulationSetting) {
  StatusOr<Scenario> s =
      Load({"simulation.network_model=analytic", "simulation.collective_algorithm=hierarchical",
            "simulation.gradient_bucket_size=50 MiB", "simulation.prefetch_depth=3",
            "simulation.sync_grads_every_micro_batch=true"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->simulation.network_model, "analytic");
  EXPECT_EQ(s->simulation.collective_algorithm, "hierarchical");
  EXPECT_EQ(s->simulation.gradient_bucket_size, MiB(50));
  EXPECT_EQ(s->simulation.prefetch_depth, 3);
  EXPECT_TRUE(s->simulation.sync_grads_every_micro_batch);
  for (const char* name : {"ring", "TREE", "COLLECTIVE_ALGORITHM_AUTO"}) {
    EXPECT_TRUE(Load({std::string("simulation.collective_algorithm=") + name}).ok()) << name;
  }
}

TEST(ScenarioOverride, AnUnknownSimulationEnumNameListsTheValidOnes) {
  EXPECT_THAT(OverrideError("simulation.network_model", "packet"),
              HasSubstr("simulation.network_model"));
  EXPECT_THAT(OverrideError("simulation.network_model", "packet"), HasSubstr("analytic"));
}

TEST(ScenarioOverride, AnUnknownPluginNameAnswersInTheRegistrysWords) {
  // The valid names are the registries': "auto" (reserved) then the built-ins in registration
  // order (collectives::RegisterBuiltins: ring, tree, hierarchical, pairwise;
  // RegisterBuiltinNetworkModels: flow, analytic), in the words of PluginRegistry::Lookup.
  EXPECT_EQ(OverrideError("simulation.collective_algorithm", "foo"),
            "simulation.collective_algorithm: unknown collective algorithm \"foo\"; valid: auto, "
            "ring, tree, hierarchical, pairwise");
  EXPECT_EQ(OverrideError("simulation.network_model", "packet"),
            "simulation.network_model: unknown network model \"packet\"; valid: flow, analytic");
}

}  // namespace
}  // namespace placesim::sim
