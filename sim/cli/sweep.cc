// `placesim sweep` and `placesim merge` (see sweep.h for the behaviour users see).
//
// Every point's result is one JSON object with a fixed key order (PointJson); the table, CSV
// and JSON outputs are all rendered from the sweep document that holds them, so a sweep and a
// merge of its shards print through the same code. Workers share the parsed base document
// read-only and copy it per point; each writes only its own slot of the results.
#include "sim/cli/sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/cli/cli_common.h"
#include "sim/cli/commands.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "strategies/analyzer.h"
#include "strategies/plan.h"
#include "topology/cluster.h"

namespace placesim::sim {
namespace {

namespace po = boost::program_options;
using Json = nlohmann::ordered_json;

constexpr const char* kSweepKind = "sweep";
constexpr int kSweepVersion = 1;

// ------------------------------------------------------------------------ value lists
std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool IsQuoted(std::string_view s) {
  return s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front();
}

// One element of a --vary list, trimmed; `quoted` when it was written inside quotes.
struct ListElement {
  std::string text;
  bool quoted = false;
};

// Splits at commas outside single or double quotes. An unterminated quote is an error.
StatusOr<std::vector<ListElement>> SplitList(std::string_view list, std::string_view field) {
  std::vector<ListElement> elements;
  std::string current;
  char quote = 0;
  auto flush = [&]() {
    std::string_view t = Trim(current);
    ListElement e;
    e.quoted = IsQuoted(t);
    e.text = std::string(e.quoted ? t.substr(1, t.size() - 2) : t);
    elements.push_back(std::move(e));
    current.clear();
  };
  for (char c : list) {
    if (quote != 0) {
      if (c == quote) quote = 0;
      current += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      current += c;
    } else if (c == ',') {
      flush();
    } else {
      current += c;
    }
  }
  if (quote != 0) {
    return InvalidArgumentError(
        fmt::format("--vary {}: \"{}\": unterminated {} quote", field, list, quote));
  }
  flush();
  return elements;
}

// A decimal number as mantissa / 10^scale, e.g. "-0.25" = {-25, 2}.
struct Decimal {
  int64_t mantissa = 0;
  int scale = 0;
};

constexpr int kMaxDecimalScale = 9;

std::optional<Decimal> ParseDecimal(std::string_view s) {
  Decimal d;
  bool negative = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  bool digits = false;
  bool point = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    if (point && ++d.scale > kMaxDecimalScale) return std::nullopt;
    if (d.mantissa > (INT64_MAX - 9) / 10) return std::nullopt;
    d.mantissa = d.mantissa * 10 + (c - '0');
    digits = true;
  }
  if (!digits) return std::nullopt;
  if (negative) d.mantissa = -d.mantissa;
  return d;
}

// `d` as an integer count of 10^-scale units; nullopt on overflow. REQUIRES: scale >= d.scale.
std::optional<int64_t> Rescale(Decimal d, int scale) {
  int64_t v = d.mantissa;
  for (int i = d.scale; i < scale; ++i) {
    if (v > INT64_MAX / 10 || v < INT64_MIN / 10) return std::nullopt;
    v *= 10;
  }
  return v;
}

// `v` units of 10^-scale, written with exactly `scale` decimals ("0.50" for 50, 2).
std::string FormatScaled(int64_t v, int scale) {
  if (scale == 0) return std::to_string(v);
  bool negative = v < 0;
  uint64_t u = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  uint64_t pow = 1;
  for (int i = 0; i < scale; ++i) pow *= 10;
  return fmt::format("{}{}.{:0{}}", negative ? "-" : "", u / pow, u % pow, scale);
}

// Expands "a..b", "a..b:+k" or "a..b:xk" into `out`.
Status ExpandRange(std::string_view element, std::string_view field,
                   std::vector<std::string>* out) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format(
        "--vary {}: \"{}\": {}; ranges are a..b, a..b:+k (step k) or a..b:xk (factor k)", field,
        element, why));
  };
  size_t dots = element.find("..");
  std::string_view first = Trim(element.substr(0, dots));
  std::string_view rest = element.substr(dots + 2);
  std::string_view last = rest;
  std::string_view step;
  char op = '+';
  if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
    last = rest.substr(0, colon);
    step = Trim(rest.substr(colon + 1));
    if (step.empty() || (step.front() != '+' && step.front() != 'x')) {
      return bad("the step must start with + or x");
    }
    op = step.front();
    step = Trim(step.substr(1));
    if (step.empty()) return bad("the step is missing after + or x");
  }
  last = Trim(last);
  std::optional<Decimal> a = ParseDecimal(first);
  std::optional<Decimal> b = ParseDecimal(last);
  std::optional<Decimal> k =
      step.empty() ? std::optional<Decimal>(Decimal{1, 0}) : ParseDecimal(step);
  if (!a || !b) return bad("both ends must be decimal numbers");
  if (!k) return bad("the step must be a decimal number");
  int scale = std::max({a->scale, b->scale, op == '+' ? k->scale : 0});
  std::optional<int64_t> lo = Rescale(*a, scale);
  std::optional<int64_t> hi = Rescale(*b, scale);
  if (!lo || !hi) return bad("too large");
  if (*lo > *hi) return bad("the start must not exceed the end");
  size_t before = out->size();
  auto push = [&](int64_t v) -> bool {
    if (static_cast<int64_t>(out->size() - before) >= kMaxVaryValues) return false;
    out->push_back(FormatScaled(v, scale));
    return true;
  };
  if (op == '+') {
    std::optional<int64_t> inc = Rescale(*k, scale);
    if (!inc || *inc <= 0) return bad("the step must be > 0");
    for (int64_t v = *lo;; v += *inc) {
      if (!push(v)) return bad(fmt::format("more than {} values", kMaxVaryValues));
      if (*hi - v < *inc) break;
    }
  } else {
    if (k->scale != 0 || k->mantissa < 2) return bad("the factor must be an integer >= 2");
    if (*lo <= 0) return bad("a geometric range must start above 0");
    for (int64_t v = *lo;; v *= k->mantissa) {
      if (!push(v)) return bad(fmt::format("more than {} values", kMaxVaryValues));
      if (v > *hi / k->mantissa) break;
    }
  }
  return OkStatus();
}

