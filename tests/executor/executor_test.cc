// The executor against oracles: a ring all-reduce on one NVSwitch node, the hierarchical
// all-reduce across nodes as the sum of its phases, the tree / hierarchical choice by size,
// forced algorithms, per-link-kind statistics, DDP's overlap of bucketed all-reduces with
// backward, ZeRO-3's 3Ψ(N-1)/N bytes per device, static memory equal to the analytic plan,
// activations at the peak equal to the plan's under recompute, out-of-memory findings, the
// trace's processes and args, and byte-identical reruns. Pipeline stages run together: a recv
// released when its send has delivered, a send on the p2p stream overlapping a collective,
// per-stage folding, validation of recvs, deadlocks across stages, and their traces.
#include "sim/executor/executor.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/network/alpha_beta.h"
#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/routing.h"
#include "traces/chrome_trace_validator.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::sim {
namespace {

using strategies::CollectiveKind;
using strategies::MemoryTag;
using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr size_t Idx(CollectiveKind k) { return static_cast<size_t>(k); }
constexpr size_t Idx(MemoryTag t) { return static_cast<size_t>(t); }

// The algorithm that ran the one call of `kind` (the one op of OneAllReduce), or "none".
std::string Chosen(const RoleResult& r, CollectiveKind kind = CollectiveKind::kAllReduce) {
  const std::vector<int64_t>& calls = r.algorithm_calls[Idx(kind)];
  for (size_t a = 0; a < calls.size(); ++a) {
    if (calls[a] == 1) return r.algorithm_names[a];
  }
  return "none";
}

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

// Finishes `writer` and checks that what it wrote to `out` is a valid trace; returns the trace
// and its summary.
std::pair<std::string, traces::TraceSummary> FinishValidTrace(traces::ChromeTraceWriter& writer,
                                                              const std::ostringstream& out) {
  PLACESIM_CHECK(writer.Finish().ok());
  StatusOr<traces::TraceSummary> summary = traces::ValidateChromeTrace(out.str());
  PLACESIM_CHECK(summary.ok());
  return {out.str(), *summary};
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
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<RoleResult> r = ExecuteSchedule(cluster, OneAllReduce(8, GB(1)), ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->step_time, expected) << model;
    EXPECT_EQ(r->comm_busy, expected);
    // Nothing computes, so the whole all-reduce is exposed.
    EXPECT_EQ(r->exposed_comm, expected);
    EXPECT_EQ(r->collective_bytes[Idx(CollectiveKind::kAllReduce)], MB(1750));
    EXPECT_EQ(r->collective_calls[Idx(CollectiveKind::kAllReduce)], 1);
  }
}

TEST(Executor, TheProtocolCostAddsToTheRingOnBothNetworkModels) {
  // The ring all-reduce above with NCCL's protocol cost (sim/collectives/nccl_model.h): 1 GB
  // runs Simple, which adds its base latency 8.4 us and, per ring step, its NVLink hop latency
  // 3.4 us less the route's 1 us: 8.4 + 14 x 2.4 = 42 us on top of 14 us + 1.75e9 / 450e9 s.
  // A 8 B all-reduce runs LL: 6.6 us on top of 14 us (LL's 0.47 us hop is below the route's,
  // and its quarter bandwidth costs 3 x the wire's 14 B / 450 GB/s = 3 x 32 ps, rounded up).
  const topology::Cluster cluster = Dgx(1);
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    opt.protocol_cost = true;
    StatusOr<RoleResult> big = ExecuteSchedule(cluster, OneAllReduce(8, GB(1)), ctx, opt);
    ASSERT_TRUE(big.ok()) << big.status().message();
    EXPECT_EQ(big->step_time, Microseconds(14 + 42) + DrainTime(1.75e9, 450e9)) << model;
    EXPECT_EQ(big->protocol_calls[static_cast<size_t>(collectives::Protocol::kSimple)], 1);
    StatusOr<RoleResult> tiny =
        ExecuteSchedule(cluster, OneAllReduce(8, Bytes::Count(8)), ctx, opt);
    ASSERT_TRUE(tiny.ok()) << tiny.status().message();
    EXPECT_EQ(tiny->step_time,
              Microseconds(14 + 6.6) + DrainTime(14, 450e9) + Duration::Picoseconds(3 * 32))
        << model;
    EXPECT_EQ(tiny->protocol_calls[static_cast<size_t>(collectives::Protocol::kLL)], 1);
  }
}

TEST(Executor, AllToAllOnOneNvSwitchNodeIsOnePairwisePhase) {
  // 8 GPUs, ep = 8 carved out of dp = 8, S = 1 GB. The all-to-all is one phase of N (N-1) = 56
  // flows g_i -> g_j of S/N = 125 MB, one step each (alpha = 1 us: uplink + downlink). Every
  // uplink carries the N-1 = 7 flows its GPU sends and every downlink the 7 it receives, so
  // max-min sharing gives each flow 450/7 GB/s and all of them end together:
  //   time = alpha + (N-1)/N S / B = 1 us + 0.875e9 B / 450e9 B/s = 1 us + 1.944... ms.
  // The analytic model charges each flow its sender's load, (N-1)/N S, and agrees.
  const topology::Cluster cluster = Dgx(1);
  Schedule s = OneAllReduce(8, GB(1));
  Op& op = s.ops.front();
  op.collective = CollectiveKind::kAllToAll;
  op.axis = topology::Axis::kExpert;
  op.group_size = 8;
  op.bytes = MB(875);  // (N-1)/N S sent per device
  const Duration expected = Microseconds(1) + DrainTime(0.875e9, 450e9);
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  ctx.mesh.ep = 8;
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<RoleResult> r = ExecuteSchedule(cluster, s, ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->step_time, expected) << model;
    EXPECT_EQ(r->collective_bytes[Idx(CollectiveKind::kAllToAll)], MB(875));
    EXPECT_EQ(r->collective_calls[Idx(CollectiveKind::kAllToAll)], 1);
    EXPECT_EQ(Chosen(*r, CollectiveKind::kAllToAll), "pairwise");
  }
  // ep = 4 on dp = 8: two groups of 4 consecutive dp ranks run at once, each GPU in one of
  // them: 3 flows of S/4 per uplink, time = alpha + 3/4 S / B.
  // A forced algorithm does not apply to it: still pairwise.
  ctx.mesh.ep = 4;
  op.group_size = 4;
  op.bytes = MB(750);
  ExecutorOptions ring;
  ring.algorithm = "ring";
  StatusOr<RoleResult> r = ExecuteSchedule(cluster, s, ctx, ring);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->step_time, Microseconds(1) + DrainTime(0.75e9, 450e9));
}

TEST(Executor, TensorParallelAllReduceOfOneLayerMatchesTheRingFormula) {
  // One llama2-7b layer (h = 4096, s = 4096, b = 1) with tp = 8 on one DGX-H100, dp = 1, one
  // micro-batch, no sequence parallelism. The tp group is the 8 consecutive GPUs of the node;
  // each tp all-reduce moves S = b s h x 2 bytes = 33,554,432 B over the ring of one NVSwitch
  // plane, each edge alone on its two 0.5 us links (alpha = 1 us) at B = 450 GB/s:
  //   T = 2(N-1) alpha + 2(N-1)/N S / B = 14 us + 58,720,256 B / 450e9 B/s (about 144.5 us).
  // The step issues five of them, one at a time on the comm stream: the vocab-parallel
  // embedding's, the attention and MLP outputs' in forward, and the two input gradients' in
  // backward; nothing else communicates (dp = 1), so the comm stream is busy 5 T.
  const topology::Cluster cluster = Dgx(1);
  strategies::ModelSpec model = Llama7b();
  model.transformer.layers = 1;
  const strategies::StrategySpec strategy =
      *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .tp = 8}, 8);
  const int64_t S = 4096 * 4096 * 2;
  const Duration ring = Microseconds(14) + DrainTime(2.0 * 7 / 8 * S, 450e9);
  for (const char* network : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = network;
    StatusOr<SimResult> r = SimulateStep(cluster, model, Training(1), strategy, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->roles.size(), 1u);
    const RoleResult& role = r->roles.front();
    EXPECT_EQ(role.collective_calls[Idx(CollectiveKind::kAllReduce)], 5);
    EXPECT_EQ(role.collective_bytes[Idx(CollectiveKind::kAllReduce)],
              Bytes::Count(5 * 2 * 7 * S / 8));
    EXPECT_EQ(role.comm_busy, ring * 5) << network;
    // Each all-reduce sits on the critical path (the next block reads its result), except
    // the last one of backward, which overlaps the layer's weight-gradient GEMM.
    EXPECT_GE(role.exposed_comm, ring * 4) << network;
  }
}

