// Shared pieces of the collective algorithms (see algorithm.h).
#include "sim/collectives/algorithm.h"

#include <utility>

namespace placesim::sim::collectives {

using strategies::CollectiveKind;

ProtocolCost Algorithm::Cost(const CommPlan& plan, const CollectiveCall& call) const {
  if (!call.protocol_cost) return {};
  return CheapestProtocol(nccl_row(), call.kind, plan.ranks, plan.phases, plan.on_network,
                          TransferSize{call.bytes, call.buffer_bytes});
}

Duration Algorithm::Estimate(const CommPlan& plan, const CollectiveCall& call) const {
  return AnalyticTime(plan.phases, TransferSize{call.bytes, call.buffer_bytes}) +
         Cost(plan, call).overhead;
}

bool SplitsBuffer(const CollectiveCall& call) {
  return (call.kind == CollectiveKind::kAllReduce || call.kind == CollectiveKind::kReduceScatter ||
          call.kind == CollectiveKind::kAllGather) &&
         call.buffer_bytes.count() > 0;
}

int64_t RingSteps(CollectiveKind kind, int64_t n) {
  if (n <= 1) return 0;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1);
    case CollectiveKind::kSendRecv:
      return 1;
    default:
      return n - 1;
  }
}

Status AddRing(Routes& routes, const std::vector<VertexId>& ring, const char* what,
               CommPhase& phase) {
  const size_t n = ring.size();
  if (n < 2) return Status();
  for (size_t k = 0; k < n; ++k) {
    ASSIGN_OR_RETURN(FlowPath p, routes.Between(ring[k], ring[(k + 1) % n], what));
    phase.flows.push_back(std::move(p));
  }
  return Status();
}

Status AddAllPairs(Routes& routes, const std::vector<VertexId>& members, const char* what,
                   CommPhase& phase) {
  for (VertexId from : members) {
    for (VertexId to : members) {
      if (from == to) continue;
      ASSIGN_OR_RETURN(FlowPath f, routes.Between(from, to, what));
      phase.flows.push_back(std::move(f));
    }
  }
  return Status();
}

}  // namespace placesim::sim::collectives
