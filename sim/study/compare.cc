// The comparison engine (see compare.h). Both files are flattened to an ordered list of
// metrics; the baseline's order drives the report, then the metrics only the current file
// has. Integers are compared exactly as int64 when both sides are integers, otherwise as
// doubles.
#include "sim/study/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "sim/study/json_input.h"

namespace placesim::study {
namespace {

using Json = nlohmann::ordered_json;

MetricValue ValueOf(const Json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return j.get<int64_t>();
  return j.get<double>();
}

// Appends every numeric or boolean leaf of `j` under `prefix`.
void Flatten(const Json& j, const std::string& prefix, const std::string& leaf,
             std::vector<Metric>* out) {
  // Past the limit the caller refuses the file; flattening more would only cost memory.
  if (out->size() > kMaxResultMetrics) return;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      Flatten(value, prefix.empty() ? key : prefix + "." + key, key, out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      Flatten(j[i], fmt::format("{}[{}]", prefix, i), leaf, out);
    }
  } else if (j.is_number() || j.is_boolean()) {
    out->push_back({prefix, leaf, ValueOf(j)});
  }
}

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

// A sweep's metrics: per point, "ok" and every leaf but its index, values, status and error.
// Points are matched between the files by their values, so two points with the same values
// would each be compared with the first: a file would differ from itself. Refused.
Status FlattenSweep(const Json& j, const std::string& path, std::vector<Metric>* out) {
  std::map<std::string, size_t> first_with;  // point key -> index of the first such point
  for (size_t i = 0; i < j["points"].size(); ++i) {
    const Json& p = j["points"][i];
    if (!p.is_object() || !p.contains("values") || !p["values"].is_object()) {
      return InvalidArgumentError(fmt::format("{}: a sweep point has no \"values\" object", path));
    }
    // Matching key, then label: the label is what the report shows.
    std::string label = PointLabel(p["values"]);
    std::string key = PointKey(p["values"]);
    if (const auto [it, inserted] = first_with.emplace(key, i); !inserted) {
      return InvalidArgumentError(
          fmt::format("{}: $.points[{}].values: {}: the same values as $.points[{}]; each point "
                      "of a sweep has values of its own",
                      path, i, label, it->second));
    }
    const auto status = p.find("status");
    const bool ok = status != p.end() && status->is_string() && status->get<std::string>() == "ok";
    out->push_back({key + "\x1d" + label + " ok", "ok", ok});
    for (const auto& [name, value] : p.items()) {
      if (name == "index" || name == "values" || name == "status" || name == "error") continue;
      std::vector<Metric> leaves;
      Flatten(value, name, name, &leaves);
      for (auto& m : leaves) {
        m.name = key + "\x1d" + label + " " + m.name;
        out->push_back(std::move(m));
      }
    }
  }
  return OkStatus();
}

// Google Benchmark's JSON (--benchmark_out): per benchmark, its times and rates. Runs are
// matched by name; aggregates of repetitions are left out so both files compare alike.
// A name that appears twice (other than as repetitions, told apart by repetition_index) is
// refused, as a sweep's repeated point is: both would be compared with the first.
Status FlattenBenchmarks(const Json& j, const std::string& path, std::vector<Metric>* out) {
  std::map<std::string, size_t> first_with;  // name -> index of the first such benchmark
  for (size_t i = 0; i < j["benchmarks"].size(); ++i) {
    const Json& b = j["benchmarks"][i];
    if (!b.is_object() || !b.contains("name") || !b["name"].is_string()) continue;
    const auto run_type = b.find("run_type");
    if (run_type != b.end() && *run_type != "iteration") continue;
    std::string name = b["name"].get<std::string>();
    // Repetitions after the first keep apart; the first keeps the plain name, as without any.
    if (const auto rep = b.find("repetition_index");
        rep != b.end() && rep->is_number_integer() && rep->get<int64_t>() > 0) {
      name += fmt::format(" (repetition {})", rep->get<int64_t>());
    }
    if (const auto [it, inserted] = first_with.emplace(name, i); !inserted) {
      return InvalidArgumentError(fmt::format(
          "{}: $.benchmarks[{}].name: \"{}\": the same benchmark as $.benchmarks[{}]; each "
          "appears once",
          path, i, name, it->second));
    }
    for (const char* key : {"real_time", "cpu_time", "items_per_second", "bytes_per_second"}) {
      if (b.contains(key) && b[key].is_number()) {
        out->push_back({name + " " + key, key, ValueOf(b[key])});
      }
    }
  }
  return OkStatus();
}

// Checks the type of every field the flattening reads by name, so a result of the wrong
// shape is refused with its JSON path instead of failing on a value it did not expect.
Status CheckShape(const Json& j, const std::string& path) {
  if (!j.is_object()) return OkStatus();  // refused by LoadResultFile as no known result
  ErrorList errors;
  JsonFields top(j, path, "$", &errors);
  top.String("kind", /*required=*/false);
  if (j.contains("kind") && j["kind"] == "sweep" && top.Array("points")) {
    for (size_t i = 0; i < j["points"].size(); ++i) {
      const Json& p = j["points"][i];
      const std::string at = fmt::format("$.points[{}]", i);
      if (!p.is_object()) {
        errors.AddLine(fmt::format("{}: {}: {}: must be an object", path, at, JsonTypeName(p)));
        continue;
      }
      JsonFields point(p, path, at, &errors);
      point.String("status", /*required=*/false);
      if (point.Object("values")) {
        for (const auto& [field, value] : p["values"].items()) {
          JsonFields(p["values"], path, at + ".values", &errors).String(field);
        }
      }
    }
  }
  if (j.contains("benchmarks") && top.Array("benchmarks")) {
    for (size_t i = 0; i < j["benchmarks"].size(); ++i) {
      const Json& b = j["benchmarks"][i];
      if (!b.is_object()) continue;  // not a benchmark: skipped, as a benchmark without a name
      JsonFields bench(b, path, fmt::format("$.benchmarks[{}]", i), &errors);
      bench.String("name", /*required=*/false);
      bench.String("run_type", /*required=*/false);
    }
  }
  return errors.ToStatus();
}

StatusOr<ResultMetrics> CheckMetricCount(const std::string& path, ResultMetrics r) {
  if (r.metrics.size() <= kMaxResultMetrics) return r;
  return InvalidArgumentError(
      fmt::format("{}: more than {} numeric values, the limit of a result to compare", path,
                  kMaxResultMetrics));
}

// The sign of current - baseline and whether the change counts, for one matched metric;
// nullopt when both are equal. Fills `change`'s delta and relative.
std::optional<std::pair<int, bool>> Difference(const MetricValue& b, const MetricValue& c,
                                               double threshold, MetricChange* change) {
  const bool* bb = std::get_if<bool>(&b);
  const bool* cb = std::get_if<bool>(&c);
  if (bb != nullptr || cb != nullptr) {
    if (bb != nullptr && cb != nullptr && *bb == *cb) return std::nullopt;
    return std::make_pair(cb != nullptr && *cb ? 1 : -1, true);
  }
  const int64_t* bi = std::get_if<int64_t>(&b);
  const int64_t* ci = std::get_if<int64_t>(&c);
  if (bi != nullptr && ci != nullptr) {
    // int64 covers every byte count and counter placesim writes.
    const int64_t x = *bi, y = *ci;
    if (x == y) return std::nullopt;
    // The difference of two int64 needs 65 bits: INT64_MAX - INT64_MIN.
    const __int128 d = static_cast<__int128>(y) - x;
    change->delta = d >= INT64_MIN && d <= INT64_MAX
                        ? fmt::format("{:+}", static_cast<int64_t>(d))
                        : fmt::format("{:+.6g}", static_cast<double>(d));
    if (x != 0) change->relative = static_cast<double>(d) / std::fabs(static_cast<double>(x));
    return std::make_pair(y > x ? 1 : -1,
                          !change->relative || std::fabs(*change->relative) > threshold);
  }
  auto as_double = [](const MetricValue& v) {
    const int64_t* i = std::get_if<int64_t>(&v);
    return i != nullptr ? static_cast<double>(*i) : std::get<double>(v);
  };
  const double x = as_double(b), y = as_double(c);
  if (x == y) return std::nullopt;
  change->delta = fmt::format("{:+.6g}", y - x);
  if (x != 0) change->relative = (y - x) / std::fabs(x);
  return std::make_pair(y > x ? 1 : -1,
                        !change->relative || std::fabs(*change->relative) > threshold);
}

// Classifies one metric present in both files, counting it in `out`.
void CompareMetric(const Metric& b, const Metric& c, double threshold, Comparison* out) {
  MetricChange change;
  change.metric = DisplayName(b.name);
  change.baseline = b.value;
  change.current = c.value;
  std::optional<std::pair<int, bool>> diff = Difference(b.value, c.value, threshold, &change);
  if (!diff) {
    ++out->unchanged;
    return;
  }
  const auto [sign, beyond] = *diff;
  if (!beyond) {
    ++out->within_threshold;
    return;
  }
  const MetricDirection direction = DirectionOf(b.leaf);
  if (direction == MetricDirection::kNeutral) {
    change.verdict = Verdict::kChanged;
    ++out->changed;
  } else if ((direction == MetricDirection::kLowerIsBetter) == (sign > 0)) {
    change.verdict = Verdict::kRegressed;
    ++out->regressed;
  } else {
    change.verdict = Verdict::kImproved;
    ++out->improved;
  }
  out->changes.push_back(std::move(change));
}

}  // namespace

