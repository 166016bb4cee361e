// NCCL's per-call cost beyond the wire: the protocol it picks for a message size and the
// latency and bandwidth that protocol costs, from NCCL's own tuning model (src/graph/tuning.cc,
// NVIDIA/nccl commit 01afd20a, the 2.12 release line: baseLat, hwLat and the per-protocol bus
// bandwidth factors of ncclTopoTuneModel; ncclTopoGetAlgoTime's ring plateau). The plan of an
// algorithm already charges every phase steps x route latency + bytes / bottleneck (phase.h);
// this adds, per call and protocol p:
//
//   overhead(p) = baseLat[a][p]
//               + sum over phases of steps x max(0, hwLat[hw][a][p] - route latency)
//               + sum over phases of bytes / bottleneck x (1 / eff[a][p] - 1)
//
// for a the tuning-table row the algorithm follows (ring, tree, or a point-to-point transfer,
// which NCCL runs as one ring step), hw the phase's transport (NVLink within a node, the network
// when a flow leaves its node), and eff the share of the link's bandwidth the protocol delivers:
// LL 1/4 (1/3 for a ring within one node that is not an all-reduce), LL128 0.92, Simple 1 on the
// ring; 0.9 x (1/3.8, 0.915 across nodes or 7/9 within one, 1) on the tree. The hop latency
// NCCL measured is a floor, so a route slower than it (a what-if topology) is not charged
// twice; LL pays 1.8x its NVLink hop latency when the call also crosses the network, and a
// multi-node ring all-reduce under Simple pays 1.9x its latency once the message passes
// n / 16 x 64 KiB (NCCL's "plateau effect of ring"). The protocol chosen is the one with the
// lowest overhead, as NCCL picks the lowest predicted time; ties keep the earlier of LL, LL128,
// Simple. So small messages run LL (low latency, a quarter of the bandwidth), mid sizes LL128,
// large ones Simple, and the bus bandwidth of small messages stays well below the link's.
//
// Thread-safety: pure functions over immutable tables.
#ifndef PLACESIM_SIM_COLLECTIVES_NCCL_MODEL_H_
#define PLACESIM_SIM_COLLECTIVES_NCCL_MODEL_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "base/units.h"
#include "sim/network/phase.h"
#include "strategies/cost/nccl_tuning.h"
#include "strategies/schedule.h"

namespace placesim::sim::collectives {

// The protocols and table rows of NCCL's tuning model (strategies/cost/nccl_tuning.h holds its
// constants, shared with the search's estimate).
using Protocol = strategies::cost::NcclProtocol;
inline constexpr int kNumProtocols = strategies::cost::kNumNcclProtocols;
using NcclRow = strategies::cost::NcclRow;
// "LL", "LL128", "Simple", as NCCL_PROTO spells them.
std::string_view ProtocolName(Protocol p);

// The protocol of one call and what it costs beyond the plan's alpha-beta time.
struct ProtocolCost {
  Protocol protocol = Protocol::kSimple;
  Duration overhead;
};

// The cheapest protocol for a call whose plan has `phases` (with FinishPhase's classes filled)
// and `on_network[k]` set when phase k has a flow that leaves its node, for a call of `kind`
// over `ranks` members moving `size`. `pipelined`: the phases run at once (CommPlan::pipelined),
// so the bandwidth a protocol gives up is that of the slowest phase, max_k(t_k / eff) -
// max_k(t_k), not the sum over phases. REQUIRES: on_network.size() == phases.size().
// O(phases x distinct routes).
ProtocolCost CheapestProtocol(NcclRow row, strategies::CollectiveKind kind, int64_t ranks,
                              std::span<const CommPhase> phases,
                              std::span<const uint8_t> on_network, TransferSize size,
                              bool pipelined = false);

}  // namespace placesim::sim::collectives

#endif  // PLACESIM_SIM_COLLECTIVES_NCCL_MODEL_H_
