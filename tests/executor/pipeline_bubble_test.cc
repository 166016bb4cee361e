// The pipeline bubble is not a formula in the simulator: no op stands for it, and a stage
// simply waits on its receives. These tests run pipelines whose stages are uniform, with
// communication made free, and check that the waiting the schedule produces is the bubble of
// Narayanan et al. 2021 (Section 2.2), (p-1)/m for GPipe and 1F1B and (p-1)/(v m) for the
// interleaved schedule, up to the output layer's term derived below; that the analyzer's
// Plan::bubble_fraction states that formula; and that the activations a stage holds at its
// peak are the micro-batches its schedule keeps in flight (1F1B: p on the first stage, 1 on
// the last; GPipe: all m).
//
// The scenario. A decoder of 32 identical layers (h = 1024, a = 8, f = 4h, s = 512, b = 1,
// no biases, rotary positions, untied embeddings) with a vocabulary of V = 8 tokens, so that
// the embedding and the output layer (the only parts that differ between stages) cost next to
// nothing. dp = tp = 1 on one node of p GPUs (stage i on GPU i). The device has no kernel
// overhead and an HBM bandwidth of 1e21 B/s, so every compute op takes its FLOPs at
// R = peak x matmul_efficiency: its memory terms (weights, activations, and the elementwise
// traffic, 19 MB of attention scores at most) take a picosecond each. NVLink is 1e18 B/s with
// no latency, so a pipeline send of b s h x 2 = 1 MiB takes 2 ps. Only compute matters.
//
// Times. A stage holds L_s = 32 / p layers, in v chunks of L_c = L_s / v. With
// F = 24 b s h^2 + 4 b s^2 h per layer (eq. 3), a micro-batch's forward through the stage
// takes t_f = L_s F / R and its backward t_b = 2 L_s F / R (backward-input and
// backward-weight, one forward each). GPipe and 1F1B both take (m + p - 1)(t_f + t_b) from
// the first forward of stage 0 to its last backward: the first micro-batch needs p - 1
// forwards before it reaches the last stage and the last one p - 1 backwards to come back; in
// between, the last stage (GPipe) or every stage (1F1B's steady state) never waits. Each
// stage works m (t_f + t_b) of that, so
//   bubble = ((m + p - 1) - m)(t_f + t_b) / (m (t_f + t_b)) = (p - 1) / m.
// Interleaved 1F1B fills and drains the pipeline with chunk passes of (t_f + t_b) / v, so
// the bubble is (p - 1) / (v m).
//
// What the simulation adds to the formula, exactly (a backward pass sends its input gradient
// after the pass's last op, weight gradients included, as Megatron-LM does, so the drain's
// hops are whole passes):
//   output layer eq. 3's logit term, 6 b s h V per micro-batch (forward, backward-input and
//                backward-weight), runs on the last stage, whose m passes are all on the
//                critical path, so it adds its share of a micro-batch's stage time:
//                  6 b s h V / (72 L_s b s h^2 (1 + s / (6h))) = V / (12 L_s h (1 + s/(6h)))
//                = 7.5e-5 for L_s = 8, 1.5e-4 for L_s = 4.
// The embedding (no FLOPs) adds picoseconds.
//
// Measurement. T = the step time (stage 0 finishes last: its last backward closes the
// pipeline, then it runs its optimizer update). The ideal time is what a middle stage (no
// embedding, no output layer) computes: its compute-stream busy time less its optimizer
// update t_opt, i.e. m (t_f + t_b). Every stage runs its update after its last backward, so
// T = (m + p - 1)(t_f + t_b) + t_opt (+ the terms above) and
//   bubble = (T - t_opt - ideal) / ideal.
// t_opt is taken from the schedule: the FLOPs of the stage's optimizer ops at R (HBM is free,
// so the update is compute-bound here). The first stage's update is larger by the
// embedding's V h = 8192 parameters, 1e-4 of t_opt (2.3 us), a few hundred picoseconds.
//
// Tolerance 1e-6 of the ideal time. What is left after the terms above is rounding: every
// op's duration is rounded up to the picosecond term by term (a few picoseconds on a layer op
// of F / R = 20 us at R = 989 TF x 0.7: 1.5e-7 of it), the picosecond sends and embedding,
// and the first stage's larger update (about 150 ps, 1.2e-7 of the smallest ideal time,
// 1.29 ms). The largest residual measured is 1e-7.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/executor/executor.h"
#include "sim/network/alpha_beta.h"
#include "strategies/analyzer.h"
#include "strategies/model.h"
#include "strategies/pipeline.h"
#include "strategies/presets.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/spec.h"