// Joins a multi-line message into one line for a table cell.
std::string OneLine(const std::string& message) {
  std::string out;
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line)) {
    std::string_view t = Trim(line);
    if (t.empty()) continue;
    // A header line ending in ':' introduces the problems after it.
    if (!out.empty()) out += out.back() == ':' ? " " : "; ";
    out += t;
  }
  return out;
}

// FNV-1a, 64 bits: stable across platforms and runs, unlike std::hash.
class Fnv1a {
 public:
  void Add(std::string_view s) {
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 0x100000001b3ULL;
    }
    // A separator byte keeps ("ab", "c") and ("a", "bc") apart.
    h_ ^= 0xff;
    h_ *= 0x100000001b3ULL;
  }
  std::string Hex() const { return fmt::format("{:016x}", h_); }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// ------------------------------------------------------------------------ options
struct SweepArgs {
  std::string path;
  std::vector<std::string> varies;
  std::vector<std::string> sets;
  std::string mode = "analyze";
  std::string network = "scenario";
  int64_t jobs = 0;
  std::string shard = "1/1";
  std::string format = "table";
};

// ------------------------------------------------------------------------ points
struct PointContext {
  const ScenarioDocument* base = nullptr;
  const std::vector<VaryAxis>* axes = nullptr;
  bool simulate = false;
  // Overrides the scenario's simulation.network_model when set.
  std::optional<std::string> network;
};

// The value index of every axis for global point `index` (last axis fastest).
std::vector<size_t> Coordinates(const std::vector<VaryAxis>& axes, int64_t index) {
  std::vector<size_t> c(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    size_t n = axes[a].values.size();
    c[a] = static_cast<size_t>(index % static_cast<int64_t>(n));
    index /= static_cast<int64_t>(n);
  }
  return c;
}