TEST(Executor, RingAcrossTwoNodesIsBoundByTheNodesNics) {
  // The ring, forced: 16 ranks on 2 nodes run NCCL's multi-channel ring, one channel per GPU
  // of a node, each leaving its node through its own 400 Gb/s NIC (50 GB/s). Each NIC carries
  // 1/8 of the ring volume V = 2(N-1)/N S, so the eight together bound the all-reduce at
  // V / 400 GB/s (4.69 ms for S = 1 GB), eight times under one NIC's V / 50 GB/s (37.5 ms);
  // the NVLink edges carry 7/8 V at 450 GB/s (3.65 ms) and are not the bottleneck. The
  // latency, the fill and the protocol cost add microseconds: within 1% of the bound.
  const topology::Cluster cluster = Dgx(2);
  ExecutionContext ctx;
  ctx.mesh.dp = 16;
  const Duration bound = DrainTime(2.0 * 15 / 16 * 1e9, 8 * 50e9);
  for (const char* network : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = network;
    opt.algorithm = "ring";
    StatusOr<RoleResult> r = ExecuteSchedule(cluster, OneAllReduce(16, GB(1)), ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_GE(r->step_time, bound) << network;
    EXPECT_LE(r->step_time, Duration::Picoseconds(bound.picoseconds() * 101 / 100)) << network;
  }
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
  analytic.network = "analytic";
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

TEST(Executor, HeldGatheredParametersPeakWithTheWholeModelAsTheAnalyzerCounts) {
  // FSDP SHARD_GRAD_OP on one DGX (dp 8, one micro-batch each): every unit gathered in the
  // forward is still whole when the backward starts, where the activations peak too. The
  // gathered parameters live then are Llama 2 7B's 6,738,415,616 parameters x 2 bytes =
  // 13,476,831,232 bytes, and the other states are the plan's; gradient buckets aside, the
  // peak is within the plan's total.
  const topology::Cluster cluster = Dgx(1, GB(400));
  ExecutorOptions options;
  options.schedule.reshard_after_forward = false;
  const SimResult r = Simulate(cluster, "fsdp", options);
  const RoleResult& role = r.roles[0];
  const strategies::MemoryBreakdown& m = r.plan.largest().memory;
  EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kGatheredParams)], Bytes::Count(13'476'831'232));
  EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kActivations)], m.activations);
  EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kOptimizer)], m.optimizer);
  EXPECT_LE(role.peak_memory - role.live_at_peak[Idx(MemoryTag::kGradBuckets)], m.total);
  // One gather per unit instead of two: 2 Psi (N-1)/N bytes of gathers and as many of
  // reduce-scatters, against FULL_SHARD's 3 Psi (Zero3MovesThreePsiTimesNMinusOneOverNBytes...).
  const double psi = static_cast<double>(r.plan.parameter_count);
  EXPECT_NEAR(static_cast<double>(role.comm_bytes().count()) / (2.0 * 7 / 8 * 2 * psi), 1.0, 1e-6);
  EXPECT_EQ(role.comm_bytes(), r.plan.largest().comm_bytes);
}

TEST(Executor, ActivationsAtThePeakEqualTheAnalyzersFigureUnderRecompute) {
  // DDP's model state is resident, so the executed peak is where the activations peak. Under
  // recompute that is the backward of the last layer: every kept activation or checkpoint
  // plus what recompute rebuilt for that layer, the plan's activations figure.
  const topology::Cluster cluster = Dgx(1, GB(400));
  for (strategies::Recompute recompute :
       {strategies::Recompute::kSelective, strategies::Recompute::kFull}) {
    strategies::TrainingSpec training = Training(cluster.num_gpus());
    training.recompute = recompute;
    StatusOr<SimResult> r =
        SimulateStep(cluster, Llama7b(), training, Strategy("ddp", cluster.num_gpus()));
    ASSERT_TRUE(r.ok());
    const RoleResult& role = r->roles[0];
    EXPECT_EQ(role.live_at_peak[Idx(MemoryTag::kActivations)] +
                  role.live_at_peak[Idx(MemoryTag::kCheckpoints)],
              r->plan.largest().memory.activations)
        << strategies::RecomputeName(recompute);
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

RoleResult RunAllReduce(const topology::Cluster& cluster, int n, Bytes buffer,
                        ExecutorOptions opt) {
  ExecutionContext ctx;
  ctx.mesh.dp = n;
  StatusOr<RoleResult> r = ExecuteSchedule(cluster, OneAllReduce(n, buffer), ctx, opt);
  PLACESIM_CHECK(r.ok());
  return std::move(r).value();
}

TEST(Executor, HierarchicalAllReduceAcrossTwoNodesIsItsLongestPhasePlusTheFill) {
  // 16 ranks on 2 DGX-H100 nodes, S = 1 GB, L = 8 members per node, M = 2 nodes. The phases
  // run at once, pipelined in chunks:
  //   intra: the reduce-scatter and the all-gather on 8-GPU rings on each NVSwitch plane, each
  //      edge carrying 2 x 7/8 S = 1750 MB at 450 GB/s over 14 steps of 1 us:
  //      14 us + 1750e6 / 450e9 s = 3.903 ms;
  //   rails: per-rail all-reduce of S/8 over 2 nodes: GPU i of node 0 and GPU i of node 1 swap
  //      2(M-1)/M x S/8 = 125 MB through NIC i (GPU -> PCIe switch -> NIC -> rail leaf -> NIC
  //      -> PCIe switch -> GPU: 0.5 + 0.5 + 2 + 2 + 0.5 + 0.5 = 6 us, bottleneck the 400 Gb/s
  //      = 50 GB/s NIC), 2 steps: 12 us + 125e6 / 50e9 s = 2.512 ms.
  // The rails use NICs and PCIe lanes, the intra rings NVLink, so nothing contends: the call
  // takes the longer, intra, plus the pipeline fill, the rails' time over the
  // ceil(1e9 / 4 MiB) = 239 chunks (kPipelineChunk), on the flow and the analytic model alike.
  const topology::Cluster cluster = Dgx(2);
  const Duration intra = Microseconds(14) + DrainTime(1750e6, 450e9);
  const Duration rails = Microseconds(12) + DrainTime(125e6, 50e9);
  const Duration expected = intra + Duration::Picoseconds(rails.picoseconds() / 239);
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    opt.algorithm = "hierarchical";
    const RoleResult r = RunAllReduce(cluster, 16, GB(1), opt);
    EXPECT_EQ(r.step_time, expected) << model;
    EXPECT_EQ(Chosen(r), "hierarchical");
    // kAuto picks it too for 1 GB: the tree would need 2 S / 50 GB/s = 40 ms.
    opt.algorithm = "auto";
    EXPECT_EQ(Chosen(RunAllReduce(cluster, 16, GB(1), opt)), "hierarchical");
  }
}

TEST(Executor, AutoPicksTheTreeForSmallAndHierarchicalForLargeAllReduces) {
  // 16 nodes x 8 GPUs. Latency: hierarchical pays 2(L-1) = 14 NVSwitch steps of 1 us plus
  // 2(M-1) = 30 rail steps of >= 6 us (> 190 us); the double binary tree over 128 ranks has
  // height floor(log2 128) = 7, so 2 x 7 steps of at most ~10 us (< 150 us). At 1 KiB the
  // bandwidth terms are nanoseconds, so the tree wins. At 1 GiB the tree's 2 S / 50 GB/s =
  // 43 ms loses to hierarchical's 2 x 7/8 S / 450 GB/s + 2 x 15/16 S/8 / 50 GB/s = 9.2 ms.
  const topology::Cluster cluster = Dgx(16);
  ExecutorOptions opt;
  opt.network = "analytic";
  EXPECT_EQ(Chosen(RunAllReduce(cluster, 128, KiB(1), opt)), "tree");
  EXPECT_EQ(Chosen(RunAllReduce(cluster, 128, GiB(1), opt)), "hierarchical");
  // The choice is the faster of the two: forcing the other one is slower.
  for (Bytes s : {KiB(1), GiB(1)}) {
    const Duration chosen = RunAllReduce(cluster, 128, s, opt).step_time;
    for (const char* a : {"tree", "hierarchical", "ring"}) {
      ExecutorOptions forced = opt;
      forced.algorithm = a;
      EXPECT_LE(chosen, RunAllReduce(cluster, 128, s, forced).step_time) << a;
    }
  }
}

TEST(Executor, ASingleNodeGroupUsesTheRingUnlessForcedToTheTree) {
  // One NVSwitch node: kAuto and kHierarchical (which needs several nodes) run the ring.
  const topology::Cluster cluster = Dgx(1);
  for (const char* a : {"auto", "ring", "hierarchical"}) {
    ExecutorOptions opt;
    opt.algorithm = a;
    EXPECT_EQ(Chosen(RunAllReduce(cluster, 8, KiB(1), opt)), "ring") << a;
  }
  // The tree over 8 positions (root 4; 2 and 6; 1, 3, 5, 7; 0) has height 3. The analytic
  // model charges each tree flow S: reduce 3 x 1 us + S / 450 GB/s, broadcast the same.
  ExecutorOptions tree;
  tree.algorithm = "tree";
  tree.network = "analytic";
  const RoleResult a = RunAllReduce(cluster, 8, GB(1), tree);
  EXPECT_EQ(Chosen(a), "tree");
  EXPECT_EQ(a.step_time, 2 * (Microseconds(3) + DrainTime(1e9, 450e9)));
  // In the flow model each edge carries S/2; a GPU sends at least S/2 per phase and, being
  // interior in at most both trees, receives at most 4 x S/2 = 2 S, so each phase lies between
  // S/2 / B and 2 S / B after its 3 us of latency.
  tree.network = "flow";
  const RoleResult f = RunAllReduce(cluster, 8, GB(1), tree);
  EXPECT_EQ(Chosen(f), "tree");
  EXPECT_GE(f.step_time, 2 * (Microseconds(3) + DrainTime(0.5e9, 450e9)));
  EXPECT_LE(f.step_time, 2 * (Microseconds(3) + DrainTime(2e9, 450e9)));
}

TEST(Executor, LinkStatisticsCountTheRingsBytesPerLinkKind) {
  // One 8-GPU ring all-reduce of 1 GB: every GPU's uplink and downlink to the NVSwitch plane
  // (16 directed NVLink links) carries one flow of 2(7/8) S = 1.75 GB, busy for its transfer
  // time 1.75e9 / 450e9 s (the 14 us latency is not busy time). No other kind is used.
  const topology::Cluster cluster = Dgx(1);
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    const RoleResult r = RunAllReduce(cluster, 8, GB(1), opt);
    const LinkKindStats* nvlink = nullptr;
    for (const LinkKindStats& l : r.links) {
      if (l.kind == topology::LinkKind::kNvlink) {
        nvlink = &l;
      } else {
        EXPECT_EQ(l.links_used, 0) << topology::LinkKindName(l.kind);
      }
    }
    ASSERT_NE(nvlink, nullptr);
    EXPECT_EQ(nvlink->links, 16);
    EXPECT_EQ(nvlink->links_used, 16);
    EXPECT_EQ(nvlink->bytes, MB(1750) * 16);
    EXPECT_EQ(nvlink->busy_max, DrainTime(1.75e9, 450e9)) << model;
    EXPECT_EQ(nvlink->busy_avg, nvlink->busy_max);
    EXPECT_EQ(nvlink->peak_flows, 1u);
    EXPECT_DOUBLE_EQ(nvlink->utilization_max, static_cast<double>(nvlink->busy_max.picoseconds()) /
                                                  static_cast<double>(r.step_time.picoseconds()));
  }
  // SimulateStep reports the same per kind for its one role.
  const SimResult sim = Simulate(Dgx(1, GB(400)), "zero3");
  ASSERT_EQ(sim.links.size(), sim.roles[0].links.size());
  for (size_t k = 0; k < sim.links.size(); ++k) {
    EXPECT_EQ(sim.links[k].bytes, sim.roles[0].links[k].bytes);
  }
}

