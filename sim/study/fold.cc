// Folding of long steps (see fold.h): three short replays, a periodicity check, a linear
// extension of every additive figure.
#include "sim/study/fold.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "strategies/analyzer.h"
#include "strategies/schedule.h"

namespace placesim::study {
namespace {

// The figure after `k` more periods, from its values at the last two replays.
template <typename T>
T Extend(T at2, T at3, int64_t k) {
  return at3 + (at3 - at2) * k;
}

template <typename T, size_t N>
std::array<T, N> ExtendAll(const std::array<T, N>& at2, const std::array<T, N>& at3, int64_t k) {
  std::array<T, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = Extend(at2[i], at3[i], k);
  return out;
}

// Link traffic: bytes and busy times extend; utilisation is re-taken over the longer step.
std::vector<sim::LinkKindStats> ExtendLinks(const std::vector<sim::LinkKindStats>& at2,
                                            const std::vector<sim::LinkKindStats>& at3, int64_t k,
                                            Duration step) {
  std::vector<sim::LinkKindStats> out = at3;
  for (size_t i = 0; i < out.size() && i < at2.size(); ++i) {
    sim::LinkKindStats& l = out[i];
    l.bytes = Extend(at2[i].bytes, at3[i].bytes, k);
    l.busy_max = Extend(at2[i].busy_max, at3[i].busy_max, k);
    l.busy_avg = Extend(at2[i].busy_avg, at3[i].busy_avg, k);
    const double s = step.ToSeconds();
    l.utilization_max = s > 0 ? l.busy_max.ToSeconds() / s : 0.0;
    l.utilization_avg = s > 0 ? l.busy_avg.ToSeconds() / s : 0.0;
  }
  return out;
}

sim::RoleResult ExtendRole(const sim::RoleResult& at2, const sim::RoleResult& at3, int64_t k) {
  sim::RoleResult r = at3;
  r.step_time = Extend(at2.step_time, at3.step_time, k);
  r.compute_busy = Extend(at2.compute_busy, at3.compute_busy, k);
  r.comm_busy = Extend(at2.comm_busy, at3.comm_busy, k);
  r.copy_busy = Extend(at2.copy_busy, at3.copy_busy, k);
  r.host_busy = Extend(at2.host_busy, at3.host_busy, k);
  r.p2p_busy = Extend(at2.p2p_busy, at3.p2p_busy, k);
  r.exposed_comm = Extend(at2.exposed_comm, at3.exposed_comm, k);
  r.idle = Extend(at2.idle, at3.idle, k);
  r.live_at_peak = ExtendAll(at2.live_at_peak, at3.live_at_peak, k);
  r.peak_memory = Extend(at2.peak_memory, at3.peak_memory, k);
  r.peak_at = Extend(at2.peak_at, at3.peak_at, k);
  r.peak_host_memory = Extend(at2.peak_host_memory, at3.peak_host_memory, k);
  r.peak_nvme = Extend(at2.peak_nvme, at3.peak_nvme, k);
  r.collective_bytes = ExtendAll(at2.collective_bytes, at3.collective_bytes, k);
  r.collective_calls = ExtendAll(at2.collective_calls, at3.collective_calls, k);
  r.copy_bytes = Extend(at2.copy_bytes, at3.copy_bytes, k);
  for (size_t c = 0; c < r.algorithm_calls.size(); ++c) {
    for (size_t a = 0; a < r.algorithm_calls[c].size() && a < at2.algorithm_calls[c].size(); ++a) {
      r.algorithm_calls[c][a] = Extend(at2.algorithm_calls[c][a], at3.algorithm_calls[c][a], k);
    }
  }
  r.protocol_calls = ExtendAll(at2.protocol_calls, at3.protocol_calls, k);
  r.links = ExtendLinks(at2.links, at3.links, k, r.step_time);
  r.ops = Extend(at2.ops, at3.ops, k);
  r.events = static_cast<uint64_t>(
      Extend(static_cast<int64_t>(at2.events), static_cast<int64_t>(at3.events), k));
  return r;
}

strategies::Finding OutOfMemory(const sim::RoleResult& r) {
  strategies::Finding f;
  f.severity = strategies::Severity::kError;
  f.rule = "out-of-memory";
  f.message = fmt::format(
      "{}: peak device memory {:.2f} GB at {:.3f} ms exceeds the GPU's {:.2f} GB (folded)", r.role,
      r.peak_memory.ToGB(), r.peak_at.ToMilliseconds(), r.capacity.ToGB());
  f.fix =
      "shard more state (ZeRO / FSDP), recompute activations, offload, or use a smaller "
      "micro-batch";
  return f;
}

// The micro-batch counts of the three replays: congruent to m modulo the period d, at least
// two periods and four micro-batches in, so that warm-up and cool-down are whole in each.
std::array<int64_t, 3> ReplayLengths(int64_t m, int64_t d) {
  int64_t m1 = m % d;
  while (m1 < std::max<int64_t>(2 * d, 4)) m1 += d;
  return {m1, m1 + d, m1 + 2 * d};
}

// Refuses the fold when the two increments of a duration differ by more than the tolerance.
Status CheckPeriodic(std::string_view what, Duration a1, Duration a2, Duration a3,
                     const std::array<int64_t, 3>& lengths) {
  const int64_t first = (a2 - a1).picoseconds();
  const int64_t second = (a3 - a2).picoseconds();
  const double allowed = kFoldTolerance * static_cast<double>(a3.picoseconds());
  if (static_cast<double>(std::llabs(second - first)) <= allowed) return OkStatus();
  return OutOfRangeError(fmt::format(
      "{} is not periodic in the micro-batches: replays of {}, {} and {} micro-batches grow by "
      "{} ps then {} ps (more than {:g} of the step apart), so the step cannot be folded",
      what, lengths[0], lengths[1], lengths[2], first, second, kFoldTolerance));
}

// The full step's result from the three replays' (REQUIRES: same roles in each).
StatusOr<sim::SimResult> Fold(const std::array<sim::SimResult, 3>& runs,
                              const std::array<int64_t, 3>& lengths, int64_t m, int64_t d,
                              strategies::Plan plan) {
  const int64_t k = (m - lengths[2]) / d;
  sim::SimResult out;
  for (size_t i = 0; i < runs[2].roles.size(); ++i) {
    const sim::RoleResult& r1 = runs[0].roles[i];
    const sim::RoleResult& r2 = runs[1].roles[i];
    const sim::RoleResult& r3 = runs[2].roles[i];
    RETURN_IF_ERROR(CheckPeriodic(fmt::format("the step time of {}", r3.role), r1.step_time,
                                  r2.step_time, r3.step_time, lengths));
    sim::RoleResult r = ExtendRole(r2, r3, k);
    out.step_time = std::max(out.step_time, r.step_time);
    if (r.peak_memory > r.capacity) out.findings.push_back(OutOfMemory(r));
    out.roles.push_back(std::move(r));
  }
  out.links = ExtendLinks(runs[1].links, runs[2].links, k, out.step_time);
  out.peak = runs[2].peak;
  // Model FLOPs and tokens are linear in the batch (eq. 3), so the rates scale from the
  // longest replay's by the batch's growth over the step's; the hardware's FLOPs are the
  // full plan's.
  const sim::SimResult& last = runs[2];
  const double world = static_cast<double>(std::max<int64_t>(plan.world, 1));
  const double batch = static_cast<double>(m) / static_cast<double>(lengths[2]);
  const double slower = out.step_time.picoseconds() > 0
                            ? static_cast<double>(last.step_time.picoseconds()) /
                                  static_cast<double>(out.step_time.picoseconds())
                            : 0.0;
  out.model_flops_per_rank = last.model_flops_per_rank * batch;
  out.hardware_flops_per_rank = plan.flops_per_iteration / world;
  out.mfu = last.mfu * batch * slower;
  out.tokens_per_second = last.tokens_per_second * batch * slower;
  out.hfu = last.hardware_flops_per_rank.count() > 0
                ? last.hfu * slower * out.hardware_flops_per_rank.count() /
                      last.hardware_flops_per_rank.count()
                : 0.0;
  out.plan = std::move(plan);
  out.folded_from.assign(lengths.begin(), lengths.end());
  return out;
}

}  // namespace

StatusOr<sim::SimResult> SimulateStepFolded(const topology::Cluster& cluster,
                                            const strategies::ModelSpec& model,
                                            const strategies::TrainingSpec& training,
                                            const strategies::StrategySpec& strategy,
                                            const sim::ExecutorOptions& options) {
  StatusOr<sim::SimResult> full = sim::SimulateStep(cluster, model, training, strategy, options);
  if (full.ok() || !strategies::IsOpLimitRefusal(full.status())) return full;
  // The op limit refused the schedule up front, after Analyze: the plan is a cheap rerun.
  ASSIGN_OR_RETURN(strategies::Plan plan,
                   strategies::Analyze(model, training, strategy, cluster.spec(),
                                       strategies::ScheduleAnalyzeOptions(options.schedule)));
  const int64_t m = plan.micro_batches;
  const int64_t d = std::max<int64_t>(1, strategy.mesh.pp);
  const std::array<int64_t, 3> lengths = ReplayLengths(m, d);
  if (lengths[2] >= m) return full;
  if (options.trace != nullptr) {
    return OutOfRangeError(fmt::format(
        "{}; the step would be folded (replayed at {}, {} and {} micro-batches and extended "
        "to {}), and a folded step has no timeline of its own: drop --trace, or trace a "
        "shorter step (fewer micro-batches)",
        full.status().message(), lengths[0], lengths[1], lengths[2], m));
  }
  const int64_t per_micro_batch = training.global_batch / m;
  // max_ops decides when to fold; the replays, already as short as a fold can make them, may
  // use the whole kMaxScheduleOps.
  sim::ExecutorOptions replay = options;
  replay.schedule.max_ops = strategies::kMaxScheduleOps;
  std::array<sim::SimResult, 3> runs;
  for (size_t i = 0; i < lengths.size(); ++i) {
    strategies::TrainingSpec shorter = training;
    shorter.global_batch = per_micro_batch * lengths[i];
    StatusOr<sim::SimResult> run = sim::SimulateStep(cluster, model, shorter, strategy, replay);
    if (!run.ok()) {
      return Status(run.status().code(),
                    fmt::format("{}; folding it needs a replay of {} micro-batches, which "
                                "fails: {}",
                                full.status().message(), lengths[i], run.status().message()));
    }
    runs[i] = *std::move(run);
  }
  return Fold(runs, lengths, m, d, std::move(plan));
}

}  // namespace placesim::study
