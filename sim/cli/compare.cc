// `placesim compare` (see compare.h for the rules users see).
//
// Both files are flattened to an ordered list of metrics (path, JSON leaf); the baseline's
// order drives the report, then the metrics only the current file has. Integers are compared
// exactly as int64 when both sides are integers, otherwise as doubles.
#include "sim/cli/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

struct Metric {
  std::string name;
  std::string leaf;  // the last path segment, for the direction
  Json value;        // a number or a boolean
};

// Appends every numeric or boolean leaf of `j` under `prefix`.
void Flatten(const Json& j, const std::string& prefix, const std::string& leaf,
             std::vector<Metric>* out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      Flatten(value, prefix.empty() ? key : prefix + "." + key, key, out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      Flatten(j[i], fmt::format("{}[{}]", prefix, i), leaf, out);
    }
  } else if (j.is_number() || j.is_boolean()) {
    out->push_back({prefix, leaf, j});
  }
}

enum class Kind { kAnalyze, kSimulate, kSweep, kBenchmark };
const char* KindName(Kind k) {
  switch (k) {
    case Kind::kAnalyze:
      return "analyze";
    case Kind::kSimulate:
      return "simulate";
    case Kind::kSweep:
      return "sweep";
    case Kind::kBenchmark:
      return "benchmark";
  }
  return "?";
}

struct Result {
  Kind kind = Kind::kAnalyze;
  std::vector<Metric> metrics;
};

