// `placesim collective` (see collective.h): a schedule of one collective op per size, run by
// the executor on the scenario's cluster and network model, once per algorithm that applies.
#include "sim/cli/collective.h"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "base/unit_parser.h"
#include "placesim/placesim.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/collectives/registry.h"
#include "sim/executor/executor.h"
#include "topology/cluster.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;
using strategies::CollectiveKind;

constexpr std::pair<std::string_view, CollectiveKind> kOps[] = {
    {"all-reduce", CollectiveKind::kAllReduce},         {"all-gather", CollectiveKind::kAllGather},
    {"reduce-scatter", CollectiveKind::kReduceScatter}, {"all-to-all", CollectiveKind::kAllToAll},
    {"send-recv", CollectiveKind::kSendRecv},
};

// --sizes FROM..TO:xF (F >= 2, an integer factor) or a single size.
StatusOr<std::vector<Bytes>> ParseSizes(const std::string& text) {
  const auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format(
        "--sizes: \"{}\": {}; expected FROM..TO:xF, e.g. 8B..8GiB:x2, or one size", text, why));
  };
  const size_t dots = text.find("..");
  if (dots == std::string::npos) {
    StatusOr<Bytes> one = ParseBytes(text);
    if (!one.ok()) return bad("unreadable size");
    if (one->count() < 1) return bad("a size must be at least 1 B");
    return std::vector<Bytes>{*one};
  }
  const size_t colon = text.find(":x", dots);
  const std::string to_text =
      text.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2);
  StatusOr<Bytes> from = ParseBytes(text.substr(0, dots));
  StatusOr<Bytes> to = ParseBytes(to_text);
  if (!from.ok() || !to.ok()) return bad("unreadable size");
  int64_t factor = 2;
  if (colon != std::string::npos) {
    const std::string f = text.substr(colon + 2);
    if (f.empty() || f.find_first_not_of("0123456789") != std::string::npos || f.size() > 4) {
      return bad("the factor must be an integer from 2 to 1024");
    }
    factor = std::stoll(f);
  }
  if (factor < 2 || factor > 1024) return bad("the factor must be an integer from 2 to 1024");
  if (from->count() < 1 || to->count() < from->count()) {
    return bad("FROM must be at least 1 B and TO at least FROM");
  }
  if (to->count() > (int64_t{1} << 50)) return bad("TO must be at most 1 PiB");
  std::vector<Bytes> sizes;
  for (int64_t s = from->count(); s <= to->count(); s *= factor) sizes.push_back(Bytes::Count(s));
  return sizes;
}

// The ring volume each member sends for a buffer S over n members (Op::bytes).
Bytes RingVolume(CollectiveKind kind, Bytes s, int64_t n) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return Bytes::Count(s.count() / n * 2 * (n - 1) + s.count() % n * 2 * (n - 1) / n);
    case CollectiveKind::kSendRecv:
      return s;
    default:
      return Bytes::Count(s.count() / n * (n - 1) + s.count() % n * (n - 1) / n);
  }
}

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md).
double BusFactor(CollectiveKind kind, int64_t n) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
    case CollectiveKind::kSendRecv:
      return 1.0;
    default:
      return static_cast<double>(n - 1) / static_cast<double>(n);
  }
}

struct Row {
  Bytes size;
  std::string algorithm;
  std::string protocol;
  Duration time;
  double algbw = 0;  // GB/s
  double busbw = 0;  // GB/s
};

// Where the collective runs: the mesh laid on the cluster and the op's group.
struct Setup {
  ExecutionContext context;
  topology::Axis axis = topology::Axis::kData;
  strategies::GroupKind group = strategies::GroupKind::kAxis;
  int32_t n = 1;
};

StatusOr<Setup> MakeSetup(const Scenario& scenario, const topology::Cluster& cluster,
                          std::optional<int> gpus, const std::string& group) {
  Setup s;
  s.context.precision = scenario.training.precision;
  if (!group.empty()) {
    const topology::Axis axes[] = {topology::Axis::kData, topology::Axis::kTensor,
                                   topology::Axis::kPipeline, topology::Axis::kContext};
    s.context.mesh = scenario.strategy.mesh;
    s.context.rank_order = scenario.strategy.rank_order;
    for (topology::Axis a : axes) {
      if (group == topology::AxisName(a)) s.axis = a;
    }
    s.n = s.context.mesh.size(s.axis);
    if (s.n < 2) {
      return InvalidArgumentError(fmt::format(
          "--group: {}: the scenario's {} axis has size {}; a collective needs at least 2 members",
          group, group, s.n));
    }
    return s;
  }
  const int64_t world = cluster.num_gpus();
  const int n = gpus.value_or(static_cast<int>(world));
  if (n < 2 || n > world || world % n != 0) {
    return InvalidArgumentError(fmt::format(
        "--gpus: {}: must be from 2 to the cluster's {} GPUs and divide them", n, world));
  }
  s.context.mesh.dp = static_cast<int>(world);
  s.group = n == world ? strategies::GroupKind::kAxis : strategies::GroupKind::kShardGroup;
  s.n = n;
  return s;
}