namespace placesim::sim {
namespace {

using strategies::MemoryTag;
using strategies::PipelineSchedule;

constexpr size_t Idx(MemoryTag t) { return static_cast<size_t>(t); }

constexpr int64_t kLayers = 32;
constexpr int64_t kHidden = 1024;
constexpr int64_t kHeads = 8;
constexpr int64_t kVocab = 8;
constexpr int64_t kSeq = 512;
// Of the ideal time (see "Tolerance" in the file comment).
constexpr double kTolerance = 1e-6;

// The paper's bubble: (p - 1) / (v m); v = 1 for GPipe and 1F1B.
double PaperBubble(int p, int64_t m, int v = 1) {
  return static_cast<double>(p - 1) / static_cast<double>(int64_t{v} * m);
}

// What the output layer adds, as a fraction of the ideal time: V / (12 L_s h (1 + s / (6h))).
double OutputLayerShare(int p) {
  const double stage_layers = static_cast<double>(kLayers / p);
  const double h = static_cast<double>(kHidden);
  return static_cast<double>(kVocab) /
         (12.0 * stage_layers * h * (1.0 + static_cast<double>(kSeq) / (6.0 * h)));
}

// The bubble the simulation must produce (see the file comment).
double SimulatedBubble(int p, int64_t m, int v = 1) {
  return PaperBubble(p, m, v) + OutputLayerShare(p);
}

strategies::ModelSpec UniformModel() {
  strategies::ModelSpec m;
  m.name = "custom";
  strategies::TransformerSpec& t = m.transformer;
  t.layers = kLayers;
  t.hidden = kHidden;
  t.heads = kHeads;
  t.kv_heads = kHeads;
  t.ffn_hidden = 4 * kHidden;
  t.vocab = kVocab;
  t.seq_len = kSeq;
  return m;
}

// One DGX-H100 node cut to `gpus` GPUs with free communication and free memory traffic (see
// the file comment): compute at peak x matmul_efficiency is the only cost.
topology::ClusterSpec FreeCommunicationNode(int gpus) {
  const Bandwidth free = Bandwidth::BytesPerSecond(1e18);
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = gpus;
  spec.node.pcie_switches = 1;
  spec.node.nics = 1;
  spec.node.gpu.kernel_overhead = Duration::Zero();
  // No kernel profile: every op's FLOPs run at peak x matmul_efficiency, the rate R the
  // bubble arithmetic below divides by (the shape-aware model would only rescale R).
  spec.node.gpu.kernels = topology::KernelProfile{};
  spec.node.gpu.hbm_bandwidth = Bandwidth::BytesPerSecond(1e21);
  spec.node.gpu.hbm_capacity = TB(1);
  spec.node.nvlink_bandwidth = free;
  spec.node.nvlink_latency = Duration::Zero();
  spec.node.pcie_bandwidth = free;
  spec.node.pcie_latency = Duration::Zero();
  spec.node.nic_bandwidth = free;
  spec.node.nic_latency = Duration::Zero();
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  return spec;
}

strategies::TrainingSpec Pipelined(PipelineSchedule schedule, int64_t m, int v = 1) {
  strategies::TrainingSpec t;
  t.micro_batch = 1;
  t.global_batch = m;  // dp = 1: m micro-batches of one sequence
  t.pipeline_schedule = schedule;
  t.virtual_stages = v;
  return t;
}

// A stage's optimizer update, op by op as the executor rounds it: its FLOPs at R (HBM is free,
// so the update is compute-bound here).
Duration OptimizerTime(const strategies::Schedule& schedule, const topology::ClusterSpec& spec) {
  const double rate =
      spec.node.gpu.Peak(topology::DataType::kBf16).per_second() * spec.node.gpu.matmul_efficiency;
  Duration t_opt = Duration::Zero();
  for (const strategies::Op& op : schedule.ops) {
    if (op.kind == strategies::OpKind::kCompute && op.phase == strategies::Phase::kOptimizer) {
      t_opt += DrainTime(op.flops.count(), rate);
    }
  }
  PLACESIM_CHECK(t_opt > Duration::Zero());
  return t_opt;
}

// One simulated step and the bubble measured on it (see "Measurement" in the file comment).
struct Measured {
  SimResult result;
  Duration step;       // T
  Duration ideal;      // busy_mid - t_opt = m (t_f + t_b)
  Duration optimizer;  // t_opt of the middle stage
  double bubble = 0;   // (T - ideal - t_opt) / ideal
};

Measured Measure(int p, PipelineSchedule schedule, int64_t m, int v = 1) {
  const topology::ClusterSpec spec = FreeCommunicationNode(p);
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  PLACESIM_CHECK(cluster.ok());
  const strategies::ModelSpec model = UniformModel();
  const strategies::TrainingSpec training = Pipelined(schedule, m, v);
  const strategies::StrategySpec strategy =
      *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .pp = p}, p);
  StatusOr<SimResult> r = SimulateStep(*cluster, model, training, strategy);
  PLACESIM_CHECK(r.ok());
  PLACESIM_CHECK(r->roles.size() == static_cast<size_t>(p));

