// End-to-end tests of the `placesim` command line, driven in-process through RunCli: exit
// codes, output formats, and that bad input never leaves a half-written file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "sim/cli/commands.h"
#include "sim/collectives/registry.h"

namespace placesim::sim {
namespace {

using ::testing::HasSubstr;

using cli_test::Example;
using cli_test::Outcome;
using cli_test::RunCommand;
using cli_test::WriteTemp;
using Result = Outcome;

Result RunPlacesim(const std::vector<std::string>& args) { return RunCommand(&RunCli, args); }

int64_t ModelStateBytes(const nlohmann::json& j) {
  return j["memory"]["params_bytes"].get<int64_t>() + j["memory"]["grads_bytes"].get<int64_t>() +
         j["memory"]["optimizer_bytes"].get<int64_t>();
}

TEST(AnalyzeCommand, ReproducesTheZeroPaperModelStatesPerStage) {
  // ZeRO (Rajbhandari et al. 2020), Figure 1: Ψ = 7.5e9, K = 12, N_d = 64, bf16/fp16 mixed
  // precision (2Ψ params + 2Ψ grads + KΨ optimizer):
  //   ddp    (2 + 2 + 12)Ψ           = 120 GB
  //   zero1  (2 + 2)Ψ + 12Ψ/64       = 30e9 + 1.40625e9 = 31.40625 GB
  //   zero2  2Ψ + (2 + 12)Ψ/64       = 15e9 + 1.640625e9 = 16.640625 GB
  //   zero3  16Ψ/64                  = 1.875 GB
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"ddp", 120'000'000'000},
      {"zero1", 31'406'250'000},
      {"zero2", 16'640'625'000},
      {"zero3", 1'875'000'000},
  };
  for (const auto& [preset, expected] : cases) {
    Result r = RunPlacesim({"analyze", Example("zero-7.5b.textproto"), "--format", "json", "--set",
                            "strategy.preset=" + preset});
    ASSERT_EQ(r.code, kExitOk) << preset << ": " << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(ModelStateBytes(j), expected) << preset;
    EXPECT_TRUE(j["correctness"]["ok"].get<bool>());
  }
}

TEST(AnalyzeCommand, JsonHasTheDocumentedStableKeys) {
  Result r =
      RunPlacesim({"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes",
                          "total_bytes", "fits"}) {
    EXPECT_TRUE(j["memory"].contains(key)) << key;
  }
  EXPECT_TRUE(j["comm"].contains("bytes_per_device_per_step"));
  EXPECT_TRUE(j["correctness"].contains("ok"));
}

TEST(AnalyzeCommand, DistributedSavedActivationsShowInTheReportAndItsJson) {
  // Korthikanti et al.'s 22B (48 layers, h 6144, s 2048, micro-batch 4, one micro-batch, tp 8,
  // full recompute). Each layer keeps its input, 2 s b h = 100,663,296 bytes; distributed, 1/8
  // of it. At the peak the layer being recomputed holds its whole input again, so the other 47
  // save 7/8 each: 47 x 88,080,384 = 4,139,778,048 bytes. One all-gather of the input per
  // layer and micro-batch: 48.
  const std::string scenario = Example("korthikanti-22b-tp8.textproto");
  Result plain = RunPlacesim({"analyze", scenario, "--format", "json"});
  Result spread = RunPlacesim({"analyze", scenario, "--format", "json", "--set",
                               "training.distribute_saved_activations=true"});
  ASSERT_EQ(plain.code, kExitOk) << plain.err;
  ASSERT_EQ(spread.code, kExitOk) << spread.err;
  const nlohmann::json a = nlohmann::json::parse(plain.out);
  const nlohmann::json b = nlohmann::json::parse(spread.out);
  EXPECT_FALSE(a["scenario"]["training"].contains("distribute_saved_activations"));
  EXPECT_TRUE(b["scenario"]["training"]["distribute_saved_activations"].get<bool>());
  EXPECT_EQ(a["memory"]["activations_bytes"].get<int64_t>() -
                b["memory"]["activations_bytes"].get<int64_t>(),
            int64_t{4'139'778'048});
  int64_t gathers = 0;
  for (const auto& c : b["comm"]["collectives"]) {
    if (c["purpose"].get<std::string>().find("distributed saved input") == std::string::npos)
      continue;
    EXPECT_EQ(c["kind"], "all-gather");
    EXPECT_EQ(c["buffer_bytes"].get<int64_t>(), 100'663'296);
    gathers += c["count"].get<int64_t>();
  }
  EXPECT_EQ(gathers, 48);
  Result text =
      RunPlacesim({"analyze", scenario, "--set", "training.distribute_saved_activations=true"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_THAT(text.out, HasSubstr(", saved activations distributed over tp"));
}

TEST(AnalyzeCommand, TextAndJsonScenariosGiveIdenticalReports) {
  Result text =
      RunPlacesim({"analyze", Example("llama3-70b-tp8-zero1.textproto"), "--format", "json"});
  Result json = RunPlacesim({"analyze", Example("llama3-70b-tp8-zero1.json"), "--format", "json"});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  ASSERT_EQ(json.code, kExitOk) << json.err;
  EXPECT_EQ(text.out, json.out);
}

TEST(AnalyzeCommand, RunsAreByteIdentical) {
  for (const char* format : {"table", "json", "csv"}) {
    Result a = RunPlacesim({"analyze", Example("gpt3-175b-tp8-pp8.textproto"), "--format", format});
    Result b = RunPlacesim({"analyze", Example("gpt3-175b-tp8-pp8.textproto"), "--format", format});
    EXPECT_EQ(a.code, kExitOk) << a.err;
    EXPECT_EQ(a.out, b.out) << format;
  }
}

TEST(AnalyzeCommand, CsvHasAHeaderAndOneRowPerPipelineStage) {
  // GPT-3 175B on pp = 8: eight rank roles (one per stage), plus the header row.
  Result r = RunPlacesim({"analyze", Example("gpt3-175b-tp8-pp8.textproto"), "--format", "csv"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 9);
}

TEST(AnalyzeCommand, AnIncorrectStrategyPrintsTheReportAndExitsThree) {
  // Gradients sharded over dp while the optimizer is replicated: each device would update
  // the full parameters from a gradient it holds only a shard of — gradient integrity fails.
  std::string path = WriteTemp("bad-placement.textproto", R"pb(
    cluster { node_preset: "DGX-H100" nodes: 1 }
    model { preset: "llama2-7b" }
    training { micro_batch: 1 global_batch: 8 }
    strategy {
      preset: "custom"
      placements {
        axis: AXIS_DP
        params { mode: MODE_REPLICATED }
        optimizer { mode: MODE_REPLICATED }
        grads { mode: MODE_SHARDED }
        activations { mode: MODE_REPLICATED }
      }
    }
  )pb");
  Result r = RunPlacesim({"analyze", path, "--format", "json"});
  EXPECT_EQ(r.code, kExitIncorrectStrategy) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["correctness"]["ok"].get<bool>());
  EXPECT_THAT(r.out, HasSubstr("grads"));
}

TEST(AnalyzeCommand, UnevenStagesInterleave) {
  // The Llama 3 405B example's 7, 8 x 14, 7 split under interleaved 1F1B with v = 2: every
  // stage keeps its count, and the bubble is the schedule's (p - 1) / (v m) = 15 / 128 for
  // m = 2048 / (1 x dp 32) = 64. With v = 8 the first stage's 7 layers cannot fill 8 chunks:
  // exit 2 naming the field, for analyze and simulate alike.
  const std::vector<std::string> interleaved = {
      "--set", "training.pipeline_schedule=interleaved_1f1b", "--set", "training.virtual_stages=2"};
  std::vector<std::string> args = {"analyze", Example("llama3-405b-4d-8192gpu.textproto"),
                                   "--format", "json"};
  args.insert(args.end(), interleaved.begin(), interleaved.end());
  Result r = RunPlacesim(args);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pipeline"]["virtual_stages"], 2);
  EXPECT_DOUBLE_EQ(j["pipeline"]["bubble_fraction"].get<double>(), 15.0 / 128);
  ASSERT_EQ(j["roles"].size(), 16u);
  for (const nlohmann::json& role : j["roles"]) {
    const int stage = role["first_stage"].get<int>();
    EXPECT_EQ(role["layers"].get<int>(), stage == 0 || stage == 15 ? 7 : 8) << stage;
  }
  for (const std::string command : {"analyze", "simulate"}) {
    Result bad = RunPlacesim({command, Example("llama3-405b-4d-8192gpu.textproto"), "--set",
                              "training.pipeline_schedule=interleaved_1f1b", "--set",
                              "training.virtual_stages=8"});
    EXPECT_EQ(bad.code, kExitBadInput) << command;
    EXPECT_THAT(bad.err, HasSubstr("strategy.pipeline_stage_layers: [7, 8, 8, 8, 8, 8, 8, 8, 8, "
                                   "8, 8, 8, 8, 8, 8, 7]: every stage needs at least "
                                   "virtual_stages = 8 layers"))
        << command;
  }
}

TEST(AnalyzeCommand, BadInputExitsTwoWithTheReason) {
  Result missing = RunPlacesim({"analyze", Example("no-such-file.textproto")});
  EXPECT_EQ(missing.code, kExitBadInput);
  EXPECT_THAT(missing.err, HasSubstr("no-such-file.textproto"));

  Result bad_set =
      RunPlacesim({"analyze", Example("zero-7.5b.textproto"), "--set", "cluster.nodez=3"});
  EXPECT_EQ(bad_set.code, kExitBadInput);
  EXPECT_THAT(bad_set.err, HasSubstr("nodez"));

  Result bad_format = RunPlacesim({"analyze", Example("zero-7.5b.textproto"), "--format", "xml"});
  EXPECT_EQ(bad_format.code, kExitBadInput);
  EXPECT_THAT(bad_format.err, HasSubstr("valid: table, json, csv"));

  Result no_scenario = RunPlacesim({"analyze"});
  EXPECT_EQ(no_scenario.code, kExitBadInput);

  Result unknown_flag = RunPlacesim({"analyze", Example("zero-7.5b.textproto"), "--frobnicate"});
  EXPECT_EQ(unknown_flag.code, kExitBadInput);
  EXPECT_THAT(unknown_flag.err, HasSubstr("frobnicate"));
}

TEST(Cli, UnknownCommandListsTheValidOnes) {
  Result r = RunPlacesim({"simulat"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("unknown command \"simulat\"; valid: analyze, simulate, sweep, "
                               "merge, compare, search, topology, presets"));
  EXPECT_EQ(RunPlacesim({}).code, kExitBadInput);
  EXPECT_EQ(RunPlacesim({"--help"}).code, kExitOk);
}

// Llama-3-8B under FSDP on one DGX-H100, full recompute: a data-parallel scenario that the
// simulator replays op by op.
constexpr const char* kFsdpScenario = R"pb(
  cluster { node_preset: "DGX-H100" nodes: 1 }
  model { preset: "llama3-8b" seq_len: 4096 }
  training { micro_batch: 1 global_batch: 32 recompute: RECOMPUTE_FULL }
  strategy { preset: "fsdp" }
)pb";

TEST(SimulateCommand, ReportsStepTimeAndUtilisationInJson) {
  std::string path = WriteTemp("fsdp.textproto", kFsdpScenario);
  Result r = RunPlacesim({"simulate", path, "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"step_time_s", "mfu", "hfu", "tokens_per_second", "peak_memory_bytes", "exposed_comm_s"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["comm"].contains("bytes_per_device_per_step"));
  const double step = j["step_time_s"].get<double>();
  EXPECT_GE(step, j["compute_s"].get<double>());
  EXPECT_LE(j["exposed_comm_s"].get<double>(), step);
  // HFU / MFU = hardware / model FLOPs. Under full recompute the layers run four passes
  // instead of three and the logit layer (never recomputed) three either way (Narayanan et
  // al. 2021, eq. 3): (4 X + 6 B s h V) / (3 X + 6 B s h V), X = B s l (A + M + 4 s h) the
  // layers' forward, with eq. 3's 24 h^2 per token taken from the model's shapes (model.h).
  // Llama-3-8B: l = 32, h = 4096, 8 KV heads of 128 (kd = 1024), gated f = 14336,
  // V = 128256; here B = 32, s = 4096:
  //   A = 2h (h + 2kd) + 2h^2 (QKV and output projection), M = 2 x 3hf (gated MLP).
  const double B = 32, s = 4096, l = 32, h = 4096, kd = 1024, f = 14336, V = 128256;
  const double A = 2 * h * (h + 2 * kd) + 2 * h * h;
  const double M = 2 * 3 * h * f;
  const double X = B * s * l * (A + M + 4 * s * h);
  const double logits = 6.0 * B * s * h * V;
  EXPECT_NEAR(j["hfu"].get<double>() / j["mfu"].get<double>(), (4 * X + logits) / (3 * X + logits),
              1e-9);
  // tokens/s = global batch x sequence length / step time = 32 x 4096 / step.
  EXPECT_NEAR(j["tokens_per_second"].get<double>(), 32.0 * 4096.0 / step, 1e-6 * 32 * 4096 / step);
}

TEST(SimulateCommand, RunsAndTracesAreByteIdentical) {
  std::string path = WriteTemp("fsdp-twice.textproto", kFsdpScenario);
  std::string t1 = cli_test::TempPath("trace1.json");
  std::string t2 = cli_test::TempPath("trace2.json");
  Result a = RunPlacesim({"simulate", path, "--trace", t1});
  Result b = RunPlacesim({"simulate", path, "--trace", t2});
  ASSERT_EQ(a.code, kExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
  std::ifstream f1(t1), f2(t2);
  std::stringstream s1, s2;
  s1 << f1.rdbuf();
  s2 << f2.rdbuf();
  EXPECT_FALSE(s1.str().empty());
  EXPECT_EQ(s1.str(), s2.str());
  nlohmann::json trace = nlohmann::json::parse(s1.str());
  EXPECT_FALSE(trace["traceEvents"].empty());
}

TEST(SimulateCommand, CsvHasAHeaderAndOneRowPerRole) {
  // Data parallelism alone makes every rank play the same role: one row after the header.
  std::string path = WriteTemp("fsdp-csv.textproto", kFsdpScenario);
  Result r = RunPlacesim({"simulate", path, "--format", "csv"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  EXPECT_THAT(r.out, HasSubstr("step_time_s,mfu,hfu"));
}

TEST(SimulateCommand, TraceRanksWritesOneProcessPerRequestedRank) {
  // FSDP on one node: all 8 ranks play one role, so ranks 0-3 and 6 are 5 processes.
  std::string path = WriteTemp("fsdp-ranks.textproto", kFsdpScenario);
  std::string trace = cli_test::TempPath("ranks.json");
  Result r = RunPlacesim({"simulate", path, "--trace", trace, "--trace-ranks", "0-3,6"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  std::ifstream f(trace);
  nlohmann::json j = nlohmann::json::parse(f);
  std::set<int64_t> pids;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") == "X") pids.insert(e["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 5u);
}

TEST(SimulateCommand, BadTraceRanksAreRefusedBeforeRunning) {
  std::string path = WriteTemp("fsdp-badranks.textproto", kFsdpScenario);
  std::string trace = cli_test::TempPath("never-ranks.json");
  std::filesystem::remove(trace);
  Result out_of_range = RunPlacesim({"simulate", path, "--trace", trace, "--trace-ranks", "0-8"});
  EXPECT_EQ(out_of_range.code, kExitBadInput);
  EXPECT_THAT(out_of_range.err, HasSubstr("rank 8 does not exist"));
  Result backwards = RunPlacesim({"simulate", path, "--trace", trace, "--trace-ranks", "5-2"});
  EXPECT_EQ(backwards.code, kExitBadInput);
  EXPECT_THAT(backwards.err, HasSubstr("\"5-2\" is not a range"));
  Result without_trace = RunPlacesim({"simulate", path, "--trace-ranks", "0"});
  EXPECT_EQ(without_trace.code, kExitBadInput);
  EXPECT_FALSE(std::filesystem::exists(trace));
}

TEST(SimulateCommand, NetworkFlagAndScenarioFieldSelectTheSameModel) {
  // --network analytic and simulation.network_model=analytic must run the same simulation,
  // and the flag must win over the scenario's setting.
  std::string path = WriteTemp("fsdp-net.textproto", kFsdpScenario);
  Result flag = RunPlacesim({"simulate", path, "--format", "json", "--network", "analytic"});
  Result field = RunPlacesim(
      {"simulate", path, "--format", "json", "--set", "simulation.network_model=analytic"});
  Result overridden = RunPlacesim({"simulate", path, "--format", "json", "--set",
                                   "simulation.network_model=flow", "--network", "analytic"});
  ASSERT_EQ(flag.code, kExitOk) << flag.err;
  EXPECT_EQ(flag.out, field.out);
  EXPECT_EQ(flag.out, overridden.out);
  Result bad = RunPlacesim({"simulate", path, "--network", "packet"});
  EXPECT_EQ(bad.code, kExitBadInput);
  EXPECT_THAT(bad.err, HasSubstr("valid: flow, analytic"));
}

TEST(SimulateCommand, ExpertParallelScenariosAreSimulated) {
  // The tiny GPT made a mixture of 4 experts, top-2, under DDP with ep = 2 = dp: every layer
  // dispatches and combines its tokens by all-to-all, 4 per layer and micro-batch (2 layers,
  // 2 micro-batches: 16).
  Result r = RunPlacesim({"simulate", Example("tiny-gpt-zero3-2gpu.textproto"), "--set",
                          "strategy.preset=ddp", "--set", "model.experts=4", "--set",
                          "model.top_k=2", "--set", "strategy.ep=2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("all-to-all"));
  EXPECT_THAT(r.out, HasSubstr("16 calls"));
  EXPECT_THAT(r.out, HasSubstr("(16 pairwise)"));
}

TEST(SimulateCommand, ExpertParallelScenariosWithOffloadedStatesAreRefusedWithTheReason) {
  // ZeRO-Offload keeps gradients and optimizer on the host: not generated with ep > 1 yet.
  Result r = RunPlacesim({"simulate", Example("tiny-gpt-zero3-2gpu.textproto"), "--set",
                          "model.preset=mixtral-8x7b", "--set", "strategy.preset=zero-offload",
                          "--set", "strategy.ep=2"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("ep=2 with params R, grads O, optimizer O"));
}

TEST(SimulateCommand, AScheduleBeyondTheOpLimitIsFoldedQuickly) {
  // 8e7 / (4 x dp 2) = 1e7 micro-batches: valid training fields, but the step's schedule
  // would take gigabytes; it is never built: the step is folded from replays of 4, 5 and 6
  // micro-batches (pp 1: period 1, at least 4 in; sim/study/fold.h), and says so.
  Result r = RunPlacesim({"simulate", Example("tiny-gpt-zero3-2gpu.textproto"), "--set",
                          "training.global_batch=80000000"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("folded          10000000 micro-batches are over the op limit: "
                               "replayed at 4, 5 and 6"));
  // With a trace there is no timeline to write: refused, with the limit, before it is built.
  const std::string trace = (std::filesystem::temp_directory_path() / "fold-trace.json").string();
  Result traced = RunPlacesim({"simulate", Example("tiny-gpt-zero3-2gpu.textproto"), "--set",
                               "training.global_batch=80000000", "--trace", trace});
  EXPECT_EQ(traced.code, kExitBadInput);
  EXPECT_THAT(traced.err, HasSubstr("10000000 micro-batches"));
  EXPECT_THAT(traced.err, HasSubstr("the limit is 4194304"));
  EXPECT_THAT(traced.err, HasSubstr("drop --trace"));
  std::filesystem::remove(trace);
}

// A step longer than 2^63 - 1 ps (about 106.75 days) is refused with the limit: never an internal
// CHECK (time wrapped into the past), never a false "deadlocked" (a transfer whose completion
// saturated at the "never" time). Every field is inside its range: only their product is absurd.
TEST(SimulateCommand, AStepPastTheRepresentableTimeIsRefusedWithTheLimit) {
  const std::vector<std::vector<std::string>> cases = {
      // 22B parameters at 1 GFLOP/s × 0.001: 6 × 22e9 × 2048 tokens / 8 GPUs = 3.4e13 FLOP per
      // GPU per sequence, 3.4e7 s at 1e6 FLOP/s, past the 9.2e6 s int64 picoseconds hold.
      {Example("korthikanti-22b-tp8.textproto"), "--set", "cluster.node.gpu.peak_bf16=1 GFLOP/s",
       "--set", "cluster.node.gpu.matmul_efficiency=0.001"},
      // HBM at 1 MB/s × 0.001: each GPU's 22e9 / 8 bf16 weights alone (5.5 GB) are read in the
      // forward and twice in the backward pass, 1.65e10 B at 1e3 B/s = 1.65e7 s.
      {Example("korthikanti-22b-tp8.textproto"), "--set", "cluster.node.gpu.hbm_bandwidth=1 MB/s",
       "--set", "cluster.node.gpu.memory_efficiency=0.001"},
  };
  for (const std::vector<std::string>& c : cases) {
    std::vector<std::string> args = {"simulate"};
    args.insert(args.end(), c.begin(), c.end());
    Result r = RunPlacesim(args);
    EXPECT_EQ(r.code, kExitBadInput) << c.back() << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("simulated time exceeds its limit")) << c.back();
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("deadlock"))) << c.back();
  }
}

// The issue's reproducers of that failure (items 4 and 5) set one field far outside anything
// hardware can be: each is refused before simulating, naming the field, its value and range.
TEST(SimulateCommand, TheTimeOverflowReproducersAreRefusedAtTheirField) {
  const std::vector<std::vector<std::string>> cases = {
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.gpu.matmul_efficiency=1e-8"},
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.gpu.memory_efficiency=1e-12"},
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.gpu.kernel_overhead=1e6 s"},
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.gpu.hbm_bandwidth=1 b/s"},
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.gpu.peak_bf16=1 FLOP/s"},
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.nvlink_bandwidth=1 Kb/s"},
      {Example("korthikanti-22b-tp8.textproto"), "cluster.node.nvlink_latency=1e6 s"},
      {Example("llama3-8b-fsdp.textproto"), "cluster.node.nvlink_latency=1e6 s"},
  };
  for (const std::vector<std::string>& c : cases) {
    Result r = RunPlacesim({"simulate", c[0], "--set", c[1]});
    const std::string field = c[1].substr(0, c[1].find('='));
    EXPECT_EQ(r.code, kExitBadInput) << c[1] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(field + ": ")) << c[1];
    EXPECT_THAT(r.err, HasSubstr("must be")) << c[1];
    EXPECT_THAT(r.err, HasSubstr("between")) << c[1];
  }
}

TEST(SimulateCommand, ATraceOntoAFullDeviceNamesThePathAndTheErrorAndKeepsTheDevice) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "/dev/full is not writable here";
  Result r =
      RunPlacesim({"simulate", Example("tiny-gpt-zero3-2gpu.textproto"), "--trace", "/dev/full"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("failed writing \"/dev/full\": No space left on device"));
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));  // still the device, not a regular file
}

TEST(SimulateCommand, ATraceToADirectorySaysSoAndWritesNothing) {
  std::string dir = cli_test::TempPath("trace-dir");
  std::filesystem::create_directories(dir);
  Result r = RunPlacesim({"simulate", Example("tiny-gpt-zero3-2gpu.textproto"), "--trace", dir});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("it is a directory"));
  EXPECT_FALSE(cli_test::LeftTemporary(dir));
}

TEST(CompareAndMerge, ADirectoryIsBadInputNotAnInternalError) {
  const std::string dir = ::testing::TempDir();
  Result compare = RunPlacesim({"compare", dir, dir});
  EXPECT_EQ(compare.code, kExitBadInput);
  EXPECT_THAT(compare.err, HasSubstr("is a directory"));
  Result merge = RunPlacesim({"merge", dir});
  EXPECT_EQ(merge.code, kExitBadInput);
  EXPECT_THAT(merge.err, HasSubstr("is a directory"));
}

TEST(TopologyCommand, WritesTheDotFileAndASummary) {
  std::string dot = cli_test::TempPath("cluster.dot");
  std::filesystem::remove(dot);
  Result r = RunPlacesim({"topology", Example("llama3-70b-tp8-zero1.textproto"), "--dot", dot});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("64"));  // 8 DGX-H100 nodes x 8 GPUs
  std::ifstream f(dot);
  std::stringstream contents;
  contents << f.rdbuf();
  EXPECT_THAT(contents.str(), HasSubstr("digraph"));
  EXPECT_FALSE(cli_test::LeftTemporary(dot));
}

TEST(TopologyCommand, JsonCountsEveryGpu) {
  // 8 DGX-H100 nodes of 8 GPUs.
  Result r =
      RunPlacesim({"topology", Example("llama3-70b-tp8-zero1.textproto"), "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"].get<int>(), 64);
  EXPECT_EQ(j["nodes"].get<int>(), 8);
}

TEST(TopologyCommand, AnInvalidScenarioLeavesNoDotFile) {
  std::string dot = cli_test::TempPath("never.dot");
  std::filesystem::remove(dot);
  Result r = RunPlacesim(
      {"topology", Example("zero-7.5b.textproto"), "--set", "cluster.nodes=0", "--dot", dot});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("cluster.nodes"));
  EXPECT_FALSE(std::filesystem::exists(dot));
}

TEST(PresetsCommand, ListsEveryGroupInJson) {
  Result r = RunPlacesim({"presets", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* group : {"devices", "nodes", "models", "strategies"}) {
    ASSERT_TRUE(j.contains(group)) << group;
    EXPECT_FALSE(j[group].empty()) << group;
    for (const auto& e : j[group]) EXPECT_FALSE(e["description"].get<std::string>().empty());
  }
}

TEST(PresetsCommand, ListsTheCollectiveAlgorithmsAndNetworkModelsWithTheirSources) {
  // The registered ones (sim/collectives/registry.h, sim/network/network_model.h), "auto" first.
  Result r = RunPlacesim({"presets", "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  for (auto [group, names] :
       {std::pair{"collective_algorithms",
                  std::vector<std::string>{"auto", "ring", "tree", "hierarchical", "pairwise"}},
        std::pair{"network_models", std::vector<std::string>{"flow", "analytic"}}}) {
    ASSERT_TRUE(j.contains(group)) << group;
    std::vector<std::string> listed;
    for (const auto& e : j[group]) {
      listed.push_back(e["name"]);
      EXPECT_FALSE(e["description"].get<std::string>().empty()) << e["name"];
      EXPECT_FALSE(e["source"].get<std::string>().empty()) << e["name"];
    }
    EXPECT_EQ(listed, names) << group;
  }
  Result table = RunPlacesim({"presets"});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_THAT(table.out, HasSubstr("\ncollective algorithms:\n  auto "));
  EXPECT_THAT(table.out, HasSubstr("\n  hierarchical  intra-node rings"));
  EXPECT_THAT(table.out, HasSubstr("\nnetwork models:\n  flow "));
}

TEST(SimulateCommand, AnUnknownCollectiveAlgorithmNamesTheFieldAndTheValidOnes) {
  // The valid names are the registry's ("auto" first): the schema must name every registered
  // algorithm, and scenarios can force each of them.
  const collectives::Registry& registry = collectives::BuiltinRegistry();
  ASSERT_EQ(registry.ValidNames(), "auto, ring, tree, hierarchical, pairwise");
  Result r = RunPlacesim({"simulate", Example("llama2-7b-ddp.textproto"), "--set",
                          "simulation.collective_algorithm=foo"});
  EXPECT_EQ(r.code, kExitBadInput);
  // In the registry's words (PluginRegistry::Lookup), behind the field path.
  EXPECT_THAT(r.err, HasSubstr("simulation.collective_algorithm: unknown collective algorithm "
                               "\"foo\"; valid: " +
                               registry.ValidNames()));
  for (int id = 0; id < registry.size(); ++id) {
    const std::string name(registry.at(id).name());
    Result ok = RunPlacesim({"analyze", Example("llama2-7b-ddp.textproto"), "--set",
                             "simulation.collective_algorithm=" + name});
    EXPECT_EQ(ok.code, kExitOk) << name << ": " << ok.err;
  }
}

}  // namespace
}  // namespace placesim::sim
