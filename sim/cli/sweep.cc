// `placesim sweep` and `placesim merge` (see sweep.h for the behaviour users see): flags and
// formatting over the library's sweep (placesim/placesim.h) and merge (sim/study/merge.h).
//
// Every point becomes one JSON object with a fixed key order (PointJson); the table, CSV and
// JSON outputs are all rendered from the sweep document that holds them, so a sweep and a
// merge of its shards print through the same code.
#include "sim/cli/sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "placesim/json.h"
#include "placesim/placesim.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/cli/economics.h"
#include "sim/report/html_report.h"
#include "sim/study/json_input.h"
#include "sim/study/merge.h"
#include "sim/study/network_choice.h"
#include "sim/study/sweep.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

using api::kSweepKind;
using api::kSweepVersion;

struct SweepArgs {
  std::string path;
  std::vector<std::string> varies;
  std::vector<std::string> sets;
  std::string mode = "analyze";
  std::string network = "scenario";
  int64_t jobs = 0;
  std::string shard = "1/1";
  std::string format = "table";
  std::string report;  // --report: the HTML file to write, or "" for none
};

// Draws "[#####.....] 45/100 points  3.2 s, ETA 3.9 s" on one terminal line.
void DrawProgress(std::ostream& err, int64_t done, int64_t total, double elapsed_s) {
  constexpr int kWidth = 30;
  int filled = total == 0 ? kWidth : static_cast<int>(kWidth * done / total);
  std::string eta = "?";
  if (done > 0) eta = fmt::format("{:.1f} s", elapsed_s / done * (total - done));
  err << fmt::format("\r[{}{}] {}/{} points  {:.1f} s, ETA {}   ", std::string(filled, '#'),
                     std::string(kWidth - filled, '.'), done, total, elapsed_s, eta)
      << std::flush;
}

// ------------------------------------------------------------------------ rendering
bool Simulated(const Json& doc) { return doc.value("mode", "") == "simulate"; }

struct Column {
  std::string key;     // the point's key
  std::string header;  // the table's heading
};

std::vector<Column> MetricColumns(const Json& doc) {
  std::vector<Column> c = {{"status", "status"},
                           {"fits", "fits"},
                           {"memory_total_bytes", "memory/device"},
                           {"comm_bytes_per_device_per_step", "comm/device/step"},
                           {"correctness_ok", "correct"}};
  if (Simulated(doc)) {
    c.insert(c.end(), {{"step_time_s", "step time"},
                       {"mfu", "MFU"},
                       {"tokens_per_second", "tokens/s"},
                       {"sim_peak_memory_bytes", "sim peak memory"},
                       {"exposed_comm_s", "exposed comm"}});
  }
  return c;
}

// A point's "economics" object; nullptr when the sweep has none.
const Json* Economics(const Json& point) {
  auto e = point.find("economics");
  return e == point.end() ? nullptr : &*e;
}

std::vector<std::string> VaryFields(const Json& doc) {
  std::vector<std::string> fields;
  for (const auto& v : doc.at("vary")) fields.push_back(v.at("field").get<std::string>());
  return fields;
}

std::string TableCell(const std::string& key, const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  if (key.ends_with("_bytes") || key == "comm_bytes_per_device_per_step") {
    return ToString(Bytes::Count(v.get<int64_t>()));
  }
  if (key.ends_with("_s")) return ToString(Seconds(v.get<double>()));
  if (key == "mfu") return fmt::format("{:.1f}%", 100.0 * v.get<double>());
  if (key == "tokens_per_second") return fmt::format("{:.0f}", v.get<double>());
  return v.dump();
}