  // The middle stage's optimizer update, op by op as the executor rounds it.
  const int mid = p / 2;
  StatusOr<std::vector<strategies::Schedule>> schedules =
      strategies::BuildSchedules(model, training, strategy, spec);
  PLACESIM_CHECK(schedules.ok());
  const Duration t_opt = OptimizerTime((*schedules)[static_cast<size_t>(mid)], spec);

  Measured out;
  out.step = r->step_time;
  out.optimizer = t_opt;
  out.ideal = r->roles[static_cast<size_t>(mid)].compute_busy - t_opt;
  out.bubble = (out.step - out.ideal - t_opt) / out.ideal;
  out.result = std::move(r).value();
  return out;
}

// 3 m L_s F / R, F = 24 b s h^2 + 4 b s^2 h (b = 1), R = the peak the result reports x the
// matmul efficiency.
Duration IdealTime(int p, int64_t m, const SimResult& r) {
  const double h = static_cast<double>(kHidden);
  const double s = static_cast<double>(kSeq);
  const double layer = 24 * s * h * h + 4 * s * s * h;
  const double rate = r.peak.per_second() * FreeCommunicationNode(p).node.gpu.matmul_efficiency;
  return Duration::CeilSeconds(3.0 * static_cast<double>(m * (kLayers / p)) * layer / rate);
}

std::string Describe(int p, PipelineSchedule schedule, int64_t m, int v, const Measured& x) {
  return std::string(strategies::PipelineScheduleName(schedule)) + " p=" + std::to_string(p) +
         " m=" + std::to_string(m) + " v=" + std::to_string(v) + ": T=" + ToString(x.step) +
         " ideal=" + ToString(x.ideal) + " t_opt=" + ToString(x.optimizer) +
         " bubble=" + std::to_string(x.bubble) + " paper=" + std::to_string(PaperBubble(p, m, v));
}

TEST(PipelineBubble, GpipeAnd1F1BWaitPMinusOneOverMOfTheIdealTime) {
  // (p - 1) / m, from 7/4 (p = 8, m = 4: fewer micro-batches than stages; 1F1B's warm-up is
  // then all m forwards and it runs as GPipe, still (m + p - 1)(t_f + t_b)) down to 3/32
  // (p = 4, m = 32); plus the output layer's share. E.g. p = 4, m = 8: 3/8 + 7.5e-5.
  for (int p : {4, 8}) {
    for (int64_t m : {4, 8, 16, 32}) {
      for (PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::k1F1B}) {
        const Measured x = Measure(p, schedule, m);
        const std::string what = Describe(p, schedule, m, 1, x);
        EXPECT_NEAR(x.bubble, SimulatedBubble(p, m), kTolerance) << what;
        // The ideal time is m (t_f + t_b) = 3 m L_s F / R.
        EXPECT_NEAR(x.ideal / IdealTime(p, m, x.result), 1.0, kTolerance) << what;
        // The step is the first stage's: it closes the pipeline and then updates.
        EXPECT_EQ(x.result.roles.front().step_time, x.step) << what;
      }
    }
  }
}

