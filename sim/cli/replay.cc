// `placesim replay` and simulate's --chakra-out (replay.h): flags and formatting over
// sim/chakra.
#include "sim/cli/replay.h"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "placesim/placesim.h"
#include "sim/chakra/export.h"
#include "sim/chakra/reader.h"
#include "sim/chakra/replay.h"
#include "sim/chakra/writer.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/executor/executor.h"
#include "topology/cluster.h"
#include "traces/atomic_output_file.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;

struct ReplayArgs {
  std::string prefix;
  std::string scenario;
  std::string groups;
  std::vector<std::string> sets;
  std::string network;
  double flops_per_op = 2;
  std::string trace;
  std::string trace_ranks;
  std::string format = "table";
};

nlohmann::ordered_json ReplayJson(const std::string& prefix, const std::string& network,
                                  const chakra::ReplayResult& r) {
  nlohmann::ordered_json j;
  j["trace_prefix"] = prefix;
  j["network"] = network;
  j["step_time_s"] = r.step_time.ToSeconds();
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (const chakra::RankReplay& k : r.ranks) {
    ranks.push_back({{"rank", k.rank},
                     {"nodes", k.nodes},
                     {"finish_s", k.finish.ToSeconds()},
                     {"compute_s", k.compute_busy.ToSeconds()},
                     {"comm_busy_s", k.comm_busy.ToSeconds()},
                     {"exposed_comm_s", k.exposed_comm.ToSeconds()},
                     {"idle_s", k.idle.ToSeconds()},
                     {"flops", k.flops.count()},
                     {"comm_bytes", k.comm_bytes.count()}});
  }
  j["ranks"] = std::move(ranks);
  nlohmann::ordered_json calls;
  for (size_t a = 0; a < r.algorithm_names.size(); ++a) {
    calls[r.algorithm_names[a]] = r.algorithm_calls[a];
  }
  j["collective_calls_by_algorithm"] = std::move(calls);
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const LinkKindStats& s : r.links) {
    links.push_back({{"kind", topology::LinkKindName(s.kind)},
                     {"links", s.links},
                     {"links_used", s.links_used},
                     {"bytes", s.bytes.count()},
                     {"busy_max_s", s.busy_max.ToSeconds()},
                     {"utilization_max", s.utilization_max},
                     {"utilization_avg", s.utilization_avg},
                     {"peak_flows", s.peak_flows}});
  }
  j["links"] = std::move(links);
  j["events"] = r.events;
  return j;
}

std::string ReplayTable(const std::string& prefix, const std::string& network,
                        const chakra::ReplayResult& r) {
  std::string out =
      fmt::format("Chakra replay of {} ({} ranks, {} network)\n", prefix, r.ranks.size(), network);
  out += fmt::format("step time  {:.6f} ms\n\n", r.step_time.ToMilliseconds());
  out += fmt::format("{:>5} {:>8} {:>13} {:>13} {:>13} {:>13} {:>13}\n", "rank", "nodes",
                     "finish ms", "compute ms", "comm busy ms", "exposed ms", "idle ms");
  for (const chakra::RankReplay& k : r.ranks) {
    out += fmt::format("{:>5} {:>8} {:>13.6f} {:>13.6f} {:>13.6f} {:>13.6f} {:>13.6f}\n", k.rank,
                       k.nodes, k.finish.ToMilliseconds(), k.compute_busy.ToMilliseconds(),
                       k.comm_busy.ToMilliseconds(), k.exposed_comm.ToMilliseconds(),
                       k.idle.ToMilliseconds());
  }
  out += "\ncollective calls by algorithm:";
  for (size_t a = 0; a < r.algorithm_names.size(); ++a) {
    if (r.algorithm_calls[a] > 0) {
      out += fmt::format(" {} {}", r.algorithm_names[a], r.algorithm_calls[a]);
    }
  }
  out += fmt::format("\n\n{:<10} {:>11} {:>14} {:>14} {:>9}\n", "links", "used/total", "GB",
                     "busy max ms", "util max");
  for (const LinkKindStats& s : r.links) {
    out += fmt::format("{:<10} {:>11} {:>14.6f} {:>14.6f} {:>8.1f}%\n",
                       topology::LinkKindName(s.kind), fmt::format("{}/{}", s.links_used, s.links),
                       s.bytes.ToGB(), s.busy_max.ToMilliseconds(), 100 * s.utilization_max);
  }
  return out;
}

