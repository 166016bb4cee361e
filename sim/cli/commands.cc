// Subcommands of `placesim`. Each parses its own flags with Boost.Program_options, loads the
// scenario (sim/scenario), calls the library, and formats the result. Exceptions from
// Program_options are caught here and become exit code 2 with the library's message.
#include "sim/cli/commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/suggest.h"
#include "placesim/json.h"
#include "placesim/placesim.h"
#include "placesim/version.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/collective.h"
#include "sim/cli/compare.h"
#include "sim/cli/economics.h"
#include "sim/cli/export.h"
#include "sim/cli/replay.h"
#include "sim/cli/report.h"
#include "sim/cli/search.h"
#include "sim/cli/sweep.h"
#include "sim/cli/trace_window.h"
#include "sim/collectives/registry.h"
#include "sim/executor/executor.h"
#include "sim/memory/tiers.h"
#include "sim/network/network_model.h"
#include "sim/scenario/scenario.h"
#include "strategies/analyzer.h"
#include "strategies/presets.h"
#include "strategies/report.h"
#include "topology/cluster.h"
#include "topology/dot.h"
#include "topology/presets.h"
#include "topology/summary.h"
#include "traces/atomic_output_file.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: placesim COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  analyze SCENARIO    memory per state per device, communication volume per step and\n"
    "                      the correctness verdict, from the placement alone (instant)\n"
    "  simulate SCENARIO   replay one training step on the cluster, every pipeline stage\n"
    "                      and axis of the mesh: step time, MFU, exposed communication,\n"
    "                      peak memory per stage; --trace FILE for Perfetto\n"
    "  sweep SCENARIO --vary FIELD=V1,V2,...\n"
    "                      what-if study: the cartesian product of overrides, one row per\n"
    "                      point (--jobs N, --shard K/N, --mode analyze|simulate)\n"
    "  merge FILE...       join the JSON outputs of sharded sweeps\n"
    "  compare BASELINE.json CURRENT.json [--threshold 2%]\n"
    "                      per-metric deltas; exit 1 when any regresses\n"
    "  search SCENARIO     the best strategies for the model and cluster that fit memory:\n"
    "                      every mesh, ZeRO/FSDP/offload choice, micro-batch, recompute and\n"
    "                      pipeline schedule screened analytically, the best simulated\n"
    "  export SCENARIO --to megatron|deepspeed|fsdp\n"
    "                      the plan as the framework's configuration: Megatron-LM\n"
    "                      arguments, a DeepSpeed config JSON or a PyTorch FSDP snippet\n"
    "  topology SCENARIO   the cluster graph: GPUs, links by kind, injection and bisection\n"
    "                      bandwidth; --dot FILE writes it for Graphviz\n"
    "  presets             every built-in hardware, node, model and strategy preset\n"
    "  report SCENARIO -o FILE.html\n"
    "                      one step as a self-contained HTML page with charts\n"
    "  collective SCENARIO --op KIND [--sizes 8B..8GiB:x2] [--gpus N | --group dp]\n"
    "                      one collective alone on the cluster, per algorithm, printed\n"
    "                      like nccl-tests (time, algbw, busbw per message size)\n"
    "  replay TRACE_PREFIX SCENARIO [--comm-groups FILE.json]\n"
    "                      a Chakra execution trace (<prefix>.<rank>.et, e.g. from ASTRA-sim's\n"
    "                      tools) on the scenario's cluster; simulate --chakra-out PREFIX\n"
    "                      writes a simulated step as one\n"
    "\n"
    "Every command that reads a scenario takes --set FIELD.PATH=VALUE (repeatable), e.g.\n"
    "  placesim analyze examples/zero-7.5b.textproto --set strategy.preset=zero2\n"
    "Run `placesim help COMMAND` (or `placesim COMMAND --help`) for a command's options,\n"
    "`placesim --version` for the version.\n"
    "\n"
    "Exit codes: 0 ok; 1 a regression (compare); 2 bad input; 3 the strategy is incorrect\n"
    "(analyze).\n";

// Common options of commands that read a scenario.
struct ScenarioArgs {
  std::string path;
  std::vector<std::string> sets;
  std::string format = "table";
  std::vector<std::string> formats;  // what --format accepts for this command
};

