// `placesim search` (see search.h for the behaviour users see).
//
// The ranked rows are built once as a JSON document with a fixed key order; the table, CSV
// and JSON outputs are rendered from it, so the three formats always agree. Simulations of
// tier 2 run on --jobs threads, each writing only its own slot.
#include "sim/cli/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "strategies/search.h"
#include "topology/cluster.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;
using Json = nlohmann::ordered_json;
using strategies::ScreenedCandidate;

struct SearchArgs {
  std::string path;
  std::vector<std::string> sets;
  std::vector<std::string> fixes;
  int64_t simulate_top = 32;
  int64_t top = 20;
  int64_t jobs = 0;
  std::string format = "table";
  std::string network = "analytic";
  std::string space = "default";
};

// One ranked row: a feasible candidate and, when tier 2 simulated it, its simulated result.
struct Row {
  const ScreenedCandidate* screened = nullptr;
  std::optional<Duration> simulated_step;
  double simulated_mfu = 0;
  std::string simulation_error;
  Duration step() const { return simulated_step ? *simulated_step : screened->estimate.total; }
};

// Tier 2: simulates the first `k` rows (see search.h). A row the simulator refuses (expert
// parallelism with offload or hybrid groups, or a schedule over the op limit) keeps its
// estimate.
void SimulateTop(const Scenario& scenario, std::vector<Row>& rows, int64_t k, int64_t jobs,
                 const std::string& network, std::ostream& err) {
  const size_t picks = std::min(rows.size(), static_cast<size_t>(std::max<int64_t>(k, 0)));
  if (picks == 0) return;
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario.cluster);
  if (!cluster.ok()) {
    PrintMessage(err, "search",
                 "cannot simulate; every row keeps its estimate: " + cluster.status().message());
    return;
  }
  ExecutorOptions base = ExecutorOptionsFromSettings(scenario.simulation);
  if (const std::optional<std::string> model = NetworkOverride(network)) base.network = *model;
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next.fetch_add(1); i < picks; i = next.fetch_add(1)) {
      Row& row = rows[i];
      const strategies::Candidate& c = row.screened->candidate;
      ExecutorOptions options = base;
      options.schedule.bucket_bytes = strategies::CandidateBucket(c, options.schedule.bucket_bytes);
      if (c.tp_comm_overlap) options.schedule.tp_comm_overlap = *c.tp_comm_overlap;
      StatusOr<strategies::StrategySpec> strategy =
          strategies::CandidateStrategy(c, scenario.cluster);
      if (!strategy.ok()) {
        row.simulation_error = strategy.status().message();
        continue;
      }
      StatusOr<SimResult> sim =
          SimulateStep(*cluster, scenario.model,
                       strategies::CandidateTraining(c, scenario.training), *strategy, options);
      if (!sim.ok()) {
        row.simulation_error = sim.status().message();
        continue;
      }
      row.simulated_step = sim->step_time;
      row.simulated_mfu = sim->mfu;
    }
  };
  const size_t threads = static_cast<size_t>(
      std::max<int64_t>(1, std::min<int64_t>(jobs, static_cast<int64_t>(picks))));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
}

std::string ScheduleText(const strategies::Candidate& c) {
  if (c.mesh.pp == 1) return "-";
  std::string s = strategies::PipelineScheduleName(c.schedule);
  if (c.virtual_stages > 1) s += fmt::format(" x{}", c.virtual_stages);
  return s;
}

// The knobs only the exhaustive space searches, as the row's tier 2 runs them.
struct Effective {
  bool flash_attention = false;
  bool tp_comm_overlap = false;
  Bytes gradient_bucket;
  const topology::ClusterSpec* cluster = nullptr;
};

