// `placesim compare` (see compare.h for the rules users see): flags and formatting over the
// library's comparison (placesim/placesim.h: Compare; sim/study/compare.h).
#include "sim/cli/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"
#include "placesim/json.h"
#include "placesim/placesim.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/study/compare.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;

std::string FormatRelative(const std::optional<double>& r) {
  if (!r) return "new";
  return fmt::format("{:+.2f}%", 100.0 * *r);
}

// One aligned row per change: metric, baseline, current, delta, relative, verdict.
std::string CompareTable(const study::Comparison& c) {
  if (c.changes.empty()) return {};
  std::vector<std::vector<std::string>> cells = {
      {"metric", "baseline", "current", "delta", "relative", "verdict"}};
  for (const auto& r : c.changes) {
    const bool one_sided = !r.baseline || !r.current;
    const bool boolean = r.baseline && std::holds_alternative<bool>(*r.baseline);
    cells.push_back(
        {r.metric, r.baseline ? api::MetricValueJson(r.baseline).dump() : "-",
         r.current ? api::MetricValueJson(r.current).dump() : "-", r.delta.empty() ? "-" : r.delta,
         one_sided || boolean ? "-" : FormatRelative(r.relative), study::VerdictName(r.verdict)});
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line = fmt::format("{:<{}}", row[0], width[0]);
    for (size_t i = 1; i + 1 < row.size(); ++i) line += fmt::format("  {:>{}}", row[i], width[i]);
    out += line + "  " + row.back() + "\n";
  }
  return out;
}

// Prints every line of `message` behind "placesim compare: ".
void PrintLines(std::ostream& err, const std::string& message) {
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line)) err << "placesim compare: " << line << "\n";
}

}  // namespace

int RunCompare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  std::string threshold_text = "2%";
  std::string format = "table";
  po::options_description desc(
      "placesim compare BASELINE.json CURRENT.json [options]\n"
      "Compares two results of analyze, simulate or sweep (--format json), or two Google "
      "Benchmark JSON files; exits 1 when a metric regressed beyond the threshold");
  desc.add_options()("help,h", "show this help")(
      "file", po::value<std::vector<std::string>>(&files), "BASELINE.json CURRENT.json")(
      "threshold", po::value<std::string>(&threshold_text)->default_value("2%"),
      "relative change that counts, as a percentage (e.g. 0.5%)")(
      "format", po::value<std::string>(&format)->default_value("table"),
      "output format: table or json");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("file", -1);
  if (!ParseArgs("compare", args, desc, pos, err)) return kExitBadInput;
  if (files.size() != 2) {
    err << "placesim compare: expected BASELINE.json CURRENT.json, got " << files.size()
        << " file(s)\n";
    return kExitBadInput;
  }
  if (!CheckChoice("compare", "format", format, {"table", "json"}, err)) return kExitBadInput;
  StatusOr<double> threshold = study::ParseThreshold(threshold_text);
  if (!threshold.ok()) {
    err << "placesim compare: " << threshold.status().message() << "\n";
    return kExitBadInput;
  }
  StatusOr<study::Comparison> c = api::Compare(files[0], files[1], *threshold);
  if (!c.ok()) {
    PrintLines(err, c.status().message());
    return kExitBadInput;
  }
  if (format == "json") {
    out << api::CompareJson(*c, files[0], files[1], *threshold).dump(2) << "\n";
  } else {
    out << fmt::format("compare {} -> {} ({}), threshold {}\n", files[0], files[1],
                       study::ResultKindName(c->kind), threshold_text);
    out << CompareTable(*c);
    out << fmt::format(
        "{} regressed, {} improved, {} changed beyond {}; {} changed within it, {} unchanged; {} "
        "removed, {} added\n",
        c->regressed, c->improved, c->changed, threshold_text, c->within_threshold, c->unchanged,
        c->removed, c->added);
  }
  if (c->regressed > 0) {
    err << "placesim compare: " << c->regressed << " metric(s) regressed beyond " << threshold_text
        << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace placesim::sim
