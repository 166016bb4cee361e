// Adding a collective algorithm takes one class and one registration line: a test-only
// "direct" all-gather, defined here, registered in this test's own registry beside the
// built-ins, and run by the executor when forced, under both network models.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/collectives/registry.h"
#include "sim/executor/executor.h"
#include "sim/network/alpha_beta.h"
#include "topology/cluster.h"
#include "topology/presets.h"

namespace placesim::sim {
namespace {

using collectives::Algorithm;
using collectives::AutoRole;
using collectives::CollectiveCall;
using collectives::GroupLayout;
using strategies::CollectiveKind;

// Direct all-gather: one phase in which every member sends its S/N shard straight to each other
// member (N (N-1) flows per group, one step each), analytic bytes (N-1)/N S per flow (the
// sender's whole load, as for pairwise). Auto never picks it.
class DirectAllGather final : public Algorithm {
 public:
  std::string_view name() const override { return "direct"; }
  std::string_view description() const override { return "all-gather by N-1 direct sends"; }
  std::string_view citation() const override { return "a test of the registry"; }
  bool AppliesTo(const CollectiveCall& call, const GroupLayout& /*layout*/) const override {
    return call.kind == CollectiveKind::kAllGather && call.buffer_bytes.count() > 0;
  }
  AutoRole AutoRoleFor(const CollectiveCall&, const GroupLayout&) const override {
    return AutoRole::kNever;
  }
  StatusOr<std::vector<CommPhase>> Plan(CollectiveKind /*kind*/, const GroupLayout& layout,
                                        collectives::Routes& routes,
                                        const char* what) const override {
    CommPhase ph;
    ph.num = 1;
    ph.den = layout.n;
    ph.analytic_num = layout.n - 1;
    ph.analytic_den = layout.n;
    for (const std::vector<topology::VertexId>& members : layout.groups) {
      RETURN_IF_ERROR(collectives::AddAllPairs(routes, members, what, ph));
    }
    std::vector<CommPhase> phases;
    phases.push_back(std::move(ph));
    return phases;
  }
};

topology::Cluster OneDgx() {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  StatusOr<topology::Cluster> c = topology::BuildCluster(spec);
  PLACESIM_CHECK(c.ok());
  return std::move(c).value();
}

// One all-gather of S over the 8 GPUs of the node (dp = 8).
strategies::Schedule OneAllGather(Bytes s) {
  strategies::Schedule sched;
  sched.role = "all ranks";
  sched.ranks = 8;
  strategies::Op op;
  op.kind = strategies::OpKind::kCollective;
  op.stream = strategies::Stream::kComm;
  op.collective = CollectiveKind::kAllGather;
  op.group_size = 8;
  op.buffer_bytes = s;
  op.bytes = Bytes::Count(7 * s.count() / 8);
  sched.ops.push_back(op);
  return sched;
}

StatusOr<RoleResult> RunAllGather(const collectives::Registry& registry,
                                  const std::string& algorithm, const std::string& network) {
  ExecutionContext ctx;
  ctx.mesh.dp = 8;
  ExecutorOptions opt;
  opt.collectives = &registry;
  opt.algorithm = algorithm;
  opt.network = network;
  return ExecuteSchedule(OneDgx(), OneAllGather(GB(1)), ctx, opt);
}

int64_t CallsOf(const RoleResult& r, std::string_view algorithm) {
  for (size_t a = 0; a < r.algorithm_names.size(); ++a) {
    if (r.algorithm_names[a] == algorithm) {
      return r.algorithm_calls[static_cast<size_t>(CollectiveKind::kAllGather)][a];
    }
  }
  return -1;
}

TEST(CollectivePlugin, ATestAlgorithmRegisteredInItsOwnRegistryRunsWhenForced) {
  collectives::Registry registry;
  collectives::RegisterBuiltins(registry);
  registry.Register(std::make_unique<DirectAllGather>());  // the one registration line
  EXPECT_EQ(registry.ValidNames(), "auto, ring, tree, hierarchical, pairwise, direct");
  // S = 1 GB on one NVSwitch node: each GPU's uplink carries its 7 flows of S/8 (max-min: 450/7
  // GB/s each, and each downlink the 7 flows it receives), so every flow ends at
  //   alpha + (S/8) / (450/7 GB/s) = 1 us + 7/8 S / 450 GB/s,
  // which the analytic model charges directly (7/8 S per flow at 450 GB/s).
  const Duration expected = Microseconds(1) + DrainTime(0.875e9, 450e9);
  for (const char* network : {"flow", "analytic"}) {
    StatusOr<RoleResult> r = RunAllGather(registry, "direct", network);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->step_time, expected) << network;
    EXPECT_EQ(CallsOf(*r, "direct"), 1) << network;
    EXPECT_EQ(CallsOf(*r, "ring"), 0) << network;
  }
  // Auto never picks it: the ring, 7 steps of 1 us + 7/8 S / 450 GB/s, is slower here.
  StatusOr<RoleResult> a = RunAllGather(registry, "auto", "flow");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(CallsOf(*a, "ring"), 1);
  EXPECT_EQ(a->step_time, Microseconds(7) + DrainTime(0.875e9, 450e9));
}

TEST(CollectivePlugin, TheExecutorRefusesAnUnknownNameWithTheRegisteredOnes) {
  StatusOr<RoleResult> r = RunAllGather(collectives::BuiltinRegistry(), "direct", "flow");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "unknown collective algorithm \"direct\"; valid: auto, ring, tree, hierarchical, "
            "pairwise");
  r = RunAllGather(collectives::BuiltinRegistry(), "ring", "packet");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "unknown network model \"packet\"; valid: flow, analytic");
}

}  // namespace
}  // namespace placesim::sim
