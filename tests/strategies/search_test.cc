// Tests of the strategy search's tier 1 (strategies/search.h): the space, --fix, the
// screening (only feasible candidates, nothing lost to pruning) and the ranking.
#include "strategies/search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "strategies/analyzer.h"
#include "strategies/cost/kernel_model.h"
#include "strategies/presets.h"
#include "strategies/schedule.h"
#include "topology/presets.h"

namespace placesim::strategies {
namespace {

using ::testing::HasSubstr;

// A 4-layer GPT (hidden 512, 8 heads, seq 512, ~13.4M parameters) on one DGX-H100 node.
struct Workload {
  ModelSpec model;
  TrainingSpec training;
  topology::ClusterSpec cluster;
};

Workload SmallGptOnOneNode() {
  Workload s;
  s.model.name = "small-gpt";
  TransformerSpec& t = s.model.transformer;
  t.layers = 4;
  t.hidden = 512;
  t.heads = 8;
  t.kv_heads = 8;
  t.ffn_hidden = 2048;
  t.vocab = 1024;
  t.seq_len = 512;
  t.learned_position_embeddings = true;
  t.biases = true;
  t.tied_embeddings = true;
  s.training.global_batch = 128;
  const topology::NodeSpec* node = topology::FindNodePreset("DGX-H100");
  PLACESIM_CHECK(node != nullptr);
  s.cluster.node = *node;
  s.cluster.nodes = 1;
  return s;
}

StatusOr<SearchResult> Screen(const Workload& s, const SearchSpace& space, int jobs = 1) {
  SearchOptions options;
  options.jobs = jobs;
  return ScreenCandidates(s.model, s.training, s.cluster, space, options);
}

SearchSpace Space(const Workload& s) { return DefaultSearchSpace(s.model, s.training, s.cluster); }

TEST(SearchSpace, TensorParallelDividesHeadsAndStaysInsideANode) {
  Workload s = SmallGptOnOneNode();
  // 8 GPUs: tp | 8 heads and tp <= 8 GPUs per node; pp | 4 layers; cp | 512 tokens.
  SearchSpace space = Space(s);
  EXPECT_EQ(space.tp, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(space.pp, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(space.cp, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(space.ep, (std::vector<int>{1}));
  EXPECT_EQ(space.micro_batches, (std::vector<int64_t>{16, 8, 4, 2, 1}));
}

TEST(Search, EveryFeasibleCandidateFitsAndIsCorrect) {
  Workload s = SmallGptOnOneNode();
  // 0.5 GB of HBM so that many candidates do not fit and the pruning has work to do.
  s.cluster.node.gpu.hbm_capacity = GB(0.5);
  StatusOr<SearchResult> r = Screen(s, Space(s));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->feasible.empty());
  EXPECT_GT(r->stats.pruned, 0);
  EXPECT_EQ(r->stats.candidates, r->stats.pruned + r->stats.analyzed);
  EXPECT_EQ(r->stats.analyzed, r->stats.rejected + r->stats.feasible);
  for (const auto& f : r->feasible) {
    StatusOr<StrategySpec> strategy = CandidateStrategy(f.candidate, s.cluster);
    ASSERT_TRUE(strategy.ok());
    StatusOr<Plan> plan =
        Analyze(s.model, CandidateTraining(f.candidate, s.training), *strategy, s.cluster);
    ASSERT_TRUE(plan.ok());
    EXPECT_TRUE(plan->ok()) << CandidateLabel(f.candidate);
    for (const auto& role : plan->roles) EXPECT_TRUE(role.memory.fits);
    EXPECT_EQ(plan->largest().memory.total, f.memory);
    EXPECT_GE(f.headroom().count(), 0);
  }
}

TEST(Search, PruningLosesNoFeasibleCandidate) {
  Workload s = SmallGptOnOneNode();
  s.cluster.node.gpu.hbm_capacity = GB(0.5);
  StatusOr<SearchResult> all = Screen(s, Space(s));
  ASSERT_TRUE(all.ok());
  // With one micro-batch size and one recompute policy there is nothing to prune, so the
  // union of those 5 x 3 searches is the brute-force answer.
  std::set<std::string> brute;
  int64_t candidates = 0;
  for (const char* mb : {"1", "2", "4", "8", "16"}) {
    for (const char* rc : {"none", "selective", "full"}) {
      SearchSpace space = Space(s);
      ASSERT_TRUE(FixSearchField("training.micro_batch", mb, &space).ok());
      ASSERT_TRUE(FixSearchField("training.recompute", rc, &space).ok());
      StatusOr<SearchResult> one = Screen(s, space);
      ASSERT_TRUE(one.ok());
      EXPECT_EQ(one->stats.pruned, 0);
      candidates += one->stats.candidates;
      for (const auto& f : one->feasible) brute.insert(CandidateLabel(f.candidate));
    }
  }
  std::set<std::string> screened;
  for (const auto& f : all->feasible) screened.insert(CandidateLabel(f.candidate));
  EXPECT_EQ(candidates, all->stats.candidates);
  EXPECT_EQ(screened, brute);
}

TEST(Search, FindsTheHandDerivedBest) {
  Workload s = SmallGptOnOneNode();
  // Everything fits in 80 GB. Compute is the same for every dp = 8 preset (no recompute is
  // cheapest); tp adds exposed all-reduces, pp a bubble (p-1)/m and sends, cp ring-attention
  // sends. Fewer micro-batches launch fewer kernels: 128 / (16 x 8) = 1 micro-batch of 16.
  // Among dp = 8 presets, each with its framework's defaults (docs/overheads.md):
  //   zero1 (Megatron-LM) reduce-scatters the whole 26.8 MB gradient as one bucket after the
  //     backward and all-gathers the updated parameters after its Psi/8 optimizer step: two
  //     exposed calls of 7/8 x 26.8 MB / 450 GB/s = 52 us plus NCCL's per-call cost each;
  //   zero2 (DeepSpeed) does the same in PyTorch's 25 MiB buckets, so four calls, each paying
  //     the per-call cost (docs/calibration.md, "Collectives");
  //   ddp updates all Psi parameters on every rank (8x the memory-bound optimizer step) and
  //     its first 25 MiB bucket is complete only at the end of the backward, exposing two
  //     all-reduces (2 x 7/8 of the bytes);
  //   zero3 (DeepSpeed) gathers each of a layer's four matrices apart, and the first layer's
  //     gathers (about 90 us) wait behind the embedding's 10 us forward; its reduce-scatters
  //     stall the backward;
  //   zero-offload adds PCIe copies of the gradient and parameter shards and the host step.
  // The simulator ranks them zero1, zero2, ddp, zero3, zero-offload (3.979, 4.015, 4.098,
  // 4.125, 4.180 ms, analytic network), and the estimate must agree
  // (study's SearchEstimate.RanksTheSmallGptAsTheSimulatorDoes holds it to that).
  SearchOptions options;
  StatusOr<SearchResult> r = ScreenCandidates(s.model, s.training, s.cluster, Space(s), options);
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->feasible.empty());
  EXPECT_EQ(CandidateLabel(r->feasible.front().candidate),
            "zero1 dp8 tp1 pp1 cp1 mb16 recompute=none");
  EXPECT_EQ(DominantCostVsBest(r->feasible.front().estimate, r->feasible.front().estimate),
            "no part above the best");
  std::vector<std::string> presets;  // dp 8, mb 16, no recompute, by estimate
  for (const auto& f : r->feasible) {
    EXPECT_GE(f.estimate.total, r->feasible.front().estimate.total);
    const Candidate& c = f.candidate;
    if (c.mesh.dp == 8 && c.micro_batch == 16 && c.recompute == Recompute::kNone) {
      presets.push_back(c.preset);
    }
  }
  EXPECT_EQ(presets, (std::vector<std::string>{"zero1", "zero2", "ddp", "zero3", "zero-offload"}));
}

TEST(Search, FixNarrowsTheSpace) {
  Workload s = SmallGptOnOneNode();
  StatusOr<SearchResult> all = Screen(s, Space(s));
  SearchSpace space = Space(s);
  ASSERT_TRUE(FixSearchField("strategy.tp", "2", &space).ok());
  StatusOr<SearchResult> tp2 = Screen(s, space);
  ASSERT_TRUE(all.ok() && tp2.ok());
  EXPECT_GT(tp2->stats.candidates, 0);
  EXPECT_LT(tp2->stats.candidates, all->stats.candidates);
  for (const auto& f : tp2->feasible) EXPECT_EQ(f.candidate.mesh.tp, 2);
  // Pinning every knob leaves one candidate: dp 8 DDP, mb 16, no recompute.
  SearchSpace one = Space(s);
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"strategy.tp", "1"},
                                                        {"strategy.pp", "1"},
                                                        {"strategy.cp", "1"},
                                                        {"strategy.preset", "ddp"},
                                                        {"training.micro_batch", "16"},
                                                        {"training.recompute", "none"}}) {
    ASSERT_TRUE(FixSearchField(field, value, &one).ok()) << field;
  }
  StatusOr<SearchResult> single = Screen(s, one);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->stats.candidates, 1);
}