TEST(PipelineBubble, InterleavedWaitsPMinusOneOverVMOfTheIdealTime) {
  // v chunks per stage divide the fill and drain by v: (p - 1) / (v m). m must be a multiple
  // of p (Megatron-LM's requirement). p = 4, v = 4 puts 2 layers in a chunk, as p = 8, v = 2.
  struct Case {
    int p;
    int v;
    int64_t m;
  };
  for (const Case c : {Case{4, 2, 4}, Case{4, 2, 8}, Case{4, 2, 16}, Case{4, 2, 32}, Case{4, 4, 8},
                       Case{4, 4, 32}, Case{8, 2, 8}, Case{8, 2, 16}, Case{8, 2, 32}}) {
    const Measured x = Measure(c.p, PipelineSchedule::kInterleaved1F1B, c.m, c.v);
    const std::string what = Describe(c.p, PipelineSchedule::kInterleaved1F1B, c.m, c.v, x);
    EXPECT_NEAR(x.bubble, SimulatedBubble(c.p, c.m, c.v), kTolerance) << what;
    // Against plain 1F1B on the same pipeline the output layer's term cancels: interleaving
    // saves exactly
    // (p - 1)(1 - 1/v) / m of the ideal time, the same work per stage.
    const Measured plain = Measure(c.p, PipelineSchedule::k1F1B, c.m);
    EXPECT_EQ(plain.ideal, x.ideal) << what;
    EXPECT_NEAR((plain.step - x.step) / x.ideal,
                static_cast<double>(c.p - 1) * (1.0 - 1.0 / c.v) / static_cast<double>(c.m),
                kTolerance)
        << what;
  }
}

TEST(PipelineBubble, TheSimulatedBubbleIsTheAnalyzersPlanBubble) {
  // The plan states the paper's formula; the simulator gets there by running the schedule,
  // plus the output layer's share (the file comment): within
  // [plan, plan + V / (12 L_s h (1 + s / (6h)))], and exactly there.
  struct Case {
    PipelineSchedule schedule;
    int p;
    int v;
    int64_t m;
    double formula;
  };
  for (const Case c : {Case{PipelineSchedule::kGpipe, 4, 1, 8, 3.0 / 8},
                       Case{PipelineSchedule::k1F1B, 8, 1, 16, 7.0 / 16},
                       Case{PipelineSchedule::k1F1B, 4, 1, 32, 3.0 / 32},
                       Case{PipelineSchedule::kInterleaved1F1B, 4, 2, 8, 3.0 / 16},
                       Case{PipelineSchedule::kInterleaved1F1B, 8, 2, 16, 7.0 / 32}}) {
    const Measured x = Measure(c.p, c.schedule, c.m, c.v);
    const std::string what = Describe(c.p, c.schedule, c.m, c.v, x);
    const strategies::Plan& plan = x.result.plan;
    EXPECT_EQ(plan.micro_batches, c.m) << what;
    EXPECT_DOUBLE_EQ(plan.bubble_fraction, c.formula) << what;
    EXPECT_GE(x.bubble, plan.bubble_fraction - kTolerance) << what;
    EXPECT_LE(x.bubble, plan.bubble_fraction + OutputLayerShare(c.p) + kTolerance) << what;
    EXPECT_NEAR(x.bubble, plan.bubble_fraction + OutputLayerShare(c.p), kTolerance) << what;
    // The same through Analyze itself, on the same inputs.
    StatusOr<strategies::Plan> analyzed =
        strategies::Analyze(UniformModel(), Pipelined(c.schedule, c.m, c.v),
                            *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .pp = c.p}, c.p),
                            FreeCommunicationNode(c.p));
    ASSERT_TRUE(analyzed.ok()) << analyzed.status().message();
    EXPECT_DOUBLE_EQ(analyzed->bubble_fraction, c.formula) << what;
  }
}

