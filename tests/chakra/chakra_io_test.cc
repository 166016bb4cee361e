// Reading, validating and writing Chakra traces: the wire encodings found in the wild, the
// writer's output read back, the shipped traces placesim's exporter wrote, ASTRA-sim's files
// (when ../shared is present), and one test per class of bad trace, each naming rank, node id
// and field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chakra_test_util.h"
#include "sim/chakra/reader.h"
#include "sim/chakra/validate.h"
#include "sim/chakra/writer.h"

namespace placesim::chakra {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using namespace test;  // NOLINT: the helpers of this test only

// A collective node of rank `rank` encoded by hand; comm_size as int64 (field 9) or uint64
// (field 13), the group as comm_group (int64) or pg_name (string).
std::string CollectiveRecord(uint64_t id, int size_field, uint64_t size, bool pg_name) {
  std::string n;
  VarintField(n, 1, id);
  BytesField(n, 2, "ar");
  VarintField(n, 3, 7);                           // COMM_COLL_NODE
  BytesField(n, 10, IntAttr("comm_type", 9, 0));  // ALL_REDUCE
  BytesField(n, 10, IntAttr("comm_size", size_field, size));
  BytesField(n, 10, pg_name ? StringAttr("pg_name", "5") : IntAttr("comm_group", 9, 5));
  return Record(n);
}

TEST(ChakraReader, AcceptsInt64AndUint64CommSizeAndBothGroupSpellings) {
  for (int field : {9, 13}) {
    for (bool pg : {false, true}) {
      StatusOr<RankTrace> t =
          ParseRankTrace(Metadata() + CollectiveRecord(3, field, 1048576, pg), 0);
      ASSERT_TRUE(t.ok()) << t.status().message();
      EXPECT_EQ(t->version, "0.0.4");
      ASSERT_EQ(t->nodes.size(), 1u);
      EXPECT_EQ(t->nodes[0].id, 3u);
      EXPECT_EQ(t->nodes[0].type, NodeType::kCollective);
      EXPECT_EQ(t->nodes[0].comm_size, MiB(1));
      EXPECT_EQ(t->nodes[0].comm_group, 5);
    }
  }
}

TEST(ChakraReader, WriterOutputReadsBackFieldForField) {
  RankTrace t;
  t.rank = 1;
  t.version = "0.0.4";
  Node c = MakeNode(1, NodeType::kCompute);
  c.num_ops = 123456789;
  c.tensor_size = Bytes::Count(4096);
  c.elementwise_bytes = Bytes::Count(512);
  Node s = MakeNode(2, NodeType::kSend, {1});
  s.comm_dst = 0;
  s.comm_tag = 77;
  s.comm_size = Bytes::Count(1000);
  Node g = MakeNode(3, NodeType::kCollective, {1});
  g.comm_type = CommType::kReduceScatter;
  g.comm_size = Bytes::Count(2048);
  g.comm_group = 4;
  g.ctrl_deps = {2};
  Node m = MakeNode(4, NodeType::kMemStore, {3});
  m.tensor_size = Bytes::Count(64);
  m.nvme = true;
  t.nodes = {c, s, g, m};
  StatusOr<RankTrace> back = ParseRankTrace(SerializeRankTrace(t), 1);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->nodes.size(), 4u);
  EXPECT_EQ(back->nodes[0].num_ops, 123456789);
  EXPECT_EQ(back->nodes[0].tensor_size, Bytes::Count(4096));
  EXPECT_EQ(back->nodes[0].elementwise_bytes, Bytes::Count(512));
  EXPECT_EQ(back->nodes[1].comm_dst, 0);
  EXPECT_EQ(back->nodes[1].comm_tag, 77);
  EXPECT_EQ(back->nodes[2].comm_type, CommType::kReduceScatter);
  EXPECT_EQ(back->nodes[2].comm_group, 4);
  EXPECT_EQ(back->nodes[2].ctrl_deps, std::vector<uint64_t>{2});
  EXPECT_EQ(back->nodes[2].data_deps, std::vector<uint64_t>{1});
  EXPECT_TRUE(back->nodes[3].nvme);
  EXPECT_EQ(CommGroupsJson({{1, {0, 1}}, {2, {2, 3}}}), "{\"1\": [0, 1], \"2\": [2, 3]}\n");
}

TEST(ChakraReader, ShippedExportsReadAndValidate) {
  // Traces placesim's exporter wrote (simulate --chakra-out) for the tiny ZeRO-3 example and
  // the ASTRA-sim reference job; every collective names a group of the groups file.
  for (const char* name : {"tiny-gpt-zero3-2gpu", "astra-hgx-8gpu-gpt"}) {
    const std::string prefix = SourcePath(std::string("tests/data/chakra/") + name);
    StatusOr<Workload> w = ReadWorkload(prefix, prefix + ".json");
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_TRUE(ValidateWorkload(*w).ok()) << name;
    for (const RankTrace& t : w->ranks) EXPECT_FALSE(t.nodes.empty()) << name;
  }
}

