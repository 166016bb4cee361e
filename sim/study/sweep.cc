// The sweep engine (see sweep.h). Workers take point indices from an atomic counter and
// write only their own slot of the results, so the results do not depend on the thread
// count.
#include "sim/study/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "sim/study/fold.h"
#include "strategies/analyzer.h"
#include "strategies/plan.h"
#include "topology/cluster.h"

namespace placesim::study {
namespace {

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
    if (d.mantissa > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
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
  if (!a || !b) {
    // A number in form that does not fit says so, rather than that it is no number.
    const std::string_view end = !a ? first : last;
    if (!end.empty() && end.find_first_not_of("+-0123456789.") == std::string_view::npos) {
      return bad(
          fmt::format("{} is out of range: each end must be within ±{} with at most {} "
                      "decimals",
                      end, INT64_MAX, kMaxDecimalScale));
    }
    return bad("both ends must be decimal numbers");
  }
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
      // In 128 bits: hi - v overflows int64 for a range from near INT64_MIN to INT64_MAX.
      if (static_cast<__int128>(*hi) - v < *inc) break;
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

// Fills the simulated metrics of `p` from one step of `scenario`; the error otherwise.
Status SimulatePoint(const sim::Scenario& scenario, const SweepRunOptions& options, SweepPoint* p) {
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario.cluster);
  if (!cluster.ok()) return cluster.status();
  sim::ExecutorOptions executor = sim::ExecutorOptionsFromSettings(scenario.simulation);
  if (options.network) executor.network = *options.network;
  StatusOr<sim::SimResult> result =
      SimulateStepFolded(*cluster, scenario.model, scenario.training, scenario.strategy, executor);
  if (!result.ok()) return result.status();
  Bytes peak;
  Duration exposed = Duration::Zero();
  for (const auto& role : result->roles) {
    peak = std::max(peak, role.peak_memory, [](Bytes x, Bytes y) { return x.count() < y.count(); });
    exposed = std::max(exposed, role.exposed_comm);
  }
  p->step_time = result->step_time;
  p->mfu = result->mfu;
  p->tokens_per_second = result->tokens_per_second;
  p->sim_peak_memory = peak;
  p->exposed_comm = exposed;
  if (scenario.economics) p->economics = SimulatedEconomics(scenario, *result);
  return OkStatus();
}

// Applies the point's values to a copy of `base`, resolves, analyzes and (in simulate mode)
// simulates; the first failure ends the point with its message.
Status ComputePoint(const sim::ScenarioDocument& base, const std::vector<VaryAxis>& axes,
                    const std::vector<size_t>& coords, const SweepRunOptions& options,
                    SweepPoint* p) {
  sim::ScenarioDocument doc = base;
  for (size_t a = 0; a < axes.size(); ++a) {
    RETURN_IF_ERROR(doc.ApplyOverride(axes[a].field, axes[a].values[coords[a]]));
  }
  ASSIGN_OR_RETURN(sim::Scenario scenario, doc.Resolve());
  ASSIGN_OR_RETURN(strategies::Plan plan, strategies::Analyze(scenario.model, scenario.training,
                                                              scenario.strategy, scenario.cluster));
  bool fits = true;
  Bytes comm;
  for (const auto& role : plan.roles) {
    fits = fits && role.memory.fits;
    comm = std::max(comm, role.comm_bytes, [](Bytes x, Bytes y) { return x.count() < y.count(); });
  }
  p->fits = fits;
  p->memory_total = plan.largest().memory.total;
  p->comm_per_device_per_step = comm;
  p->correctness_ok = plan.ok();
  if (options.mode != SweepMode::kSimulate) {
    if (scenario.economics) {
      p->economics =
          sim::economics::TdpBoundFigures(*scenario.economics, scenario.strategy.mesh.world());
    }
    return OkStatus();
  }
  Status simulated = SimulatePoint(scenario, options, p);
  if (!simulated.ok()) return Status(simulated.code(), "simulate: " + simulated.message());
  return OkStatus();
}

SweepPoint RunPoint(const sim::ScenarioDocument& base, const std::vector<VaryAxis>& axes,
                    int64_t index, const SweepRunOptions& options) {
  std::vector<size_t> coords = Coordinates(axes, index);
  SweepPoint p;
  p.index = index;
  for (size_t a = 0; a < axes.size(); ++a) p.values.push_back(axes[a].values[coords[a]]);
  Status status;
  try {
    status = ComputePoint(base, axes, coords, options, &p);
  } catch (const std::exception& e) {
    status = InternalError(std::string("internal error: ") + e.what());
  }
  if (!status.ok()) {
    p.ok = false;
    p.error = OneLine(status.message());
  }
  return p;
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

SweepFlags ParseSweepFlags(const std::vector<std::string>& vary_specs, std::string_view shard,
                           ErrorList* errors) {
  SweepFlags flags;
  if (vary_specs.empty()) errors->AddLine("at least one --vary FIELD.PATH=V1,V2,... is required");
  for (const auto& spec : vary_specs) {
    StatusOr<VaryAxis> axis = ParseVary(spec);
    if (!axis.ok()) {
      errors->AddLine(axis.status().message());
      continue;
    }
    for (const auto& other : flags.axes) {
      if (other.field == axis->field) {
        errors->AddLine(
            fmt::format("--vary {}: varied twice; list all its values in one --vary", axis->field));
      }
    }
    flags.axes.push_back(*std::move(axis));
  }
  StatusOr<ShardSpec> parsed = ParseShard(shard);
  if (parsed.ok()) {
    flags.shard = *parsed;
  } else {
    errors->AddLine(parsed.status().message());
  }
  return flags;
}

int64_t CheckSweepAxes(const sim::ScenarioDocument& base, const std::vector<VaryAxis>& axes,
                       ErrorList* errors) {
  std::vector<std::string> seen;
  for (const auto& axis : axes) {
    for (const auto& value : axis.values) {
      sim::ScenarioDocument scratch = base;
      Status applied = scratch.ApplyOverride(axis.field, value);
      if (applied.ok()) continue;
      // An unknown field fails the same way for every value: say it once.
      std::string line = "--vary " + applied.message();
      if (std::find(seen.begin(), seen.end(), line) == seen.end()) {
        seen.push_back(line);
        errors->AddLine(line);
      }
    }
  }
  int64_t total = 1;
  for (const auto& axis : axes) {
    total *= static_cast<int64_t>(axis.values.size());
    if (total > kMaxSweepPoints) {
      errors->AddLine(fmt::format("the --vary lists make more than {} points", kMaxSweepPoints));
      break;
    }
  }
  return total;
}

const char* SweepModeName(SweepMode mode) {
  return mode == SweepMode::kSimulate ? "simulate" : "analyze";
}

sim::economics::Figures SimulatedEconomics(const sim::Scenario& s, const sim::SimResult& r) {
  return sim::economics::ComputeFigures(
      *s.economics, {.gpus = s.strategy.mesh.world(),
                     .tokens_per_step = s.training.global_batch * s.model.transformer.seq_len,
                     .step_time = r.step_time,
                     .utilization = sim::economics::ComputeBusyFraction(r)});
}

std::vector<SweepPoint> RunSweepPoints(const sim::ScenarioDocument& base,
                                       const std::vector<VaryAxis>& axes,
                                       const std::vector<int64_t>& indices,
                                       const SweepRunOptions& options) {
  const int64_t n = static_cast<int64_t>(indices.size());
  std::vector<SweepPoint> results(indices.size());
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  auto work = [&]() {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      results[static_cast<size_t>(i)] =
          RunPoint(base, axes, indices[static_cast<size_t>(i)], options);
      done.fetch_add(1);
    }
  };
  int64_t threads = std::max<int64_t>(1, std::min(options.jobs, n));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) workers.emplace_back(work);
  if (options.progress) {
    while (done.load() < n) {
      options.progress(done.load(), n);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    options.progress(n, n);
  }
  for (auto& w : workers) w.join();
  return results;
}

std::vector<int64_t> ShardIndices(int64_t total, ShardSpec shard) {
  std::vector<int64_t> indices;
  for (int64_t i = shard.index - 1; i < total; i += shard.count) indices.push_back(i);
  return indices;
}

std::string SweepFingerprint(std::string_view source, const std::vector<std::string>& overrides,
                             const std::vector<VaryAxis>& axes, SweepMode mode,
                             std::string_view network) {
  Fnv1a hash;
  hash.Add(source);
  for (const auto& s : overrides) hash.Add("set:" + s);
  for (const auto& axis : axes) {
    hash.Add("vary:" + axis.field);
    for (const auto& v : axis.values) hash.Add(v);
  }
  hash.Add(std::string("mode:") + SweepModeName(mode));
  hash.Add("network:" + std::string(network));
  return hash.Hex();
}

}  // namespace placesim::study
