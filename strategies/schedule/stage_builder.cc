// StageBuilder: one pipeline stage's layout (units, layers), its passes in PipelineOrder, and
// the layers' forward, recompute and backward, composed from the per-axis blocks (tensor.cc,
// context.cc, expert.cc). See internal/stage_builder.h for the file map and docs/schedule.md
// for what a step holds. Thread-safety: one builder per thread.
#include "strategies/schedule/internal/stage_builder.h"

#include <algorithm>
#include <utility>

#include "strategies/cost/arith.h"

namespace placesim::strategies::schedule_internal {

using cost::CeilDiv;

Op NewOp(OpKind kind, Stream stream, Phase phase, int32_t mb) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.phase = phase;
  op.micro_batch = mb;
  return op;
}

Op ComputeOp(Phase phase, int32_t layer, int32_t unit, int32_t mb, const cost::Work& work) {
  Op op = NewOp(OpKind::kCompute, Stream::kCompute, phase, mb);
  op.layer = layer;
  op.unit = unit;
  op.flops = work.flops;
  op.bytes_read = work.read;
  op.bytes_written = work.written;
  op.elementwise_bytes = work.elementwise;
  return op;
}

Op CollectiveOp(CollectiveKind kind, State state, GroupKind group, int64_t group_size, Bytes buffer,
                Phase phase, int32_t unit, int32_t mb) {
  Op op = NewOp(OpKind::kCollective, Stream::kComm, phase, mb);
  op.unit = unit;
  op.collective = kind;
  op.axis = topology::Axis::kData;
  op.group = group;
  op.group_size = static_cast<int32_t>(group_size);
  op.state = state;
  op.buffer_bytes = buffer;
  return op;
}

Op CopyOp(CopyKind kind, State state, Bytes bytes, Phase phase, int32_t unit, int32_t mb) {
  Op op = NewOp(OpKind::kCopy, Stream::kCopy, phase, mb);
  op.unit = unit;
  op.copy = kind;
  op.state = state;
  op.bytes = bytes;
  return op;
}

int32_t StageBuilder::Add(Op op, std::initializer_list<int32_t> deps) {
  op.deps_begin = static_cast<int32_t>(sched_.deps.size());
  for (int32_t d : deps) {
    if (d >= 0) sched_.deps.push_back(d);
  }
  // overlap_grad_reduce false: the reduce-scatter runs on the compute stream's queue, so the
  // next compute waits for it (DeepSpeed without overlap_comm reduces on the current stream).
  if (op.kind == OpKind::kCompute && blocking_sync_ >= 0) {
    sched_.deps.push_back(blocking_sync_);
    blocking_sync_ = -1;
  }
  op.deps_end = static_cast<int32_t>(sched_.deps.size());
  sched_.ops.push_back(op);
  return static_cast<int32_t>(sched_.ops.size() - 1);
}

int32_t StageBuilder::Alloc(MemoryTag tag, MemorySpace space, Bytes bytes, Stream stream,
                            Phase phase, int32_t layer, int32_t mb,
                            std::initializer_list<int32_t> deps) {
  if (bytes.count() <= 0) return -1;
  Op op = NewOp(OpKind::kAlloc, stream, phase, mb);
  op.layer = layer;
  op.tag = tag;
  op.space = space;
  op.bytes = bytes;
  return Add(op, deps);
}

int32_t StageBuilder::Free(int32_t alloc, Stream stream, Phase phase,
                           std::initializer_list<int32_t> deps) {
  if (alloc < 0) return -1;
  Op op = sched_.ops[static_cast<size_t>(alloc)];
  op.kind = OpKind::kFree;
  op.stream = stream;
  op.phase = phase;
  op.alloc = alloc;
  return Add(op, deps);
}

