// NCCL's protocol choice and per-call cost (see nccl_model.h for the model and its source).
#include "sim/collectives/nccl_model.h"

#include <algorithm>
#include <array>

#include "sim/network/alpha_beta.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;
using strategies::cost::kNcclBaseLatencyUs;
using strategies::cost::kNcclHopLatencyUs;

// The route latency and bottleneck a phase's slowest flow has: its longest latency and its
// narrowest bandwidth (every flow of a phase carries the same bytes).
struct PhaseRoute {
  Duration latency;
  double bytes_per_second = 0;
};

PhaseRoute Slowest(const CommPhase& ph) {
  PhaseRoute r;
  for (const auto& [latency, bw] : ph.classes) {
    r.latency = std::max(r.latency, latency);
    r.bytes_per_second = r.bytes_per_second == 0 ? bw : std::min(r.bytes_per_second, bw);
  }
  return r;
}

Duration Overhead(NcclRow row, Protocol p, CollectiveKind kind, int64_t ranks,
                  std::span<const CommPhase> phases, std::span<const uint8_t> on_network,
                  TransferSize size, bool pipelined) {
  const int proto = static_cast<int>(p);
  const int r = static_cast<int>(row);
  bool multi_node = false;
  for (uint8_t net : on_network) multi_node |= net != 0;
  Duration latency = Microseconds(kNcclBaseLatencyUs[r][proto]);
  double slower_ps = 0;   // the bandwidth the protocol gives up, in picoseconds
  double longest_ps = 0;  // pipelined: the longest phase at full bandwidth, and at the share
  double longest_slowed_ps = 0;
  const double eff = strategies::cost::NcclProtocolEfficiency(row, p, kind, multi_node);
  for (size_t k = 0; k < phases.size(); ++k) {
    const CommPhase& ph = phases[k];
    if (ph.flows.empty()) continue;
    const PhaseRoute route = Slowest(ph);
    const bool net = on_network[k] != 0;
    double hop_us = kNcclHopLatencyUs[r][net ? 1 : 0][proto];
    if (multi_node && !net && p == Protocol::kLL)
      hop_us *= strategies::cost::kNcclLLMultiNodeNvlinkFactor;
    const Duration floor = Microseconds(hop_us);
    if (floor > route.latency) latency += (floor - route.latency) * std::max<int64_t>(ph.steps, 1);
    const Bytes bytes = AnalyticPhaseBytes(ph, size);
    const double drain_ps = static_cast<double>(
        DrainTime(static_cast<double>(bytes.count()), route.bytes_per_second).picoseconds());
    slower_ps += drain_ps * (1.0 / eff - 1.0);
    longest_ps = std::max(longest_ps, drain_ps);
    longest_slowed_ps = std::max(longest_slowed_ps, drain_ps / eff);
  }
  // Phases that run at once lose bandwidth at once: the call is as slow as its slowest phase.
  if (pipelined) slower_ps = longest_slowed_ps - longest_ps;
  // NCCL's plateau: a multi-node ring all-reduce under Simple, past n / 16 x 64 KiB.
  if (row == NcclRow::kRing && p == Protocol::kSimple && multi_node &&
      kind == CollectiveKind::kAllReduce &&
      static_cast<double>(size.buffer_bytes.count()) >=
          static_cast<double>(ranks) / 16 * strategies::cost::kNcclRingPlateauBytesPer16Ranks) {
    latency = Duration::Picoseconds(latency.picoseconds() * strategies::cost::kNcclRingPlateauNum /
                                    strategies::cost::kNcclRingPlateauDen);
  }
  return latency + Duration::Picoseconds(static_cast<int64_t>(slower_ps));
}

}  // namespace

std::string_view ProtocolName(Protocol p) {
  switch (p) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "?";
}

ProtocolCost CheapestProtocol(NcclRow row, CollectiveKind kind, int64_t ranks,
                              std::span<const CommPhase> phases,
                              std::span<const uint8_t> on_network, TransferSize size,
                              bool pipelined) {
  ProtocolCost best;
  bool first = true;
  for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
    const Duration d = Overhead(row, p, kind, ranks, phases, on_network, size, pipelined);
    if (first || d < best.overhead) best = {p, d};
    first = false;
  }
  return best;
}

}  // namespace placesim::sim::collectives
