// Schedules of the data-parallel family: their sums agree with the analytic plan (FLOPs,
// static memory, collective volumes, offload copies), their structure follows the strategy
// (DDP buckets, no_sync, ZeRO-3 gathers), and memory events balance. The derivations the
// expected values follow are in docs/schedule.md.
#include "strategies/schedule.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "strategies/analyzer.h"
#include "strategies/model.h"
#include "strategies/pipeline.h"
#include "strategies/presets.h"
#include "test_util.h"

namespace placesim::strategies {
namespace {

using test_util::MakeCluster;
using test_util::MakeTraining;
using test_util::Model;
using ::testing::HasSubstr;

struct Scenario {
  StrategySpec strategy;
  TrainingSpec training;
  topology::ClusterSpec cluster;
};

// llama2-7b on dp ranks of 8-GPU nodes, micro-batch 1, `m` micro-batches per step.
Scenario Make(const std::string& preset, int dp, int64_t m,
              Recompute recompute = Recompute::kNone) {
  Scenario s{*ExpandStrategyPreset(preset, {.dp = dp}, 8), MakeTraining(1, dp * m),
             MakeCluster(dp / 8)};
  s.training.recompute = recompute;
  return s;
}

Schedule Build(const Scenario& s, const ScheduleOptions& options = {}) {
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(Model("llama2-7b"), s.training, s.strategy, s.cluster, options);
  PLACESIM_CHECK(out.ok());
  PLACESIM_CHECK(out->size() == 1);
  return std::move(out->front());
}

Plan Analyzed(const Scenario& s) {
  return *Analyze(Model("llama2-7b"), s.training, s.strategy, s.cluster);
}

int64_t Count(const Schedule& sched, OpKind kind, CollectiveKind c, State state) {
  int64_t n = 0;
  for (const Op& op : sched.ops) n += op.kind == kind && op.collective == c && op.state == state;
  return n;
}

TEST(Schedule, ComputeFlopsSumToEquation3) {
  // One rank runs m micro-batches of b sequences; dp ranks together run the global batch,
  // so dp x (the rank's compute FLOPs) is Narayanan eq. 3 for that batch.
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    for (const char* preset : {"ddp", "zero3"}) {
      const Scenario s = Make(preset, 8, 4, r);
      const Schedule sched = Build(s);
      double flops = 0;
      for (const Op& op : sched.ops)
        if (op.kind == OpKind::kCompute && op.phase != Phase::kOptimizer) flops += op.flops.count();
      const double eq3 = Analyzed(s).flops_per_iteration.count();
      EXPECT_NEAR(flops * 8 / eq3, 1.0, 1e-12) << preset << " " << RecomputeName(r);
    }
  }
}

// The schedule agrees with the plan to the byte: dependencies point backwards, memory events
// balance, static memory and the activation peak equal the plan's, and the collectives per
// (kind, axis, state) and the offload copies sum to the plan's.
// With pipelining, `role` is the plan's role of the schedule's stage; the tied word
// embedding's all-reduce of two between the first and last stage is an exchange of S each way
// (a send of S per end), the all-reduce's per-device volume 2 (2 - 1) / 2 S.
void ExpectAgreesWithPlan(const Schedule& sched, const Plan& plan, const RankRole& role) {
  // Dependencies point backwards; every Free names an earlier Alloc of the same size.
  std::map<int32_t, bool> live;  // alloc index -> still live
  std::map<std::tuple<MemoryTag, MemorySpace>, int64_t> static_bytes;
  int64_t act_live = 0, act_peak = 0;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    for (int32_t d : sched.DepsOf(i)) ASSERT_LT(static_cast<size_t>(d), i);
    const Op& op = sched.ops[i];
    const bool act = op.tag == MemoryTag::kActivations || op.tag == MemoryTag::kCheckpoints;
    if (op.kind == OpKind::kAlloc) {
      live[static_cast<int32_t>(i)] = true;
      if (op.phase == Phase::kStep) static_bytes[{op.tag, op.space}] += op.bytes.count();
      // Every activation alloc runs on the compute stream, so index order is time order.
      if (act) act_peak = std::max(act_peak, act_live += op.bytes.count());
    } else if (op.kind == OpKind::kFree) {
      ASSERT_GE(op.alloc, 0);
      const Op& a = sched.ops[static_cast<size_t>(op.alloc)];
      EXPECT_EQ(a.kind, OpKind::kAlloc);
      EXPECT_EQ(a.bytes, op.bytes);
      EXPECT_EQ(a.tag, op.tag);
      ASSERT_TRUE(live[op.alloc]) << "double free of op " << op.alloc;
      live[op.alloc] = false;
      if (act) act_live -= op.bytes.count();
    }
  }
  // At the end only the static allocs are live.
  for (const auto& [index, is_live] : live) {
    if (is_live) {
      EXPECT_EQ(sched.ops[static_cast<size_t>(index)].phase, Phase::kStep) << index;
    }
  }
  const MemoryBreakdown& mem = role.memory;
  const auto dev = [&](MemoryTag t) { return static_bytes[{t, MemorySpace::kDevice}]; };
  EXPECT_EQ(dev(MemoryTag::kParams), mem.params.count());
  EXPECT_EQ(dev(MemoryTag::kGrads), mem.grads.count());
  EXPECT_EQ(dev(MemoryTag::kOptimizer), mem.optimizer.count());
  EXPECT_EQ(dev(MemoryTag::kStaging), mem.offload_staging.count());
  int64_t host = 0, nvme = 0;
  for (const auto& [key, bytes] : static_bytes) {
    if (std::get<1>(key) == MemorySpace::kHost) host += bytes;
    if (std::get<1>(key) == MemorySpace::kNvme) nvme += bytes;
  }
  EXPECT_EQ(host, mem.offloaded_host.count());
  EXPECT_EQ(nvme, mem.offloaded_nvme.count());
  // One micro-batch's activations are live at the end of its forward: the plan's figure.
  EXPECT_EQ(act_peak, mem.activations.count());
  EXPECT_EQ(act_live, 0);

  // Collective buffers and per-device bytes per (kind, axis, state) equal the plan's.
  using Key = std::tuple<CollectiveKind, topology::Axis, State>;
  std::map<Key, std::pair<int64_t, int64_t>> want, got;
  for (const Collective& c : role.collectives) {
    want[{c.kind, c.axis, c.state}].first += c.buffer_bytes.count() * c.count;
    want[{c.kind, c.axis, c.state}].second += c.total_bytes.count();
  }
  for (const Op& op : sched.ops) {
    if (op.kind != OpKind::kCollective) continue;
    const bool tied = op.axis == topology::Axis::kPipeline && op.state == State::kGrads;
    const Key key{tied ? CollectiveKind::kAllReduce : op.collective, op.axis, op.state};
    got[key].first += op.buffer_bytes.count();
    got[key].second += op.bytes.count();
  }
  EXPECT_EQ(got, want);

  // Copies per (direction, state, target) equal the plan's offload copies.
  std::map<std::string, int64_t> want_copies, got_copies;
  for (const OffloadCopy& c : role.copies) {
    const bool nv = c.target == OffloadTarget::kNvme;
    const char* kind = c.direction == CopyDirection::kDeviceToHost ? (nv ? "nvme-write" : "d2h")
                                                                   : (nv ? "nvme-read" : "h2d");
    want_copies[std::string(kind) + " " + StateName(c.state)] += c.bytes_per_step.count();
  }
  for (const Op& op : sched.ops) {
    if (op.kind == OpKind::kCopy)
      got_copies[std::string(CopyKindName(op.copy)) + " " + StateName(op.state)] +=
          op.bytes.count();
  }
  EXPECT_EQ(got_copies, want_copies);
}

void ExpectAgreesWithPlan(const Schedule& sched, const Plan& plan) {
  ExpectAgreesWithPlan(sched, plan, plan.roles.front());
}

// Every preset of the family, 4 micro-batches per step.
class FamilyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FamilyTest, AgreesWithThePlanToTheByte) {
  // fsdp-hybrid on 2 nodes: shards in groups of 8, replicated across the 2 groups.
  const int dp = std::string(GetParam()) == "fsdp-hybrid" ? 16 : 8;
  const Scenario s = Make(GetParam(), dp, 4);
  const Schedule sched = Build(s);
  ASSERT_EQ(sched.micro_batches, 4);
  ExpectAgreesWithPlan(sched, Analyzed(s));
}

INSTANTIATE_TEST_SUITE_P(Schedule, FamilyTest,
                         ::testing::Values("ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp-hybrid",
                                           "zero-offload", "zero-infinity", "zero-infinity-host"));

// Tensor parallelism (Megatron) under a data-parallel preset on dp: 16 GPUs as tp x dp.
struct TpCase {
  int tp;
  bool sp;
  Recompute recompute;
  const char* preset;
};

class TensorParallelTest : public ::testing::TestWithParam<TpCase> {};

TEST_P(TensorParallelTest, AgreesWithThePlanToTheByte) {
  const TpCase& c = GetParam();
  const int dp = 16 / c.tp;
  const int64_t m = 2;
  Scenario s{*ExpandStrategyPreset(c.preset, {.dp = dp, .tp = c.tp}, 8), MakeTraining(1, dp * m),
             MakeCluster(2)};
  s.training.recompute = c.recompute;
  s.training.sequence_parallel = c.sp;
  const Plan plan = Analyzed(s);
  ASSERT_TRUE(plan.ok());
  const Schedule sched = Build(s);
  ASSERT_EQ(sched.micro_batches, m);
  ASSERT_EQ(sched.ranks, 16);
  ExpectAgreesWithPlan(sched, plan);

  // Each of the tp x dp ranks computes 1/(tp dp) of eq. 3.
  double flops = 0;
  for (const Op& op : sched.ops)
    if (op.kind == OpKind::kCompute && op.phase != Phase::kOptimizer) flops += op.flops.count();
  EXPECT_NEAR(flops * 16 / plan.flops_per_iteration.count(), 1.0, 1e-12);

  // Per layer and micro-batch: forward 2 combines (attention, MLP), backward 2, full
  // recompute 2 more; each an all-reduce, or under SP an all-gather and a reduce-scatter;
  // plus the embedding's combine once per forward pass.
  const int64_t passes = c.recompute == Recompute::kFull ? 2 : 1;
  const int64_t per_layer = (2 * passes + 2) * 32 * m;
  int64_t ar = 0, ag = 0, rs = 0;
  for (const Op& op : sched.ops) {
    if (op.kind != OpKind::kCollective || op.axis != topology::Axis::kTensor) continue;
    EXPECT_EQ(op.group_size, c.tp);
    EXPECT_EQ(op.buffer_bytes.count(), 2 * 4096 * 4096);  // b s h x 2 bytes
    ar += op.collective == CollectiveKind::kAllReduce;
    ag += op.collective == CollectiveKind::kAllGather;
    rs += op.collective == CollectiveKind::kReduceScatter;
  }
  EXPECT_EQ(ar, c.sp ? 0 : per_layer + passes * m);
  EXPECT_EQ(ag, c.sp ? per_layer : 0);
  EXPECT_EQ(rs, c.sp ? per_layer + passes * m : 0);
}

std::vector<TpCase> TpCases() {
  std::vector<TpCase> cases;
  for (int tp : {2, 4, 8}) {
    for (bool sp : {false, true}) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (const char* preset : {"ddp", "zero1", "zero3"}) cases.push_back({tp, sp, r, preset});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Schedule, TensorParallelTest, ::testing::ValuesIn(TpCases()),
                         [](const ::testing::TestParamInfo<TpCase>& info) {
                           const TpCase& c = info.param;
                           return fmt::format("tp{}_{}_{}_{}", c.tp, c.sp ? "sp" : "nosp",
                                              RecomputeName(c.recompute), c.preset);
                         });

TEST(Schedule, TensorParallelCollectivesAreOnTheCriticalPath) {
  // Without SP: each layer's MLP forward reads the attention block's all-reduce, and the
  // next layer's attention reads the MLP's.
  Scenario s{*ExpandStrategyPreset("ddp", {.dp = 1, .tp = 8}, 8), MakeTraining(1, 1),
             MakeCluster(1)};
  const Schedule sched = Build(s);
  int64_t checked = 0;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    const Op& op = sched.ops[i];
    if (op.kind != OpKind::kCompute || op.phase != Phase::kForward || op.layer < 0) continue;
    const std::span<const int32_t> deps = sched.DepsOf(i);
    ASSERT_FALSE(deps.empty()) << i;
    const Op& before = sched.ops[static_cast<size_t>(deps.back())];
    EXPECT_EQ(before.kind, OpKind::kCollective) << i;
    EXPECT_EQ(before.axis, topology::Axis::kTensor) << i;
    EXPECT_EQ(before.collective, CollectiveKind::kAllReduce) << i;
    ++checked;
  }
  EXPECT_EQ(checked, 2 * 32);
}