void AddScenarioOptions(po::options_description& desc, ScenarioArgs& a) {
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(&a.path)->required(), "scenario file")(
      "set", po::value<std::vector<std::string>>(&a.sets)->composing(),
      "FIELD.PATH=VALUE: override any scalar scenario field, e.g. cluster.nodes=32 "
      "(repeatable)")("format", po::value<std::string>(&a.format)->default_value("table"),
                      ("output format: " + JoinNames(a.formats)).c_str());
}

// The shared front of every command that reads a scenario: --help, parsing (the scenario is
// the one positional argument) and the --format check. Returns the exit code when the
// command should stop here, nothing when it should go on.
std::optional<int> ParseScenarioCommand(const std::string& command,
                                        const std::vector<std::string>& args,
                                        const po::options_description& desc, const ScenarioArgs& a,
                                        std::ostream& out, std::ostream& err) {
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs(command, args, desc, pos, err)) return kExitBadInput;
  if (!CheckChoice(command, "format", a.format, a.formats, err)) return kExitBadInput;
  return std::nullopt;
}

// analyze's output with the economics figures of a scenario that asks for them.
void PrintAnalyzeEconomics(const std::string& format, const strategies::Plan& plan,
                           const economics::Figures& f, std::ostream& out) {
  if (format == "json") {
    out << AddEconomicsToJson(strategies::FormatPlanJson(plan), f) << "\n";
  } else if (format == "csv") {
    out << AppendEconomicsCsv(strategies::FormatPlanCsv(plan), f);
  } else {
    out << strategies::FormatPlanTable(plan) << EconomicsTable(f);
  }
}

// ------------------------------------------------------------------------------- analyze
int Analyze(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ScenarioArgs a;
  a.formats = {"table", "json", "csv"};
  po::options_description desc("placesim analyze SCENARIO [options]");
  AddScenarioOptions(desc, a);
  if (auto done = ParseScenarioCommand("analyze", args, desc, a, out, err)) {
    return *done;
  }

  StatusOr<Scenario> scenario = api::LoadScenario(a.path, a.sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  StatusOr<strategies::Plan> plan = api::Analyze(*scenario);
  if (!plan.ok()) return ReportError(err, "analyze", plan.status());

  if (scenario->economics) {  // cost and energy only when the scenario asks (docs/economics.md)
    PrintAnalyzeEconomics(a.format, *plan, AnalyzedEconomics(*scenario), out);
    return plan->ok() ? kExitOk : kExitIncorrectStrategy;
  }
  if (a.format == "json") {
    out << strategies::FormatPlanJson(*plan) << "\n";
  } else if (a.format == "csv") {
    out << strategies::FormatPlanCsv(*plan);
  } else {
    out << strategies::FormatPlanTable(*plan);
  }
  return plan->ok() ? kExitOk : kExitIncorrectStrategy;
}

// ------------------------------------------------------------------------------ simulate
// The role with the highest device-memory peak (the first of equal ones).
const RoleResult& PeakMemoryRole(const SimResult& r) {
  return *std::max_element(
      r.roles.begin(), r.roles.end(),
      [](const RoleResult& a, const RoleResult& b) { return a.peak_memory < b.peak_memory; });
}

// One header row and one row per rank role; times in seconds, sizes in bytes.
std::string SimulationCsv(const SimResult& r) {
  std::string out =
      "role,ranks,step_time_s,mfu,hfu,tokens_per_second,compute_s,comm_s,exposed_comm_s,copy_s,"
      "host_s,idle_s,peak_memory_bytes,capacity_bytes,comm_bytes_per_device_per_step\n";
  for (const RoleResult& role : r.roles) {
    out += fmt::format(
        "\"{}\",{},{:.9g},{:.6g},{:.6g},{:.6g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{}"
        "\n",
        role.role, role.ranks, role.step_time.ToSeconds(), r.mfu, r.hfu, r.tokens_per_second,
        role.compute_busy.ToSeconds(), role.comm_busy.ToSeconds(), role.exposed_comm.ToSeconds(),
        role.copy_busy.ToSeconds(), role.host_busy.ToSeconds(), role.idle.ToSeconds(),
        role.peak_memory.count(), role.capacity.count(), role.comm_bytes().count());
  }
  return out;
}

// Lines of the live bytes per memory tag at the role's peak.
std::string LiveAtPeakLines(const RoleResult& role) {
  std::string out;
  for (int t = 0; t < kNumMemoryTags; ++t) {
    if (role.live_at_peak[t].count() == 0) continue;
    out += fmt::format("  {:<22} {}\n",
                       strategies::MemoryTagName(static_cast<strategies::MemoryTag>(t)),
                       ToString(role.live_at_peak[t]));
  }
  return out;
}

// One line per collective kind the role called: calls, bytes and the algorithms that ran them.
std::string CollectiveKindLines(const RoleResult& role, std::string_view indent, int width) {
  std::string out;
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    if (role.collective_calls[k] == 0) continue;
    std::string algorithms;
    for (size_t alg = 0; alg < role.algorithm_calls[k].size(); ++alg) {
      if (role.algorithm_calls[k][alg] == 0) continue;
      algorithms += fmt::format("{}{} {}", algorithms.empty() ? "" : ", ",
                                role.algorithm_calls[k][alg], role.algorithm_names[alg]);
    }
    out += fmt::format("{}{:<{}} {} calls, {} ({})\n", indent,
                       strategies::CollectiveKindName(static_cast<strategies::CollectiveKind>(k)),
                       width, role.collective_calls[k], ToString(role.collective_bytes[k]),
                       algorithms);
  }
  return out;
}