// One size on one algorithm: the executor's run of a one-op schedule. The protocol is the one
// the run's calls used.
StatusOr<Row> RunOne(const topology::Cluster& cluster, const Setup& setup, CollectiveKind kind,
                     Bytes size, ExecutorOptions options) {
  strategies::Schedule sched;
  sched.role = "collective";
  sched.ranks = setup.context.mesh.world() / setup.context.mesh.pp;
  strategies::Op op;
  op.kind = strategies::OpKind::kCollective;
  op.stream = strategies::Stream::kComm;
  op.collective = kind;
  op.axis = setup.axis;
  op.group = setup.group;
  op.group_size = setup.n;
  op.buffer_bytes = size;
  op.bytes = RingVolume(kind, size, setup.n);
  sched.ops.push_back(op);
  ASSIGN_OR_RETURN(RoleResult r, ExecuteSchedule(cluster, sched, setup.context, options));
  Row row;
  row.size = size;
  row.time = r.step_time;
  const auto& calls = r.algorithm_calls[static_cast<size_t>(kind)];
  for (size_t id = 0; id < calls.size(); ++id) {
    if (calls[id] > 0) row.algorithm = r.algorithm_names[id];
  }
  for (int p = 0; p < collectives::kNumProtocols; ++p) {
    if (r.protocol_calls[static_cast<size_t>(p)] > 0) {
      row.protocol = collectives::ProtocolName(static_cast<collectives::Protocol>(p));
    }
  }
  const double seconds = row.time.ToSeconds();
  row.algbw = seconds > 0 ? static_cast<double>(size.count()) / seconds / 1e9 : 0;
  row.busbw = row.algbw * BusFactor(kind, setup.n);
  return row;
}

void PrintTable(const std::vector<Row>& rows, std::string_view op, const Setup& setup,
                const Scenario& scenario, std::ostream& out) {
  out << fmt::format("# placesim collective: {} over {} GPUs, {} network model\n", op, setup.n,
                     scenario.simulation.network_model);
  out << fmt::format("# {:>10}  {:>12}  {:>6}  {:>12}  {:>8}  {:>10}  {:>7}  {:>7}\n", "size",
                     "count", "type", "algorithm", "protocol", "time", "algbw", "busbw");
  out << fmt::format("# {:>10}  {:>12}  {:>6}  {:>12}  {:>8}  {:>10}  {:>7}  {:>7}\n", "(B)",
                     "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  for (const Row& r : rows) {
    out << fmt::format("  {:>10}  {:>12}  {:>6}  {:>12}  {:>8}  {:>10.2f}  {:>7.2f}  {:>7.2f}\n",
                       r.size.count(), r.size.count() / 4, "float", r.algorithm, r.protocol,
                       r.time.ToMicroseconds(), r.algbw, r.busbw);
  }
}

void PrintJson(const std::vector<Row>& rows, std::string_view op, const Setup& setup,
               const Scenario& scenario, std::ostream& out) {
  nlohmann::ordered_json j;
  j["op"] = op;
  j["ranks"] = setup.n;
  j["network_model"] = scenario.simulation.network_model;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    list.push_back({{"size_bytes", r.size.count()},
                    {"count", r.size.count() / 4},
                    {"type", "float"},
                    {"algorithm", r.algorithm},
                    {"protocol", r.protocol},
                    {"time_us", r.time.ToMicroseconds()},
                    {"algbw_gb_per_s", r.algbw},
                    {"busbw_gb_per_s", r.busbw}});
  }
  j["rows"] = std::move(list);
  out << j.dump(2) << "\n";
}

}  // namespace