Json RowJson(const Row& row, int64_t rank, const Row& best, const Effective* extra) {
  const ScreenedCandidate& s = *row.screened;
  const strategies::Candidate& c = s.candidate;
  Json j;
  j["rank"] = rank;
  j["strategy"] = strategies::CandidateLabel(c);
  j["preset"] = c.preset;
  j["dp"] = c.mesh.dp;
  j["tp"] = c.mesh.tp;
  j["pp"] = c.mesh.pp;
  j["cp"] = c.mesh.cp;
  j["ep"] = c.mesh.ep;
  j["pipeline_schedule"] = ScheduleText(c);
  j["micro_batch"] = c.micro_batch;
  j["recompute"] = strategies::RecomputeName(c.recompute);
  j["sequence_parallel"] = c.sequence_parallel && c.mesh.tp > 1;
  if (extra != nullptr) {
    j["flash_attention"] = c.flash_attention.value_or(extra->flash_attention);
    j["tp_comm_overlap"] = c.mesh.tp > 1 && c.tp_comm_overlap.value_or(extra->tp_comm_overlap);
    // "-" where gradients are not bucketed (one data-parallel rank, or synced per unit).
    StatusOr<strategies::StrategySpec> strategy = strategies::CandidateStrategy(c, *extra->cluster);
    const Bytes bucket = strategies::CandidateBucket(c, extra->gradient_bucket);
    j["gradient_bucket"] = !strategy.ok() || !strategies::UsesGradientBuckets(*strategy)
                               ? std::string("-")
                           : bucket == strategies::kWholeGradientBucket ? std::string("whole")
                                                                        : ToString(bucket);
  }
  j["step_time_s"] = row.step().ToSeconds();
  j["source"] = row.simulated_step ? "simulated" : "estimated";
  j["estimated_step_time_s"] = s.estimate.total.ToSeconds();
  j["memory_bytes"] = s.memory.count();
  j["headroom_bytes"] = s.headroom().count();
  j["mfu"] = row.simulated_step ? row.simulated_mfu : s.estimate.mfu;
  j["vs_best"] = &row == &best
                     ? std::string("best")
                     : strategies::DominantCostVsBest(s.estimate, best.screened->estimate);
  Json parts = Json::object();
  for (int i = 0; i < strategies::kNumCostParts; ++i) {
    parts[strategies::CostPartName(static_cast<strategies::CostPart>(i))] =
        s.estimate.parts[static_cast<size_t>(i)].ToSeconds();
  }
  j["estimate_breakdown_s"] = std::move(parts);
  j["simulation_error"] = row.simulation_error.empty() ? Json(nullptr) : Json(row.simulation_error);
  return j;
}

// Columns of the table and CSV: the row's key and the table's heading.
struct Column {
  const char* key;
  const char* header;
};
constexpr Column kColumns[] = {
    {"rank", "#"},
    {"preset", "preset"},
    {"dp", "dp"},
    {"tp", "tp"},
    {"pp", "pp"},
    {"cp", "cp"},
    {"ep", "ep"},
    {"pipeline_schedule", "schedule"},
    {"micro_batch", "mb"},
    {"recompute", "recompute"},
    {"sequence_parallel", "sp"},
    {"flash_attention", "flash"},
    {"tp_comm_overlap", "tp overlap"},
    {"gradient_bucket", "bucket"},
    {"step_time_s", "step time"},
    {"source", "source"},
    {"memory_bytes", "memory/GPU"},
    {"headroom_bytes", "headroom"},
    {"mfu", "MFU"},
    {"vs_best", "vs best"},
};

std::string Cell(const std::string& key, const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_string()) return v.get<std::string>();
  if (key == "memory_bytes" || key == "headroom_bytes") {
    return ToString(Bytes::Count(v.get<int64_t>()));
  }
  if (key == "step_time_s") return ToString(Seconds(v.get<double>()));
  if (key == "mfu") return fmt::format("{:.1f}%", 100.0 * v.get<double>());
  return v.dump();
}