// A role's host and NVMe peaks beside its share of the node's (sim/memory/tiers.h); empty
// when nothing is offloaded.
std::string OffDeviceLine(const SimResult& r, const RoleResult& role) {
  if (role.peak_host_memory.count() == 0 && role.peak_nvme.count() == 0) return {};
  const strategies::MemoryBreakdown& share = r.plan.largest().memory;
  const sim::TierFits fits = sim::FitsPerTier(role.peak_memory, role.peak_host_memory,
                                              role.peak_nvme, role.capacity, share);
  return fmt::format("off-device      host {} of a {} share ({}), nvme {} of a {} share ({})\n",
                     ToString(role.peak_host_memory), ToString(share.host_capacity),
                     fits.host ? "fits" : "DOES NOT FIT", ToString(role.peak_nvme),
                     ToString(share.nvme_capacity), fits.nvme ? "fits" : "DOES NOT FIT");
}

// The table of one role: its streams, memory and collectives.
std::string SingleRoleLines(const SimResult& r) {
  const RoleResult& role = r.roles.front();
  auto share = [&](Duration d) { return 100.0 * (d / r.step_time); };
  std::string out;
  out += fmt::format("compute         {} ({:.1f}% of the step)\n", ToString(role.compute_busy),
                     share(role.compute_busy));
  out +=
      fmt::format("communication   {} busy, {} exposed ({:.1f}% of the step)\n",
                  ToString(role.comm_busy), ToString(role.exposed_comm), share(role.exposed_comm));
  if (role.copy_busy > Duration::Zero() || role.host_busy > Duration::Zero()) {
    out += fmt::format("offload         copies {}, host compute {}\n", ToString(role.copy_busy),
                       ToString(role.host_busy));
  }
  out += fmt::format("peak memory     {} (capacity {}) at {}\n", ToString(role.peak_memory),
                     ToString(role.capacity), ToString(role.peak_at));
  out += OffDeviceLine(r, role);
  out += LiveAtPeakLines(role);
  out += fmt::format("bytes sent      {} per device per step\n", ToString(role.comm_bytes()));
  out += CollectiveKindLines(role, "  ", 22);
  return out;
}

// The table of several roles (pipeline stages): one row of stream times and memory peak per
// role, the breakdown of the highest peak, and each role's collectives.
std::string MultiRoleLines(const SimResult& r) {
  size_t width = 20;
  for (const RoleResult& role : r.roles) width = std::max(width, role.role.size());
  std::string out = fmt::format("{:<{}} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "roles",
                                width + 2, "ranks", "step time", "compute", "comm busy", "exposed",
                                "p2p busy", "peak memory");
  for (const RoleResult& role : r.roles) {
    out += fmt::format("  {:<{}} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", role.role,
                       width, role.ranks, ToString(role.step_time), ToString(role.compute_busy),
                       ToString(role.comm_busy), ToString(role.exposed_comm),
                       ToString(role.p2p_busy), ToString(role.peak_memory));
  }
  bool offload = false;
  for (const RoleResult& role : r.roles) {
    offload |= role.copy_busy > Duration::Zero() || role.host_busy > Duration::Zero();
  }
  if (offload) {
    out += "offload         copies, host compute\n";
    for (const RoleResult& role : r.roles) {
      out += fmt::format("  {:<{}} {}, {}\n", role.role, width, ToString(role.copy_busy),
                         ToString(role.host_busy));
    }
  }
  const RoleResult& peak = PeakMemoryRole(r);
  out += fmt::format("peak memory     {} (capacity {}) in {} at {}\n", ToString(peak.peak_memory),
                     ToString(peak.capacity), peak.role, ToString(peak.peak_at));
  out += OffDeviceLine(r, peak);
  out += LiveAtPeakLines(peak);
  out += "bytes sent      per device per step\n";
  for (const RoleResult& role : r.roles) {
    out += fmt::format("  {:<{}} {}\n", role.role, width, ToString(role.comm_bytes()));
    out += CollectiveKindLines(role, "    ", 20);
  }
  return out;
}