TEST(ChakraReader, AstraSimFilesReadAndValidate) {
  const std::string shared = SharedChakra();
  if (shared.empty())
    GTEST_SKIP() << "../shared/interop/chakra is absent: ASTRA-sim's files not checked";
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
    const std::string prefix = shared + "/astra-sim-microbenchmarks/" + c + "/8npus_1MB/" + c;
    StatusOr<Workload> w = ReadWorkload(prefix, "");
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_EQ(w->ranks.size(), 8u) << c;
    // One collective of 1 MiB over every rank (no comm_group: the world).
    ASSERT_EQ(w->ranks[3].nodes.size(), 1u);
    EXPECT_EQ(w->ranks[3].nodes[0].comm_size, MiB(1));
    EXPECT_EQ(w->ranks[3].nodes[0].comm_group, kWorld);
    EXPECT_TRUE(ValidateWorkload(*w).ok());
  }
  const std::string gpt = shared + "/gpt-dp2tp2pp2/workload";
  StatusOr<Workload> w = ReadWorkload(gpt, gpt + ".json");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->ranks.size(), 8u);
  EXPECT_EQ(w->groups.size(), 16u);  // workload.json: groups "1".."16"
  EXPECT_TRUE(ValidateWorkload(*w).ok()) << ValidateWorkload(*w).message();
}

// ------------------------------------------------------------------- one test per bad trace

TEST(ChakraBadTrace, TruncatedFileNamesRankAndLastNode) {
  RankTrace t;
  t.nodes = {MakeNode(1, NodeType::kCompute), MakeNode(2, NodeType::kCompute, {1})};
  std::string bytes = SerializeRankTrace(t);
  bytes.resize(bytes.size() - 3);
  StatusOr<RankTrace> r = ParseRankTrace(bytes, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr("rank 3"), HasSubstr("truncated"), HasSubstr("after node 1")));
}

TEST(ChakraBadTrace, UnknownNodeTypeNamesNodeAndField) {
  std::string n;
  VarintField(n, 1, 42);
  VarintField(n, 3, 9);  // BATCH_NODE in later Chakra schemas: not a node placesim runs
  StatusOr<RankTrace> r = ParseRankTrace(Metadata() + Record(n), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr("rank 2: node 42"), HasSubstr("type: 9 is not a node type")));
}

TEST(ChakraBadTrace, UnsupportedCollectiveNamesCommType) {
  std::string n;
  VarintField(n, 1, 5);
  VarintField(n, 3, 7);
  BytesField(n, 10, IntAttr("comm_type", 9, 9));  // BARRIER
  StatusOr<RankTrace> r = ParseRankTrace(Metadata() + Record(n), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("node 5"), HasSubstr("comm_type: 9")));
}

Workload TwoRanks() {
  Workload w;
  w.ranks.resize(2);
  for (int64_t r = 0; r < 2; ++r) {
    w.ranks[r].rank = r;
    w.ranks[r].nodes = {MakeNode(1, NodeType::kCompute), MakeNode(2, NodeType::kCompute, {1})};
  }
  return w;
}

TEST(ChakraBadTrace, DanglingDependency) {
  Workload w = TwoRanks();
  w.ranks[1].nodes[1].data_deps = {99};
  const Status s = ValidateWorkload(w);
  EXPECT_THAT(s.message(),
              AllOf(HasSubstr("rank 1: node 2"), HasSubstr("data_deps: names node 99")));
}

TEST(ChakraBadTrace, Cycle) {
  Workload w = TwoRanks();
  w.ranks[0].nodes[0].ctrl_deps = {2};  // 1 -> 2 -> 1
  const Status s = ValidateWorkload(w);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("rank 0: node 1"), HasSubstr("cycle")));
}

TEST(ChakraBadTrace, UnmatchedSend) {
  Workload w = TwoRanks();
  Node s = MakeNode(3, NodeType::kSend);
  s.comm_dst = 1;
  s.comm_tag = 8;
  w.ranks[0].nodes.push_back(s);
  EXPECT_THAT(
      ValidateWorkload(w).message(),
      AllOf(HasSubstr("rank 0: node 3"), HasSubstr("comm_tag"), HasSubstr("1 sends and 0 recvs")));
}

TEST(ChakraBadTrace, GroupWithoutTheRank) {
  Workload w = TwoRanks();
  w.groups[4] = {1};
  Node c = MakeNode(3, NodeType::kCollective);
  c.comm_group = 4;
  w.ranks[0].nodes.push_back(c);
  EXPECT_THAT(ValidateWorkload(w).message(),
              AllOf(HasSubstr("rank 0: node 3"),
                    HasSubstr("comm_group: group 4 (1) does not hold rank 0")));
}

class ChakraFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/chakra_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void Write(int64_t rank) {
    RankTrace t;
    t.rank = rank;
    t.nodes = {MakeNode(1, NodeType::kCompute)};
    WriteBytes(fmt(rank), SerializeRankTrace(t));
  }
  std::string fmt(int64_t rank) const { return dir_ + "/w." + std::to_string(rank) + ".et"; }
  std::string dir_;
};

TEST_F(ChakraFiles, MissingRank) {
  Write(0);
  Write(2);  // rank 1 has no file
  StatusOr<Workload> w = ReadWorkload(dir_ + "/w", "");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), AllOf(HasSubstr("rank 1: missing"), HasSubstr("w.1.et")));
}

TEST_F(ChakraFiles, GroupNamingAnAbsentRank) {
  Write(0);
  Write(1);
  std::ofstream(dir_ + "/g.json") << "{\"1\": [0, 1], \"3\": [1, 9]}";
  StatusOr<Workload> w = ReadWorkload(dir_ + "/w", dir_ + "/g.json");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(),
              AllOf(HasSubstr("group 3: rank 9 has no trace file"), HasSubstr("ranks 0..1")));
}

TEST_F(ChakraFiles, MalformedGroupsFile) {
  Write(0);
  std::ofstream(dir_ + "/g.json") << "{\"x\": [0]}";
  StatusOr<Workload> w = ReadWorkload(dir_ + "/w", dir_ + "/g.json");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("group \"x\": the id must be a decimal integer"));
}

}  // namespace
}  // namespace placesim::chakra