TEST(Executor, LinkStatisticsOfAMillionSecondStepDoNotOverflow) {
  // One 8-GPU ring all-reduce of S = 2.4e17 B: each of the 16 NVLink links carries one flow of
  // 2(7/8) S = 4.2e17 B, busy 4.2e17 / 450e9 s = 933,333.3 s = 9.33e17 ps (the step is about
  // 1e6 s). Summed over the 16 links that is 1.49e19 ps, beyond int64 (9.22e18), so the mean
  // must not be formed from a plain int64 sum: every link is equally busy, so mean = max.
  const topology::Cluster cluster = Dgx(1);
  const Duration busy = DrainTime(4.2e17, 450e9);
  ASSERT_GT(static_cast<double>(busy.picoseconds()) * 16, 9.3e18);
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    const RoleResult r = RunAllReduce(cluster, 8, Bytes::Count(240'000'000'000'000'000), opt);
    EXPECT_EQ(r.step_time, Microseconds(14) + busy) << model;
    const LinkKindStats* nvlink = nullptr;
    for (const LinkKindStats& l : r.links) {
      if (l.kind == topology::LinkKind::kNvlink) nvlink = &l;
    }
    ASSERT_NE(nvlink, nullptr);
    EXPECT_EQ(nvlink->links_used, 16);
    EXPECT_EQ(nvlink->busy_max, busy) << model;
    EXPECT_EQ(nvlink->busy_avg, busy) << model;
    EXPECT_GT(nvlink->utilization_avg, 0.99);
  }
}

TEST(Executor, TraceHasAProcessPerRequestedRankWithArgs) {
  const topology::Cluster cluster = Dgx(2);
  std::ostringstream out;
  traces::ChromeTraceWriter writer(out);
  ExecutorOptions opt;
  opt.trace = &writer;
  opt.trace_ranks = {0, 3, 9};
  StatusOr<SimResult> r =
      SimulateStep(cluster, Llama7b(), Training(16), Strategy("zero3", 16), opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto [trace, summary] = FinishValidTrace(writer, out);
  EXPECT_THAT(trace, HasSubstr("rank 0 (node0/gpu0)"));
  EXPECT_THAT(trace, HasSubstr("rank 3 (node0/gpu3)"));
  EXPECT_THAT(trace, HasSubstr("rank 9 (node1/gpu1)"));
  EXPECT_THAT(trace, Not(HasSubstr("rank 1 ")));
  // ZeRO-3's gathers and reduce-scatters across the two nodes run NCCL's ring.
  EXPECT_THAT(trace, HasSubstr("\"algorithm\":\"ring\""));
  EXPECT_THAT(trace, HasSubstr("\"group\":\"dp axis of 16\""));
  EXPECT_THAT(trace, HasSubstr("\"layer\":"));
  EXPECT_THAT(trace, HasSubstr("\"gathered-params\":"));
  // Folding: the three ranks share one timeline, so each gets a third of the events.
  EXPECT_EQ(summary.complete_events % 3, 0u);
}

// A TraceSink other than the Chrome writer: records what the executor asks of it.
class RecordingSink final : public traces::TraceSink {
 public:
  void ProcessName(uint32_t pid, std::string_view name, int64_t) override {
    processes.push_back(fmt::format("{} {}", pid, name));
  }
  void ThreadName(uint32_t, uint32_t, std::string_view name, int64_t) override {
    threads.emplace_back(name);
  }
  void Complete(uint32_t pid, uint32_t tid, std::string_view name, std::string_view, Duration start,
                Duration duration, std::span<const traces::TraceArg> args) override {
    slices.push_back(fmt::format("{}/{} {} [{}, +{}) {} args", pid, tid, name, start.picoseconds(),
                                 duration.picoseconds(), args.size()));
  }
  void Counter(uint32_t, std::string_view, Duration, std::span<const traces::TraceArg>) override {
    ++counters;
  }
  Status Finish() override {
    ++finishes;
    return OkStatus();
  }

  std::vector<std::string> processes, threads, slices;
  int counters = 0;
  int finishes = 0;
};

TEST(Executor, AnyTraceSinkReceivesTheTimeline) {
  // One all-reduce (of the op's default state, grads) on the comm stream (tid 1) of rank 0, no
  // memory ops: one process, the four threads compute, comm, copy, host (no p2p: nothing is
  // sent), one slice "all-reduce grads" from 0 lasting the step, with the args op, layer,
  // micro_batch, bytes, algorithm and group (6), no counter sample, and Finish left to the caller.
  RecordingSink sink;
  ExecutorOptions opt;
  opt.trace = &sink;
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  StatusOr<RoleResult> r = ExecuteSchedule(Dgx(1), OneAllReduce(8, GB(1)), ctx, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_THAT(sink.processes, ::testing::ElementsAre("0 rank 0 (node0/gpu0)"));
  EXPECT_THAT(sink.threads, ::testing::ElementsAre("compute", "comm", "copy", "host"));
  EXPECT_THAT(sink.slices,
              ::testing::ElementsAre(
                  fmt::format("0/1 all-reduce grads [0, +{}) 6 args", r->step_time.picoseconds())));
  EXPECT_EQ(sink.counters, 0);
  EXPECT_EQ(sink.finishes, 0);
}

TEST(Executor, TheDataParallelStreamRunsBesideTheCommStream) {
  // Two all-reduces of S = 1 GB over the 8 GPUs of one DGX-H100 with no dependency between
  // them, one on the comm stream (tid 1), one on the dp-comm stream (tid 5): each process
  // group has its own NCCL stream, so both start at 0. On the analytic network (no contention)
  // each takes the ring's T = 2(N-1) alpha + 2(N-1)/N S / B = 14 us + 1.75 GB / 450 GB/s, the
  // step is T (not 2T, as on one stream), the comm busy time sums the two streams' (2T), and
  // the exposed time is their union not under compute: T.
  RecordingSink sink;
  ExecutorOptions opt;
  opt.network = "analytic";
  opt.trace = &sink;
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  Schedule s = OneAllReduce(8, GB(1));
  s.ops.push_back(s.ops.front());
  s.ops.back().stream = strategies::Stream::kDpComm;
  StatusOr<RoleResult> r = ExecuteSchedule(Dgx(1), s, ctx, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Duration ring = Microseconds(14) + DrainTime(1.75e9, 450e9);
  EXPECT_EQ(r->step_time, ring);
  EXPECT_EQ(r->comm_busy, ring * 2);
  EXPECT_EQ(r->exposed_comm, ring);
  EXPECT_THAT(sink.threads, ::testing::ElementsAre("compute", "comm", "copy", "host", "dp-comm"));
  EXPECT_THAT(sink.slices,
              ::testing::ElementsAre(
                  fmt::format("0/1 all-reduce grads [0, +{}) 6 args", ring.picoseconds()),
                  fmt::format("0/5 all-reduce grads [0, +{}) 6 args", ring.picoseconds())));
}

TEST(Executor, RefusesTraceRanksOutOfRangeOrUnsorted) {
  std::ostringstream out;
  traces::ChromeTraceWriter writer(out);
  ExecutorOptions opt;
  opt.trace = &writer;
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  opt.trace_ranks = {0, 8};
  StatusOr<RoleResult> r = ExecuteSchedule(Dgx(1), OneAllReduce(8, GB(1)), ctx, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "trace_ranks[1]: 8: must be in [0, 8)");
  opt.trace_ranks = {3, 3};
  r = ExecuteSchedule(Dgx(1), OneAllReduce(8, GB(1)), ctx, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("trace_ranks[1]: 3: must be greater than"));
}

TEST(Executor, AHostSlowerThanTheKernelsPacesEveryLayerPass) {
  // Llama 2 7B with tp 8 on one DGX-H100, 2 layers, one micro-batch, no recompute: 2 layers x
  // (forward, backward) = 4 layer passes. A host needing 1 s per pass dwarfs every kernel (a
  // layer's forward is under 1 ms), so the compute stream is busy 4 s plus the embedding's, the
  // output layer's and the optimizer's ops, unchanged; with a host of 1 us the step does not move.
  const topology::Cluster cluster = Dgx(1);
  strategies::ModelSpec model = Llama7b();
  model.transformer.layers = 2;
  const strategies::StrategySpec strategy =
      *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .tp = 8}, 8);
  const auto run = [&](Duration host) {
    ExecutorOptions opt;
    opt.network = "analytic";
    opt.host_time_per_layer = host;
    StatusOr<SimResult> r = SimulateStep(cluster, model, Training(1), strategy, opt);
    PLACESIM_CHECK(r.ok());
    return r->roles.front();
  };
  const RoleResult none = run(Duration::Zero());
  const RoleResult fast = run(Microseconds(1));
  const RoleResult slow = run(Seconds(1));
  EXPECT_EQ(fast.step_time, none.step_time);
  EXPECT_GT(slow.step_time, Seconds(4));
  EXPECT_LT(slow.step_time, Seconds(4) + none.step_time);
}

TEST(Executor, HostDispatchIsChargedPerPass) {
  // The same 2-layer job. A backward host time of 1 s with no forward one paces the 2
  // backward passes only: 2 s plus the rest. A forward time alone sets both passes; unset,
  // both are 0 under every preset (docs/overheads.md).
  const topology::Cluster cluster = Dgx(1);
  strategies::ModelSpec model = Llama7b();
  model.transformer.layers = 2;
  const strategies::StrategySpec strategy =
      *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .tp = 8}, 8);
  const auto run = [&](Duration forward, std::optional<Duration> backward) {
    ExecutorOptions opt;
    opt.network = "analytic";
    opt.host_time_per_layer = forward;
    opt.host_time_per_layer_backward = backward;
    StatusOr<SimResult> r = SimulateStep(cluster, model, Training(1), strategy, opt);
    PLACESIM_CHECK(r.ok());
    return r->roles.front().step_time;
  };
  const Duration none = run(Duration::Zero(), Duration::Zero());
  const Duration backward_only = run(Duration::Zero(), Seconds(1));
  EXPECT_GT(backward_only, Seconds(2));
  EXPECT_LT(backward_only, Seconds(2) + none);
  EXPECT_EQ(run(Seconds(1), std::nullopt), run(Seconds(1), Seconds(1)));
  EXPECT_EQ(run(Duration::Zero(), std::nullopt), none);
  ExecutorOptions unset;
  unset.network = "analytic";
  StatusOr<SimResult> r = SimulateStep(cluster, model, Training(1), strategy, unset);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->roles.front().step_time, none);
}

