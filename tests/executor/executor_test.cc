// The executor against oracles: a ring all-reduce on one NVSwitch node, DDP's overlap of
// bucketed all-reduces with backward, ZeRO-3's 3Ψ(N-1)/N bytes per device, static memory
// equal to the analytic plan, out-of-memory findings, and byte-identical reruns.
#include "sim/executor/executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sim/network/alpha_beta.h"
#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/routing.h"
#include "traces/chrome_trace_validator.h"

namespace placesim::sim {
namespace {

using strategies::CollectiveKind;
using strategies::MemoryTag;
using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;
using ::testing::HasSubstr;

constexpr size_t Idx(CollectiveKind k) { return static_cast<size_t>(k); }
constexpr size_t Idx(MemoryTag t) { return static_cast<size_t>(t); }

// `nodes` DGX-H100 nodes (8 GPUs on a 450 GB/s, 0.5 us NVSwitch plane, 80 GB HBM each).
topology::Cluster Dgx(int nodes, Bytes hbm = GB(80)) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpu.hbm_capacity = hbm;
  spec.nodes = nodes;
  spec.fabric.kind =
      nodes == 1 ? topology::FabricKind::kSingleNode : topology::FabricKind::kRailOptimized;
  StatusOr<topology::Cluster> c = topology::BuildCluster(spec);
  PLACESIM_CHECK(c.ok());
  return std::move(c).value();
}

const strategies::ModelSpec& Llama7b() { return *strategies::FindModelPreset("llama2-7b"); }

strategies::TrainingSpec Training(int64_t global_batch) {
  strategies::TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = global_batch;
  return t;
}

strategies::StrategySpec Strategy(const char* preset, int dp) {
  return *strategies::ExpandStrategyPreset(preset, {.dp = dp}, 8);
}

SimResult Simulate(const topology::Cluster& cluster, const char* preset,
                   const ExecutorOptions& options = {}) {
  StatusOr<SimResult> r = SimulateStep(cluster, Llama7b(), Training(cluster.num_gpus()),
                                       Strategy(preset, cluster.num_gpus()), options);
  PLACESIM_CHECK(r.ok());
  return std::move(r).value();
}

// A schedule of one all-reduce of `buffer` bytes over the whole dp axis of `n` ranks.
Schedule OneAllReduce(int n, Bytes buffer) {
  Schedule s;
  s.role = "all ranks";
  s.ranks = n;
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = strategies::Stream::kComm;
  op.collective = CollectiveKind::kAllReduce;
  op.group_size = n;
  op.buffer_bytes = buffer;
  op.bytes = Bytes::Count(2 * (n - 1) * buffer.count() / n);
  s.ops.push_back(op);
  return s;
}

TEST(Executor, RingAllReduceOnOneNvSwitchNodeMatchesTheAlphaBetaFormula) {
  // 8 GPUs, S = 1 GB. Each ring edge g_i -> g_{i+1} crosses g_i's uplink and g_{i+1}'s
  // downlink to the NVSwitch plane (2 links of 0.5 us, so alpha = 1 us); every link carries one
  // flow, so each flow gets the full 450 GB/s. Time = 2(N-1) alpha + 2(N-1)/N S / B
  //   = 14 us + 1.75e9 B / 450e9 B/s = 14 us + 3.888... ms (rounded up to the picosecond).
  const topology::Cluster cluster = Dgx(1);
  topology::Router router(cluster);
  const topology::Route* edge = router.Find(cluster.gpu(0), cluster.gpu(1));
  ASSERT_NE(edge, nullptr);
  ASSERT_EQ(edge->links.size(), 2u);
  ASSERT_EQ(edge->latency, Microseconds(1));

  const Duration expected = Microseconds(14) + DrainTime(1.75e9, 450e9);
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  for (NetworkModel model : {NetworkModel::kFlow, NetworkModel::kAnalytic}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<RoleResult> r = ExecuteSchedule(cluster, OneAllReduce(8, GB(1)), ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->step_time, expected) << NetworkModelName(model);
    EXPECT_EQ(r->comm_busy, expected);
    // Nothing computes, so the whole all-reduce is exposed.
    EXPECT_EQ(r->exposed_comm, expected);
    EXPECT_EQ(r->collective_bytes[Idx(CollectiveKind::kAllReduce)], MB(1750));
    EXPECT_EQ(r->collective_calls[Idx(CollectiveKind::kAllReduce)], 1);
  }
}

TEST(Executor, RingAcrossTwoNodesIsBoundByTheNic) {
  // 16 ranks on 2 nodes: the ring crosses the network twice (node0/gpu7 -> node1/gpu0 and
  // back). A 400 Gb/s NIC (50 GB/s) is the bottleneck of those two edges, so the all-reduce
  // takes at least 2(N-1)/N S / 50 GB/s; in the flow model no edge can beat its bottleneck.
  const topology::Cluster cluster = Dgx(2);
  ExecutionContext ctx;
  ctx.mesh.dp = 16;
  ExecutorOptions flow;
  StatusOr<RoleResult> r = ExecuteSchedule(cluster, OneAllReduce(16, GB(1)), ctx, flow);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Duration bound = DrainTime(2.0 * 15 / 16 * 1e9, 50e9);
  EXPECT_GE(r->step_time, bound);
  ExecutorOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  StatusOr<RoleResult> a = ExecuteSchedule(cluster, OneAllReduce(16, GB(1)), ctx, analytic);
  ASSERT_TRUE(a.ok());
  EXPECT_GE(a->step_time, bound);
}

TEST(Executor, DdpExposesOnlyTheTailOfItsBucketedAllReduces) {
  // DDP buckets of 25 MiB are all-reduced on the comm stream while backward continues on the
  // compute stream. The compute stream waits only for the gradients before the optimizer, so
  //   step time = compute busy + exposed comm,
  // and the exposed part is the tail after the last backward op: at least the last bucket's
  // all-reduce, 2(7/8) x 26,214,400 B / 450 GB/s + 14 us = 101.9 us + 14 us, and far less than
  // the whole gradient sync (2Ψ x 2 bytes x 7/8 = 23.6 GB at 450 GB/s = 52 ms).
  const topology::Cluster cluster = Dgx(1, GB(200));
  const SimResult r = Simulate(cluster, "ddp");
  ASSERT_EQ(r.roles.size(), 1u);
  const RoleResult& role = r.roles[0];
  EXPECT_EQ(role.step_time, role.compute_busy + role.exposed_comm);
  EXPECT_EQ(role.idle, role.exposed_comm);
  const Duration last_bucket = DrainTime(2.0 * 7 / 8 * MiB(25).count(), 450e9) + Microseconds(14);
  EXPECT_GE(role.exposed_comm, last_bucket);
  EXPECT_LT(role.exposed_comm * 4, role.comm_busy);
  EXPECT_GT(role.collective_calls[Idx(CollectiveKind::kAllReduce)], 1);
  // The flow model and the analytic one agree when nothing contends (one ring on one node).
  ExecutorOptions analytic;
  analytic.network = NetworkModel::kAnalytic;
  EXPECT_EQ(Simulate(cluster, "ddp", analytic).step_time, r.step_time);
  // MFU is positive and cannot exceed the matmul efficiency (0.70) the roofline assumes.
  EXPECT_GT(r.mfu, 0.0);
  EXPECT_LT(r.mfu, 0.70);
  // 8 sequences of 4096 tokens per step.
  EXPECT_DOUBLE_EQ(r.tokens_per_second, 8 * 4096 / r.step_time.ToSeconds());
}

TEST(Executor, Zero3MovesThreePsiTimesNMinusOneOverNBytesPerDevice) {
  // ZeRO-3 with one micro-batch: parameters gathered before forward and again before backward,
  // gradients reduce-scattered: 3 x (N-1)/N x 2Ψ bytes (bf16) per device per step.
  const topology::Cluster cluster = Dgx(1);
  const SimResult r = Simulate(cluster, "zero3");
  const RoleResult& role = r.roles[0];
  const double psi = static_cast<double>(r.plan.parameter_count);
  EXPECT_NEAR(static_cast<double>(role.comm_bytes().count()) / (3.0 * 7 / 8 * 2 * psi), 1.0, 1e-6);
  EXPECT_EQ(role.comm_bytes(), r.plan.largest().comm_bytes);
  EXPECT_EQ(role.collective_bytes[Idx(CollectiveKind::kAllReduce)], Bytes::Zero());
  EXPECT_EQ(role.collective_bytes[Idx(CollectiveKind::kAllGather)] +
                role.collective_bytes[Idx(CollectiveKind::kReduceScatter)],
            role.comm_bytes());
}

TEST(Executor, StaticMemoryAtThePeakEqualsTheAnalyzersFigures) {
  // 400 GB of HBM, so every strategy fits (DDP needs 16Ψ = 108 GB of model state plus
  // 32 x sbh(34 + 5as/h) = 105 GB of activations) and the peak is not cut short.
  const topology::Cluster cluster = Dgx(1, GB(400));
  for (const char* preset : {"ddp", "zero1", "zero2", "zero3"}) {
    const SimResult r = Simulate(cluster, preset);
    const RoleResult& role = r.roles[0];
    const strategies::MemoryBreakdown& m = r.plan.largest().memory;
    EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kParams)], m.params) << preset;
    EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kGrads)], m.grads) << preset;
    EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kOptimizer)], m.optimizer) << preset;
    // Backward starts with every activation live (Korthikanti et al.), so that is the peak.
    EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kActivations)], m.activations) << preset;
    // Beyond the plan's worst case, the executed peak holds only the gradient buckets still
    // waiting for their collective (the plan counts none for ZeRO-2: its buckets queue behind
    // the reduce-scatters while backward runs ahead).
    EXPECT_LE(role.peak_memory - role.live_at_peak[Idx(MemoryTag::kGradBuckets)], m.total)
        << preset;
    EXPECT_TRUE(r.findings.empty()) << preset;
  }
}