// A folded step (sim/study/fold.h) says so and from which replays.
std::string FoldedLine(const SimResult& r) {
  const std::vector<int64_t>& m = r.folded_from;  // three replays (sim/study/fold.h)
  return fmt::format(
      "folded          {} micro-batches are over the op limit: replayed at {}, {} and {} and "
      "extended linearly (docs/scale.md)\n",
      r.plan.micro_batches, m.at(0), m.at(1), m.at(2));
}

std::string SimulationTable(const SimResult& r) {
  std::string out;
  out +=
      fmt::format("step time       {}{}\n", ToString(r.step_time),
                  r.roles.size() == 1 ? std::string()
                                      : fmt::format(" (the slowest of {} roles)", r.roles.size()));
  out += fmt::format(
      "MFU             {:.1f}% (model FLOPs, Megatron-LM eq. 3 on its shapes / step time / peak "
      "{}); HFU "
      "{:.1f}% (recompute included)\n",
      100.0 * r.mfu, ToString(r.peak), 100.0 * r.hfu);
  out += fmt::format("throughput      {:.0f} tokens/s\n", r.tokens_per_second);
  if (!r.folded_from.empty()) out += FoldedLine(r);
  out += r.roles.size() == 1 ? SingleRoleLines(r) : MultiRoleLines(r);
  bool header = false;
  for (const LinkKindStats& l : r.links) {
    if (l.links_used == 0) continue;
    if (!header) {
      out +=
          "links           kind      used/total   bytes carried   busiest   mean busy  peak "
          "flows\n";
      header = true;
    }
    out += fmt::format("  {:<22} {:>5}/{:<6} {:>13}   {:>6.1f}%   {:>8.1f}%  {:>10}\n",
                       topology::LinkKindName(l.kind), l.links_used, l.links, ToString(l.bytes),
                       100.0 * l.utilization_max, 100.0 * l.utilization_avg, l.peak_flows);
  }
  for (const auto& f : r.findings) {
    out += fmt::format("{}: {}: {}\n", strategies::SeverityName(f.severity), f.rule, f.message);
  }
  return out;
}

// simulate's output with the economics figures of a scenario that asks for them.
void PrintSimulateEconomics(const std::string& format, const SimResult& r,
                            const economics::Figures& f, std::ostream& out) {
  if (format == "json") {
    nlohmann::ordered_json j = api::SimulationJson(r);
    j["economics"] = api::EconomicsJson(f);
    out << j.dump(2) << "\n";
  } else if (format == "csv") {
    out << AppendEconomicsCsv(SimulationCsv(r), f);
  } else {
    out << SimulationTable(r) << EconomicsTable(f);
  }
}

// --trace-ranks and --trace-window qualify an output; without one they are a mistake.
bool TraceFlagsConsistent(const std::string& trace_path, const std::string& trace_ranks,
                          const std::string& trace_window, const std::string& chakra_out,
                          std::ostream& err) {
  if (!trace_ranks.empty() && trace_path.empty() && chakra_out.empty()) {
    err << "placesim simulate: --trace-ranks needs --trace FILE or --chakra-out PREFIX\n";
    return false;
  }
  if (!trace_window.empty() && trace_path.empty()) {
    err << "placesim simulate: --trace-window needs --trace FILE\n";
    return false;
  }
  return true;
}

// The step in the requested format; cost and energy only when the scenario asks
// (docs/economics.md).
void PrintSimulation(const std::string& format, const Scenario& scenario, const SimResult& result,
                     std::ostream& out) {
  if (scenario.economics) {
    PrintSimulateEconomics(format, result, SimulatedEconomics(scenario, result), out);
  } else if (format == "json") {
    out << api::SimulationJson(result).dump(2) << "\n";
  } else if (format == "csv") {
    out << SimulationCsv(result);
  } else {
    out << SimulationTable(result);
  }
}