const char* ResultKindName(ResultKind k) {
  switch (k) {
    case ResultKind::kAnalyze:
      return "analyze";
    case ResultKind::kSimulate:
      return "simulate";
    case ResultKind::kSweep:
      return "sweep";
    case ResultKind::kBenchmark:
      return "benchmark";
  }
  return "?";
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kRegressed:
      return "regressed";
    case Verdict::kImproved:
      return "improved";
    case Verdict::kChanged:
      return "changed";
    case Verdict::kRemoved:
      return "removed";
    case Verdict::kAdded:
      return "added";
  }
  return "?";
}

StatusOr<ResultMetrics> LoadResultFile(const std::string& path) {
  ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  RETURN_IF_ERROR(CheckShape(j, path));
  ResultMetrics r;
  if (j.is_object() && j.value("kind", "") == "sweep" && j.contains("points") &&
      j["points"].is_array()) {
    r.kind = ResultKind::kSweep;
    RETURN_IF_ERROR(FlattenSweep(j, path, &r.metrics));
    return CheckMetricCount(path, std::move(r));
  }
  if (j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array()) {
    r.kind = ResultKind::kBenchmark;
    RETURN_IF_ERROR(FlattenBenchmarks(j, path, &r.metrics));
    return CheckMetricCount(path, std::move(r));
  }
  if (j.is_object() && j.contains("scenario") && j.contains("roles")) {
    r.kind = ResultKind::kAnalyze;
  } else if (j.is_object() && j.contains("step_time_s")) {
    r.kind = ResultKind::kSimulate;
  } else {
    return InvalidArgumentError(fmt::format(
        "{}: not a result of `placesim analyze`, `simulate` or `sweep` with --format json, nor "
        "Google Benchmark JSON",
        path));
  }
  Flatten(j, "", "", &r.metrics);
  return CheckMetricCount(path, std::move(r));
}