TEST(Schedule, DistributedSavedActivationsAreGatheredBeforeEachRecompute) {
  // Llama 2 7B (s 4096, h 4096) on tp 8, micro-batch 1, 4 micro-batches, full recompute, with
  // Megatron-LM's --distribute-saved-activations: each layer keeps 1/8 of its bf16 input,
  // 2 s b h / 8 = 33,554,432 / 8 = 4,194,304 bytes, and all-gathers the 33,554,432 bytes over
  // tp before its recompute: 32 layers x 4 micro-batches = 128 gathers, each the recompute's
  // first dependency.
  Scenario s{*ExpandStrategyPreset("megatron", {.dp = 1, .tp = 8}, 8), MakeTraining(1, 4),
             MakeCluster(1)};
  s.training.recompute = Recompute::kFull;
  const Plan plain = Analyzed(s);
  s.training.distribute_saved_activations = true;
  const Schedule sched = Build(s);
  int64_t gathers = 0, gated = 0, kept = 0;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    const Op& op = sched.ops[i];
    if (op.kind == OpKind::kAlloc && op.tag == MemoryTag::kCheckpoints) {
      EXPECT_EQ(op.bytes.count(), 4'194'304);
      ++kept;
    }
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather &&
        op.phase == Phase::kRecompute) {
      EXPECT_EQ(op.axis, topology::Axis::kTensor);
      EXPECT_EQ(op.buffer_bytes.count(), 33'554'432);
      ++gathers;
    }
    if (op.kind != OpKind::kCompute || op.phase != Phase::kRecompute || op.layer < 0) continue;
    for (int32_t d : sched.DepsOf(i)) {
      const Op& dep = sched.ops[static_cast<size_t>(d)];
      gated += dep.kind == OpKind::kCollective && dep.collective == CollectiveKind::kAllGather &&
               dep.phase == Phase::kRecompute && dep.layer == op.layer;
    }
  }
  EXPECT_EQ(kept, 128);
  EXPECT_EQ(gathers, 128);
  EXPECT_EQ(gated, 128);
  // The plan counts the same gathers. Its activation peak (the last layer's backward, one
  // micro-batch live without a pipeline) holds the 32 kept inputs, 7/8 smaller, and the layer
  // being recomputed rebuilds its whole input: 31 x 29,360,128 bytes less than without.
  const Plan plan = Analyzed(s);
  ExpectAgreesWithPlan(sched, plan);
  EXPECT_EQ(plain.roles.front().memory.activations - plan.roles.front().memory.activations,
            Bytes::Count(int64_t{31} * 29'360'128));
}

TEST(Schedule, DdpAllReducesBucketsOnlyAfterTheLastMicroBatch) {
  // llama2-7b: Ψ = 6,738,415,616 parameters, 2-byte grads = 13,476,831,232 bytes. Buckets
  // of 25 MiB = 26,214,400 bytes: ceil(13,476,831,232 / 26,214,400) = ceil(514.10) = 515.
  const Scenario s = Make("ddp", 8, 4);
  ASSERT_EQ(Analyzed(s).parameter_count, 6'738'415'616);
  const Schedule sched = Build(s);
  EXPECT_EQ(Count(sched, OpKind::kCollective, CollectiveKind::kAllReduce, State::kGrads), 515);
  for (const Op& op : sched.ops) {
    if (op.kind != OpKind::kCollective) continue;
    // no_sync: micro-batches 0-2 accumulate locally; only the last one all-reduces.
    EXPECT_EQ(op.micro_batch, 3);
    EXPECT_EQ(op.group_size, 8);
    // Each all-reduce waits for the backward-weight op that completes its bucket.
    ASSERT_EQ(sched.DepsOf(static_cast<size_t>(&op - sched.ops.data())).size(), 1u);
  }
  // The first bucket is ready long before the backward ends: it overlaps the rest of it.
  size_t first_ar = 0, last_bwd = 0;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    if (sched.ops[i].kind == OpKind::kCollective && first_ar == 0) first_ar = i;
    if (sched.ops[i].phase == Phase::kBackwardWeight && sched.ops[i].kind == OpKind::kCompute)
      last_bwd = i;
  }
  EXPECT_LT(first_ar, last_bwd);

  // Without no_sync every micro-batch all-reduces: 4 x 515.
  const Schedule each = Build(s, {.sync_grads_every_micro_batch = true});
  EXPECT_EQ(Count(each, OpKind::kCollective, CollectiveKind::kAllReduce, State::kGrads), 4 * 515);
  // Half-size buckets: ceil(13,476,831,232 / 13,107,200) = ceil(1028.2) = 1029.
  EXPECT_EQ(Count(Build(s, {.bucket_bytes = MiB(12.5)}), OpKind::kCollective,
                  CollectiveKind::kAllReduce, State::kGrads),
            1029);
}

// The most gathered-parameter buffers live at once, and how many are live at the end.
std::pair<int, int> GatheredBuffers(const Schedule& sched) {
  int live = 0, peak = 0;
  for (const Op& op : sched.ops) {
    if (op.tag != MemoryTag::kGatheredParams) continue;
    if (op.kind == OpKind::kAlloc) peak = std::max(peak, ++live);
    if (op.kind == OpKind::kFree) --live;
  }
  return {peak, live};
}

TEST(Schedule, Zero3GathersEveryUnitTwicePerMicroBatch) {
  // Units: the embedding, 32 layers (one per unit), the output layer = 34. Each is gathered
  // (one flat parameter, as FSDP) before its forward and again before its backward:
  // 2 x 34 x 4 micro-batches = 272, and its gradient reduce-scattered once per micro-batch:
  // 34 x 4 = 136.
  const Schedule sched =
      Build(Make("zero3", 8, 4), {.gather_granularity = GatherGranularity::kPerUnit});
  EXPECT_EQ(sched.units, 34);
  EXPECT_EQ(Count(sched, OpKind::kCollective, CollectiveKind::kAllGather, State::kParams), 272);
  EXPECT_EQ(Count(sched, OpKind::kCollective, CollectiveKind::kReduceScatter, State::kGrads), 136);
  // Prefetch depth 1: at most two gathered units are live at once, none at the end.
  EXPECT_EQ(GatheredBuffers(sched), (std::pair<int, int>{2, 0}));
}

TEST(Schedule, DeepSpeedZero3GathersEveryWeightMatrixApart) {
  // The zero3 preset stands for DeepSpeed, which fetches parameter by parameter: Llama 2 7B's
  // layers hold five matrices each (Q/K/V, output, gate, up, down), so per pass 32 x 5 + the
  // embedding + the output layer = 162 all-gathers, twice per micro-batch over 4: 1296. The
  // bytes are those of the per-unit gathers (one per unit: 272 in the test above).
  const Scenario s = Make("zero3", 8, 4);
  const Schedule per_param = Build(s);
  const Schedule per_unit = Build(s, {.gather_granularity = GatherGranularity::kPerUnit});
  EXPECT_EQ(Count(per_param, OpKind::kCollective, CollectiveKind::kAllGather, State::kParams),
            1296);
  const auto gathered = [](const Schedule& sched) {
    Bytes sum;
    for (const Op& op : sched.ops) {
      if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather)
        sum += op.buffer_bytes;
    }
    return sum;
  };
  EXPECT_EQ(gathered(per_param), gathered(per_unit));
  // FSDP keeps one flat parameter per unit.
  EXPECT_EQ(Count(Build(Make("fsdp", 8, 4)), OpKind::kCollective, CollectiveKind::kAllGather,
                  State::kParams),
            272);
}