TEST(Executor, OptionsFromSettingsCarryEveryField) {
  SimulationSettings s;
  s.network_model = "analytic";
  s.collective_algorithm = "tree";
  s.gradient_bucket_size = MiB(50);
  s.prefetch_depth = 3;
  s.sync_grads_every_micro_batch = true;
  s.gather_granularity = "per-parameter";
  s.overlap_grad_reduce = false;
  s.host_time_per_layer = Microseconds(150);
  s.host_time_per_layer_backward = Microseconds(300);
  s.blocking_p2p = true;
  s.zero3_max_reuse_distance = 200'000'000;
  s.reshard_after_forward = false;
  const ExecutorOptions o = ExecutorOptionsFromSettings(s);
  EXPECT_EQ(o.schedule.reshard_after_forward, false);
  EXPECT_EQ(o.schedule.blocking_p2p, true);
  EXPECT_EQ(o.schedule.max_reuse_distance, 200'000'000);
  EXPECT_EQ(o.host_time_per_layer, Microseconds(150));
  EXPECT_EQ(o.host_time_per_layer_backward, Microseconds(300));
  EXPECT_EQ(o.schedule.gather_granularity, strategies::GatherGranularity::kPerParameter);
  EXPECT_EQ(o.schedule.overlap_grad_reduce, false);
  EXPECT_EQ(o.network, "analytic");
  EXPECT_EQ(o.algorithm, "tree");
  EXPECT_EQ(o.schedule.bucket_bytes, MiB(50));
  EXPECT_EQ(o.schedule.prefetch_depth, 3);
  EXPECT_TRUE(o.schedule.sync_grads_every_micro_batch);
  EXPECT_EQ(o.trace, nullptr);
  // The defaults agree.
  const ExecutorOptions d = ExecutorOptionsFromSettings({});
  const ExecutorOptions e;
  EXPECT_EQ(d.network, e.network);
  EXPECT_EQ(d.algorithm, e.algorithm);
  EXPECT_EQ(d.schedule.bucket_bytes, e.schedule.bucket_bytes);
  EXPECT_EQ(d.schedule.prefetch_depth, e.schedule.prefetch_depth);
  // Framework overheads left unset: the strategy preset's framework decides.
  EXPECT_FALSE(d.schedule.gather_granularity.has_value());
  EXPECT_FALSE(d.schedule.overlap_grad_reduce.has_value());
  EXPECT_FALSE(d.schedule.blocking_p2p.has_value());
  EXPECT_FALSE(d.schedule.reshard_after_forward.has_value());
}

// ------------------------------------------------------------------ pipeline stages together
// Hand-built schedules of pipeline stages, run together by ExecuteSchedules.

