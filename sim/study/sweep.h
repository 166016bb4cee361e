// The sweep engine: what-if studies over any scenario field, as a library. It parses --vary
// style value lists (ranges included), checks every value against the scenario before any
// point runs, and runs the cartesian product of the lists on worker threads, one typed
// SweepPoint per point. No I/O and no JSON: `placesim sweep` formats the points.
//
// Points are numbered in nested-loop order: the first axis is the outermost loop, the last
// varies fastest. A shard K/N holds the points whose global index i has i % N == K - 1.
//
// Values of an axis ("FIELD.PATH=V1,V2,..."): commas inside single or double quotes do not
// split, surrounding blanks are trimmed, matching outer quotes are removed, and values keep
// their units. An element may be a range of decimal numbers, inclusive of its end when the
// end is reached: a..b (step 1), a..b:+k (step k), a..b:xk (factor k, an integer >= 2,
// a > 0). Ranges are computed exactly on decimals scaled to integers.
//
// Thread-safety: every function is reentrant; RunSweepPoints shares `base` read-only between
// its workers and copies it per point.
#ifndef PLACESIM_SIM_STUDY_SWEEP_H_
#define PLACESIM_SIM_STUDY_SWEEP_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/errors.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/collectives/simulation_settings.h"
#include "sim/economics/economics.h"
#include "sim/scenario/scenario.h"

namespace placesim::study {

// One varied field and its expanded values, in the order given.
struct VaryAxis {
  std::string field;
  std::vector<std::string> values;
};

// At most this many values per axis, and this many points per sweep.
inline constexpr int64_t kMaxVaryValues = 100'000;
inline constexpr int64_t kMaxSweepPoints = 1'000'000;

// Parses "FIELD.PATH=V1,V2,..." and expands ranges. Errors (kInvalidArgument) name the flag
// and the offending element: a missing '=', an empty field, an empty list or element, a
// malformed range, a duplicate value, more than kMaxVaryValues values. Does not check the
// values against the scenario schema (CheckSweepAxes does).
StatusOr<VaryAxis> ParseVary(std::string_view spec);

// "K/N" with 1 <= K <= N <= kMaxSweepPoints. kInvalidArgument otherwise.
struct ShardSpec {
  int64_t index = 1;  // K, 1-based
  int64_t count = 1;  // N
};
StatusOr<ShardSpec> ParseShard(std::string_view text);

// Parses every vary spec and the shard, appending one line per problem to `errors` (none
// given, a malformed spec, a field varied twice, a bad shard). Returns the axes that parsed.
struct SweepFlags {
  std::vector<VaryAxis> axes;
  ShardSpec shard;
};
SweepFlags ParseSweepFlags(const std::vector<std::string>& vary_specs, std::string_view shard,
                           ErrorList* errors);

// Applies every value of every axis to a scratch copy of `base`, appending each refusal once
// (an unknown field fails alike for every value), and a line when the product of the axes
// exceeds kMaxSweepPoints. Returns the number of points (meaningful when no line was added).
// Complexity: one document copy per value.
int64_t CheckSweepAxes(const sim::ScenarioDocument& base, const std::vector<VaryAxis>& axes,
                       ErrorList* errors);

// What each point computes: the analytic plan, or the plan and one simulated step.
enum class SweepMode { kAnalyze, kSimulate };
const char* SweepModeName(SweepMode mode);  // "analyze", "simulate"

// The result of one point. Every metric is set when `ok`, and unset where the point failed
// before computing it; the simulated ones only in SweepMode::kSimulate.
struct SweepPoint {
  int64_t index = 0;                // global, in nested-loop order
  std::vector<std::string> values;  // one per axis, in axis order
  bool ok = true;
  std::optional<bool> fits;                       // every rank role fits its HBM
  std::optional<Bytes> memory_total;              // the analyzer's largest rank role
  std::optional<Bytes> comm_per_device_per_step;  // the largest over rank roles
  std::optional<bool> correctness_ok;
  std::optional<Duration> step_time;
  std::optional<double> mfu;
  std::optional<double> tokens_per_second;
  std::optional<Bytes> sim_peak_memory;  // the largest over rank roles
  std::optional<Duration> exposed_comm;  // the largest over rank roles
  // Cost and energy, only when the point's scenario has an `economics` message: per hour at
  // the TDP bound in SweepMode::kAnalyze, the simulated step's figures in kSimulate.
  std::optional<sim::economics::Figures> economics;
  std::string error;  // one line; empty when ok
};

struct SweepRunOptions {
  SweepMode mode = SweepMode::kAnalyze;
  // Overrides each point's simulation.network_model when set.
  std::optional<std::string> network;  // a registered network model's name
  int64_t jobs = 1;                    // worker threads, >= 1; the points do not depend on it
  // When set, called on the calling thread about every 100 ms with (points done, total),
  // and once more at the end; the workers never call it.
  std::function<void(int64_t done, int64_t total)> progress;
};

// Runs the points `indices` (global indices into the product of `axes`) and returns their
// results in the same order. A point that fails (a refused value combination, an invalid
// scenario, a refused simulation) gets ok = false and its error; the others still run.
// Complexity: one Resolve + Analyze (+ SimulateStep) per point, over `jobs` threads.
std::vector<SweepPoint> RunSweepPoints(const sim::ScenarioDocument& base,
                                       const std::vector<VaryAxis>& axes,
                                       const std::vector<int64_t>& indices,
                                       const SweepRunOptions& options);

// The cost and energy of one simulated step of `s` (all its GPUs, its global batch, the
// step's compute-busy share). REQUIRES: s.economics.
sim::economics::Figures SimulatedEconomics(const sim::Scenario& s, const sim::SimResult& r);

// The global indices of `shard` among `total` points, increasing.
std::vector<int64_t> ShardIndices(int64_t total, ShardSpec shard);

// The sweep's identity for merging shards: FNV-1a over the scenario's source bytes, the
// overrides, the expanded axes, the mode and the network choice, as 16 hex digits. Stable
// across platforms and runs.
std::string SweepFingerprint(std::string_view source, const std::vector<std::string>& overrides,
                             const std::vector<VaryAxis>& axes, SweepMode mode,
                             std::string_view network);

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_SWEEP_H_