TEST(Schedule, WithoutReshardAfterForwardEachUnitIsGatheredOncePerMicroBatch) {
  // FSDP SHARD_GRAD_OP: the 34 units (embedding, 32 layers, output layer) are gathered before
  // their forward and held through their backward: 34 x 4 micro-batches = 136 gathers, half
  // of FULL_SHARD's 272 (Zero3GathersEveryUnitTwicePerMicroBatch); the gradients are still
  // reduce-scattered once per unit and micro-batch, 136.
  const Scenario s = Make("fsdp", 8, 4, Recompute::kFull);
  const ScheduleOptions held{.reshard_after_forward = false};
  const Schedule sched = Build(s, held);
  const auto gathers = [](const Schedule& sched) {
    return Count(sched, OpKind::kCollective, CollectiveKind::kAllGather, State::kParams);
  };
  EXPECT_EQ(gathers(Build(s)), 272);
  EXPECT_EQ(gathers(sched), 136);
  EXPECT_EQ(Count(sched, OpKind::kCollective, CollectiveKind::kReduceScatter, State::kGrads), 136);
  // Every unit of the micro-batch is live when its backward starts, one micro-batch at a time
  // (the next forward's gathers wait for the buffers the backward frees): the peak is the 34
  // units, and every buffer is freed by the end.
  EXPECT_EQ(GatheredBuffers(sched), (std::pair<int, int>{34, 0}));
  // The plan: 4 gathers per unit and step instead of 8. Its gather buffers: the whole model,
  // Llama 2 7B's 6,738,415,616 parameters x 2 bytes = 13,476,831,232 bytes, instead of
  // FULL_SHARD's two largest units (a layer, 202,383,360 elements: 2 x 404,766,720 bytes);
  // plus, either way, the largest unit's full bf16 gradient until its reduce-scatter,
  // 404,766,720 bytes.
  const StatusOr<Plan> plan =
      Analyze(Model("llama2-7b"), s.training, s.strategy, s.cluster, ScheduleAnalyzeOptions(held));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->roles.front().memory.gather_buffers.count(),
            int64_t{13'476'831'232} + 404'766'720);
  EXPECT_EQ(Analyzed(s).roles.front().memory.gather_buffers.count(), int64_t{3} * 404'766'720);
  int64_t gathered_params = 0;
  for (const Collective& col : plan->roles.front().collectives) {
    if (col.reason != CommPurpose::kParamGather) continue;
    EXPECT_EQ(col.count, 4);
    gathered_params += col.buffer_bytes.count();
  }
  EXPECT_EQ(gathered_params, int64_t{6'738'415'616} * 2);
  ExpectAgreesWithPlan(sched, *plan);
  // DeepSpeed's re-fetch after recompute needs a release between forward and backward: none.
  EXPECT_EQ(gathers(Build(Make("zero3", 8, 4, Recompute::kFull),
                          {.gather_granularity = GatherGranularity::kPerUnit,
                           .max_reuse_distance = 0,
                           .reshard_after_forward = false})),
            136);
  // Under pipeline parallelism, whose forwards run ahead of their backwards, it is refused.
  const StatusOr<std::vector<Schedule>> pipelined =
      BuildSchedules(Model("llama2-7b"), s.training,
                     *ExpandStrategyPreset("fsdp", {.dp = 4, .pp = 2}, 8), MakeCluster(1), held);
  ASSERT_FALSE(pipelined.ok());
  EXPECT_EQ(pipelined.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(pipelined.status().message(), HasSubstr("reshard_after_forward false with pp=2"));
}

TEST(Schedule, ReuseDistanceReleasesTheMatricesFarFromTheirBackward) {
  // DeepSpeed's coordinator releases a matrix after its recompute when its backward lies at
  // least stage3_max_reuse_distance fetched elements later: D_i = 2 x (the elements of the
  // matrices after it in the forward). GPT-3 175B (h = 12288, tp 1): Q/K/V 3h^2, output h^2,
  // h-to-4h 4h^2, 4h-to-h 4h^2, h^2 = 150,994,944. D = 18h^2 = 2.72e9, 16h^2 = 2.42e9,
  // 8h^2 = 1.21e9 and 0: against 1e9 the first three are fetched again, 8h^2 of the 12h^2.
  const int64_t h2 = int64_t{12288} * 12288;
  const LayerRefetch gpt =
      RefetchAfterRecompute(Model("gpt3-175b").transformer, 1, kDeepSpeedMaxReuseDistance);
  EXPECT_EQ(gpt.matrices, (std::vector<int64_t>{3 * h2, h2, 4 * h2}));
  EXPECT_EQ(gpt.refetched, 8 * h2);
  EXPECT_EQ(gpt.total, 12 * h2);
  // Under tp 8 each rank's matrices are an eighth: 18h^2 / 8 = 3.4e8 < 1e9, none.
  EXPECT_TRUE(RefetchAfterRecompute(Model("gpt3-175b").transformer, 8, kDeepSpeedMaxReuseDistance)
                  .matrices.empty());
  EXPECT_EQ(FrameworkDefaults("zero3").max_reuse_distance, kDeepSpeedMaxReuseDistance);
  EXPECT_FALSE(FrameworkDefaults("fsdp").max_reuse_distance.has_value());
}

TEST(Schedule, DeepSpeedZero3GathersAgainWhatItReleasedAfterRecompute) {
  // Llama 2 7B (h 4096, ffn 11008, gated): Q/K/V 50,331,648 elements, output 16,777,216, gate,
  // up and down 45,088,768 each. Reuse distances after the recompute: 2 x 152,043,520 =
  // 304,087,040 (Q/K/V), 2 x 135,266,304 = 270,532,608 (output), 180,355,072, 90,177,536, 0.
  // DeepSpeed's 1e9 releases none of them: the 1296 gathers of a plain step (32 x 5 + 2 per
  // pass, two passes, 4 micro-batches; DeepSpeedZero3GathersEveryWeightMatrixApart).
  const Scenario s = Make("zero3", 8, 4, Recompute::kFull);
  const auto gathers = [](const Schedule& sched) {
    return Count(sched, OpKind::kCollective, CollectiveKind::kAllGather, State::kParams);
  };
  EXPECT_EQ(gathers(Build(s)), 1296);
  // 2e8 releases Q/K/V and output: 2 more per layer and micro-batch, 1296 + 2 x 32 x 4 = 1552.
  // 0 releases all five: 1296 + 5 x 128 = 1936.
  const ScheduleOptions near{.max_reuse_distance = 200'000'000};
  const Schedule sched = Build(s, near);
  EXPECT_EQ(gathers(sched), 1552);
  EXPECT_EQ(gathers(Build(s, {.max_reuse_distance = 0})), 1936);
  // Bytes: a layer's 202,383,360 elements (its matrices and two norms of 4096) are
  // 404,766,720 bf16 bytes; the released share is floor(404,766,720 x 67,108,864 /
  // 202,375,168) = 134,223,161 bytes per layer, 32 x 4 x that per step.
  const auto gathered_bytes = [](const Schedule& sched) {
    int64_t sum = 0;
    for (const Op& op : sched.ops) {
      if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather)
        sum += op.buffer_bytes.count();
    }
    return sum;
  };
  EXPECT_EQ(gathered_bytes(sched) - gathered_bytes(Build(s)), int64_t{134'223'161} * 32 * 4);
  // Each re-fetch follows its layer's recompute, and that layer's backward waits for it.
  int64_t after_recompute = 0, waited = 0;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    const Op& op = sched.ops[i];
    const std::span<const int32_t> deps = sched.DepsOf(i);
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllGather &&
        deps.size() == 1 && sched.ops[static_cast<size_t>(deps[0])].phase == Phase::kRecompute) {
      ++after_recompute;
    }
    if (op.kind != OpKind::kCompute || op.phase != Phase::kBackwardInput || op.layer < 0) continue;
    for (int32_t d : deps) {
      const Op& dep = sched.ops[static_cast<size_t>(d)];
      waited += dep.kind == OpKind::kCollective && dep.collective == CollectiveKind::kAllGather &&
                dep.layer < 0 && sched.DepsOf(static_cast<size_t>(d)).size() == 1 &&
                sched.ops[static_cast<size_t>(sched.DepsOf(static_cast<size_t>(d))[0])].phase ==
                    Phase::kRecompute;
    }
  }
  EXPECT_EQ(after_recompute, 2 * 32 * 4);
  EXPECT_EQ(waited, 32 * 4);  // one backward per layer and micro-batch, after its last re-fetch
  const StatusOr<Plan> plan =
      Analyze(Model("llama2-7b"), s.training, s.strategy, s.cluster, ScheduleAnalyzeOptions(near));
  ASSERT_TRUE(plan.ok());
  int64_t planned = 0;
  for (const Collective& col : plan->roles.front().collectives) {
    if (col.reason != CommPurpose::kParamRefetch) continue;
    EXPECT_EQ(col.count, 4);
    planned += col.buffer_bytes.count() * col.count;
  }
  EXPECT_EQ(planned, int64_t{134'223'161} * 32 * 4);
  ExpectAgreesWithPlan(sched, *plan);
  // Without full recompute there is nothing between a forward and its backward to release.
  EXPECT_EQ(gathers(Build(Make("zero3", 8, 4), near)), 1296);
}

// Whether some compute op after reduce-scatter `rs` names it as a dependency.
bool ComputeWaitsFor(const Schedule& sched, size_t rs) {
  for (size_t i = rs + 1; i < sched.ops.size(); ++i) {
    if (sched.ops[i].kind != OpKind::kCompute) continue;
    for (int32_t d : sched.DepsOf(i)) {
      if (static_cast<size_t>(d) == rs) return true;
    }
  }
  return false;
}

TEST(Schedule, WithoutOverlapTheBackwardWaitsForEachReduceScatter) {
  // DeepSpeed's overlap_comm defaults to false: the gradient reduction is queued behind the
  // backward's kernels, so the compute after a reduce-scatter waits for it. FSDP reduces on a
  // stream of its own: only the optimizer step waits, for the last one.
  const auto waits = [](const Schedule& sched) {
    int64_t rs = 0, waited = 0;
    for (size_t i = 0; i < sched.ops.size(); ++i) {
      const Op& op = sched.ops[i];
      if (op.kind != OpKind::kCollective || op.collective != CollectiveKind::kReduceScatter)
        continue;
      ++rs;
      waited += ComputeWaitsFor(sched, i);
    }
    return std::pair{rs, waited};
  };
  // 34 units x 4 micro-batches = 136 reduce-scatters; the compute of the next unit (or the
  // optimizer step after the last) waits for each.
  EXPECT_EQ(waits(Build(Make("zero3", 8, 4))), (std::pair<int64_t, int64_t>{136, 136}));
  EXPECT_EQ(waits(Build(Make("fsdp", 8, 4))), (std::pair<int64_t, int64_t>{136, 1}));
  EXPECT_EQ(waits(Build(Make("zero3", 8, 4), {.overlap_grad_reduce = true})),
            (std::pair<int64_t, int64_t>{136, 1}));
}

// The index of the last backward compute op of a schedule.
size_t LastBackwardCompute(const Schedule& sched) {
  size_t last = 0;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    const Op& op = sched.ops[i];
    if (op.kind == OpKind::kCompute &&
        (op.phase == Phase::kBackwardInput || op.phase == Phase::kBackwardWeight))
      last = i;
  }
  return last;
}

TEST(Schedule, DataParallelCollectivesRunOnTheirOwnStream) {
  // Each PyTorch process group has its own NCCL stream: gradient reductions and ZeRO / FSDP
  // gathers (dp) on kDpComm, tensor-parallel collectives on kComm, so neither queues behind
  // the other.
  for (const char* preset : {"ddp", "zero1", "zero3", "fsdp"}) {
    const Schedule sched = Build(Make(preset, 8, 2));
    int64_t dp = 0;
    for (const Op& op : sched.ops) {
      if (op.kind != OpKind::kCollective) continue;
      EXPECT_EQ(op.stream, Stream::kDpComm) << preset << " " << CollectiveKindName(op.collective);
      ++dp;
    }
    EXPECT_GT(dp, 0) << preset;
  }
  StatusOr<std::vector<Schedule>> tp =
      BuildSchedules(Model("llama2-7b"), MakeTraining(1, 8),
                     *ExpandStrategyPreset("megatron", {.dp = 4, .tp = 2}, 8), MakeCluster(1), {});
  ASSERT_TRUE(tp.ok()) << tp.status().message();
  int64_t tp_ops = 0, dp_ops = 0;
  for (const Op& op : tp->front().ops) {
    if (op.kind != OpKind::kCollective) continue;
    const bool grads = op.state == State::kGrads;
    EXPECT_EQ(op.stream, grads ? Stream::kDpComm : Stream::kComm);
    (grads ? dp_ops : tp_ops) += 1;
  }
  EXPECT_GT(tp_ops, 0);
  EXPECT_GT(dp_ops, 0);
}

TEST(Schedule, MegatronReducesReplicatedGradientsAfterTheBackward) {
  // Megatron-LM's overlap_grad_reduce defaults to false (distributed_data_parallel_config.py):
  // the gradient buffer is reduced after the last backward, so every sync of the last
  // micro-batch waits for the stage's last backward op. PyTorch DDP's hooks send each bucket
  // as soon as it is complete: with 25 MiB buckets (13.1M bf16 elements) over llama2-7b's
  // 6.7e9 gradient elements there are hundreds of buckets, and all but the few the last
  // backward op completes go before the backward ends. The buckets are set to 25 MiB for
  // every framework here (an explicit bucket wins over Megatron-LM's own sizes, tested in
  // MegatronBucketsFollowItsDataParallelConfig), so the comparison is of the ordering alone.
  const ScheduleOptions fixed{.bucket_bytes = MiB(25)};
  const auto after_backward = [](const Schedule& sched) {
    const size_t last = LastBackwardCompute(sched);
    int64_t syncs = 0, after = 0;
    for (size_t i = 0; i < sched.ops.size(); ++i) {
      const Op& op = sched.ops[i];
      if (op.kind != OpKind::kCollective || op.state != State::kGrads) continue;
      ++syncs;
      for (int32_t d : sched.DepsOf(i)) after += static_cast<size_t>(d) == last;
    }
    return std::pair{syncs, after};
  };
  // The last backward op is the embedding's weight gradient: its 32000 x 4096 = 131,072,000
  // elements complete every bucket that ends inside them, at most 131,072,000 / 13,107,200
  // + 1 = 11 buckets; those go after the backward's last op under any framework.
  const int64_t embedding_buckets = 131'072'000 / 13'107'200 + 1;
  for (const char* preset : {"megatron", "zero1"}) {
    const auto [syncs, after] = after_backward(Build(Make(preset, 8, 4), fixed));
    EXPECT_GT(syncs, 100) << preset;
    EXPECT_EQ(after, syncs) << preset;
    const auto [overlapped, late] = after_backward(
        Build(Make(preset, 8, 4), {.bucket_bytes = MiB(25), .overlap_grad_reduce = true}));
    EXPECT_EQ(overlapped, syncs) << preset;  // the same buckets, issued earlier
    EXPECT_LE(late, embedding_buckets) << preset;
  }
  const auto [ddp_syncs, ddp_after] = after_backward(Build(Make("ddp", 8, 4)));
  EXPECT_GT(ddp_syncs, 100);
  EXPECT_LE(ddp_after, embedding_buckets);
  // Only replicated gradients wait: ZeRO-3's sharded ones leave every micro-batch.
  EXPECT_FALSE(FrameworkDefaults("zero1").overlap_grad_reduce);
  EXPECT_FALSE(FrameworkDefaults("megatron").overlap_grad_reduce);
  EXPECT_TRUE(FrameworkDefaults("ddp").overlap_grad_reduce);
  EXPECT_TRUE(FrameworkDefaults("fsdp").overlap_grad_reduce);
}

TEST(Schedule, MegatronAndDeepSpeedBlockOnTheirPipelineExchanges) {
  // Megatron-LM (megatron, zero1) waits for its batched isend / irecv and DeepSpeed (zero2,
  // zero3, zero-offload, zero-infinity*) sends and receives synchronously; PyTorch's presets
  // do not (docs/overheads.md).
  for (const char* preset : {"megatron", "zero1", "zero2", "zero3", "zero-offload", "zero-infinity",
                             "zero-infinity-host"}) {
    EXPECT_TRUE(FrameworkDefaults(preset).blocking_p2p) << preset;
  }
  for (const char* preset : {"ddp", "fsdp", "fsdp-hybrid", "custom"}) {
    EXPECT_FALSE(FrameworkDefaults(preset).blocking_p2p) << preset;
  }
}

TEST(Schedule, MegatronBucketsFollowItsDataParallelConfig) {
  // Megatron-LM's DistributedDataParallel (megatron/core/distributed/distributed_data_parallel
  // .py, distributed_data_parallel_config.py): bucket_size unset is max(40,000,000,
  // 1,000,000 x dp) parameters with overlap_grad_reduce, the whole buffer without it.
  // llama2-7b has 6,738,415,616 gradient elements on each of the dp ranks (zero1: replicated
  // gradients, reduce-scattered once per step for the sharded optimizer).
  const int64_t grads = 6'738'415'616;
  const auto syncs = [](const Schedule& sched) {
    int64_t n = 0;
    for (const Op& op : sched.ops) n += op.kind == OpKind::kCollective && op.state == State::kGrads;
    return n;
  };
  for (const char* preset : {"megatron", "zero1"}) {
    // Without overlap (the Megatron-LM default): one bucket, one sync.
    EXPECT_EQ(syncs(Build(Make(preset, 8, 4))), 1) << preset;
    // With it, dp 8: max(40,000,000, 8,000,000) = 40,000,000 elements per bucket,
    // ceil(6,738,415,616 / 40,000,000) = ceil(168.46) = 169 buckets.
    EXPECT_EQ(syncs(Build(Make(preset, 8, 4), {.overlap_grad_reduce = true})),
              (grads + 39'999'999) / 40'000'000)
        << preset;
    // dp 64: max(40,000,000, 64,000,000) = 64,000,000 elements, ceil(105.29) = 106 buckets.
    EXPECT_EQ(syncs(Build(Make(preset, 64, 1), {.overlap_grad_reduce = true})),
              (grads + 63'999'999) / 64'000'000)
        << preset;
    // An explicit bucket holds for every framework: 25 MiB of 2-byte gradients is 13,107,200
    // elements, ceil(514.10) = 515 buckets.
    EXPECT_EQ(syncs(Build(Make(preset, 8, 4), {.bucket_bytes = MiB(25)})), 515) << preset;
  }
  // The elements are of the gradient dtype the schedule reduces: fp32 main gradients make
  // the same 40,000,000 elements 160,000,000 bytes.
  Scenario fp32 = Make("megatron", 8, 4);
  fp32.training.main_grads_fp32 = true;
  EXPECT_EQ(GradientBucket(std::nullopt, fp32.strategy, fp32.training, true),
            Bytes::Count(160'000'000));
  EXPECT_EQ(GradientBucket(std::nullopt, fp32.strategy, fp32.training, false),
            kWholeGradientBucket);
  // Every other framework keeps PyTorch DDP's 25 MiB.
  const Scenario ddp = Make("ddp", 8, 4);
  EXPECT_EQ(GradientBucket(std::nullopt, ddp.strategy, ddp.training, std::nullopt), MiB(25));
  EXPECT_EQ(syncs(Build(ddp)), 515);
}