// One node of `gpus` DGX-H100 GPUs on one NVSwitch plane: a route between two of its GPUs is
// the sender's uplink and the receiver's downlink (2 links of 0.5 us: alpha = 1 us), each
// 450 GB/s.
topology::Cluster OneNode(int gpus) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = gpus;
  spec.node.pcie_switches = gpus;  // one GPU per PCIe switch, as on the full node
  spec.node.nics = gpus;
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  StatusOr<topology::Cluster> c = topology::BuildCluster(spec);
  PLACESIM_CHECK(c.ok());
  return std::move(c).value();
}

Schedule Stage(int stage, int64_t ranks) {
  Schedule s;
  s.role = "stage " + std::to_string(stage);
  s.stage = stage;
  s.ranks = ranks;
  return s;
}

// Appends `op` to `s`, after `deps`; returns its index.
int32_t Add(Schedule& s, Op op, std::initializer_list<int32_t> deps = {}) {
  op.deps_begin = static_cast<int32_t>(s.deps.size());
  s.deps.insert(s.deps.end(), deps.begin(), deps.end());
  op.deps_end = static_cast<int32_t>(s.deps.size());
  s.ops.push_back(op);
  return static_cast<int32_t>(s.ops.size() - 1);
}

Op ComputeOp(double flops) {
  Op op;
  op.kind = OpKind::kCompute;
  op.flops = Flops::Count(flops);
  return op;
}

Op AllocOp(Bytes bytes) {
  Op op;
  op.kind = OpKind::kAlloc;
  op.tag = MemoryTag::kActivations;
  op.bytes = bytes;
  return op;
}

// A pipeline send of `bytes` to stage `peer`, on the p2p stream.
Op SendOp(int peer, Bytes bytes) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = strategies::Stream::kP2p;
  op.collective = CollectiveKind::kSendRecv;
  op.axis = topology::Axis::kPipeline;
  op.group_size = 2;
  op.peer_stage = peer;
  op.buffer_bytes = bytes;
  op.bytes = bytes;
  return op;
}

// The arrival of op `match` of stage `peer` (a send), on the compute stream.
Op RecvOp(int peer, int match) {
  Op op;
  op.kind = OpKind::kRecv;
  op.peer_stage = peer;
  op.match = match;
  return op;
}

// An all-reduce of `buffer` bytes over the whole dp axis of `n` ranks, on the comm stream.
Op DpAllReduceOp(int n, Bytes buffer) { return OneAllReduce(n, buffer).ops.front(); }

const LinkKindStats& NvlinkOf(const std::vector<LinkKindStats>& links) {
  for (const LinkKindStats& l : links) {
    if (l.kind == topology::LinkKind::kNvlink) return l;
  }
  PLACESIM_CHECK(false);
  return links.front();
}

// dp = 8 inside each of two nodes, pp = 2 across them (pp outermost: stage 0 is node 0).
ExecutionContext DpEightPpTwoAcrossNodes() {
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  ctx.mesh.pp = 2;
  ctx.rank_order.inner_to_outer = {topology::Axis::kTensor, topology::Axis::kContext,
                                   topology::Axis::kData, topology::Axis::kPipeline};
  return ctx;
}

TEST(ExecutorPipeline, ARecvReleasesItsComputeWhenTheSendHasDelivered) {
  // pp = 2 on two GPUs of one node. Stage 0 computes, then sends S = 1 GB to stage 1; stage 1
  // waits on the recv, then computes. The send is one flow gpu0 -> gpu1 over gpu0's uplink and
  // gpu1's downlink (alpha = 1 us, B = 450 GB/s), alone on them, so it takes
  // 1 us + 1e9 / 450e9 s, and stage 1's compute starts exactly at T_c + 1 us + S / B (T_c:
  // the compute's roofline time, measured alone).
  const topology::Cluster cluster = OneNode(2);
  topology::Router router(cluster);
  const topology::Route* route = router.Find(cluster.gpu(0), cluster.gpu(1));
  ASSERT_NE(route, nullptr);
  ASSERT_EQ(route->latency, Microseconds(1));
  ASSERT_EQ(route->bottleneck, GBps(450));
  const Bytes S = GB(1);
  const Duration send = Microseconds(1) + DrainTime(1e9, 450e9);

  Schedule s0 = Stage(0, 1);
  Add(s0, AllocOp(GB(1)));
  const int32_t c0 = Add(s0, ComputeOp(1e13));
  const int32_t tx = Add(s0, SendOp(1, S), {c0});
  Schedule s1 = Stage(1, 1);
  const int32_t rx = Add(s1, RecvOp(0, tx));
  Add(s1, ComputeOp(1e13), {rx});
  Add(s1, AllocOp(GB(2)));
  const std::vector<Schedule> stages = {s0, s1};

  ExecutionContext ctx;
  ctx.mesh.pp = 2;
  Schedule alone = Stage(0, 1);
  Add(alone, ComputeOp(1e13));
  StatusOr<RoleResult> c = ExecuteSchedule(cluster, alone, ctx);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const Duration compute = c->step_time;
  ASSERT_GT(compute, Duration::Zero());

  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, stages, ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->roles.size(), 2u);
    const RoleResult& first = r->roles[0];
    const RoleResult& second = r->roles[1];
    EXPECT_EQ(first.simulated_rank, 0);
    EXPECT_EQ(second.simulated_rank, 1);
    EXPECT_EQ(first.step_time, compute + send) << model;
    EXPECT_EQ(first.p2p_busy, send);
    EXPECT_EQ(first.comm_busy, Duration::Zero());
    EXPECT_EQ(first.collective_calls[Idx(CollectiveKind::kSendRecv)], 1);
    EXPECT_EQ(first.collective_bytes[Idx(CollectiveKind::kSendRecv)], S);
    EXPECT_EQ(second.comm_bytes(), Bytes::Zero());
    // Stage 1 idles until the data arrives, then computes.
    EXPECT_EQ(second.idle, compute + send) << model;
    EXPECT_EQ(second.step_time, compute + send + compute);
    // Each lane has its own memory.
    EXPECT_EQ(first.peak_memory, GB(1));
    EXPECT_EQ(second.peak_memory, GB(2));
    // The send's one flow crossed two NVLink links; every role carries the shared stats.
    EXPECT_EQ(NvlinkOf(r->links).bytes, S * 2);
    EXPECT_EQ(NvlinkOf(r->links).links_used, 2);
    EXPECT_EQ(NvlinkOf(second.links).bytes, S * 2);
    EXPECT_EQ(first.events, r->events);
  }
}

TEST(ExecutorPipeline, ASendOnTheP2pStreamOverlapsACollectiveOnTheCommStream) {
  // Two DGX-H100 nodes, dp = 8 inside each node, pp = 2 across them (pp outermost: stage 0 is
  // node 0, stage 1 node 1). Stage 0 starts a dp all-reduce of S1 = 1 GB on the comm stream
  // and a send of S2 = 100 MB to stage 1 on the p2p stream at time 0. The all-reduce is the
  // 8-GPU ring on node 0's NVSwitch plane: 14 us + 2(7/8) S1 / 450 GB/s. The send is 8 flows
  // (every dp rank of stage 0) node0/gpu i -> node1/gpu i over PCIe, NICs and the fabric, none
  // on NVLink, on routes that share no link (checked below), so each takes its route's
  // alpha + S2 / bottleneck. Neither waits for the other: stage 0 ends with the longer one.
  const topology::Cluster cluster = Dgx(2);
  const ExecutionContext ctx = DpEightPpTwoAcrossNodes();
  topology::Router router(cluster);
  std::vector<int32_t> send_links;
  Duration send = Duration::Zero();
  for (int i = 0; i < 8; ++i) {
    const topology::Route* route = router.Find(cluster.gpu(i), cluster.gpu(8 + i));
    ASSERT_NE(route, nullptr);
    for (topology::LinkId l : route->links) {
      EXPECT_NE(cluster.link(l).kind, topology::LinkKind::kNvlink);
      send_links.push_back(l.value);
    }
    send = std::max(send, route->latency + DrainTime(1e8, route->bottleneck.bytes_per_second()));
  }
  std::sort(send_links.begin(), send_links.end());
  ASSERT_EQ(std::adjacent_find(send_links.begin(), send_links.end()), send_links.end());
  const Duration all_reduce = Microseconds(14) + DrainTime(1.75e9, 450e9);

  Schedule s0 = Stage(0, 8);
  Add(s0, DpAllReduceOp(8, GB(1)));
  const int32_t tx = Add(s0, SendOp(1, MB(100)));
  Schedule s1 = Stage(1, 8);
  Add(s1, RecvOp(0, tx));
  const std::vector<Schedule> stages = {s0, s1};
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, stages, ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const RoleResult& first = r->roles[0];
    EXPECT_EQ(first.comm_busy, all_reduce) << model;
    EXPECT_EQ(first.p2p_busy, send) << model;
    EXPECT_EQ(first.step_time, std::max(all_reduce, send));
    EXPECT_EQ(r->roles[1].simulated_rank, 8);
    EXPECT_EQ(r->roles[1].step_time, send);
    // Only stage 0's ranks all-reduce: 8 ring edges of 1.75 GB over 2 NVLink links each.
    EXPECT_EQ(NvlinkOf(r->links).bytes, MB(1750) * 16);
  }
}