std::string RenderTable(const Json& doc) {
  std::vector<std::string> fields = VaryFields(doc);
  std::vector<Column> metrics = MetricColumns(doc);
  std::vector<std::string> header = {"#"};
  header.insert(header.end(), fields.begin(), fields.end());
  for (const auto& m : metrics) header.push_back(m.header);
  const std::vector<EconomicsColumn> money = EconomicsColumns(doc.at("points"));
  for (const auto& m : money) header.push_back(m.header);
  header.push_back("error");
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : doc.at("points")) {
    std::vector<std::string> row = {p.at("index").dump()};
    for (const auto& f : fields) row.push_back(p.at("values").at(f).get<std::string>());
    for (const auto& m : metrics) row.push_back(TableCell(m.key, p.at(m.key)));
    for (const auto& m : money) row.push_back(EconomicsCell(m, Economics(p), /*csv=*/false));
    row.push_back(p.at("error").is_null() ? "" : p.at("error").get<std::string>());
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      // Text columns (index, varied values, status, error) align left, numbers right.
      bool left = c == 0 || c <= fields.size() + 1 || last;
      if (last) {
        s += cells[c];
      } else if (left) {
        s += fmt::format("{:<{}}  ", cells[c], width[c]);
      } else {
        s += fmt::format("{:>{}}  ", cells[c], width[c]);
      }
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string CsvCell(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return CsvField(v.get<std::string>());
  return v.dump();
}

std::string RenderCsv(const Json& doc) {
  std::vector<std::string> fields = VaryFields(doc);
  std::vector<Column> metrics = MetricColumns(doc);
  std::vector<std::string> header = {"index"};
  for (const auto& f : fields) header.push_back(CsvField(f));
  for (const auto& m : metrics) header.push_back(m.key);
  const std::vector<EconomicsColumn> money = EconomicsColumns(doc.at("points"));
  for (const auto& m : money) header.push_back(m.key);
  header.push_back("error");
  std::string out = fmt::format("{}\n", fmt::join(header, ","));
  for (const auto& p : doc.at("points")) {
    std::vector<std::string> row = {p.at("index").dump()};
    for (const auto& f : fields) row.push_back(CsvCell(p.at("values").at(f)));
    for (const auto& m : metrics) row.push_back(CsvCell(p.at(m.key)));
    for (const auto& m : money) row.push_back(EconomicsCell(m, Economics(p), /*csv=*/true));
    row.push_back(CsvCell(p.at("error")));
    out += fmt::format("{}\n", fmt::join(row, ","));
  }
  return out;
}

std::string Render(const Json& doc, const std::string& format) {
  if (format == "json") return doc.dump(2) + "\n";
  if (format == "csv") return RenderCsv(doc);
  return RenderTable(doc);
}

po::options_description SweepOptionsDescription(SweepArgs& a) {
  po::options_description desc(
      "placesim sweep SCENARIO --vary FIELD.PATH=V1,V2,... [options]\n"
      "Runs every combination of the --vary values (the first --vary is the outermost loop)");
  desc.add_options()("help,h", "show this help")(
      "scenario", po::value<std::string>(&a.path)->required(), "scenario file")(
      "vary", po::value<std::vector<std::string>>(&a.varies)->composing(),
      "FIELD.PATH=V1,V2,... or a range: a..b, a..b:+k, a..b:xk (e.g. cluster.nodes=1..64:x2); "
      "repeatable, at least once")(
      "set", po::value<std::vector<std::string>>(&a.sets)->composing(),
      "FIELD.PATH=VALUE: override applied to every point before the varied fields "
      "(repeatable)")("mode", po::value<std::string>(&a.mode)->default_value("analyze"),
                      "analyze (instant) or simulate (also replay one step per point)")(
      "network", po::value<std::string>(&a.network)->default_value("scenario"),
      "with --mode simulate: the scenario's simulation.network_model, or flow, or analytic "
      "(faster, no contention)")(
      "jobs", po::value<int64_t>(&a.jobs)->default_value(0),
      "worker threads; 0 = the hardware's concurrency. Output is identical for every value")(
      "shard", po::value<std::string>(&a.shard)->default_value("1/1"),
      "K/N: run only the points i with i % N == K-1; join the JSON of all shards with "
      "`placesim merge`")("format", po::value<std::string>(&a.format)->default_value("table"),
                          "output format: table, csv or json")(
      "report", po::value<std::string>(&a.report),
      "also write the curves as a self-contained HTML page to FILE");
  return desc;
}

// Loads the scenario and its --set overrides. Every problem at once: the flags' problems
// come first, then the scenario's; when the flags had some, the values the varied fields
// refuse are added too. Returns nothing (after printing) when the sweep must not run.
std::optional<api::ScenarioSource> LoadSweepInput(const SweepArgs& a, std::ostream& err) {
  ErrorList errors;
  study::SweepFlags flags = study::ParseSweepFlags(a.varies, a.shard, &errors);
  auto fail = [&]() {
    PrintMessage(err, "sweep", "bad input:\n" + errors.ToStatus().message());
    return std::nullopt;
  };
  StatusOr<api::ScenarioSource> source = api::LoadScenarioFile(a.path);
  if (!source.ok()) {
    errors.AddLine(source.status().message());
    return fail();
  }
  Status set = api::ApplyOverrides(&*source, a.sets);
  if (!set.ok()) {
    errors.AddLine(set.message());
    return fail();
  }
  if (!errors.empty()) {
    study::CheckSweepAxes(source->document, flags.axes, &errors);
    return fail();
  }
  return *std::move(source);
}

}  // namespace

int RunSweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SweepArgs a;
  po::options_description desc = SweepOptionsDescription(a);
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs("sweep", args, desc, pos, err)) return kExitBadInput;
  if (!CheckChoice("sweep", "format", a.format, {"table", "csv", "json"}, err) ||
      !CheckChoice("sweep", "mode", a.mode, {"analyze", "simulate"}, err) ||
      !CheckChoice("sweep", "network", a.network, study::NetworkChoices(), err)) {
    return kExitBadInput;
  }
  if (a.jobs < 0 || a.jobs > 4096) {
    err << "placesim sweep: --jobs: " << a.jobs << ": must be between 0 and 4096\n";
    return kExitBadInput;
  }
  std::optional<api::ScenarioSource> source = LoadSweepInput(a, err);
  if (!source) return kExitBadInput;
  std::string chartjs;
  if (!a.report.empty()) {
    StatusOr<std::string> loaded = report::LoadChartJs();
    if (!loaded.ok()) return ReportError(err, "sweep --report", loaded.status());
    chartjs = *std::move(loaded);
  }

  api::SweepOptions options;
  options.vary = a.varies;
  options.shard = a.shard;
  options.mode = a.mode == "simulate" ? study::SweepMode::kSimulate : study::SweepMode::kAnalyze;
  options.network = a.network;
  options.jobs = a.jobs;
  const bool progress = isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  if (progress) {
    options.progress = [&](int64_t done, int64_t total) {
      DrawProgress(err, done, total,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    };
  }
  StatusOr<api::SweepResult> result = api::Sweep(*source, options);
  if (!result.ok()) {
    PrintMessage(err, "sweep", result.status().message());
    return kExitBadInput;
  }
  if (progress) err << "\n";
  // The document `--format json` prints; the table and CSV are rendered from it too.
  out << Render(api::SweepJson(*result, a.path, a.sets, a.network), a.format);
  if (!a.report.empty()) {
    Status written = report::WriteHtml(a.report, report::RenderSweepHtml(a.path, *result, chartjs));
    if (!written.ok()) return ReportError(err, "sweep --report", written);
  }
  if (const int64_t failed = result->failed(); failed > 0) {
    err << fmt::format("placesim sweep: {} of {} points failed (see their error)\n", failed,
                       result->points.size());
  }
  return kExitOk;
}