TEST(Schedule, RecomputeAddsForwardWorkInBackward) {
  // Full recompute: one recompute op per layer per micro-batch (32 x 4), each a forward.
  const Schedule full = Build(Make("ddp", 8, 4, Recompute::kFull));
  int64_t recomputes = 0;
  for (const Op& op : full.ops)
    recomputes += op.kind == OpKind::kCompute && op.phase == Phase::kRecompute;
  EXPECT_EQ(recomputes, 128);
}

// The GPT of examples/gpt-32l-fsdp-64gpu.textproto: 32 layers, h 4096, 32 heads, MLP 4h,
// tied embeddings, no biases, rotary positions (what the scenario leaves at its defaults).
ModelSpec Gpt32l(int64_t vocab, int64_t seq_len) {
  ModelSpec m;
  m.name = "gpt-32l";
  m.transformer = {.layers = 32,
                   .hidden = 4096,
                   .heads = 32,
                   .ffn_hidden = 16384,
                   .vocab = vocab,
                   .seq_len = seq_len,
                   .tied_embeddings = true};
  return m;
}

// Device activation and checkpoint bytes live when their sum peaks. Every activation alloc
// and free runs on the compute stream, so index order is the order they happen in.
struct ActivationPeak {
  int64_t activations = 0;
  int64_t checkpoints = 0;
  int64_t total() const { return activations + checkpoints; }
};

ActivationPeak PeakOfActivations(const Schedule& sched) {
  ActivationPeak live, peak;
  for (const Op& op : sched.ops) {
    if (op.kind != OpKind::kAlloc && op.kind != OpKind::kFree) continue;
    int64_t* slot = op.tag == MemoryTag::kActivations   ? &live.activations
                    : op.tag == MemoryTag::kCheckpoints ? &live.checkpoints
                                                        : nullptr;
    if (slot == nullptr) continue;
    *slot += op.kind == OpKind::kAlloc ? op.bytes.count() : -op.bytes.count();
    if (live.total() > peak.total()) peak = live;
  }
  return peak;
}

