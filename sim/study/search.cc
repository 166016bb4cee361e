// Tier 2 of the strategy search (see search.h). The ranking is a stable sort by step time,
// then the space's preference order, so it does not depend on the thread count.
#include "sim/study/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/errors.h"
#include "sim/executor/executor.h"
#include "sim/study/fold.h"
#include "sim/study/network_choice.h"
#include "topology/cluster.h"

namespace placesim::study {
namespace {

// Tier 2's op limit per stage schedule: longer steps are folded (fold.h), which keeps a
// search of long accumulation schedules to seconds and well under a gigabyte; folding is
// within 0.1% of the full replay (tests/study/fold_test.cc).
constexpr int64_t kSearchMaxOps = int64_t{1} << 16;

// Simulates one row; a row the executor refuses keeps its estimate and says why.
void SimulateRow(const sim::Scenario& scenario, const topology::Cluster& cluster,
                 const sim::ExecutorOptions& base, RankedCandidate& row) {
  const strategies::Candidate& c = row.screened.candidate;
  sim::ExecutorOptions options = base;
  options.schedule.bucket_bytes = strategies::CandidateBucket(c, options.schedule.bucket_bytes);
  if (c.tp_comm_overlap) options.schedule.tp_comm_overlap = *c.tp_comm_overlap;
  if (c.reshard_after_forward) options.schedule.reshard_after_forward = c.reshard_after_forward;
  StatusOr<strategies::StrategySpec> strategy = strategies::CandidateStrategy(c, scenario.cluster);
  if (!strategy.ok()) {
    row.simulation_error = strategy.status().message();
    return;
  }
  StatusOr<sim::SimResult> sim =
      SimulateStepFolded(cluster, scenario.model,
                         strategies::CandidateTraining(c, scenario.training), *strategy, options);
  if (!sim.ok()) {
    row.simulation_error = sim.status().message();
    return;
  }
  row.simulated_step = sim->step_time;
  row.folded = !sim->folded_from.empty();
  row.simulated_mfu = sim->mfu;
  row.simulated_utilization = sim::economics::ComputeBusyFraction(*sim);
}

// The row's cost and energy: the simulated step when there is one, else the estimate's at
// the TDP bound, since an estimate has no compute-busy share.
sim::economics::Figures RowEconomics(const sim::Scenario& scenario, const RankedCandidate& row) {
  const strategies::Candidate& c = row.screened.candidate;
  const strategies::TrainingSpec training = strategies::CandidateTraining(c, scenario.training);
  sim::economics::Figures f = sim::economics::ComputeFigures(
      *scenario.economics,
      {.gpus = c.mesh.world(),
       .tokens_per_step = training.global_batch * scenario.model.transformer.seq_len,
       .step_time = row.step(),
       .utilization = row.simulated_step ? row.simulated_utilization : 1.0});
  f.tdp_bound = !row.simulated_step;
  return f;
}

// Tier 2: simulates the first `k` rows on `jobs` threads (the caller's among them).
std::string SimulateTop(const sim::Scenario& scenario, std::vector<RankedCandidate>& rows,
                        int64_t k, int64_t jobs, const std::string& network) {
  const size_t picks = std::min(rows.size(), static_cast<size_t>(std::max<int64_t>(k, 0)));
  if (picks == 0) return {};
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario.cluster);
  if (!cluster.ok()) {
    return "cannot simulate; every row keeps its estimate: " + cluster.status().message();
  }
  sim::ExecutorOptions base = sim::ExecutorOptionsFromSettings(scenario.simulation);
  base.schedule.max_ops = std::min(base.schedule.max_ops, kSearchMaxOps);
  if (const std::optional<std::string> model = NetworkOverride(network)) {
    base.network = *model;
  }
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next.fetch_add(1); i < picks; i = next.fetch_add(1)) {
      SimulateRow(scenario, *cluster, base, rows[i]);
    }
  };
  const size_t threads = static_cast<size_t>(
      std::max<int64_t>(1, std::min<int64_t>(jobs, static_cast<int64_t>(picks))));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  return {};
}

}  // namespace