StageBuilder::StageBuilder(const StepContext& ctx, int stage)
    : ctx_(ctx),
      pc_(ctx.pc),
      stage_(stage),
      first_(stage == 0),
      last_(stage == ctx.pp - 1),
      stage_layers_(ctx.LayersOn(stage)),
      chunks_(ctx.chunks[static_cast<size_t>(stage)]) {
  const Plan& plan = *ctx.plan;
  role_ = &plan.roles.front();
  for (const RankRole& r : plan.roles) {
    if (r.first_stage <= stage && stage <= r.last_stage) role_ = &r;
  }
  // The embedding on the first stage; the output layer on the last, which keeps its own copy
  // of a tied word embedding when it is not also the first (Megatron-LM).
  const ParameterBreakdown& p = ctx.p;
  embedding_local_ = first_ ? CeilDiv(p.embedding, ctx.tp) : 0;
  head_local_ = last_ ? CeilDiv(p.head, ctx.tp) + p.final_norm +
                            (p.head == 0 && !first_ ? pc_.vocab_elements : 0)
                      : 0;
  tied_exchange_ = ctx.pp > 1 && p.head == 0 && (first_ || last_);
  for (const ChunkLayers& chunk : chunks_) {
    expert_ += LayerElements(chunk.first, chunk.first + chunk.count, true);
    local_total_ += LayerElements(chunk.first, chunk.first + chunk.count, false);
  }
  local_total_ += embedding_local_ + head_local_;
  dense_ = local_total_ - expert_;
  // Under ep > 1 the dense and expert gradients are bucketed apart (their groups differ);
  // under S* a unit's expert gradients are reduce-scattered with the unit, not bucketed.
  grad_elements_ = ctx.split_expert ? dense_ : local_total_;
  expert_grad_elements_ = ctx.split_expert && !ctx.t_gather ? expert_ : 0;
  bucket_count_ = ctx.t_gather ? 0 : CeilDiv(grad_elements_, ctx.per_bucket);
  LayOutUnits();
  passes_ = PipelineOrder(ctx.training->pipeline_schedule, ctx.pp, ctx.v, ctx.m, stage);
}

// Parameters this rank holds for layers [begin, end), or only their experts' (each layer by
// its kind in a heterogeneous MoE model).
int64_t StageBuilder::LayerElements(int64_t begin, int64_t end, bool experts_only) const {
  if (!ctx_.mixed) {
    return (end - begin) * (experts_only ? pc_.layer_expert_elements : pc_.layer_elements);
  }
  int64_t sum = 0;
  for (int64_t l = begin; l < end; ++l) {
    const cost::PassCosts& pc = ctx_.PassOf(l);
    sum += experts_only ? pc.layer_expert_elements : pc.layer_elements;
  }
  return sum;
}

// Index of a stage layer in per-micro-batch arrays: its position on this stage, chunk by
// chunk. O(v).
size_t StageBuilder::LocalLayer(int32_t l) const {
  int64_t before = 0;
  for (const ChunkLayers& chunk : chunks_) {
    if (l < chunk.first + chunk.count) return static_cast<size_t>(before + l - chunk.first);
    before += chunk.count;
  }
  return static_cast<size_t>(before);
}

// Units chunk by chunk: the embedding first on the model's first chunk, groups of lpu layers,
// the output layer last on the model's last chunk.
void StageBuilder::LayOutUnits() {
  for (int c = 0; c < ctx_.v; ++c) {
    const auto begin = static_cast<int32_t>(units_.size());
    if (ModelFirst(c)) units_.push_back(Unit{0, 0, kEmbeddingLayer, embedding_local_});
    const ChunkLayers& chunk = chunks_[static_cast<size_t>(c)];
    const int64_t chunk_end = chunk.first + chunk.count;
    for (int64_t l = chunk.first; l < chunk_end; l += ctx_.lpu) {
      const int64_t end = std::min(chunk_end, l + ctx_.lpu);
      units_.push_back(Unit{static_cast<int32_t>(l), static_cast<int32_t>(end), kNoLayer,
                            LayerElements(l, end, false),
                            ctx_.split_expert ? LayerElements(l, end, true) : 0});
    }
    if (ModelLast(c)) units_.push_back(Unit{0, 0, kOutputLayer, head_local_});
    chunk_units_.emplace_back(begin, static_cast<int32_t>(units_.size()));
  }
}