TEST(PipelineBubble, InterleavedUnevenStagesWaitAsTheirChunksDictate) {
  // p = 2, v = 2, m = 2, the 32 layers split 15, 17. By PipelineChunkLayers stage 0 runs
  // chunks of 7 and 8 layers, stage 1 of 9 and 8; virtual stages in order: s0c0 (7), s1c0
  // (9), s0c1 (8), s1c1 (8). With m = p the interleaved schedule warms up with all m v
  // forwards, so each stage runs F(c0,0) F(c0,1) F(c1,0) F(c1,1) B(c1,0) B(c1,1) B(c0,0)
  // B(c0,1). In units of f = one layer's forward (a backward is 2f per layer) a chunk of n
  // layers takes n f forward, 2 n f backward; o = the output layer's forward (2 b s h V),
  // 2o its backward, on s1c1 only. Each pass starts when its stage is free and its input has
  // arrived (communication is free):
  //   s0 F(c0,0) 0-7, F(c0,1) 7-14            s1 F(c0,0) 7-16, F(c0,1) 16-25
  //   s0 F(c1,0) 16-24, F(c1,1) 25-33         s1 F(c1,0) 25-33+o, F(c1,1) 33+o-41+2o
  //   s1 B(c1,0) 41+2o-57+4o, B(c1,1) 57+4o-73+6o
  //   s0 B(c1,0) 57+4o-73+4o, B(c1,1) 73+6o-89+6o
  //   s1 B(c0,0) 73+6o-91+6o, B(c0,1) 91+6o-109+6o
  //   s0 B(c0,0) 91+6o-105+6o, B(c0,1) 109+6o-123+6o
  // (every start is decided by at least 2o, 24 ns, far above the picosecond rounding). So
  // the step is T = 123f + 6o + t_opt(s0), and stage 1, the busier (17 layers x 3f x 2
  // micro-batches + 3o x 2 = 102f + 6o), waits 21f of it:
  //   bubble = 21 / (102 + 6 o/f), o/f = 2V / (24h + 4s) = 16 / 26624,
  // below the even split's (p - 1) / (v m) = 1/4 of its 96f, because the busier stage paces
  // the step: T is 123f here against 96f + 24f = 120f for 16, 16. The plan keeps the paper's
  // 1/4 (the schedule's bubble over even stages).
  const int p = 2;
  const int v = 2;
  const int64_t m = 2;
  const topology::ClusterSpec spec = FreeCommunicationNode(p);
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  ASSERT_TRUE(cluster.ok());
  const strategies::ModelSpec model = UniformModel();
  const strategies::TrainingSpec training = Pipelined(PipelineSchedule::kInterleaved1F1B, m, v);
  strategies::StrategySpec strategy =
      *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .pp = p}, p);
  strategy.pipeline_stage_layers = {15, 17};
  StatusOr<SimResult> r = SimulateStep(*cluster, model, training, strategy);
  ASSERT_TRUE(r.ok()) << r.status().message();
  StatusOr<std::vector<strategies::Schedule>> schedules =
      strategies::BuildSchedules(model, training, strategy, spec);
  ASSERT_TRUE(schedules.ok());
  const Duration opt0 = OptimizerTime((*schedules)[0], spec);
  const Duration opt1 = OptimizerTime((*schedules)[1], spec);
  const Duration busy1 = r->roles[1].compute_busy - opt1;
  const double h = static_cast<double>(kHidden);
  const double s = static_cast<double>(kSeq);
  const double o_over_f = 2.0 * static_cast<double>(kVocab) / (24.0 * h + 4.0 * s);
  EXPECT_DOUBLE_EQ(o_over_f, 16.0 / 26624);
  const double bubble = (r->step_time - opt0 - busy1) / busy1;
  EXPECT_NEAR(bubble, 21.0 / (102.0 + 6.0 * o_over_f), kTolerance);
  // Stage 0's 15 layers: 90f of work (and picoseconds of embedding) to stage 1's 102f + 6o.
  const Duration busy0 = r->roles[0].compute_busy - opt0;
  EXPECT_NEAR(busy0 / busy1, 90.0 / (102.0 + 6.0 * o_over_f), kTolerance);
  EXPECT_EQ(r->roles.front().step_time, r->step_time);
  EXPECT_DOUBLE_EQ(r->plan.bubble_fraction, 1.0 / 4);
}

