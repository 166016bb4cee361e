// Context parallelism: the attention of a layer pass when each cp rank holds s / cp tokens and
// its queries attend to all s keys. Ring attention (Liu et al. 2023) runs the pass in cp equal
// parts, part k (k >= 1) computing against the K/V chunk the k-th ring exchange brought in;
// the all-gather variant (Llama 3) gathers all K/V first. Thread-safety: one builder per
// thread.
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

// The exchanges start once part 0 has made K and V, so they overlap the parts before them; in
// backward each part also passes on the K/V gradients it accumulated. Part 0 takes the
// remainders of the bytes so the parts sum to the whole. Returns the last part.
int32_t StageBuilder::Attention(const Op& work, int32_t d1, int32_t d2) {
  const int64_t cp = ctx_.cp;
  if (cp == 1) return Add(work, {d1, d2});
  if (ctx_.training->context_parallel_comm == ContextParallelComm::kAllGather) {
    return AttentionAllGather(work, d1, d2);
  }
  Op part = work;
  part.flops = Flops::Count(work.flops.count() / static_cast<double>(cp));
  part.bytes_read = Bytes::Count(work.bytes_read.count() / cp);
  part.bytes_written = Bytes::Count(work.bytes_written.count() / cp);
  part.elementwise_bytes = Bytes::Count(work.elementwise_bytes.count() / cp);
  Op first_part = part;
  first_part.bytes_read = work.bytes_read - part.bytes_read * (cp - 1);
  first_part.bytes_written = work.bytes_written - part.bytes_written * (cp - 1);
  first_part.elementwise_bytes = work.elementwise_bytes - part.elementwise_bytes * (cp - 1);
  int32_t prev = Add(first_part, {d1, d2});
  const int32_t kv_ready = prev;
  Op exchange = CollectiveOp(CollectiveKind::kSendRecv, State::kActivations, GroupKind::kAxis, cp,
                             pc_.kv, work.phase, work.unit, work.micro_batch);
  exchange.axis = Axis::kContext;
  exchange.layer = work.layer;
  for (int64_t k = 1; k < cp; ++k) {
    prev = Add(part, {Add(exchange, {kv_ready})});
    if (work.phase == Phase::kBackwardInput) Add(exchange, {prev});
  }
  return prev;
}

// The full K/V first, the attention whole, and in backward the reduce-scatter of the K/V
// gradients after it. Nothing overlaps: each waits for the one before (the layer's next work
// needs the reduced gradients).
int32_t StageBuilder::AttentionAllGather(const Op& work, int32_t d1, int32_t d2) {
  Op gather = CollectiveOp(CollectiveKind::kAllGather, State::kActivations, GroupKind::kAxis,
                           ctx_.cp, pc_.kv * ctx_.cp, work.phase, work.unit, work.micro_batch);
  gather.axis = Axis::kContext;
  gather.layer = work.layer;
  int32_t done = Add(work, {Add(gather, {d1, d2})});
  if (work.phase == Phase::kBackwardInput) {
    Op scatter = gather;
    scatter.collective = CollectiveKind::kReduceScatter;
    done = Add(scatter, {done});
  }
  return done;
}

}  // namespace placesim::strategies::schedule_internal