// -------------------------------------------------------------------------------- merge
namespace {

// A shard as read: the file it came from (for messages) and its document.
struct ShardFile {
  std::string path;
  Json doc;
};

// The economics keys the table and CSV print as numbers (EconomicsColumns).
bool IsEconomicsFigure(std::string_view key) {
  for (std::string_view figure :
       {"time_to_train_s", "gpu_hours", "cost_usd", "energy_to_train_kwh", "co2_kg",
        "cost_per_hour_usd", "energy_per_hour_kwh", "co2_kg_per_hour"}) {
    if (key == figure) return true;
  }
  return false;
}

// Checks one point of a shard: every field the merge and its table and CSV read by name.
void CheckPoint(const Json& p, const std::vector<Column>& metrics,
                const std::vector<std::string>& fields, const std::string& file,
                const std::string& at, ErrorList* errors) {
  if (!p.is_object()) {
    errors->AddLine(fmt::format("{}: {}: {}: must be an object", file, at, study::JsonTypeName(p)));
    return;
  }
  study::JsonFields point(p, file, at, errors);
  point.Integer("index");
  point.String("status");
  point.Scalar("error");
  point.Object("economics", /*required=*/false);
  for (const Column& m : metrics) {
    if (m.key == "status") continue;  // a string, checked above
    // Byte counts print as Bytes: an integer; the rest as whatever scalar they are.
    if (m.key.ends_with("_bytes") || m.key == "comm_bytes_per_device_per_step") {
      point.IntegerOrNull(m.key);
    } else {
      point.Scalar(m.key);
    }
  }
  if (point.Object("values")) {
    study::JsonFields values(p["values"], file, at + ".values", errors);
    for (const std::string& f : fields) values.String(f);
  }
  if (const Json* e = Economics(p); e != nullptr && e->is_object()) {
    for (const auto& [key, value] : e->items()) {
      // The table and CSV read the figures of EconomicsColumns as numbers; flags such as
      // tdp_bound are copied as they are.
      if (!value.is_number() && !(value.is_primitive() && !IsEconomicsFigure(key))) {
        errors->AddLine(fmt::format("{}: {}.economics.{}: {}: must be a number", file, at, key,
                                    study::JsonTypeName(value)));
      }
    }
  }
}

// Checks that `doc` has the shape of `placesim sweep --format json` in every field the merge
// reads; each problem names its JSON path. Returns whether it has.
bool CheckShard(const Json& doc, const std::string& file, ErrorList* errors) {
  const size_t before = errors->size();
  // Another document altogether gets one line, not one per field it lacks.
  const auto kind = doc.find("kind");
  if (kind == doc.end() || *kind != kSweepKind) {
    errors->AddLine(fmt::format(
        "{}: not the JSON of `placesim sweep --format json`: $.kind is {}, not \"{}\"", file,
        kind == doc.end()   ? std::string("missing")
        : kind->is_string() ? fmt::format("\"{:.40}\"", kind->get<std::string>())
                            : study::JsonTypeName(*kind),
        kSweepKind));
    return false;
  }
  study::JsonFields top(doc, file, "$", errors);
  top.Equals("version", int64_t{kSweepVersion});
  top.String("fingerprint");
  top.Integer("total_points");
  top.String("mode", /*required=*/false);
  // MetricColumns reads the mode; a mode that is not a string was reported just above.
  const std::vector<Column> metrics =
      MetricColumns(doc.contains("mode") && doc["mode"].is_string() ? doc : Json::object());
  if (top.Object("shard")) {
    study::JsonFields shard(doc["shard"], file, "$.shard", errors);
    shard.Integer("index");
    shard.Integer("count");
  }
  std::vector<std::string> fields;
  if (top.Array("vary")) {
    for (size_t i = 0; i < doc["vary"].size(); ++i) {
      const Json& v = doc["vary"][i];
      const std::string at = fmt::format("$.vary[{}]", i);
      if (!v.is_object()) {
        errors->AddLine(
            fmt::format("{}: {}: {}: must be an object", file, at, study::JsonTypeName(v)));
      } else if (study::JsonFields(v, file, at, errors).String("field")) {
        fields.push_back(v["field"].get<std::string>());
      }
    }
  }
  if (top.Array("points")) {
    for (size_t i = 0; i < doc["points"].size(); ++i) {
      CheckPoint(doc["points"][i], metrics, fields, file, fmt::format("$.points[{}]", i), errors);
    }
  }
  return errors->size() == before;
}

// Reads every shard file; each unreadable or malformed one adds lines to `errors`.
std::vector<ShardFile> ReadShards(const std::vector<std::string>& files, ErrorList* errors) {
  std::vector<ShardFile> shards;
  for (const auto& path : files) {
    StatusOr<Json> doc = study::ReadJsonFile(path);
    if (!doc.ok()) {
      errors->AddLine(std::string(doc.status().message()));
      continue;
    }
    if (!doc->is_object()) {
      errors->AddLine(fmt::format(
          "{}: {}: not the JSON of `placesim sweep --format json` (an object of kind \"sweep\")",
          path, study::JsonTypeName(*doc)));
      continue;
    }
    if (CheckShard(*doc, path, errors)) shards.push_back({path, *std::move(doc)});
  }
  return shards;
}

study::ShardHeader HeaderOf(const ShardFile& file) {
  study::ShardHeader h;
  h.name = file.path;
  h.fingerprint = file.doc["fingerprint"].get<std::string>();
  h.total_points = file.doc["total_points"].get<int64_t>();
  h.shard = {file.doc["shard"]["index"].get<int64_t>(), file.doc["shard"]["count"].get<int64_t>()};
  for (const auto& p : file.doc["points"]) h.point_indices.push_back(p["index"].get<int64_t>());
  return h;
}

}  // namespace

int RunMerge(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  std::string format = "json";
  po::options_description desc(
      "placesim merge SHARD.json... [options]\n"
      "Joins the JSON outputs of `placesim sweep --shard K/N` into the unsharded result");
  desc.add_options()("help,h", "show this help")(
      "file", po::value<std::vector<std::string>>(&files), "sweep JSON files, one per shard")(
      "format", po::value<std::string>(&format)->default_value("json"),
      "output format: json, table or csv");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("file", -1);
  if (!ParseArgs("merge", args, desc, pos, err)) return kExitBadInput;
  if (!CheckChoice("merge", "format", format, {"json", "table", "csv"}, err)) return kExitBadInput;
  if (files.empty()) {
    err << "placesim merge: no input; give the JSON file of every shard\n";
    return kExitBadInput;
  }
  ErrorList errors;
  std::vector<ShardFile> shards = ReadShards(files, &errors);
  if (!errors.empty()) {
    PrintMessage(err, "merge", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }
  std::vector<study::ShardHeader> headers;
  for (const ShardFile& s : shards) headers.push_back(HeaderOf(s));
  StatusOr<study::MergePlan> plan = study::PlanMerge(headers);
  if (!plan.ok()) {
    PrintMessage(err, "merge", plan.status().message());
    return kExitBadInput;
  }
  Json merged = shards[plan->first_shard].doc;
  merged["shard"] = {{"index", 1}, {"count", 1}};
  Json list = Json::array();
  for (const study::PointSource& p : plan->points) {
    list.push_back(shards[p.shard].doc["points"][p.position]);
  }
  merged["points"] = std::move(list);
  out << Render(merged, format);
  return kExitOk;
}

}  // namespace placesim::sim