// Runs the replay with the trace (if any) streaming into its file; the output on success.
StatusOr<chakra::ReplayResult> RunWithTrace(const topology::Cluster& cluster,
                                            const chakra::Workload& w,
                                            chakra::ReplayOptions options,
                                            const std::string& trace_path) {
  if (trace_path.empty()) return chakra::Replay(cluster, w, options);
  ASSIGN_OR_RETURN(std::unique_ptr<traces::AtomicOutputFile> file,
                   traces::AtomicOutputFile::Create(trace_path));
  traces::ChromeTraceWriter writer(file->stream());
  options.trace = &writer;
  ASSIGN_OR_RETURN(chakra::ReplayResult r, chakra::Replay(cluster, w, options));
  if (Status s = writer.Finish(); !s.ok()) {
    const Status write = file->WriteStatus();
    return write.ok() ? s : write;
  }
  RETURN_IF_ERROR(file->Commit());
  return r;
}

}  // namespace

int RunReplay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ReplayArgs a;
  po::options_description desc("placesim replay TRACE_PREFIX SCENARIO [options]");
  desc.add_options()("help,h", "show this help")(
      "trace-prefix", po::value<std::string>(&a.prefix)->required(),
      "Chakra traces: <prefix>.<rank>.et for ranks 0..N-1")(
      "scenario", po::value<std::string>(&a.scenario)->required(),
      "scenario file: its cluster runs the trace (rank r on GPU r)")(
      "comm-groups", po::value<std::string>(&a.groups),
      "communicator groups JSON, group id -> ranks ({\"1\": [0, 1], ...})")(
      "set", po::value<std::vector<std::string>>(&a.sets)->composing(),
      "FIELD.PATH=VALUE: override a scenario field (repeatable)")(
      "network", po::value<std::string>(&a.network),
      "override the scenario's simulation.network_model: flow or analytic")(
      "flops-per-op", po::value<double>(&a.flops_per_op)->default_value(2),
      "FLOPs per unit of a compute node's num_ops: 2 (num_ops counts multiply-accumulates, "
      "as trace generators write them) or 1 (ASTRA-sim's reading)")(
      "trace", po::value<std::string>(&a.trace),
      "write the timeline to FILE (Chrome trace JSON; opens in Perfetto)")(
      "trace-ranks", po::value<std::string>(&a.trace_ranks),
      "with --trace: the ranks to write, e.g. 0-3 (default: every rank)")(
      "format", po::value<std::string>(&a.format)->default_value("table"),
      "output format: table, json");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("trace-prefix", 1).add("scenario", 1);
  if (!ParseArgs("replay", args, desc, pos, err)) return kExitBadInput;
  if (!CheckChoice("replay", "format", a.format, {"table", "json"}, err)) return kExitBadInput;
  if (!(a.flops_per_op > 0) || a.flops_per_op > 1e6) {
    err << "placesim replay: --flops-per-op: " << a.flops_per_op << " must be > 0\n";
    return kExitBadInput;
  }
  if (!a.trace_ranks.empty() && a.trace.empty()) {
    err << "placesim replay: --trace-ranks needs --trace FILE\n";
    return kExitBadInput;
  }
  StatusOr<Scenario> scenario = api::LoadScenario(a.scenario, a.sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  chakra::ReplayOptions options;
  options.network = a.network.empty() ? scenario->simulation.network_model : a.network;
  options.algorithm = scenario->simulation.collective_algorithm;
  options.flops_per_op = a.flops_per_op;
  options.compute_type = chakra::ComputeTypeOf(scenario->training.precision);
  StatusOr<chakra::Workload> w = chakra::ReadWorkload(a.prefix, a.groups);
  if (!w.ok()) return ReportError(err, "replay", w.status());
  if (!a.trace_ranks.empty()) {
    StatusOr<std::vector<int64_t>> ranks =
        api::ParseRankList(a.trace_ranks, static_cast<int64_t>(w->ranks.size()));
    if (!ranks.ok()) return ReportError(err, "replay", ranks.status());
    options.trace_ranks = std::move(*ranks);
  }
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
  if (!cluster.ok()) return ReportError(err, "replay", cluster.status());
  StatusOr<chakra::ReplayResult> r = RunWithTrace(*cluster, *w, options, a.trace);
  if (!r.ok()) return ReportError(err, "replay", r.status());
  if (a.format == "json") {
    out << ReplayJson(a.prefix, options.network, *r).dump(2) << "\n";
  } else {
    out << ReplayTable(a.prefix, options.network, *r);
  }
  return kExitOk;
}

Status WriteChakraStep(const Scenario& scenario, const std::string& prefix,
                       const std::vector<int64_t>& ranks) {
  ASSIGN_OR_RETURN(topology::Cluster cluster, topology::BuildCluster(scenario.cluster));
  const ExecutorOptions executor = ExecutorOptionsFromSettings(scenario.simulation);
  ASSIGN_OR_RETURN(chakra::Workload w,
                   chakra::ExportStep(cluster, scenario.model, scenario.training, scenario.strategy,
                                      executor.schedule));
  return chakra::WriteWorkload(w, prefix, ranks);
}

}  // namespace placesim::sim
