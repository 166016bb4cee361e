// Integer arithmetic shared by the plan, the schedule and the cost model, so that every module
// rounds the same way (a byte of difference breaks "agrees with the plan to the byte").
//
// Invariants: exact integer results; no floating point. Thread-safety: pure functions.
#ifndef PLACESIM_STRATEGIES_COST_ARITH_H_
#define PLACESIM_STRATEGIES_COST_ARITH_H_

#include <cstdint>

#include "base/units.h"

namespace placesim::strategies::cost {

// ceil(a / b) for a >= 0; b <= 1 leaves a unchanged (a split over at most one device).
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

// Per-device bytes of a ring collective over n devices: factor x (n - 1) / n x buffer, rounded
// to the nearest byte (factor 2 for an all-reduce, 1 for reduce-scatter, all-gather and
// all-to-all). 0 when n <= 1. Exact for any buffer below 2^63 (128-bit intermediate).
constexpr Bytes RingBytesPerDevice(Bytes buffer, int factor, int64_t n) {
  if (n <= 1) return Bytes::Zero();
  const __int128 num = static_cast<__int128>(buffer.count()) * factor * (n - 1);
  return Bytes::Count(static_cast<int64_t>((num + n / 2) / n));
}

}  // namespace placesim::strategies::cost

#endif  // PLACESIM_STRATEGIES_COST_ARITH_H_
