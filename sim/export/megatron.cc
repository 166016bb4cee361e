// Megatron-LM: the plan as command-line arguments of pretrain_gpt.py, written as a bash array
// with the derivation of every flag in a comment beside it.
//
// Flag names are those of megatron/training/arguments.py on Megatron-LM's main branch
// (Megatron-Core 0.14 and later). Virtual pipeline stages are written as
// --num-layers-per-virtual-pipeline-stage, which every Megatron-LM release since the
// interleaved schedule (2021) accepts; newer ones also take
// --num-virtual-stages-per-pipeline-rank. ZeRO-2/3 placements map to Megatron-FSDP
// (--use-megatron-fsdp --data-parallel-sharding-strategy), in Megatron-Core 0.14 and later.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/export/internal.h"
#include "strategies/model.h"
#include "strategies/schedule.h"

namespace placesim::exporting::internal {
namespace {

using strategies::Optimizer;
using strategies::PipelineSchedule;
using strategies::Precision;
using strategies::Recompute;
using topology::Axis;

constexpr const char* kName = "Megatron-LM";

struct Flag {
  std::string name;   // "--tensor-model-parallel-size"
  std::string value;  // "" for a switch
  std::string why;    // the derivation, written as a comment
};

class Args {
 public:
  void Add(std::string name, std::string value = {}, std::string why = {}) {
    flags_.push_back({std::move(name), std::move(value), std::move(why)});
  }
  void Add(std::string name, int64_t value, std::string why = {}) {
    Add(std::move(name), std::to_string(value), std::move(why));
  }
  const std::vector<Flag>& flags() const { return flags_; }

