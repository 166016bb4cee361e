// The library facade (include/placesim/placesim.h): thin compositions of the scenario
// loader, the analyzer, the executor and the study engines, with the option checks whose
// messages the command line prints.
#include "placesim/placesim.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "sim/study/fold.h"
#include "sim/study/network_choice.h"
#include "strategies/analyzer.h"
#include "topology/cluster.h"

namespace placesim::api {
namespace {

// The bytes of `path`, or nothing when unreadable (the parser reports that).
std::string ReadBytes(const std::string& path) {
  std::string text;
  std::ifstream f(path, std::ios::binary);
  if (f) text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return text;
}

bool ParseRank(std::string_view s, int64_t* v) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && ptr == s.data() + s.size() && *v >= 0;
}

Status BadInput(const ErrorList& errors) {
  return InvalidArgumentError("bad input:\n" + errors.ToStatus().message());
}

}  // namespace

// ------------------------------------------------------------------------------ scenarios
StatusOr<ScenarioSource> LoadScenarioFile(const std::string& path) {
  ASSIGN_OR_RETURN(sim::ScenarioDocument document, sim::ScenarioDocument::ReadFile(path));
  return ScenarioSource{std::move(document), ReadBytes(path), {}};
}

StatusOr<ScenarioSource> LoadScenarioText(std::string_view text, ScenarioFormat format,
                                          std::string_view name) {
  ASSIGN_OR_RETURN(sim::ScenarioDocument document,
                   sim::ScenarioDocument::Parse(text, format, name));
  return ScenarioSource{std::move(document), std::string(text), {}};
}

Status ApplyOverrides(ScenarioSource* source, const std::vector<std::string>& assignments) {
  Status applied = source->document.ApplyOverrides(assignments);
  if (!applied.ok()) return InvalidArgumentError("bad --set override:\n" + applied.message());
  source->overrides.insert(source->overrides.end(), assignments.begin(), assignments.end());
  return OkStatus();
}

StatusOr<Scenario> Resolve(const ScenarioSource& source) { return source.document.Resolve(); }

StatusOr<Scenario> LoadScenario(const std::string& path,
                                const std::vector<std::string>& overrides) {
  return sim::LoadScenarioFile(path, overrides);
}

// -------------------------------------------------------------------------------- analyze
StatusOr<Plan> Analyze(const Scenario& scenario) {
  // The framework overheads that move bytes, as the simulation takes them, so that analyze's
  // volumes are the simulated ones.
  strategies::AnalyzeOptions options;
  if (scenario.simulation.gather_granularity.has_value()) {
    options.gather_per_parameter = *scenario.simulation.gather_granularity == "per-parameter";
  }
  options.max_reuse_distance = scenario.simulation.zero3_max_reuse_distance;
  options.reshard_after_forward = scenario.simulation.reshard_after_forward;
  return strategies::Analyze(scenario.model, scenario.training, scenario.strategy, scenario.cluster,
                             options);
}

// ------------------------------------------------------------------------------- simulate
Status CheckSimulateOptions(const SimulateOptions& options) {
  const sim::NetworkModelRegistry& models = sim::BuiltinNetworkModels();
  if (!options.network.empty() && !models.Find(options.network)) {
    return InvalidArgumentError(fmt::format("--network: \"{}\": unknown network model; valid: {}",
                                            options.network, models.ValidNames()));
  }
  if (!options.trace_ranks.empty() && options.trace == nullptr) {
    return InvalidArgumentError("--trace-ranks needs --trace FILE");
  }
  return OkStatus();
}

StatusOr<std::vector<int64_t>> ParseRankList(std::string_view text, int64_t world) {
  std::vector<int64_t> ranks;
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        fmt::format("--trace-ranks: \"{}\": {}; expected ranks and ranges below {}, e.g. 0-7,64",
                    text, why, world));
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    size_t dash = item.find('-');
    int64_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseRank(item, &lo)) return bad(fmt::format("\"{}\" is not a rank", item));
      hi = lo;
    } else if (!ParseRank(item.substr(0, dash), &lo) || !ParseRank(item.substr(dash + 1), &hi) ||
               hi < lo) {
      return bad(fmt::format("\"{}\" is not a range LOW-HIGH", item));
    }
    if (hi >= world) return bad(fmt::format("rank {} does not exist", hi));
    for (int64_t r = lo; r <= hi; ++r) ranks.push_back(r);
    start = comma + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