int Simulate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ScenarioArgs a;
  std::string trace_path;
  std::string trace_ranks;
  std::string trace_window;
  std::string network;
  std::string chakra_out;
  a.formats = {"table", "json", "csv"};
  po::options_description desc("placesim simulate SCENARIO [options]");
  AddScenarioOptions(desc, a);
  desc.add_options()("trace", po::value<std::string>(&trace_path),
                     "write the timeline to FILE (Chrome trace JSON; opens in Perfetto)")(
      "trace-ranks", po::value<std::string>(&trace_ranks),
      "with --trace: the ranks to write, e.g. 0-7,64 (default: the simulated rank of each "
      "role)")("trace-window", po::value<std::string>(&trace_window),
               "with --trace: only a part of the step, a time range (0ms-50ms) or the slices "
               "of a micro-batch range (mb:0-1)")(
      "network", po::value<std::string>(&network),
      "override the scenario's simulation.network_model: flow (max-min fair sharing "
      "of every link) or analytic (alpha-beta, no contention)")(
      "chakra-out", po::value<std::string>(&chakra_out),
      "also write the step as Chakra execution traces: PREFIX.<rank>.et (every rank, or "
      "--trace-ranks) and PREFIX.json, the communicator groups");
  if (auto done = ParseScenarioCommand("simulate", args, desc, a, out, err)) {
    return *done;
  }
  api::SimulateOptions options;
  options.network = network;
  if (Status checked = api::CheckSimulateOptions(options); !checked.ok()) {
    return ReportError(err, "simulate", checked);
  }
  if (!TraceFlagsConsistent(trace_path, trace_ranks, trace_window, chakra_out, err)) {
    return kExitBadInput;
  }
  TraceWindow window;
  if (!trace_window.empty()) {
    StatusOr<TraceWindow> parsed = ParseTraceWindow(trace_window);
    if (!parsed.ok()) return ReportError(err, "simulate", parsed.status());
    window = *parsed;
  }

  StatusOr<Scenario> scenario = api::LoadScenario(a.path, a.sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  std::vector<int64_t> chakra_ranks;
  if (!trace_ranks.empty()) {
    StatusOr<std::vector<int64_t>> ranks =
        api::ParseRankList(trace_ranks, scenario->strategy.mesh.world());
    if (!ranks.ok()) return ReportError(err, "", ranks.status());
    if (!trace_path.empty()) options.trace_ranks = *ranks;
    if (!chakra_out.empty()) chakra_ranks = std::move(*ranks);
  }
  // A micro-batch window needs the time span of its micro-batches: a first, traceless run.
  StatusOr<TraceWindow> spanned = WithMicroBatchSpan(window, [&](traces::TraceSink& probe) {
    api::SimulateOptions measuring = options;
    measuring.trace = &probe;
    return api::Simulate(*scenario, measuring).status();
  });
  if (!spanned.ok()) return ReportError(err, "simulate", spanned.status());
  window = *spanned;

  // The trace streams into a temporary file next to trace_path while the step runs (memory
  // stays bounded whatever its size) and replaces trace_path only once complete; any failure
  // removes the temporary (destroying `trace_file`; the writer, declared after it, goes first).
  std::unique_ptr<traces::AtomicOutputFile> trace_file;
  std::optional<traces::ChromeTraceWriter> writer;
  std::optional<WindowedTraceSink> windowed;  // the window and the size warning
  if (!trace_path.empty()) {
    StatusOr<std::unique_ptr<traces::AtomicOutputFile>> created =
        traces::AtomicOutputFile::Create(trace_path);
    if (!created.ok()) return ReportError(err, "simulate --trace", created.status());
    trace_file = std::move(created).value();
    writer.emplace(trace_file->stream());
    windowed.emplace(&*writer, window, &err);
    options.trace = &*windowed;
  }
  StatusOr<SimResult> result = api::Simulate(*scenario, options);
  if (!result.ok()) return ReportError(err, "simulate", result.status());
  if (windowed) {
    Status finished = windowed->Finish();
    if (!finished.ok()) {
      // A failed write (a full disk, /dev/full) surfaces in the writer first; name the file and
      // the system's reason rather than the writer's generic one.
      const Status write = trace_file->WriteStatus();
      return ReportError(err, "simulate --trace", write.ok() ? finished : write);
    }
    Status written = trace_file->Commit();
    if (!written.ok()) return ReportError(err, "simulate --trace", written);
  }
  if (!chakra_out.empty()) {
    Status written = WriteChakraStep(*scenario, chakra_out, chakra_ranks);
    if (!written.ok()) return ReportError(err, "simulate --chakra-out", written);
  }
  PrintSimulation(a.format, *scenario, *result, out);
  return kExitOk;
}