TEST(Schedule, FullRecomputePeakOfTheGpt32lFsdpExample) {
  // FSDP over 64 GPUs, micro-batch 8, 8 micro-batches per step, full recompute. With
  // Korthikanti et al. 2022 (Table 2, Sections 4.3 and 5), bf16 activations, s = 2048,
  // b = 8, h = 4096, a = 32, V = 51200, L = 32:
  //   s b h = 2048 x 8 x 4096                                     =     67,108,864
  //   kept per layer (its input, 2 s b h = 128 MiB), x 32 = 64 s b h =  4,294,967,296
  //   embedding dropout mask, s b h                                =     67,108,864
  //   output layer, 4 s b h + 4 s b V (fp32 logits)
  //     = 268,435,456 + 3,355,443,200                              =  3,623,878,656
  //   one layer without recompute, s b h (34 + 5 a s / h) = 114 s b h = 7,650,410,496;
  //   recompute rebuilds all of it but the input it restarts from (the checkpoint, which is
  //   the first LayerNorm's input): 112 s b h                      =  7,516,192,768
  // Live at the two candidate peaks of a micro-batch (the previous one has freed everything):
  //   end of forward, through the output layer's backward:
  //     65 s b h + logits = 4,362,076,160 + 3,623,878,656          =  7,985,954,816
  //   backward of layer 31 (the output layer freed its logits): 32 checkpoints, the mask and
  //     layer 31 rebuilt, (64 + 1 + 112) s b h = 177 s b h         = 11,878,268,928
  // Each later backward holds one checkpoint fewer, so the peak is 11,878,268,928 bytes
  // (11.88 GB): 4,294,967,296 of checkpoints and 67,108,864 + 7,516,192,768 = 7,583,301,632
  // of activations. Leaving out the working set gives 7.99 GB; rebuilding 114 s b h beside
  // the kept input counts that input twice (12,012,486,656).
  const ModelSpec model = Gpt32l(51200, 2048);
  TrainingSpec training = MakeTraining(8, 4096);
  training.recompute = Recompute::kFull;
  const StrategySpec strategy = *ExpandStrategyPreset("fsdp", {.dp = 64}, 8);
  const topology::ClusterSpec cluster = MakeCluster(8);
  const Plan plan = *Analyze(model, training, strategy, cluster);
  ASSERT_EQ(plan.micro_batches, 8);
  EXPECT_EQ(plan.largest().memory.activations.count(), 11'878'268'928);

  StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const ActivationPeak peak = PeakOfActivations(out->front());
  EXPECT_EQ(peak.checkpoints, 4'294'967'296);
  EXPECT_EQ(peak.activations, 7'583'301'632);
  EXPECT_EQ(peak.total(), 11'878'268'928);
}

struct PeakCase {
  const char* preset;
  int64_t micro_batch;
  Recompute recompute;
  int64_t vocab;
  int64_t seq_len;
};

class ActivationPeakTest : public ::testing::TestWithParam<PeakCase> {};

TEST_P(ActivationPeakTest, PlanEqualsThePeakOfTheSchedule) {
  // Closed form for one micro-batch of L = 32 layers (the micro-batch before it has freed
  // everything): with K the bytes a layer keeps (Korthikanti Table 2: none 34 s b h +
  // 5 a s^2 b, selective 34 s b h, full 2 s b h) and R = 34 s b h + 5 a s^2 b - K what
  // recompute rebuilds for the layer whose backward runs,
  //   peak = L K + s b h (embedding mask) + max(4 s b h + 4 s b V (logits), R),
  // the first term of the max at the end of the forward, the second in layer L-1's backward
  // after the output layer freed its logits. At s = 2048 the working set wins for selective
  // (5 a s = 327,680 > 4h + 4V = 221,184 per s b) and full; at s = 512 the logits win
  // (81,920 and 32h + 81,920 = 212,992 < 221,184); with a tiny vocabulary R always wins
  // under recompute.
  const PeakCase& c = GetParam();
  const ModelSpec model = Gpt32l(c.vocab, c.seq_len);
  TrainingSpec training = MakeTraining(c.micro_batch, 8 * c.micro_batch * 2);
  training.recompute = c.recompute;
  const StrategySpec strategy = *ExpandStrategyPreset(c.preset, {.dp = 8}, 8);
  const topology::ClusterSpec cluster = MakeCluster(1);

  const int64_t s = c.seq_len, b = c.micro_batch, h = 4096, a = 32, layers = 32;
  const int64_t sbh = s * b * h;
  const int64_t full = 34 * sbh + 5 * a * s * s * b;
  const int64_t kept = c.recompute == Recompute::kNone        ? full
                       : c.recompute == Recompute::kSelective ? 34 * sbh
                                                              : 2 * sbh;
  const int64_t logits = 4 * sbh + 4 * s * b * c.vocab;
  const int64_t want = layers * kept + sbh + std::max(logits, full - kept);

  const Plan plan = *Analyze(model, training, strategy, cluster);
  EXPECT_EQ(plan.largest().memory.activations.count(), want);
  StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const ActivationPeak peak = PeakOfActivations(out->front());
  EXPECT_EQ(peak.total(), want);
  // Checkpoints are kept only under full recompute, and all L are live at the peak.
  EXPECT_EQ(peak.checkpoints, c.recompute == Recompute::kFull ? layers * kept : 0);
}

std::vector<PeakCase> PeakCases() {
  std::vector<PeakCase> cases;
  for (const char* preset : {"ddp", "fsdp"}) {
    for (int64_t b : {1, 8}) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
        for (int64_t vocab : {51200, 8}) {
          for (int64_t seq_len : {2048, 512}) cases.push_back({preset, b, r, vocab, seq_len});
        }
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Schedule, ActivationPeakTest, ::testing::ValuesIn(PeakCases()),
                         [](const ::testing::TestParamInfo<PeakCase>& info) {
                           const PeakCase& c = info.param;
                           return fmt::format("{}_b{}_{}_v{}_s{}", c.preset, c.micro_batch,
                                              RecomputeName(c.recompute), c.vocab, c.seq_len);
                         });

TEST(Schedule, RefusesWhatItDoesNotGenerate) {
  // Expert parallelism with offloaded states, or hybrid shard groups (fsdp-hybrid shards in
  // groups of a node's 8 GPUs, so dp = 16 on two nodes is two replicas).
  for (auto [preset, dp] : {std::pair{"zero-offload", 8}, std::pair{"fsdp-hybrid", 16}}) {
    StrategySpec moe = *ExpandStrategyPreset(preset, {.dp = dp, .ep = 8}, 8);
    StatusOr<std::vector<Schedule>> out =
        BuildSchedules(Model("mixtral-8x7b"), MakeTraining(1, dp), moe, MakeCluster(dp / 8));
    ASSERT_FALSE(out.ok()) << preset;
    EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(out.status().message(),
                HasSubstr("expert-parallel schedules are generated for model states on the "
                          "device"));
  }
  // Context parallelism whose states are placed otherwise than on dp.
  StrategySpec cp = *ExpandStrategyPreset("zero1", {.dp = 4, .cp = 2}, 8);
  cp.at(topology::Axis::kContext, State::kOptimizer) = Placement{Mode::kReplicated};
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(Model("llama2-7b"), MakeTraining(1, 8), cp, MakeCluster(1));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("optimizer R on cp but S on dp"));
  // Sharded grads over a replicated optimizer break gradient integrity.
  Scenario bad = Make("ddp", 8, 1);
  bad.strategy.at(topology::Axis::kData, State::kGrads) = Placement{Mode::kSharded};
  out = BuildSchedules(Model("llama2-7b"), bad.training, bad.strategy, bad.cluster);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("gradient-integrity"));
}

// Mixture of experts: mixtral-8x7b (32 layers, h = 4096, s = 4096, 8 SwiGLU experts of
// f = 14336, top-2, capacity factor 1.0), micro-batch 1, ep groups carved out of dp.
struct MoeCase {
  const char* preset;
  int dp;
  int ep;
  int tp;
  int pp;
  bool sp;
  Recompute recompute;
  int cp = 1;
};

class ExpertParallelTest : public ::testing::TestWithParam<MoeCase> {};

TEST_P(ExpertParallelTest, EveryStageAgreesWithItsRole) {
  const MoeCase& c = GetParam();
  const int64_t m = 2 * c.pp;
  const int64_t world = int64_t{c.dp} * c.tp * c.pp * c.cp;
  const ModelSpec& model = Model("mixtral-8x7b");
  const StrategySpec strategy = *ExpandStrategyPreset(
      c.preset, {.dp = c.dp, .tp = c.tp, .pp = c.pp, .cp = c.cp, .ep = c.ep}, 8);
  TrainingSpec training = MakeTraining(1, c.dp * m);
  training.recompute = c.recompute;
  training.sequence_parallel = c.sp;
  const topology::ClusterSpec cluster = MakeCluster(static_cast<int>(world / 8));
  const Plan plan = *Analyze(model, training, strategy, cluster);
  ASSERT_TRUE(plan.ok());
  StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), static_cast<size_t>(c.pp));

  // Each rank's experts: 8 / ep of 8 x 3 h f (gated, no biases), 1/t of each.
  const ParameterBreakdown p = CountParameters(model.transformer);
  ASSERT_EQ(p.layer_experts, int64_t{8} * 3 * 4096 * 14336);
  const int64_t expert_local = 8 / c.ep * 3 * 4096 * 14336 / c.tp;
  // All-to-all buffer: top_k x cf = 2 routed copies of the b s h x 2-byte tokens of the
  // rank's s / cp (1/t of them under SP): 2 x 2 x 4096 x 4096 = 64 MiB (/cp, /t).
  const int64_t a2a = 2 * 2 * 4096 * (4096 / c.cp) / (c.sp ? c.tp : 1);
  // Per layer and micro-batch: dispatch + combine in forward, their gradients in backward,
  // and the forward's again under full recompute: 2 x (forward passes + 1).
  const int64_t passes = c.recompute == Recompute::kFull ? 2 : 1;
  const int64_t expert_dp = c.dp / c.ep;
  double flops = 0;
  for (const Schedule& sched : *out) {
    const RankRole* role = &plan.roles.front();
    for (const RankRole& r : plan.roles)
      if (r.first_stage <= sched.stage && sched.stage <= r.last_stage) role = &r;
    ExpectAgreesWithPlan(sched, plan, *role);
    const int64_t layers = 32 / c.pp;
    int64_t all_to_alls = 0, expert_sync = 0, expert_gathers = 0;
    for (const Op& op : sched.ops) {
      if (op.kind == OpKind::kCompute && op.phase != Phase::kOptimizer) flops += op.flops.count();
      if (op.kind != OpKind::kCollective) continue;
      if (op.collective == CollectiveKind::kAllToAll) {
        EXPECT_EQ(op.axis, topology::Axis::kExpert);
        EXPECT_EQ(op.group_size, c.ep);
        EXPECT_EQ(op.buffer_bytes.count(), a2a);
        // Each rank keeps 1/ep of its buffer and sends (ep - 1)/ep of it.
        EXPECT_EQ(op.bytes.count(), a2a / c.ep * (c.ep - 1));
        ++all_to_alls;
      }
      if (op.axis == topology::Axis::kData && op.group == GroupKind::kReplicaGroup) {
        // The expert replica group: the dp / ep ranks with the same ep coordinate, with
        // every cp rank (the states are placed on cp as on dp).
        EXPECT_EQ(op.group_size, expert_dp * c.cp);
        EXPECT_EQ(op.spans_context, c.cp > 1);
        (op.state == State::kGrads ? expert_sync : expert_gathers) += op.buffer_bytes.count();
      }
    }
    EXPECT_EQ(all_to_alls, c.ep > 1 ? 2 * (passes + 1) * layers * m : 0) << sched.stage;
    // Expert gradients, 2 bytes each, synchronized over dp / ep ranks (none when ep = dp):
    // once per step, or every micro-batch when the gradients are sharded (ZeRO-2). ZeRO-1
    // and ZeRO-2 gather the updated expert params over the same group.
    // ZeRO-3 and FSDP reduce-scatter them with each unit every micro-batch, and gather the
    // expert params before every forward and backward (2m times) instead.
    const std::string preset = c.preset;
    const bool gathered = preset == "zero3" || preset == "fsdp";
    const bool each = gathered || preset == "zero2";
    const bool split = c.ep > 1 && expert_dp * c.cp > 1;  // ep = 1: with the dense grads
    EXPECT_EQ(expert_sync, split ? layers * expert_local * 2 * (each ? m : 1) : 0);
    EXPECT_EQ(expert_gathers, !split            ? 0
                              : gathered        ? 2 * m * layers * expert_local * 2
                              : preset != "ddp" ? layers * expert_local * 2
                                                : 0);
  }
  // dp x tp x cp ranks run every stage: the compute FLOPs times that are the MoE-aware eq. 3.
  EXPECT_NEAR(flops * c.dp * c.tp * c.cp / plan.flops_per_iteration.count(), 1.0, 1e-12);
}

std::vector<MoeCase> MoeCases() {
  std::vector<MoeCase> cases;
  for (const char* preset : {"ddp", "zero1", "zero2", "zero3", "fsdp"}) {
    for (int ep : {1, 2, 4, 8}) cases.push_back({preset, 8, ep, 1, 1, false, Recompute::kNone});
  }
  cases.push_back({"zero2", 4, 2, 2, 2, true, Recompute::kSelective});
  cases.push_back({"zero3", 4, 2, 2, 2, true, Recompute::kFull});
  cases.push_back({"fsdp", 8, 4, 1, 2, false, Recompute::kSelective});
  // With context parallelism: experts synchronized over dp / ep x cp ranks.
  cases.push_back({"zero1", 4, 2, 1, 1, false, Recompute::kNone, 2});
  cases.push_back({"ddp", 4, 4, 1, 1, false, Recompute::kNone, 2});
  cases.push_back({"zero2", 4, 2, 2, 1, true, Recompute::kSelective, 2});
  cases.push_back({"zero3", 4, 2, 1, 2, false, Recompute::kFull, 2});
  cases.push_back({"zero1", 4, 4, 2, 1, true, Recompute::kSelective});
  cases.push_back({"ddp", 4, 2, 2, 1, false, Recompute::kFull});
  cases.push_back({"ddp", 4, 2, 2, 2, false, Recompute::kFull});
  cases.push_back({"zero1", 8, 8, 1, 2, false, Recompute::kNone});
  cases.push_back({"zero1", 4, 2, 2, 2, true, Recompute::kFull});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Schedule, ExpertParallelTest, ::testing::ValuesIn(MoeCases()),
                         [](const ::testing::TestParamInfo<MoeCase>& info) {
                           const MoeCase& c = info.param;
                           return fmt::format("{}_dp{}_ep{}_tp{}_pp{}_cp{}{}_{}", c.preset, c.dp,
                                              c.ep, c.tp, c.pp, c.cp, c.sp ? "_sp" : "",
                                              RecomputeName(c.recompute));
                         });

TEST(Schedule, MoeLayerDispatchesAndCombinesAroundItsExperts) {
  // mixtral-8x7b, DDP, dp = ep = 8, one micro-batch: layer 0's forward is attention, router,
  // dispatch, experts, combine; its backward-input the combine's gradient, experts, the
  // dispatch's gradient, router, attention. Layer 1's attention reads layer 0's combine.
  const StrategySpec strategy = *ExpandStrategyPreset("ddp", {.dp = 8, .ep = 8}, 8);
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(Model("mixtral-8x7b"), MakeTraining(1, 8), strategy, MakeCluster(1));
  ASSERT_TRUE(out.ok()) << out.status().message();
  const Schedule& sched = out->front();
  const auto sequence = [&](int32_t layer, Phase phase) {
    std::vector<std::string> kinds;
    for (const Op& op : sched.ops) {
      if (op.layer != layer || op.phase != phase) continue;
      if (op.kind == OpKind::kCompute) kinds.push_back("compute");
      if (op.kind == OpKind::kCollective) kinds.push_back(CollectiveKindName(op.collective));
    }
    return kinds;
  };
  EXPECT_EQ(
      sequence(0, Phase::kForward),
      (std::vector<std::string>{"compute", "compute", "all-to-all", "compute", "all-to-all"}));
  EXPECT_EQ(
      sequence(0, Phase::kBackwardInput),
      (std::vector<std::string>{"all-to-all", "compute", "all-to-all", "compute", "compute"}));
  int32_t combine = -1;
  for (size_t i = 0; i < sched.ops.size(); ++i) {
    const Op& op = sched.ops[i];
    if (op.layer == 0 && op.phase == Phase::kForward && op.kind == OpKind::kCollective)
      combine = static_cast<int32_t>(i);
    if (op.layer == 1 && op.phase == Phase::kForward && op.kind == OpKind::kCompute) {
      const std::span<const int32_t> deps = sched.DepsOf(i);
      EXPECT_NE(std::find(deps.begin(), deps.end(), combine), deps.end());
      break;
    }
  }
}

TEST(Schedule, DroplessRoutingImbalancePacesTheBusiestRank) {
  // Mixtral 8x7B dropless (capacity_factor 0) on dp 8 = ep 8, micro-batch 1, m = 2, no
  // recompute. With routing_imbalance r the busiest rank receives r x top_k = 2r routed
  // copies of its s h tokens, so (Fedus et al. 2022's capacity, with the busiest load in
  // place of the padded one):
  //   all-to-all buffer  2r x b s h x 2 bytes = 2r x 4096 x 4096 x 2
  //   expert FLOPs       2r x b s M per layer forward, twice that in backward, M = 2 x 3hf
  //                      the FLOPs of one gated expert MLP per token (f = 14336),
  // while the model's FLOPs (eq. 3, MoE-aware) stay those of top_k = 2 experts per token.
  const ModelSpec base = Model("mixtral-8x7b");
  const StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 8, .ep = 8}, 8);
  const TrainingSpec training = MakeTraining(1, 16);
  const topology::ClusterSpec cluster = MakeCluster(1);
  struct Run {
    Plan plan;
    double flops = 0;
    int64_t a2a_buffer = 0;
  };
  const auto run = [&](double capacity, double imbalance) {
    ModelSpec model = base;
    model.transformer.capacity_factor = capacity;
    model.transformer.routing_imbalance = imbalance;
    Run r{*Analyze(model, training, strategy, cluster)};
    EXPECT_TRUE(r.plan.ok());
    StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
    EXPECT_TRUE(out.ok()) << out.status().message();
    const Schedule& sched = out->front();
    ExpectAgreesWithPlan(sched, r.plan, r.plan.roles.front());
    for (const Op& op : sched.ops) {
      if (op.kind == OpKind::kCompute && op.phase != Phase::kOptimizer) r.flops += op.flops.count();
      if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kAllToAll)
        r.a2a_buffer = op.buffer_bytes.count();
    }
    return r;
  };
  const Run padded = run(1.0, 1.0);
  const Run balanced = run(0.0, 1.0);
  const Run skewed = run(0.0, 1.5);
  const double s = 4096, M = 2.0 * 3 * 4096 * 14336;
  EXPECT_EQ(balanced.a2a_buffer, int64_t{2} * 4096 * 4096 * 2);
  EXPECT_EQ(skewed.a2a_buffer, int64_t{3} * 4096 * 4096 * 2);
  // 32 layers x m = 2 micro-batches x 3 passes' worth (forward + 2 x backward) of the
  // extra 0.5 x 2 expert MLPs of s M.
  EXPECT_NEAR((skewed.flops - balanced.flops) / (32 * 2 * 3 * 0.5 * 2 * s * M), 1.0, 1e-12);
  EXPECT_EQ(balanced.flops, padded.flops);  // top_k x cf 1.0 = top_k dropless
  EXPECT_EQ(skewed.plan.flops_per_iteration, padded.plan.flops_per_iteration);
  // The busiest rank holds more routed activations.
  EXPECT_GT(skewed.plan.roles.front().memory.activations,
            balanced.plan.roles.front().memory.activations);

  // The option applies to dropless routing of an MoE model only, and must be >= 1.
  for (auto [capacity, imbalance, message] :
       {std::tuple{1.25, 1.5, "applies to dropless routing"},
        std::tuple{0.0, 0.9, "must be a finite number >= 1"}}) {
    ModelSpec model = base;
    model.transformer.capacity_factor = capacity;
    model.transformer.routing_imbalance = imbalance;
    StatusOr<Plan> plan = Analyze(model, training, strategy, cluster);
    ASSERT_FALSE(plan.ok());
    EXPECT_THAT(plan.status().message(), HasSubstr("routing_imbalance"));
    EXPECT_THAT(plan.status().message(), HasSubstr(message));
  }
}

TEST(Schedule, MoeFlopsCountTopKTimesCapacityExpertMlps) {
  // Mixtral 8x7B, one sequence of s = 4096 tokens, no recompute (3 passes per layer):
  // eq. 3 plus, per layer and pass, (top_k x cf - 1) s M + 2 s h E with M = 2 x 3hf the
  // FLOPs per token of one gated expert MLP (h = 4096, f = 14336, E = 8)
  //   = (2 x 1.0 - 1) x 4096 x 6 x 4096 x 14336 + 2 x 4096 x 4096 x 8.
  TransformerSpec t = Model("mixtral-8x7b").transformer;
  const double s = 4096, h = 4096, l = 32, M = 6.0 * 4096 * 14336;
  const double extra = s * M + 2 * s * h * 8;
  TransformerSpec dense = t;
  dense.experts = 0;
  const double moe = ModelFlopsPerIteration(t, 1, Recompute::kNone).count();
  const double base = ModelFlopsPerIteration(dense, 1, Recompute::kNone).count();
  EXPECT_NEAR((moe - base) / (3 * l * extra), 1.0, 1e-12);
  // Capacity factor 1.25 pads each expert's slots: 2.5 expert MLPs per token.
  t.capacity_factor = 1.25;
  const double padded = ModelFlopsPerIteration(t, 1, Recompute::kFull).count();
  const double base_full = ModelFlopsPerIteration(dense, 1, Recompute::kFull).count();
  EXPECT_NEAR((padded - base_full) / (4 * l * (1.5 * s * M + 2 * s * h * 8)), 1.0, 1e-12);
}