int RunCollective(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string path;
  std::vector<std::string> sets;
  std::string format = "table";
  std::string op_name;
  std::string sizes_text = "8B..8GiB:x2";
  std::string group;
  std::string algorithm = "all";
  int gpus = 0;
  po::options_description desc(
      "placesim collective SCENARIO --op KIND [--sizes 8B..8GiB:x2] [--gpus N | --group AXIS]");
  desc.add_options()("help,h", "show this help")("scenario", po::value<std::string>(&path),
                                                 "scenario file")(
      "set", po::value<std::vector<std::string>>(&sets)->composing(),
      "FIELD.PATH=VALUE: override any scalar scenario field (repeatable)")(
      "op", po::value<std::string>(&op_name),
      "all-reduce, all-gather, reduce-scatter, all-to-all or send-recv")(
      "sizes", po::value<std::string>(&sizes_text)->default_value("8B..8GiB:x2"),
      "message sizes as nccl-tests' -b/-e/-f: FROM..TO:xFACTOR, or one size")(
      "gpus", po::value<int>(&gpus), "the first N GPUs of the cluster (default: all of them)")(
      "group", po::value<std::string>(&group),
      "instead of --gpus: one group of the scenario's mesh axis dp, tp, pp or cp")(
      "algorithm", po::value<std::string>(&algorithm)->default_value("all"),
      "all (auto, then every algorithm that applies), auto, or one registered algorithm")(
      "format", po::value<std::string>(&format)->default_value("table"), "table or json");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::variables_map vm;
  if (!ParseArgs("collective", args, desc, pos, err, &vm)) return kExitBadInput;
  if (path.empty()) {
    err << "placesim collective: a SCENARIO file is required\n";
    return kExitBadInput;
  }
  if (!CheckChoice("collective", "format", format, {"table", "json"}, err)) return kExitBadInput;
  if (op_name.empty()) {
    err << "placesim collective: --op is required: all-reduce, all-gather, reduce-scatter, "
           "all-to-all or send-recv\n";
    return kExitBadInput;
  }
  std::vector<std::string> op_names;
  for (const auto& [name, kind] : kOps) op_names.emplace_back(name);
  if (!CheckChoice("collective", "op", op_name, op_names, err)) return kExitBadInput;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  for (const auto& [name, k] : kOps) {
    if (name == op_name) kind = k;
  }
  if (vm.count("gpus") && !group.empty()) {
    err << "placesim collective: --gpus and --group: give at most one of the two\n";
    return kExitBadInput;
  }
  if (!group.empty() && !CheckChoice("collective", "group", group, {"dp", "tp", "pp", "cp"}, err)) {
    return kExitBadInput;
  }
  StatusOr<std::vector<Bytes>> sizes = ParseSizes(sizes_text);
  if (!sizes.ok()) return ReportError(err, "collective", sizes.status());

  StatusOr<Scenario> scenario = api::LoadScenario(path, sets);
  if (!scenario.ok()) return ReportError(err, "", scenario.status());
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
  if (!cluster.ok()) return ReportError(err, "collective", cluster.status());
  StatusOr<Setup> setup = MakeSetup(
      *scenario, *cluster, vm.count("gpus") ? std::optional<int>(gpus) : std::nullopt, group);
  if (!setup.ok()) return ReportError(err, "collective", setup.status());

  const collectives::Registry& registry = collectives::BuiltinRegistry();
  std::vector<std::string> algorithms;
  if (algorithm == "all") {
    algorithms.emplace_back(collectives::Registry::kAutoName);
    for (int id = 0; id < registry.size(); ++id) algorithms.emplace_back(registry.at(id).name());
  } else {
    if (StatusOr<int> known = registry.Select(algorithm); !known.ok()) {
      return ReportError(err, "collective --algorithm", known.status());
    }
    algorithms.push_back(algorithm);
  }
  ExecutorOptions options = ExecutorOptionsFromSettings(scenario->simulation);
  std::vector<Row> rows;
  for (const std::string& name : algorithms) {
    options.algorithm = name;
    for (Bytes size : *sizes) {
      StatusOr<Row> row = RunOne(*cluster, *setup, kind, size, options);
      if (!row.ok()) return ReportError(err, "collective", row.status());
      // A forced algorithm that does not apply ran auto's choice: not its row.
      if (name != collectives::Registry::kAutoName && row->algorithm != name) continue;
      if (name == collectives::Registry::kAutoName) row->algorithm = "auto:" + row->algorithm;
      rows.push_back(*std::move(row));
    }
  }
  if (format == "json") {
    PrintJson(rows, op_name, *setup, *scenario, out);
  } else {
    PrintTable(rows, op_name, *setup, *scenario, out);
  }
  return kExitOk;
}

}  // namespace placesim::sim
