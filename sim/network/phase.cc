// Byte counts and alpha-beta times of phases of flows; the model is stated in phase.h.
#include "sim/network/phase.h"

#include <algorithm>

#include "sim/network/alpha_beta.h"

namespace placesim::sim {
namespace {

// S x num / den without overflow for num, den < 2^31 (bytes below 2^62).
Bytes Scale(Bytes s, int64_t num, int64_t den) {
  const int64_t b = s.count();
  return Bytes::Count((b / den) * num + (b % den) * num / den);
}

}  // namespace

Bytes PhaseBytes(const CommPhase& ph, TransferSize size) {
  return ph.den == 0 ? size.bytes : Scale(size.buffer_bytes, ph.num, ph.den);
}

Bytes AnalyticPhaseBytes(const CommPhase& ph, TransferSize size) {
  return ph.analytic_den == 0 ? size.bytes
                              : Scale(size.buffer_bytes, ph.analytic_num, ph.analytic_den);
}

Duration AnalyticTime(std::span<const CommPhase> phases, TransferSize size) {
  Duration total = Duration::Zero();
  for (const CommPhase& ph : phases) {
    const Bytes bytes = AnalyticPhaseBytes(ph, size);
    Duration longest = Duration::Zero();
    for (const auto& [latency, bw] : ph.classes) {
      longest = std::max(longest,
                         AlphaBetaTime(Bandwidth::BytesPerSecond(bw), latency * ph.steps, bytes));
    }
    total += longest;
  }
  return total;
}

void FinishPhase(CommPhase& ph) {
  for (const FlowPath& f : ph.flows) {
    ph.classes.emplace_back(f.latency, f.bottleneck.bytes_per_second());
  }
  std::sort(ph.classes.begin(), ph.classes.end());
  ph.classes.erase(std::unique(ph.classes.begin(), ph.classes.end()), ph.classes.end());
}

}  // namespace placesim::sim