// A sweep point's label: its varied values in their order, "[cluster.nodes=8, tp=2]".
std::string PointLabel(const Json& values) {
  std::vector<std::string> parts;
  for (const auto& [field, value] : values.items()) {
    parts.push_back(field + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// The same values sorted by field, so points match whatever the order of the --vary flags.
std::string PointKey(const Json& values) {
  std::map<std::string, std::string> sorted;
  for (const auto& [field, value] : values.items()) sorted[field] = value.dump();
  std::string key;
  for (const auto& [field, value] : sorted) key += field + "\x1f" + value + "\x1e";
  return key;
}

StatusOr<Result> Load(const std::string& path) {
  // A directory opens as a stream and then throws on the first read.
  std::error_code probe;
  if (std::filesystem::is_directory(path, probe)) {
    return InvalidArgumentError(fmt::format("{}: is a directory, not a JSON file", path));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError(fmt::format("{}: cannot read the file", path));
  Json j = Json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(fmt::format("{}: not valid JSON", path));
  Result r;
  if (j.is_object() && j.value("kind", "") == "sweep" && j.contains("points") &&
      j["points"].is_array()) {
    r.kind = Kind::kSweep;
    for (const auto& p : j["points"]) {
      if (!p.is_object() || !p.contains("values") || !p["values"].is_object()) {
        return InvalidArgumentError(
            fmt::format("{}: a sweep point has no \"values\" object", path));
      }
      // Matching key, then label: the label is what the report shows.
      std::string label = PointLabel(p["values"]);
      std::string key = PointKey(p["values"]);
      r.metrics.push_back({key + "\x1d" + label + " ok", "ok", p.value("status", "") == "ok"});
      for (const auto& [name, value] : p.items()) {
        if (name == "index" || name == "values" || name == "status" || name == "error") continue;
        std::vector<Metric> leaves;
        Flatten(value, name, name, &leaves);
        for (auto& m : leaves) {
          m.name = key + "\x1d" + label + " " + m.name;
          r.metrics.push_back(std::move(m));
        }
      }
    }
    return r;
  }
  if (j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array()) {
    // Google Benchmark's JSON (--benchmark_out): per benchmark, its times and rates. Runs are
    // matched by name; aggregates of repetitions are left out so both files compare alike.
    r.kind = Kind::kBenchmark;
    for (const auto& b : j["benchmarks"]) {
      if (!b.is_object() || !b.contains("name") || !b["name"].is_string()) continue;
      if (b.value("run_type", "iteration") != "iteration") continue;
      const std::string name = b["name"].get<std::string>();
      for (const char* key : {"real_time", "cpu_time", "items_per_second", "bytes_per_second"}) {
        if (b.contains(key) && b[key].is_number()) {
          r.metrics.push_back({name + " " + key, key, b[key]});
        }
      }
    }
    return r;
  }
  if (j.is_object() && j.contains("scenario") && j.contains("roles")) {
    r.kind = Kind::kAnalyze;
  } else if (j.is_object() && j.contains("step_time_s")) {
    r.kind = Kind::kSimulate;
  } else {
    return InvalidArgumentError(fmt::format(
        "{}: not a result of `placesim analyze`, `simulate` or `sweep` with --format json, nor "
        "Google Benchmark JSON",
        path));
  }
  Flatten(j, "", "", &r.metrics);
  return r;
}

// What a metric name shows: sweep names carry a hidden matching key before '\x1d'.
std::string Display(const std::string& name) {
  size_t sep = name.find('\x1d');
  return sep == std::string::npos ? name : name.substr(sep + 1);
}

struct Row {
  std::string metric;
  std::string verdict;  // regressed, improved, changed, removed, added
  Json baseline;
  Json current;
  std::string delta;
  std::optional<double> relative;  // nullopt when the baseline is zero
};

std::string FormatRelative(const std::optional<double>& r) {
  if (!r) return "new";
  return fmt::format("{:+.2f}%", 100.0 * *r);
}

}  // namespace

StatusOr<double> ParseThreshold(std::string_view text) {
  auto bad = [&]() {
    return InvalidArgumentError(fmt::format(
        "--threshold \"{}\": must be a percentage between 0% and 1000%, e.g. 2% or 0.5%", text));
  };
  if (text.size() < 2 || text.back() != '%') return bad();
  std::string number(text.substr(0, text.size() - 1));
  if (number.find_first_not_of("0123456789.") != std::string::npos ||
      std::count(number.begin(), number.end(), '.') > 1 || number == ".") {
    return bad();
  }
  double v = std::strtod(number.c_str(), nullptr);
  if (!std::isfinite(v) || v < 0 || v > 1000) return bad();
  return v / 100.0;
}

MetricDirection DirectionOf(std::string_view leaf) {
  for (std::string_view higher : {"mfu", "hfu", "tokens_per_second", "headroom_bytes", "fits", "ok",
                                  "correctness_ok", "items_per_second", "bytes_per_second"}) {
    if (leaf == higher) return MetricDirection::kHigherIsBetter;
  }
  if (leaf == "capacity_bytes" || leaf == "peak_at_s") return MetricDirection::kNeutral;
  if (leaf.ends_with("_s") || leaf.ends_with("_bytes") || leaf == "bytes" ||
      leaf == "bubble_fraction" || leaf == "errors" || leaf == "warnings" || leaf == "real_time" ||
      leaf == "cpu_time") {
    return MetricDirection::kLowerIsBetter;
  }
  return MetricDirection::kNeutral;
}

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
  StatusOr<double> threshold = ParseThreshold(threshold_text);
  if (!threshold.ok()) {
    err << "placesim compare: " << threshold.status().message() << "\n";
    return kExitBadInput;
  }
  StatusOr<Result> base = Load(files[0]);
  StatusOr<Result> cur = Load(files[1]);
  if (!base.ok() || !cur.ok()) {
    if (!base.ok()) err << "placesim compare: " << base.status().message() << "\n";
    if (!cur.ok()) err << "placesim compare: " << cur.status().message() << "\n";
    return kExitBadInput;
  }
  if (base->kind != cur->kind) {
    err << fmt::format(
        "placesim compare: {} is a result of `{}` and {} of `{}`; compare results of the same "
        "command\n",
        files[0], KindName(base->kind), files[1], KindName(cur->kind));
    return kExitBadInput;
  }

  std::map<std::string, const Metric*> current;
  for (const auto& m : cur->metrics) current.emplace(m.name, &m);
  std::map<std::string, bool> in_baseline;
  std::vector<Row> rows;
  int regressed = 0, improved = 0, changed = 0, within = 0, unchanged = 0, removed = 0, added = 0;
  for (const auto& b : base->metrics) {
    in_baseline[b.name] = true;
    auto it = current.find(b.name);
    if (it == current.end()) {
      rows.push_back({Display(b.name), "removed", b.value, nullptr, "", std::nullopt});
      ++removed;
      continue;
    }
    const Metric& c = *it->second;
    MetricDirection direction = DirectionOf(b.leaf);
    Row row{Display(b.name), "", b.value, c.value, "", std::nullopt};
    int sign = 0;  // of current - baseline
    bool beyond = false;
    if (b.value.is_boolean() || c.value.is_boolean()) {
      if (b.value == c.value) {
        ++unchanged;
        continue;
      }
      sign = c.value.is_boolean() && c.value.get<bool>() ? 1 : -1;
      beyond = true;
    } else if (b.value.is_number_integer() && c.value.is_number_integer()) {
      // int64 covers every byte count and counter placesim writes.
      int64_t x = b.value.get<int64_t>();
      int64_t y = c.value.get<int64_t>();
      if (x == y) {
        ++unchanged;
        continue;
      }
      sign = y > x ? 1 : -1;
      row.delta = fmt::format("{:+}", y - x);
      if (x != 0) row.relative = static_cast<double>(y - x) / std::fabs(static_cast<double>(x));
      beyond = !row.relative || std::fabs(*row.relative) > *threshold;
    } else {
      double x = b.value.get<double>();
      double y = c.value.get<double>();
      if (x == y) {
        ++unchanged;
        continue;
      }
      sign = y > x ? 1 : -1;
      row.delta = fmt::format("{:+.6g}", y - x);
      if (x != 0) row.relative = (y - x) / std::fabs(x);
      beyond = !row.relative || std::fabs(*row.relative) > *threshold;
    }
    if (!beyond) {
      ++within;
      continue;
    }
    if (direction == MetricDirection::kNeutral) {
      row.verdict = "changed";
      ++changed;
    } else if ((direction == MetricDirection::kLowerIsBetter) == (sign > 0)) {
      row.verdict = "regressed";
      ++regressed;
    } else {
      row.verdict = "improved";
      ++improved;
    }
    rows.push_back(std::move(row));
  }
  for (const auto& c : cur->metrics) {
    if (in_baseline.count(c.name) != 0) continue;
    rows.push_back({Display(c.name), "added", nullptr, c.value, "", std::nullopt});
    ++added;
  }

  const std::string summary = fmt::format(
      "{} regressed, {} improved, {} changed beyond {}; {} changed within it, {} unchanged; {} "
      "removed, {} added",
      regressed, improved, changed, threshold_text, within, unchanged, removed, added);
  if (format == "json") {
    Json j;
    j["kind"] = "compare";
    j["result_kind"] = KindName(base->kind);
    j["baseline"] = files[0];
    j["current"] = files[1];
    j["threshold"] = *threshold;
    j["regressed"] = regressed;
    j["improved"] = improved;
    j["changed"] = changed;
    j["within_threshold"] = within;
    j["unchanged"] = unchanged;
    j["removed"] = removed;
    j["added"] = added;
    Json list = Json::array();
    for (const auto& r : rows) {
      Json e;
      e["metric"] = r.metric;
      e["verdict"] = r.verdict;
      e["baseline"] = r.baseline;
      e["current"] = r.current;
      if (r.relative) {
        e["relative"] = *r.relative;
      } else {
        e["relative"] = nullptr;
      }
      list.push_back(std::move(e));
    }
    j["metrics"] = std::move(list);
    out << j.dump(2) << "\n";
  } else {
    out << fmt::format("compare {} -> {} ({}), threshold {}\n", files[0], files[1],
                       KindName(base->kind), threshold_text);
    if (!rows.empty()) {
      std::vector<std::vector<std::string>> cells = {
          {"metric", "baseline", "current", "delta", "relative", "verdict"}};
      for (const auto& r : rows) {
        cells.push_back({r.metric, r.baseline.is_null() ? "-" : r.baseline.dump(),
                         r.current.is_null() ? "-" : r.current.dump(),
                         r.delta.empty() ? "-" : r.delta,
                         r.baseline.is_null() || r.current.is_null() || r.baseline.is_boolean()
                             ? "-"
                             : FormatRelative(r.relative),
                         r.verdict});
      }
      std::vector<size_t> width(cells[0].size(), 0);
      for (const auto& row : cells) {
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
      }
      for (const auto& row : cells) {
        std::string line = fmt::format("{:<{}}", row[0], width[0]);
        for (size_t c = 1; c + 1 < row.size(); ++c) {
          line += fmt::format("  {:>{}}", row[c], width[c]);
        }
        line += "  " + row.back();
        out << line << "\n";
      }
    }
    out << summary << "\n";
  }
  if (regressed > 0) {
    err << "placesim compare: " << regressed << " metric(s) regressed beyond " << threshold_text
        << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace placesim::sim
