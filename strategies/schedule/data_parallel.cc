// Data parallelism and ZeRO (Rajbhandari et al. 2020), FSDP, hybrid sharding and offload on
// the dp x cp ranks of a stage: the static allocs of the model states, the gradient buckets
// and their synchronization (all-reduce, or reduce-scatter when gradients or the optimizer are
// sharded), the per-unit all-gathers of gathered parameters with their prefetch, the offload
// copies, and the optimizer step with the all-gather of updated shards. Expert states (ep > 1)
// are bucketed apart and synchronized over the dp / ep ranks holding the same experts.
// Thread-safety: one builder per thread.
#include <algorithm>
#include <map>
#include <utility>

#include "strategies/cost/arith.h"
#include "strategies/schedule/internal/stage_builder.h"

namespace placesim::strategies::schedule_internal {

using cost::CeilDiv;

namespace {

// A data-parallel collective: on the data-parallel communicator's stream (ops.h, Stream).
template <typename... Args>
Op DpCollectiveOp(Args&&... args) {
  Op op = CollectiveOp(std::forward<Args>(args)...);
  op.stream = Stream::kDpComm;
  return op;
}

}  // namespace

// This rank's elements of a state on this stage: the dense and expert parts sharded apart.
int64_t StageBuilder::Elements(State st) const {
  const bool sh = ctx_.shard && IsShardedMode(ctx_.mode(st));
  return sh ? CeilDiv(dense_, ctx_.n) + CeilDiv(expert_, ctx_.expert_n) : dense_ + expert_;
}

// This rank's shard of each bucket / unit, for copies of shards (sums to the shard).
std::vector<int64_t> StageBuilder::ShardParts(State st, int64_t per,
                                              const std::vector<int64_t>& weights) const {
  return Split(Elements(st) * per, weights);
}

// Params, grads, optimizer and staging on the device as the plan counts them, then the
// offloaded states on the host or NVMe; never freed (they outlive the step).
void StageBuilder::StaticAllocs() {
  const MemoryBreakdown& mem = role_->memory;
  const auto device = [&](MemoryTag tag, Bytes bytes) {
    Alloc(tag, MemorySpace::kDevice, bytes, Stream::kCompute, Phase::kStep, kNoLayer, -1);
  };
  device(MemoryTag::kParams, mem.params);
  device(MemoryTag::kGrads, mem.grads);
  device(MemoryTag::kOptimizer, mem.optimizer);
  device(MemoryTag::kStaging, mem.offload_staging);
  const std::pair<State, MemoryTag> offloadable[] = {{State::kParams, MemoryTag::kParams},
                                                     {State::kOptimizer, MemoryTag::kOptimizer},
                                                     {State::kGrads, MemoryTag::kGrads}};
  for (const auto& [st, tag] : offloadable) {
    if (OffloadTargetOf(*ctx_.strategy, st) == OffloadTarget::kNone) continue;
    const int64_t per = st == State::kParams      ? ctx_.bpp.params
                        : st == State::kOptimizer ? ctx_.bpp.optimizer
                                                  : ctx_.bpp.grads;
    Alloc(tag, ctx_.target(st), Bytes::Count(Elements(st) * per), Stream::kHost, Phase::kStep,
          kNoLayer, -1);
  }
}

// Gradient buckets over the full gradient in backward order (replicated params): chunks from
// the last to the first, each from its last unit to its first.
void StageBuilder::LayOutBuckets() {
  const int64_t per = ctx_.per_bucket;
  if (!ctx_.t_gather) {
    buckets_.reserve(static_cast<size_t>(bucket_count_));
    for (int64_t e = 0; e < grad_elements_; e += per)
      buckets_.push_back(Bucket{e, std::min(grad_elements_, e + per)});
  }
  for (int64_t e = 0; e < expert_grad_elements_; e += per)
    expert_buckets_.push_back(Bucket{e, std::min(expert_grad_elements_, e + per)});
  for (const Bucket& k : buckets_) bucket_weights_.push_back(k.end - k.begin);
  for (const Unit& u : units_) unit_weights_.push_back(u.elements);
  if (ctx_.o_offloaded) {
    grad_d2h_per_bucket_ = ShardParts(State::kOptimizer, ctx_.bpp.grads,
                                      ctx_.t_gather ? unit_weights_ : bucket_weights_);
  }
}

// Sharded gradients sync every micro-batch, and gradients bound for the host leave every
// micro-batch; replicated ones after the last (DDP no_sync) unless
// sync_grads_every_micro_batch.
bool StageBuilder::SyncNow(int64_t mb) const {
  if (ctx_.g_sharded || ctx_.host_grads) return true;
  return ctx_.options->sync_grads_every_micro_batch || mb == ctx_.m - 1;
}

// The sync of dense part k (bucket or unit) of micro-batch mb, its buffer `full` elements.
// `ready` is the backward op that completes it; `bucket_alloc` the transient full-gradient
// buffer to free after the reduce-scatter (-1 when the grads are resident).
void StageBuilder::EmitSync(int64_t k, int64_t full, int32_t ready, int32_t bucket_alloc,
                            int32_t unit, int64_t mb) {
  const bool last_mb = mb == ctx_.m - 1;
  if (ctx_.dpc == 1) {  // nothing to synchronize: the optimizer waits for the backward only
    int32_t done = ready;
    if (ctx_.o_offloaded && (ctx_.host_grads || last_mb)) {
      // One rank with the optimizer on the host: the gradient goes out as it is (every
      // micro-batch when the host accumulates it, else once, after the last).
      const Bytes part = Bytes::Count(grad_d2h_per_bucket_[static_cast<size_t>(k)]);
      done = Add(CopyOp(CopyKind::kDeviceToHost, State::kGrads, part, Phase::kBackwardWeight, unit,
                        static_cast<int32_t>(mb)),
                 {ready});
      d2h_ops_.push_back(done);
      Free(bucket_alloc, Stream::kCopy, Phase::kBackwardWeight, {done});
    }
    if (last_mb) sync_tail_.push_back(done);
    return;
  }
  const Bytes buffer = Bytes::Count(full * ctx_.bpp.grads);
  const auto mb32 = static_cast<int32_t>(mb);
  const Phase phase = Phase::kBackwardWeight;
  int32_t last_op = -1;
  if (ctx_.grads_reduce_scattered) {
    last_op = Add(DpCollectiveOp(CollectiveKind::kReduceScatter, State::kGrads, ctx_.shard_group,
                                 ctx_.n, buffer, phase, unit, mb32),
                  {ready});
    Free(bucket_alloc, Stream::kDpComm, phase, {last_op});
    if (ctx_.o_offloaded) {
      const Bytes shard = Bytes::Count(grad_d2h_per_bucket_[static_cast<size_t>(k)]);
      last_op =
          Add(CopyOp(CopyKind::kDeviceToHost, State::kGrads, shard, phase, unit, mb32), {last_op});
      d2h_ops_.push_back(last_op);
    }
    if (ctx_.replicas > 1 && last_mb) {
      // Hybrid sharding: the shard is all-reduced over the replica group once per step.
      last_op =
          Add(DpCollectiveOp(CollectiveKind::kAllReduce, State::kGrads, GroupKind::kReplicaGroup,
                             ctx_.replicas, Bytes::Count(CeilDiv(full, ctx_.n) * ctx_.bpp.grads),
                             phase, unit, mb32),
              {last_op});
    }
  } else {
    last_op = Add(DpCollectiveOp(CollectiveKind::kAllReduce, State::kGrads, GroupKind::kAxis,
                                 ctx_.dpc, buffer, phase, unit, mb32),
                  {ready});
  }
  if (ctx_.grads_reduce_scattered && !ctx_.overlap_grad_reduce && !ctx_.defer_grad_sync) {
    blocking_sync_ = last_op;
  }
  if (last_mb) sync_tail_.push_back(last_op);
}

// Expert gradients (ep > 1, CheckScope: no hybrid groups): over the dp / ep ranks holding the
// same experts, all-reduced, or reduce-scattered for a sharded optimizer (ZeRO-1) or sharded
// gradients (ZeRO-2/3, every micro-batch, from a transient full bucket or unit gradient).
void StageBuilder::EmitExpertSync(int64_t full, int32_t ready, int32_t bucket_alloc, int32_t unit,
                                  int64_t mb) {
  int32_t last_op = ready;
  if (ctx_.expert_n > 1) {
    last_op = Add(DpCollectiveOp(ctx_.grads_reduce_scattered ? CollectiveKind::kReduceScatter
                                                             : CollectiveKind::kAllReduce,
                                 State::kGrads, ctx_.expert_group, ctx_.expert_n,
                                 Bytes::Count(full * ctx_.bpp.grads), Phase::kBackwardWeight, unit,
                                 static_cast<int32_t>(mb)),
                  {ready});
  }
  Free(bucket_alloc, Stream::kDpComm, Phase::kBackwardWeight, {last_op});
  if (mb == ctx_.m - 1) sync_tail_.push_back(last_op);
}

// Before a backward-weight op that writes `elems` more gradient elements: allocate the
// transient buckets it starts (ZeRO-2: a bucket's full gradient lives until its
// reduce-scatter).
void StageBuilder::OpenBuckets(MicroBatch& st, bool expert, int64_t elems, int32_t mb) {
  if (!transient_buckets_) return;
  const std::vector<Bucket>& list = expert ? expert_buckets_ : buckets_;
  std::vector<int32_t>& allocs = expert ? st.expert_bucket_allocs : st.bucket_allocs;
  const int64_t produced = expert ? st.expert_produced : st.produced;
  for (size_t k = expert ? st.next_expert_bucket : st.next_bucket;
       k < list.size() && list[k].begin < produced + elems; ++k) {
    if (allocs[k] < 0) {
      allocs[k] = Alloc(MemoryTag::kGradBuckets, MemorySpace::kDevice,
                        Bytes::Count((list[k].end - list[k].begin) * ctx_.bpp.grads),
                        Stream::kCompute, Phase::kBackwardWeight, kNoLayer, mb);
    }
  }
}

// After it: synchronize the buckets it completes.
void StageBuilder::Produce(MicroBatch& st, bool expert, int64_t elems, int32_t bwd_weight,
                           int32_t unit, int32_t mb) {
  int64_t& produced = expert ? st.expert_produced : st.produced;
  produced += elems;
  if (!SyncNow(mb)) return;
  const std::vector<Bucket>& list = expert ? expert_buckets_ : buckets_;
  const std::vector<int32_t>& allocs = expert ? st.expert_bucket_allocs : st.bucket_allocs;
  size_t& next = expert ? st.next_expert_bucket : st.next_bucket;
  for (; next < list.size() && list[next].end <= produced; ++next) {
    const Bucket& k = list[next];
    if (ctx_.defer_grad_sync && mb == ctx_.m - 1) {
      deferred_syncs_.push_back(DeferredSync{expert, static_cast<int64_t>(next), unit});
      continue;
    }
    const int32_t alloc = transient_buckets_ ? allocs[next] : -1;
    if (expert) {
      EmitExpertSync(k.end - k.begin, bwd_weight, alloc, unit, mb);
    } else {
      EmitSync(static_cast<int64_t>(next), k.end - k.begin, bwd_weight, alloc, unit, mb);
    }
  }
}

// defer_grad_sync: the last micro-batch's syncs, after the stage's last backward op (the
// compute stream runs in order, so every gradient is complete by then). The gradients are
// resident (no transient buckets), so there is no buffer to free.
void StageBuilder::EmitDeferredSyncs() {
  for (const DeferredSync& d : deferred_syncs_) {
    const Bucket& k = (d.expert ? expert_buckets_ : buckets_)[static_cast<size_t>(d.bucket)];
    if (d.expert) {
      EmitExpertSync(k.end - k.begin, last_backward_, -1, d.unit, ctx_.m - 1);
    } else {
      EmitSync(d.bucket, k.end - k.begin, last_backward_, -1, d.unit, ctx_.m - 1);
    }
  }
}

// Parameter uses under S* / O, in the order the passes run them (a forward pass uses its
// chunk's units first to last, a backward pass last to first); the first depth + 1 gathers
// are issued up front.
void StageBuilder::PlanUses() {
  if (!ctx_.t_gather) return;
  for (const PipelinePass& ps : passes_) {
    const auto [ub, ue] = chunk_units_[static_cast<size_t>(ps.chunk)];
    for (int32_t k = 0; k < ue - ub; ++k)
      use_list_.push_back(Use{ps.backward ? ue - 1 - k : ub + k, ps.micro_batch, ps.backward});
  }
  if (ctx_.t_offloaded) fetch_parts_ = ShardParts(State::kParams, ctx_.bpp.params, unit_weights_);
  const size_t uses = use_list_.size();
  gather_of_.assign(uses, -1);
  gathered_.assign(uses, -1);
  release_of_.assign(uses, -1);
  held_with_.assign(uses, -1);
  if (!ctx_.reshard) {
    // Each backward use reads the buffer of the latest forward use of its unit and micro-batch.
    std::map<std::pair<int32_t, int32_t>, int64_t> forward_of;
    for (size_t j = 0; j < uses; ++j) {
      const Use& use = use_list_[j];
      const std::pair<int32_t, int32_t> key{use.unit, use.mb};
      if (!use.backward) {
        forward_of[key] = static_cast<int64_t>(j);
        continue;
      }
      const auto it = forward_of.find(key);
      if (it == forward_of.end()) continue;
      held_with_[j] = it->second;
      held_with_[static_cast<size_t>(it->second)] = static_cast<int64_t>(j);
      forward_of.erase(it);
    }
  }
  for (int64_t j = 0; j <= ctx_.depth; ++j) EmitGather(j);
}

// The weights by which a unit's dense gather is split into collectives: {1} (one) per unit,
// or per layer its weight matrices' sizes (Q, K and V projections as one, the output
// projection, each MLP matrix). MoE layers split the same way, their expert part aside;
// multi-latent attention is counted as if it had the plain projections of its head width.
std::vector<int64_t> StageBuilder::GatherParts(const Unit& unit) const {
  if (!ctx_.gather_per_parameter || unit.layer_end == unit.layer_begin) return {1};
  const std::vector<int64_t> layer = LayerWeightMatrices(ctx_.model->transformer);
  std::vector<int64_t> parts;
  for (int32_t l = unit.layer_begin; l < unit.layer_end; ++l)
    parts.insert(parts.end(), layer.begin(), layer.end());
  return parts;
}

// The gather of use j: it waits until use j - depth - 1 released its buffer. Offloaded
// parameters are first copied in (H2D or NVMe read) into staging; gathered ones get a buffer.
void StageBuilder::EmitGather(int64_t j) {
  if (j >= static_cast<int64_t>(use_list_.size())) return;
  const Use& use = use_list_[static_cast<size_t>(j)];
  if (use.backward && held_with_[static_cast<size_t>(j)] >= 0) {
    // Held since its forward: nothing to gather; the compute stream already waited for it.
    gathered_[static_cast<size_t>(j)] =
        gathered_[static_cast<size_t>(held_with_[static_cast<size_t>(j)])];
    return;
  }
  const int32_t u = use.unit;
  const int32_t mb = use.mb;
  const Phase phase = use.backward ? Phase::kBackwardInput : Phase::kForward;
  const int64_t waited = j - ctx_.depth - 1;
  const int32_t wait = waited >= 0 ? release_of_[static_cast<size_t>(waited)] : -1;
  const Unit& unit = units_[static_cast<size_t>(u)];
  const Bytes full = Bytes::Count(unit.elements * ctx_.bpp.params);
  int32_t before = wait;
  int32_t buffer = -1;
  if (ctx_.t_offloaded) {
    const CopyKind kind = ctx_.target(State::kParams) == MemorySpace::kNvme
                              ? CopyKind::kNvmeRead
                              : CopyKind::kHostToDevice;
    const Bytes part = Bytes::Count(fetch_parts_[static_cast<size_t>(u)]);
    before = Add(CopyOp(kind, State::kParams, part, phase, u, mb), {wait});
  } else {
    buffer = Alloc(MemoryTag::kGatheredParams, MemorySpace::kDevice, full, Stream::kDpComm, phase,
                   kNoLayer, mb, {wait});
    At(buffer).unit = u;
  }
  gathered_[static_cast<size_t>(j)] = buffer;
  // Under ep > 1 the unit's expert part is gathered apart, over the dp / ep ranks holding the
  // same experts (none when ep = dp: they are whole on every rank). The buffer holds the
  // whole unit either way, as the plan counts it.
  // On one rank (offloaded parameters, dp x cp = 1) the copy alone brings the unit in.
  // Per-parameter gathers: one all-gather per weight matrix, issued back to back on the comm
  // stream; the compute waits for the last.
  const Bytes expert = Bytes::Count(unit.expert * ctx_.bpp.params);
  int32_t last = before;
  if (ctx_.n > 1) {
    for (int64_t part : Split((full - expert).count(), GatherParts(unit))) {
      if (part == 0 && last != before) continue;
      last = Add(DpCollectiveOp(CollectiveKind::kAllGather, State::kParams, ctx_.shard_group,
                                ctx_.n, Bytes::Count(part), phase, u, mb),
                 {before});
    }
  }
  if (unit.expert > 0 && ctx_.expert_n > 1) {
    last = Add(DpCollectiveOp(CollectiveKind::kAllGather, State::kParams, ctx_.expert_group,
                              ctx_.expert_n, expert, phase, u, mb),
               {before});
  }
  gather_of_[static_cast<size_t>(j)] = last;
}

// DeepSpeed ZeRO-3 released these matrices of layer l after its recompute (their backward
// lies at least max_reuse_distance fetched elements later, ctx.refetch) and fetches them
// again: one all-gather each, after the recompute's last op `after`, which the backward
// waits for. They land in the unit's gathered buffer, held from the unit's gather to the end
// of its backward as the plan counts it, so no memory is added. Returns the last, or -1.
int32_t StageBuilder::RefetchForBackward(int32_t l, int32_t u, int32_t mb, int32_t after) {
  if (ctx_.refetch.matrices.empty()) return -1;
  const Bytes layer = Bytes::Count(ctx_.PassOf(l).layer_elements * ctx_.bpp.params);
  int32_t last = -1;
  for (int64_t part : Split(ctx_.refetch.Of(layer).count(), ctx_.refetch.matrices)) {
    if (part == 0) continue;
    last = Add(DpCollectiveOp(CollectiveKind::kAllGather, State::kParams, ctx_.shard_group, ctx_.n,
                              Bytes::Count(part), Phase::kBackwardInput, u, mb),
               {after});
  }
  return last;
}

// Use j begins: its gather must be done (the compute depends on it); issue the gather of use
// j + depth (use j's own gather is already out). Returns {j, its gather} or {-1, -1}.
std::pair<int64_t, int32_t> StageBuilder::BeginUse() {
  if (!ctx_.t_gather) return {-1, -1};
  const int64_t j = next_use_++;
  if (j > 0) EmitGather(j + ctx_.depth);
  return {j, gather_of_[static_cast<size_t>(j)]};
}

void StageBuilder::EndUse(int64_t j, int32_t last_compute, Phase phase) {
  if (!ctx_.t_gather) return;
  const Use& use = use_list_[static_cast<size_t>(j)];
  if (!use.backward && held_with_[static_cast<size_t>(j)] >= 0) {
    // Held for the backward: the rate limiter counts only what is freed, so the next
    // gathers go ahead once this use's compute is issued.
    release_of_[static_cast<size_t>(j)] = last_compute;
    return;
  }
  const int32_t freed = Free(gathered_[static_cast<size_t>(j)], Stream::kCompute, phase);
  release_of_[static_cast<size_t>(j)] = freed >= 0 ? freed : last_compute;
}

// The update on the device shard, or on the host after the gradient shards were copied out
// (then each updated part copied back unless the parameters stream from the host); then, for
// replicated parameters over a sharded optimizer, the updated shards all-gathered.
void StageBuilder::OptimizerStep(int32_t sync_done) {
  std::vector<int32_t> updated;  // per bucket / unit: the op after which its shard is updated
  const std::vector<int64_t>& part_weights = ctx_.t_gather ? unit_weights_ : bucket_weights_;
  const cost::Work opt = pc_.OptimizerStep(Elements(State::kOptimizer));
  if (ctx_.o_offloaded) {
    Op host;
    host.kind = OpKind::kHostCompute;
    host.stream = Stream::kHost;
    host.phase = Phase::kOptimizer;
    host.flops = opt.flops;
    host.bytes_read = opt.read;
    host.bytes_written = opt.written;
    const int32_t step = Add(host, {d2h_ops_.empty() ? sync_done : d2h_ops_.back(), sync_done});
    if (!ctx_.t_offloaded) {
      const std::vector<int64_t> back =
          ShardParts(State::kOptimizer, ctx_.bpp.params, part_weights);
      for (size_t k = 0; k < back.size(); ++k) {
        updated.push_back(
            Add(CopyOp(CopyKind::kHostToDevice, State::kParams, Bytes::Count(back[k]),
                       Phase::kOptimizer, ctx_.t_gather ? static_cast<int32_t>(k) : -1, -1),
                {step}));
      }
    }
  } else {
    const int32_t step = Add(ComputeOp(Phase::kOptimizer, kNoLayer, -1, -1, opt), {sync_done});
    updated.assign(part_weights.size(), step);
  }
  if (!(ctx_.o_sharded && ctx_.mode(State::kParams) == Mode::kReplicated)) return;
  for (size_t k = 0; k < buckets_.size(); ++k) {
    Add(DpCollectiveOp(CollectiveKind::kAllGather, State::kParams, ctx_.shard_group, ctx_.n,
                       Bytes::Count((buckets_[k].end - buckets_[k].begin) * ctx_.bpp.params),
                       Phase::kOptimizer, -1, -1),
        {updated.empty() ? -1 : updated[k]});
  }
  // Expert buckets (ep > 1, optimizer on the device): over the expert replica group.
  for (size_t k = 0; k < expert_buckets_.size() && ctx_.expert_n > 1; ++k) {
    const Bucket& b = expert_buckets_[k];
    Add(DpCollectiveOp(CollectiveKind::kAllGather, State::kParams, ctx_.expert_group, ctx_.expert_n,
                       Bytes::Count((b.end - b.begin) * ctx_.bpp.params), Phase::kOptimizer, -1,
                       -1),
        {updated.empty() ? -1 : updated.back()});
  }
}

}  // namespace placesim::strategies::schedule_internal
