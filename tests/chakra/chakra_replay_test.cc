// Replay of Chakra workloads: hand-built graphs on ASTRA-sim's reference cluster against the
// alpha-beta closed forms, ASTRA-sim's own files (when ../shared is present), deadlocks, and
// the round trip simulate -> export -> replay on the shipped examples.
//
// The reference cluster (tests/data/chakra/astra-hgx-8gpu-gpt.textproto): every GPU has one
// 400 GB/s, 936.25 ns link (each direction) to one switch, so GPU to GPU is
//   alpha = 2 x 936.25 ns = 1.8725 us, B = 400e9 B/s,
// and compute runs at 900e12 FLOP/s (efficiency 1, no kernel overhead), HBM 3350e9 B/s.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "chakra_test_util.h"
#include "placesim/placesim.h"
#include "sim/chakra/export.h"
#include "sim/chakra/reader.h"
#include "sim/chakra/replay.h"
#include "sim/chakra/writer.h"
#include "topology/cluster.h"
#include "traces/chrome_trace_validator.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::chakra {
namespace {

using ::testing::HasSubstr;
using namespace test;  // NOLINT: the helpers of this test only

constexpr double kAlphaUs = 1.8725;
constexpr double kBandwidth = 400e9;

topology::Cluster AstraCluster() {
  StatusOr<sim::Scenario> s = api::LoadScenario(AstraScenario());
  EXPECT_TRUE(s.ok()) << s.status().message();
  StatusOr<topology::Cluster> c = topology::BuildCluster(s->cluster);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

Workload EightRanks() {
  Workload w;
  w.ranks.resize(8);
  for (int64_t r = 0; r < 8; ++r) w.ranks[r].rank = r;
  return w;
}

Node Compute(uint64_t id, int64_t macs, std::vector<uint64_t> deps = {}) {
  Node n = MakeNode(id, NodeType::kCompute, std::move(deps));
  n.num_ops = macs;
  n.tensor_size = Bytes::Count(1000000);  // 0.3 us at 3350 GB/s: below the FLOP time
  return n;
}

double ReplayUs(const Workload& w, const ReplayOptions& o = {}) {
  StatusOr<ReplayResult> r = Replay(AstraCluster(), w, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->step_time.ToMicroseconds() : -1;
}

// One collective of 1 MiB over the 8 ranks, after 1 us of compute on each.
double CollectiveAfterComputeUs(CommType type, const std::string& network) {
  Workload w = EightRanks();
  for (RankTrace& t : w.ranks) {
    Node c = MakeNode(2, NodeType::kCollective, {1});
    c.comm_type = type;
    c.comm_size = MiB(1);
    // 4.5e8 multiply-accumulates = 9e8 FLOPs = 1 us at 900 TFLOP/s.
    t.nodes = {Compute(1, 450'000'000), c};
  }
  ReplayOptions o;
  o.network = network;
  return ReplayUs(w, o);
}

TEST(ChakraReplay, CollectivesMatchTheRingAndPairwiseClosedForms) {
  const double s = 1048576;
  for (const std::string network : {"flow", "analytic"}) {
    // Ring all-reduce: 2(n-1)/n S / B + 2(n-1) alpha = 4.58752 + 26.215 us.
    EXPECT_NEAR(CollectiveAfterComputeUs(CommType::kAllReduce, network),
                1 + 2 * 7 / 8.0 * s / kBandwidth * 1e6 + 14 * kAlphaUs, 1e-3)
        << network;
    // Reduce-scatter: (n-1)/n S / B + (n-1) alpha = 2.29376 + 13.1075 us.
    EXPECT_NEAR(CollectiveAfterComputeUs(CommType::kReduceScatter, network),
                1 + 7 / 8.0 * s / kBandwidth * 1e6 + 7 * kAlphaUs, 1e-3)
        << network;
    // All-gather: comm_size is the member's shard, S = 8 MiB: 7 MiB / B + 7 alpha.
    EXPECT_NEAR(CollectiveAfterComputeUs(CommType::kAllGather, network),
                1 + 7 * s / kBandwidth * 1e6 + 7 * kAlphaUs, 1e-3)
        << network;
  }
  // All-to-all, pairwise: 7 flows of S/8 leave each GPU at once and share its 400 GB/s link:
  // 7/8 S / B + alpha.
  EXPECT_NEAR(CollectiveAfterComputeUs(CommType::kAllToAll, "flow"),
              1 + 7 / 8.0 * s / kBandwidth * 1e6 + kAlphaUs, 1e-3);
}

TEST(ChakraReplay, SendRecvAndBreakdown) {
  // Rank 0 computes 1 us then sends 4 MB to rank 1 (10 us + alpha); rank 1 receives, then
  // computes 1 us: step 1 + 11.8725 + 1 us. Rank 1 waits for the data from 0 to 12.8725 us,
  // all of it exposed.
  Workload w = EightRanks();
  Node s = MakeNode(2, NodeType::kSend, {1});
  s.comm_dst = 1;
  s.comm_tag = 7;
  s.comm_size = Bytes::Count(4'000'000);
  w.ranks[0].nodes = {Compute(1, 450'000'000), s};
  Node r = MakeNode(1, NodeType::kRecv);
  r.comm_src = 0;
  r.comm_tag = 7;
  r.comm_size = s.comm_size;
  w.ranks[1].nodes = {r, Compute(2, 450'000'000, {1})};
  StatusOr<ReplayResult> res = Replay(AstraCluster(), w);
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_NEAR(res->step_time.ToMicroseconds(), 1 + 10 + kAlphaUs + 1, 1e-3);
  EXPECT_NEAR(res->ranks[1].compute_busy.ToMicroseconds(), 1, 1e-6);
  EXPECT_NEAR(res->ranks[1].exposed_comm.ToMicroseconds(), 1 + 10 + kAlphaUs, 1e-3);
  EXPECT_NEAR(res->ranks[0].exposed_comm.ToMicroseconds(), 10 + kAlphaUs, 1e-3);
  EXPECT_EQ(res->ranks[0].comm_bytes, Bytes::Count(4'000'000));
}

TEST(ChakraReplay, FlopsPerOpConvertsMultiplyAccumulates) {
  // 4.5e8 MACs: 2 FLOPs each (default) = 1 us; ASTRA-sim's reading (1 per op) = 0.5 us.
  Workload w = EightRanks();
  w.ranks[0].nodes = {Compute(1, 450'000'000)};
  EXPECT_NEAR(ReplayUs(w), 1, 1e-6);
  ReplayOptions o;
  o.flops_per_op = 1;
  EXPECT_NEAR(ReplayUs(w, o), 0.5, 1e-6);
  // Memory bound: 3.35 MB of traffic at 3350 GB/s = 1 us whatever num_ops says.
  w.ranks[0].nodes[0].num_ops = 1;
  w.ranks[0].nodes[0].tensor_size = Bytes::Count(3'350'000);
  EXPECT_NEAR(ReplayUs(w), 1, 1e-6);
}

TEST(ChakraReplay, CrossRankDeadlockIsAnErrorNotAHang) {
  // Rank 0 enters an all-reduce over {0, 1} before sending to rank 1; rank 1 waits for that
  // send before entering the all-reduce.
  Workload w = EightRanks();
  w.groups[1] = {0, 1};
  Node ar = MakeNode(1, NodeType::kCollective);
  ar.comm_group = 1;
  ar.comm_size = MiB(1);
  Node s = MakeNode(2, NodeType::kSend, {1});
  s.comm_dst = 1;
  s.comm_tag = 3;
  w.ranks[0].nodes = {ar, s};
  Node r = MakeNode(1, NodeType::kRecv);
  r.comm_src = 0;
  r.comm_tag = 3;
  Node ar1 = ar;
  ar1.id = 2;
  ar1.data_deps = {1};
  w.ranks[1].nodes = {r, ar1};
  StatusOr<ReplayResult> res = Replay(AstraCluster(), w);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(res.status().message(), HasSubstr("rank 0: node 1"));
  EXPECT_THAT(res.status().message(), HasSubstr("deadlocks"));
}

TEST(ChakraReplay, ConcurrentTransfersGetTheirOwnTraceThreads) {
  // Rank 0 runs an all-reduce with rank 1 and one with rank 2 at the same time, and sends to
  // ranks 3 and 4 at once: the slices overlap in time, so they must sit on different threads
  // of the trace (the validator refuses overlapping slices on one thread).
  Workload w = EightRanks();
  w.groups[1] = {0, 1};
  w.groups[2] = {0, 2};
  for (int64_t g : {1, 2}) {
    for (int64_t r : w.groups[g]) {
      Node c = MakeNode(static_cast<uint64_t>(g), NodeType::kCollective);
      c.comm_group = g;
      c.comm_size = MiB(g);
      w.ranks[r].nodes.push_back(c);
    }
  }
  for (int64_t dst : {3, 4}) {
    Node s = MakeNode(static_cast<uint64_t>(dst), NodeType::kSend);
    s.comm_dst = dst;
    s.comm_size = MiB(dst);
    w.ranks[0].nodes.push_back(s);
    Node r = MakeNode(1, NodeType::kRecv);
    r.comm_src = 0;
    r.comm_size = s.comm_size;
    w.ranks[dst].nodes.push_back(r);
  }
  std::ostringstream json;
  traces::ChromeTraceWriter writer(json);
  ReplayOptions o;
  o.trace = &writer;
  StatusOr<ReplayResult> r = Replay(AstraCluster(), w, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(writer.Finish().ok());
  StatusOr<traces::TraceSummary> v = traces::ValidateChromeTrace(json.str());
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_THAT(json.str(), HasSubstr("comm 2"));
  EXPECT_THAT(json.str(), HasSubstr("p2p 2"));
}

TEST(ChakraReplay, MoreRanksThanGpusIsRefused) {
  Workload w;
  w.ranks.resize(9);
  for (int64_t r = 0; r < 9; ++r) w.ranks[r].rank = r;
  StatusOr<ReplayResult> res = Replay(AstraCluster(), w);
  ASSERT_FALSE(res.ok());
  EXPECT_THAT(res.status().message(), HasSubstr("9 ranks but the scenario's cluster has 8 GPUs"));
}

TEST(ChakraReplay, AstraSimMicrobenchmarks) {
  const std::string shared = SharedChakra();
  if (shared.empty())
    GTEST_SKIP() << "../shared/interop/chakra is absent: ASTRA-sim's files not replayed";
  // The same closed forms as above without the compute (S = 1 MiB, n = 8).
  const double s = 1048576;
  const std::vector<std::pair<std::string, double>> cases = {
      {"all_reduce", 2 * 7 / 8.0 * s / kBandwidth * 1e6 + 14 * kAlphaUs},
      {"all_gather", 7 * s / kBandwidth * 1e6 + 7 * kAlphaUs},
      {"reduce_scatter", 7 / 8.0 * s / kBandwidth * 1e6 + 7 * kAlphaUs},
      {"all_to_all", 7 / 8.0 * s / kBandwidth * 1e6 + kAlphaUs},
  };
  for (const auto& [c, expected_us] : cases) {
    StatusOr<Workload> w =
        ReadWorkload(shared + "/astra-sim-microbenchmarks/" + c + "/8npus_1MB/" + c, "");
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_NEAR(ReplayUs(*w), expected_us, 1e-3) << c;
  }
}

TEST(ChakraReplay, AstraSimGptStepComputeMatchesAstraSimsRoofline) {
  const std::string shared = SharedChakra();
  if (shared.empty())
    GTEST_SKIP() << "../shared/interop/chakra is absent: the GPT trace not replayed";
  const std::string prefix = shared + "/gpt-dp2tp2pp2/workload";
  StatusOr<Workload> w = ReadWorkload(prefix, prefix + ".json");
  ASSERT_TRUE(w.ok()) << w.status().message();
  ReplayOptions o;
  o.flops_per_op = 1;  // ASTRA-sim divides num_ops by peak-perf
  StatusOr<ReplayResult> r = Replay(AstraCluster(), *w, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // ASTRA-sim's answer (../shared/interop/chakra/README.md): step 1,595,703 ns with 1,148,193 ns
  // of exposed communication, so 447,510 ns of it is compute; under the same roofline every
  // rank's compute here should be that.
  for (const RankReplay& k : r->ranks) {
    EXPECT_NEAR(k.compute_busy.ToMicroseconds(), 447.510, 447.510 * 0.005) << k.rank;
  }
  // Same input, same output.
  StatusOr<ReplayResult> again = Replay(AstraCluster(), *w, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->step_time, r->step_time);
}

// ------------------------------------------------------------------------------ round trip

// simulate's step time of `scenario_path` vs the replay of its export, read back through the
// writer and the reader, on `network`.
//
// The replay charges a compute node at the device's flat matmul_efficiency and a collective
// without NCCL's per-call protocol cost: a Chakra node carries its FLOPs, not the GEMM shapes
// the kernel model needs, nor the protocol simulate chose. The round trip is therefore exact
// for scenarios on the flat compute model without the protocol cost, which these sets select
// (docs/chakra.md, "Round trip").
void ExpectRoundTrip(const std::string& scenario_path, const std::string& network,
                     std::vector<std::string> sets = {}) {
  sets.push_back("cluster.node.gpu.matmul_efficiency=0.6");
  sets.push_back("simulation.protocol_cost=false");
  StatusOr<sim::Scenario> s = api::LoadScenario(scenario_path, sets);
  ASSERT_TRUE(s.ok()) << s.status().message();
  api::SimulateOptions so;
  so.network = network;
  StatusOr<sim::SimResult> simulated = api::Simulate(*s, so);
  ASSERT_TRUE(simulated.ok()) << simulated.status().message();
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(s->cluster);
  ASSERT_TRUE(cluster.ok());
  const sim::ExecutorOptions eo = sim::ExecutorOptionsFromSettings(s->simulation);
  StatusOr<Workload> exported =
      ExportStep(*cluster, s->model, s->training, s->strategy, eo.schedule);
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  Workload back;
  back.groups = exported->groups;
  for (const RankTrace& t : exported->ranks) {
    StatusOr<RankTrace> r = ParseRankTrace(SerializeRankTrace(t), t.rank);
    ASSERT_TRUE(r.ok()) << r.status().message();
    back.ranks.push_back(std::move(*r));
  }
  ReplayOptions ro;
  ro.network = network;
  ro.algorithm = s->simulation.collective_algorithm;
  ro.compute_type = ComputeTypeOf(s->training.precision);
  StatusOr<ReplayResult> replayed = Replay(*cluster, back, ro);
  ASSERT_TRUE(replayed.ok()) << replayed.status().message();
  const double want = simulated->step_time.ToSeconds();
  EXPECT_NEAR(replayed->step_time.ToSeconds(), want, 0.01 * want)
      << scenario_path << " on " << network;
}

class ChakraRoundTrip : public ::testing::TestWithParam<std::string> {};

// Every shipped example simulate accepts whose export replays in seconds; the larger ones
// (gpt3-175b-tp8-pp8, llama3-70b-*, qwen3, deepseek, narayanan, llama3-405b: minutes each,
// up to gigabytes of traces) are measured in docs/chakra.md instead. zero-7.5b has no
// architecture and simulate refuses it.
INSTANTIATE_TEST_SUITE_P(
    Examples, ChakraRoundTrip,
    ::testing::Values("examples/explicit-2gpu.textproto", "examples/tiny-gpt-zero3-2gpu.textproto",
                      "examples/korthikanti-22b-tp8.textproto", "examples/llama2-7b-ddp.textproto",
                      "examples/llama3-8b-fsdp.textproto", "examples/mixtral-8x7b-ep8.textproto",
                      "examples/zero-offload.textproto", "examples/gpt-32l-fsdp-64gpu.textproto",
                      "tests/data/chakra/astra-hgx-8gpu-gpt.textproto"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string n = info.param.substr(info.param.rfind('/') + 1);
      n = n.substr(0, n.find('.'));
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(ChakraRoundTripPrecision, ComputesAtThePrecisionsPeak) {
  // An fp8 step runs at the H100's fp8 peak (twice its bf16 one) in simulate and in the
  // replay alike: llama3-8b-fsdp takes 5.05 s in bf16 and 2.67 s in fp8 (analytic network).
  ExpectRoundTrip(SourcePath("examples/llama3-8b-fsdp.textproto"), "analytic",
                  {"training.precision=PRECISION_FP8_MIXED"});
}

TEST_P(ChakraRoundTrip, AnalyticNetwork) { ExpectRoundTrip(SourcePath(GetParam()), "analytic"); }

TEST_P(ChakraRoundTrip, FlowNetwork) {
  // The flow model on the examples of up to 16 GPUs (the 64-GPU one takes about a minute).
  if (GetParam().find("64gpu") != std::string::npos) GTEST_SKIP() << "analytic only: 64 GPUs";
  ExpectRoundTrip(SourcePath(GetParam()), "flow");
}

}  // namespace
}  // namespace placesim::chakra
