// Plan reports: table, JSON (nlohmann::ordered_json, so key order is the insertion order and
// output is byte-identical for the same plan) and CSV. See report.h for the key list.
// Thread-safety: pure functions.
#include "strategies/report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "topology/mesh.h"

namespace placesim::strategies {
namespace {

using Json = nlohmann::ordered_json;
using topology::Axis;
using topology::AxisName;

std::string PlacementSymbol(const Placement& p) {
  if (p.mode == Mode::kOffloaded) return fmt::format("O({})", OffloadTargetName(p.target));
  return ModeSymbol(p.mode);
}

Json MemoryJson(const RankRole& r) {
  const MemoryBreakdown& m = r.memory;
  Json j;
  j["role"] = r.name;
  j["params_bytes"] = m.params.count();
  j["grads_bytes"] = m.grads.count();
  j["optimizer_bytes"] = m.optimizer.count();
  j["activations_bytes"] = m.activations.count();
  j["gather_buffers_bytes"] = m.gather_buffers.count();
  j["offload_staging_bytes"] = m.offload_staging.count();
  j["total_bytes"] = m.total.count();
  j["capacity_bytes"] = m.capacity.count();
  j["headroom_bytes"] = m.headroom.count();
  j["fits"] = m.fits;
  j["offloaded_host_bytes"] = m.offloaded_host.count();
  j["offloaded_nvme_bytes"] = m.offloaded_nvme.count();
  j["host_capacity_bytes"] = m.host_capacity.count();
  j["nvme_capacity_bytes"] = m.nvme_capacity.count();
  j["fits_host"] = m.fits_host;
  j["fits_nvme"] = m.fits_nvme;
  return j;
}

Json CommJson(const RankRole& r) {
  Json j;
  j["bytes_per_device_per_step"] = r.comm_bytes.count();
  Json list = Json::array();
  for (const Collective& c : r.collectives) {
    Json e;
    e["kind"] = CollectiveKindName(c.kind);
    e["axis"] = AxisName(c.axis);
    e["state"] = StateName(c.state);
    e["group_size"] = c.group_size;
    e["buffer_bytes"] = c.buffer_bytes.count();
    e["bytes_per_call"] = c.bytes_per_call.count();
    e["count"] = c.count;
    e["total_bytes"] = c.total_bytes.count();
    e["purpose"] = c.purpose;
    list.push_back(std::move(e));
  }
  j["collectives"] = std::move(list);
  return j;
}

Json OffloadJson(const RankRole& r) {
  Json j;
  j["bytes_per_device_per_step"] = r.copy_bytes.count();
  Json list = Json::array();
  for (const OffloadCopy& c : r.copies) {
    Json e;
    e["direction"] = CopyDirectionName(c.direction);
    e["state"] = StateName(c.state);
    e["target"] = OffloadTargetName(c.target);
    e["bytes"] = c.bytes_per_step.count();
    e["purpose"] = c.purpose;
    list.push_back(std::move(e));
  }
  j["copies"] = std::move(list);
  return j;
}

Json MeshJson(const topology::MeshShape& mesh) {
  Json j;
  for (int a = 0; a < topology::kNumAxes; ++a) {
    j[AxisName(static_cast<Axis>(a))] = mesh.size(static_cast<Axis>(a));
  }
  return j;
}

std::string Csv(const std::string& field) {
  if (field.find_first_of(",\"\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char ch : field) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// "1 micro-batch", "4 micro-batches": the count and the noun, singular when the count is 1.
std::string CountOf(int64_t n, std::string_view singular, std::string_view plural) {
  return fmt::format("{} {}", n, n == 1 ? singular : plural);
}

std::string HumanCount(double v) {
  if (v >= 1e12) return fmt::format("{:.3f} T", v / 1e12);
  if (v >= 1e9) return fmt::format("{:.2f} B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  return fmt::format("{:.0f}", v);
}

}  // namespace

std::string FormatBytes(Bytes b) { return fmt::format("{} ({})", ToString(b), ToIecString(b)); }

std::string FormatPlacementTable(const Plan& plan) {
  std::string out = fmt::format("{:<16}", "placement");
  for (int a = 0; a < topology::kNumAxes; ++a) {
    const Axis axis = static_cast<Axis>(a);
    out += fmt::format("{:>10}", fmt::format("{}={}", AxisName(axis), plan.mesh.size(axis)));
  }
  out += '\n';
  for (int s = 0; s < kNumStates; ++s) {
    const State state = static_cast<State>(s);
    out += fmt::format("{:<16}", fmt::format("{} {}", StateName(state), StateSymbol(state)));
    for (int a = 0; a < topology::kNumAxes; ++a) {
      out += fmt::format("{:>10}", PlacementSymbol(plan.placement[a][s]));
    }
    out += '\n';
  }
  return out;
}

// The first lines of the plan table: model, strategy, training, pipeline and FLOPs.
std::string FormatPlanHeader(const Plan& plan) {
  std::string out;
  const topology::MeshShape& m = plan.mesh;
  out += fmt::format("model     {} ({} parameters)\n",
                     plan.model_name.empty() ? "custom" : plan.model_name,
                     HumanCount(static_cast<double>(plan.parameter_count)));
  out += fmt::format("strategy  {} on dp {} x tp {} x pp {} x cp {} (ep {}) = {}; cluster {}\n",
                     plan.strategy_name.empty() ? "custom" : plan.strategy_name, m.dp, m.tp, m.pp,
                     m.cp, m.ep, CountOf(plan.world, "rank", "ranks"),
                     CountOf(plan.cluster_devices, "device", "devices"));
  const TrainingSpec& t = plan.training;
  out += fmt::format(
      "training  {}, {}, micro-batch {}, global batch {}, {} per step, recompute {}, "
      "sequence parallel {}{}{}{}{}\n",
      PrecisionName(t.precision), OptimizerName(t.optimizer), t.micro_batch, t.global_batch,
      CountOf(plan.micro_batches, "micro-batch", "micro-batches"),
      RecomputeName(plan.effective_recompute), plan.effective_sequence_parallel ? "on" : "off",
      t.flash_attention ? ", flash attention" : "",
      // Only when named, so summaries of scenarios without the field read as before.
      t.attention_kernel != topology::AttentionKernel::kDeviceDefault
          ? fmt::format(" ({})", topology::AttentionKernelName(t.attention_kernel))
          : "",
      t.main_grads_fp32 ? ", fp32 main grads" : "",
      t.distribute_saved_activations ? ", saved activations distributed over tp" : "");
  if (m.pp > 1) {
    out += fmt::format("pipeline  {} stages, {}{}, bubble {:.1f}% of ideal time\n", m.pp,
                       PipelineScheduleName(t.pipeline_schedule),
                       t.virtual_stages > 1 ? fmt::format(" x {} virtual", t.virtual_stages) : "",
                       100.0 * plan.bubble_fraction);
  }
  if (plan.flops_per_iteration.count() > 0) {
    out += fmt::format("flops     {:.3e} per iteration (Narayanan et al. 2021, eq. 3)\n",
                       plan.flops_per_iteration.count());
  }
  return out;
}

std::string FormatPlanTable(const Plan& plan) {
  std::string out = FormatPlanHeader(plan);
  out += '\n';
  out += FormatPlacementTable(plan);

  // Memory: one column per role.
  out += "\nmemory per device\n";
  constexpr int kLabel = 18;
  constexpr int kCol = 26;
  out += fmt::format("{:<{}}", "", kLabel);
  for (const RankRole& r : plan.roles) out += fmt::format("{:>{}}", r.name, kCol);
  out += '\n';
  const auto row = [&](const char* label, auto get) {
    out += fmt::format("{:<{}}", label, kLabel);
    for (const RankRole& r : plan.roles) out += fmt::format("{:>{}}", FormatBytes(get(r)), kCol);
    out += '\n';
  };
  row("params", [](const RankRole& r) { return r.memory.params; });
  row("grads", [](const RankRole& r) { return r.memory.grads; });
  row("optimizer", [](const RankRole& r) { return r.memory.optimizer; });
  row("activations", [](const RankRole& r) { return r.memory.activations; });
  row("gather buffers", [](const RankRole& r) { return r.memory.gather_buffers; });
  row("offload staging", [](const RankRole& r) { return r.memory.offload_staging; });
  row("total", [](const RankRole& r) { return r.memory.total; });
  row("capacity", [](const RankRole& r) { return r.memory.capacity; });
  row("headroom", [](const RankRole& r) { return r.memory.headroom; });
  const auto fits_row = [&](const char* label, auto fits) {
    out += fmt::format("{:<{}}", label, kLabel);
    for (const RankRole& r : plan.roles) out += fmt::format("{:>{}}", fits(r) ? "yes" : "NO", kCol);
    out += '\n';
  };
  fits_row("fits", [](const RankRole& r) { return r.memory.fits; });
  bool offloaded = false;
  for (const RankRole& r : plan.roles) {
    offloaded =
        offloaded || r.memory.offloaded_host.count() > 0 || r.memory.offloaded_nvme.count() > 0;
  }
  if (offloaded) {
    row("off-device host", [](const RankRole& r) { return r.memory.offloaded_host; });
    row("host share", [](const RankRole& r) { return r.memory.host_capacity; });
    fits_row("fits host", [](const RankRole& r) { return r.memory.fits_host; });
    row("off-device nvme", [](const RankRole& r) { return r.memory.offloaded_nvme; });
    row("nvme share", [](const RankRole& r) { return r.memory.nvme_capacity; });
    fits_row("fits nvme", [](const RankRole& r) { return r.memory.fits_nvme; });
  }

  const RankRole& big = plan.largest();
  out += fmt::format("\ncommunication per device per step ({}): {}\n", big.name,
                     FormatBytes(big.comm_bytes));
  for (const Collective& c : big.collectives) {
    out +=
        fmt::format("  {:<15}{:<4}{:<12} N={:<5} {:>6} x {:>24} = {:>24}  {}\n",
                    CollectiveKindName(c.kind), AxisName(c.axis), StateName(c.state), c.group_size,
                    c.count, FormatBytes(c.bytes_per_call), FormatBytes(c.total_bytes), c.purpose);
  }
  if (!big.copies.empty()) {
    out += fmt::format("\noffload copies per device per step ({}): {}\n", big.name,
                       FormatBytes(big.copy_bytes));
    for (const OffloadCopy& c : big.copies) {
      out += fmt::format("  {:<4}{:<12}{:<6}{:>24}  {}\n", CopyDirectionName(c.direction),
                         StateName(c.state), OffloadTargetName(c.target),
                         FormatBytes(c.bytes_per_step), c.purpose);
    }
  }

  out += fmt::format("\ncorrectness: {} ({}, {})\n", plan.ok() ? "ok" : "VIOLATED",
                     CountOf(plan.errors(), "error", "errors"),
                     CountOf(plan.warnings(), "warning", "warnings"));
  for (const Finding& f : plan.findings) {
    out += fmt::format("  {} [{}]{}{}: {}\n    fix: {}\n", SeverityName(f.severity), f.rule,
                       f.state ? fmt::format(" {}", StateName(*f.state)) : "",
                       f.axis ? fmt::format(" on {}", AxisName(*f.axis)) : "", f.message, f.fix);
  }
  for (const std::string& note : plan.notes) out += fmt::format("note: {}\n", note);
  return out;
}

std::string FormatPlanJson(const Plan& plan) {
  Json j;
  Json scenario;
  scenario["model"] = plan.model_name;
  scenario["parameter_count"] = plan.parameter_count;
  scenario["strategy"] = plan.strategy_name;
  scenario["mesh"] = MeshJson(plan.mesh);
  scenario["world"] = plan.world;
  scenario["cluster_devices"] = plan.cluster_devices;
  const TrainingSpec& t = plan.training;
  Json training;
  training["precision"] = PrecisionName(t.precision);
  training["optimizer"] = OptimizerName(t.optimizer);
  training["micro_batch"] = t.micro_batch;
  training["global_batch"] = t.global_batch;
  training["micro_batches_per_step"] = plan.micro_batches;
  training["recompute"] = RecomputeName(plan.effective_recompute);
  training["sequence_parallel"] = plan.effective_sequence_parallel;
  training["flash_attention"] = t.flash_attention;
  // Only when on, so plans of scenarios without the field read as before.
  if (t.main_grads_fp32) training["main_grads_fp32"] = true;
  if (t.distribute_saved_activations) training["distribute_saved_activations"] = true;
  if (t.attention_kernel != topology::AttentionKernel::kDeviceDefault) {
    training["attention_kernel"] = topology::AttentionKernelName(t.attention_kernel);
  }
  training["context_parallel_comm"] = ContextParallelCommName(t.context_parallel_comm);
  training["pipeline_schedule"] = PipelineScheduleName(t.pipeline_schedule);
  training["virtual_stages"] = t.virtual_stages;
  scenario["training"] = std::move(training);
  Json placement;
  for (int s = 0; s < kNumStates; ++s) {
    Json row;
    for (int a = 0; a < topology::kNumAxes; ++a) {
      row[AxisName(static_cast<Axis>(a))] = PlacementSymbol(plan.placement[a][s]);
    }
    placement[StateName(static_cast<State>(s))] = std::move(row);
  }
  scenario["placement"] = std::move(placement);
  j["scenario"] = std::move(scenario);

  const RankRole& big = plan.largest();
  j["memory"] = MemoryJson(big);
  j["comm"] = CommJson(big);
  j["offload"] = OffloadJson(big);
  Json pipeline;
  pipeline["stages"] = plan.mesh.pp;
  pipeline["schedule"] = PipelineScheduleName(t.pipeline_schedule);
  pipeline["virtual_stages"] = t.virtual_stages;
  pipeline["micro_batches"] = plan.micro_batches;
  pipeline["bubble_fraction"] = plan.bubble_fraction;
  j["pipeline"] = std::move(pipeline);
  j["flops_per_iteration"] = plan.flops_per_iteration.count();

  Json roles = Json::array();
  for (const RankRole& r : plan.roles) {
    Json e;
    e["name"] = r.name;
    e["first_stage"] = r.first_stage;
    e["last_stage"] = r.last_stage;
    e["ranks"] = r.ranks;
    e["layers"] = r.layers;
    e["has_embedding"] = r.has_embedding;
    e["has_head"] = r.has_head;
    e["microbatches_in_flight"] = r.microbatches_in_flight;
    e["params_local"] = r.params_local;
    e["memory"] = MemoryJson(r);
    e["comm"] = CommJson(r);
    e["offload"] = OffloadJson(r);
    roles.push_back(std::move(e));
  }
  j["roles"] = std::move(roles);

  Json correctness;
  correctness["ok"] = plan.ok();
  correctness["errors"] = plan.errors();
  correctness["warnings"] = plan.warnings();
  Json findings = Json::array();
  for (const Finding& f : plan.findings) {
    Json e;
    e["severity"] = SeverityName(f.severity);
    e["rule"] = f.rule;
    e["state"] = f.state ? Json(StateName(*f.state)) : Json(nullptr);
    e["axis"] = f.axis ? Json(AxisName(*f.axis)) : Json(nullptr);
    e["message"] = f.message;
    e["fix"] = f.fix;
    findings.push_back(std::move(e));
  }
  correctness["findings"] = std::move(findings);
  j["correctness"] = std::move(correctness);
  j["notes"] = plan.notes;
  return j.dump(2) + "\n";
}

std::string FormatPlanCsv(const Plan& plan) {
  std::string out =
      "role,first_stage,last_stage,ranks,layers,params_bytes,grads_bytes,optimizer_bytes,"
      "activations_bytes,gather_buffers_bytes,offload_staging_bytes,total_bytes,capacity_bytes,"
      "headroom_bytes,fits,comm_bytes_per_step,offload_bytes_per_step\n";
  for (const RankRole& r : plan.roles) {
    const MemoryBreakdown& m = r.memory;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", Csv(r.name),
                       r.first_stage, r.last_stage, r.ranks, r.layers, m.params.count(),
                       m.grads.count(), m.optimizer.count(), m.activations.count(),
                       m.gather_buffers.count(), m.offload_staging.count(), m.total.count(),
                       m.capacity.count(), m.headroom.count(), m.fits ? "true" : "false",
                       r.comm_bytes.count(), r.copy_bytes.count());
  }
  return out;
}

}  // namespace placesim::strategies