TEST(ExecutorPipeline, CrossNodeSendsLeaveThroughEachGpusOwnRail) {
  // Two DGX-A100 nodes, pp = 2 across them, dp = 8 inside each. A DGX-A100 PCIe switch holds
  // two GPUs and two NICs, so GPU i has two NICs at the same distance; NCCL sends over the
  // NIC nearest each GPU, its rail (GPU i -> NIC i). The 8 sends of S = 100 MB then cross 8
  // disjoint NICs, and each drains at the 200 Gb/s = 25 GB/s NIC rate alone:
  //   p2p time = max_i (latency of GPU i -> NIC i -> NIC i' -> GPU i') + S / 25 GB/s.
  // Two sends on one NIC would share it and take 2 S / 25 GB/s.
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-A100");
  spec.nodes = 2;
  spec.fabric.kind = topology::FabricKind::kRailOptimized;
  StatusOr<topology::Cluster> built = topology::BuildCluster(spec);
  ASSERT_TRUE(built.ok());
  const topology::Cluster& cluster = *built;
  const ExecutionContext ctx = DpEightPpTwoAcrossNodes();
  topology::Router router(cluster);
  Duration latency = Duration::Zero();
  for (int i = 0; i < 8; ++i) {
    const topology::VertexId nic0 = *cluster.FindVertex(fmt::format("node0/nic{}", i));
    const topology::VertexId nic1 = *cluster.FindVertex(fmt::format("node1/nic{}", i));
    Duration l = Duration::Zero();
    for (auto [a, b] : {std::pair{cluster.gpu(i), nic0}, std::pair{nic0, nic1},
                        std::pair{nic1, cluster.gpu(8 + i)}}) {
      const topology::Route* route = router.Find(a, b);
      ASSERT_NE(route, nullptr);
      l += route->latency;
    }
    latency = std::max(latency, l);
  }
  Schedule s0 = Stage(0, 8);
  const int32_t tx = Add(s0, SendOp(1, MB(100)));
  Schedule s1 = Stage(1, 8);
  Add(s1, RecvOp(0, tx));
  const std::vector<Schedule> stages = {s0, s1};
  StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, stages, ctx, ExecutorOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->roles[0].p2p_busy, latency + DrainTime(1e8, 25e9));
}

TEST(ExecutorPipeline, ACollectiveFoldsOnlyOverTheRanksOfItsStage) {
  // dp = 2, pp = 2 on four GPUs of one node (Megatron order: rank = pp + 2 dp, rank r on GPU r).
  // Stage 0's dp group is ranks {0, 2}: its ring all-reduce of S = 1 GB is two flows,
  // gpu0 -> gpu2 and gpu2 -> gpu0, each of 2(N-1)/N S = S over two NVLink links, taking
  // 2 alpha + S / B = 2 us + 1e9 / 450e9 s. So the links carry 4 S on 4 links: one stage's
  // volume (folding over the world would add stage 1's group {1, 3}, 8 S on 8 links). With
  // both stages running their all-reduce, the links carry 8 S, and the two rings, on disjoint
  // links, take as long as one.
  const topology::Cluster cluster = OneNode(4);
  ExecutionContext ctx;
  ctx.mesh.dp = 2;
  ctx.mesh.pp = 2;
  const Duration expected = Microseconds(2) + DrainTime(1e9, 450e9);
  Schedule s0 = Stage(0, 2);
  Add(s0, DpAllReduceOp(2, GB(1)));
  Schedule s1 = Stage(1, 2);
  Add(s1, DpAllReduceOp(2, GB(1)));
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<RoleResult> one = ExecuteSchedule(cluster, s0, ctx, opt);
    ASSERT_TRUE(one.ok()) << one.status().message();
    EXPECT_EQ(one->step_time, expected) << model;
    EXPECT_EQ(NvlinkOf(one->links).bytes, GB(4));
    EXPECT_EQ(NvlinkOf(one->links).links_used, 4);

    const std::vector<Schedule> stages = {s0, s1};
    StatusOr<ExecutionResult> both = ExecuteSchedules(cluster, stages, ctx, opt);
    ASSERT_TRUE(both.ok()) << both.status().message();
    EXPECT_EQ(NvlinkOf(both->links).bytes, GB(8));
    EXPECT_EQ(NvlinkOf(both->links).links_used, 8);
    EXPECT_EQ(NvlinkOf(both->links).peak_flows, 1u);
    for (const RoleResult& role : both->roles) {
      EXPECT_EQ(role.step_time, expected) << role.role << " " << model;
      EXPECT_EQ(role.collective_bytes[Idx(CollectiveKind::kAllReduce)], GB(1));
    }
  }
}

TEST(ExecutorPipeline, RefusesRecvsThatMatchNoSendOfTheirPeer) {
  const topology::Cluster cluster = OneNode(2);
  ExecutionContext ctx;
  ctx.mesh.pp = 2;
  Schedule s0 = Stage(0, 1);
  const int32_t c0 = Add(s0, ComputeOp(1e12));
  Add(s0, SendOp(1, MB(1)), {c0});
  auto run = [&](const Schedule& a, const Schedule& b) {
    const std::vector<Schedule> stages = {a, b};
    StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, stages, ctx);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  Schedule out_of_range = Stage(1, 1);
  Add(out_of_range, RecvOp(0, 7));
  EXPECT_EQ(run(s0, out_of_range),
            "schedules[1].ops[0].match: 7: must be in [0, 2), an op of stage 0");
  Schedule not_a_send = Stage(1, 1);
  Add(not_a_send, RecvOp(0, c0));
  EXPECT_THAT(run(s0, not_a_send),
              HasSubstr("schedules[1].ops[0].match: 0: op 0 of stage 0 is not a pipeline send to "
                        "stage 1"));
  // The well-formed pair runs; without stage 0's schedule its recv has no send.
  Schedule s1 = Stage(1, 1);
  Add(s1, RecvOp(0, 1));
  const std::vector<Schedule> pair = {s0, s1};
  EXPECT_TRUE(ExecuteSchedules(cluster, pair, ctx).ok());
  StatusOr<RoleResult> alone = ExecuteSchedule(cluster, s1, ctx);
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.status().message(),
            "schedules[0].ops[0].peer_stage: 0: a recv of stage 1 needs the schedule of its "
            "sending stage; none was given");
  // A send to its own stage, a stage outside the mesh, and two schedules of one stage.
  Schedule self = Stage(0, 1);
  Add(self, SendOp(0, MB(1)));
  StatusOr<RoleResult> to_self = ExecuteSchedule(cluster, self, ctx);
  ASSERT_FALSE(to_self.ok());
  EXPECT_THAT(to_self.status().message(),
              HasSubstr("schedules[0].ops[0].peer_stage: 0: a pipeline send of stage 0 must name "
                        "another stage in [0, 2)"));
  StatusOr<RoleResult> outside = ExecuteSchedule(cluster, Stage(2, 1), ctx);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().message(), "schedules[0].stage: 2: must be in [0, 2)");
  EXPECT_EQ(run(s0, s0), "schedules[1].stage: 0: schedules[0] has the same stage");
}

// Runs `stages` on the flow and the analytic network, each of which must end in a deadlock
// (kInternal) with the same message; returns it.
std::string DeadlockOnBothNetworks(const topology::Cluster& cluster,
                                   const std::vector<Schedule>& stages,
                                   const ExecutionContext& ctx) {
  std::vector<std::string> messages;
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, stages, ctx, opt);
    EXPECT_FALSE(r.ok()) << model;
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), StatusCode::kInternal) << model;
    messages.push_back(r.status().message());
  }
  EXPECT_EQ(messages[0], messages[1]);
  return messages[0];
}