// The point's row, every key present in a fixed order (null where not computed).
Json PointJson(const PointContext& ctx, int64_t index) {
  const std::vector<VaryAxis>& axes = *ctx.axes;
  std::vector<size_t> coords = Coordinates(axes, index);
  Json p;
  p["index"] = index;
  Json values = Json::object();
  for (size_t a = 0; a < axes.size(); ++a) values[axes[a].field] = axes[a].values[coords[a]];
  p["values"] = std::move(values);
  p["status"] = "ok";
  for (const char* key :
       {"fits", "memory_total_bytes", "comm_bytes_per_device_per_step", "correctness_ok"}) {
    p[key] = nullptr;
  }
  if (ctx.simulate) {
    for (const char* key :
         {"step_time_s", "mfu", "tokens_per_second", "sim_peak_memory_bytes", "exposed_comm_s"}) {
      p[key] = nullptr;
    }
  }
  p["error"] = nullptr;
  auto fail = [&](const std::string& message) {
    p["status"] = "error";
    p["error"] = OneLine(message);
    return p;
  };

  try {
    ScenarioDocument doc = *ctx.base;
    for (size_t a = 0; a < axes.size(); ++a) {
      Status applied = doc.ApplyOverride(axes[a].field, axes[a].values[coords[a]]);
      if (!applied.ok()) return fail(applied.message());
    }
    StatusOr<Scenario> scenario = doc.Resolve();
    if (!scenario.ok()) return fail(scenario.status().message());
    StatusOr<strategies::Plan> plan = strategies::Analyze(scenario->model, scenario->training,
                                                          scenario->strategy, scenario->cluster);
    if (!plan.ok()) return fail(plan.status().message());
    bool fits = true;
    Bytes comm;
    for (const auto& role : plan->roles) {
      fits = fits && role.memory.fits;
      comm =
          std::max(comm, role.comm_bytes, [](Bytes x, Bytes y) { return x.count() < y.count(); });
    }
    p["fits"] = fits;
    p["memory_total_bytes"] = plan->largest().memory.total.count();
    p["comm_bytes_per_device_per_step"] = comm.count();
    p["correctness_ok"] = plan->ok();
    if (!ctx.simulate) return p;

    StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
    if (!cluster.ok()) return fail("simulate: " + cluster.status().message());
    ExecutorOptions options = ExecutorOptionsFromSettings(scenario->simulation);
    if (ctx.network) options.network = *ctx.network;
    StatusOr<SimResult> sim =
        SimulateStep(*cluster, scenario->model, scenario->training, scenario->strategy, options);
    if (!sim.ok()) return fail("simulate: " + sim.status().message());
    int64_t peak = 0;
    Duration exposed = Duration::Zero();
    for (const auto& role : sim->roles) {
      peak = std::max(peak, role.peak_memory.count());
      exposed = std::max(exposed, role.exposed_comm);
    }
    p["step_time_s"] = sim->step_time.ToSeconds();
    p["mfu"] = sim->mfu;
    p["tokens_per_second"] = sim->tokens_per_second;
    p["sim_peak_memory_bytes"] = peak;
    p["exposed_comm_s"] = exposed.ToSeconds();
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
  return p;
}

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

// Runs the points `indices` on `jobs` threads; results[i] belongs to indices[i].
std::vector<Json> RunPoints(const PointContext& ctx, const std::vector<int64_t>& indices,
                            int64_t jobs, std::ostream& err) {
  const int64_t n = static_cast<int64_t>(indices.size());
  std::vector<Json> results(indices.size());
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  auto work = [&]() {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      results[static_cast<size_t>(i)] = PointJson(ctx, indices[static_cast<size_t>(i)]);
      done.fetch_add(1);
    }
  };
  const bool progress = isatty(STDERR_FILENO) == 1;
  int64_t threads = std::max<int64_t>(1, std::min(jobs, n));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) workers.emplace_back(work);
  if (progress) {
    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&]() {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    while (done.load() < n) {
      DrawProgress(err, done.load(), n, elapsed());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    DrawProgress(err, n, n, elapsed());
    err << "\n";
  }
  for (auto& w : workers) w.join();
  return results;
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
  header.push_back("error");
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : doc.at("points")) {
    std::vector<std::string> row = {p.at("index").dump()};
    for (const auto& f : fields) row.push_back(p.at("values").at(f).get<std::string>());
    for (const auto& m : metrics) row.push_back(TableCell(m.key, p.at(m.key)));
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
  header.push_back("error");
  std::string out = fmt::format("{}\n", fmt::join(header, ","));
  for (const auto& p : doc.at("points")) {
    std::vector<std::string> row = {p.at("index").dump()};
    for (const auto& f : fields) row.push_back(CsvCell(p.at("values").at(f)));
    for (const auto& m : metrics) row.push_back(CsvCell(p.at(m.key)));
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

}  // namespace

// -------------------------------------------------------------------------- public
StatusOr<VaryAxis> ParseVary(std::string_view spec) {
  size_t eq = spec.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgumentError(
        fmt::format("--vary \"{}\": must be FIELD.PATH=V1,V2,... (no '=')", spec));
  }
  VaryAxis axis;
  axis.field = std::string(Trim(spec.substr(0, eq)));
  if (axis.field.empty()) {
    return InvalidArgumentError(fmt::format("--vary \"{}\": the field path is empty", spec));
  }
  std::string_view list = Trim(spec.substr(eq + 1));
  if (list.empty()) {
    return InvalidArgumentError(fmt::format(
        "--vary {}: the list of values is empty; write V1,V2,... or a range a..b", axis.field));
  }
  ASSIGN_OR_RETURN(std::vector<ListElement> elements, SplitList(list, axis.field));
  for (size_t i = 0; i < elements.size(); ++i) {
    const ListElement& e = elements[i];
    if (e.text.empty() && !e.quoted) {
      return InvalidArgumentError(fmt::format("--vary {}: \"{}\": value {} of {} is empty",
                                              axis.field, list, i + 1, elements.size()));
    }
    if (!e.quoted && e.text.find("..") != std::string::npos) {
      RETURN_IF_ERROR(ExpandRange(e.text, axis.field, &axis.values));
    } else {
      axis.values.push_back(e.text);
    }
    if (static_cast<int64_t>(axis.values.size()) > kMaxVaryValues) {
      return InvalidArgumentError(
          fmt::format("--vary {}: more than {} values", axis.field, kMaxVaryValues));
    }
  }
  std::set<std::string> seen;
  for (const auto& v : axis.values) {
    if (!seen.insert(v).second) {
      return InvalidArgumentError(fmt::format(
          "--vary {}: \"{}\": listed twice; every value must be distinct", axis.field, v));
    }
  }
  return axis;
}

