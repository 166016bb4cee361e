// Mixture of experts: a layer's MLP block becomes the router and the experts; with expert
// parallelism (ep > 1) the tokens are dispatched to their experts by an all-to-all over the ep
// group and combined by another (Lepikhin et al. 2021, GShard; Fedus et al. 2022). Each
// all-to-all moves the busiest rank's top_k x cf x b s h x 2 bytes (1/t under SP), as the plan
// counts them. Thread-safety: one builder per thread.
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

std::pair<Op, Op> StageBuilder::MoeOps(const cost::LayerPass& pass, Phase phase, int32_t l,
                                       int32_t u, int32_t mb) const {
  return {ComputeOp(phase, l, u, mb, pass.router), ComputeOp(phase, l, u, mb, pass.experts)};
}

// A dispatch or combine over the ep group after `after`; with ep = 1 nothing, and `after` is
// what the next op reads.
int32_t StageBuilder::AllToAll(const Op& router, int32_t after) {
  if (ctx_.ep == 1) return after;
  Op op = CollectiveOp(CollectiveKind::kAllToAll, State::kActivations, GroupKind::kAxis, ctx_.ep,
                       pc_.all_to_all, router.phase, router.unit, router.micro_batch);
  op.axis = Axis::kExpert;
  op.layer = router.layer;
  return Add(op, {after});
}

// The MoE MLP block, in place of TpBlock's: forward and full recompute run [SP all-gather],
// the router, the dispatch, the experts, the combine [tp combine]; backward-input runs [SP
// all-gather], the combine's gradient, the experts, the dispatch's gradient, the router [tp
// combine]. So a layer moves 2 x (forward passes + 1) all-to-alls per micro-batch. Returns
// what the next block reads (its closing collective; -1 when only the compute stream's order
// links them) and its last compute in *compute.
int32_t StageBuilder::MoeBlock(const Op& router, const Op& experts, int32_t gate, int32_t chain,
                               int32_t* compute) {
  const bool backward = router.phase == Phase::kBackwardInput;
  int32_t before = chain;
  if (ctx_.tp > 1 && ctx_.sp) {
    before = TpCollective(CollectiveKind::kAllGather, router.phase, router.layer, router.unit,
                          router.micro_batch, {chain});
  }
  if (!backward) {
    before = Add(router, {gate, before});
    gate = -1;
  }
  // Without ep the experts read the router's output on the same stream (forward).
  const int32_t work = Add(experts, {gate, ctx_.ep > 1 ? AllToAll(router, before)
                                           : backward  ? before
                                                       : -1});
  int32_t out = AllToAll(router, work);
  *compute = work;
  if (backward) out = *compute = Add(router, {out == work ? -1 : out});
  if (ctx_.tp > 1) {
    return TpCollective(TpClosing(), router.phase, router.layer, router.unit, router.micro_batch,
                        {out});
  }
  return out == *compute ? -1 : out;
}

}  // namespace placesim::strategies::schedule_internal
