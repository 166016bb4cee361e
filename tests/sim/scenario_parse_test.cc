// Parsing scenario text and JSON: both formats give the same Scenario, and malformed or hostile
// input (truncated, wrong types, huge numbers, empty, binary, oversized, deeply nested) gives a
// clear error with a position or a field path — never a crash or a hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/scenario/scenario.h"
#include "tests/sim/scenario_test_util.h"

namespace placesim::sim {
namespace {

using testing::Dump;
using ::testing::HasSubstr;
using testing::SourcePath;
using ::testing::StartsWith;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A complete, valid scenario used as a base: 2 × DGX-H100 = 16 GPUs, tp 8 so dp = 2.
constexpr std::string_view kValidText = R"pb(
  cluster { node_preset: "DGX-H100" nodes: 2 }
  model { preset: "llama3-8b" }
  training { micro_batch: 1 global_batch: 16 }
  strategy { preset: "zero1" tp: 8 }
)pb";

constexpr std::string_view kValidJson = R"({
  "cluster": {"node_preset": "DGX-H100", "nodes": 2},
  "model": {"preset": "llama3-8b"},
  "training": {"micro_batch": 1, "global_batch": 16},
  "strategy": {"preset": "zero1", "tp": 8}
})";

Status ParseText(std::string_view text, ScenarioFormat format = ScenarioFormat::kTextProto) {
  return LoadScenarioText(text, format, {}).status();
}

TEST(ScenarioParse, TextAndJsonExamplesGiveIdenticalScenarios) {
  StatusOr<Scenario> text =
      LoadScenarioFile(SourcePath("examples/llama3-70b-tp8-zero1.textproto"), {});
  StatusOr<Scenario> json = LoadScenarioFile(SourcePath("examples/llama3-70b-tp8-zero1.json"), {});
  ASSERT_TRUE(text.ok()) << text.status().message();
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(Dump(*text), Dump(*json));
  EXPECT_EQ(text->strategy.mesh.tp, 8);
}

TEST(ScenarioParse, TextAndJsonInlineGiveIdenticalScenarios) {
  StatusOr<Scenario> text = LoadScenarioText(kValidText, ScenarioFormat::kTextProto, {}, "a.x");
  StatusOr<Scenario> json = LoadScenarioText(kValidJson, ScenarioFormat::kJson, {}, "a.x");
  ASSERT_TRUE(text.ok()) << text.status().message();
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(Dump(*text), Dump(*json));
  // dp is derived: 16 GPUs / tp 8 = 2.
  EXPECT_EQ(text->strategy.mesh.dp, 2);
}

TEST(ScenarioParse, AutoFormatSniffsJsonByItsBrace) {
  StatusOr<Scenario> json = LoadScenarioText(kValidJson, ScenarioFormat::kAuto, {});
  StatusOr<Scenario> text = LoadScenarioText(kValidText, ScenarioFormat::kAuto, {});
  ASSERT_TRUE(json.ok()) << json.status().message();
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(Dump(*text), Dump(*json));
}

TEST(ScenarioParse, JsonAcceptsLowerCamelCaseNamesAndNull) {
  StatusOr<Scenario> s = LoadScenarioText(R"({
    "cluster": {"nodePreset": "DGX-H100", "nodes": 2, "fabric": null},
    "model": {"preset": "llama3-8b"},
    "training": {"microBatch": 1, "globalBatch": "16"},
    "strategy": {"preset": "zero1", "tp": 8}})",
                                          ScenarioFormat::kJson, {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->training.global_batch, 16);
}

TEST(ScenarioParse, DefaultNameIsTheFileStem) {
  StatusOr<Scenario> s =
      LoadScenarioText(kValidText, ScenarioFormat::kTextProto, {}, "some/dir/my-study.textproto");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "my-study");
}

TEST(ScenarioParse, TextParseErrorShowsLineAndColumn) {
  // Line 3, column 3 is where "nodez" starts.
  Status s = ParseText("cluster {\n  nodes: 2\n  nodez: 3\n}\n");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "<input>:3:3: unknown field \"nodez\" in cluster; valid: node_preset, node, nodes, "
            "fabric, vertices, links; did you mean \"nodes\"?");
}

TEST(ScenarioParse, TextUnknownFieldInNestedMessageNamesItsPlace) {
  Status s = ParseText("cluster { node { gpu { hbm: \"80 GiB\" } } }");
  EXPECT_THAT(s.message(), HasSubstr("<input>:1:24: unknown field \"hbm\" in cluster.node.gpu; "
                                     "valid: hbm_capacity, hbm_bandwidth, peak_fp32"));
}

