// The comparison engine: did a change regress a result? Reads two JSON results of the same
// kind (`placesim analyze|simulate|sweep --format json`, a merge, or Google Benchmark's
// JSON), flattens each into named metrics, and classifies every change. JSON stays inside
// the loader; the metrics and the comparison are plain values.
//
// Metrics. Every numeric or boolean leaf is a metric named by its path
// ("memory.total_bytes", "roles[0].comm.bytes_per_device_per_step"). In a sweep, points are
// matched by their varied values, not their position; a point's metrics are shown as
// "[cluster.nodes=8] memory_total_bytes" and its status becomes the boolean metric "ok".
//
// A metric changes beyond the threshold when |current - baseline| > threshold x |baseline|
// (any change of a zero baseline, and any change of a boolean); whether that regresses
// depends on the leaf name (DirectionOf). Metrics in one file only are "removed" or "added".
//
// Thread-safety: the functions are reentrant.
#ifndef PLACESIM_SIM_STUDY_COMPARE_H_
#define PLACESIM_SIM_STUDY_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"

namespace placesim::study {

// "2%" -> 0.02, "0.5%" -> 0.005. The percent sign is required; 0% to 1000%.
StatusOr<double> ParseThreshold(std::string_view text);

//   lower is better   every *_s (times), every *_bytes and bytes, bubble_fraction, errors,
//                     warnings, real_time, cpu_time
//   higher is better  mfu, hfu, tokens_per_second, headroom_bytes, fits, ok, correctness_ok,
//                     items_per_second, bytes_per_second
//   neutral           everything else (counts, capacity_bytes, peak_at_s): reported as
//                     "changed", never a regression
enum class MetricDirection { kLowerIsBetter, kHigherIsBetter, kNeutral };
// The direction of a metric from its leaf name (the last path segment, without indices).
MetricDirection DirectionOf(std::string_view leaf);

enum class ResultKind { kAnalyze, kSimulate, kSweep, kBenchmark };
const char* ResultKindName(ResultKind kind);  // "analyze", "simulate", "sweep", "benchmark"

// A metric's value as the file wrote it: integers stay exact.
using MetricValue = std::variant<bool, int64_t, double>;

struct Metric {
  std::string name;  // sweep metrics carry a hidden matching key; see DisplayName
  std::string leaf;  // the last path segment, for the direction
  MetricValue value;
};

struct ResultMetrics {
  ResultKind kind = ResultKind::kAnalyze;
  std::vector<Metric> metrics;  // in the file's order
};

// The most metrics a result may hold (each costs about 300 bytes once flattened; a 1,000-point
// simulated sweep holds about 20,000).
inline constexpr size_t kMaxResultMetrics = 1'000'000;

// Reads and flattens one result file. Errors: kNotFound (unreadable), kInvalidArgument (a
// directory, not JSON, over ReadJsonFile's limits or kMaxResultMetrics, a field of the wrong
// type (with its JSON path), not a result placesim knows), each message starting with the path.
StatusOr<ResultMetrics> LoadResultFile(const std::string& path);

// What a metric's name shows in a report (without the matching key of sweep points).
std::string DisplayName(const std::string& name);

enum class Verdict { kRegressed, kImproved, kChanged, kRemoved, kAdded };
const char* VerdictName(Verdict v);  // "regressed", "improved", "changed", "removed", "added"

// One metric that changed beyond the threshold, or exists on one side only.
struct MetricChange {
  std::string metric;  // DisplayName
  Verdict verdict = Verdict::kChanged;
  std::optional<MetricValue> baseline;  // unset when added
  std::optional<MetricValue> current;   // unset when removed
  std::string delta;                    // "+5", "-0.25"; empty for booleans and one-sided
  std::optional<double> relative;       // (current - baseline) / |baseline|; unset at 0
};

struct Comparison {
  ResultKind kind = ResultKind::kAnalyze;
  std::vector<MetricChange> changes;  // the baseline's order, then the added metrics
  int64_t regressed = 0, improved = 0, changed = 0;
  int64_t within_threshold = 0, unchanged = 0, removed = 0, added = 0;
};

// Compares two results of the same kind; `threshold` is a fraction (ParseThreshold).
// kInvalidArgument, naming both files, when the kinds differ.
// Complexity: O(m log m) for m metrics.
StatusOr<Comparison> CompareResults(const ResultMetrics& baseline, const ResultMetrics& current,
                                    double threshold, std::string_view baseline_name,
                                    std::string_view current_name);

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_COMPARE_H_