std::string DisplayName(const std::string& name) {
  size_t sep = name.find('\x1d');
  return sep == std::string::npos ? name : name.substr(sep + 1);
}

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

namespace {
// The economics figures a run pays for (docs/economics.md): less is better. The inputs (price,
// grid intensity, PUE, TDP) and the GPU count and utilisation stay neutral.
bool IsCostOrEnergy(std::string_view leaf) {
  for (std::string_view paid : {"cost_usd", "cost_per_hour_usd", "gpu_hours", "co2_kg",
                                "co2_kg_per_hour", "energy_per_hour_kwh", "energy_to_train_kwh",
                                "energy_per_step_j", "gpu_power_w", "facility_power_w"}) {
    if (leaf == paid) return true;
  }
  return false;
}
}  // namespace

MetricDirection DirectionOf(std::string_view leaf) {
  for (std::string_view higher : {"mfu", "hfu", "tokens_per_second", "headroom_bytes", "fits", "ok",
                                  "correctness_ok", "items_per_second", "bytes_per_second"}) {
    if (leaf == higher) return MetricDirection::kHigherIsBetter;
  }
  if (leaf == "capacity_bytes" || leaf == "peak_at_s") return MetricDirection::kNeutral;
  if (leaf.ends_with("_s") || leaf.ends_with("_bytes") || leaf == "bytes" ||
      leaf == "bubble_fraction" || leaf == "errors" || leaf == "warnings" || leaf == "real_time" ||
      leaf == "cpu_time" || IsCostOrEnergy(leaf)) {
    return MetricDirection::kLowerIsBetter;
  }
  return MetricDirection::kNeutral;
}

StatusOr<Comparison> CompareResults(const ResultMetrics& baseline, const ResultMetrics& current,
                                    double threshold, std::string_view baseline_name,
                                    std::string_view current_name) {
  if (baseline.kind != current.kind) {
    return InvalidArgumentError(fmt::format(
        "{} is a result of `{}` and {} of `{}`; compare results of the same command", baseline_name,
        ResultKindName(baseline.kind), current_name, ResultKindName(current.kind)));
  }
  Comparison out;
  out.kind = baseline.kind;
  std::map<std::string, const Metric*> by_name;
  for (const auto& m : current.metrics) by_name.emplace(m.name, &m);
  std::map<std::string, bool> in_baseline;
  for (const auto& b : baseline.metrics) {
    in_baseline[b.name] = true;
    auto it = by_name.find(b.name);
    if (it == by_name.end()) {
      out.changes.push_back(
          {DisplayName(b.name), Verdict::kRemoved, b.value, std::nullopt, "", std::nullopt});
      ++out.removed;
      continue;
    }
    CompareMetric(b, *it->second, threshold, &out);
  }
  for (const auto& c : current.metrics) {
    if (in_baseline.count(c.name) != 0) continue;
    out.changes.push_back(
        {DisplayName(c.name), Verdict::kAdded, std::nullopt, c.value, "", std::nullopt});
    ++out.added;
  }
  return out;
}

}  // namespace placesim::study