TEST(Schedule, RefusesUpFrontWhatWouldExceedTheOpLimit) {
  // Millions of micro-batches, or one-byte gradient buckets (billions of buckets for 7B
  // parameters), must be refused with the count before any op or bucket is allocated.
  Scenario many = Make("zero3", 8, 1);
  many.training.micro_batch = 1;
  many.training.global_batch = 8 * 10'000'000;
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(Model("llama2-7b"), many.training, many.strategy, many.cluster);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(out.status().message(), HasSubstr("10000000 micro-batches"));
  EXPECT_THAT(out.status().message(), HasSubstr(fmt::format("the limit is {}", kMaxScheduleOps)));

  Scenario tiny_buckets = Make("ddp", 8, 1);
  ScheduleOptions options;
  options.bucket_bytes = Bytes::Count(1);
  out = BuildSchedules(Model("llama2-7b"), tiny_buckets.training, tiny_buckets.strategy,
                       tiny_buckets.cluster, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(out.status().message(), HasSubstr("gradient buckets of 1 elements"));
}

// ----------------------------------------------------------------------------- pipelines

std::vector<PipelinePass> Passes(std::initializer_list<std::tuple<char, int, int>> list) {
  std::vector<PipelinePass> out;
  for (const auto& [kind, mb, chunk] : list) out.push_back({kind == 'B', mb, chunk});
  return out;
}

TEST(PipelineOrder, GpipeRunsEveryForwardThenEveryBackward) {
  EXPECT_EQ(PipelineOrder(PipelineSchedule::kGpipe, 4, 1, 3, 2),
            Passes({{'F', 0, 0}, {'F', 1, 0}, {'F', 2, 0}, {'B', 0, 0}, {'B', 1, 0}, {'B', 2, 0}}));
}

TEST(PipelineOrder, OneFOneBWarmsUpWithTheStagesBelowIt) {
  // PipeDream-Flush (Narayanan et al. 2021 Fig. 4, top): stage i of p runs p - i - 1 warm-up
  // forwards, so stage 0 of 4 holds 4 micro-batches before its first backward and the last
  // stage alternates from the start.
  EXPECT_EQ(PipelineOrder(PipelineSchedule::k1F1B, 4, 1, 6, 0), Passes({{'F', 0, 0},
                                                                        {'F', 1, 0},
                                                                        {'F', 2, 0},
                                                                        {'F', 3, 0},
                                                                        {'B', 0, 0},
                                                                        {'F', 4, 0},
                                                                        {'B', 1, 0},
                                                                        {'F', 5, 0},
                                                                        {'B', 2, 0},
                                                                        {'B', 3, 0},
                                                                        {'B', 4, 0},
                                                                        {'B', 5, 0}}));
  EXPECT_EQ(PipelineOrder(PipelineSchedule::k1F1B, 4, 1, 3, 3),
            Passes({{'F', 0, 0}, {'B', 0, 0}, {'F', 1, 0}, {'B', 1, 0}, {'F', 2, 0}, {'B', 2, 0}}));
  // Fewer micro-batches than stages: warm-up capped at m.
  EXPECT_EQ(PipelineOrder(PipelineSchedule::k1F1B, 8, 1, 2, 0),
            Passes({{'F', 0, 0}, {'F', 1, 0}, {'B', 0, 0}, {'B', 1, 0}}));
}

TEST(PipelineOrder, ThePeakHorizonHoldsThePeakOfEveryCountInFlight) {
  // The analyzer walks only PipelinePeakHorizon passes. For every schedule, stage and chunk
  // count below, the most passes in flight, and the most of each chunk (chunk 0 carries the
  // embedding, chunk v - 1 the output layer), must be the same over that prefix as over the
  // whole order.
  const auto peaks = [](const std::vector<PipelinePass>& order, int v) {
    std::vector<int64_t> live(static_cast<size_t>(v) + 1, 0), top(live.size(), 0);
    for (const PipelinePass& pass : order) {
      const int64_t d = pass.backward ? -1 : 1;
      live[0] += d;
      live[static_cast<size_t>(pass.chunk) + 1] += d;
      for (size_t k = 0; k < live.size(); ++k) top[k] = std::max(top[k], live[k]);
    }
    return top;
  };
  for (PipelineSchedule schedule :
       {PipelineSchedule::kGpipe, PipelineSchedule::k1F1B, PipelineSchedule::kInterleaved1F1B}) {
    for (int p : {2, 4, 8}) {
      for (int v : {1, 2, 3, 4}) {
        if (v > 1 && schedule != PipelineSchedule::kInterleaved1F1B) continue;
        for (int64_t m : {int64_t{p}, int64_t{2} * p, int64_t{8} * p, int64_t{64} * p}) {
          for (int stage = 0; stage < p; ++stage) {
            const std::vector<PipelinePass> all = PipelineOrder(schedule, p, v, m, stage);
            const int64_t horizon = PipelinePeakHorizon(schedule, p, v, m, stage);
            const std::vector<PipelinePass> prefix =
                PipelineOrder(schedule, p, v, m, stage, horizon);
            ASSERT_EQ(prefix.size(), static_cast<size_t>(std::min<int64_t>(horizon, 2 * m * v)));
            EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), all.begin()));
            EXPECT_EQ(peaks(prefix, v), peaks(all, v))
                << PipelineScheduleName(schedule) << " p " << p << " v " << v << " m " << m
                << " stage " << stage;
          }
        }
      }
    }
  }
}

TEST(PipelineOrder, InterleavedFollowsMegatronsChunkOrder) {
  // p = 2, v = 2, m = 4. Forward k runs chunk (k mod 4) / 2 of micro-batch (k / 4) 2 + k mod 2:
  //   F: (0,c0) (1,c0) (0,c1) (1,c1) (2,c0) (3,c0) (2,c1) (3,c1)
  // backward k the same micro-batch on chunk 1 - (k mod 4) / 2:
  //   B: (0,c1) (1,c1) (0,c0) (1,c0) (2,c1) (3,c1) (2,c0) (3,c0)
  // Warm-up: stage 0 (2 - 0 - 1) 2 + (2 - 1) 2 = 4 forwards, stage 1 0 + 2 = 2.
  EXPECT_EQ(PipelineOrder(PipelineSchedule::kInterleaved1F1B, 2, 2, 4, 0), Passes({{'F', 0, 0},
                                                                                   {'F', 1, 0},
                                                                                   {'F', 0, 1},
                                                                                   {'F', 1, 1},
                                                                                   {'F', 2, 0},
                                                                                   {'B', 0, 1},
                                                                                   {'F', 3, 0},
                                                                                   {'B', 1, 1},
                                                                                   {'F', 2, 1},
                                                                                   {'B', 0, 0},
                                                                                   {'F', 3, 1},
                                                                                   {'B', 1, 0},
                                                                                   {'B', 2, 1},
                                                                                   {'B', 3, 1},
                                                                                   {'B', 2, 0},
                                                                                   {'B', 3, 0}}));
  EXPECT_EQ(PipelineOrder(PipelineSchedule::kInterleaved1F1B, 2, 2, 4, 1), Passes({{'F', 0, 0},
                                                                                   {'F', 1, 0},
                                                                                   {'F', 0, 1},
                                                                                   {'B', 0, 1},
                                                                                   {'F', 1, 1},
                                                                                   {'B', 1, 1},
                                                                                   {'F', 2, 0},
                                                                                   {'B', 0, 0},
                                                                                   {'F', 3, 0},
                                                                                   {'B', 1, 0},
                                                                                   {'F', 2, 1},
                                                                                   {'B', 2, 1},
                                                                                   {'F', 3, 1},
                                                                                   {'B', 3, 1},
                                                                                   {'B', 2, 0},
                                                                                   {'B', 3, 0}}));
  // m = p: every forward first (Megatron-LM's all-warm-up case).
  const std::vector<PipelinePass> all =
      PipelineOrder(PipelineSchedule::kInterleaved1F1B, 2, 2, 2, 1);
  ASSERT_EQ(all.size(), 8u);
  for (size_t k = 0; k < 4; ++k) EXPECT_FALSE(all[k].backward) << k;
}

// GPT 32L (tied embeddings) on tp x pp x dp of 8-GPU nodes.
struct PipeCase {
  const char* preset;
  int tp, pp, dp;
  PipelineSchedule schedule;
  int v;
  Recompute recompute;
  bool sp;
  int cp = 1;
  bool flash = false;
  ContextParallelComm cp_comm = ContextParallelComm::kRing;
};

class PipelineScheduleTest : public ::testing::TestWithParam<PipeCase> {};

TEST_P(PipelineScheduleTest, EveryStageAgreesWithItsRoleAndTheSendsMatch) {
  const PipeCase& c = GetParam();
  const int world = c.tp * c.pp * c.dp * c.cp;
  const int64_t m = 8;
  StrategySpec strategy =
      *ExpandStrategyPreset(c.preset, {.dp = c.dp, .tp = c.tp, .pp = c.pp, .cp = c.cp}, 8);
  TrainingSpec training = MakeTraining(1, m * c.dp);
  training.pipeline_schedule = c.schedule;
  training.virtual_stages = c.v;
  training.recompute = c.recompute;
  training.sequence_parallel = c.sp;
  training.flash_attention = c.flash;
  training.context_parallel_comm = c.cp_comm;
  const ModelSpec model = Gpt32l(51200, 1024);
  const topology::ClusterSpec cluster = MakeCluster((world + 7) / 8, std::min(world, 8));
  const Plan plan = *Analyze(model, training, strategy, cluster);
  ASSERT_TRUE(plan.ok());
  StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), static_cast<size_t>(c.pp));
  double flops = 0;
  for (const Schedule& sched : *out) {
    SCOPED_TRACE(sched.role);
    EXPECT_EQ(sched.ranks, world / c.pp);
    const RankRole* role = nullptr;
    for (const RankRole& r : plan.roles)
      if (r.first_stage <= sched.stage && sched.stage <= r.last_stage) role = &r;
    ASSERT_NE(role, nullptr);
    ExpectAgreesWithPlan(sched, plan, *role);
    for (const Op& op : sched.ops) {
      if (op.kind == OpKind::kCompute && op.phase != Phase::kOptimizer) flops += op.flops.count();
      if (op.kind != OpKind::kRecv) continue;
      // Every receive names a send of its peer that goes to this stage, of the same size.
      const Schedule& peer = (*out)[static_cast<size_t>(op.peer_stage)];
      ASSERT_GE(op.match, 0);
      const Op& sent = peer.ops[static_cast<size_t>(op.match)];
      EXPECT_EQ(sent.collective, CollectiveKind::kSendRecv);
      EXPECT_EQ(sent.peer_stage, sched.stage);
      EXPECT_EQ(sent.micro_batch, op.micro_batch);
      EXPECT_EQ(sent.phase, op.phase);
    }
  }
  // tp x cp x dp ranks per stage run eq. 3 together (every op is 1/t of its layers' FLOPs,
  // over the rank's s / cp queries).
  EXPECT_NEAR(flops * c.tp * c.cp * c.dp / plan.flops_per_iteration.count(), 1.0, 1e-12);
}

