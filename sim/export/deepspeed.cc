// DeepSpeed: the plan as a DeepSpeed config JSON (deepspeed.initialize(config=...)).
//
// Keys are those of the DeepSpeed Configuration JSON documentation
// (deepspeed.ai/docs/config-json) and of deepspeed/runtime/zero/config.py and
// offload_config.py. JSON has no comments, so what the user must do outside the file (pipeline
// stages and expert parallelism are set in code) is in the export's notes, which
// `placesim export` prints on stderr.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sim/export/internal.h"
#include "strategies/model.h"
#include "strategies/schedule.h"

namespace placesim::exporting::internal {
namespace {

using Json = nlohmann::ordered_json;
using strategies::OffloadTarget;
using strategies::Optimizer;
using strategies::Precision;
using strategies::Recompute;

constexpr const char* kName = "DeepSpeed";

const char* Device(OffloadTarget t) { return t == OffloadTarget::kNvme ? "nvme" : "cpu"; }

Json OffloadSection(OffloadTarget target, Findings& f, const char* what) {
  Json j;
  j["device"] = Device(target);
  if (target == OffloadTarget::kNvme) {
    j["nvme_path"] = "/local_nvme";
    f.Note(fmt::format("{}.nvme_path: point it at your NVMe mount", what));
  }
  j["pin_memory"] = true;
  return j;
}

// The axes beyond data parallelism: what the config cannot hold is refused or noted.
void CheckAxes(const sim::Scenario& sc, const DataParallelPlan& p, Findings& f) {
  const topology::MeshShape& m = sc.strategy.mesh;
  if (m.tp > 1) {
    f.Refuse(fmt::format("tensor parallelism (tp {})", m.tp),
             "the DeepSpeed config has no Megatron-style tensor parallelism; Megatron-DeepSpeed "
             "sets it on its command line (use --to megatron)");
  }
  if (m.cp > 1) {
    f.Refuse(fmt::format("context parallelism (cp {})", m.cp),
             "DeepSpeed-Ulysses splits sequences by all-to-all over heads, not placesim's "
             "ring or all-gather context parallelism");
  }
  if (m.pp > 1 && p.zero_stage >= 2) {
    f.Refuse(fmt::format("pipeline parallelism (pp {}) with ZeRO-{}", m.pp, p.zero_stage),
             "DeepSpeed's pipeline engine runs with ZeRO stage 0 or 1 only");
  } else if (m.pp > 1) {
    f.Note(
        fmt::format("pipeline stages are set in code: deepspeed.pipe.PipelineModule(layers, "
                    "num_stages={})",
                    m.pp));
    if (sc.training.pipeline_schedule != strategies::PipelineSchedule::k1F1B ||
        sc.training.virtual_stages > 1) {
      f.Refuse(fmt::format("the {} pipeline schedule",
                           strategies::PipelineScheduleName(sc.training.pipeline_schedule)),
               "DeepSpeed's pipeline engine runs 1F1B (TrainSchedule) only");
    }
  }
  if (m.ep > 1) {
    f.Note(
        fmt::format("expert parallelism is set in code: deepspeed.moe.layer.MoE(..., "
                    "ep_size={})",
                    m.ep));
  }
}

Json ZeroSection(const sim::Scenario& sc, const DataParallelPlan& p, Findings& f) {
  Json z;
  z["stage"] = p.zero_stage;
  const int64_t bucket = BucketElements(sc);
  if (p.zero_stage >= 1) {
    // The value the simulation ran with, so the exported job is the simulated one: the
    // scenario's simulation.overlap_grad_reduce, else the preset's framework default
    // (DeepSpeed's documented overlap_comm false for zero2/zero3/offload, docs/overheads.md).
    z["overlap_comm"] = sc.simulation.overlap_grad_reduce.value_or(
        strategies::FrameworkDefaults(sc.strategy.name).overlap_grad_reduce);
    z["contiguous_gradients"] = true;
    z["reduce_scatter"] = true;
    z["reduce_bucket_size"] = bucket;
  }
  if (p.zero_stage == 1 || p.zero_stage == 2) z["allgather_bucket_size"] = bucket;
  if (p.optimizer_offload != OffloadTarget::kNone) {
    z["offload_optimizer"] = OffloadSection(p.optimizer_offload, f, "offload_optimizer");
  }
  if (p.param_offload != OffloadTarget::kNone) {
    z["offload_param"] = OffloadSection(p.param_offload, f, "offload_param");
  }
  if (p.zero_stage == 3 && sc.model.has_architecture()) {
    // Gathered ahead of use: prefetch_depth units of layers_per_unit layers each.
    const int64_t per_layer = strategies::CountParameters(sc.model.transformer).per_layer();
    z["stage3_prefetch_bucket_size"] =
        int64_t{sc.simulation.prefetch_depth} * sc.strategy.layers_per_unit * per_layer;
    // The reuse distance the simulation ran with (the scenario's, else the preset's framework
    // default: DeepSpeed's 1e9 for the DeepSpeed presets; none otherwise, left to DeepSpeed).
    const std::optional<int64_t> reuse =
        sc.simulation.zero3_max_reuse_distance.has_value()
            ? sc.simulation.zero3_max_reuse_distance
            : strategies::FrameworkDefaults(sc.strategy.name).max_reuse_distance;
    if (reuse.has_value()) z["stage3_max_reuse_distance"] = *reuse;
    if (sc.simulation.reshard_after_forward == false) {
      f.Note(
          "reshard_after_forward false: ZeRO-3 releases a module's parameters after its forward "
          "unless they recur within stage3_max_reuse_distance; it has no switch that holds every "
          "unit until its backward");
    }
  }
  if (p.hybrid()) {
    if (p.zero_stage == 3) {
      z["mics_shard_size"] = p.shard_group;  // MiCS: shard in groups, replicate across
    } else {
      f.Refuse(
          fmt::format("hybrid sharding (groups of {}) with ZeRO-{}", p.shard_group, p.zero_stage),
          "DeepSpeed shards in groups (MiCS, mics_shard_size) under ZeRO-3 only");
    }
  }
  return z;
}

void PrecisionFields(const sim::Scenario& sc, Findings& f, Json& j) {
  switch (sc.training.precision) {
    case Precision::kBf16Mixed:
      j["bf16"] = {{"enabled", true}};
      break;
    case Precision::kFp16Mixed:
      j["fp16"] = {{"enabled", true}, {"loss_scale", 0}};  // 0: dynamic loss scaling
      break;
    case Precision::kBf16:
      f.Refuse("pure bf16 training (no fp32 master weights)",
               "DeepSpeed's bf16 mode keeps fp32 master weights in its optimizer");
      break;
    case Precision::kFp8Mixed:
      f.Refuse("fp8 mixed precision", "the DeepSpeed config has no fp8 mode");
      break;
  }
  // data_types.grad_accum_dtype: the dtype DeepSpeed accumulates gradients in (its bf16
  // optimizer, deepspeed/runtime/bf16_optimizer.py; microsoft/DeepSpeed pull 4713).
  if (sc.training.main_grads_fp32) j["data_types"] = {{"grad_accum_dtype", "fp32"}};
}

void OptimizerFields(const sim::Scenario& sc, Findings& f, Json& j) {
  switch (sc.training.optimizer) {
    case Optimizer::kAdam:
      j["optimizer"] = {{"type", "Adam"}};
      break;
    case Optimizer::kAdamW:
      j["optimizer"] = {{"type", "AdamW"}};
      break;
    case Optimizer::kSgdMomentum:
    case Optimizer::kAdam8bit:
      f.Note(
          fmt::format("the config names no {} optimizer: pass yours to "
                      "deepspeed.initialize(optimizer=...)",
                      strategies::OptimizerName(sc.training.optimizer)));
      break;
  }
}

void CheckpointingFields(const sim::Scenario& sc, Findings& f, Json& j) {
  const Recompute r = sc.training.recompute;
  if (r == Recompute::kNone) return;
  j["activation_checkpointing"] = {{"partition_activations", false},
                                   {"cpu_checkpointing", false},
                                   {"contiguous_memory_optimization", false},
                                   {"synchronize_checkpoint_boundary", false},
                                   {"profile", false}};
  f.Note(r == Recompute::kFull
             ? "full recompute: call deepspeed.checkpointing.checkpoint on every transformer "
               "layer's forward"
             : "selective recompute: call deepspeed.checkpointing.checkpoint on the attention "
               "core (QK^T, softmax, dropout, xV) only");
}

}  // namespace

StatusOr<Exported> ExportDeepSpeed(const sim::Scenario& scenario) {
  Findings f(kName);
  const DataParallelPlan p = ReadDataParallel(scenario.strategy, f);
  CheckAxes(scenario, p, f);
  if (scenario.simulation.sync_grads_every_micro_batch) {
    f.Refuse("gradient sync after every micro-batch",
             "DeepSpeed reduces gradients at the gradient accumulation boundary");
  }
  Json j;
  j["train_batch_size"] = scenario.training.global_batch;
  j["train_micro_batch_size_per_gpu"] = scenario.training.micro_batch;
  j["gradient_accumulation_steps"] = GradientAccumulationSteps(scenario);
  PrecisionFields(scenario, f, j);
  OptimizerFields(scenario, f, j);
  j["zero_optimization"] = ZeroSection(scenario, p, f);
  CheckpointingFields(scenario, f, j);
  if (f.refused()) return f.ToStatus();
  Exported e;
  e.framework = Framework::kDeepSpeed;
  e.text = j.dump(2) + "\n";
  e.notes = f.notes();
  return e;
}

}  // namespace placesim::exporting::internal