TEST(ScenarioParse, TextUnknownEnumValueListsValidNames) {
  Status s = ParseText("training {\n  recompute: FULL\n}");
  EXPECT_THAT(s.message(), StartsWith("<input>:2:14: "));
  EXPECT_THAT(s.message(), HasSubstr("valid: RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL"));
}

TEST(ScenarioParse, TextAmbiguousEnumFieldListsEveryCandidate) {
  // `kind` is a field of Fabric, Vertex and Link; the parser's message does not say which.
  Status s = ParseText("cluster { fabric { kind: FAT } }");
  EXPECT_THAT(s.message(), HasSubstr("FABRIC_KIND_FAT_TREE"));
  EXPECT_THAT(s.message(), HasSubstr("(in Fabric)"));
}

TEST(ScenarioParse, TruncatedTextFileReportsWhereItEnds) {
  std::string text(kValidText);
  // Cut the file inside the training message: line 4 (the text opens with a newline) ends
  // at column 27, so the parser stops at column 28.
  text = text.substr(0, text.find("global_batch"));
  text = text.substr(0, text.find_last_not_of(' ') + 1);
  Status s = ParseText(text);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "<input>:4:28: Expected identifier, got: end of input (is a closing '}' missing?)");
}

TEST(ScenarioParse, TruncatedJsonReportsLineAndColumn) {
  // Ends after "nodes": 2 on line 2 without closing either object.
  Status s = ParseText("{\n  \"cluster\": {\"nodes\": 2", ScenarioFormat::kJson);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), StartsWith("<input>:2:"));
  EXPECT_THAT(s.message(), HasSubstr("JSON syntax error"));
}

TEST(ScenarioParse, JsonSyntaxErrorPointsAtTheBadCharacter) {
  // Line 3, column 12: the stray "x" after the number.
  Status s = ParseText("{\n  \"cluster\": {\n    \"nodes\": 2x\n  }\n}", ScenarioFormat::kJson);
  EXPECT_THAT(s.message(), StartsWith("<input>:3:15: JSON syntax error"));
}

TEST(ScenarioParse, JsonUnknownFieldsAreAllListedWithValidNames) {
  Status s = ParseText(R"({"cluster": {"nodez": 3}, "modle": {}})", ScenarioFormat::kJson);
  EXPECT_THAT(s.message(),
              HasSubstr("<input>: cluster.nodez: unknown field \"nodez\" in cluster; valid: "
                        "node_preset, node, nodes, fabric, vertices, links"));
  EXPECT_THAT(s.message(), HasSubstr("<input>: modle: unknown field \"modle\" in the scenario; "
                                     "valid: name, description, cluster, model, training, "
                                     "strategy"));
}

TEST(ScenarioParse, TextWrongTypeIsAParseError) {
  Status s = ParseText("cluster { nodes: \"eight\" }");
  // The position and the field path: protobuf's message gives only the position.
  EXPECT_THAT(s.message(),
              HasSubstr("<input>:1:18: cluster.nodes: Expected integer, got: \"eight\""));
}

TEST(ScenarioParse, JsonWrongTypesAreAllReportedWithPaths) {
  Status s = ParseText(R"({"cluster": {"nodes": "eight", "node": {"nvlink_bandwidth": 450}},
                          "training": {"sequence_parallel": "yes"}, "model": [1, 2]})",
                       ScenarioFormat::kJson);
  EXPECT_THAT(s.message(),
              HasSubstr("cluster.nodes: \"eight\": must be an integer from -2147483648 to "
                        "2147483647"));
  EXPECT_THAT(s.message(), HasSubstr("cluster.node.nvlink_bandwidth: 450: must be a string "
                                     "(quantities carry their unit, e.g. \"450 GB/s\")"));
  EXPECT_THAT(s.message(), HasSubstr("training.sequence_parallel: \"yes\": must be true or false"));
  EXPECT_THAT(s.message(), HasSubstr("model: array: must be an object {...}"));
}

TEST(ScenarioParse, JsonNumberFieldsTakeNumbersOrNumericStrings) {
  Status bad =
      ParseText(R"({"cluster": {"fabric": {"oversubscription": "lots"}}})", ScenarioFormat::kJson);
  EXPECT_THAT(bad.message(),
              HasSubstr("cluster.fabric.oversubscription: \"lots\": must be a number"));
  StatusOr<Scenario> good = LoadScenarioText(
      R"({"cluster": {"node_preset": "DGX-H100", "fabric": {"oversubscription": "2"}},
          "model": {"preset": "llama3-8b"}, "strategy": {"preset": "ddp"}})",
      ScenarioFormat::kJson, {});
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->cluster.fabric.oversubscription, 2.0);
}

