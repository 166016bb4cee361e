// PyTorch FSDP: the plan as a Python snippet over torch.distributed.fsdp's
// FullyShardedDataParallel (the FSDP1 API: ShardingStrategy, BackwardPrefetch, MixedPrecision,
// CPUOffload, auto_wrap_policy), with the activation checkpointing wrapper of
// torch.distributed.algorithms._checkpoint.checkpoint_wrapper. Names are those of
// torch/distributed/fsdp/api.py and the torch.distributed.fsdp documentation (PyTorch 2.1+).
//
// FSDP is data parallelism alone: any other axis of size > 1 is refused. Where the placement
// is close to but not exactly FSDP's (SHARD_GRAD_OP for ZeRO-2), the snippet says so in a
// comment and the export's notes.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "sim/export/internal.h"

namespace placesim::exporting::internal {
namespace {

using strategies::OffloadTarget;
using strategies::Optimizer;
using strategies::Precision;
using strategies::Recompute;

constexpr const char* kName = "PyTorch FSDP";

void CheckAxes(const sim::Scenario& sc, Findings& f) {
  const topology::MeshShape& m = sc.strategy.mesh;
  const std::pair<const char*, int> axes[] = {
      {"tensor", m.tp}, {"pipeline", m.pp}, {"context", m.cp}, {"expert", m.ep}};
  for (const auto& [name, size] : axes) {
    if (size > 1) {
      f.Refuse(fmt::format("{} parallelism ({})", name, size),
               "FullyShardedDataParallel shards over data-parallel ranks only; Megatron-style "
               "tensor/sequence, pipeline, context and expert parallelism are not part of it "
               "(use --to megatron)");
    }
  }
}

// The ShardingStrategy of the dp placement; refusals for what FSDP has no strategy for.
std::string ShardingStrategy(const DataParallelPlan& p, Findings& f) {
  if (p.optimizer_offload != OffloadTarget::kNone &&
      (p.param_offload == OffloadTarget::kNone || p.zero_stage != 3)) {
    f.Refuse("optimizer offload with parameters on the GPU (ZeRO-Offload)",
             "CPUOffload(offload_params=True) offloads parameters, gradients and the "
             "optimizer step together");
  }
  if (p.optimizer_offload == OffloadTarget::kNvme || p.param_offload == OffloadTarget::kNvme) {
    f.Refuse("NVMe offload", "CPUOffload moves states to host memory only");
  }
  switch (p.zero_stage) {
    case 0:
      return "NO_SHARD";
    case 1:
      f.Refuse("ZeRO-1 (optimizer state alone sharded)",
               "FSDP shards gradients with the optimizer state; optimizer-only sharding is "
               "DDP with torch.distributed.optim.ZeroRedundancyOptimizer");
      return "NO_SHARD";
    case 2:
      f.Note(
          "SHARD_GRAD_OP holds full parameters from forward to the end of backward and "
          "shards them between steps; placesim's ZeRO-2 keeps them whole throughout");
      return p.hybrid() ? "_HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP";
    default:
      return p.hybrid() ? "HYBRID_SHARD" : "FULL_SHARD";
  }
}

std::string MixedPrecisionArg(const sim::Scenario& sc, Findings& f) {
  switch (sc.training.precision) {
    case Precision::kBf16Mixed:
      return "MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, "
             "buffer_dtype=torch.bfloat16)";
    case Precision::kFp16Mixed:
      f.Note(
          "fp16: scale the loss with torch.distributed.fsdp.sharded_grad_scaler."
          "ShardedGradScaler");
      return "MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16, "
             "buffer_dtype=torch.float16)";
    case Precision::kBf16:
      f.Note("pure bf16: cast the model with model.to(torch.bfloat16) before wrapping");
      return "None";
    case Precision::kFp8Mixed:
      f.Refuse("fp8 mixed precision",
               "MixedPrecision takes torch dtypes, and fp8 matmuls need "
               "Transformer Engine or torchao modules in the model");
      return "None";
  }
  return "None";
}

std::string OptimizerLine(const sim::Scenario& sc) {
  switch (sc.training.optimizer) {
    case Optimizer::kAdam:
      return "torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)";
    case Optimizer::kAdamW:
      return "torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)";
    case Optimizer::kSgdMomentum:
      return "torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)";
    case Optimizer::kAdam8bit:
      return "bitsandbytes.optim.Adam8bit(model.parameters(), lr=LEARNING_RATE)";
  }
  return "None";
}

struct Snippet {
  std::string sharding;
  std::string mixed_precision;
  bool offload = false;
  bool prefetch = false;
  std::string device_mesh;  // "" unless hybrid
};

std::string Imports(const sim::Scenario& sc, const Snippet& s) {
  std::string out = "import functools\n\n";
  if (sc.training.optimizer == Optimizer::kAdam8bit) out += "import bitsandbytes\n";
  out += "import torch\n";
  if (!s.device_mesh.empty()) out += "from torch.distributed.device_mesh import init_device_mesh\n";
  if (sc.training.recompute == Recompute::kFull) {
    out +=
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
        "    apply_activation_checkpointing,\n"
        "    checkpoint_wrapper,\n"
        ")\n";
  }
  out +=
      "from torch.distributed.fsdp import (\n"
      "    BackwardPrefetch,\n"
      "    CPUOffload,\n"
      "    FullyShardedDataParallel as FSDP,\n"
      "    MixedPrecision,\n"
      "    ShardingStrategy,\n"
      ")\n"
      "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n\n";
  return out;
}

std::string Constants(const sim::Scenario& sc) {
  const int64_t steps = GradientAccumulationSteps(sc);
  return fmt::format(
      "MICRO_BATCH = {}  # sequences per GPU per micro-batch\n"
      "GLOBAL_BATCH = {}  # sequences per optimizer step\n"
      "GRAD_ACCUM_STEPS = {}  # {} / ({} x dp {})\n"
      "SEQ_LEN = {}{}\n"
      "LEARNING_RATE = 1e-4  # not part of the plan: yours\n\n",
      sc.training.micro_batch, sc.training.global_batch, steps, sc.training.global_batch,
      sc.training.micro_batch, sc.strategy.mesh.dp, sc.model.transformer.seq_len,
      sc.model.has_architecture() ? "" : "  # the scenario gives the parameter count alone");
}

std::string WrapFunction(const sim::Scenario& sc, const Snippet& s) {
  std::string out =
      "def wrap(model: torch.nn.Module, layer_cls: type) -> FSDP:\n"
      "    \"\"\"Wraps `model`; layer_cls is its transformer block class (e.g. transformers'\n"
      "    LlamaDecoderLayer). Call after torch.distributed.init_process_group.\"\"\"\n";
  if (!s.device_mesh.empty()) out += "    mesh = " + s.device_mesh + "\n";
  out += fmt::format(
      "    model = FSDP(\n"
      "        model,\n"
      "        sharding_strategy=ShardingStrategy.{},\n"
      "        auto_wrap_policy=functools.partial(\n"
      "            transformer_auto_wrap_policy, transformer_layer_cls={{layer_cls}}\n"
      "        ),\n"
      "        mixed_precision={},\n"
      "        cpu_offload=CPUOffload(offload_params={}),\n"
      "        backward_prefetch={},\n"
      "        forward_prefetch={},\n"
      "        limit_all_gathers=True,\n"
      "        use_orig_params=True,\n"
      "        sync_module_states=True,\n"
      "        device_id=torch.cuda.current_device(),\n",
      s.sharding, s.mixed_precision, s.offload ? "True" : "False",
      s.prefetch ? "BackwardPrefetch.BACKWARD_PRE" : "None", s.prefetch ? "True" : "False");
  if (!s.device_mesh.empty()) out += "        device_mesh=mesh,\n";
  out += "    )\n";
  if (sc.training.recompute == Recompute::kFull) {
    out +=
        "    apply_activation_checkpointing(\n"
        "        model,\n"
        "        checkpoint_wrapper_fn=checkpoint_wrapper,\n"
        "        check_fn=lambda m: isinstance(m, layer_cls),\n"
        "    )\n";
  }
  out += "    return model\n\n\n";
  out += "def make_optimizer(model: FSDP) -> torch.optim.Optimizer:\n";
  out += "    return " + OptimizerLine(sc) + "\n";
  return out;
}

Snippet Derive(const sim::Scenario& sc, Findings& f) {
  CheckAxes(sc, f);
  const DataParallelPlan p = ReadDataParallel(sc.strategy, f);
  Snippet s;
  s.sharding = ShardingStrategy(p, f);
  if (p.zero_stage == 3 && sc.simulation.reshard_after_forward == false) {
    // Gathered in forward and held to the end of backward: exactly SHARD_GRAD_OP.
    s.sharding = p.hybrid() ? "_HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP";
  }
  s.mixed_precision = MixedPrecisionArg(sc, f);
  s.offload = p.param_offload == OffloadTarget::kHost;
  s.prefetch = sc.simulation.prefetch_depth > 0;
  if (sc.simulation.prefetch_depth > 1) {
    f.Note(fmt::format("prefetch depth {}: FSDP prefetches one unit ahead",
                       sc.simulation.prefetch_depth));
  }
  if (p.hybrid()) {
    s.device_mesh = fmt::format(
        "init_device_mesh(\"cuda\", ({}, {}), mesh_dim_names=(\"replicate\", \"shard\"))",
        sc.strategy.mesh.dp / p.shard_group, p.shard_group);
  }
  if (p.zero_stage == 3 && sc.strategy.layers_per_unit > 1) {
    f.Note(
        fmt::format("placesim gathers {} layers per unit: group them in one module "
                    "(e.g. nn.Sequential) and pass that class as layer_cls",
                    sc.strategy.layers_per_unit));
  }
  if (sc.training.recompute == Recompute::kSelective) {
    f.Note(
        "selective recompute is not applied by this snippet: checkpoint the attention core "
        "of layer_cls with torch.utils.checkpoint.checkpoint yourself");
  }
  if (sc.simulation.sync_grads_every_micro_batch) {
    f.Note("gradients reduced after every micro-batch: do not use model.no_sync()");
  }
  return s;
}

}  // namespace

StatusOr<Exported> ExportFsdp(const sim::Scenario& scenario) {
  Findings f(kName);
  const Snippet s = Derive(scenario, f);
  if (f.refused()) return f.ToStatus();
  std::string out;
  for (const std::string& line : HeaderLines(scenario, "PyTorch FSDP setup")) {
    out += "# " + line + "\n";
  }
  out += "# torch.distributed.fsdp (FSDP1 API, PyTorch 2.1 and later).\n";
  for (const std::string& note : f.notes()) out += "# note: " + note + "\n";
  out += Imports(scenario, s) + Constants(scenario) + "\n" + WrapFunction(scenario, s);
  Exported e;
  e.framework = Framework::kFsdp;
  e.text = std::move(out);
  e.notes = f.notes();
  return e;
}

}  // namespace placesim::exporting::internal