 private:
  std::vector<Flag> flags_;
};

// Megatron's rank order is tp-cp-ep-dp-pp (innermost first), or tp-cp-ep-pp-dp with
// --use-tp-pp-dp-mapping; only axes of size > 1 matter.
void RankOrderArgs(const strategies::StrategySpec& s, Findings& f, Args& a) {
  auto order = [&](std::vector<Axis> axes) {
    std::erase_if(axes, [&](Axis x) { return s.mesh.size(x) == 1; });
    return axes;
  };
  std::vector<Axis> ours(s.rank_order.inner_to_outer.begin(), s.rank_order.inner_to_outer.end());
  ours = order(ours);
  if (ours == order({Axis::kTensor, Axis::kContext, Axis::kData, Axis::kPipeline})) return;
  if (ours == order({Axis::kTensor, Axis::kContext, Axis::kPipeline, Axis::kData})) {
    a.Add("--use-tp-pp-dp-mapping", "", "rank order tp,cp,pp,dp: pp inside dp");
    return;
  }
  f.Refuse(fmt::format("rank order {}", topology::ToString(s.rank_order)),
           "Megatron-LM lays ranks out as tp-cp-ep-dp-pp or (--use-tp-pp-dp-mapping) "
           "tp-cp-ep-pp-dp, innermost first");
}

// Uneven stages: Megatron-LM sets the first and last stage's layers, the rest split evenly.
void StageLayerArgs(const strategies::StrategySpec& s, Findings& f, Args& a) {
  const std::vector<int>& st = s.pipeline_stage_layers;
  if (st.empty() || std::all_of(st.begin(), st.end(), [&](int n) { return n == st[0]; })) return;
  const bool middle_even = st.size() <= 3 || std::all_of(st.begin() + 2, st.end() - 1,
                                                         [&](int n) { return n == st[1]; });
  if (!middle_even) {
    f.Refuse("uneven pipeline stages beyond the first and last",
             "Megatron-LM sets the first and last stage's layers "
             "(--decoder-first/last-pipeline-num-layers) and splits the rest evenly");
    return;
  }
  a.Add("--decoder-first-pipeline-num-layers", st.front(), "strategy.pipeline_stage_layers[0]");
  a.Add("--decoder-last-pipeline-num-layers", st.back(), "strategy.pipeline_stage_layers[last]");
}

void PipelineArgs(const sim::Scenario& sc, Findings& f, Args& a) {
  const strategies::StrategySpec& s = sc.strategy;
  const strategies::TrainingSpec& t = sc.training;
  a.Add("--pipeline-model-parallel-size", s.mesh.pp, "mesh pp");
  if (s.mesh.pp == 1) return;
  if (t.pipeline_schedule == PipelineSchedule::kGpipe) {
    f.Refuse("the GPipe pipeline schedule",
             "Megatron-LM runs 1F1B, or interleaved 1F1B with virtual stages; set "
             "training.pipeline_schedule=1f1b");
  }
  StageLayerArgs(s, f, a);
  if (t.pipeline_schedule != PipelineSchedule::kInterleaved1F1B || t.virtual_stages <= 1) return;
  const int64_t chunks = int64_t{s.mesh.pp} * t.virtual_stages;
  if (!s.pipeline_stage_layers.empty() || sc.model.transformer.layers % chunks != 0) {
    f.Refuse("interleaved 1F1B over uneven model chunks",
             "--num-layers-per-virtual-pipeline-stage splits the layers evenly over pp x "
             "virtual stages");
    return;
  }
  a.Add("--num-layers-per-virtual-pipeline-stage", sc.model.transformer.layers / chunks,
        fmt::format("interleaved 1F1B: {} layers / (pp {} x {} virtual stages)",
                    sc.model.transformer.layers, s.mesh.pp, t.virtual_stages));
}

void ParallelArgs(const sim::Scenario& sc, Findings& f, Args& a) {
  const topology::MeshShape& m = sc.strategy.mesh;
  a.Add("--tensor-model-parallel-size", m.tp, "mesh tp");
  if (sc.training.sequence_parallel && m.tp > 1) {
    a.Add("--sequence-parallel", "", "training.sequence_parallel");
  }
  if (sc.simulation.tp_comm_overlap && m.tp > 1) {
    if (!sc.training.sequence_parallel) {
      f.Refuse("tensor-parallel overlap without sequence parallelism",
               "--tp-comm-overlap requires --sequence-parallel");
    }
    a.Add("--tp-comm-overlap", "", "simulation.tp_comm_overlap");
  }
  PipelineArgs(sc, f, a);
  a.Add("--context-parallel-size", m.cp, "mesh cp");
  if (m.cp > 1) {
    const bool ring = sc.training.context_parallel_comm == strategies::ContextParallelComm::kRing;
    a.Add("--cp-comm-type", ring ? "p2p" : "allgather",
          fmt::format("training.context_parallel_comm {}",
                      strategies::ContextParallelCommName(sc.training.context_parallel_comm)));
  }
  if (m.ep > 1 || sc.model.transformer.experts > 1) {
    a.Add("--expert-model-parallel-size", m.ep, "mesh ep (inside dp)");
  }
  RankOrderArgs(sc.strategy, f, a);
}

// The gradient sync of replicated parameters as the simulation ran it. With overlap (the
// scenario's simulation.overlap_grad_reduce, else the preset's framework default): buckets of
// the simulated size reduced during backward. Without it (Megatron-LM's default): no flag, and
// Megatron-LM reduces the whole buffer as one bucket after the backward, ignoring
// --ddp-bucket-size, so a smaller simulated bucket cannot be carried over and is noted.
void GradientSyncArgs(const sim::Scenario& sc, const DataParallelPlan& p, Findings& f, Args& a) {
  const topology::MeshShape& m = sc.strategy.mesh;
  if (int64_t{m.dp} * m.cp == 1 || p.zero_stage == 3) return;
  if (sc.simulation.sync_grads_every_micro_batch) {
    f.Refuse("gradient sync after every micro-batch",
             "Megatron-LM reduces gradients once per step, after the last micro-batch");
  }
  const bool overlap = sc.simulation.overlap_grad_reduce.value_or(
      strategies::FrameworkDefaults(sc.strategy.name).overlap_grad_reduce);
  const Bytes bucket = SimulatedBucket(sc);
  if (!overlap) {
    if (bucket != strategies::kWholeGradientBucket) {
      f.Note(fmt::format("simulation.gradient_bucket_size {} bytes is not exported: without "
                         "--overlap-grad-reduce Megatron-LM reduces the whole gradient buffer "
                         "as one bucket after the backward",
                         bucket.count()));
    }
    return;
  }
  a.Add("--overlap-grad-reduce", "", "buckets reduced during backward");
  a.Add("--ddp-bucket-size", BucketElements(sc),
        fmt::format("simulated gradient bucket {} bytes / {} bytes per gradient", bucket.count(),
                    strategies::BytesPerParameter(sc.training).grads));
}

void DataParallelArgs(const sim::Scenario& sc, Findings& f, Args& a) {
  const DataParallelPlan p = ReadDataParallel(sc.strategy, f);
  if (p.param_offload != strategies::OffloadTarget::kNone) {
    f.Refuse("parameters offloaded (Θ O)",
             "Megatron-LM offloads the optimizer state only (--optimizer-cpu-offload)");
  }
  if (p.optimizer_offload == strategies::OffloadTarget::kNvme) {
    f.Refuse("optimizer state on NVMe", "--optimizer-cpu-offload moves it to host memory only");
  }
  if (p.optimizer_offload != strategies::OffloadTarget::kNone) {
    a.Add("--use-distributed-optimizer", "", "dp: Ω and G offloaded, sharded over dp");
    a.Add("--optimizer-cpu-offload", "", "dp: Ω O (host), the optimizer step on the CPUs");
    a.Add("--optimizer-offload-fraction", "1.0", "all of it");
    a.Add("--overlap-cpu-optimizer-d2h-h2d", "", "gradient and parameter copies overlap");
    f.Note(
        "Megatron-LM keeps its gradient buffer on the GPU and copies the gradient shards "
        "to the host for the CPU step; placesim's G O counts them on the host only");
  } else if (p.zero_stage == 1) {
    a.Add("--use-distributed-optimizer", "", "dp: Ω S (ZeRO-1)");
  } else if (p.zero_stage >= 2) {
    a.Add("--use-megatron-fsdp", "", fmt::format("dp: ZeRO-{}", p.zero_stage));
    a.Add("--data-parallel-sharding-strategy",
          p.zero_stage == 2 ? "optim_grads" : "optim_grads_params",
          p.zero_stage == 2 ? "Ω S, G S" : "Θ S*, Ω S, G S");
  }
  if (p.hybrid()) {
    if (p.zero_stage >= 2 && p.optimizer_offload == strategies::OffloadTarget::kNone) {
      f.Refuse("hybrid sharding with ZeRO-2/3",
               "Megatron-FSDP's hybrid mode is not a documented argument here; use --to fsdp");
    }
    a.Add("--num-distributed-optimizer-instances", sc.strategy.mesh.dp / p.shard_group,
          fmt::format("strategy.shard_group_size {}: dp {} / {} replicas", p.shard_group,
                      sc.strategy.mesh.dp, p.shard_group));
  }
  GradientSyncArgs(sc, p, f, a);
}

void ModelArgs(const sim::Scenario& sc, Findings& f, Args& a) {
  RequireArchitecture(sc, f);
  if (!sc.model.has_architecture()) return;
  const strategies::TransformerSpec& t = sc.model.transformer;
  a.Add("--num-layers", t.layers, "model layers");
  a.Add("--hidden-size", t.hidden, "model hidden");
  a.Add("--ffn-hidden-size", t.ffn_hidden, "model ffn_hidden");
  a.Add("--num-attention-heads", t.heads, "model heads");
  if (t.kv_heads > 0 && t.kv_heads < t.heads) {
    a.Add("--group-query-attention", "", "kv_heads < heads");
    a.Add("--num-query-groups", t.kv_heads, "model kv_heads");
  }
  a.Add("--seq-length", t.seq_len, "model seq_len");
  a.Add("--max-position-embeddings", t.seq_len, "model seq_len");
  a.Add("--position-embedding-type", t.learned_position_embeddings ? "learned_absolute" : "rope",
        t.learned_position_embeddings ? "learned positions" : "rotary: no position parameters");
  if (t.gated_mlp) a.Add("--swiglu", "", "gated MLP, three matrices");
  if (!t.biases) {
    a.Add("--normalization", "RMSNorm", "no biases: Llama-style RMSNorm");
    a.Add("--disable-bias-linear", "", "bias-free linear layers");
  }
  if (!t.tied_embeddings) a.Add("--untie-embeddings-and-output-weights", "", "untied output");
  if (t.experts > 1) {
    a.Add("--num-experts", t.experts, "model experts");
    a.Add("--moe-router-topk", t.top_k, "model top_k");
    if (t.capacity_factor > 0) {
      a.Add("--moe-expert-capacity-factor", Decimal(t.capacity_factor), "model capacity_factor");
    }
    if (t.routing_imbalance > 1) {
      f.Note(fmt::format("routing imbalance {} is what placesim assumed, not a setting",
                         Decimal(t.routing_imbalance)));
    }
  }
}

void PrecisionArgs(const sim::Scenario& sc, Findings& f, Args& a) {
  switch (sc.training.precision) {
    case Precision::kBf16Mixed:
      a.Add("--bf16", "", "bf16 mixed precision, fp32 main parameters");
      break;
    case Precision::kFp16Mixed:
      a.Add("--fp16", "", "fp16 mixed precision with loss scaling");
      break;
    case Precision::kFp8Mixed:
      a.Add("--bf16", "", "fp8 matmuls over bf16 weights");
      a.Add("--fp8-format", "hybrid", "fp8 mixed precision (Transformer Engine)");
      break;
    case Precision::kBf16:
      f.Refuse("pure bf16 training (no fp32 master weights)",
               "--bf16 keeps fp32 main parameters in the optimizer");
      break;
  }
  // Megatron-LM keeps fp32 main grads under --bf16 unless told otherwise (arguments.py), and
  // bf16/fp16 ones under --fp16 unless asked for fp32.
  const bool fp16 = sc.training.precision == Precision::kFp16Mixed;
  if (sc.training.main_grads_fp32 && fp16) {
    a.Add("--accumulate-allreduce-grads-in-fp32", "", "training.main_grads_fp32");
  } else if (!sc.training.main_grads_fp32 && !fp16) {
    a.Add("--grad-reduce-in-bf16", "", "placesim's G is 2 bytes per parameter");
  }
}

void TrainingArgs(const sim::Scenario& sc, Findings& f, Args& a) {
  const strategies::TrainingSpec& t = sc.training;
  a.Add("--micro-batch-size", t.micro_batch, "training micro_batch");
  a.Add("--global-batch-size", t.global_batch,
        fmt::format("training global_batch: {} micro-batches per dp rank",
                    GradientAccumulationSteps(sc)));
  PrecisionArgs(sc, f, a);
  if (t.optimizer == Optimizer::kAdam8bit) {
    f.Refuse("8-bit Adam", "--optimizer takes adam, sgd, muon or dist_muon");
  } else if (t.optimizer == Optimizer::kSgdMomentum) {
    a.Add("--optimizer", "sgd", "SGD with momentum (--sgd-momentum)");
  } else {
    a.Add("--optimizer", "adam", "Adam(W): Megatron-LM's adam decouples --weight-decay");
  }
  if (t.recompute == Recompute::kSelective) {
    a.Add("--recompute-granularity", "selective", "the attention core (core_attn)");
  } else if (t.recompute == Recompute::kFull) {
    a.Add("--recompute-granularity", "full", "every layer re-runs its forward");
    a.Add("--recompute-method", "uniform", "");
    a.Add("--recompute-num-layers", 1, "each layer's input kept");
  }
  if (!t.flash_attention) {
    a.Add("--attention-backend", "unfused", "scores stored (no fused attention)");
  } else if (t.attention_kernel == topology::AttentionKernel::kCudnn) {
    // Megatron's "fused" backend is Transformer Engine's cuDNN fused attention.
    a.Add("--attention-backend", "fused", "training.attention_kernel: cuDNN");
  } else {
    a.Add("--attention-backend", "flash", "training.flash_attention");
  }
}

std::string Render(const sim::Scenario& sc, const Args& a, const Findings& f) {
  std::string out = "#!/usr/bin/env bash\n";
  for (const std::string& line : HeaderLines(sc, "Megatron-LM arguments")) {
    out += "# " + line + "\n";
  }
  out +=
      "# Flags of megatron/training/arguments.py (Megatron-LM main, Megatron-Core 0.14 and "
      "later).\n";
  for (const std::string& note : f.notes()) out += "# note: " + note + "\n";
  out += "MEGATRON_ARGS=(\n";
  size_t width = 0;
  for (const Flag& flag : a.flags()) {
    width = std::max(width, flag.name.size() + (flag.value.empty() ? 0 : flag.value.size() + 1));
  }
  for (const Flag& flag : a.flags()) {
    std::string item = flag.value.empty() ? flag.name : flag.name + " " + flag.value;
    out += flag.why.empty() ? fmt::format("  {}\n", item)
                            : fmt::format("  {:<{}}  # {}\n", item, width, flag.why);
  }
  out += ")\n";
  if (sc.model.has_architecture()) {
    out += fmt::format(
        "# Vocabulary: {} tokens, from your tokenizer (--tokenizer-type, --tokenizer-model).\n",
        sc.model.transformer.vocab);
  }
  const int gpus = std::max(1, sc.cluster.node.gpus);
  out += fmt::format(
      "# torchrun --nnodes {} --nproc-per-node {} pretrain_gpt.py \"${{MEGATRON_ARGS[@]}}\" "
      "<data, tokenizer and schedule arguments>\n",
      std::max<int64_t>(1, sc.strategy.mesh.world() / gpus), gpus);
  return out;
}

}  // namespace

StatusOr<Exported> ExportMegatron(const sim::Scenario& scenario) {
  Findings f(kName);
  Args a;
  ParallelArgs(scenario, f, a);
  DataParallelArgs(scenario, f, a);
  ModelArgs(scenario, f, a);
  TrainingArgs(scenario, f, a);
  if (f.refused()) return f.ToStatus();
  Exported e;
  e.framework = Framework::kMegatron;
  e.text = Render(scenario, a, f);
  e.notes = f.notes();
  return e;
}

}  // namespace placesim::exporting::internal
