// Shared pieces of the collective algorithms (see algorithm.h).
#include "sim/collectives/algorithm.h"

#include <algorithm>
#include <utility>

namespace placesim::sim::collectives {

using strategies::CollectiveKind;

ProtocolCost Algorithm::Cost(const CommPlan& plan, const CollectiveCall& call) const {
  const TransferSize size{call.bytes, call.buffer_bytes};
  ProtocolCost cost;
  if (call.protocol_cost) {
    cost = CheapestProtocol(nccl_row(), call.kind, plan.ranks, plan.phases, plan.on_network, size,
                            plan.pipelined);
  }
  cost.overhead += PipelineFill(plan, size);
  return cost;
}

Duration Algorithm::Estimate(const CommPlan& plan, const CollectiveCall& call) const {
  return PlanTime(plan, TransferSize{call.bytes, call.buffer_bytes}) + Cost(plan, call).overhead;
}

Duration PlanTime(const CommPlan& plan, TransferSize size) {
  if (!plan.pipelined) return AnalyticTime(plan.phases, size);
  Duration longest = Duration::Zero();
  for (size_t k = 0; k < plan.phases.size(); ++k) {
    longest = std::max(longest, AnalyticTime(std::span(plan.phases).subspan(k, 1), size));
  }
  return longest;
}

Duration PipelineFill(const CommPlan& plan, TransferSize size) {
  if (!plan.pipelined) return Duration::Zero();
  const Duration rest = AnalyticTime(plan.phases, size) - PlanTime(plan, size);
  const int64_t chunks = std::max<int64_t>(
      1, (size.buffer_bytes.count() + kPipelineChunk.count() - 1) / kPipelineChunk.count());
  return Duration::Picoseconds(rest.picoseconds() / chunks);
}

std::vector<std::span<const CommPhase>> Transfers(const CommPlan& plan) {
  std::vector<std::span<const CommPhase>> out;
  const std::span<const CommPhase> all(plan.phases);
  bool moves = false;
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k].flows.empty()) continue;
    moves = true;
    if (plan.pipelined) out.push_back(all.subspan(k, 1));
  }
  if (moves && !plan.pipelined) out.push_back(all);
  return out;
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