// Activations a stage keeps for one micro-batch, from Korthikanti et al. 2022: L_s layers of
// s b h (34 + 5 a s / h) = 54 s b h each (5 a s / h = 5 x 8 x 512 / 1024 = 20), plus, on the
// first stage, the embedding's dropout mask (b s h bytes) and, on the last, the output layer's
// fp32 input and logits (4 b s h + 4 b s V).
Bytes StageActivationsPerMicroBatch(int p, int stage) {
  const strategies::TransformerSpec t = UniformModel().transformer;
  const Bytes layer =
      strategies::ActivationBytesPerLayer(t, 1, kSeq, 1, false, strategies::Recompute::kNone);
  PLACESIM_CHECK(layer == Bytes::Count(kSeq * kHidden * (34 + 5 * kHeads * kSeq / kHidden)));
  Bytes bytes = layer * (kLayers / p);
  if (stage == 0) bytes = bytes + Bytes::Count(kSeq * kHidden);
  if (stage == p - 1) bytes = bytes + Bytes::Count(4 * kSeq * kHidden + 4 * kSeq * kVocab);
  return bytes;
}

Bytes ActivationsAtPeak(const RoleResult& role) {
  return role.live_at_peak[Idx(MemoryTag::kActivations)] +
         role.live_at_peak[Idx(MemoryTag::kCheckpoints)];
}

TEST(PipelineBubble, OneF1BsFirstStageHoldsPMicroBatchesAndItsLastStageOne) {
  // Stage i of 1F1B runs p - i - 1 warm-up forwards and one more before its first backward,
  // so min(p - i, m) micro-batches are live at its peak: p on the first stage, 1 on the last,
  // whatever m (>= p). Per-layer bytes 54 s b h = 28.3 MB; 8 layers per stage for p = 4.
  for (int p : {4, 8}) {
    for (int64_t m : {8, 32}) {
      const Measured x = Measure(p, PipelineSchedule::k1F1B, m);
      const std::vector<RoleResult>& roles = x.result.roles;
      for (int i = 0; i < p; ++i) {
        const int64_t in_flight = std::min<int64_t>(p - i, m);
        EXPECT_EQ(ActivationsAtPeak(roles[static_cast<size_t>(i)]),
                  StageActivationsPerMicroBatch(p, i) * in_flight)
            << "p=" << p << " m=" << m << " stage " << i;
      }
      // First / last: p, up to the embedding's and the output layer's few bytes:
      // p (54 L_s + 1) / (54 L_s + 4 + 4 V / h) = 3.972 for p = 4, 7.890 for p = 8.
      const double stage_layers = static_cast<double>(kLayers / p);
      const double ratio = static_cast<double>(ActivationsAtPeak(roles.front()).count()) /
                           static_cast<double>(ActivationsAtPeak(roles.back()).count());
      EXPECT_NEAR(ratio,
                  p * (54 * stage_layers + 1) /
                      (54 * stage_layers + 4 + 4.0 * kVocab / static_cast<double>(kHidden)),
                  1e-9)
          << "p=" << p << " m=" << m;
      EXPECT_NEAR(ratio, p, 0.015 * p) << "p=" << p << " m=" << m;
    }
  }
}

