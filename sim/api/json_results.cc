// The JSON documents of the facade's results; see include/placesim/json.h. Each writer sets
// its keys one by one, in the order the documents have always had: scripts and the goldens
// read that order.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "placesim/json.h"
#include "sim/executor/executor.h"
#include "sim/memory/tiers.h"
#include "strategies/search.h"
#include "strategies/spec.h"
#include "topology/cluster.h"

namespace placesim::api {
namespace {

using Json = nlohmann::ordered_json;
using sim::RoleResult;

// ------------------------------------------------------------------------------ simulate
// A role's stream times and memory figures: at the top level when the step has one role, in
// each entry of "roles" when it has several (the p2p stream only there: one role has no
// pipeline sends). "fits" is the GPU tier; host and NVMe peaks are held to the device's share
// of the node's (sim/memory/tiers.h).
sim::TierFits RoleFits(const SimResult& r, const RoleResult& role) {
  return sim::FitsPerTier(role.peak_memory, role.peak_host_memory, role.peak_nvme, role.capacity,
                          r.plan.largest().memory);
}

void AddFits(const sim::TierFits& fits, Json& j) {
  j["fits"] = fits.gpu;
  j["fits_host"] = fits.host;
  j["fits_nvme"] = fits.nvme;
}

void AddRoleTimes(const SimResult& r, const RoleResult& role, bool with_p2p, Json& j) {
  j["peak_memory_bytes"] = role.peak_memory.count();
  j["capacity_bytes"] = role.capacity.count();
  AddFits(RoleFits(r, role), j);
  j["compute_s"] = role.compute_busy.ToSeconds();
  j["comm_s"] = role.comm_busy.ToSeconds();
  j["exposed_comm_s"] = role.exposed_comm.ToSeconds();
  if (with_p2p) j["p2p_s"] = role.p2p_busy.ToSeconds();
  j["copy_s"] = role.copy_busy.ToSeconds();
  j["host_s"] = role.host_busy.ToSeconds();
  j["idle_s"] = role.idle.ToSeconds();
}

const char* KindName(int k) {
  return strategies::CollectiveKindName(static_cast<strategies::CollectiveKind>(k));
}

// "by_kind" and "algorithms" stay null (not {}) for a role without collectives: the layout
// the command line has always printed.
Json RoleCommJson(const RoleResult& role) {
  Json comm;
  comm["bytes_per_device_per_step"] = role.comm_bytes().count();
  Json kinds;
  for (int k = 0; k < sim::kNumCollectiveKinds; ++k) {
    if (role.collective_calls[k] == 0) continue;
    kinds[KindName(k)] = {{"calls", role.collective_calls[k]},
                          {"bytes", role.collective_bytes[k].count()}};
  }
  comm["by_kind"] = std::move(kinds);
  Json algorithms;
  for (int k = 0; k < sim::kNumCollectiveKinds; ++k) {
    for (size_t alg = 0; alg < role.algorithm_calls[k].size(); ++alg) {
      const int64_t calls = role.algorithm_calls[k][alg];
      if (calls == 0) continue;
      algorithms[KindName(k)][role.algorithm_names[alg]] = calls;
    }
  }
  comm["algorithms"] = std::move(algorithms);
  return comm;
}

Json RoleMemoryJson(const RoleResult& role) {
  Json live;
  for (int t = 0; t < sim::kNumMemoryTags; ++t) {
    if (role.live_at_peak[t].count() == 0) continue;
    live[strategies::MemoryTagName(static_cast<strategies::MemoryTag>(t))] =
        role.live_at_peak[t].count();
  }
  return {{"peak_bytes", role.peak_memory.count()},
          {"peak_at_s", role.peak_at.ToSeconds()},
          {"live_at_peak_bytes", std::move(live)},
          {"peak_host_bytes", role.peak_host_memory.count()},
          {"peak_nvme_bytes", role.peak_nvme.count()}};
}

// The role with the highest device-memory peak (the first of equal ones).
const RoleResult& PeakMemoryRole(const SimResult& r) {
  return *std::max_element(
      r.roles.begin(), r.roles.end(),
      [](const RoleResult& a, const RoleResult& b) { return a.peak_memory < b.peak_memory; });
}

Json RolesJson(const SimResult& r) {
  Json roles = Json::array();
  for (const RoleResult& role : r.roles) {
    Json e;
    e["role"] = role.role;
    e["stage"] = role.stage;
    e["ranks"] = role.ranks;
    e["simulated_rank"] = role.simulated_rank;
    e["step_time_s"] = role.step_time.ToSeconds();
    AddRoleTimes(r, role, /*with_p2p=*/true, e);
    e["comm"] = RoleCommJson(role);
    e["memory"] = RoleMemoryJson(role);
    roles.push_back(std::move(e));
  }
  return roles;
}

Json LinksJson(const std::vector<sim::LinkKindStats>& links) {
  Json list = Json::array();
  for (const sim::LinkKindStats& l : links) {
    list.push_back({{"kind", topology::LinkKindName(l.kind)},
                    {"links", l.links},
                    {"links_used", l.links_used},
                    {"bytes", l.bytes.count()},
                    {"busy_max_s", l.busy_max.ToSeconds()},
                    {"busy_avg_s", l.busy_avg.ToSeconds()},
                    {"utilization_max", l.utilization_max},
                    {"utilization_avg", l.utilization_avg},
                    {"peak_flows", l.peak_flows}});
  }
  return list;
}

Json FindingsJson(const SimResult& r) {
  Json findings = Json::array();
  for (const auto& f : r.findings) {
    findings.push_back({{"severity", strategies::SeverityName(f.severity)},
                        {"rule", f.rule},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  return findings;
}

// Adds `key` only when the figure was asked for (and so computed).
template <typename T>
void Put(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

// ---------------------------------------------------------------------------------- sweep
template <typename T, typename F>
Json OrNull(const std::optional<T>& v, F f) {
  return v ? Json(f(*v)) : Json(nullptr);
}

// The point's row, every key present in a fixed order (null where not computed);
// "economics" only when the sweep has any.
Json PointJson(const study::SweepPoint& point, const std::vector<study::VaryAxis>& axes,
               bool simulate, bool economics) {
  auto same = [](auto v) { return v; };
  auto bytes = [](Bytes b) { return b.count(); };
  auto seconds = [](Duration d) { return d.ToSeconds(); };
  Json p;
  p["index"] = point.index;
  Json values = Json::object();
  for (size_t a = 0; a < axes.size(); ++a) values[axes[a].field] = point.values[a];
  p["values"] = std::move(values);
  p["status"] = point.ok ? "ok" : "error";
  p["fits"] = OrNull(point.fits, same);
  p["memory_total_bytes"] = OrNull(point.memory_total, bytes);
  p["comm_bytes_per_device_per_step"] = OrNull(point.comm_per_device_per_step, bytes);
  p["correctness_ok"] = OrNull(point.correctness_ok, same);
  if (simulate) {
    p["step_time_s"] = OrNull(point.step_time, seconds);
    p["mfu"] = OrNull(point.mfu, same);
    p["tokens_per_second"] = OrNull(point.tokens_per_second, same);
    p["sim_peak_memory_bytes"] = OrNull(point.sim_peak_memory, bytes);
    p["exposed_comm_s"] = OrNull(point.exposed_comm, seconds);
  }
  if (economics) p["economics"] = OrNull(point.economics, EconomicsJson);
  p["error"] = point.ok ? Json(nullptr) : Json(point.error);
  return p;
}

// --------------------------------------------------------------------------------- search
std::string ScheduleText(const strategies::Candidate& c) {
  if (c.mesh.pp == 1) return "-";
  std::string s = strategies::PipelineScheduleName(c.schedule);
  if (c.virtual_stages > 1) s += fmt::format(" x{}", c.virtual_stages);
  return s;
}

// The knobs only the exhaustive space searches, as the row's tier 2 runs them: the
// candidate's choice, else the scenario's; "-" for the bucket where gradients are not
// bucketed (one data-parallel rank, or synced per unit).
void AddExhaustiveKnobs(const strategies::Candidate& c,
                        const StatusOr<strategies::StrategySpec>& strategy,
                        const Scenario& scenario, Json& j) {
  j["flash_attention"] = c.flash_attention.value_or(scenario.training.flash_attention);
  j["tp_comm_overlap"] =
      c.mesh.tp > 1 && c.tp_comm_overlap.value_or(scenario.simulation.tp_comm_overlap);
  if (!strategy.ok() || !strategies::UsesGradientBuckets(*strategy)) {
    j["gradient_bucket"] = "-";
    return;
  }
  // The bucket tier 2 simulated: unset in candidate and scenario, the preset's framework's.
  const Bytes bucket = strategies::GradientBucket(
      strategies::CandidateBucket(c, scenario.simulation.gradient_bucket_size), *strategy,
      strategies::CandidateTraining(c, scenario.training), scenario.simulation.overlap_grad_reduce);
  j["gradient_bucket"] =
      bucket == strategies::kWholeGradientBucket ? std::string("whole") : ToString(bucket);
}

// reshard_after_forward as the row's tier 2 runs it: the candidate's, else the scenario's;
// "-" where no parameters can be held (no S*, offloaded, one rank, or a pipeline) unless the
// candidate sets it.
void AddReshard(const strategies::Candidate& c, const StatusOr<strategies::StrategySpec>& strategy,
                const Scenario& scenario, Json& j) {
  if (strategy.ok() &&
      (c.reshard_after_forward || strategies::HoldsGatheredParameters(*strategy))) {
    j["reshard_after_forward"] =
        c.reshard_after_forward.value_or(scenario.simulation.reshard_after_forward.value_or(true));
  } else {
    j["reshard_after_forward"] = "-";
  }
}

Json CostPartsJson(const strategies::StepEstimate& estimate) {
  Json parts = Json::object();
  for (int i = 0; i < strategies::kNumCostParts; ++i) {
    parts[strategies::CostPartName(static_cast<strategies::CostPart>(i))] =
        estimate.parts[static_cast<size_t>(i)].ToSeconds();
  }
  return parts;
}

// `exhaustive` is the scenario searched when the space is exhaustive, else null; `reshard`
// the scenario when the rows show reshard_after_forward (SearchJson decides), else null.
Json RowJson(const study::RankedCandidate& row, int64_t rank, const study::RankedCandidate& best,
             const Scenario* exhaustive, const Scenario* reshard) {
  const strategies::ScreenedCandidate& s = row.screened;
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
  if (exhaustive != nullptr || reshard != nullptr) {
    const Scenario& scenario = exhaustive != nullptr ? *exhaustive : *reshard;
    const StatusOr<strategies::StrategySpec> strategy =
        strategies::CandidateStrategy(c, scenario.cluster);
    if (exhaustive != nullptr) AddExhaustiveKnobs(c, strategy, scenario, j);
    if (reshard != nullptr) AddReshard(c, strategy, scenario, j);
  }
  j["step_time_s"] = row.step().ToSeconds();
  j["source"] = !row.simulated_step ? "estimated" : row.folded ? "folded" : "simulated";
  j["estimated_step_time_s"] = s.estimate.total.ToSeconds();
  j["memory_bytes"] = s.memory.count();
  j["headroom_bytes"] = s.headroom().count();
  j["mfu"] = row.simulated_step ? row.simulated_mfu : s.estimate.mfu;
  j["vs_best"] = &row == &best ? std::string("best")
                               : strategies::DominantCostVsBest(s.estimate, best.screened.estimate);
  j["estimate_breakdown_s"] = CostPartsJson(s.estimate);
  j["simulation_error"] = row.simulation_error.empty() ? Json(nullptr) : Json(row.simulation_error);
  if (row.economics) j["economics"] = EconomicsJson(*row.economics);
  return j;
}

}  // namespace

Json EconomicsJson(const sim::economics::Figures& f) {
  Json j;
  j["gpus"] = f.gpus;
  j["utilization"] = f.utilization;
  j["tdp_bound"] = f.tdp_bound;
  j["gpu_idle_w"] = f.gpu_idle.watts();
  j["gpu_tdp_w"] = f.gpu_tdp.watts();
  j["gpu_power_w"] = f.gpu_power.watts();
  j["pue"] = f.pue;
  j["facility_power_w"] = f.facility_power.watts();
  j["energy_per_hour_kwh"] = f.energy_per_hour.ToKilowattHours();
  Put(j, "price_per_gpu_hour_usd", f.price_per_gpu_hour_usd);
  Put(j, "cost_per_hour_usd", f.cost_per_hour_usd);
  Put(j, "grid_intensity_gco2_per_kwh", f.grid_intensity_gco2_per_kwh);
  Put(j, "co2_kg_per_hour", f.co2_kg_per_hour);
  if (f.energy_per_step) j["energy_per_step_j"] = f.energy_per_step->joules();
  Put(j, "steps_to_train", f.steps);
  Put(j, "time_to_train_s", f.time_to_train_s);
  Put(j, "gpu_hours", f.gpu_hours);
  if (f.energy_to_train) j["energy_to_train_kwh"] = f.energy_to_train->ToKilowattHours();
  Put(j, "cost_usd", f.cost_usd);
  Put(j, "co2_kg", f.co2_kg);
  return j;
}

Json SimulationJson(const SimResult& r) {
  const bool single = r.roles.size() == 1;
  Json j;
  j["step_time_s"] = r.step_time.ToSeconds();
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["tokens_per_second"] = r.tokens_per_second;
  // Only folded steps carry the key, so full replays' output is unchanged.
  if (!r.folded_from.empty()) j["folded_from_micro_batches"] = r.folded_from;
  if (single) {
    AddRoleTimes(r, r.roles.front(), /*with_p2p=*/false, j);
    j["comm"] = RoleCommJson(r.roles.front());
  } else {
    const RoleResult& peak = PeakMemoryRole(r);
    j["peak_memory_bytes"] = peak.peak_memory.count();
    j["capacity_bytes"] = peak.capacity.count();
    sim::TierFits every;  // the step fits a tier when every role does
    for (const RoleResult& role : r.roles) {
      const sim::TierFits f = RoleFits(r, role);
      every = {every.gpu && f.gpu, every.host && f.host, every.nvme && f.nvme};
    }
    AddFits(every, j);
    j["roles"] = RolesJson(r);
  }
  j["links"] = LinksJson(r.links);
  if (single) j["memory"] = RoleMemoryJson(r.roles.front());
  j["findings"] = FindingsJson(r);
  return j;
}

Json SweepJson(const SweepResult& r, const std::string& scenario,
               const std::vector<std::string>& sets, const std::string& network) {
  Json doc;
  doc["kind"] = kSweepKind;
  doc["version"] = kSweepVersion;
  doc["fingerprint"] = r.fingerprint;
  doc["scenario"] = scenario;
  doc["mode"] = study::SweepModeName(r.mode);
  doc["network"] = network;
  doc["set"] = sets;
  Json vary = Json::array();
  for (const auto& axis : r.axes) vary.push_back({{"field", axis.field}, {"values", axis.values}});
  doc["vary"] = std::move(vary);
  doc["total_points"] = r.total_points;
  doc["shard"] = {{"index", r.shard.index}, {"count", r.shard.count}};
  Json list = Json::array();
  const bool simulate = r.mode == study::SweepMode::kSimulate;
  const bool economics = std::any_of(r.points.begin(), r.points.end(),
                                     [](const study::SweepPoint& p) { return p.economics; });
  for (const auto& p : r.points) list.push_back(PointJson(p, r.axes, simulate, economics));
  doc["points"] = std::move(list);
  return doc;
}

Json SearchJson(const SearchResult& r, const SearchOptions& options, const Scenario& scenario,
                const std::string& scenario_name) {
  const strategies::SearchStats& stats = r.stats;
  Json doc;
  doc["scenario"] = scenario_name;
  if (options.space != "default") doc["space"] = options.space;
  doc["fix"] = options.fixes;
  doc["candidates"] = stats.candidates;
  doc["pruned"] = stats.pruned;
  doc["analyzed"] = stats.analyzed;
  doc["feasible"] = stats.feasible;
  doc["simulate_top"] = options.simulate_top;
  doc["simulated"] = r.simulated;
  const Scenario* exhaustive = options.space == "default" ? nullptr : &scenario;
  // reshard_after_forward shows where it can differ from FULL_SHARD: searched, pinned by
  // --fix, or set false by the scenario.
  const bool reshard =
      exhaustive != nullptr || scenario.simulation.reshard_after_forward == false ||
      std::any_of(options.fixes.begin(), options.fixes.end(), [](const std::string& f) {
        return f.starts_with("simulation.reshard_after_forward=");
      });
  Json list = Json::array();
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    list.push_back(RowJson(r.ranked[i], static_cast<int64_t>(i) + 1, r.ranked.front(), exhaustive,
                           reshard ? &scenario : nullptr));
  }
  doc["rows"] = std::move(list);
  return doc;
}

Json MetricValueJson(const std::optional<study::MetricValue>& v) {
  if (!v) return nullptr;
  return std::visit([](auto x) { return Json(x); }, *v);
}

Json CompareJson(const study::Comparison& c, const std::string& baseline,
                 const std::string& current, double threshold) {
  Json j;
  j["kind"] = "compare";
  j["result_kind"] = study::ResultKindName(c.kind);
  j["baseline"] = baseline;
  j["current"] = current;
  j["threshold"] = threshold;
  j["regressed"] = c.regressed;
  j["improved"] = c.improved;
  j["changed"] = c.changed;
  j["within_threshold"] = c.within_threshold;
  j["unchanged"] = c.unchanged;
  j["removed"] = c.removed;
  j["added"] = c.added;
  Json list = Json::array();
  for (const auto& m : c.changes) {
    Json e;
    e["metric"] = m.metric;
    e["verdict"] = study::VerdictName(m.verdict);
    e["baseline"] = MetricValueJson(m.baseline);
    e["current"] = MetricValueJson(m.current);
    e["relative"] = m.relative ? Json(*m.relative) : Json(nullptr);
    list.push_back(std::move(e));
  }
  j["metrics"] = std::move(list);
  return j;
}

}  // namespace placesim::api