TEST(Executor, DdpOfA7bModelOnEightyGigabyteGpusIsOutOfMemory) {
  // DDP keeps 16Ψ = 16 x 6.74e9 = 108 GB of model state per GPU: more than 80 GB.
  const SimResult r = Simulate(Dgx(1), "ddp");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, "out-of-memory");
  EXPECT_THAT(r.findings[0].message, HasSubstr("exceeds the GPU's 80.00 GB"));
  EXPECT_GT(r.roles[0].peak_memory, GB(80));
}

TEST(Executor, OffloadedOptimizerRunsOnTheHostAndCopiesOverPcie) {
  const topology::Cluster cluster = Dgx(1);
  const SimResult r = Simulate(cluster, "zero-offload");
  const RoleResult& role = r.roles[0];
  EXPECT_GT(role.copy_busy, Duration::Zero());
  EXPECT_GT(role.host_busy, Duration::Zero());
  EXPECT_EQ(role.copy_bytes, r.plan.largest().copy_bytes);
  EXPECT_GT(role.peak_host_memory, Bytes::Zero());
}

TEST(Executor, TwoRunsAreByteIdenticalAndTheTraceIsValid) {
  const topology::Cluster cluster = Dgx(1);
  std::string traces[2];
  Duration steps[2];
  for (int i = 0; i < 2; ++i) {
    std::ostringstream out;
    traces::ChromeTraceWriter writer(out);
    ExecutorOptions opt;
    opt.trace = &writer;
    steps[i] = Simulate(cluster, "zero3", opt).step_time;
    ASSERT_TRUE(writer.Finish().ok());
    traces[i] = out.str();
  }
  EXPECT_EQ(steps[0], steps[1]);
  EXPECT_EQ(traces[0], traces[1]);
  StatusOr<traces::TraceSummary> summary = traces::ValidateChromeTrace(traces[0]);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_GT(summary->complete_events, 100u);
  EXPECT_GT(summary->counter_events, 0u);
}

TEST(Executor, RefusesAMeshThatDoesNotMatchTheCluster) {
  ExecutionContext ctx;
  ctx.mesh.dp = 4;
  StatusOr<RoleResult> r = ExecuteSchedule(Dgx(1), OneAllReduce(4, GB(1)), ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("mesh of 4 ranks on a cluster of 8 GPUs"));
}

TEST(Executor, RefusesComputeOnADeviceWithoutAPeak) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpu.peak = {};
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  ASSERT_TRUE(cluster.ok());
  StatusOr<SimResult> r = SimulateStep(*cluster, Llama7b(), Training(8), Strategy("zero3", 8));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("peak bf16 x matmul_efficiency"));
}

}  // namespace
}  // namespace placesim::sim
