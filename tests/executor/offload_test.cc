// Offload on meshes whose offloading axis has size 1: ZeRO-Offload and ZeRO-Infinity on one
// GPU, and ZeRO-Offload on dp 1 x tp 2. The simulated step must keep the offloaded states off
// the device, copy what the plan copies over PCIe (or from NVMe) and run the optimizer on the
// host, as it does at dp > 1 (issue 12: with dp 1 all 16 bytes per parameter stayed on the GPU
// and no copy or host time was simulated).
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

// One DGX-H100 cut down to `gpus` GPUs (80 GB each), with one PCIe switch to the host.
topology::Cluster SmallDgx(int gpus) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = gpus;
  spec.node.pcie_switches = 1;
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  StatusOr<topology::Cluster> c = topology::BuildCluster(spec);
  PLACESIM_CHECK(c.ok());
  return std::move(c).value();
}

const strategies::ModelSpec& Llama7b() { return *strategies::FindModelPreset("llama2-7b"); }

SimResult Simulate(int gpus, const char* preset, const topology::MeshShape& mesh,
                   int64_t micro_batches) {
  strategies::TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = micro_batches * mesh.dp;
  // Full recompute keeps the activations small beside the model states this is about.
  t.recompute = strategies::Recompute::kFull;
  StatusOr<strategies::StrategySpec> s = strategies::ExpandStrategyPreset(preset, mesh, gpus);
  PLACESIM_CHECK(s.ok());
  StatusOr<SimResult> r = SimulateStep(SmallDgx(gpus), Llama7b(), t, *s);
  PLACESIM_CHECK(r.ok());
  return std::move(r).value();
}

int64_t Psi() { return strategies::CountParameters(Llama7b().transformer).total(); }

TEST(Offload, ZeroOffloadOnOneGpuCopiesOverPcieAndStepsOnTheHost) {
  // Two micro-batches: each one's bf16 grads leave the device (2 x 2Ψ), the updated bf16
  // params come back once (2Ψ): 6Ψ copied. The host holds grads and Adam state, (2 + 12)Ψ.
  // The device keeps the params (2Ψ) plus buffers: far below DDP's 16Ψ.
  const SimResult r = Simulate(1, "zero-offload", {.dp = 1}, 2);
  const RoleResult& role = r.roles[0];
  EXPECT_EQ(role.copy_bytes.count(), 6 * Psi());
  EXPECT_EQ(role.copy_bytes, r.plan.largest().copy_bytes);
  EXPECT_EQ(role.peak_host_memory.count(), 14 * Psi());
  EXPECT_GT(role.copy_busy, Duration::Zero());
  EXPECT_GT(role.host_busy, Duration::Zero());
  EXPECT_LT(role.peak_memory.count(), 4 * Psi());
  EXPECT_TRUE(r.findings.empty());
}

TEST(Offload, ZeroOffloadOnDataParallelOneWithTensorParallelTwo) {
  // Each tp rank offloads its slice (params_local elements): 14 bytes each on the host; two
  // micro-batches of its grads out and its params back, 6 bytes each.
  const SimResult r = Simulate(2, "zero-offload", {.dp = 1, .tp = 2}, 2);
  const RoleResult& role = r.roles[0];
  const int64_t slice = r.plan.largest().params_local;
  EXPECT_EQ(role.peak_host_memory.count(), 14 * slice);
  EXPECT_EQ(role.copy_bytes.count(), 6 * slice);
  EXPECT_EQ(role.copy_bytes, r.plan.largest().copy_bytes);
  EXPECT_GT(role.host_busy, Duration::Zero());
  EXPECT_LT(role.peak_memory.count(), 4 * slice);
}

TEST(Offload, ZeroInfinityOnOneGpuStreamsParamsFromNvme) {
  // Params and Adam state on NVMe ((2 + 12)Ψ), grads on the host (2Ψ). One micro-batch reads
  // the params twice (forward, backward: 2 x 2Ψ) and writes its grads once (2Ψ): 6Ψ.
  const SimResult r = Simulate(1, "zero-infinity", {.dp = 1}, 1);
  const RoleResult& role = r.roles[0];
  EXPECT_EQ(role.peak_nvme.count(), 14 * Psi());
  EXPECT_EQ(role.peak_host_memory.count(), 2 * Psi());
  EXPECT_EQ(role.copy_bytes.count(), 6 * Psi());
  EXPECT_EQ(role.copy_bytes, r.plan.largest().copy_bytes);
  EXPECT_GT(role.host_busy, Duration::Zero());
  EXPECT_LT(role.peak_memory.count(), 2 * Psi());
}

}  // namespace
}  // namespace placesim::sim