StatusOr<Schedule> StageBuilder::Build() {
  sched_.role = role_->name;
  sched_.stage = stage_;
  sched_.ranks = ctx_.strategy->mesh.world() / ctx_.pp;
  sched_.micro_batches = ctx_.m;
  sched_.units = static_cast<int64_t>(units_.size());
  // Reserved once at the bound (at most kMaxScheduleOps): growing by doubling would copy the
  // ops and fault in about twice their memory. Pages never written cost no memory.
  sched_.ops.reserve(static_cast<size_t>(ctx_.ops_bound));
  StaticAllocs();
  LayOutBuckets();
  PlanUses();
  mbs_.resize(static_cast<size_t>(ctx_.m));
  transient_buckets_ = !ctx_.t_gather && (ctx_.g_sharded || ctx_.host_grads);
  // Blocking exchanges post a stage's sends and receives together between two passes. In
  // plain 1F1B and GPipe a pass's send and the next pass's receive are adjacent, which is
  // Megatron-LM's send_forward_recv_backward and its kin. Interleaved 1F1B's steady state runs
  // a forward and a backward and then exchanges both outputs and both next inputs at once
  // (send_forward_backward_recv_forward_backward in
  // megatron/core/pipeline_parallel/schedules.py): the backward's receive joins the exchange
  // before the forward and the forward's send the one after the backward. Posting them as
  // plain 1F1B does deadlocks there (two stages each waiting in an exchange for the other's
  // next one). When every forward runs before the first backward (m v at most the warm-up)
  // there is no steady state, and Megatron-LM exchanges as plain 1F1B does.
  const auto first_backward = std::find_if(passes_.begin(), passes_.end(),
                                           [](const PipelinePass& ps) { return ps.backward; });
  const bool steady = std::any_of(first_backward, passes_.end(),
                                  [](const PipelinePass& ps) { return !ps.backward; });
  for (size_t p = 0; p < passes_.size(); ++p) {
    const PipelinePass& ps = passes_[p];
    if (ps.backward) {
      BackwardPass(ps);
    } else {
      const bool paired = ctx_.blocking_p2p && ctx_.v > 1 && steady && p + 1 < passes_.size() &&
                          passes_[p + 1].backward;
      ForwardPass(ps, paired ? &passes_[p + 1] : nullptr);
    }
  }
  EmitDeferredSyncs();
  int32_t sync_done = sync_tail_.empty() ? -1 : sync_tail_.back();
  if (tied_exchange_) sync_done = TiedExchange(sync_done);
  OptimizerStep(sync_done);
  RETURN_IF_ERROR(AssignCollectiveBytes());
  return std::move(sched_);
}

void StageBuilder::ForwardPass(const PipelinePass& ps, const PipelinePass* paired) {
  const int32_t mb = ps.micro_batch;
  const int32_t c = ps.chunk;
  MicroBatch& st = mbs_[static_cast<size_t>(mb)];
  const auto [ub, ue] = chunk_units_[static_cast<size_t>(c)];
  if (st.act.empty()) st.act.assign(static_cast<size_t>(stage_layers_), -1);
  Flow f;
  if (!ModelFirst(c)) {
    f.chain = Recv(State::kActivations, Phase::kForward, first_ ? ctx_.pp - 1 : stage_ - 1, mb, c);
  }
  if (paired != nullptr && !ModelLast(paired->chunk)) {
    early_recv_ = Recv(State::kActivations, Phase::kBackwardInput, last_ ? 0 : stage_ + 1,
                       paired->micro_batch, paired->chunk);
  }
  for (int32_t u = ub; u < ue; ++u) {
    const Unit& unit = units_[static_cast<size_t>(u)];
    const auto [j, gate] = BeginUse();
    if (unit.special == kEmbeddingLayer) {
      st.emb_act = Alloc(MemoryTag::kActivations, MemorySpace::kDevice, pc_.embedding_activations,
                         Stream::kCompute, Phase::kForward, kEmbeddingLayer, mb);
      f.last =
          Add(ComputeOp(Phase::kForward, kEmbeddingLayer, u, mb, pc_.embedding_forward), {gate});
      // Vocab-parallel embedding: each tp rank looks up the tokens of its vocabulary slice;
      // the partial outputs are summed (all-reduce, or reduce-scatter into sequence shards).
      if (ctx_.tp > 1) {
        f.chain = TpCollective(TpClosing(), Phase::kForward, kEmbeddingLayer, u, mb, {f.last});
      }
    } else if (unit.special == kOutputLayer) {
      st.head_act = Alloc(MemoryTag::kActivations, MemorySpace::kDevice, pc_.output_activations,
                          Stream::kCompute, Phase::kForward, kOutputLayer, mb);
      f.last =
          Add(ComputeOp(Phase::kForward, kOutputLayer, u, mb, pc_.output_forward), {gate, f.chain});
      f.chain = -1;
    } else {
      for (int32_t l = unit.layer_begin; l < unit.layer_end; ++l) {
        st.act[LocalLayer(l)] = Alloc(
            ctx_.recompute == Recompute::kFull ? MemoryTag::kCheckpoints : MemoryTag::kActivations,
            MemorySpace::kDevice, ctx_.PassOf(l).layer_kept, Stream::kCompute, Phase::kForward, l,
            mb);
        ForwardLayer(l, u, mb, l == unit.layer_begin ? gate : -1, f);
      }
    }
    At(f.last).chunk = c;
    EndUse(j, f.last, Phase::kForward);
  }
  if (!ModelLast(c) && paired != nullptr) {
    held_send_ = HeldSend{mb, c, f.last, f.chain};
  } else if (!ModelLast(c)) {
    Send(State::kActivations, Phase::kForward, last_ ? 0 : stage_ + 1, mb, c, pc_.p2p,
         {f.last, f.chain});
  }
}

