// NCCL's own tuning constants (src/graph/tuning.cc, NVIDIA/nccl commit 01afd20a, the 2.12
// release line: baseLat, hwLat and the per-protocol bus bandwidth factors of
// ncclTopoTuneModel; the ring "plateau" of ncclTopoGetAlgoTime), kept here, below both of
// their readers: the simulator's per-call protocol cost (sim/collectives/nccl_model.h) and the
// search's analytic estimate (strategies/search.h), so the two charge a call from one table.
// docs/calibration.md ("Collectives") lists every figure with its source.
//
// Invariants: the tables are indexed by NcclRow then NcclProtocol (then NVLink 0 / network 1).
// Thread-safety: constants and pure functions.
#ifndef PLACESIM_STRATEGIES_COST_NCCL_TUNING_H_
#define PLACESIM_STRATEGIES_COST_NCCL_TUNING_H_

#include <array>
#include <cstdint>

#include "base/units.h"
#include "strategies/plan.h"  // CollectiveKind

namespace placesim::strategies::cost {

enum class NcclProtocol : uint8_t { kLL, kLL128, kSimple };
inline constexpr int kNumNcclProtocols = 3;

// The row of NCCL's tuning tables an algorithm follows.
enum class NcclRow : uint8_t {
  kRing,  // ring and hierarchical (NCCL's ring: intra-node steps on NVLink, the rest on the net)
  kTree,  // the double binary tree
  kP2p,   // point-to-point transfers (send-recv, all-to-all): one ring step per transfer
};

// Per call, in microseconds, per protocol {LL, LL128, Simple}: baseLat[row].
inline constexpr std::array<std::array<double, kNumNcclProtocols>, 3> kNcclBaseLatencyUs = {{
    {6.6, 14.0, 8.4},  // ring
    {6.8, 14.0, 0.0},  // tree
    {6.6, 14.0, 8.4},  // p2p: a ring step
}};

// Per step, in microseconds, per protocol, {NVLink, network}: hwLat[hw][row].
inline constexpr std::array<std::array<std::array<double, kNumNcclProtocols>, 2>, 3>
    kNcclHopLatencyUs = {{
        {{{0.47, 1.9, 3.4}, {2.7, 4.0, 9.6}}},    // ring: NVLink, network
        {{{0.52, 1.2, 28.0}, {5.0, 8.5, 50.0}}},  // tree
        {{{0.47, 1.9, 3.4}, {2.7, 4.0, 9.6}}},    // p2p
    }};

// LL's NVLink hop latency is paid 1.8x when the call also crosses the network.
inline constexpr double kNcclLLMultiNodeNvlinkFactor = 1.8;
// A multi-node ring all-reduce under Simple pays 1.9x its latency once the buffer reaches
// ranks / 16 x 64 KiB (NCCL's "plateau effect of ring"): 19/10, kept as a ratio of integers
// so that a latency in picoseconds scales exactly.
inline constexpr int64_t kNcclRingPlateauNum = 19;
inline constexpr int64_t kNcclRingPlateauDen = 10;
inline constexpr double kNcclRingPlateauBytesPer16Ranks = 65536;

// NCCL's staging buffer per channel and peer, NCCL_BUFFSIZE = 4 MiB (DEFAULT_BUFFSIZE in
// NVIDIA/nccl src/init.cc): the chunk in which a pipelined multi-stage call (NCCL's
// hierarchical collectives) moves its buffer through the stages.
inline constexpr Bytes kNcclStagingBuffer = MiB(4);

// The share of the link bandwidth protocol p delivers (ncclTopoTuneModel's busBw factors):
// ring LL 1/4 (1/3 within one node for other than all-reduce), LL128 0.92, Simple 1; tree
// 0.9 x (1/3.8, 0.915 across nodes or 7/9 within one, 1). O(1).
constexpr double NcclProtocolEfficiency(NcclRow row, NcclProtocol p, CollectiveKind kind,
                                        bool multi_node) {
  if (row == NcclRow::kTree) {
    switch (p) {
      case NcclProtocol::kLL:
        return 0.9 / 3.8;
      case NcclProtocol::kLL128:
        return 0.9 * (multi_node ? 0.915 : 7.0 / 9.0);
      case NcclProtocol::kSimple:
        return 0.9;
    }
  }
  switch (p) {
    case NcclProtocol::kLL:
      return multi_node || kind == CollectiveKind::kAllReduce ? 1.0 / 4.0 : 1.0 / 3.0;
    case NcclProtocol::kLL128:
      return 0.92;
    case NcclProtocol::kSimple:
      return 1.0;
  }
  return 1.0;
}

}  // namespace placesim::strategies::cost

#endif  // PLACESIM_STRATEGIES_COST_NCCL_TUNING_H_
