// `placesim export` and `search --export`: three shipped examples exported to Megatron-LM,
// DeepSpeed and PyTorch FSDP and checked field by field (every field name against the
// framework's documented options in documented_options.h, every value derived in a comment
// from the scenario), the refusals of what a framework cannot express, bad --to, determinism
// and the atomic -o.
#include "sim/export/export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "placesim/placesim.h"
#include "sim/cli/commands.h"
#include "tests/export/documented_options.h"

namespace placesim::exporting {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace doc = documented;

std::string Example(const std::string& name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/" + name + ".textproto";
}

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Placesim(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = sim::RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

std::string TempPath(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/" + info->test_suite_name() + "." + info->name() + "-" + name;
}

// The flags of the MEGATRON_ARGS array: "--name" -> value ("" for a switch).
std::map<std::string, std::string> MegatronFlags(const std::string& text) {
  std::map<std::string, std::string> flags;
  static const std::regex kLine(R"(^  (--[a-z0-9-]+)(?: ([^ #]+))?)");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kLine)) flags[m[1]] = m[2];
  }
  return flags;
}

void ExpectKeysDocumented(const nlohmann::json& object, const std::set<std::string>& allowed,
                          const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    EXPECT_TRUE(allowed.count(key)) << where << "." << key << " is not a documented option";
  }
}