TEST(Search, BadFixValuesListTheValidOnes) {
  Workload s = SmallGptOnOneNode();
  SearchSpace space = Space(s);
  Status tp = FixSearchField("strategy.tp", "3", &space);
  EXPECT_EQ(tp.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(tp.message(), HasSubstr("--fix strategy.tp=3: not in the search space; valid: 1, 2, "
                                      "4, 8"));
  Status rc = FixSearchField("training.recompute", "half", &space);
  EXPECT_THAT(rc.message(), HasSubstr("valid: none, selective, full"));
  Status preset = FixSearchField("strategy.preset", "zero4", &space);
  EXPECT_THAT(preset.message(), HasSubstr("valid: ddp, zero1, zero2, zero3"));
  Status field = FixSearchField("strategy.zz", "1", &space);
  EXPECT_THAT(field.message(), HasSubstr("unknown field; valid: strategy.dp"));
  // Failed fixes leave the space as it was.
  EXPECT_EQ(space.tp, (std::vector<int>{1, 2, 4, 8}));
}

TEST(Search, SameResultOnOneAndTwoThreads) {
  Workload s = SmallGptOnOneNode();
  s.cluster.node.gpu.hbm_capacity = GB(0.5);
  StatusOr<SearchResult> one = Screen(s, Space(s), 1);
  StatusOr<SearchResult> two = Screen(s, Space(s), 2);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->feasible.size(), two->feasible.size());
  for (size_t i = 0; i < one->feasible.size(); ++i) {
    EXPECT_EQ(one->feasible[i].candidate.order, two->feasible[i].candidate.order);
    EXPECT_EQ(one->feasible[i].estimate.total, two->feasible[i].estimate.total);
  }
  EXPECT_EQ(one->stats.pruned, two->stats.pruned);
}

