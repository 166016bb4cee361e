// Tests of the strategy search's tier 1 (strategies/search.h): the space, --fix, the
// screening (only feasible candidates, nothing lost to pruning) and the ranking.
#include "strategies/search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "strategies/analyzer.h"
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
  // Everything fits in 80 GB. Compute is F/8 for every mesh (no recompute is cheapest: 72
  // against 72 + selective's attention or 96); tp adds exposed all-reduces, pp a bubble
  // (p-1)/m and sends, cp ring-attention sends. Among dp = 8 presets DDP exposes only its
  // last 25 MiB bucket; ZeRO-1/2 add the parameter all-gather tail (ZeRO-2 and -3 also
  // reduce-scatter every micro-batch), fsdp-hybrid equals zero3 inside one node (skipped),
  // zero-offload adds PCIe copies. The micro-batch does not change the estimate, so the tie
  // goes to the largest: 128 / (16 x 8) = 1 micro-batch of 16.
  StatusOr<SearchResult> r = Screen(s, Space(s));
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->feasible.empty());
  EXPECT_EQ(CandidateLabel(r->feasible.front().candidate),
            "ddp dp8 tp1 pp1 cp1 mb16 recompute=none");
  EXPECT_EQ(DominantCostVsBest(r->feasible.front().estimate, r->feasible.front().estimate),
            "no part above the best");
  for (const auto& f : r->feasible) {
    EXPECT_GE(f.estimate.total, r->feasible.front().estimate.total);
  }
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

TEST(Search, RefusesABareParameterCount) {
  Workload s = SmallGptOnOneNode();
  ModelSpec bare;
  bare.parameter_count = 1'000'000;
  StatusOr<SearchResult> r = ScreenCandidates(bare, s.training, s.cluster, Space(s));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace placesim::strategies
