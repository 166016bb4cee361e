// Phases of flows: how a collective, a pipeline send or an offload copy looks to the network.
// A transfer is a list of phases run one after another; a phase is a set of flows started
// together, and it ends when its last flow ends. Every flow of a phase carries the same bytes,
// a fraction num / den of the transfer's buffer S (or the transfer's own bytes when den == 0),
// and stands for `steps` pipelined steps, so it pays steps x its route latency.
//
// The analytic (alpha-beta) time of a phase is the longest of its flows alone:
//   max over flows of  steps x latency + bytes / bottleneck   (alpha_beta.h, no contention),
// on the bytes analytic_num / analytic_den of S, which may differ from what each flow carries
// (an algorithm whose flows share their sender's uplink charges each one the sender's whole
// load). The phase keeps the distinct (latency, bottleneck) pairs of its flows, so that time
// costs O(distinct routes), not O(flows).
//
// Thread-safety: plain values and pure functions, except CommPhase::link_counts,
// CommPhase::ungroupable, CommPhase::closed and CommPhase::group_cache, caches the analytic and
// flow networks fill on a phase's first use: a phase belongs to one run (one thread).
#ifndef PLACESIM_SIM_NETWORK_PHASE_H_
#define PLACESIM_SIM_NETWORK_PHASE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "base/units.h"
#include "sim/network/flow_network.h"

namespace placesim::sim {

// One flow: its route on the network and what it costs alone.
struct FlowPath {
  std::vector<LinkIndex> links;
  Duration latency;      // sum of the route's link latencies
  Bandwidth bottleneck;  // the route's slowest link
};

// What the phases of a transfer scale: the op's bytes and its buffer S.
struct TransferSize {
  Bytes bytes;         // carried by each flow of a phase with den == 0
  Bytes buffer_bytes;  // S, scaled by num / den (and analytic_num / analytic_den)
};

struct CommPhase {
  std::vector<FlowPath> flows;
  // The distinct (latency, bottleneck bytes/s) pairs of the flows, sorted (FinishPhase).
  std::vector<std::pair<Duration, double>> classes;
  int64_t num = 0;
  int64_t den = 0;
  int64_t analytic_num = 0;  // the same as num / den unless an algorithm states otherwise
  int64_t analytic_den = 0;
  int64_t steps = 1;
  // Each link the flows cross, with the number of flows crossing it, in first-crossing order:
  // null until the analytic network first starts the phase, then a cache of `flows`, so later
  // starts of a shared plan cost its distinct links, not every crossing again. Shared, so that
  // the network can keep it (and charge it later) past the phase's own life.
  using LinkCounts = std::vector<std::pair<LinkIndex, uint32_t>>;
  mutable std::shared_ptr<const LinkCounts> link_counts;
  // Set by the flow network when the phase cannot start as a group of lone flows (two of its
  // flows cross a link; FlowNetwork::StartGroup), so that later starts do not try again.
  mutable bool ungroupable = false;
  // The flow network's runs of the phase alone, for phases started as closed phases
  // (FlowNetwork::StartClosed).
  mutable ClosedRunCache closed;
  // The flow network's record of this phase's starts, so that a phase started again and again
  // can be held as a template (FlowNetwork::StartGroup, "Held templates").
  mutable GroupCache group_cache;
};

// The bytes each flow of `ph` carries: S x num / den, or size.bytes when den == 0. Exact for
// num, den < 2^31 and bytes below 2^62. O(1).
Bytes PhaseBytes(const CommPhase& ph, TransferSize size);
// The bytes the analytic model charges each flow: S x analytic_num / analytic_den, or
// size.bytes when analytic_den == 0. O(1).
Bytes AnalyticPhaseBytes(const CommPhase& ph, TransferSize size);
// The phases alone, one after another, no contention: the sum of their longest flow's
// alpha-beta time on the analytic bytes. O(distinct routes).
Duration AnalyticTime(std::span<const CommPhase> phases, TransferSize size);
// Fills ph.classes from its flows. O(F log F) for F flows.
void FinishPhase(CommPhase& ph);

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_NETWORK_PHASE_H_