StatusOr<ShardSpec> ParseShard(std::string_view text) {
  auto bad = [&]() {
    return InvalidArgumentError(
        fmt::format("--shard \"{}\": must be K/N with 1 <= K <= N, e.g. 2/4", text));
  };
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad();
  std::optional<Decimal> k = ParseDecimal(Trim(text.substr(0, slash)));
  std::optional<Decimal> n = ParseDecimal(Trim(text.substr(slash + 1)));
  if (!k || !n || k->scale != 0 || n->scale != 0) return bad();
  if (k->mantissa < 1 || n->mantissa < 1 || k->mantissa > n->mantissa) return bad();
  if (n->mantissa > kMaxSweepPoints) return bad();
  return ShardSpec{k->mantissa, n->mantissa};
}

int RunSweep(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SweepArgs a;
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
                          "output format: table, csv or json");
  if (WantsHelp(args)) {
    out << desc << "\n";
    return kExitOk;
  }
  po::positional_options_description pos;
  pos.add("scenario", 1);
  if (!ParseArgs("sweep", args, desc, pos, err)) return kExitBadInput;
  if (!CheckChoice("sweep", "format", a.format, {"table", "csv", "json"}, err) ||
      !CheckChoice("sweep", "mode", a.mode, {"analyze", "simulate"}, err) ||
      !CheckChoice("sweep", "network", a.network, NetworkChoices(), err)) {
    return kExitBadInput;
  }
  if (a.jobs < 0 || a.jobs > 4096) {
    err << "placesim sweep: --jobs: " << a.jobs << ": must be between 0 and 4096\n";
    return kExitBadInput;
  }
  int64_t jobs = a.jobs;
  if (jobs == 0) jobs = std::max<int64_t>(1, std::thread::hardware_concurrency());

  // Every problem at once: malformed --vary and --shard flags, then (when the scenario and
  // its --set overrides load) every value the varied fields refuse.
  ErrorList errors;
  if (a.varies.empty()) errors.AddLine("at least one --vary FIELD.PATH=V1,V2,... is required");
  std::vector<VaryAxis> axes;
  for (const auto& spec : a.varies) {
    StatusOr<VaryAxis> axis = ParseVary(spec);
    if (!axis.ok()) {
      errors.AddLine(axis.status().message());
      continue;
    }
    for (const auto& other : axes) {
      if (other.field == axis->field) {
        errors.AddLine(
            fmt::format("--vary {}: varied twice; list all its values in one --vary", axis->field));
      }
    }
    axes.push_back(*std::move(axis));
  }
  StatusOr<ShardSpec> shard = ParseShard(a.shard);
  if (!shard.ok()) errors.AddLine(shard.status().message());

  // The scenario, its --set overrides, then every value of every --vary on a scratch copy.
  std::string text;
  {
    std::ifstream f(a.path, std::ios::binary);
    if (f) text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  StatusOr<ScenarioDocument> base = ScenarioDocument::ReadFile(a.path);
  if (!base.ok()) {
    errors.AddLine(base.status().message());
    PrintMessage(err, "sweep", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }
  Status set = base->ApplyOverrides(a.sets);
  if (!set.ok()) {
    errors.AddLine("bad --set override:\n" + set.message());
    PrintMessage(err, "sweep", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }
  std::vector<std::string> seen;
  for (const auto& axis : axes) {
    for (const auto& value : axis.values) {
      ScenarioDocument scratch = *base;
      Status applied = scratch.ApplyOverride(axis.field, value);
      if (applied.ok()) continue;
      // An unknown field fails the same way for every value: say it once.
      std::string line = "--vary " + applied.message();
      if (std::find(seen.begin(), seen.end(), line) == seen.end()) {
        seen.push_back(line);
        errors.AddLine(line);
      }
    }
  }
  int64_t total = 1;
  for (const auto& axis : axes) {
    total *= static_cast<int64_t>(axis.values.size());
    if (total > kMaxSweepPoints) {
      errors.AddLine(fmt::format("the --vary lists make more than {} points", kMaxSweepPoints));
      break;
    }
  }
  if (!errors.empty()) {
    PrintMessage(err, "sweep", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }

  Fnv1a hash;
  hash.Add(text);
  for (const auto& s : a.sets) hash.Add("set:" + s);
  for (const auto& axis : axes) {
    hash.Add("vary:" + axis.field);
    for (const auto& v : axis.values) hash.Add(v);
  }
  hash.Add("mode:" + a.mode);
  hash.Add("network:" + a.network);

  std::vector<int64_t> indices;
  for (int64_t i = shard->index - 1; i < total; i += shard->count) indices.push_back(i);
  PointContext ctx;
  ctx.base = &*base;
  ctx.axes = &axes;
  ctx.simulate = a.mode == "simulate";
  ctx.network = NetworkOverride(a.network);
  std::vector<Json> points = RunPoints(ctx, indices, jobs, err);

  Json doc;
  doc["kind"] = kSweepKind;
  doc["version"] = kSweepVersion;
  doc["fingerprint"] = hash.Hex();
  doc["scenario"] = a.path;
  doc["mode"] = a.mode;
  doc["network"] = a.network;
  doc["set"] = a.sets;
  Json vary = Json::array();
  for (const auto& axis : axes) vary.push_back({{"field", axis.field}, {"values", axis.values}});
  doc["vary"] = std::move(vary);
  doc["total_points"] = total;
  doc["shard"] = {{"index", shard->index}, {"count", shard->count}};
  int64_t failed = 0;
  Json list = Json::array();
  for (auto& p : points) {
    if (p["status"] != "ok") ++failed;
    list.push_back(std::move(p));
  }
  doc["points"] = std::move(list);
  out << Render(doc, a.format);
  if (failed > 0) {
    err << fmt::format("placesim sweep: {} of {} points failed (see their error)\n", failed,
                       points.size());
  }
  return kExitOk;
}

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

  // The shards, each with the file it came from (for messages).
  struct Input {
    std::string path;
    Json doc;
  };
  ErrorList errors;
  std::vector<Input> inputs;
  for (const auto& path : files) {
    // A directory opens as a stream and then throws on the first read.
    std::error_code probe;
    if (std::filesystem::is_directory(path, probe)) {
      errors.AddLine(fmt::format("{}: is a directory, not a JSON file", path));
      continue;
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      errors.AddLine(fmt::format("{}: cannot read the file", path));
      continue;
    }
    Json doc = Json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) {
      errors.AddLine(fmt::format("{}: not valid JSON", path));
      continue;
    }
    bool shaped = doc.value("kind", "") == kSweepKind && doc.value("version", 0) == kSweepVersion &&
                  doc.contains("fingerprint") && doc["fingerprint"].is_string() &&
                  doc.contains("total_points") && doc["total_points"].is_number_integer() &&
                  doc.contains("shard") && doc["shard"].is_object() &&
                  doc["shard"].contains("index") && doc["shard"]["index"].is_number_integer() &&
                  doc["shard"].contains("count") && doc["shard"]["count"].is_number_integer() &&
                  doc.contains("points") && doc["points"].is_array();
    if (shaped) {
      for (const auto& p : doc["points"]) {
        shaped = shaped && p.is_object() && p.contains("index") && p["index"].is_number_integer();
      }
    }
    if (!shaped) {
      errors.AddLine(fmt::format(
          "{}: not the JSON of `placesim sweep --format json` (kind \"sweep\", version {})", path,
          kSweepVersion));
      continue;
    }
    inputs.push_back({path, std::move(doc)});
  }
  if (!errors.empty()) {
    PrintMessage(err, "merge", "bad input:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }

  const Input& first = inputs.front();
  const std::string fingerprint = first.doc["fingerprint"].get<std::string>();
  const int64_t total = first.doc["total_points"].get<int64_t>();
  const int64_t count = first.doc["shard"]["count"].get<int64_t>();
  if (total < 0 || total > kMaxSweepPoints || count < 1 || count > kMaxSweepPoints) {
    PrintMessage(
        err, "merge",
        fmt::format("{}: {} points in {} shards is out of range", first.path, total, count));
    return kExitBadInput;
  }
  std::vector<const Input*> by_shard(static_cast<size_t>(count), nullptr);
  for (const auto& input : inputs) {
    const std::string& path = input.path;
    const Json& doc = input.doc;
    if (doc["fingerprint"].get<std::string>() != fingerprint ||
        doc["total_points"].get<int64_t>() != total) {
      errors.AddLine(fmt::format(
          "{}: from a different sweep (fingerprint {}, {} points) than {} (fingerprint {}, {} "
          "points): the scenario file, --set, --vary, --mode or --network differ",
          path, doc["fingerprint"].get<std::string>(), doc["total_points"].get<int64_t>(),
          first.path, fingerprint, total));
      continue;
    }
    int64_t k = doc["shard"]["index"].get<int64_t>();
    int64_t n = doc["shard"]["count"].get<int64_t>();
    if (n != count) {
      errors.AddLine(fmt::format("{}: shard {}/{} does not belong to a split into {} shards", path,
                                 k, n, count));
      continue;
    }
    if (k < 1 || k > n) {
      errors.AddLine(fmt::format("{}: shard {}/{} is out of range", path, k, n));
      continue;
    }
    const Input*& slot = by_shard[static_cast<size_t>(k - 1)];
    if (slot != nullptr) {
      errors.AddLine(fmt::format("{}: shard {}/{} overlaps {}, which holds the same shard", path, k,
                                 n, slot->path));
      continue;
    }
    slot = &input;
  }
  std::vector<std::string> missing;
  for (int64_t k = 1; k <= count; ++k) {
    if (by_shard[static_cast<size_t>(k - 1)] == nullptr) {
      missing.push_back(fmt::format("{}/{}", k, count));
    }
  }
  if (!missing.empty() && errors.empty()) {
    errors.AddLine(fmt::format("missing shards: {}", JoinNames(missing)));
  }
  if (!errors.empty()) {
    PrintMessage(err, "merge", "cannot merge:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }

  // Every point exactly once, each in the shard that owns its index.
  std::vector<const Json*> points(static_cast<size_t>(total), nullptr);
  for (const Input* input : by_shard) {
    int64_t k = input->doc["shard"]["index"].get<int64_t>();
    const std::string& path = input->path;
    for (const auto& p : input->doc["points"]) {
      int64_t i = p["index"].get<int64_t>();
      if (i < 0 || i >= total || i % count != k - 1) {
        errors.AddLine(
            fmt::format("{}: point {} does not belong to shard {}/{}", path, i, k, count));
      } else if (points[static_cast<size_t>(i)] != nullptr) {
        errors.AddLine(fmt::format("{}: point {} appears twice", path, i));
      } else {
        points[static_cast<size_t>(i)] = &p;
      }
    }
  }
  for (int64_t i = 0; i < total && errors.size() < 20; ++i) {
    if (points[static_cast<size_t>(i)] == nullptr) {
      errors.AddLine(fmt::format("point {} is missing from shard {}/{}", i, i % count + 1, count));
    }
  }
  if (!errors.empty()) {
    PrintMessage(err, "merge", "cannot merge:\n" + errors.ToStatus().message());
    return kExitBadInput;
  }

  Json merged = by_shard.front()->doc;
  merged["shard"] = {{"index", 1}, {"count", 1}};
  Json list = Json::array();
  for (const Json* p : points) list.push_back(*p);
  merged["points"] = std::move(list);
  out << Render(merged, format);
  return kExitOk;
}

}  // namespace placesim::sim
