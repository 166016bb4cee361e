// fp32 main gradients (training.main_grads_fp32) in the simulated step: the device keeps 4
// bytes of gradient per parameter and the data-parallel gradient reduction moves fp32, while
// the parameter all-gather stays bf16, as Megatron-LM's main_grad buffer does
// (megatron/core/distributed: the grad buffer is fp32 when grad_reduce_in_fp32); and fp8
// training's cached fp8 weights and transposes beside the bf16 weights.
// Thread-safety: tests run one at a time.
#include <gtest/gtest.h>

#include <utility>

#include "sim/executor/executor.h"
#include "strategies/analyzer.h"
#include "strategies/model.h"
#include "strategies/presets.h"
#include "topology/cluster.h"
#include "topology/presets.h"

namespace placesim::sim {
namespace {

using strategies::CollectiveKind;

SimResult Simulate(const char* preset, strategies::Precision precision, bool main_grads_fp32) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = 2;
  spec.node.pcie_switches = 1;
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  PLACESIM_CHECK(cluster.ok());
  strategies::TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = 4;  // two micro-batches per rank
  t.recompute = strategies::Recompute::kFull;
  t.main_grads_fp32 = main_grads_fp32;
  t.precision = precision;
  StatusOr<strategies::StrategySpec> s = strategies::ExpandStrategyPreset(preset, {.dp = 2}, 2);
  PLACESIM_CHECK(s.ok());
  StatusOr<SimResult> r = SimulateStep(*cluster, *strategies::FindModelPreset("llama2-7b"), t, *s);
  PLACESIM_CHECK(r.ok());
  return std::move(r).value();
}

SimResult SimulateZero1(bool main_grads_fp32) {
  return Simulate("zero1", strategies::Precision::kBf16Mixed, main_grads_fp32);
}

size_t Kind(CollectiveKind k) { return static_cast<size_t>(k); }

TEST(Precision, Fp32MainGradsDoubleTheGradientBytesOnTheDeviceAndOnTheWire) {
  const SimResult bf16 = SimulateZero1(false);
  const SimResult fp32 = SimulateZero1(true);
  const RoleResult& a = bf16.roles[0];
  const RoleResult& b = fp32.roles[0];
  // ZeRO-1 keeps the whole gradient on each rank: Ψ elements of 2 bytes, then of 4.
  const int64_t psi = bf16.plan.largest().params_local;
  EXPECT_EQ(fp32.plan.largest().memory.grads.count(), 4 * psi);
  EXPECT_GE((b.peak_memory - a.peak_memory).count(), 2 * psi);
  // The reduce-scatter of the gradients moves twice the bytes; the all-gather of the updated
  // bf16 params the same.
  const Bytes rs_a = a.collective_bytes[Kind(CollectiveKind::kReduceScatter)];
  const Bytes rs_b = b.collective_bytes[Kind(CollectiveKind::kReduceScatter)];
  ASSERT_GT(rs_a, Bytes::Zero());
  EXPECT_NEAR(rs_b / rs_a, 2.0, 1e-9);
  EXPECT_EQ(b.collective_bytes[Kind(CollectiveKind::kAllGather)],
            a.collective_bytes[Kind(CollectiveKind::kAllGather)]);
  // What the simulated step moves is what the plan counts.
  EXPECT_EQ(b.comm_bytes(), fp32.plan.largest().comm_bytes);
}

TEST(Precision, Fp8KeepsEachLayersWeightsAndTransposesInFp8BesideTheBf16Weights) {
  // Transformer Engine caches W and W^T in fp8 for the step's micro-batches: 2 bytes per
  // layer parameter. Llama 2 7B on one pipeline stage without tp: 32 layers x per_layer
  // elements (CountParameters) x 2 bytes, in analyze's params and in the simulated peak alike.
  using strategies::Precision;
  const SimResult bf16 = Simulate("zero1", Precision::kBf16Mixed, false);
  const SimResult fp8 = Simulate("zero1", Precision::kFp8Mixed, false);
  const strategies::ParameterBreakdown p =
      strategies::CountParameters(strategies::FindModelPreset("llama2-7b")->transformer);
  const int64_t cache = 2 * p.layers * p.per_layer();
  EXPECT_EQ((fp8.plan.largest().memory.params - bf16.plan.largest().memory.params).count(), cache);
  EXPECT_GE((fp8.roles[0].peak_memory - bf16.roles[0].peak_memory).count(), cache);
  // ZeRO-3 gathers the weights per use and casts them then: no cache is kept.
  const SimResult z3_bf16 = Simulate("zero3", Precision::kBf16Mixed, false);
  const SimResult z3_fp8 = Simulate("zero3", Precision::kFp8Mixed, false);
  EXPECT_EQ(z3_fp8.plan.largest().memory.params, z3_bf16.plan.largest().memory.params);
}

}  // namespace
}  // namespace placesim::sim