// ------------------------------------------------------------------------------ topology
// The topology summary for scripts. Keys are stable; bandwidths are bytes per second, per
// direction.
nlohmann::ordered_json TopologyJson(const topology::TopologyStats& s) {
  nlohmann::ordered_json j;
  j["fabric"] = topology::FabricKindName(s.fabric);
  j["node_model"] = s.node_model;
  j["gpu_model"] = s.gpu_model;
  j["nodes"] = s.nodes;
  j["gpus"] = s.gpus;
  j["gpus_per_node"] = s.gpus_per_node;
  j["hbm_per_gpu_bytes"] = s.hbm_per_gpu.count();
  nlohmann::ordered_json vertices;
  for (int k = 0; k < static_cast<int>(s.vertices_by_kind.size()); ++k) {
    vertices[topology::VertexKindName(static_cast<topology::VertexKind>(k))] =
        s.vertices_by_kind[k];
  }
  j["vertices"] = std::move(vertices);
  j["directed_links"] = s.links;
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : s.link_groups) {
    groups.push_back({{"kind", topology::LinkKindName(g.kind)},
                      {"bandwidth_bytes_per_s", g.bandwidth.bytes_per_second()},
                      {"count", g.count}});
  }
  j["link_groups"] = std::move(groups);
  j["scale_up_per_gpu_bytes_per_s"] = s.scale_up_per_gpu.bytes_per_second();
  j["scale_out_per_gpu_bytes_per_s"] = s.scale_out_per_gpu.bytes_per_second();
  if (s.bisection) {
    j["bisection_bytes_per_s"] = s.bisection->bytes_per_second();
  } else {
    j["bisection_bytes_per_s"] = nullptr;
  }
  return j;
}