TEST(PipelineBubble, GpipeTakesAsLongAs1F1BButItsFirstStageHoldsEveryMicroBatch) {
  // Both run (m + p - 1)(t_f + t_b) + t_opt; GPipe runs every forward before any backward, so
  // each of its stages holds all m micro-batches at once where 1F1B's first stage holds p.
  const int p = 4;
  for (int64_t m : {8, 16, 32}) {
    const Measured gpipe = Measure(p, PipelineSchedule::kGpipe, m);
    const Measured one_f1b = Measure(p, PipelineSchedule::k1F1B, m);
    // The same work per stage, in another order.
    for (int i = 0; i < p; ++i) {
      EXPECT_EQ(gpipe.result.roles[static_cast<size_t>(i)].compute_busy,
                one_f1b.result.roles[static_cast<size_t>(i)].compute_busy)
          << "m=" << m << " stage " << i;
    }
    // The same step.
    EXPECT_EQ(gpipe.step, one_f1b.step) << "m=" << m;
    const Bytes per_mb = StageActivationsPerMicroBatch(p, 0);
    EXPECT_EQ(ActivationsAtPeak(gpipe.result.roles.front()), per_mb * m) << "m=" << m;
    EXPECT_EQ(ActivationsAtPeak(one_f1b.result.roles.front()), per_mb * p) << "m=" << m;
    EXPECT_EQ(ActivationsAtPeak(gpipe.result.roles.back()),
              StageActivationsPerMicroBatch(p, p - 1) * m)
        << "m=" << m;
    // So GPipe's first stage needs m / p times 1F1B's activation memory.
    EXPECT_DOUBLE_EQ(
        static_cast<double>(ActivationsAtPeak(gpipe.result.roles.front()).count()) /
            static_cast<double>(ActivationsAtPeak(one_f1b.result.roles.front()).count()),
        static_cast<double>(m) / p)
        << "m=" << m;
  }
}

TEST(PipelineBubble, BlockingExchangesKeepEverySchedulesPipelineRunning) {
  // Under blocking exchanges (Megatron-LM's and DeepSpeed's) every pipeline schedule placesim
  // builds runs to its end: GPipe, 1F1B and interleaved 1F1B, over even and uneven stages. A
  // rendezvous only ever adds waiting, so each step is at least the one with sends on their
  // own stream; with communication free and even stages, a stage's send meets a receive its
  // peer posted no later than the send's data was ready, so the step does not change at all.
  struct Case {
    PipelineSchedule schedule;
    int p;
    int v;
    int64_t m;
    std::vector<int> split;  // empty: even
  };
  for (const Case& c :
       {Case{PipelineSchedule::kGpipe, 4, 1, 8, {}}, Case{PipelineSchedule::k1F1B, 4, 1, 8, {}},
        Case{PipelineSchedule::k1F1B, 4, 1, 2, {}},
        Case{PipelineSchedule::kInterleaved1F1B, 4, 2, 8, {}},
        Case{PipelineSchedule::kInterleaved1F1B, 4, 4, 8, {}},
        Case{PipelineSchedule::kInterleaved1F1B, 2, 2, 2, {15, 17}},
        Case{PipelineSchedule::kInterleaved1F1B, 4, 2, 8, {7, 9, 9, 7}},
        Case{PipelineSchedule::k1F1B, 4, 1, 8, {7, 9, 9, 7}}}) {
    const std::string what = std::string(strategies::PipelineScheduleName(c.schedule)) +
                             " p=" + std::to_string(c.p) + " v=" + std::to_string(c.v) +
                             " m=" + std::to_string(c.m) + (c.split.empty() ? "" : " uneven");
    StatusOr<topology::Cluster> cluster = topology::BuildCluster(FreeCommunicationNode(c.p));
    ASSERT_TRUE(cluster.ok());
    strategies::StrategySpec strategy =
        *strategies::ExpandStrategyPreset("ddp", {.dp = 1, .pp = c.p}, c.p);
    strategy.pipeline_stage_layers = c.split;
    const strategies::TrainingSpec training = Pipelined(c.schedule, c.m, c.v);
    ExecutorOptions blocking;
    blocking.schedule.blocking_p2p = true;
    StatusOr<SimResult> b = SimulateStep(*cluster, UniformModel(), training, strategy, blocking);
    ASSERT_TRUE(b.ok()) << what << ": " << b.status().message();
    StatusOr<SimResult> a = SimulateStep(*cluster, UniformModel(), training, strategy);
    ASSERT_TRUE(a.ok()) << what;
    EXPECT_GE(b->step_time, a->step_time) << what;
    if (c.split.empty()) {
      EXPECT_NEAR(b->step_time / a->step_time, 1.0, kTolerance) << what;
    }
  }
}

}  // namespace
}  // namespace placesim::sim
