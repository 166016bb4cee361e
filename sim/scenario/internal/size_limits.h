// The size limits of a scenario: the products of its fields that the analytic model forms
// (a layer's activations, its attention scores, the model states, a step's traffic) must stay
// under kMaxModelBytes, so that every byte count the model computes from them fits in int64
// with room for the sums it adds them into. Each field alone has a range (resolve.cc); these
// bound their products, which no single range can, and name every field of a product that
// does not fit. Computed in double, so checking a product never overflows itself.
//
// Thread-safety: pure functions.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_SIZE_LIMITS_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_SIZE_LIMITS_H_

#include <cstdint>

#include "base/errors.h"
#include "strategies/spec.h"

namespace placesim::sim::scenario_internal {

// 2^60 bytes (1.15 EB): one eighth of int64, so the model can add eight such terms.
inline constexpr double kMaxModelBytes = 1152921504606846976.0;

// Adds one line per product over kMaxModelBytes to `errors`, as
//   "model.seq_len × training.micro_batch × model.hidden × model.layers: 100000000 × ...:
//    the layer inputs of one micro-batch would take 5.6e+18 bytes, over the limit of ..."
// REQUIRES: each field is within its own range (the caller checked). `dp` >= 1.
void CheckSizeLimits(const strategies::TransformerSpec& t, const strategies::TrainingSpec& tr,
                     int64_t dp, ErrorList* errors);

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_SIZE_LIMITS_H_