int Topology(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ScenarioArgs a;
  std::string dot;
  std::string dot_level = "auto";
  a.formats = {"table", "json"};
  po::options_description desc("placesim topology SCENARIO [options]");
  AddScenarioOptions(desc, a);
  desc.add_options()("dot", po::value<std::string>(&dot),
                     "also write the cluster graph to FILE (Graphviz: `dot -Tsvg FILE`)")(
      "dot-level", po::value<std::string>(&dot_level)->default_value("auto"),
      "with --dot: gpu (every GPU, switch and NIC, a box per node), node (one vertex per "
      "node and the scale-out switches) or auto (gpu up to 64 GPUs, node beyond)");
  if (auto done = ParseScenarioCommand("topology", args, desc, a, out, err)) {
    return *done;
  }
  static const std::map<std::string, topology::DotLevel> kDotLevels = {
      {"auto", topology::DotLevel::kAuto},
      {"gpu", topology::DotLevel::kGpu},
      {"node", topology::DotLevel::kNode}};
  if (!CheckChoice("topology", "dot-level", dot_level, {"auto", "gpu", "node"}, err)) {
    return kExitBadInput;
  }

  StatusOr<Scenario> scenario = api::LoadScenario(a.path, a.sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
  if (!cluster.ok()) return ReportError(err, "topology", cluster.status());

  if (!dot.empty()) {
    std::ostringstream graph;
    topology::WriteReadableDot(*cluster, graph, kDotLevels.at(dot_level));
    Status written = WriteFileAtomically(dot, graph.str());
    if (!written.ok()) return ReportError(err, "topology --dot", written);
  }
  if (a.format == "json") {
    out << TopologyJson(topology::ComputeTopologyStats(*cluster)).dump(2) << "\n";
  } else {
    out << topology::FormatTopologySummary(*cluster);
  }
  return kExitOk;
}

// ------------------------------------------------------------------------------- presets
int Presets(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string format = "table";
  po::options_description desc("placesim presets [options]");
  desc.add_options()("help,h", "show this help")(
      "format", po::value<std::string>(&format)->default_value("table"),
      "output format: table or json");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  if (!ParseArgs("presets", args, desc, pos, err)) return kExitBadInput;
  if (!CheckChoice("presets", "format", format, {"table", "json"}, err)) return kExitBadInput;

  struct Entry {
    std::string name, description, source;
  };
  std::vector<std::pair<std::string, std::vector<Entry>>> groups;
  {
    std::vector<Entry> e;
    for (const auto& d : topology::DevicePresets()) e.push_back({d.name, d.description, d.source});
    groups.emplace_back("devices", std::move(e));
  }
  {
    std::vector<Entry> e;
    for (const auto& n : topology::NodePresets()) e.push_back({n.name, n.description, n.source});
    groups.emplace_back("nodes", std::move(e));
  }
  {
    std::vector<Entry> e;
    for (const auto& m : strategies::ModelPresets()) {
      e.push_back({m.name, m.description, m.source});
    }
    groups.emplace_back("models", std::move(e));
  }
  {
    std::vector<Entry> e;
    for (const auto& s : strategies::StrategyPresets()) {
      e.push_back({s.name, s.description, s.source});
    }
    groups.emplace_back("strategies", std::move(e));
  }
  {
    const collectives::Registry& algorithms = collectives::BuiltinRegistry();
    std::vector<Entry> e = {{std::string(collectives::Registry::kAutoName),
                             std::string(collectives::Registry::kAutoDescription),
                             std::string(collectives::Registry::kAutoCitation)}};
    for (int id = 0; id < algorithms.size(); ++id) {
      const collectives::Algorithm& a = algorithms.at(id);
      e.push_back({std::string(a.name()), std::string(a.description()), std::string(a.citation())});
    }
    groups.emplace_back("collective_algorithms", std::move(e));
  }
  {
    const NetworkModelRegistry& models = BuiltinNetworkModels();
    std::vector<Entry> e;
    for (int id = 0; id < models.size(); ++id) {
      const NetworkModel& m = models.at(id);
      e.push_back({std::string(m.name()), std::string(m.description()), std::string(m.citation())});
    }
    groups.emplace_back("network_models", std::move(e));
  }

  if (format == "json") {
    nlohmann::ordered_json j;
    for (const auto& [group, entries] : groups) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& e : entries) {
        list.push_back({{"name", e.name}, {"description", e.description}, {"source", e.source}});
      }
      j[group] = std::move(list);
    }
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& [group, entries] : groups) {
    size_t width = 0;
    for (const auto& e : entries) width = std::max(width, e.name.size());
    std::string title = group;
    std::replace(title.begin(), title.end(), '_', ' ');
    out << title << ":\n";
    for (const auto& e : entries) {
      out << fmt::format("  {:<{}}  {}\n", e.name, width, e.description);
    }
    out << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsage;
    return kExitBadInput;
  }
  const std::string& command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--version" || command == "version") {
    out << "placesim " << kPlacesimVersion << "\n";
    return kExitOk;
  }
  using Handler = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);
  static constexpr std::pair<const char*, Handler> kCommands[] = {
      {"analyze", &Analyze},   {"simulate", &Simulate},        {"sweep", &RunSweep},
      {"merge", &RunMerge},    {"compare", &RunCompare},       {"search", &RunSearch},
      {"topology", &Topology}, {"presets", &Presets},          {"export", &RunExport},
      {"report", &RunReport},  {"collective", &RunCollective}, {"replay", &RunReplay},
  };
  std::vector<std::string> names;
  for (const auto& [name, handler] : kCommands) names.push_back(name);
  auto find = [&](const std::string& wanted) -> Handler {
    for (const auto& [name, handler] : kCommands) {
      if (wanted == name) return handler;
    }
    err << "placesim: unknown command \"" << wanted << "\"; valid: " << JoinNames(names)
        << DidYouMean(wanted, names) << "\n";
    return nullptr;
  };
  // `placesim help` is the overview; `placesim help COMMAND` is that command's --help, so
  // both spellings show the same real options.
  if (command == "--help" || command == "-h" || command == "help") {
    if (command != "help" || rest.empty()) {
      out << kUsage;
      return kExitOk;
    }
    Handler handler = find(rest[0]);
    return handler ? handler({"--help"}, out, err) : kExitBadInput;
  }
  Handler handler = find(command);
  return handler ? handler(rest, out, err) : kExitBadInput;
}

}  // namespace placesim::sim