TEST(ScenarioParse, JsonUnknownEnumNameListsValidNames) {
  Status s = ParseText(R"({"training": {"recompute": "FULL"}})", ScenarioFormat::kJson);
  EXPECT_THAT(s.message(), HasSubstr("training.recompute: \"FULL\": unknown value; valid: "
                                     "RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL"));
}

TEST(ScenarioParse, HugeIntegerInTextIsOutOfRange) {
  // 10^20 does not fit an int64 (max about 9.22e18).
  Status s = ParseText("model { parameter_count: 100000000000000000000 }");
  EXPECT_THAT(s.message(), HasSubstr("<input>:1:26: model.parameter_count: Integer out of range"));
}

TEST(ScenarioParse, HugeIntegerInJsonIsOutOfRange) {
  Status s =
      ParseText(R"({"model": {"parameter_count": 100000000000000000000}})", ScenarioFormat::kJson);
  EXPECT_THAT(s.message(), HasSubstr("model.parameter_count: 1e+20: must be an integer from "
                                     "-9223372036854775808 to 9223372036854775807"));
  Status s32 = ParseText(R"({"cluster": {"nodes": 99999999999}})", ScenarioFormat::kJson);
  EXPECT_THAT(s32.message(), HasSubstr("cluster.nodes: 99999999999: must be an integer from "
                                       "-2147483648 to 2147483647"));
}

TEST(ScenarioParse, EmptyInputIsRefusedClearly) {
  for (std::string_view text : {"", "  \n\t\n"}) {
    Status s = ParseText(text, ScenarioFormat::kAuto);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(),
              "<input>: the scenario is empty; it needs at least a cluster, a model and a "
              "strategy");
  }
}

TEST(ScenarioParse, CommentsOnlyTextReportsWhatIsMissing) {
  Status s = ParseText("# nothing here\n");
  EXPECT_THAT(s.message(), HasSubstr("cluster: (unset): a cluster is required"));
  EXPECT_THAT(s.message(), HasSubstr("model: (unset): a model is required"));
  EXPECT_THAT(s.message(), HasSubstr("strategy.preset: (unset): a strategy is required"));
}

TEST(ScenarioParse, BinaryGarbageIsAnErrorInEitherFormat) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 131 + 7) % 256));
  for (ScenarioFormat f :
       {ScenarioFormat::kAuto, ScenarioFormat::kTextProto, ScenarioFormat::kJson}) {
    Status s = ParseText(garbage, f);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), StartsWith("<input>:"));
  }
}

TEST(ScenarioParse, OversizedInputIsRefusedWithoutParsing) {
  // One byte over the 16 MiB limit.
  std::string big(static_cast<size_t>(kMaxScenarioBytes) + 1, ' ');
  Status s = ParseText(big);
  EXPECT_EQ(s.message(), "<input>: the scenario is 16.0 MiB; scenario files are limited to 16 MiB");
}

TEST(ScenarioParse, DeeplyNestedJsonIsRefused) {
  // 100k nested arrays: the schema walk stops at the first value that is not an object.
  std::string deep = "{\"cluster\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  Status s = ParseText(deep, ScenarioFormat::kJson);
  EXPECT_THAT(s.message(), HasSubstr("cluster: array: must be an object {...}"));
}

TEST(ScenarioParse, DeeplyNestedTextIsRefused) {
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += "cluster { ";
  Status s = ParseText(deep);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unknown field \"cluster\" in cluster"));
}

TEST(ScenarioParse, MissingFileIsNotFound) {
  StatusOr<Scenario> s = LoadScenarioFile(SourcePath("examples/does-not-exist.textproto"), {});
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("cannot open the scenario file"));
}

TEST(ScenarioParse, DirectoryIsNotAScenarioFile) {
  StatusOr<Scenario> s = LoadScenarioFile(SourcePath("examples"), {});
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("is a directory"));
}

TEST(ScenarioParse, DocumentRoundTripsThroughTextFormat) {
  StatusOr<ScenarioDocument> doc =
      ScenarioDocument::Parse(kValidJson, ScenarioFormat::kJson, "in.json");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  StatusOr<ScenarioDocument> again =
      ScenarioDocument::Parse(doc->ToTextProto(), ScenarioFormat::kTextProto, "in.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  StatusOr<Scenario> a = doc->Resolve();
  StatusOr<Scenario> b = again->Resolve();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Dump(*a), Dump(*b));
}

TEST(ScenarioParse, ShippedJsonExampleMatchesTheFileOnDisk) {
  // Guards the test above against reading an empty file by mistake.
  EXPECT_THAT(ReadAll(SourcePath("examples/llama3-70b-tp8-zero1.json")),
              HasSubstr("\"preset\": \"zero1\""));
}

}  // namespace
}  // namespace placesim::sim