// A layer's forward: attention, then the MLP (dense) or router and experts (MoE); under tp
// each block is wrapped in its tp collectives, under cp the attention runs in parts.
void StageBuilder::ForwardLayer(int32_t l, int32_t u, int32_t mb, int32_t gate, Flow& f) {
  const cost::LayerPass& pass = ctx_.PassOf(l).forward;
  if (ctx_.MoeAt(l)) {
    const Op attn = ComputeOp(Phase::kForward, l, u, mb, pass.attention);
    if (ctx_.tp == 1) {
      f.last = Attention(attn, gate, f.chain);
      f.chain = -1;
    } else {
      f.chain = TpBlock(attn, gate, f.chain, &f.last, true);
    }
    const auto [router, experts] = MoeOps(pass, Phase::kForward, l, u, mb);
    f.chain = MoeBlock(router, experts, -1, f.chain, &f.last);
  } else if (ctx_.tp == 1) {
    f.last = Attention(ComputeOp(Phase::kForward, l, u, mb, pass.whole), gate, f.chain);
    f.chain = -1;
  } else {
    f.chain =
        TpBlock(ComputeOp(Phase::kForward, l, u, mb, pass.attention), gate, f.chain, &f.last, true);
    f.chain = TpBlock(ComputeOp(Phase::kForward, l, u, mb, pass.mlp), -1, f.chain, &f.last);
  }
}

