// LaneSet (internal to sim/executor): the lanes that may start an op, one bit each, taken
// lowest first. The executor marks a lane when one of its streams frees up or one of its ops
// loses its last dep, and polls the marked lanes after every event, so an event costs the
// lanes it touched, not the number of lanes.
//
// Invariants: a lane is marked at most once at a time (marking twice is marking once).
// Thread-safety: one set per execution. Header-only: it sits on the event loop's path.
#ifndef PLACESIM_SIM_EXECUTOR_LANE_SET_H_
#define PLACESIM_SIM_EXECUTOR_LANE_SET_H_

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

namespace placesim::sim::internal {

class LaneSet {
 public:
  // `lanes` lanes, all marked (every lane is polled once at the start).
  explicit LaneSet(size_t lanes = 0) : words_((lanes + 63) / 64, 0) {
    for (size_t k = 0; k < lanes; ++k) Mark(static_cast<uint32_t>(k));
  }

  // REQUIRES: lane < the count given at construction.
  void Mark(uint32_t lane) { words_[lane >> 6] |= uint64_t{1} << (lane & 63); }

  // Unmarks and returns the lowest marked lane; nullopt when none is. O(lanes / 64).
  std::optional<uint32_t> TakeLowest() {
    for (size_t w = 0; w < words_.size(); ++w) {
      if (words_[w] == 0) continue;
      const int bit = std::countr_zero(words_[w]);
      words_[w] &= words_[w] - 1;
      return static_cast<uint32_t>(w * 64 + static_cast<size_t>(bit));
    }
    return std::nullopt;
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_EXECUTOR_LANE_SET_H_