void CheckSearchRequest(const SearchRequest& request, ErrorList* errors) {
  if (request.jobs < 0 || request.jobs > 4096) {
    errors->AddLine(fmt::format("--jobs: {}: must be between 0 and 4096", request.jobs));
  }
  if (request.simulate_top < 0) {
    errors->AddLine(fmt::format("--simulate-top: {}: must be >= 0", request.simulate_top));
  }
  if (request.top < 1) errors->AddLine(fmt::format("--top: {}: must be >= 1", request.top));
  if (Status known = strategies::CheckSearchSpaceName(request.space); !known.ok()) {
    errors->AddLine(known.message());
  }
  const std::vector<std::string>& networks = NetworkChoices();
  if (std::find(networks.begin(), networks.end(), request.network) == networks.end()) {
    errors->AddLine(fmt::format("--network: \"{}\": unknown network model; valid: {}",
                                request.network, JoinNames(networks)));
  }
}

void CheckSearchScenario(const sim::Scenario& scenario, ErrorList* errors) {
  if (!scenario.model.has_architecture()) {
    errors->AddLine(
        "model: search needs a transformer architecture (layers, hidden, heads, ...), "
        "not a bare parameter count");
  }
}

strategies::SearchSpace BuildSearchSpace(const sim::Scenario& scenario,
                                         const SearchRequest& request, ErrorList* errors) {
  StatusOr<strategies::SearchSpace> named = strategies::NamedSearchSpace(
      request.space, scenario.model, scenario.training, scenario.cluster);
  PLACESIM_CHECK(named.ok());  // REQUIRES: the name was checked
  strategies::SearchSpace space = *std::move(named);
  for (const std::string& fix : request.fixes) {
    const size_t eq = fix.find('=');
    if (eq == std::string::npos) {
      errors->AddLine(fmt::format("--fix \"{}\": must be FIELD=VALUE; fields: {}", fix,
                                  JoinNames(strategies::SearchFieldNames())));
      continue;
    }
    Status fixed = strategies::FixSearchField(fix.substr(0, eq), fix.substr(eq + 1), &space);
    if (!fixed.ok()) errors->AddLine(fixed.message());
  }
  return space;
}

StatusOr<SearchStudy> RunSearchStudy(const sim::Scenario& scenario,
                                     const strategies::SearchSpace& space,
                                     const SearchRequest& request) {
  SearchStudy study;
  study.threads =
      request.jobs > 0 ? request.jobs : std::max<int64_t>(1, std::thread::hardware_concurrency());
  strategies::SearchOptions options;
  options.jobs = static_cast<int>(study.threads);
  options.gradient_bucket = scenario.simulation.gradient_bucket_size;
  options.host = {scenario.simulation.host_time_per_layer,
                  scenario.simulation.host_time_per_layer_backward.value_or(
                      scenario.simulation.host_time_per_layer)};
  options.analyze.prefetch_depth = scenario.simulation.prefetch_depth;
  options.analyze.reshard_after_forward = scenario.simulation.reshard_after_forward;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(strategies::SearchResult result,
                   strategies::ScreenCandidates(scenario.model, scenario.training, scenario.cluster,
                                                space, options));
  study.screening_time =
      Seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  study.stats = result.stats;
  study.ranked.reserve(result.feasible.size());
  for (auto& s : result.feasible) {
    RankedCandidate row;
    row.screened = std::move(s);
    study.ranked.push_back(std::move(row));
  }
  study.simulation_warning =
      SimulateTop(scenario, study.ranked, request.simulate_top, study.threads, request.network);
  for (RankedCandidate& r : study.ranked) {
    study.simulated += r.simulated_step ? 1 : 0;
    if (scenario.economics) r.economics = RowEconomics(scenario, r);
  }
  std::stable_sort(study.ranked.begin(), study.ranked.end(),
                   [](const RankedCandidate& x, const RankedCandidate& y) {
                     if (x.step() != y.step()) return x.step() < y.step();
                     return x.screened.candidate.order < y.screened.candidate.order;
                   });
  return study;
}

}  // namespace placesim::study