void StageBuilder::BackwardPass(const PipelinePass& ps) {
  const int32_t mb = ps.micro_batch;
  const int32_t c = ps.chunk;
  MicroBatch& st = mbs_[static_cast<size_t>(mb)];
  const auto [ub, ue] = chunk_units_[static_cast<size_t>(c)];
  if (transient_buckets_ && st.bucket_allocs.empty()) {
    st.bucket_allocs.assign(buckets_.size(), -1);
    st.expert_bucket_allocs.assign(expert_buckets_.size(), -1);
  }
  int32_t chain = -1;
  if (!ModelLast(c)) {
    chain = early_recv_ >= 0
                ? std::exchange(early_recv_, -1)
                : Recv(State::kActivations, Phase::kBackwardInput, last_ ? 0 : stage_ + 1, mb, c);
  }
  // The op that produces the pass's input gradient (what the send to the previous stage
  // carries): the last backward-input compute, or its closing tp collective. The send also
  // waits for the pass's last compute: Megatron-LM runs a chunk's backward as one autograd
  // call, weight gradients included, and sends after it.
  int32_t input_grad = chain;
  int32_t pass_last = -1;
  for (int32_t u = ue - 1; u >= ub; --u) {
    const Unit& unit = units_[static_cast<size_t>(u)];
    const auto [j, gate] = BeginUse();
    // Under S*, the unit's full gradient lives until its reduce-scatter.
    const int32_t unit_grad = ctx_.t_gather && !ctx_.t_offloaded
                                  ? Alloc(MemoryTag::kGradBuckets, MemorySpace::kDevice,
                                          Bytes::Count(unit.elements * ctx_.bpp.grads),
                                          Stream::kCompute, Phase::kBackwardWeight, kNoLayer, mb)
                                  : -1;
    int32_t last_op = -1;
    if (unit.special == kOutputLayer) {
      input_grad = Add(
          ComputeOp(Phase::kBackwardInput, kOutputLayer, u, mb, pc_.output_backward_input), {gate});
      OpenBuckets(st, false, unit.elements, mb);
      last_op = Add(ComputeOp(Phase::kBackwardWeight, kOutputLayer, u, mb,
                              pc_.OutputBackwardWeight(unit.elements)));
      Free(st.head_act, Stream::kCompute, Phase::kBackwardWeight);
      Produce(st, false, unit.elements, last_op, u, mb);
    } else if (unit.special == kEmbeddingLayer) {
      // The plan counts the embedding's combine once per forward pass, full recompute's
      // second pass included (Megatron re-runs it when the embedding sits inside the first
      // checkpointed chunk); it is issued here, where that pass would run.
      if (ctx_.tp > 1 && ctx_.recompute == Recompute::kFull) {
        TpCollective(TpClosing(), Phase::kRecompute, kEmbeddingLayer, u, mb, {gate});
      }
      OpenBuckets(st, false, unit.elements, mb);
      last_op = Add(
          ComputeOp(Phase::kBackwardWeight, kEmbeddingLayer, u, mb, pc_.embedding_backward_weight),
          {gate, chain});
      chain = -1;
      Free(st.emb_act, Stream::kCompute, Phase::kBackwardWeight);
      Produce(st, false, unit.elements, last_op, u, mb);
    } else {
      last_op = BackwardLayers(unit, u, gate, st, mb, chain, input_grad);
    }
    At(last_op).chunk = c;
    EndUse(j, last_op, Phase::kBackwardInput);
    if (ctx_.t_gather) {
      // The dense part over the shard group; the expert part (ep > 1) after it over the
      // expert replica group. The last sync frees the unit's gradient buffer.
      const bool experts = unit.expert > 0;
      EmitSync(u, unit.elements - unit.expert, last_op, experts ? -1 : unit_grad, u, mb);
      if (experts) EmitExpertSync(unit.expert, last_op, unit_grad, u, mb);
    }
    pass_last = last_op;
  }
  last_backward_ = pass_last;
  if (!ModelFirst(c)) {
    Send(State::kActivations, Phase::kBackwardInput, first_ ? ctx_.pp - 1 : stage_ - 1, mb, c,
         pc_.p2p, {input_grad, pass_last});
  }
  if (held_send_.mb >= 0) {
    const HeldSend h = std::exchange(held_send_, HeldSend{});
    Send(State::kActivations, Phase::kForward, last_ ? 0 : stage_ + 1, h.mb, h.chunk, pc_.p2p,
         {h.last, h.chain});
  }
}

// The layers of a unit in reverse: [recompute], backward-input, backward-weight, then the
// frees of what the layer kept and rebuilt, and the gradient buckets it completes. Returns
// the last backward-weight op.
int32_t StageBuilder::BackwardLayers(const Unit& unit, int32_t u, int32_t gate, MicroBatch& st,
                                     int32_t mb, int32_t& chain, int32_t& input_grad) {
  int32_t last_op = -1;
  for (int32_t l = unit.layer_end - 1; l >= unit.layer_begin; --l) {
    const cost::PassCosts& pc = ctx_.PassOf(l);
    const int64_t expert_elements = pc.layer_expert_elements;
    const int64_t dense_grads =
        ctx_.split_expert ? pc.layer_elements - expert_elements : pc.layer_elements;
    const int32_t first_dep = l == unit.layer_end - 1 ? gate : -1;
    int32_t rebuilt = -1;
    int32_t rebuilt_by = -1;  // full recompute under tp: its closing collective
    if (ctx_.recompute != Recompute::kNone) {
      // Recompute restarts from what the layer kept (full: its input, which is also the first
      // LayerNorm's input, one of the 34 s b h), so it rebuilds only the rest.
      rebuilt = Alloc(MemoryTag::kActivations, MemorySpace::kDevice, pc.layer_full - pc.layer_kept,
                      Stream::kCompute, Phase::kRecompute, l, mb);
      // A distributed saved input is all-gathered over tp first, into the rebuilt buffer, when
      // the layer's backward begins (Megatron-LM gathers it in its checkpoint's backward, on
      // the compute stream): after the buffer's allocation, which follows the previous op.
      const int32_t input = ctx_.distribute_saved
                                ? TpCollective(CollectiveKind::kAllGather, Phase::kRecompute, l, u,
                                               mb, {first_dep, rebuilt})
                                : first_dep;
      rebuilt_by = RecomputeLayer(l, u, mb, input);
    }
    // After the recompute, what the framework released in it comes back for the backward.
    const int32_t refetched =
        ctx_.recompute == Recompute::kFull
            ? RefetchForBackward(l, u, mb, static_cast<int32_t>(sched_.ops.size()) - 1)
            : -1;
    const int32_t input_gate = ctx_.recompute == Recompute::kNone ? first_dep : refetched;
    input_grad = BackwardInputLayer(l, u, mb, input_gate, rebuilt_by, chain);
    if (!ctx_.t_gather) OpenBuckets(st, false, dense_grads, mb);
    if (ctx_.split_expert) OpenBuckets(st, true, expert_elements, mb);
    last_op = Add(ComputeOp(Phase::kBackwardWeight, l, u, mb, pc.backward_weight));
    Free(rebuilt, Stream::kCompute, Phase::kBackwardWeight);
    Free(st.act[LocalLayer(l)], Stream::kCompute, Phase::kBackwardWeight);
    if (!ctx_.t_gather) Produce(st, false, dense_grads, last_op, u, mb);
    if (ctx_.split_expert) Produce(st, true, expert_elements, last_op, u, mb);
  }
  return last_op;
}