// GPT-3 175B on 8 x DGX-A100, as examples/gpt3-175b-tp8-pp8.textproto: global batch 1536
// sequences of 2048 tokens, bf16 mixed precision, Adam.
Workload Gpt3OnEightDgxA100() {
  Workload s;
  const ModelSpec* model = FindModelPreset("gpt3-175b");
  PLACESIM_CHECK(model != nullptr);
  s.model = *model;
  s.training.global_batch = 1536;
  const topology::NodeSpec* node = topology::FindNodePreset("DGX-A100");
  PLACESIM_CHECK(node != nullptr);
  s.cluster.node = *node;
  s.cluster.nodes = 8;
  return s;
}

TEST(Search, ZeroThreePaysForItsGathersAndZeroTwoForItsReduceScatters) {
  // With dp·cp > 1, ZeRO-3 all-gathers every unit before each micro-batch's forward and
  // backward and ZeRO-2 reduce-scatters every micro-batch, where ZeRO-1 synchronizes once per
  // step: the three no longer tie. ZeRO-3 costs more wherever one micro-batch's gathers
  // outlast its compute (dp > 1 and cp 4: a stage's Ψ/(tp·pp) gathered across nodes twice per
  // micro-batch); where they hide, ZeRO-3 can beat ZeRO-1, whose post-step all-gather of the
  // updated parameters is exposed (the simulator agrees on data-parallel meshes). ZeRO-3 here
  // is the fsdp preset, whose reduce-scatters overlap the backward; DeepSpeed's zero3, whose
  // backward waits for them (docs/overheads.md), never costs less than it.
  Workload s = Gpt3OnEightDgxA100();
  SearchSpace space = Space(s);
  space.presets = {"zero1", "zero2", "zero3", "fsdp"};
  StatusOr<SearchResult> r = Screen(s, space, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  using Key = std::tuple<std::string, int64_t, Recompute, bool, PipelineSchedule, int>;
  std::map<Key, std::map<std::string, Duration>> by_preset;
  for (const auto& f : r->feasible) {
    const Candidate& c = f.candidate;
    if (int64_t{c.mesh.dp} * c.mesh.cp <= 1) continue;
    const std::string mesh = "dp" + std::to_string(c.mesh.dp) + " tp" + std::to_string(c.mesh.tp) +
                             " pp" + std::to_string(c.mesh.pp) + " cp" + std::to_string(c.mesh.cp);
    by_preset[Key{mesh, c.micro_batch, c.recompute, c.sequence_parallel, c.schedule,
                  c.virtual_stages}][c.preset] = f.estimate.total;
  }
  int compared = 0, larger = 0;
  for (const auto& [key, totals] : by_preset) {
    const auto z1 = totals.find("zero1");
    const auto z2 = totals.find("zero2");
    const auto z3 = totals.find("fsdp");
    const auto deepspeed = totals.find("zero3");
    if (z3 != totals.end() && deepspeed != totals.end()) {
      EXPECT_GE(deepspeed->second, z3->second);
    }
    if (z1 == totals.end()) continue;
    const std::string label = std::get<0>(key) + " mb" + std::to_string(std::get<1>(key));
    if (z3 != totals.end()) {
      EXPECT_NE(z3->second, z1->second) << label;
      ++compared;
      if (z3->second > z1->second) ++larger;
      if (std::get<0>(key).find("cp4") != std::string::npos &&
          std::get<0>(key).rfind("dp1 ", 0) != 0) {
        EXPECT_GT(z3->second, z1->second) << label;
      }
    }
    if (z2 != totals.end()) {
      EXPECT_GE(z2->second, z1->second) << label;
    }
  }
  // Both happen across the space: neither preset dominates.
  EXPECT_GT(compared, 0);
  EXPECT_GT(larger, 0);
  EXPECT_LT(larger, compared);
}

TEST(Search, ReshardAfterForwardIsSearchedWhereGatheredParametersCanBeHeld) {
  // The small GPT on one DGX-H100 node, ZeRO-3 (DeepSpeed) and FSDP against DDP, without
  // and with a pipeline of 2. Holding each unit from its forward to its backward (FSDP's
  // SHARD_GRAD_OP) applies where FSDP gathers the parameters into device buffers over
  // dp·cp > 1 ranks and pp = 1; there the search tries both values, elsewhere (DeepSpeed's
  // ZeRO-3 has no such switch) it leaves the knob to the scenario. A held candidate keeps
  // the stage's whole parameters gathered at the
  // turn from forward to backward instead of prefetch_depth + 1 = 2 of its 6 units (4 layers,
  // the embedding and the output layer), so it needs more memory, and it gathers once per
  // micro-batch instead of twice, so its exposed data-parallel time is not larger.
  Workload s = SmallGptOnOneNode();
  SearchSpace space = Space(s);
  space.presets = {"ddp", "zero3", "fsdp"};
  space.pp = {1, 2};
  space.reshard_after_forward = {true, false};
  StatusOr<SearchResult> r = Screen(s, space, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  using Key = std::tuple<std::string, int64_t, Recompute, bool>;
  std::map<Key, std::map<bool, const ScreenedCandidate*>> by_reshard;
  int held = 0;
  for (const auto& f : r->feasible) {
    const Candidate& c = f.candidate;
    const bool holdable = c.preset == "fsdp" && c.mesh.pp == 1 && c.mesh.dp * c.mesh.cp > 1;
    EXPECT_EQ(c.reshard_after_forward.has_value(), holdable) << CandidateLabel(c);
    if (!holdable) continue;
    const bool reshard = *c.reshard_after_forward;
    EXPECT_EQ(CandidateLabel(c).ends_with(" no-reshard"), !reshard) << CandidateLabel(c);
    held += reshard ? 0 : 1;
    const std::string label = CandidateLabel(c).substr(0, CandidateLabel(c).find(" no-reshard"));
    by_reshard[Key{label, c.micro_batch, c.recompute, c.sequence_parallel}][reshard] = &f;
  }
  EXPECT_GT(held, 0);
  int pairs = 0;
  for (const auto& [key, pair] : by_reshard) {
    if (pair.size() != 2) continue;
    ++pairs;
    const ScreenedCandidate& resharded = *pair.at(true);
    const ScreenedCandidate& kept = *pair.at(false);
    EXPECT_GT(kept.memory, resharded.memory) << std::get<0>(key);
    const auto dp_part = static_cast<size_t>(CostPart::kDataParallel);
    EXPECT_LE(kept.estimate.parts[dp_part], resharded.estimate.parts[dp_part]) << std::get<0>(key);
  }
  EXPECT_GT(pairs, 0);

  // A scenario that holds its parameters: pipelined ZeRO-3 candidates reshard anyway (set
  // explicitly, so the simulator runs them), with the plan of a resharding scenario.
  SearchSpace pinned = Space(s);
  pinned.presets = {"zero3"};
  pinned.pp = {2};
  SearchOptions holding;
  holding.analyze.reshard_after_forward = false;
  StatusOr<SearchResult> piped = ScreenCandidates(s.model, s.training, s.cluster, pinned, holding);
  StatusOr<SearchResult> plain = Screen(s, pinned);
  ASSERT_TRUE(piped.ok() && plain.ok());
  ASSERT_FALSE(piped->feasible.empty());
  ASSERT_EQ(piped->feasible.size(), plain->feasible.size());
  for (size_t i = 0; i < piped->feasible.size(); ++i) {
    const ScreenedCandidate& p = piped->feasible[i];
    const bool gathers = p.candidate.mesh.dp * p.candidate.mesh.cp > 1;
    EXPECT_EQ(p.candidate.reshard_after_forward, gathers ? std::optional<bool>(true) : std::nullopt)
        << CandidateLabel(p.candidate);
    EXPECT_EQ(p.memory, plain->feasible[i].memory) << CandidateLabel(p.candidate);
    EXPECT_EQ(p.estimate.total, plain->feasible[i].estimate.total);
  }
}

TEST(Search, FixPinsReshardAfterForward) {
  Workload s = SmallGptOnOneNode();
  SearchSpace def = Space(s);
  ASSERT_TRUE(def.reshard_after_forward.empty());  // the scenario's value
  EXPECT_TRUE(FixSearchField("simulation.reshard_after_forward", "false", &def).ok());
  EXPECT_EQ(def.reshard_after_forward, std::vector<bool>{false});
  Status bad = FixSearchField("simulation.reshard_after_forward", "sometimes", &def);
  EXPECT_THAT(bad.message(), HasSubstr("--fix simulation.reshard_after_forward=sometimes: not in "
                                       "the search space; valid: false"));
  SearchSpace all = ExhaustiveSearchSpace(s.model, s.training, s.cluster);
  EXPECT_EQ(all.reshard_after_forward, (std::vector<bool>{true, false}));
  ASSERT_TRUE(FixSearchField("simulation.reshard_after_forward", "true", &all).ok());
  EXPECT_THAT(FixSearchField("simulation.reshard_after_forward", "false", &all).message(),
              HasSubstr("valid: true"));
  SearchSpace fresh = Space(s);
  EXPECT_THAT(FixSearchField("simulation.reshard_after_forward", "1", &fresh).message(),
              HasSubstr("valid: true, false"));
}

// Every list of `sub` is inside the same list of `super`.
template <typename T>
bool Within(const std::vector<T>& sub, const std::vector<T>& super) {
  return std::all_of(sub.begin(), sub.end(), [&](const T& v) {
    return std::find(super.begin(), super.end(), v) != super.end();
  });
}

TEST(ExhaustiveSpace, HoldsEveryCandidateOfTheDefaultSpace) {
  Workload s = SmallGptOnOneNode();
  s.cluster.node.gpu.hbm_capacity = GB(0.5);
  const SearchSpace def = Space(s);
  const SearchSpace all = ExhaustiveSearchSpace(s.model, s.training, s.cluster);
  EXPECT_TRUE(Within(def.dp, all.dp) && Within(def.tp, all.tp) && Within(def.pp, all.pp) &&
              Within(def.cp, all.cp) && Within(def.ep, all.ep));
  EXPECT_TRUE(Within(def.presets, all.presets));
  EXPECT_TRUE(Within(def.micro_batches, all.micro_batches));
  EXPECT_TRUE(Within(def.recompute, all.recompute));
  EXPECT_TRUE(Within(def.sequence_parallel, all.sequence_parallel));
  EXPECT_TRUE(Within(def.schedules, all.schedules));
  EXPECT_TRUE(Within(def.virtual_stages, all.virtual_stages));
  // The default space leaves flash attention, tp overlap and the bucket to the scenario
  // (off, off, the search's bucket); the exhaustive one holds those values.
  EXPECT_TRUE(Within(std::vector<bool>{false}, all.flash_attention));
  EXPECT_TRUE(Within(std::vector<bool>{false}, all.tp_comm_overlap));
  EXPECT_TRUE(Within(std::vector<Bytes>{Bytes::Zero()}, all.gradient_buckets));
  // So every feasible default candidate is a feasible exhaustive one, with the same label
  // (the new knobs print only when on) and the same estimate.
  StatusOr<SearchResult> d = Screen(s, def);
  StatusOr<SearchResult> e = Screen(s, all, 2);
  ASSERT_TRUE(d.ok() && e.ok());
  EXPECT_GT(e->stats.candidates, d->stats.candidates);
  std::map<std::string, Duration> exhaustive;
  for (const auto& f : e->feasible) exhaustive[CandidateLabel(f.candidate)] = f.estimate.total;
  ASSERT_FALSE(d->feasible.empty());
  for (const auto& f : d->feasible) {
    const auto it = exhaustive.find(CandidateLabel(f.candidate));
    ASSERT_NE(it, exhaustive.end()) << CandidateLabel(f.candidate);
    EXPECT_EQ(it->second, f.estimate.total) << CandidateLabel(f.candidate);
  }
}

TEST(ExhaustiveSpace, CountsEveryCombinationOfItsKnobs) {
  // The small GPT on 4 GPUs of one node, global batch 8. Knob lists: dp, tp, pp, cp in
  // {1, 2, 4} (8 heads, 4 layers, 512 tokens, 4 GPUs per node), ep 1; micro-batches the
  // divisors of 8 with (mb·dp) | 8: 4 for dp 1 (8, 4, 2, 1), 3 for dp 2, 2 for dp 4;
  // schedules: pp 1 one; pp 2 three (1F1B, GPipe, interleaved v 2, as 4 % (2·2) = 0 and
  // 4 % (2·4) != 0); pp 4 two (1F1B, GPipe); tp > 1: sequence parallel x tp overlap = 2 x 2;
  // presets and buckets: dp·cp = 1 one (ddp); else ddp, zero1, zero2, zero-offload x 2
  // buckets + zero3, zero-infinity, zero-infinity-host x 1 + fsdp x 2 reshard_after_forward
  // where pp = 1 (x 1 where pp > 1: held parameters need pp = 1; zero3 is DeepSpeed's, which
  // has no such switch) = 13 for pp = 1, 12 for pp > 1 (fsdp-hybrid's shard group, the dp
  // ranks of a node, is all of dp here, so it is left out as fsdp); then every structure x 2
  // flash attention x 3 recompute.
  // The 10 meshes dp·tp·pp·cp = 4, mb x schedules x (tp > 1 ? 4 : 1) x presets·buckets:
  //   dp4 2·1·1·13 = 26, tp4 4·1·4·1 = 16, pp4 4·2·1·1 = 8, cp4 4·1·1·13 = 52,
  //   dp2 tp2 3·1·4·13 = 156, dp2 pp2 3·3·1·12 = 108, dp2 cp2 3·1·1·13 = 39,
  //   tp2 pp2 4·3·4·1 = 48, tp2 cp2 4·1·4·13 = 208, pp2 cp2 4·3·1·12 = 144;
  //   sum 805, x 2 x 3 = 4830.
  Workload s = SmallGptOnOneNode();
  s.cluster.node.gpus = 4;
  s.training.global_batch = 8;
  StatusOr<SearchResult> r = Screen(s, ExhaustiveSearchSpace(s.model, s.training, s.cluster), 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.candidates, 4830);
  EXPECT_EQ(r->stats.candidates, r->stats.pruned + r->stats.rejected + r->stats.feasible);
  EXPECT_LE(r->stats.analyzed, r->stats.rejected + r->stats.feasible);
}

TEST(ExhaustiveSpace, SameResultOnOneAndTwoThreads) {
  Workload s = SmallGptOnOneNode();
  s.cluster.node.gpu.hbm_capacity = GB(0.5);
  const SearchSpace space = ExhaustiveSearchSpace(s.model, s.training, s.cluster);
  StatusOr<SearchResult> one = Screen(s, space, 1);
  StatusOr<SearchResult> two = Screen(s, space, 2);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->feasible.size(), two->feasible.size());
  for (size_t i = 0; i < one->feasible.size(); ++i) {
    EXPECT_EQ(CandidateLabel(one->feasible[i].candidate),
              CandidateLabel(two->feasible[i].candidate));
    EXPECT_EQ(one->feasible[i].candidate.order, two->feasible[i].candidate.order);
    EXPECT_EQ(one->feasible[i].estimate.total, two->feasible[i].estimate.total);
  }
  EXPECT_EQ(one->stats.pruned, two->stats.pruned);
  EXPECT_EQ(one->stats.analyzed, two->stats.analyzed);
}

TEST(ExhaustiveSpace, CandidateKnobsReachTheTrainingAndTheEstimate) {
  Workload s = Gpt3OnEightDgxA100();
  Candidate c;
  c.mesh = topology::MeshShape{1, 8, 8, 1, 1};
  c.preset = "zero1";
  c.recompute = Recompute::kFull;
  c.sequence_parallel = true;
  EXPECT_FALSE(CandidateTraining(c, s.training).flash_attention);  // the scenario's
  c.flash_attention = true;
  EXPECT_TRUE(CandidateTraining(c, s.training).flash_attention);
  EXPECT_EQ(CandidateBucket(c, MiB(25)), MiB(25));
  c.gradient_bucket = kWholeGradientBucket;
  EXPECT_EQ(CandidateBucket(c, MiB(25)), kWholeGradientBucket);
  c.tp_comm_overlap = true;
  EXPECT_EQ(CandidateLabel(c),
            "zero1 dp1 tp8 pp8 cp1 mb1 recompute=full sp 1f1b flash tp-overlap bucket=whole");
  // GPT-3 on tp 8 inside a node: a layer's GEMMs (24 b s h^2 / 8 = 0.93 TFLOP a pass, about
  // 3 ms on an A100) dwarf its tp calls (buffers of 2 b s h = 48 MiB). With the overlap one
  // chunk (1/8 of the bytes) of every call stays exposed and the other 7 hide under that
  // compute, so the tp part falls below the unchunked one but stays above 1/8 of it: every
  // chunk pays the whole per-call cost, 7 steps of the 1 us NVSwitch route and NCCL's protocol
  // cost (docs/calibration.md). A call: 7/8 x 48 MiB / 300 GB/s = 146.8 us + 7 us + Simple's
  // 8.4 + 7 x (3.4 - 1) = 25.2 us = 179.0 us; a chunk: 18.4 us + 7 us + LL128's 14 + 7 x
  // (1.9 - 1) + 18.4 x (1/0.92 - 1) = 21.9 us = 47.2 us, 0.26 of a call: below 1/3.
  StatusOr<StrategySpec> strategy = CandidateStrategy(c, s.cluster);
  ASSERT_TRUE(strategy.ok());
  const TrainingSpec training = CandidateTraining(c, s.training);
  StatusOr<Plan> plan = Analyze(s.model, training, *strategy, s.cluster);
  ASSERT_TRUE(plan.ok());
  const auto tp_part = [&](bool overlap) {
    return EstimateStep(s.model, training, *strategy, s.cluster, *plan, MiB(25), overlap)
        .parts[static_cast<size_t>(CostPart::kTensorParallel)];
  };
  const Duration plain = tp_part(false);
  const Duration chunked = tp_part(true);
  EXPECT_GT(plain, Duration::Zero());
  EXPECT_LT(chunked * 3, plain);
  EXPECT_GT(chunked * 8, plain);
}

// The estimate's compute is the schedule's: every compute op the schedule emits for the step's
// forward, backward-input and backward-weight passes (the compute part) and its recompute
// passes (the recompute part), each at the executor's roofline max(FLOPs / (peak x e),
// (read + written) / (HBM x memory_efficiency)) + element-wise bytes / (HBM
// x memory_efficiency). Both read one source of per-op work (cost::PassCosts), so the sums
// agree to the picosecond, and the estimate launches as many kernels: dense layers whole and
// split in tp blocks, sequence parallelism, both recompute policies, ring attention over cp 2,
// and a mixture of experts under ep. e is the kernel model's efficiency for the candidate's
// shapes (cost::StepMatmulEfficiency), which the executor's SimulateStep uses as well.
TEST(EstimateStep, ChargesTheComputeOpsTheScheduleEmits) {
  struct Case {
    const char* model;  // "" = the small GPT
    Candidate candidate;
  };
  const auto candidate = [](int dp, int tp, int cp, int ep, const char* preset, Recompute r,
                            bool sp) {
    Candidate c;
    c.mesh = topology::MeshShape{dp, tp, 1, cp, ep};
    c.preset = preset;
    c.micro_batch = 2;
    c.recompute = r;
    c.sequence_parallel = sp;
    return c;
  };
  const Case cases[] = {
      {"", candidate(8, 1, 1, 1, "zero3", Recompute::kNone, false)},
      {"", candidate(4, 2, 1, 1, "zero1", Recompute::kSelective, true)},
      {"", candidate(4, 2, 1, 1, "ddp", Recompute::kFull, false)},
      {"", candidate(2, 2, 2, 1, "zero2", Recompute::kFull, true)},
      {"mixtral-8x7b", candidate(8, 1, 1, 8, "ddp", Recompute::kNone, false)},
  };
  for (const Case& k : cases) {
    Workload s = SmallGptOnOneNode();
    if (*k.model != '\0') {
      s.model = *FindModelPreset(k.model);
      s.training.global_batch = 16;
    }
    const std::string label = CandidateLabel(k.candidate);
    StatusOr<StrategySpec> strategy = CandidateStrategy(k.candidate, s.cluster);
    ASSERT_TRUE(strategy.ok()) << label;
    const TrainingSpec training = CandidateTraining(k.candidate, s.training);
    ASSERT_EQ(training.precision, Precision::kBf16Mixed);
    StatusOr<Plan> plan = Analyze(s.model, training, *strategy, s.cluster);
    ASSERT_TRUE(plan.ok()) << label;
    StatusOr<std::vector<Schedule>> schedules =
        BuildSchedules(s.model, training, *strategy, s.cluster);
    ASSERT_TRUE(schedules.ok()) << label << ": " << schedules.status().message();
    ASSERT_EQ(schedules->size(), 1u) << label;  // pp 1: one stage

    const topology::DeviceSpec& gpu = s.cluster.node.gpu;
    const FlopRate flop_rate =
        gpu.Peak(topology::DataType::kBf16) *
        cost::StepMatmulEfficiency(s.model.transformer, training, strategy->mesh, gpu,
                                   topology::DataType::kBf16);
    const Bandwidth hbm = gpu.hbm_bandwidth * gpu.memory_efficiency;
    Duration compute, recompute;
    int64_t kernels = 0;
    for (const Op& op : schedules->front().ops) {
      if (op.kind != OpKind::kCompute) continue;
      ++kernels;
      const Duration t = std::max(op.flops / flop_rate, (op.bytes_read + op.bytes_written) / hbm) +
                         op.elementwise_bytes / hbm;
      if (op.phase == Phase::kRecompute) {
        recompute += t;
      } else if (op.phase != Phase::kOptimizer) {
        compute += t;
      }
    }
    const StepEstimate e = EstimateStep(s.model, training, *strategy, s.cluster, *plan, MiB(25));
    EXPECT_GT(compute, Duration::Zero()) << label;
    EXPECT_EQ(e.parts[static_cast<size_t>(CostPart::kCompute)], compute) << label;
    EXPECT_EQ(e.parts[static_cast<size_t>(CostPart::kRecompute)], recompute) << label;
    // One kernel overhead per compute op, the optimizer step's included.
    EXPECT_EQ(e.parts[static_cast<size_t>(CostPart::kKernelOverhead)],
              gpu.kernel_overhead * kernels)
        << label;
  }
}

TEST(Search, RefusesABareParameterCount) {
  Workload s = SmallGptOnOneNode();
  ModelSpec bare;
  bare.parameter_count = 1'000'000;
  StatusOr<SearchResult> r = ScreenCandidates(bare, s.training, s.cluster, Space(s));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace placesim::strategies