std::vector<PipeCase> PipeCases() {
  std::vector<PipeCase> out;
  for (const char* preset : {"ddp", "zero1", "zero3"}) {
    out.push_back({preset, 1, 4, 2, PipelineSchedule::k1F1B, 1, Recompute::kNone, false});
    out.push_back({preset, 2, 2, 2, PipelineSchedule::kGpipe, 1, Recompute::kFull, false});
    out.push_back(
        {preset, 2, 4, 1, PipelineSchedule::kInterleaved1F1B, 2, Recompute::kSelective, true});
  }
  out.push_back({"zero1", 4, 4, 2, PipelineSchedule::kInterleaved1F1B, 4, Recompute::kFull, true});
  // Context parallelism, with and without pipelining and tensor parallelism.
  for (const char* preset : {"ddp", "zero1", "fsdp"}) {
    out.push_back({preset, 1, 1, 2, PipelineSchedule::k1F1B, 1, Recompute::kNone, false, 2});
    out.push_back({preset, 2, 2, 2, PipelineSchedule::k1F1B, 1, Recompute::kFull, true, 2});
    out.push_back(
        {preset, 2, 2, 1, PipelineSchedule::kInterleaved1F1B, 2, Recompute::kSelective, true, 4});
  }
  // Context parallelism by all-gather (Llama 3).
  const auto all_gather = ContextParallelComm::kAllGather;
  out.push_back({"zero1", 1, 1, 2, PipelineSchedule::k1F1B, 1, Recompute::kNone, false, 2, false,
                 all_gather});
  out.push_back({"fsdp", 2, 2, 1, PipelineSchedule::kInterleaved1F1B, 2, Recompute::kFull, true, 4,
                 true, all_gather});
  out.push_back({"ddp", 2, 2, 2, PipelineSchedule::k1F1B, 1, Recompute::kSelective, true, 2, false,
                 all_gather});
  // Flash attention: no stored scores, with and without recompute.
  out.push_back({"zero1", 2, 4, 1, PipelineSchedule::k1F1B, 1, Recompute::kNone, true, 1, true});
  out.push_back({"zero1", 2, 2, 1, PipelineSchedule::k1F1B, 1, Recompute::kFull, false, 2, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Schedule, PipelineScheduleTest, ::testing::ValuesIn(PipeCases()),
                         [](const ::testing::TestParamInfo<PipeCase>& info) {
                           const PipeCase& c = info.param;
                           std::string name = fmt::format(
                               "{}_tp{}_pp{}_dp{}_cp{}_{}_v{}_{}{}{}{}", c.preset, c.tp, c.pp, c.dp,
                               c.cp, PipelineScheduleName(c.schedule), c.v,
                               RecomputeName(c.recompute), c.sp ? "_sp" : "",
                               c.flash ? "_flash" : "",
                               c.cp_comm == ContextParallelComm::kAllGather ? "_allgather" : "");
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The blocking exchanges of a schedule (ops.h): the runs of pipeline sends and receives
// between two compute ops in the stage's program, each op as R|S, F|B|T (forward,
// backward-input, the tied embedding's gradients), micro-batch.chunk of its pass.
std::vector<std::string> Exchanges(const Schedule& sched) {
  std::vector<std::string> out;
  std::string run;
  for (const Op& op : sched.ops) {
    const bool send = op.kind == OpKind::kCollective && op.collective == CollectiveKind::kSendRecv;
    if (op.kind == OpKind::kCompute && !run.empty()) {
      out.push_back(run);
      run.clear();
    }
    if (!send && op.kind != OpKind::kRecv) continue;
    EXPECT_EQ(op.stream, Stream::kCompute) << "a blocking send runs in the stage's program";
    const char pass = op.phase == Phase::kForward         ? 'F'
                      : op.phase == Phase::kBackwardInput ? 'B'
                                                          : 'T';
    run += fmt::format("{}{}{}.{} ", send ? 'S' : 'R', pass, op.micro_batch, op.chunk);
  }
  if (!run.empty()) out.push_back(run);
  return out;
}

TEST(PipelineSchedule, BlockingExchangesAreMegatronsBatchedSendsAndReceives) {
  // Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py) exchange between
  // passes: 1F1B's warm-up send_forward and recv_forward, then F, send_forward_recv_backward,
  // B, send_backward_recv_forward; interleaved 1F1B's send_forward_recv_forward in the
  // warm-up, then per steady step a forward and a backward followed by
  // send_forward_backward_recv_forward_backward, and send_backward_recv_backward in the
  // cool-down. GPT 32L (tied embeddings), p = 2, v = 2, m = 4, zero1 with blocking_p2p set
  // (Megatron-LM with --no-overlap-p2p-communication, or before overlap_p2p_comm existed).
  // Stage 1 runs (PipelineOrder) F(0,c0) F(1,c0), then the pairs (F(0,c1), B(0,c1)),
  // (F(1,c1), B(1,c1)), (F(2,c0), B(0,c0)), (F(3,c0), B(1,c0)), (F(2,c1), B(2,c1)),
  // (F(3,c1), B(3,c1)), then B(2,c0) B(3,c0). Its chunk 1 holds the output layer: no send of
  // its forward, no receive of its backward. So, between the passes:
  const ModelSpec model = Gpt32l(51200, 1024);
  StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 1, .pp = 2}, 8);
  TrainingSpec training = MakeTraining(1, 4);
  training.pipeline_schedule = PipelineSchedule::kInterleaved1F1B;
  training.virtual_stages = 2;
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(model, training, strategy, MakeCluster(1, 2), {.blocking_p2p = true});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(Exchanges((*out)[1]), (std::vector<std::string>{
                                      "RF0.0 ",                    // before F(0,c0)
                                      "SF0.0 RF1.0 ",              // send_forward_recv_forward
                                      "SF1.0 RF0.1 ",              // the last warm-up's
                                      "SB0.1 RF1.1 ",              // after F(0,c1) B(0,c1)
                                      "SB1.1 RF2.0 RB0.0 ",        // after F(1,c1) B(1,c1)
                                      "SB0.0 SF2.0 RF3.0 RB1.0 ",  // both outputs, both inputs
                                      "SB1.0 SF3.0 RF2.1 ",
                                      "SB2.1 RF3.1 ",
                                      "SB3.1 RB2.0 ",  // into the cool-down
                                      "SB2.0 RB3.0 ",  // send_backward_recv_backward
                                      // With dp = 1 nothing computes between the last
                                      // backward and the tied embedding's gradient exchange.
                                      "SB3.0 ST-1.-1 RT-1.-1 ",
                                  }));
  // By default the interleaved schedule does not block under zero1: Megatron-LM's training
  // arguments turn overlap_p2p_comm on for it (megatron/training/arguments.py), which issues
  // unbatched sends and receives beside the compute.
  out = BuildSchedules(model, training, strategy, MakeCluster(1, 2));
  ASSERT_TRUE(out.ok()) << out.status().message();
  int64_t interleaved_sends = 0;
  for (const Op& op : (*out)[1].ops) {
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kSendRecv) {
      EXPECT_EQ(op.stream, Stream::kP2p);
      ++interleaved_sends;
    }
  }
  EXPECT_GT(interleaved_sends, 0);
  // Plain 1F1B on the same stages (Megatron-LM's non-interleaved schedule, blocking by
  // default): a pass's send and the next pass's receive. Stage 1 (last) runs F0 B0 F1 B1 F2
  // B2 F3 B3.
  training.pipeline_schedule = PipelineSchedule::k1F1B;
  training.virtual_stages = 1;
  out = BuildSchedules(model, training, strategy, MakeCluster(1, 2));
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(Exchanges((*out)[1]),
            (std::vector<std::string>{"RF0.0 ", "SB0.0 RF1.0 ", "SB1.0 RF2.0 ", "SB2.0 RF3.0 ",
                                      "SB3.0 ST-1.-1 RT-1.-1 "}));
  // PyTorch's presets keep their sends on the p2p stream.
  out = BuildSchedules(model, training, *ExpandStrategyPreset("ddp", {.dp = 1, .pp = 2}, 8),
                       MakeCluster(1, 2));
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (const Op& op : (*out)[0].ops) {
    if (op.kind == OpKind::kCollective && op.collective == CollectiveKind::kSendRecv) {
      EXPECT_EQ(op.stream, Stream::kP2p);
    }
  }
}

TEST(PipelineSchedule, TheBlockingKnobOnlyMovesTheSendsIntoTheProgram) {
  // Under 1F1B (and GPipe) blocking_p2p changes nothing but the stream of the pipeline sends:
  // the same ops, in the same order, with the same deps. So with the knob off a Megatron-LM
  // preset's schedule is the one it always was.
  const ModelSpec model = Gpt32l(51200, 1024);
  const StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .pp = 4}, 8);
  const TrainingSpec training = MakeTraining(1, 16);
  StatusOr<std::vector<Schedule>> on = BuildSchedules(model, training, strategy, MakeCluster(1));
  StatusOr<std::vector<Schedule>> off =
      BuildSchedules(model, training, strategy, MakeCluster(1), {.blocking_p2p = false});
  ASSERT_TRUE(on.ok() && off.ok());
  ASSERT_EQ(on->size(), off->size());
  int64_t sends = 0;
  for (size_t k = 0; k < on->size(); ++k) {
    const Schedule& a = (*on)[k];
    const Schedule& b = (*off)[k];
    ASSERT_EQ(a.ops.size(), b.ops.size());
    EXPECT_EQ(a.deps, b.deps);
    for (size_t i = 0; i < a.ops.size(); ++i) {
      Op x = a.ops[i];
      const Op& y = b.ops[i];
      if (x.kind == OpKind::kCollective && x.collective == CollectiveKind::kSendRecv) {
        EXPECT_EQ(x.stream, Stream::kCompute);
        EXPECT_EQ(y.stream, Stream::kP2p);
        x.stream = Stream::kP2p;
        ++sends;
      }
      const auto fields = [](const Op& o) {
        return std::tie(o.kind, o.stream, o.phase, o.collective, o.axis, o.group, o.state,
                        o.spans_context, o.copy, o.tag, o.space, o.layer, o.unit, o.micro_batch,
                        o.chunk, o.group_size, o.peer_stage, o.match, o.alloc, o.deps_begin,
                        o.deps_end, o.flops, o.bytes_read, o.bytes_written, o.elementwise_bytes,
                        o.buffer_bytes, o.bytes);
      };
      EXPECT_TRUE(fields(x) == fields(y)) << a.role << " op " << i;
    }
  }
  EXPECT_GT(sends, 0);
}

TEST(PipelineSchedule, OneFOneBFirstStageHoldsPMicroBatches) {
  // 1F1B: stage 0 of p runs p - 1 warm-up forwards and one more before its first backward,
  // so p micro-batches of its activations are live (Narayanan et al. 2021 Section 2.2.1);
  // the last stage holds one. Without recompute, per micro-batch a stage of L / p layers
  // keeps (L / p) (34 s b h + 5 a s^2 b) bytes (Korthikanti et al. 2022 eq. 1) plus, on the
  // first stage, the embedding's dropout mask s b h.
  const int pp = 4;
  const ModelSpec model = Gpt32l(51200, 1024);
  StrategySpec strategy = *ExpandStrategyPreset("ddp", {.dp = 1, .pp = pp}, 8);
  const TrainingSpec training = MakeTraining(1, 16);
  StatusOr<std::vector<Schedule>> out =
      BuildSchedules(model, training, strategy, MakeCluster(1, pp));
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<Schedule>& scheds = *out;
  const int64_t s = 1024, b = 1, h = 4096, a = 32;
  const int64_t per_layer = 34 * s * b * h + 5 * a * s * s * b;
  const int64_t stage_layers = 32 / pp;
  // Index order is time order for activation allocs and frees (all on the compute stream).
  const auto peak = [](const Schedule& sched) {
    int64_t live = 0, top = 0;
    for (const Op& op : sched.ops) {
      if (op.tag != MemoryTag::kActivations && op.tag != MemoryTag::kCheckpoints) continue;
      if (op.kind == OpKind::kAlloc) top = std::max(top, live += op.bytes.count());
      if (op.kind == OpKind::kFree) live -= op.bytes.count();
    }
    return top;
  };
  EXPECT_EQ(peak(scheds[0]), pp * (stage_layers * per_layer + s * b * h));
  EXPECT_EQ(peak(scheds[1]), (pp - 1) * stage_layers * per_layer);
}

TEST(PipelineSchedule, AnExplicitSplitGivesEachStageItsLayers) {
  // Llama 3's balancing: one layer fewer on the stages that also hold the embedding and the
  // output layer. 32 layers on 4 stages as 7, 9, 9, 7: each stage's schedule holds exactly its
  // layers (in order, after the stages before it) and agrees with its role in the plan.
  const ModelSpec model = Gpt32l(51200, 1024);
  StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .pp = 4}, 8);
  strategy.pipeline_stage_layers = {7, 9, 9, 7};
  const TrainingSpec training = MakeTraining(1, 16);
  const topology::ClusterSpec cluster = MakeCluster(1);
  const Plan plan = *Analyze(model, training, strategy, cluster);
  ASSERT_TRUE(plan.ok());
  StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
  ASSERT_TRUE(out.ok()) << out.status().message();
  int32_t next = 0;
  for (const Schedule& sched : *out) {
    SCOPED_TRACE(sched.role);
    std::set<int32_t> layers;
    for (const Op& op : sched.ops)
      if (op.kind == OpKind::kCompute && op.layer >= 0) layers.insert(op.layer);
    const int32_t want = strategy.pipeline_stage_layers[static_cast<size_t>(sched.stage)];
    ASSERT_EQ(static_cast<int32_t>(layers.size()), want);
    EXPECT_EQ(*layers.begin(), next);
    EXPECT_EQ(*layers.rbegin(), next + want - 1);
    next += want;
    const RankRole* role = nullptr;
    for (const RankRole& r : plan.roles)
      if (r.first_stage <= sched.stage && sched.stage <= r.last_stage) role = &r;
    ASSERT_NE(role, nullptr);
    EXPECT_EQ(role->layers, want);
    ExpectAgreesWithPlan(sched, plan, *role);
  }
}

TEST(PipelineSchedule, AnExplicitSplitMustCoverTheLayersOnce) {
  const ModelSpec model = Gpt32l(51200, 1024);
  StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .pp = 4}, 8);
  strategy.pipeline_stage_layers = {8, 8, 8};
  StatusOr<Plan> plan = Analyze(model, MakeTraining(1, 16), strategy, MakeCluster(1));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(),
              HasSubstr("strategy.pipeline_stage_layers: [8, 8, 8]: must have pp = 4 entries"));
  strategy.pipeline_stage_layers = {8, 8, 8, 9};
  plan = Analyze(model, MakeTraining(1, 16), strategy, MakeCluster(1));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("sums to 33; must sum to the model's 32 layers"));
  strategy.pipeline_stage_layers = {0, 16, 8, 8};
  plan = Analyze(model, MakeTraining(1, 16), strategy, MakeCluster(1));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("every stage needs at least 1 layer"));
}