// ------------------------------------------------------------------------------ Megatron-LM
// llama3-70b-tp8-zero1: 64 H100s, tp 8, dp 8 with ZeRO-1, sequence parallel, selective
// recompute, flash attention, Llama-3-70B (80 layers, hidden 8192, ffn 28672, 64 heads, 8 KV
// heads, seq 8192), micro-batch 1, global batch 512, bf16 mixed, AdamW, no bucket set.
TEST(ExportMegatron, Llama70bTp8Zero1FieldByField) {
  Outcome r = Placesim({"export", Example("llama3-70b-tp8-zero1"), "--to", "megatron"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const auto flags = MegatronFlags(r.out);
  for (const auto& [name, value] : flags) {
    EXPECT_TRUE(doc::kMegatronFlags.count(name)) << name << " is not in arguments.py";
  }
  EXPECT_EQ(flags.at("--tensor-model-parallel-size"), "8");    // strategy.tp
  EXPECT_EQ(flags.at("--pipeline-model-parallel-size"), "1");  // pp unset
  EXPECT_EQ(flags.at("--context-parallel-size"), "1");
  EXPECT_TRUE(flags.count("--sequence-parallel"));  // training.sequence_parallel, tp > 1
  // zero1 on dp: Θ R, Ω S, G R — Megatron's distributed optimizer shards Ω over dp.
  EXPECT_TRUE(flags.count("--use-distributed-optimizer"));
  EXPECT_FALSE(flags.count("--use-megatron-fsdp"));
  // Θ replicated over dp 8, reduced as the simulation does for the zero1 preset: Megatron-LM's
  // default, overlap_grad_reduce false, so one bucket after the backward and no bucket flag
  // (GradientSyncFollowsTheSimulatedOverlapAndBucket covers the overlapped case).
  EXPECT_FALSE(flags.count("--overlap-grad-reduce"));
  EXPECT_FALSE(flags.count("--ddp-bucket-size"));
  EXPECT_EQ(flags.at("--num-layers"), "80");
  EXPECT_EQ(flags.at("--hidden-size"), "8192");
  EXPECT_EQ(flags.at("--ffn-hidden-size"), "28672");
  EXPECT_EQ(flags.at("--num-attention-heads"), "64");
  EXPECT_TRUE(flags.count("--group-query-attention"));  // 8 KV heads < 64 heads
  EXPECT_EQ(flags.at("--num-query-groups"), "8");
  EXPECT_EQ(flags.at("--seq-length"), "8192");
  EXPECT_EQ(flags.at("--max-position-embeddings"), "8192");
  EXPECT_TRUE(flags.count("--swiglu"));                               // gated MLP
  EXPECT_TRUE(flags.count("--untie-embeddings-and-output-weights"));  // Llama 3 unties them
  EXPECT_EQ(flags.at("--normalization"), "RMSNorm");
  EXPECT_EQ(flags.at("--position-embedding-type"), "rope");
  EXPECT_EQ(flags.at("--micro-batch-size"), "1");
  EXPECT_EQ(flags.at("--global-batch-size"), "512");
  EXPECT_TRUE(flags.count("--bf16"));
  EXPECT_FALSE(flags.count("--fp16"));
  EXPECT_EQ(flags.at("--optimizer"), "adam");  // AdamW: Megatron's adam, decoupled decay
  EXPECT_EQ(flags.at("--recompute-granularity"), "selective");
  EXPECT_FALSE(flags.count("--recompute-method"));  // only with full recompute
  EXPECT_EQ(flags.at("--attention-backend"), "flash");
  // Values that are names come from the flags' documented choices.
  EXPECT_TRUE(doc::kMegatronRecomputeGranularity.count(flags.at("--recompute-granularity")));
  EXPECT_TRUE(doc::kMegatronOptimizer.count(flags.at("--optimizer")));
  EXPECT_TRUE(doc::kMegatronAttentionBackend.count(flags.at("--attention-backend")));
  EXPECT_TRUE(doc::kMegatronNormalization.count(flags.at("--normalization")));
  EXPECT_TRUE(doc::kMegatronPositionEmbedding.count(flags.at("--position-embedding-type")));
  // No pipeline: no virtual stages, no rank-order flag (pp 1 orders nothing).
  EXPECT_FALSE(flags.count("--num-layers-per-virtual-pipeline-stage"));
  EXPECT_FALSE(flags.count("--use-tp-pp-dp-mapping"));
}

// The bucket the simulation of the zero1 preset uses is what the export asks for. With
// simulation.overlap_grad_reduce true and no bucket set: Megatron-LM's own default,
// max(40,000,000, 1,000,000 x dp 8) = 40,000,000 parameters. A bucket set in the scenario wins
// over it: 50 MiB of 2-byte gradients = 52428800 / 2 = 26214400 parameters. Without overlap a
// set bucket cannot be carried over (Megatron-LM makes the buffer one bucket): a note says so.
// training.attention_kernel picks Megatron's backend: "fused" is Transformer Engine's cuDNN
// fused attention, "flash" the flash-attn kernels (and the default, unchanged).
TEST(ExportMegatron, AttentionKernelPicksTheBackend) {
  const std::string scenario = Example("llama3-70b-tp8-zero1");
  const auto backend = [&](const char* kernel) {
    Outcome r = Placesim({"export", scenario, "--to", "megatron", "--set",
                          std::string("training.attention_kernel=") + kernel});
    EXPECT_EQ(r.code, sim::kExitOk) << r.err;
    return MegatronFlags(r.out).at("--attention-backend");
  };
  EXPECT_EQ(backend("cudnn"), "fused");
  EXPECT_EQ(backend("flash_attention_2"), "flash");
  EXPECT_TRUE(doc::kMegatronAttentionBackend.count("fused"));
}

TEST(ExportMegatron, GradientSyncFollowsTheSimulatedOverlapAndBucket) {
  const std::string scenario = Example("llama3-70b-tp8-zero1");
  Outcome r = Placesim(
      {"export", scenario, "--to", "megatron", "--set", "simulation.overlap_grad_reduce=true"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  auto flags = MegatronFlags(r.out);
  EXPECT_TRUE(flags.count("--overlap-grad-reduce"));
  EXPECT_EQ(flags.at("--ddp-bucket-size"), "40000000");
  r = Placesim({"export", scenario, "--to", "megatron", "--set",
                "simulation.overlap_grad_reduce=true", "--set",
                "simulation.gradient_bucket_size=50 MiB"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  EXPECT_EQ(MegatronFlags(r.out).at("--ddp-bucket-size"), "26214400");
  r = Placesim(
      {"export", scenario, "--to", "megatron", "--set", "simulation.gradient_bucket_size=50 MiB"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  EXPECT_FALSE(MegatronFlags(r.out).count("--ddp-bucket-size"));
  EXPECT_THAT(r.out + r.err,
              HasSubstr("simulation.gradient_bucket_size 52428800 bytes is not exported"));
}

// training.main_grads_fp32: Megatron-LM keeps fp32 main grads under --bf16 by default
// (arguments.py: bf16 forces accumulate_allreduce_grads_in_fp32 unless --grad-reduce-in-bf16),
// so the flag that turns them off disappears; under --fp16 they are asked for. A bucket of
// 25 MiB = 26214400 bytes, reduced during backward, holds 26214400 / 4 = 6553600 fp32 gradients.
TEST(ExportMegatron, Fp32MainGradsDropGradReduceInBf16) {
  const std::string scenario = Example("llama3-70b-tp8-zero1");
  Outcome r = Placesim(
      {"export", scenario, "--to", "megatron", "--set", "training.main_grads_fp32=true", "--set",
       "simulation.overlap_grad_reduce=true", "--set", "simulation.gradient_bucket_size=25 MiB"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  auto flags = MegatronFlags(r.out);
  EXPECT_TRUE(flags.count("--bf16"));
  EXPECT_FALSE(flags.count("--grad-reduce-in-bf16"));
  EXPECT_FALSE(flags.count("--accumulate-allreduce-grads-in-fp32"));
  EXPECT_EQ(flags.at("--ddp-bucket-size"), "6553600");
  r = Placesim({"export", scenario, "--to", "megatron", "--set", "training.main_grads_fp32=true",
                "--set", "training.precision=PRECISION_FP16_MIXED"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  flags = MegatronFlags(r.out);
  EXPECT_TRUE(flags.count("--fp16"));
  EXPECT_TRUE(flags.count("--accumulate-allreduce-grads-in-fp32"));
  for (const auto& [name, value] : flags) {
    EXPECT_TRUE(doc::kMegatronFlags.count(name)) << name << " is not in arguments.py";
  }
  // Without it the bf16 export keeps saying 2-byte gradients.
  flags = MegatronFlags(Placesim({"export", scenario, "--to", "megatron"}).out);
  EXPECT_TRUE(flags.count("--grad-reduce-in-bf16"));
}

// gpt3-175b-tp8-pp8 interleaved with 2 virtual stages: 96 layers / (pp 8 x 2) = 6 layers per
// virtual stage; placesim's default rank order tp,cp,pp,dp puts pp inside dp, which Megatron
// spells --use-tp-pp-dp-mapping (dp 1 here, so only tp and pp count: tp,pp both orders agree
// with tp-cp-ep-dp-pp too — the flag must not appear).
TEST(ExportMegatron, InterleavedScheduleGivesLayersPerVirtualStage) {
  Outcome r = Placesim({"export", Example("gpt3-175b-tp8-pp8"), "--to", "megatron", "--set",
                        "training.pipeline_schedule=interleaved_1f1b", "--set",
                        "training.virtual_stages=2"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const auto flags = MegatronFlags(r.out);
  EXPECT_EQ(flags.at("--pipeline-model-parallel-size"), "8");
  EXPECT_EQ(flags.at("--num-layers-per-virtual-pipeline-stage"), "6");
  EXPECT_FALSE(flags.count("--use-tp-pp-dp-mapping"));
  // GPT-3: learned positions, biases and LayerNorm, tied embeddings.
  EXPECT_EQ(flags.at("--position-embedding-type"), "learned_absolute");
  EXPECT_FALSE(flags.count("--disable-bias-linear"));
  EXPECT_FALSE(flags.count("--untie-embeddings-and-output-weights"));
}

// llama3-405b-4d-8192gpu: tp 8, cp 2 (K/V all-gather), pp 16 with stages [7, 8 x 14, 7] and
// placesim's default rank order tp,cp,pp,dp (pp inside dp), ZeRO-1 on dp.
TEST(ExportMegatron, FourDimensionalLlama405b) {
  Outcome r = Placesim({"export", Example("llama3-405b-4d-8192gpu"), "--to", "megatron"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const auto flags = MegatronFlags(r.out);
  EXPECT_EQ(flags.at("--tensor-model-parallel-size"), "8");
  EXPECT_EQ(flags.at("--context-parallel-size"), "2");
  EXPECT_EQ(flags.at("--cp-comm-type"), "allgather");  // CONTEXT_PARALLEL_COMM_ALL_GATHER
  EXPECT_EQ(flags.at("--pipeline-model-parallel-size"), "16");
  // Only the ends differ from the middle stages' 8 layers: 7 + 14 x 8 + 7 = 126 layers.
  EXPECT_EQ(flags.at("--decoder-first-pipeline-num-layers"), "7");
  EXPECT_EQ(flags.at("--decoder-last-pipeline-num-layers"), "7");
  // Megatron's default order is tp-cp-ep-dp-pp; tp,cp,pp,dp is its tp-pp-dp mapping.
  EXPECT_TRUE(flags.count("--use-tp-pp-dp-mapping"));
  EXPECT_TRUE(flags.count("--use-distributed-optimizer"));
  EXPECT_EQ(flags.at("--num-layers"), "126");
}

// zero-offload (Θ R, Ω O host, G O host): the distributed optimizer with its state and step
// on the CPUs; ZeRO-3 in hybrid groups is refused (Megatron-FSDP's hybrid mode is not an
// argument of arguments.py we map).
TEST(ExportMegatron, OptimizerOffloadAndHybridZero3) {
  Outcome r = Placesim({"export", Example("zero-offload"), "--to", "megatron"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const auto flags = MegatronFlags(r.out);
  EXPECT_TRUE(flags.count("--use-distributed-optimizer"));
  EXPECT_TRUE(flags.count("--optimizer-cpu-offload"));
  EXPECT_EQ(flags.at("--optimizer-offload-fraction"), "1.0");
  EXPECT_THAT(r.err, HasSubstr("note: Megatron-LM keeps its gradient buffer on the GPU"));
  Outcome hybrid = Placesim({"export", Example("llama3-70b-zero3-1024gpu"), "--to", "megatron",
                             "--set", "strategy.preset=fsdp-hybrid"});
  EXPECT_EQ(hybrid.code, sim::kExitBadInput);
  EXPECT_THAT(hybrid.err, HasSubstr("Megatron-LM cannot express hybrid sharding with ZeRO-2/3"));
}

TEST(ExportMegatron, RefusesGpipe) {
  Outcome r = Placesim({"export", Example("gpt3-175b-tp8-pp8"), "--to", "megatron", "--set",
                        "training.pipeline_schedule=gpipe"});
  EXPECT_EQ(r.code, sim::kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("Megatron-LM cannot express the GPipe pipeline schedule"));
  EXPECT_EQ(r.out, "");
}

// --------------------------------------------------------------------------------- DeepSpeed
// zero-offload: one DGX-H100 (dp 8), Llama-2-13B shape, zero-offload preset on dp
// (Θ R, Ω O host, G O host, A R), global batch 32, micro-batch 1, full recompute, bf16 mixed,
// Adam.
TEST(ExportDeepSpeed, ZeroOffloadFieldByField) {
  Outcome r = Placesim({"export", Example("zero-offload"), "--to", "deepspeed"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);  // must parse
  ExpectKeysDocumented(j, doc::kDeepSpeedTopLevel, "");
  ExpectKeysDocumented(j.at("bf16"), doc::kDeepSpeedBf16, "bf16");
  ExpectKeysDocumented(j.at("optimizer"), doc::kDeepSpeedOptimizer, "optimizer");
  const nlohmann::json& z = j.at("zero_optimization");
  ExpectKeysDocumented(z, doc::kDeepSpeedZero, "zero_optimization");
  ExpectKeysDocumented(z.at("offload_optimizer"), doc::kDeepSpeedOffloadOptimizer,
                       "offload_optimizer");
  ExpectKeysDocumented(j.at("activation_checkpointing"), doc::kDeepSpeedActivationCheckpointing,
                       "activation_checkpointing");

  EXPECT_EQ(j.at("train_batch_size"), 32);               // training.global_batch
  EXPECT_EQ(j.at("train_micro_batch_size_per_gpu"), 1);  // training.micro_batch
  EXPECT_EQ(j.at("gradient_accumulation_steps"), 4);     // 32 / (1 x dp 8)
  EXPECT_EQ(j.at("bf16").at("enabled"), true);
  EXPECT_FALSE(j.contains("fp16"));
  EXPECT_EQ(j.at("optimizer").at("type"), "Adam");
  EXPECT_TRUE(doc::kDeepSpeedOptimizerTypes.count(j.at("optimizer").at("type")));
  // G offloaded counts as partitioned, Θ replicated: ZeRO-2 with the optimizer (and its step)
  // on the host — ZeRO-Offload as Ren et al. 2021 run it.
  EXPECT_EQ(z.at("stage"), 2);
  EXPECT_EQ(z.at("offload_optimizer").at("device"), "cpu");
  EXPECT_TRUE(doc::kDeepSpeedOffloadDevices.count(z.at("offload_optimizer").at("device")));
  EXPECT_FALSE(z.contains("offload_param"));  // Θ R stays on the GPU
  // The simulated value: the zero-offload preset is DeepSpeed's, whose documented
  // zero_optimization.overlap_comm default is false (deepspeed.ai/docs/config-json).
  EXPECT_EQ(z.at("overlap_comm"), false);
  EXPECT_EQ(z.at("reduce_bucket_size"), 13107200);  // 25 MiB / 2 bytes per gradient
  EXPECT_EQ(z.at("allgather_bucket_size"), 13107200);
  EXPECT_TRUE(j.contains("activation_checkpointing"));  // full recompute
  EXPECT_THAT(r.err, HasSubstr("note: full recompute"));
}

// simulation.overlap_grad_reduce set in the scenario is what the exported config asks for: the
// simulated job and the exported one overlap the gradient reduction alike.
TEST(ExportDeepSpeed, OverlapCommIsTheSimulatedOverlap) {
  Outcome on = Placesim({"export", Example("zero-offload"), "--to", "deepspeed", "--set",
                         "simulation.overlap_grad_reduce=true"});
  ASSERT_EQ(on.code, sim::kExitOk) << on.err;
  EXPECT_EQ(nlohmann::json::parse(on.out).at("zero_optimization").at("overlap_comm"), true);
  Outcome off = Placesim({"export", Example("zero-offload"), "--to", "deepspeed", "--set",
                          "simulation.overlap_grad_reduce=false"});
  ASSERT_EQ(off.code, sim::kExitOk) << off.err;
  EXPECT_EQ(nlohmann::json::parse(off.out).at("zero_optimization").at("overlap_comm"), false);
}

// training.main_grads_fp32 in DeepSpeed: gradients accumulated in fp32
// (data_types.grad_accum_dtype), buckets of 26214400 / 4 = 6553600 of them.
TEST(ExportDeepSpeed, Fp32MainGradsAccumulateInFp32) {
  Outcome r = Placesim({"export", Example("zero-offload"), "--to", "deepspeed", "--set",
                        "training.main_grads_fp32=true"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ExpectKeysDocumented(j, doc::kDeepSpeedTopLevel, "");
  EXPECT_EQ(j.at("data_types").at("grad_accum_dtype"), "fp32");
  EXPECT_EQ(j.at("zero_optimization").at("reduce_bucket_size"), 6553600);
  const nlohmann::json plain =
      nlohmann::json::parse(Placesim({"export", Example("zero-offload"), "--to", "deepspeed"}).out);
  EXPECT_FALSE(plain.contains("data_types"));
}

// Hybrid sharding on 128 nodes: fsdp-hybrid shards inside a node (8 ranks) and replicates
// over the 128 nodes. DeepSpeed says it with MiCS under ZeRO-3; FSDP with HYBRID_SHARD on a
// (128, 8) device mesh.
TEST(ExportDeepSpeed, HybridShardingIsMics) {
  Outcome r = Placesim({"export", Example("llama3-70b-zero3-1024gpu"), "--to", "deepspeed", "--set",
                        "strategy.preset=fsdp-hybrid"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const nlohmann::json z = nlohmann::json::parse(r.out).at("zero_optimization");
  ExpectKeysDocumented(z, doc::kDeepSpeedZero, "zero_optimization");
  EXPECT_EQ(z.at("stage"), 3);
  EXPECT_EQ(z.at("mics_shard_size"), 8);
  // One unit of one layer prefetched (prefetch_depth 1): Llama-3-70B's layer holds
  // 2h^2 (q, o) + 2·h·(h/8) (k, v with 8 of 64 heads) + 3·h·ffn (SwiGLU) + 2h (RMSNorms)
  // = 2·8192² + 2·8192·1024 + 3·8192·28672 + 2·8192 = 134217728 + 16777216 + 704643072
  // + 16384 = 855654400 parameters (x 80 layers + 2·128256·8192 embeddings ≈ 70.6e9 = Ψ).
  EXPECT_EQ(z.at("stage3_prefetch_bucket_size"), 855654400);
}

TEST(ExportDeepSpeed, RefusesPipelineWithZero3) {
  Outcome r = Placesim(
      {"export", Example("llama3-8b-fsdp"), "--to", "deepspeed", "--set", "strategy.pp=2"});
  EXPECT_EQ(r.code, sim::kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("DeepSpeed cannot express pipeline parallelism (pp 2) with "
                               "ZeRO-3: DeepSpeed's pipeline engine runs with ZeRO stage 0 or 1"));
}

// --------------------------------------------------------------------------------------- FSDP
// llama3-8b-fsdp: dp 8 with the fsdp preset (Θ S*, Ω S, G S, A R), one layer per unit,
// prefetch depth 1, full recompute, bf16 mixed, AdamW, global 32, micro 1.
TEST(ExportFsdp, Llama8bFieldByField) {
  Outcome r = Placesim({"export", Example("llama3-8b-fsdp"), "--to", "fsdp"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  const std::string& py = r.out;
  // Every keyword of the FSDP(...) call, MixedPrecision(...) and CPUOffload(...) is documented.
  const std::string call = py.substr(py.find("FSDP(\n"), py.find("\n    )\n") - py.find("FSDP(\n"));
  static const std::regex kKeyword(R"(\n        ([a-z_]+)=)");
  int keywords = 0;
  for (std::sregex_iterator it(call.begin(), call.end(), kKeyword), end; it != end; ++it) {
    EXPECT_TRUE(doc::kFsdpConstructor.count((*it)[1])) << (*it)[1];
    ++keywords;
  }
  // sharding_strategy, auto_wrap_policy, mixed_precision, cpu_offload, backward_prefetch,
  // forward_prefetch, limit_all_gathers, use_orig_params, sync_module_states, device_id.
  EXPECT_EQ(keywords, 10);
  static const std::regex kMp(R"((param_dtype|reduce_dtype|buffer_dtype)=)");
  for (std::sregex_iterator it(py.begin(), py.end(), kMp), end; it != end; ++it) {
    EXPECT_TRUE(doc::kFsdpMixedPrecision.count((*it)[1]));
  }
  // Θ S* over dp: FULL_SHARD (gathered before use in forward and backward).
  EXPECT_THAT(py, HasSubstr("sharding_strategy=ShardingStrategy.FULL_SHARD,"));
  EXPECT_TRUE(doc::kFsdpShardingStrategy.count("FULL_SHARD"));
  // prefetch_depth 1: the next unit is gathered ahead in backward and in forward.
  EXPECT_THAT(py, HasSubstr("backward_prefetch=BackwardPrefetch.BACKWARD_PRE,"));
  EXPECT_THAT(py, HasSubstr("forward_prefetch=True,"));
  EXPECT_THAT(py, HasSubstr("cpu_offload=CPUOffload(offload_params=False),"));  // nothing O
  EXPECT_THAT(py, HasSubstr("MixedPrecision(param_dtype=torch.bfloat16, "
                            "reduce_dtype=torch.bfloat16"));  // 2-byte Θ and G
  EXPECT_THAT(py, HasSubstr("transformer_auto_wrap_policy, transformer_layer_cls={layer_cls}"));
  EXPECT_THAT(py, HasSubstr("apply_activation_checkpointing("));  // full recompute
  EXPECT_THAT(py, HasSubstr("torch.optim.AdamW("));
  EXPECT_THAT(py, HasSubstr("GRAD_ACCUM_STEPS = 4  # 32 / (1 x dp 8)"));
  EXPECT_THAT(py, Not(HasSubstr("device_mesh")));  // not hybrid
}

TEST(ExportFsdp, HeldParametersAreShardGradOp) {
  // reshard_after_forward false: each unit gathered in forward stays whole through backward,
  // which is FSDP's SHARD_GRAD_OP (and its hybrid form), not FULL_SHARD.
  Outcome r = Placesim({"export", Example("llama3-8b-fsdp"), "--to", "fsdp", "--set",
                        "simulation.reshard_after_forward=false"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,"));
  EXPECT_TRUE(doc::kFsdpShardingStrategy.count("SHARD_GRAD_OP"));
  r = Placesim({"export", Example("llama3-70b-zero3-1024gpu"), "--to", "fsdp", "--set",
                "strategy.preset=fsdp-hybrid", "--set", "simulation.reshard_after_forward=false"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sharding_strategy=ShardingStrategy._HYBRID_SHARD_ZERO2,"));
}

TEST(ExportFsdp, HybridShardOnADeviceMesh) {
  Outcome r = Placesim({"export", Example("llama3-70b-zero3-1024gpu"), "--to", "fsdp", "--set",
                        "strategy.preset=fsdp-hybrid"});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sharding_strategy=ShardingStrategy.HYBRID_SHARD,"));
  // 1024 ranks: 128 replicas of 8-rank shard groups.
  EXPECT_THAT(r.out, HasSubstr("init_device_mesh(\"cuda\", (128, 8), "
                               "mesh_dim_names=(\"replicate\", \"shard\"))"));
  EXPECT_THAT(r.out, HasSubstr("device_mesh=mesh,"));
}

TEST(ExportFsdp, RefusesTensorParallelismAndZero1) {
  Outcome r = Placesim({"export", Example("llama3-70b-tp8-zero1"), "--to", "fsdp"});
  EXPECT_EQ(r.code, sim::kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("PyTorch FSDP cannot express tensor parallelism (8)"));
  EXPECT_THAT(r.err, HasSubstr("PyTorch FSDP cannot express ZeRO-1"));
  EXPECT_THAT(r.err, HasSubstr("ZeroRedundancyOptimizer"));
}

// ----------------------------------------------------------------------------- the command
TEST(ExportCommand, BadToListsTheValidFrameworks) {
  Outcome r = Placesim({"export", Example("llama3-8b-fsdp"), "--to", "jax"});
  EXPECT_EQ(r.code, sim::kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("--to: \"jax\": unknown framework; valid: megatron, deepspeed, "
                               "fsdp"));
  EXPECT_EQ(Placesim({"export", Example("llama3-8b-fsdp")}).code, sim::kExitBadInput);
}

TEST(ExportCommand, DeterministicAndWritesAtomically) {
  const std::vector<std::string> args = {"export", Example("llama3-70b-tp8-zero1"), "--to",
                                         "megatron"};
  const Outcome first = Placesim(args);
  ASSERT_EQ(first.code, sim::kExitOk);
  EXPECT_EQ(Placesim(args).out, first.out);
  const std::string path = TempPath("args.sh");
  std::vector<std::string> to_file = args;
  to_file.insert(to_file.end(), {"-o", path});
  const Outcome written = Placesim(to_file);
  ASSERT_EQ(written.code, sim::kExitOk) << written.err;
  EXPECT_EQ(written.out, "");
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), first.out);
  // AtomicOutputFile's temporaries are "<path>.<pid>.<n>.tmp".
  for (const auto& e : std::filesystem::directory_iterator(::testing::TempDir())) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.starts_with(std::filesystem::path(path).filename().string() + ".") &&
                 name.ends_with(".tmp"))
        << name;
  }
}

TEST(ExportCommand, SearchExportsTheBestRow) {
  const std::string path = TempPath("best.sh");
  Outcome r = Placesim({"search", Example("llama3-8b-fsdp"), "--simulate-top", "0", "--top", "1",
                        "--fix", "strategy.tp=1", "--fix", "strategy.pp=1", "--fix",
                        "strategy.cp=1", "--export", "deepspeed", "-o", path});
  ASSERT_EQ(r.code, sim::kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("feasible of"));  // the table still goes to stdout
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json j =
      nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  ExpectKeysDocumented(j, doc::kDeepSpeedTopLevel, "");
  EXPECT_EQ(j.at("train_batch_size"), 32);  // the scenario's global batch, whatever the row
  Outcome to_stdout = Placesim({"search", Example("llama3-8b-fsdp"), "--simulate-top", "0", "--top",
                                "1", "--export", "megatron"});
  ASSERT_EQ(to_stdout.code, sim::kExitOk) << to_stdout.err;
  // Without -o the configuration replaces the table, and its header names the row.
  EXPECT_THAT(to_stdout.out, HasSubstr("scenario \"llama3-8b-fsdp, search row "));
  EXPECT_THAT(to_stdout.out, Not(HasSubstr("feasible of")));

  Outcome bad = Placesim({"search", Example("llama3-8b-fsdp"), "--export", "jax"});
  EXPECT_EQ(bad.code, sim::kExitBadInput);
  EXPECT_THAT(bad.err, HasSubstr("valid: megatron, deepspeed, fsdp"));
}

TEST(ExportCommand, SearchExportsTheBestRowsReshardAfterForward) {
  // Pinned to held parameters, the best FSDP row on Llama-3-8B over dp 8 exports as
  // SHARD_GRAD_OP; pinned to resharding, as FULL_SHARD.
  for (const auto& [reshard, strategy] :
       {std::pair{"false", "SHARD_GRAD_OP"}, std::pair{"true", "FULL_SHARD"}}) {
    Outcome r =
        Placesim({"search", Example("llama3-8b-fsdp"), "--space", "exhaustive", "--simulate-top",
                  "0", "--fix", "strategy.tp=1", "--fix", "strategy.pp=1", "--fix", "strategy.cp=1",
                  "--fix", "strategy.preset=fsdp", "--fix",
                  std::string("simulation.reshard_after_forward=") + reshard, "--export", "fsdp"});
    ASSERT_EQ(r.code, sim::kExitOk) << r.err;
    EXPECT_THAT(r.out,
                HasSubstr(std::string("sharding_strategy=ShardingStrategy.") + strategy + ","));
  }
}

// Every shipped example, to every framework: exported with documented names only, or refused
// with the reason — never another exit code or message.
TEST(ExportCommand, EveryExampleExportsDocumentedNamesOrIsRefused) {
  int exported = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(PLACESIM_SOURCE_DIR) + "/examples")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".textproto" && ext != ".json") continue;
    for (const std::string to : {"megatron", "deepspeed", "fsdp"}) {
      SCOPED_TRACE(entry.path().filename().string() + " --to " + to);
      const Outcome r = Placesim({"export", entry.path().string(), "--to", to});
      if (r.code == sim::kExitBadInput) {
        EXPECT_THAT(r.err, HasSubstr("cannot express"));
        continue;
      }
      ASSERT_EQ(r.code, sim::kExitOk) << r.err;
      ++exported;
      if (to == "megatron") {
        for (const auto& [name, value] : MegatronFlags(r.out)) {
          EXPECT_TRUE(doc::kMegatronFlags.count(name)) << name;
        }
      } else if (to == "deepspeed") {
        const nlohmann::json j = nlohmann::json::parse(r.out);
        ExpectKeysDocumented(j, doc::kDeepSpeedTopLevel, "");
        ExpectKeysDocumented(j.at("zero_optimization"), doc::kDeepSpeedZero, "zero_optimization");
      } else {
        EXPECT_THAT(r.out, HasSubstr("model = FSDP(\n"));
      }
    }
  }
  EXPECT_GE(exported, 3);
}

TEST(ExportLibrary, ParsesFrameworkNamesAndRefusesCountOnlyModels) {
  EXPECT_EQ(*ParseFramework("fsdp"), Framework::kFsdp);
  EXPECT_FALSE(ParseFramework("FSDP").ok());
  StatusOr<sim::Scenario> s = api::LoadScenario(Example("zero-7.5b"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  // zero-7.5b gives Ψ alone: Megatron-LM needs the layers; DeepSpeed does not.
  StatusOr<Exported> m = Export(*s, Framework::kMegatron);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("parameter count alone"));
  EXPECT_TRUE(Export(*s, Framework::kDeepSpeed).ok());
  EXPECT_TRUE(Export(*s, Framework::kFsdp).ok());  // the user's model brings its layers
}

}  // namespace
}  // namespace placesim::exporting
