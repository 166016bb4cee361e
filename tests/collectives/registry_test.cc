// The collective algorithm registry: the built-ins' names and order, the unknown-name message,
// which algorithm applies to which call, and auto's choice and tie-break over estimates given
// by hand-made plans (no cluster needed).
#include "sim/collectives/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;
using ::testing::HasSubstr;

int Id(std::string_view name) { return *BuiltinRegistry().Find(name); }

// A layout of `groups` groups of n members; `multi_node` groups span nodes, with the same
// number of members on each when `uniform`.
GroupLayout Layout(int n, bool multi_node, bool uniform = true) {
  GroupLayout l;
  l.n = n;
  l.groups.assign(1, std::vector<VertexId>(static_cast<size_t>(n)));
  l.multi_node = multi_node;
  if (multi_node && uniform) l.per_node.assign(1, {{}, {}});
  return l;
}

CollectiveCall Call(CollectiveKind kind, Bytes buffer = MB(1)) { return {kind, buffer, buffer}; }

// A plan whose analytic estimate is `latency`: one phase of one route with `latency` and an
// unbounded bottleneck, charging zero bytes.
CommPlan PlanTaking(int algorithm, Duration latency) {
  CommPlan p;
  p.algorithm = algorithm;
  CommPhase ph;
  ph.classes = {{latency, 1e30}};
  ph.analytic_num = 0;
  ph.analytic_den = 1;
  p.phases.push_back(ph);
  return p;
}

// Runs Choose with plans taking `times[name]`; returns the chosen algorithm's name and, in
// `asked`, the algorithms whose plans were built.
std::string Choice(const CollectiveCall& call, const GroupLayout& layout, std::string_view forced,
                   std::map<std::string, Duration> times,
                   std::vector<std::string>* asked = nullptr) {
  const Registry& r = BuiltinRegistry();
  struct Plans final : PlanSource {
    StatusOr<const CommPlan*> PlanOf(int id) override {
      const std::string name(BuiltinRegistry().at(id).name());
      if (asked != nullptr) asked->push_back(name);
      return &(plans[id] = PlanTaking(id, times[name]));
    }
    std::map<std::string, Duration> times;
    std::vector<std::string>* asked = nullptr;
    std::map<int, CommPlan> plans;
  } plans;
  plans.times = std::move(times);
  plans.asked = asked;
  StatusOr<const CommPlan*> plan = r.Choose(call, layout, *r.Select(forced), plans);
  PLACESIM_CHECK(plan.ok());
  return std::string(r.at((*plan)->algorithm).name());
}

TEST(CollectiveRegistry, ListsAutoThenTheBuiltinsInRegistrationOrder) {
  // The order is the summaries' and traces' order of algorithm counts: it must not change.
  EXPECT_EQ(BuiltinRegistry().ValidNames(), "auto, ring, tree, hierarchical, pairwise");
  for (int id = 0; id < BuiltinRegistry().size(); ++id) {
    const Algorithm& a = BuiltinRegistry().at(id);
    EXPECT_FALSE(a.description().empty()) << a.name();
    EXPECT_FALSE(a.citation().empty()) << a.name();
  }
}

TEST(CollectiveRegistry, AnUnknownNameListsTheRegisteredOnes) {
  StatusOr<int> r = BuiltinRegistry().Select("foo");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      r.status().message(),
      "unknown collective algorithm \"foo\"; valid: auto, ring, tree, hierarchical, pairwise");
  EXPECT_EQ(*BuiltinRegistry().Select("auto"), Registry::kAuto);
  EXPECT_EQ(*BuiltinRegistry().Select("tree"), Id("tree"));
}

TEST(CollectiveRegistry, EachAlgorithmStatesWhatItAppliesTo) {
  const Registry& r = BuiltinRegistry();
  const GroupLayout one_node = Layout(8, false);
  const GroupLayout two_nodes = Layout(16, true);
  const GroupLayout ragged = Layout(12, true, /*uniform=*/false);
  // The ring runs everything but all-to-all; pairwise only all-to-all.
  EXPECT_TRUE(r.at(Id("ring")).AppliesTo(Call(CollectiveKind::kBroadcast), two_nodes));
  EXPECT_FALSE(r.at(Id("ring")).AppliesTo(Call(CollectiveKind::kAllToAll), one_node));
  EXPECT_TRUE(r.at(Id("pairwise")).AppliesTo(Call(CollectiveKind::kAllToAll), one_node));
  EXPECT_FALSE(r.at(Id("pairwise")).AppliesTo(Call(CollectiveKind::kAllReduce), one_node));
  // The tree: all-reduce of a non-empty buffer, in a node too (when forced).
  EXPECT_TRUE(r.at(Id("tree")).AppliesTo(Call(CollectiveKind::kAllReduce), one_node));
  EXPECT_FALSE(r.at(Id("tree")).AppliesTo(Call(CollectiveKind::kReduceScatter), two_nodes));
  EXPECT_FALSE(r.at(Id("tree")).AppliesTo(Call(CollectiveKind::kAllReduce, Bytes()), two_nodes));
  // Hierarchical: the three reducing kinds, across nodes, the same members on every node.
  EXPECT_TRUE(r.at(Id("hierarchical")).AppliesTo(Call(CollectiveKind::kAllGather), two_nodes));
  EXPECT_FALSE(r.at(Id("hierarchical")).AppliesTo(Call(CollectiveKind::kAllGather), one_node));
  EXPECT_FALSE(r.at(Id("hierarchical")).AppliesTo(Call(CollectiveKind::kAllGather), ragged));
}