// Columns whose keys the rows hold (ep only for mixture-of-experts models; the exhaustive
// space's knobs only when it was searched).
std::string Render(const Json& doc, const std::string& format, bool moe) {
  if (format == "json") return doc.dump(2) + "\n";
  std::vector<Column> columns;
  const Json& first = doc.at("rows").at(0);
  for (const Column& c : kColumns) {
    if ((std::string_view(c.key) != "ep" || moe) && first.contains(c.key)) columns.push_back(c);
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  for (const Column& c : columns) header.push_back(format == "csv" ? c.key : c.header);
  rows.push_back(header);
  for (const Json& r : doc.at("rows")) {
    std::vector<std::string> cells;
    for (const Column& c : columns) {
      const Json& v = r.at(c.key);
      cells.push_back(format == "csv" ? (v.is_string() ? CsvField(v.get<std::string>()) : v.dump())
                                      : Cell(c.key, v));
    }
    rows.push_back(std::move(cells));
  }
  std::string out;
  if (format == "csv") {
    for (const auto& r : rows) out += fmt::format("{}\n", fmt::join(r, ","));
    return out;
  }
  std::vector<size_t> width(columns.size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  out += fmt::format(
      "{} feasible of {} candidates; step time simulated for {} of the top {} "
      "(the rest: estimated)\n",
      doc.at("feasible").get<int64_t>(), doc.at("candidates").get<int64_t>(),
      doc.at("simulated").get<int64_t>(), doc.at("simulate_top").get<int64_t>());
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      line += c + 1 == r.size() ? r[c] : fmt::format("{:<{}}  ", r[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

int RunSearch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SearchArgs a;
  po::options_description desc(
      "placesim search SCENARIO [options]\n"
      "Ranks the strategies that fit the scenario's model on its cluster");
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(&a.path)->required(), "scenario file")(
      "set", po::value<std::vector<std::string>>(&a.sets)->composing(),
      "FIELD.PATH=VALUE: override a scenario field before the search (repeatable)")(
      "fix", po::value<std::vector<std::string>>(&a.fixes)->composing(),
      ("FIELD=VALUE: pin a searched knob (repeatable); fields: " +
       JoinNames(strategies::SearchFieldNames()))
          .c_str())(
      "space", po::value<std::string>(&a.space)->default_value("default"),
      "search space: default (the common knob values) or exhaustive (Calculon's knobs mapped "
      "onto placesim's: every micro-batch dividing the global batch, every interleaving, "
      "offload presets, sequence parallelism, flash attention, tp overlap, dp overlap)")(
      "simulate-top", po::value<int64_t>(&a.simulate_top)->default_value(32),
      "simulate the best K by estimate; 0 = none")(
      "network", po::value<std::string>(&a.network)->default_value("analytic"),
      "network model of the tier-2 simulations: analytic (alpha-beta, no contention; a "
      "pipelined step in about 2 s), flow (max-min contention, about twice as long), or "
      "scenario (the scenario's simulation.network_model)")(
      "top", po::value<int64_t>(&a.top)->default_value(20), "rows to print")(
      "jobs", po::value<int64_t>(&a.jobs)->default_value(0),
      "worker threads; 0 = the hardware's concurrency. Output is identical for every value")(
      "format", po::value<std::string>(&a.format)->default_value("table"),
      "output format: table, csv or json");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs("search", args, desc, pos, err)) return kExitBadInput;
  ErrorList errors;
  if (a.format != "table" && a.format != "csv" && a.format != "json") {
    errors.AddLine(
        fmt::format("--format: \"{}\": unknown format; valid: table, csv, json", a.format));
  }
  if (a.jobs < 0 || a.jobs > 4096) {
    errors.AddLine(fmt::format("--jobs: {}: must be between 0 and 4096", a.jobs));
  }
  if (a.simulate_top < 0) {
    errors.AddLine(fmt::format("--simulate-top: {}: must be >= 0", a.simulate_top));
  }
  if (a.top < 1) errors.AddLine(fmt::format("--top: {}: must be >= 1", a.top));
  if (Status known = strategies::CheckSearchSpaceName(a.space); !known.ok()) {
    errors.AddLine(known.message());
  }
  const std::vector<std::string>& networks = NetworkChoices();
  if (std::find(networks.begin(), networks.end(), a.network) == networks.end()) {
    errors.AddLine(fmt::format("--network: \"{}\": unknown network model; valid: {}", a.network,
                               JoinNames(networks)));
  }
  StatusOr<Scenario> scenario = LoadScenarioFile(a.path, a.sets);
  if (!scenario.ok()) {
    errors.AddLine(scenario.status().message());
  } else if (!scenario->model.has_architecture()) {
    errors.AddLine(
        "model: search needs a transformer architecture (layers, hidden, heads, ...), "
        "not a bare parameter count");
  }
  if (!errors.empty() || !scenario.ok()) {
    PrintMessage(err, "search", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }
  StatusOr<strategies::SearchSpace> named =
      strategies::NamedSearchSpace(a.space, scenario->model, scenario->training, scenario->cluster);
  PLACESIM_CHECK(named.ok());  // the name was checked above
  strategies::SearchSpace space = *std::move(named);
  for (const std::string& fix : a.fixes) {
    const size_t eq = fix.find('=');
    if (eq == std::string::npos) {
      errors.AddLine(fmt::format("--fix \"{}\": must be FIELD=VALUE; fields: {}", fix,
                                 JoinNames(strategies::SearchFieldNames())));
      continue;
    }
    Status fixed = strategies::FixSearchField(fix.substr(0, eq), fix.substr(eq + 1), &space);
    if (!fixed.ok()) errors.AddLine(fixed.message());
  }
  if (!errors.empty()) {
    PrintMessage(err, "search", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }
  const int64_t jobs =
      a.jobs > 0 ? a.jobs : std::max<int64_t>(1, std::thread::hardware_concurrency());

  strategies::SearchOptions options;
  options.jobs = static_cast<int>(jobs);
  options.gradient_bucket = scenario->simulation.gradient_bucket_size;
  options.analyze.prefetch_depth = scenario->simulation.prefetch_depth;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<strategies::SearchResult> result = strategies::ScreenCandidates(
      scenario->model, scenario->training, scenario->cluster, space, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    PrintMessage(err, "search", result.status().message());
    return kExitBadInput;
  }
  const strategies::SearchStats& stats = result->stats;
  err << fmt::format(
      "placesim search: {} candidates: {} pruned by memory bounds, {} analyzed, {} feasible; "
      "screened in {:.3f} s ({:.0f} candidates/s, {} threads)\n",
      stats.candidates, stats.pruned, stats.analyzed, stats.feasible, seconds,
      seconds > 0 ? static_cast<double>(stats.candidates) / seconds : 0.0, jobs);
  if (result->feasible.empty()) {
    err << "placesim search: no candidate fits in memory and is correct; try more GPUs, a "
           "smaller global batch or fewer --fix\n";
    return kExitFailure;
  }

  std::vector<Row> rows;
  rows.reserve(result->feasible.size());
  for (const auto& s : result->feasible) rows.push_back(Row{&s, std::nullopt, 0, {}});
  SimulateTop(*scenario, rows, a.simulate_top, jobs, a.network, err);
  int64_t simulated = 0;
  for (const Row& r : rows) simulated += r.simulated_step ? 1 : 0;
  std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    if (x.step() != y.step()) return x.step() < y.step();
    return x.screened->candidate.order < y.screened->candidate.order;
  });

  Json doc;
  doc["scenario"] = a.path;
  if (a.space != "default") doc["space"] = a.space;
  doc["fix"] = a.fixes;
  doc["candidates"] = stats.candidates;
  doc["pruned"] = stats.pruned;
  doc["analyzed"] = stats.analyzed;
  doc["feasible"] = stats.feasible;
  doc["simulate_top"] = a.simulate_top;
  doc["simulated"] = simulated;
  const Effective effective{scenario->training.flash_attention,
                            scenario->simulation.tp_comm_overlap,
                            scenario->simulation.gradient_bucket_size, &scenario->cluster};
  const Effective* extra = a.space == "default" ? nullptr : &effective;
  Json list = Json::array();
  for (size_t i = 0; i < rows.size() && static_cast<int64_t>(i) < a.top; ++i) {
    list.push_back(RowJson(rows[i], static_cast<int64_t>(i) + 1, rows.front(), extra));
  }
  doc["rows"] = std::move(list);
  out << Render(doc, a.format, scenario->model.transformer.experts > 1);
  return kExitOk;
}

}  // namespace placesim::sim