TEST(ExecutorPipeline, ACycleThroughTwoStagesIsReportedAsADeadlock) {
  // Stage 0 sends only after its recv from stage 1, and stage 1 sends only after its compute,
  // which waits on its recv of stage 0's send: no op of either can start.
  const topology::Cluster cluster = OneNode(2);
  ExecutionContext ctx;
  ctx.mesh.pp = 2;
  Schedule s0 = Stage(0, 1);
  const int32_t rx0 = Add(s0, RecvOp(1, 2));
  Add(s0, SendOp(1, MB(1)), {rx0});
  Schedule s1 = Stage(1, 1);
  const int32_t rx1 = Add(s1, RecvOp(0, 1));
  const int32_t c1 = Add(s1, ComputeOp(1e12), {rx1});
  Add(s1, SendOp(0, MB(1)), {c1});
  const std::vector<Schedule> stages = {s0, s1};
  EXPECT_EQ(DeadlockOnBothNetworks(cluster, stages, ctx),
            "schedule 'stage 0' deadlocked on the compute stream at op 0");
}

// A blocking pipeline send (docs/overheads.md): on the compute stream, the stage's program.
Op BlockingSendOp(int peer, Bytes bytes) {
  Op op = SendOp(peer, bytes);
  op.stream = strategies::Stream::kCompute;
  return op;
}

// Two stages of 1F1B over m = 2 micro-batches, as the schedule builder lays them out: a pass
// opens with its receive and closes with its send. `blocking` puts the sends in the program.
std::vector<Schedule> TwoStageOneFOneB(double f_flops, double b_flops, Bytes bytes, bool blocking) {
  const auto send = [&](int peer) {
    return blocking ? BlockingSendOp(peer, bytes) : SendOp(peer, bytes);
  };
  // Stage 0 runs F0 F1 B0 B1: F0, send F0, F1, send F1, recv B0, B0, recv B1, B1.
  Schedule s0 = Stage(0, 1);
  const int32_t f0 = Add(s0, ComputeOp(f_flops));
  const int32_t sf0 = Add(s0, send(1), {f0});
  const int32_t f1 = Add(s0, ComputeOp(f_flops));
  const int32_t sf1 = Add(s0, send(1), {f1});
  const int32_t rb0 = Add(s0, RecvOp(1, 3));
  Add(s0, ComputeOp(b_flops), {rb0});
  const int32_t rb1 = Add(s0, RecvOp(1, 7));
  Add(s0, ComputeOp(b_flops), {rb1});
  // Stage 1 runs F0 B0 F1 B1: recv F0, F0, B0, send B0, recv F1, F1, B1, send B1.
  Schedule s1 = Stage(1, 1);
  const int32_t rf0 = Add(s1, RecvOp(0, sf0));
  Add(s1, ComputeOp(f_flops), {rf0});
  const int32_t b0 = Add(s1, ComputeOp(b_flops));
  PLACESIM_CHECK(Add(s1, send(0), {b0}) == 3);
  const int32_t rf1 = Add(s1, RecvOp(0, sf1));
  Add(s1, ComputeOp(f_flops), {rf1});
  const int32_t b1 = Add(s1, ComputeOp(b_flops));
  PLACESIM_CHECK(Add(s1, send(0), {b1}) == 7);
  return {s0, s1};
}

TEST(ExecutorPipeline, ABlockingExchangeIsARendezvousOfTwoStages) {
  // pp = 2 on two GPUs of one node; every send moves S = 1 GB over one flow of route latency
  // 1 us at 450 GB/s, alone on its links (the two directions use disjoint links), so a
  // transfer takes T = 1 us + S / 450 GB/s. A forward takes f, a backward b = 2f (their
  // FLOPs at the device's peak x matmul_efficiency, plus its kernel overhead).
  // Blocking: each stage's sends and receives between two passes are one exchange; a transfer
  // starts once both ends' exchanges are posted, and a stage resumes when its exchange is done.
  //   stage 1 posts {recv F0} at 0; stage 0 computes F0 to f, posts {send F0}: transfer f..f+T.
  //   stage 0 F1 f+T..2f+T, then posts {send F1, recv B0}; stage 1 F0, B0 f+T..2f+T+b, then
  //   posts {send B0, recv F1}: both transfers 2f+T+b..2f+2T+b.
  //   stage 0 B0 ..2f+2T+2b, posts {recv B1}; stage 1 F1, B1 ..3f+2T+2b, posts {send B1}:
  //   3f+2T+2b..3f+3T+2b; stage 0 B1 ..3f+3T+3b.
  // So the step is 3f + 3T + 3b (stage 0) and stage 1 ends at 3f + 3T + 2b. Without blocking,
  // stage 0 sends F0 on the p2p stream and computes F1 at once (f..2f); stage 1 runs F0, B0
  // f+T..2f+T+b and F1 (arrived at 2f+T) and B1 ..3f+T+2b, whose gradient reaches stage 0 at
  // 3f+2T+2b: the step is 3f + 2T + 3b. The rendezvous costs one T here: F0's transfer, which
  // stage 0 now waits out before F1.
  const topology::Cluster cluster = OneNode(2);
  const topology::DeviceSpec& dev = cluster.spec().node.gpu;
  const double rate = dev.Peak(topology::DataType::kBf16).per_second() * dev.matmul_efficiency;
  const double flops = 1e13;
  const Duration f = DrainTime(flops, rate) + dev.kernel_overhead;
  const Duration b = DrainTime(2 * flops, rate) + dev.kernel_overhead;
  const Duration transfer = Microseconds(1) + DrainTime(1e9, 450e9);
  ExecutionContext ctx;
  ctx.mesh.pp = 2;
  ctx.matmul_efficiency = dev.matmul_efficiency;
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    const std::vector<Schedule> blocking = TwoStageOneFOneB(flops, 2 * flops, GB(1), true);
    StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, blocking, ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->roles[0].step_time, f * 3 + transfer * 3 + b * 3) << model;
    EXPECT_EQ(r->roles[1].step_time, f * 3 + transfer * 3 + b * 2) << model;
    // The waits are idle, not compute; each stage's two sends are its p2p time.
    EXPECT_EQ(r->roles[0].compute_busy, f * 2 + b * 2) << model;
    EXPECT_EQ(r->roles[0].p2p_busy, transfer * 2) << model;
    EXPECT_EQ(r->roles[1].p2p_busy, transfer * 2) << model;
    EXPECT_EQ(r->roles[0].collective_calls[Idx(CollectiveKind::kSendRecv)], 2);
    const std::vector<Schedule> async = TwoStageOneFOneB(flops, 2 * flops, GB(1), false);
    StatusOr<ExecutionResult> a = ExecuteSchedules(cluster, async, ctx, opt);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(a->roles[0].step_time, f * 3 + transfer * 2 + b * 3) << model;
  }
}

TEST(ExecutorPipeline, BlockingExchangesPostedInAnInconsistentOrderAreReportedNotHung) {
  // Both stages open with a blocking receive from the other and send only after computing:
  // each waits in its receive's exchange for a send the other never reaches. The run ends
  // (no event is left) and reports the deadlock, naming the exchange and what it waits for.
  const topology::Cluster cluster = OneNode(2);
  ExecutionContext ctx;
  ctx.mesh.pp = 2;
  Schedule s0 = Stage(0, 1);
  const int32_t rx0 = Add(s0, RecvOp(1, 2));
  const int32_t c0 = Add(s0, ComputeOp(1e12), {rx0});
  Add(s0, BlockingSendOp(1, MB(1)), {c0});
  Schedule s1 = Stage(1, 1);
  const int32_t rx1 = Add(s1, RecvOp(0, 2));
  const int32_t c1 = Add(s1, ComputeOp(1e12), {rx1});
  Add(s1, BlockingSendOp(0, MB(1)), {c1});
  const std::vector<Schedule> stages = {s0, s1};
  EXPECT_EQ(DeadlockOnBothNetworks(cluster, stages, ctx),
            "schedule 'stage 0' deadlocked on the compute stream at op 0: its blocking "
            "pipeline recv from stage 1 waits for stage 1 to reach op 2, which it never does");
  // Sending first makes the same pair a consistent order: each send meets the other's
  // receive, posted in the same exchange ({send, recv} on both stages).
  Schedule t0 = Stage(0, 1);
  Add(t0, BlockingSendOp(1, MB(1)));
  const int32_t r0 = Add(t0, RecvOp(1, 0));
  Add(t0, ComputeOp(1e12), {r0});
  Schedule t1 = Stage(1, 1);
  Add(t1, BlockingSendOp(0, MB(1)));
  const int32_t r1 = Add(t1, RecvOp(0, 0));
  Add(t1, ComputeOp(1e12), {r1});
  const std::vector<Schedule> swapped = {t0, t1};
  EXPECT_TRUE(ExecuteSchedules(cluster, swapped, ctx).ok());
  // A blocking send that no receive matches is refused up front.
  Schedule lone = Stage(0, 1);
  Add(lone, BlockingSendOp(1, MB(1)));
  const std::vector<Schedule> unmatched = {lone, Stage(1, 1)};
  StatusOr<ExecutionResult> u = ExecuteSchedules(cluster, unmatched, ctx);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().message(),
            "schedules[0].ops[0]: a blocking pipeline send (on the compute stream) to stage 1 "
            "that no recv of that stage matches");
}

