// The three-tier Clos from a scenario: its fields' checks (exit 2 naming field, value and what
// is allowed) and the oversubscription between pods as an all-reduce sees it on the analytic
// network model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/collective.h"
#include "sim/scenario/scenario.h"

namespace placesim::sim {
namespace {

using cli_test::Outcome;
using cli_test::RunCommand;

// 2 DGX-H100 nodes (8 GPUs, 8 NICs of 400 Gb/s = 50 GB/s, PCIe 64 GB/s, NVLink 450 GB/s) in
// pods of one node on radix-16 switches: node 0 and node 1 meet only through a core switch.
std::string ClosScenario(const std::string& pod_oversubscription) {
  return R"pb(
           name: "clos-2pod"
           cluster { node_preset: "DGX-H100" nodes: 2
                     fabric { kind: FABRIC_KIND_THREE_TIER_CLOS switch_radix: 16 pod_nodes: 1
                              pod_oversubscription:)pb" +
         pod_oversubscription + R"pb(
    }
    }
    model { preset: "gpt3-175b" }
    training { micro_batch: 1 global_batch: 16 }
    strategy { preset: "ddp" dp: 16 }
    simulation { network_model: NETWORK_MODEL_ANALYTIC }
  )pb";
}

std::string LoadError(const std::string& text, const std::vector<std::string>& overrides) {
  StatusOr<Scenario> s = LoadScenarioText(text, ScenarioFormat::kTextProto, overrides, "t");
  return s.ok() ? "OK" : std::string(s.status().message());
}

TEST(ClosScenario, ResolvesAndRefusesEachBadFieldNamingIt) {
  const std::string ok = ClosScenario("4");
  EXPECT_EQ(LoadError(ok, {}), "OK");
  const std::string zero = LoadError(ok, {"cluster.fabric.pod_nodes=0"});
  EXPECT_NE(zero.find("cluster.fabric.pod_nodes: 0: must be between 1 and 65536"),
            std::string::npos)
      << zero;
  const std::string half = LoadError(ok, {"cluster.fabric.pod_oversubscription=0.5"});
  EXPECT_NE(half.find("cluster.fabric.pod_oversubscription: 0.5: must be between 1 and 1000"),
            std::string::npos)
      << half;
  const std::string huge = LoadError(ok, {"cluster.fabric.pod_oversubscription=1e300"});
  EXPECT_NE(huge.find("cluster.fabric.pod_oversubscription: 1e+300: must be between 1 and 1000"),
            std::string::npos)
      << huge;
  const std::string fat = LoadError(ok, {"cluster.fabric.kind=FABRIC_KIND_FAT_TREE"});
  EXPECT_NE(fat.find("cluster.fabric.pod_nodes: set: only FABRIC_KIND_THREE_TIER_CLOS has pods"),
            std::string::npos)
      << fat;
  const std::string unset = LoadError(R"pb(
                                        cluster {
                                          node_preset: "DGX-H100"
                                          nodes: 2
                                          fabric { kind: FABRIC_KIND_THREE_TIER_CLOS }
                                        }
                                        model { preset: "gpt3-175b" }
                                        training { micro_batch: 1 global_batch: 16 }
                                        strategy { preset: "ddp" dp: 16 }
                                      )pb",
                                      {});
  EXPECT_NE(unset.find("cluster.fabric.pod_nodes: unset: FABRIC_KIND_THREE_TIER_CLOS needs"),
            std::string::npos)
      << unset;
}

TEST(ClosScenario, CliRefusesAPodTooLargeWithExitTwo) {
  // Radix 16: a spine has 8 down ports, a leaf 8; a pod of 9 nodes x 8 NICs needs 9 leaves.
  const std::string path = cli_test::WriteTemp("big-pod.textproto", ClosScenario("4"));
  Outcome r = RunCommand(RunCollective, {path, "--op", "all-reduce", "--set", "cluster.nodes=18",
                                         "--set", "cluster.fabric.pod_nodes=9", "--set",
                                         "strategy.dp=144", "--set", "training.global_batch=144"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("cluster.fabric.pod_nodes: 9:"), std::string::npos) << r.err;
}

// The time of a ring all-reduce over the dp group of tp 8 x dp 2 (one GPU on each node, the
// same rail), per size, on the analytic network.
std::vector<double> RingAllReduceMicroseconds(const std::string& pod_oversubscription) {
  const std::string path = cli_test::WriteTemp("clos-" + pod_oversubscription + ".textproto",
                                               ClosScenario(pod_oversubscription));
  Outcome r =
      RunCommand(RunCollective, {path, "--op", "all-reduce", "--set", "strategy.tp=8", "--set",
                                 "strategy.dp=2", "--group", "dp", "--sizes", "256MiB..512MiB:x2",
                                 "--algorithm", "ring", "--format", "json"});
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<double> us;
  if (r.code != 0) return us;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["protocol"], "Simple");
    us.push_back(row["time_us"].get<double>());
  }
  return us;
}

TEST(ClosScenario, AllReduceAcrossPodsIsSlowedByExactlyTheOversubscription) {
  // Ring over n = 2 GPUs, one on each node (a rail: the single ring, whose one phase crosses
  // the pods; with several GPUs per node the multi-channel ring's in-node phase and pipeline
  // fill would add terms that do not scale with o): 2(n - 1) steps, each rank sending S / n to
  // its neighbour, so each flow carries 2(n - 1)/n x S = S in all. The analytic model times
  // the phase as its slowest flow alone: steps x route latency + bytes / bottleneck, plus
  // NCCL's per-call cost (nccl_model.h), which under Simple on a ring (bandwidth factor 1)
  // adds latency only. Both flows run GPU -> PCIe -> NIC -> leaf -> spine -> core -> spine ->
  // leaf -> NIC -> PCIe -> GPU: bottleneck min(64, 50, 50, 50 / o) GB/s = 50 / o GB/s for
  // o >= 1. So T(S) = A + S / (50 GB/s / o), with A (latencies) independent of S and o, and
  // the slope between two sizes scales by exactly o.
  const std::vector<double> flat = RingAllReduceMicroseconds("1");
  const std::vector<double> thin = RingAllReduceMicroseconds("4");
  ASSERT_EQ(flat.size(), 2u);
  ASSERT_EQ(thin.size(), 2u);
  const double flat_slope = flat[1] - flat[0];
  const double thin_slope = thin[1] - thin[0];
  EXPECT_NEAR(thin_slope / flat_slope, 4.0, 1e-6);
  // And the slope itself at o = 1: 256 MiB / 50 GB/s = 5368.71 us.
  EXPECT_NEAR(flat_slope, (256.0 * 1024 * 1024) / 50e9 * 1e6, 1e-3);
}

}  // namespace
}  // namespace placesim::sim