// Full recompute re-runs the forward, its tp collectives and all-to-alls included; selective
// recompute rebuilds the attention core from the kept Q, K and V. Returns the closing
// collective the backward must wait for (-1 when the compute stream orders them).
int32_t StageBuilder::RecomputeLayer(int32_t l, int32_t u, int32_t mb, int32_t gate) {
  const cost::LayerPass& again = ctx_.PassOf(l).recompute_pass;
  const bool full = ctx_.recompute == Recompute::kFull;
  int32_t rebuilt_by = -1;
  int32_t work = -1;
  if (ctx_.MoeAt(l) && full) {
    const Op attn = ComputeOp(Phase::kRecompute, l, u, mb, again.attention);
    if (ctx_.tp > 1) {
      rebuilt_by = TpBlock(attn, gate, -1, &work, true);
    } else {
      Attention(attn, gate, -1);
    }
    const auto [router, experts] = MoeOps(again, Phase::kRecompute, l, u, mb);
    rebuilt_by = MoeBlock(router, experts, -1, rebuilt_by, &work);
  } else if (ctx_.tp > 1 && full) {
    rebuilt_by =
        TpBlock(ComputeOp(Phase::kRecompute, l, u, mb, again.attention), gate, -1, &work, true);
    rebuilt_by = TpBlock(ComputeOp(Phase::kRecompute, l, u, mb, again.mlp), -1, rebuilt_by, &work);
  } else if (full) {
    Attention(ComputeOp(Phase::kRecompute, l, u, mb, again.whole), gate, -1);
  } else {
    Add(ComputeOp(Phase::kRecompute, l, u, mb, again.whole), {gate});
  }
  return rebuilt_by;
}

// A layer's backward-input: the MLP block (experts) first, then attention; under tp each
// closes with the collective of its input gradient, which the next block (or the layer below)
// reads. Returns the op producing the layer's input gradient; `chain` is updated.
int32_t StageBuilder::BackwardInputLayer(int32_t l, int32_t u, int32_t mb, int32_t gate,
                                         int32_t rebuilt_by, int32_t& chain) {
  const cost::LayerPass& back = ctx_.PassOf(l).backward_input;
  // Both are on the comm stream: the later one ends after the other.
  const int32_t after = std::max(chain, rebuilt_by);
  int32_t work = -1;
  if (ctx_.MoeAt(l)) {
    const Op attn = ComputeOp(Phase::kBackwardInput, l, u, mb, back.attention);
    const auto [router, experts] = MoeOps(back, Phase::kBackwardInput, l, u, mb);
    chain = MoeBlock(router, experts, gate, after, &work);
    if (ctx_.tp == 1) {
      const int32_t input_grad = Attention(attn, -1, chain);
      chain = -1;
      return input_grad;
    }
    chain = TpBlock(attn, -1, chain, &work, true);
    return chain;
  }
  if (ctx_.tp == 1) {
    const int32_t input_grad =
        Attention(ComputeOp(Phase::kBackwardInput, l, u, mb, back.whole), gate, chain);
    chain = -1;
    return input_grad;
  }
  chain = TpBlock(ComputeOp(Phase::kBackwardInput, l, u, mb, back.mlp), gate, after, &work);
  chain =
      TpBlock(ComputeOp(Phase::kBackwardInput, l, u, mb, back.attention), -1, chain, &work, true);
  return chain;
}

}  // namespace placesim::strategies::schedule_internal
