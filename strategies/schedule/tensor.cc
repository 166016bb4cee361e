// Tensor parallelism (Megatron-LM; Korthikanti et al. 2022 for sequence parallelism): the tp
// collectives around each block of a layer. Every one moves a full b x s x h activation (or its
// gradient) in 16 bits over the tp group (Korthikanti et al. 2022 Section 4.2.2: a t-way
// all-reduce, or with sequence parallelism an all-gather and a reduce-scatter of the same
// volume). They run on the comm stream; the compute that needs their result waits.
// Thread-safety: one builder per thread.
#include <vector>

#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using topology::Axis;

int32_t StageBuilder::TpCollective(CollectiveKind kind, Phase phase, int32_t layer, int32_t unit,
                                   int32_t mb, std::initializer_list<int32_t> deps, Bytes buffer) {
  Op op = CollectiveOp(kind, State::kActivations, GroupKind::kAxis, ctx_.tp,
                       buffer.count() > 0 ? buffer : pc_.tp_buffer, phase, unit, mb);
  op.axis = Axis::kTensor;
  op.layer = layer;
  return Add(op, deps);
}

// A block's closing collective: the reduce-scatter into sequence shards (SP) or the
// all-reduce of the partial outputs.
CollectiveKind StageBuilder::TpClosing() const {
  return ctx_.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
}

// One tensor-parallel block (attention or MLP; forward, recompute or backward-input): with
// sequence parallelism an all-gather of the sequence-sharded input, then the compute, then the
// reduce-scatter (SP) or all-reduce of its output. In backward the roles are the conjugates
// (Megatron's f and g: the all-reduce of the input gradient; under SP the all-gather of the
// output gradient and the reduce-scatter of the input gradient), the same kinds in the same
// order. `chain` is the collective whose result the block reads; returns the block's closing
// collective, and its compute op in *compute.
int32_t StageBuilder::TpBlock(const Op& work, int32_t gate, int32_t chain, int32_t* compute,
                              bool holds_attention) {
  if (ctx_.options->tp_comm_overlap && !(holds_attention && ctx_.cp > 1)) {
    return TpBlockChunked(work, gate, chain, compute, holds_attention);
  }
  int32_t before = chain;
  if (ctx_.sp) {
    before = TpCollective(CollectiveKind::kAllGather, work.phase, work.layer, work.unit,
                          work.micro_batch, {chain});
  }
  *compute = holds_attention ? Attention(work, gate, before) : Add(work, {gate, before});
  return TpCollective(TpClosing(), work.phase, work.layer, work.unit, work.micro_batch, {*compute});
}

// ScheduleOptions::tp_comm_overlap: tp chunks of the work and of every collective, split
// exactly (remainders spread by Split). Under SP the chunks' all-gathers are issued first.
int32_t StageBuilder::TpBlockChunked(const Op& work, int32_t gate, int32_t chain, int32_t* compute,
                                     bool holds_attention) {
  const std::vector<int64_t> ones(static_cast<size_t>(ctx_.tp), 1);
  const std::vector<int64_t> buffers = Split(pc_.tp_buffer.count(), ones);
  const std::vector<int64_t> reads = Split(work.bytes_read.count(), ones);
  const std::vector<int64_t> writes = Split(work.bytes_written.count(), ones);
  const std::vector<int64_t> streamed = Split(work.elementwise_bytes.count(), ones);
  std::vector<int32_t> gathers(static_cast<size_t>(ctx_.tp), -1);
  if (ctx_.sp) {
    for (size_t k = 0; k < gathers.size(); ++k) {
      gathers[k] = TpCollective(CollectiveKind::kAllGather, work.phase, work.layer, work.unit,
                                work.micro_batch, {k == 0 ? chain : -1}, Bytes::Count(buffers[k]));
    }
  }
  int32_t close = -1;
  for (size_t k = 0; k < gathers.size(); ++k) {
    Op part = work;
    part.flops = Flops::Count(work.flops.count() / static_cast<double>(ctx_.tp));
    part.bytes_read = Bytes::Count(reads[k]);
    part.bytes_written = Bytes::Count(writes[k]);
    part.elementwise_bytes = Bytes::Count(streamed[k]);
    const int32_t input = ctx_.sp ? gathers[k] : (k == 0 ? chain : -1);
    *compute = holds_attention ? Attention(part, k == 0 ? gate : -1, input)
                               : Add(part, {k == 0 ? gate : -1, input});
    close = TpCollective(TpClosing(), work.phase, work.layer, work.unit, work.micro_batch,
                         {*compute}, Bytes::Count(buffers[k]));
  }
  return close;
}

}  // namespace placesim::strategies::schedule_internal
