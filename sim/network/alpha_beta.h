// Transfer times, and the analytic (alpha-beta) network model.
//
// The alpha-beta model: a transfer of n bytes over a path with total latency alpha and
// bottleneck bandwidth B takes alpha + n / B, with no contention between transfers (Hockney
// 1994). It is the uncontended limit of FlowNetwork — a lone flow there takes exactly this long,
// to the picosecond, since both use DrainTime — and the fast model for sweeps where contention
// is known to be small.
//
// Rounding: n / B is rounded up to the picosecond (the rule of base/units.h), after snapping a
// value within 1e-12 relative of a whole picosecond to it, so that floating-point noise
// (1e9 / 1e11 * 1e12 = 10000000000.000002) never adds a spurious picosecond.
//
// Thread-safety: pure functions.
#ifndef PLACESIM_SIM_NETWORK_ALPHA_BETA_H_
#define PLACESIM_SIM_NETWORK_ALPHA_BETA_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/units.h"

namespace placesim::sim {

// Time to drain `bytes` (real-valued, as partially sent flows are) at `bytes_per_second`,
// rounded up to the picosecond as described above; zero for bytes <= 0; Duration::Max() when
// the rate is not positive or the result overflows. O(1).
inline Duration DrainTime(double bytes, double bytes_per_second) {
  if (!(bytes > 0)) return Duration::Zero();
  if (!(bytes_per_second > 0)) return Duration::Max();
  // bytes * 1e12 / rate rather than bytes / rate * 1e12: exact for round figures.
  double ps = bytes * 1e12 / bytes_per_second;
  if (!(ps < 9.2e18)) return Duration::Max();
  double nearest = std::round(ps);
  if (std::fabs(ps - nearest) <= ps * 1e-12) {
    return Duration::Picoseconds(static_cast<int64_t>(nearest));
  }
  return Duration::Picoseconds(static_cast<int64_t>(std::ceil(ps)));
}

// latency + bytes / bottleneck (see the rounding above). Zero bytes take exactly `latency`; a
// zero bottleneck with bytes to move takes Duration::Max(). REQUIRES: latency >= 0. O(1).
inline Duration AlphaBetaTime(Bandwidth bottleneck, Duration latency, Bytes bytes) {
  Duration transfer = DrainTime(static_cast<double>(bytes.count()), bottleneck.bytes_per_second());
  if (transfer == Duration::Max() || transfer > Duration::Max() - latency) return Duration::Max();
  return latency + transfer;
}

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_NETWORK_ALPHA_BETA_H_
