// `placesim search` (see search.h for the behaviour users see): flags and formatting over
// the library's search (placesim/placesim.h: Search; sim/study/search.h).
//
// The ranked rows are built once as a JSON document with a fixed key order; the table, CSV
// and JSON outputs are rendered from it, so the three formats always agree.
#include "sim/cli/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "placesim/json.h"
#include "placesim/placesim.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/cli/economics.h"
#include "sim/cli/export.h"
#include "sim/export/export.h"
#include "sim/report/html_report.h"
#include "sim/study/search.h"
#include "strategies/search.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;
using Json = nlohmann::ordered_json;
using strategies::ScreenedCandidate;

struct SearchArgs {
  std::string path;
  std::vector<std::string> sets;
  std::string format = "table";
  study::SearchRequest request;
  std::string export_to;  // --export: a framework name, or "" for none
  std::string output;     // -o: where the export goes
  std::string report;     // --report: the HTML file to write, or "" for none
};

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
    {"reshard_after_forward", "reshard"},
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
  const std::vector<EconomicsColumn> money = EconomicsColumns(doc.at("rows"));
  for (const auto& m : money) header.push_back(format == "csv" ? m.key : m.header);
  rows.push_back(header);
  for (const Json& r : doc.at("rows")) {
    std::vector<std::string> cells;
    for (const Column& c : columns) {
      const Json& v = r.at(c.key);
      cells.push_back(format == "csv" ? (v.is_string() ? CsvField(v.get<std::string>()) : v.dump())
                                      : Cell(c.key, v));
    }
    const auto economics = r.find("economics");
    for (const auto& m : money) {
      cells.push_back(EconomicsCell(m, economics == r.end() ? nullptr : &*economics,
                                    /*csv=*/format == "csv"));
    }
    rows.push_back(std::move(cells));
  }
  std::string out;
  if (format == "csv") {
    for (const auto& r : rows) out += fmt::format("{}\n", fmt::join(r, ","));
    return out;
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  out += fmt::format(
      "{} feasible of {} candidates; step time simulated for {} of the top {} "
      "(the rest: estimated)\n",
      doc.at("feasible").get<int64_t>(), doc.at("candidates").get<int64_t>(),
      doc.at("simulated").get<int64_t>(), doc.at("simulate_top").get<int64_t>());
  if (!money.empty()) {
    out +=
        "cost and energy: at the simulated step, or for estimated rows at the estimated step and "
        "the TDP bound (docs/economics.md)\n";
  }
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

po::options_description SearchOptionsDescription(SearchArgs& a) {
  study::SearchRequest& r = a.request;
  po::options_description desc(
      "placesim search SCENARIO [options]\n"
      "Ranks the strategies that fit the scenario's model on its cluster");
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(&a.path)->required(), "scenario file")(
      "set", po::value<std::vector<std::string>>(&a.sets)->composing(),
      "FIELD.PATH=VALUE: override a scenario field before the search (repeatable)")(
      "fix", po::value<std::vector<std::string>>(&r.fixes)->composing(),
      ("FIELD=VALUE: pin a searched knob (repeatable); fields: " +
       JoinNames(strategies::SearchFieldNames()))
          .c_str())(
      "space", po::value<std::string>(&r.space)->default_value("default"),
      "search space: default (the common knob values) or exhaustive (Calculon's knobs mapped "
      "onto placesim's: every micro-batch dividing the global batch, every interleaving, "
      "offload presets, sequence parallelism, flash attention, tp overlap, dp overlap, "
      "FSDP's reshard after forward)")("simulate-top",
                                       po::value<int64_t>(&r.simulate_top)->default_value(32),
                                       "simulate the best K by estimate; 0 = none")(
      "network", po::value<std::string>(&r.network)->default_value("analytic"),
      "network model of the tier-2 simulations: analytic (alpha-beta, no contention; a "
      "pipelined step in about 2 s), flow (max-min contention, about twice as long), or "
      "scenario (the scenario's simulation.network_model)")(
      "top", po::value<int64_t>(&r.top)->default_value(20), "rows to print")(
      "jobs", po::value<int64_t>(&r.jobs)->default_value(0),
      "worker threads; 0 = the hardware's concurrency. Output is identical for every value")(
      "format", po::value<std::string>(&a.format)->default_value("table"),
      "output format: table, csv or json")(
      "export", po::value<std::string>(&a.export_to),
      ("export the best row as the framework's configuration: " +
       JoinNames(exporting::FrameworkNames()) + "; to stdout instead of the table, or to -o FILE")
          .c_str())("output,o", po::value<std::string>(&a.output),
                    "with --export: write the configuration to FILE (atomically)")(
      "report", po::value<std::string>(&a.report),
      "also write step time against memory, with the Pareto front, as an HTML page to FILE");
  return desc;
}