TEST(CollectiveRegistry, AutoRunsTheRingInsideANodeWithoutEstimating) {
  std::vector<std::string> asked;
  // The tree would be faster, but inside one node auto does not consider it.
  EXPECT_EQ(Choice(Call(CollectiveKind::kAllReduce), Layout(8, false), "auto",
                   {{"ring", Microseconds(9)}, {"tree", Microseconds(1)}}, &asked),
            "ring");
  EXPECT_EQ(asked, std::vector<std::string>{"ring"});
}

TEST(CollectiveRegistry, AutoTakesTheLowerEstimateAcrossNodesTiesToHierarchical) {
  const GroupLayout two_nodes = Layout(16, true);
  const CollectiveCall ar = Call(CollectiveKind::kAllReduce);
  std::vector<std::string> asked;
  // The ring is not a candidate when hierarchical applies, however fast.
  EXPECT_EQ(
      Choice(
          ar, two_nodes, "auto",
          {{"ring", Microseconds(1)}, {"tree", Microseconds(5)}, {"hierarchical", Microseconds(4)}},
          &asked),
      "hierarchical");
  EXPECT_EQ(asked, (std::vector<std::string>{"hierarchical", "tree"}));
  // Probe the tie at t - 1 and t: the tree wins only when strictly faster.
  EXPECT_EQ(Choice(ar, two_nodes, "auto",
                   {{"tree", Microseconds(4) - Duration::Picoseconds(1)},
                    {"hierarchical", Microseconds(4)}}),
            "tree");
  EXPECT_EQ(
      Choice(ar, two_nodes, "auto", {{"tree", Microseconds(4)}, {"hierarchical", Microseconds(4)}}),
      "hierarchical");
  // Without the same members on every node, the ring stands in for hierarchical.
  EXPECT_EQ(Choice(ar, Layout(12, true, false), "auto",
                   {{"ring", Microseconds(3)}, {"tree", Microseconds(3)}}),
            "ring");
  EXPECT_EQ(Choice(ar, Layout(12, true, false), "auto",
                   {{"ring", Microseconds(3)}, {"tree", Microseconds(2)}}),
            "tree");
  // All-to-all is pairwise whatever is forced.
  EXPECT_EQ(Choice(Call(CollectiveKind::kAllToAll), two_nodes, "ring", {}), "pairwise");
}

TEST(CollectiveRegistry, AllGatherAndReduceScatterRunTheRingAcrossNodesAsInNccl) {
  // NCCL runs them with its ring alone (ncclTopoTuneModel skips every other algorithm for
  // them, src/graph/tuning.cc at 01afd20a): auto does not ask for hierarchical's plan, however
  // fast, and forced, hierarchical still runs.
  const GroupLayout two_nodes = Layout(16, true);
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    std::vector<std::string> asked;
    EXPECT_EQ(Choice(Call(kind), two_nodes, "auto",
                     {{"ring", Microseconds(9)}, {"hierarchical", Microseconds(1)}}, &asked),
              "ring");
    EXPECT_EQ(asked, std::vector<std::string>{"ring"});
    EXPECT_EQ(Choice(Call(kind), two_nodes, "hierarchical", {}), "hierarchical");
  }
}

TEST(CollectiveRegistry, AForcedAlgorithmThatDoesNotApplyFallsBackToAuto) {
  const GroupLayout one_node = Layout(8, false);
  std::vector<std::string> asked;
  // Forced and applicable: only its plan is built, even where auto would choose otherwise.
  EXPECT_EQ(Choice(Call(CollectiveKind::kAllReduce), one_node, "tree", {}, &asked), "tree");
  EXPECT_EQ(asked, std::vector<std::string>{"tree"});
  EXPECT_EQ(Choice(Call(CollectiveKind::kReduceScatter), one_node, "tree", {}), "ring");
  EXPECT_EQ(Choice(Call(CollectiveKind::kAllReduce), one_node, "hierarchical", {}), "ring");
  EXPECT_EQ(Choice(Call(CollectiveKind::kAllReduce), one_node, "pairwise", {}), "ring");
}

}  // namespace
}  // namespace placesim::sim::collectives