TEST(ExecutorPipeline, TraceHasAProcessPerStageRankWithTheP2pThread) {
  // dp = 2, pp = 2: each stage's schedule holds both of its ranks, so every requested rank is
  // traced by its stage's lane; by default, each lane's simulated rank (0 and 1).
  const topology::Cluster cluster = OneNode(4);
  ExecutionContext ctx;
  ctx.mesh.dp = 2;
  ctx.mesh.pp = 2;
  Schedule s0 = Stage(0, 2);
  const int32_t c0 = Add(s0, ComputeOp(1e12));
  const int32_t tx = Add(s0, SendOp(1, MB(10)), {c0});
  Schedule s1 = Stage(1, 2);
  const int32_t rx = Add(s1, RecvOp(0, tx));
  Add(s1, ComputeOp(1e12), {rx});
  const std::vector<Schedule> stages = {s0, s1};
  for (const std::vector<int64_t>& ranks : {std::vector<int64_t>{}, {0, 1, 2, 3}}) {
    std::ostringstream out;
    traces::ChromeTraceWriter writer(out);
    ExecutorOptions opt;
    opt.trace = &writer;
    opt.trace_ranks = ranks;
    StatusOr<ExecutionResult> r = ExecuteSchedules(cluster, stages, ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const auto [trace, summary] = FinishValidTrace(writer, out);
    EXPECT_THAT(trace, HasSubstr("rank 0 (node0/gpu0)"));
    EXPECT_THAT(trace, HasSubstr("rank 1 (node0/gpu1)"));
    EXPECT_THAT(trace, HasSubstr("\"p2p\""));
    EXPECT_THAT(trace, HasSubstr("\"group\":\"pp stage 0 to 1\""));
    // Stage 0: compute and send; stage 1: compute (the recv takes no time).
    const size_t traced = ranks.empty() ? 2 : 4;
    EXPECT_EQ(summary.complete_events, traced / 2 * 3);
    if (ranks.empty()) {
      EXPECT_THAT(trace, Not(HasSubstr("rank 2 ")));
    } else {
      EXPECT_THAT(trace, HasSubstr("rank 3 (node0/gpu3)"));
    }
  }
}

TEST(Executor, TensorParallelGroupsOnOtherNodesAreNotReplayedButTheirBytesCount) {
  // tp 8 x dp 4 on 4 DGX-H100 nodes: one tp group per node. The simulated rank 0 is on node 0;
  // the groups of nodes 1-3 stay on their own NVLink, so they are not replayed, yet every
  // node's ring carries its bytes: 4 groups x 8 flows x 2 NVLink hops x (2 (8-1)/8 S).
  // The time is the lone ring's: 14 alpha + 1.75 S / 450 GB/s, as on one node.
  const topology::Cluster cluster = Dgx(4);
  Schedule s = OneAllReduce(8, GB(1));
  s.ops[0].axis = topology::Axis::kTensor;
  s.ranks = 32;
  ExecutionContext ctx;
  ctx.mesh.tp = 8;
  ctx.mesh.dp = 4;
  for (const char* model : {"flow", "analytic"}) {
    ExecutorOptions opt;
    opt.network = model;
    StatusOr<RoleResult> r = ExecuteSchedule(cluster, s, ctx, opt);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->step_time, Microseconds(14) + DrainTime(1.75e9, 450e9)) << model;
    const auto nvlink = std::find_if(r->links.begin(), r->links.end(), [](const LinkKindStats& l) {
      return l.kind == topology::LinkKind::kNvlink;
    });
    ASSERT_NE(nvlink, r->links.end());
    EXPECT_EQ(nvlink->bytes, MB(1750) * (4 * 8 * 2));
    EXPECT_EQ(nvlink->links_used, 4 * 16);  // every GPU's up- and downlink of every node
  }
}

TEST(Executor, ADataParallelGroupThatSpansContextJoinsTheCpRanks) {
  // dp 2 x cp 2 x tp 2 on one DGX-H100 (tp innermost, then cp, then dp). An all-reduce over
  // dp x cp has 4 members per group and 2 groups (one per tp rank): a ring of 4 on NVSwitch,
  // 2 (4-1) alpha + 2 (4-1)/4 S / B = 6 us + 1.5 GB / 450 GB/s, and 2 x 4 ring edges of 2
  // NVLink hops each, each hop carrying 1.5 GB.
  const topology::Cluster cluster = Dgx(1);
  Schedule s = OneAllReduce(4, GB(1));
  s.ops[0].spans_context = true;
  ExecutionContext ctx;
  ctx.mesh.dp = 2;
  ctx.mesh.cp = 2;
  ctx.mesh.tp = 2;
  StatusOr<RoleResult> r = ExecuteSchedule(cluster, s, ctx);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->step_time, Microseconds(6) + DrainTime(1.5e9, 450e9));
  ASSERT_FALSE(r->links.empty());
  EXPECT_EQ(r->links.front().kind, topology::LinkKind::kNvlink);
  EXPECT_EQ(r->links.front().bytes, MB(1500) * (2 * 4 * 2));
  // Without spans_context the same group size does not divide the dp axis of 2.
  s.ops[0].spans_context = false;
  r = ExecuteSchedule(cluster, s, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("must divide the dp axis of size 2"));
}

TEST(Executor, AReplicaGroupThatSpansContextIsADpReplicaGroupTimesCp) {
  // Experts under ep = 2 with cp = 2: dp 8 x cp 2 on two DGX-H100 nodes, dp innermost, so
  // node 0 holds cp rank 0 (dp 0..7) and node 1 cp rank 1. The expert replica group is the
  // dp coordinates congruent mod ep times every cp rank: {d, d+2, d+4, d+6} x {0, 1}, 8
  // members, ordered (dp, cp) with cp innermost, 4 on each node. NCCL orders its ring by the
  // topology, not by rank: each group runs the multi-channel ring of L = 4 channels over its
  // M = 2 nodes, per node 4 in-node edges of 3/4 V and 4 crossings of V / 4, for the ring
  // volume V = 2 (8-1)/8 x 1 GB = 1.75 GB. (A group of 8 consecutive joint coordinates, or
  // one cp rank's dp ring, would stay on one node.)
  const topology::Cluster cluster = Dgx(2);
  Schedule s = OneAllReduce(8, GB(1));
  s.ops[0].group = strategies::GroupKind::kReplicaGroup;
  s.ops[0].spans_context = true;
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  ctx.mesh.cp = 2;
  ctx.mesh.ep = 2;
  ctx.rank_order.inner_to_outer = {topology::Axis::kTensor, topology::Axis::kData,
                                   topology::Axis::kContext, topology::Axis::kPipeline};
  ExecutorOptions opt;
  opt.algorithm = "ring";
  StatusOr<RoleResult> r = ExecuteSchedule(cluster, s, ctx, opt);
  ASSERT_TRUE(r.ok()) << r.status().message();
  Bytes nvlink = Bytes::Zero(), network = Bytes::Zero();
  for (const LinkKindStats& l : r->links) {
    if (l.kind == topology::LinkKind::kNvlink) nvlink += l.bytes;
    if (l.kind == topology::LinkKind::kNetwork) network += l.bytes;
  }
  // On NVLink, two hops each (GPU to switch, switch to GPU): per group and node the 4 in-node
  // edges, 1312.5 MB each: 2 groups x 2 nodes x 4 x 1312.5 MB x 2 hops = 42 GB.
  EXPECT_EQ(nvlink, MB(42000));
  // Across, 2 groups x 2 nodes x 4 crossings of 437.5 MB, each over its two NICs' links at
  // least: 14 GB.
  EXPECT_GE(network, MB(14000));
}

}  // namespace
}  // namespace placesim::sim