TEST(PipelineChunkLayers, LlamaThreesUnevenStagesInTwoChunks) {
  // Llama 3 405B: 126 layers on 16 stages as 7, 8 x 14, 7, interleaved with v = 2. A stage of
  // 8 gives 4 to each chunk; stage 0's 7 give 3 to chunk 0 (beside the embedding) and 4 to
  // chunk 1; stage 15's 7 give 4 to chunk 0 and 3 to chunk 1 (beside the output layer).
  // Virtual stages in order c p + i: chunk 0 of stages 0..15 holds 3 + 14 x 4 + 4 = 63
  // layers, [0, 63), stage i > 0 from 3 + 4 (i - 1); chunk 1 the other 63, stage i from
  // 63 + 4 i, stage 15's 3 layers last, [123, 126).
  std::vector<int64_t> split(16, 8);
  split.front() = split.back() = 7;
  const std::vector<std::vector<ChunkLayers>> chunks = PipelineChunkLayers(split, 2);
  ASSERT_EQ(chunks.size(), 16u);
  EXPECT_EQ(chunks[0][0], (ChunkLayers{0, 3}));
  EXPECT_EQ(chunks[0][1], (ChunkLayers{63, 4}));
  for (int i = 1; i < 15; ++i) {
    EXPECT_EQ(chunks[static_cast<size_t>(i)][0], (ChunkLayers{3 + 4 * (i - 1), 4})) << i;
    EXPECT_EQ(chunks[static_cast<size_t>(i)][1], (ChunkLayers{63 + 4 * i, 4})) << i;
  }
  EXPECT_EQ(chunks[15][0], (ChunkLayers{59, 4}));
  EXPECT_EQ(chunks[15][1], (ChunkLayers{123, 3}));
}

TEST(PipelineChunkLayers, AnEvenSplitIsMegatronsVirtualStages) {
  // 32 layers, p = 4, v = 2: chunks of 32 / 8 = 4, virtual stage c p + i holds
  // [4 (c p + i), 4 (c p + i) + 4); v = 1: stage i holds [8 i, 8 i + 8).
  const std::vector<std::vector<ChunkLayers>> chunks = PipelineChunkLayers({8, 8, 8, 8}, 2);
  for (int i = 0; i < 4; ++i) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(chunks[static_cast<size_t>(i)][static_cast<size_t>(c)],
                (ChunkLayers{4 * (c * 4 + i), 4}));
    }
  }
  const std::vector<std::vector<ChunkLayers>> plain = PipelineChunkLayers({7, 9, 9, 7}, 1);
  EXPECT_EQ(plain[2][0], (ChunkLayers{16, 9}));
  EXPECT_EQ(plain[3][0], (ChunkLayers{25, 7}));
}

TEST(PipelineSchedule, AnInterleavedExplicitSplitGivesEachChunkItsLayers) {
  // 32 layers on 4 stages as 7, 9, 9, 7, interleaved with v = 2: by PipelineChunkLayers,
  // stage 0 runs chunks of 3 and 4, stages 1 and 2 of 5 and 4, stage 3 of 4 and 3. Virtual
  // stages 0..3 (chunk 0) hold [0, 3), [3, 8), [8, 13), [13, 17); 4..7 (chunk 1) hold
  // [17, 21), [21, 25), [25, 29), [29, 32). Each stage computes exactly its two ranges, its
  // role in the plan counts 7, 9, 9, 7 layers, and its allocations (activations walked chunk
  // by chunk) agree with the plan to the byte.
  const ModelSpec model = Gpt32l(51200, 1024);
  StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .pp = 4}, 8);
  strategy.pipeline_stage_layers = {7, 9, 9, 7};
  TrainingSpec training = MakeTraining(1, 16);  // m = 8, a multiple of p
  training.pipeline_schedule = PipelineSchedule::kInterleaved1F1B;
  training.virtual_stages = 2;
  const topology::ClusterSpec cluster = MakeCluster(1);
  const Plan plan = *Analyze(model, training, strategy, cluster);
  ASSERT_TRUE(plan.ok());
  StatusOr<std::vector<Schedule>> out = BuildSchedules(model, training, strategy, cluster);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const std::vector<std::vector<std::pair<int32_t, int32_t>>> want = {
      {{0, 3}, {17, 21}}, {{3, 8}, {21, 25}}, {{8, 13}, {25, 29}}, {{13, 17}, {29, 32}}};
  for (const Schedule& sched : *out) {
    SCOPED_TRACE(sched.role);
    std::set<int32_t> layers;
    for (const Op& op : sched.ops)
      if (op.kind == OpKind::kCompute && op.layer >= 0) layers.insert(op.layer);
    std::set<int32_t> expected;
    for (const auto& [begin, end] : want[static_cast<size_t>(sched.stage)])
      for (int32_t l = begin; l < end; ++l) expected.insert(l);
    EXPECT_EQ(layers, expected);
    const RankRole* role = nullptr;
    for (const RankRole& r : plan.roles)
      if (r.first_stage <= sched.stage && sched.stage <= r.last_stage) role = &r;
    ASSERT_NE(role, nullptr);
    EXPECT_EQ(role->layers, static_cast<int64_t>(expected.size()));
    ExpectAgreesWithPlan(sched, plan, *role);
  }
}

TEST(PipelineSchedule, AnInterleavedExplicitSplitNeedsALayerPerChunk) {
  // v = 4 chunks need 4 layers on every stage; 3 on the first is refused, naming the field.
  const ModelSpec model = Gpt32l(51200, 1024);
  StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .pp = 4}, 8);
  strategy.pipeline_stage_layers = {3, 13, 9, 7};
  TrainingSpec training = MakeTraining(1, 16);
  training.pipeline_schedule = PipelineSchedule::kInterleaved1F1B;
  training.virtual_stages = 4;
  StatusOr<Plan> plan = Analyze(model, training, strategy, MakeCluster(1));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(),
              HasSubstr("strategy.pipeline_stage_layers: [3, 13, 9, 7]: every stage needs at "
                        "least virtual_stages = 4 layers, one per model chunk"));
  strategy.pipeline_stage_layers = {4, 12, 9, 7};
  EXPECT_TRUE(Analyze(model, training, strategy, MakeCluster(1)).ok());
}

TEST(Schedule, TensorParallelOverlapChunksEveryBlockAndKeepsTheVolumes) {
  // With tp_comm_overlap each tensor-parallel block runs in tp chunks, each with a collective
  // of 1/tp of the b s h x 2 buffer: t times the collectives, the same bytes, and every stage
  // still agrees with the plan to the byte. Without sequence parallelism a chunk's compute
  // waits for nothing but the block's input; under it, for its own chunk's all-gather.
  const ModelSpec model = Gpt32l(51200, 1024);
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sp" : "no sp");
    StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .tp = 4}, 8);
    TrainingSpec training = MakeTraining(1, 4);
    training.sequence_parallel = sp;
    const Plan plan = *Analyze(model, training, strategy, MakeCluster(1));
    ScheduleOptions plain, overlap;
    overlap.tp_comm_overlap = true;
    const Schedule a = BuildSchedules(model, training, strategy, MakeCluster(1), plain)->front();
    const Schedule b = BuildSchedules(model, training, strategy, MakeCluster(1), overlap)->front();
    ExpectAgreesWithPlan(b, plan);
    const auto tp_ops = [](const Schedule& sched, CollectiveKind kind) {
      int64_t n = 0, buffers = 0;
      for (const Op& op : sched.ops) {
        if (op.kind != OpKind::kCollective || op.axis != topology::Axis::kTensor ||
            op.collective != kind || op.layer < 0)
          continue;
        ++n;
        buffers += op.buffer_bytes.count();
      }
      return std::pair{n, buffers};
    };
    const CollectiveKind closing = sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    const auto [n_plain, bytes_plain] = tp_ops(a, closing);
    const auto [n_overlap, bytes_overlap] = tp_ops(b, closing);
    EXPECT_EQ(n_overlap, 4 * n_plain);
    EXPECT_EQ(bytes_overlap, bytes_plain);
    // Only a block's first chunk waits on a closing collective (the previous block's last):
    // as many compute ops depend on one as without chunks, where each block's single compute
    // does.
    const auto waits_on_closing = [&](const Schedule& sched) {
      int64_t n = 0;
      for (size_t i = 0; i < sched.ops.size(); ++i) {
        if (sched.ops[i].kind != OpKind::kCompute) continue;
        for (int32_t d : sched.DepsOf(i)) {
          const Op& dep = sched.ops[static_cast<size_t>(d)];
          n += dep.kind == OpKind::kCollective && dep.axis == topology::Axis::kTensor &&
               dep.collective == closing;
        }
      }
      return n;
    };
    EXPECT_EQ(waits_on_closing(b), waits_on_closing(a));
  }
}

// The first schedule of the 32-layer GPT (s = 1024) under zero1 with dp 2 x cp 2, global
// batch 4 (m = 2), with recompute `r` and context-parallel exchange `comm`.
Schedule CpSchedule(Recompute r, ContextParallelComm comm) {
  const StrategySpec strategy = *ExpandStrategyPreset("zero1", {.dp = 2, .cp = 2}, 8);
  TrainingSpec training = MakeTraining(1, 4);
  training.recompute = r;
  training.context_parallel_comm = comm;
  return BuildSchedules(Gpt32l(51200, 1024), training, strategy, MakeCluster(1, 4))->front();
}

TEST(Schedule, RingAttentionPassesKeyAndValueAroundTheCpRing) {
  // cp 2 on the 32-layer GPT (h 4096, 32 heads, no grouped KV: kv width = h), s = 1024, b = 1:
  // each rank holds s / cp = 512 tokens, and each ring exchange sends its K and V for them,
  // 2 x b x 512 x 4096 x 2 bytes = 8,388,608 B, to the next cp rank. An attention pass takes
  // cp - 1 = 1 exchange in forward and 2 (cp - 1) = 2 in backward (K/V again, and their
  // gradients): 3 per layer and micro-batch without recompute, 4 with full recompute (the
  // forward again). dp 2, global batch 4: m = 2.
  for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
    const Schedule sched = CpSchedule(r, ContextParallelComm::kRing);
    int64_t exchanges = 0;
    for (const Op& op : sched.ops) {
      if (op.kind != OpKind::kCollective || op.axis != topology::Axis::kContext) continue;
      ++exchanges;
      EXPECT_EQ(op.collective, CollectiveKind::kSendRecv);
      EXPECT_EQ(op.group_size, 2);
      EXPECT_EQ(op.buffer_bytes.count(), 8'388'608);
      EXPECT_EQ(op.bytes.count(), 8'388'608);  // a send moves its buffer
    }
    EXPECT_EQ(exchanges, (r == Recompute::kFull ? 4 : 3) * 32 * 2) << RecomputeName(r);
  }
}

TEST(Schedule, AllGatherContextParallelismGathersKeyAndValueBeforeAttention) {
  // The same job with the all-gather variant: before every attention pass the rank gathers
  // the K and V of all cp = 2 chunks, a buffer of cp x 8,388,608 = 16,777,216 B of which it
  // receives (cp - 1) / cp (it holds its own chunk); after the backward it reduce-scatters
  // the K/V gradients over the same buffer. Per layer and micro-batch: 2 gathers (forward,
  // backward) and 1 reduce-scatter without recompute, one more gather with full recompute.
  // The bytes a rank moves equal ring attention's: (cp - 1) chunks per pass.
  for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
    const Schedule sched = CpSchedule(r, ContextParallelComm::kAllGather);
    int64_t gathers = 0, scatters = 0;
    for (size_t i = 0; i < sched.ops.size(); ++i) {
      const Op& op = sched.ops[i];
      if (op.kind != OpKind::kCollective || op.axis != topology::Axis::kContext) continue;
      EXPECT_EQ(op.group_size, 2);
      EXPECT_EQ(op.buffer_bytes.count(), 16'777'216);
      EXPECT_EQ(op.bytes.count(), 8'388'608);
      if (op.collective == CollectiveKind::kAllGather) {
        ++gathers;
        // The attention work right after it waits for it.
        const std::span<const int32_t> deps = sched.DepsOf(i + 1);
        EXPECT_NE(std::find(deps.begin(), deps.end(), static_cast<int32_t>(i)), deps.end());
      } else {
        EXPECT_EQ(op.collective, CollectiveKind::kReduceScatter);
        EXPECT_EQ(op.phase, Phase::kBackwardInput);
        ++scatters;
      }
    }
    EXPECT_EQ(gathers, (r == Recompute::kFull ? 3 : 2) * 32 * 2) << RecomputeName(r);
    EXPECT_EQ(scatters, 32 * 2) << RecomputeName(r);
  }
}

}  // namespace
}  // namespace placesim::strategies
