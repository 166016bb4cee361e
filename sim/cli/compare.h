// `placesim compare`: did a change regress a result?
//
//   placesim compare BASELINE.json CURRENT.json [--threshold 2%] [--format table|json]
//
// Both files are JSON results of the same kind: `placesim analyze --format json`,
// `placesim simulate --format json` or `placesim sweep --format json` (or `merge`). Every
// numeric or boolean leaf is a metric, named by its path ("memory.total_bytes",
// "roles[0].comm.bytes_per_device_per_step", "comm.by_kind.all-gather.bytes"). In a sweep,
// points are matched by their varied values, not their position, and a point's metrics are
// named "[cluster.nodes=8] memory_total_bytes"; its status becomes the boolean metric "ok".
//
// A metric changes beyond the threshold when |current - baseline| > threshold x |baseline|
// (any change of a zero baseline, and any change of a boolean). Whether that is a
// regression depends on the metric's leaf name (MetricDirection):
//   lower is better   step_time_s and every other *_s (times), every *_bytes and bytes
//                     (memory, communication), bubble_fraction, errors, warnings
//   higher is better  mfu, hfu, tokens_per_second, headroom_bytes, and the booleans fits, ok,
//                     correctness_ok
//   neutral           everything else (counts, sizes of the scenario, capacity_bytes,
//                     peak_at_s): a change beyond the threshold is reported as "changed" and
//                     never fails
// Metrics present in only one file are listed as "removed" or "added" and do not fail.
//
// Exit codes: 0 no regression; 1 at least one metric regressed beyond the threshold; 2 bad
// input (an unreadable or invalid file, results of different kinds, a bad --threshold).
//
// The engine is the library's (placesim/placesim.h: Compare; sim/study/compare.h); this
// command adds the flags and the formatting.
//
// Thread-safety: the functions are reentrant.
#ifndef PLACESIM_SIM_CLI_COMPARE_H_
#define PLACESIM_SIM_CLI_COMPARE_H_

#include <ostream>
#include <string>
#include <vector>

namespace placesim::sim {

// `args` excludes the program and command names.
int RunCompare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_CLI_COMPARE_H_