StatusOr<SimResult> Simulate(const Scenario& scenario, const SimulateOptions& options) {
  RETURN_IF_ERROR(CheckSimulateOptions(options));
  ASSIGN_OR_RETURN(topology::Cluster cluster, topology::BuildCluster(scenario.cluster));
  sim::ExecutorOptions executor = sim::ExecutorOptionsFromSettings(scenario.simulation);
  if (const std::optional<std::string> model = study::NetworkOverride(options.network)) {
    executor.network = *model;
  }
  executor.trace_ranks = options.trace_ranks;
  executor.trace = options.trace;
  return study::SimulateStepFolded(cluster, scenario.model, scenario.training, scenario.strategy,
                                   executor);
}

// ---------------------------------------------------------------------------------- sweep
int64_t SweepResult::failed() const {
  return std::count_if(points.begin(), points.end(),
                       [](const study::SweepPoint& p) { return !p.ok; });
}

StatusOr<SweepResult> Sweep(const ScenarioSource& source, const SweepOptions& options) {
  const std::vector<std::string>& networks = study::NetworkChoices();
  if (std::find(networks.begin(), networks.end(), options.network) == networks.end()) {
    return InvalidArgumentError(fmt::format("--network: \"{}\": unknown value; valid: {}",
                                            options.network, JoinNames(networks)));
  }
  if (options.jobs < 0 || options.jobs > 4096) {
    return InvalidArgumentError(
        fmt::format("--jobs: {}: must be between 0 and 4096", options.jobs));
  }
  ErrorList errors;
  study::SweepFlags flags = study::ParseSweepFlags(options.vary, options.shard, &errors);
  const int64_t total = study::CheckSweepAxes(source.document, flags.axes, &errors);
  if (!errors.empty()) return BadInput(errors);

  SweepResult result;
  result.fingerprint = study::SweepFingerprint(source.text, source.overrides, flags.axes,
                                               options.mode, options.network);
  result.mode = options.mode;
  result.network = options.network;
  result.total_points = total;
  result.shard = flags.shard;
  study::SweepRunOptions run;
  run.mode = options.mode;
  run.network = study::NetworkOverride(options.network);
  run.jobs =
      options.jobs > 0 ? options.jobs : std::max<int64_t>(1, std::thread::hardware_concurrency());
  run.progress = options.progress;
  result.points = study::RunSweepPoints(source.document, flags.axes,
                                        study::ShardIndices(total, flags.shard), run);
  result.axes = std::move(flags.axes);
  return result;
}

// --------------------------------------------------------------------------------- search
StatusOr<SearchResult> Search(const Scenario& scenario, const SearchOptions& options) {
  ErrorList errors;
  study::CheckSearchRequest(options, &errors);
  study::CheckSearchScenario(scenario, &errors);
  if (!errors.empty()) return BadInput(errors);
  strategies::SearchSpace space = study::BuildSearchSpace(scenario, options, &errors);
  if (!errors.empty()) return BadInput(errors);
  ASSIGN_OR_RETURN(SearchResult result, study::RunSearchStudy(scenario, space, options));
  if (static_cast<int64_t>(result.ranked.size()) > options.top) {
    result.ranked.resize(static_cast<size_t>(options.top));
  }
  return result;
}

// -------------------------------------------------------------------------------- compare
StatusOr<study::Comparison> Compare(const std::string& baseline_path,
                                    const std::string& current_path, double threshold) {
  StatusOr<study::ResultMetrics> baseline = study::LoadResultFile(baseline_path);
  StatusOr<study::ResultMetrics> current = study::LoadResultFile(current_path);
  if (!baseline.ok() || !current.ok()) {
    ErrorList errors;
    if (!baseline.ok()) errors.AddLine(baseline.status().message());
    if (!current.ok()) errors.AddLine(current.status().message());
    return InvalidArgumentError(errors.ToStatus().message());
  }
  return study::CompareResults(*baseline, *current, threshold, baseline_path, current_path);
}

}  // namespace placesim::api