// The scenario after --set, when it and every flag are good; otherwise prints every problem
// at once and returns nothing.
std::optional<Scenario> LoadSearchInput(const SearchArgs& a, std::ostream& err) {
  ErrorList errors;
  if (a.format != "table" && a.format != "csv" && a.format != "json") {
    errors.AddLine(
        fmt::format("--format: \"{}\": unknown format; valid: table, csv, json", a.format));
  }
  study::CheckSearchRequest(a.request, &errors);
  if (!a.export_to.empty()) {
    if (StatusOr<exporting::Framework> f = exporting::ParseFramework(a.export_to); !f.ok()) {
      errors.AddLine(f.status().message());
    }
  } else if (!a.output.empty()) {
    errors.AddLine("-o: needs --export FRAMEWORK");
  }
  StatusOr<Scenario> scenario = api::LoadScenario(a.path, a.sets);
  if (!scenario.ok()) {
    errors.AddLine(scenario.status().message());
  } else {
    study::CheckSearchScenario(*scenario, &errors);
  }
  if (!errors.empty()) {
    PrintMessage(err, "search", "bad input:\n" + errors.ToStatus().message());
    return std::nullopt;
  }
  return *std::move(scenario);
}

}  // namespace

int RunSearch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SearchArgs a;
  po::options_description desc = SearchOptionsDescription(a);
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs("search", args, desc, pos, err)) return kExitBadInput;
  std::optional<Scenario> scenario = LoadSearchInput(a, err);
  if (!scenario) return kExitBadInput;
  std::string chartjs;
  if (!a.report.empty()) {
    StatusOr<std::string> loaded = report::LoadChartJs();
    if (!loaded.ok()) return ReportError(err, "search --report", loaded.status());
    chartjs = *std::move(loaded);
  }
  StatusOr<api::SearchResult> result = api::Search(*scenario, a.request);
  if (!result.ok()) {
    PrintMessage(err, "search", result.status().message());
    return kExitBadInput;
  }
  const strategies::SearchStats& stats = result->stats;
  const double seconds = result->screening_time.ToSeconds();
  err << fmt::format(
      "placesim search: {} candidates: {} pruned by memory bounds, {} analyzed, {} feasible; "
      "screened in {:.3f} s ({:.0f} candidates/s, {} threads)\n",
      stats.candidates, stats.pruned, stats.analyzed, stats.feasible, seconds,
      seconds > 0 ? static_cast<double>(stats.candidates) / seconds : 0.0, result->threads);
  if (result->ranked.empty()) {
    err << "placesim search: no candidate fits in memory and is correct; try more GPUs, a "
           "smaller global batch or fewer --fix\n";
    return kExitNoFeasibleCandidate;
  }
  if (!result->simulation_warning.empty()) {
    PrintMessage(err, "search", result->simulation_warning);
  }
  if (!a.report.empty()) {
    Status written =
        report::WriteHtml(a.report, report::RenderSearchHtml(a.path, *result, chartjs));
    if (!written.ok()) return ReportError(err, "search --report", written);
  }
  if (!a.export_to.empty()) {
    StatusOr<Scenario> best =
        exporting::ScenarioForCandidate(*scenario, result->ranked.front().screened.candidate);
    if (!best.ok()) return ReportError(err, "search --export", best.status());
    const int code = WriteExport(*best, a.export_to, a.output, "search --export", out, err);
    if (code != kExitOk || a.output.empty()) return code;
  }
  out << Render(api::SearchJson(*result, a.request, *scenario, a.path), a.format,
                scenario->model.transformer.experts > 1);
  return kExitOk;
}

}  // namespace placesim::sim
