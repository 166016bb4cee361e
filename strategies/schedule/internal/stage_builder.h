// Internal to BuildSchedules (strategies/schedule.cc): only the schedule's own files and
// their tests include it. StepContext holds what is derived once per step and shared by every
// pipeline stage; StageBuilder emits the schedule of one stage. Its methods are grouped by axis,
// one file each:
//   stage_builder.cc   layout (units, layers), the pass loop, the layers' forward, recompute
//                      and backward, op primitives
//   tensor.cc          tp collectives and blocks (Megatron f / g, sequence parallelism,
//                      tp_comm_overlap chunks)
//   context.cc         attention under cp (ring exchanges, or the all-gather variant)
//   expert.cc          MoE router / experts and the ep all-to-alls
//   pipeline.cc        sends, receives and matching them across stages
//   data_parallel.cc   static allocs, gradient buckets and their sync, ZeRO gathers,
//                      offload copies, the tied-embedding exchange, the optimizer step
//   volumes.cc         per-device bytes of every collective from the plan
//   scope.cc           what is generated (CheckScope) and the size bound
//   step_context.cc    MakeStepContext: shapes, placement on dp x cp, shared helpers
// Invariant kept while emitting: an op is appended only after every op it depends on, so
// dependencies always point backwards. A dependency of -1 means none and is dropped.
// Thread-safety: a StageBuilder is used by one thread; StepContext is read-only once built.
#ifndef PLACESIM_STRATEGIES_SCHEDULE_INTERNAL_STAGE_BUILDER_H_
#define PLACESIM_STRATEGIES_SCHEDULE_INTERNAL_STAGE_BUILDER_H_

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "strategies/cost/pass_costs.h"
#include "strategies/model.h"
#include "strategies/pipeline.h"
#include "strategies/plan.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"

namespace placesim::strategies::schedule_internal {

bool IsShardedMode(Mode m);

// The group of a dp collective of `group_size` ranks out of `dp` (dp x cp when it spans cp).
GroupKind GroupOf(int64_t group_size, int64_t dp, bool replica);

// Splits `total` into parts proportional to `weights` that sum to `total` exactly: part k is
// floor(total * W_k / W) - floor(total * W_{k-1} / W) with W_k the running sum. O(weights).
std::vector<int64_t> Split(int64_t total, const std::vector<int64_t>& weights);

// Op factories: the fields every op of that kind sets; the caller sets the rest. NewOp sets
// what every op has (kind, stream, phase, micro-batch; -1 for a step-level op).
Op NewOp(OpKind kind, Stream stream, Phase phase, int32_t mb);
Op ComputeOp(Phase phase, int32_t layer, int32_t unit, int32_t mb, const cost::Work& work);
// A collective on the dp axis (the caller moves it to another axis).
Op CollectiveOp(CollectiveKind kind, State state, GroupKind group, int64_t group_size, Bytes buffer,
                Phase phase, int32_t unit, int32_t mb);
Op CopyOp(CopyKind kind, State state, Bytes bytes, Phase phase, int32_t unit, int32_t mb);

// What is derived once per step from the inputs and the plan, shared by all stages.
struct StepContext {
  const ModelSpec* model = nullptr;
  const TrainingSpec* training = nullptr;
  const StrategySpec* strategy = nullptr;
  const ScheduleOptions* options = nullptr;
  const Plan* plan = nullptr;
  ParameterBreakdown p;
  StateBytes bpp;
  cost::PassCosts pc;  // the work of every compute op and the activation buffers
  // A heterogeneous MoE model's dense layers (first_dense_layers, moe_layer_interval): their
  // own work and buffers, from the same attention with a dense MLP (DenseLayerOf).
  bool mixed = false;
  cost::PassCosts pc_dense;

  int64_t dp = 1, tp = 1, cp = 1, ep = 1;
  int pp = 1;
  int v = 1;        // model chunks per stage (interleaved 1F1B), else 1
  int64_t m = 1;    // micro-batches
  int depth = 0;    // prefetch depth of S* / O uses
  bool sp = false;  // effective sequence parallelism
  // Full recompute's kept inputs split over tp, all-gathered before each recompute.
  bool distribute_saved = false;
  bool moe = false;
  Recompute recompute = Recompute::kNone;

  // Placement on dp (x cp: the model states are placed on cp as on dp, CheckScope).
  int64_t dpc = 1;           // dp x cp
  bool shard = false;        // dpc > 1
  bool g_sharded = false;    // gradients sharded (ZeRO-2/3, FSDP)
  bool o_sharded = false;    // optimizer sharded (ZeRO-1 and up)
  bool t_offloaded = false;  // parameters offloaded (streamed in per unit)
  bool t_gather = false;     // parameters gathered per unit (S*, or offloaded)
  bool o_offloaded = false;  // optimizer on the host
  // Gradients and optimizer on the host: every micro-batch's gradient leaves the device
  // (after its reduce-scatter when dp x cp > 1) and is accumulated there.
  bool host_grads = false;
  bool grads_reduce_scattered = false;
  int64_t n = 1;         // ranks of a shard group (all of dp x cp unless hybrid)
  int64_t replicas = 1;  // shard groups on dp (hybrid sharding)
  GroupKind shard_group = GroupKind::kAxis;
  // Expert states (ep > 1) live over the dp / ep ranks holding the same experts.
  bool split_expert = false;
  int64_t expert_n = 1;
  GroupKind expert_group = GroupKind::kAxis;

  // Framework overheads (ScheduleOptions, else FrameworkDefaults of the strategy's preset).
  bool gather_per_parameter = false;  // one all-gather per weight matrix (DeepSpeed ZeRO-3)
  // false: the backward waits for each reduce-scatter of sharded gradients, and replicated
  // gradients are reduced after the stage's last backward op (defer_grad_sync).
  bool overlap_grad_reduce = true;
  bool defer_grad_sync = false;  // !overlap_grad_reduce on replicated, resident gradients
  bool blocking_p2p = false;     // pipeline sends on the compute stream (rendezvous)
  // Gathered units freed after their forward (FULL_SHARD), else held until their backward in
  // the same micro-batch (SHARD_GRAD_OP; streamed parameters are fetched per use either way).
  bool reshard = true;
  // The matrices of every layer gathered again between its full recompute and its backward
  // (DeepSpeed's stage3_max_reuse_distance); empty when nothing is (RefetchApplies).
  LayerRefetch refetch;

  int64_t lpu = 1;         // layers per gather / wrap unit
  int64_t per_bucket = 1;  // gradient elements per bucket
  int64_t max_stage_layers = 0;
  // The layers of each stage's model chunks, [stage][chunk] (PipelineChunkLayers).
  std::vector<std::vector<ChunkLayers>> chunks;
  double ops_bound = 0;  // the most ops a stage can hold (BoundOps)

  Mode mode(State st) const;
  MemorySpace target(State st) const;  // where an offloaded state lives
  int64_t LayersOn(int stage) const;
  // The work of layer `l` (0-based, model-wide) and whether it is an MoE layer.
  bool MoeAt(int64_t l) const { return moe && (!mixed || IsMoeLayer(model->transformer, l)); }
  const cost::PassCosts& PassOf(int64_t l) const { return mixed && !MoeAt(l) ? pc_dense : pc; }
};

// REQUIRES: CheckScope passed for the same inputs. O(pp).
StepContext MakeStepContext(const ModelSpec& model, const TrainingSpec& training,
                            const StrategySpec& strategy, const ScheduleOptions& options,
                            const Plan& plan);

// What BuildSchedules does not generate (kFailedPrecondition / kInvalidArgument, schedule.h).
Status CheckScope(const ModelSpec& model, const StrategySpec& strategy, const Plan& plan,
                  const ScheduleOptions& options);

// Sets ctx.ops_bound, an upper bound on one stage's ops; kOutOfRange past kMaxScheduleOps.
Status BoundOps(StepContext& ctx);

// Sets every kRecv's match to the index of its send (see pipeline.cc). REQUIRES: every
// receive has its send. O(ops log ops).
void MatchReceives(std::vector<Schedule>& stages, int pp);

// The most all-gathers one layer splits into under per-parameter gathers: the attention's
// input and output projections and up to three MLP matrices (GatherParts).
inline constexpr int kMaxGatherParts = 5;

// A gather / wrap unit: the embedding, a group of layers, or the output layer.
struct Unit {
  int32_t layer_begin = 0;  // transformer layers [begin, end); empty for embedding / output
  int32_t layer_end = 0;
  int32_t special = kNoLayer;  // kEmbeddingLayer or kOutputLayer for those units
  int64_t elements = 0;        // parameters, unsharded
  int64_t expert = 0;          // of which expert parameters (ep > 1), gathered apart
};

// A gradient bucket: elements [begin, end) of the gradient in backward order.
struct Bucket {
  int64_t begin = 0;
  int64_t end = 0;
};

// The schedule of one pipeline stage.
class StageBuilder {
 public:
  StageBuilder(const StepContext& ctx, int stage);
  // Emits the step; kInternal when a collective has no counterpart in the plan.
  StatusOr<Schedule> Build();

 private:
  // Per micro-batch state that outlives one pass (interleaved passes of several micro-batches
  // alternate): the activations kept, and the backward's gradient progress.
  struct MicroBatch {
    std::vector<int32_t> act;  // per stage layer
    int32_t emb_act = -1;
    int32_t head_act = -1;
    int64_t produced = 0;  // gradient elements produced so far in its backward
    size_t next_bucket = 0;
    int64_t expert_produced = 0;  // the same for the expert gradients (ep > 1)
    size_t next_expert_bucket = 0;
    std::vector<int32_t> bucket_allocs;
    std::vector<int32_t> expert_bucket_allocs;
  };
  // A use of a unit's parameters under S* / O, in the order the passes run them.
  struct Use {
    int32_t unit = 0;
    int32_t mb = 0;
    bool backward = false;
  };
  // The op that a layer's next block reads: -1 when only the compute stream's order links
  // them. `chain` is the last collective (or receive) whose result the next compute reads.
  struct Flow {
    int32_t chain = -1;
    int32_t last = -1;  // the last compute op
  };

  // ---- op primitives (stage_builder.cc)
  int32_t Add(Op op, std::initializer_list<int32_t> deps = {});
  int32_t Alloc(MemoryTag tag, MemorySpace space, Bytes bytes, Stream stream, Phase phase,
                int32_t layer, int32_t mb, std::initializer_list<int32_t> deps = {});
  int32_t Free(int32_t alloc, Stream stream, Phase phase, std::initializer_list<int32_t> deps = {});
  Op& At(int32_t i) { return sched_.ops[static_cast<size_t>(i)]; }

  // ---- layout and passes (stage_builder.cc)
  void LayOutUnits();
  size_t LocalLayer(int32_t l) const;
  int64_t LayerElements(int64_t begin, int64_t end, bool experts_only) const;
  bool ModelFirst(int chunk) const { return first_ && chunk == 0; }
  bool ModelLast(int chunk) const { return last_ && chunk == ctx_.v - 1; }
  // `paired`: the backward pass that follows in a steady-state step of interleaved 1F1B under
  // blocking_p2p (else null); see Build.
  void ForwardPass(const PipelinePass& ps, const PipelinePass* paired);
  void BackwardPass(const PipelinePass& ps);
  void ForwardLayer(int32_t l, int32_t u, int32_t mb, int32_t gate, Flow& f);
  int32_t RecomputeLayer(int32_t l, int32_t u, int32_t mb, int32_t gate);
  int32_t BackwardInputLayer(int32_t l, int32_t u, int32_t mb, int32_t gate, int32_t rebuilt_by,
                             int32_t& chain);
  int32_t BackwardLayers(const Unit& unit, int32_t u, int32_t gate, MicroBatch& st, int32_t mb,
                         int32_t& chain, int32_t& input_grad);

  // ---- tensor parallelism (tensor.cc)
  int32_t TpCollective(CollectiveKind kind, Phase phase, int32_t layer, int32_t unit, int32_t mb,
                       std::initializer_list<int32_t> deps, Bytes buffer = Bytes::Zero());
  CollectiveKind TpClosing() const;
  int32_t TpBlock(const Op& work, int32_t gate, int32_t chain, int32_t* compute,
                  bool holds_attention = false);
  int32_t TpBlockChunked(const Op& work, int32_t gate, int32_t chain, int32_t* compute,
                         bool holds_attention);

  // ---- context parallelism (context.cc)
  int32_t Attention(const Op& work, int32_t d1, int32_t d2);
  int32_t AttentionAllGather(const Op& work, int32_t d1, int32_t d2);

  // ---- experts (expert.cc)
  std::pair<Op, Op> MoeOps(const cost::LayerPass& pass, Phase phase, int32_t l, int32_t u,
                           int32_t mb) const;
  int32_t AllToAll(const Op& router, int32_t after);
  int32_t MoeBlock(const Op& router, const Op& experts, int32_t gate, int32_t chain,
                   int32_t* compute);

  // ---- pipeline (pipeline.cc)
  int32_t Send(State state, Phase phase, int32_t peer, int32_t mb, int32_t chunk, Bytes bytes,
               std::initializer_list<int32_t> deps);
  int32_t Recv(State state, Phase phase, int32_t peer, int32_t mb, int32_t chunk);
  int32_t TiedExchange(int32_t sync_done);

  // ---- data parallelism (data_parallel.cc)
  int64_t Elements(State st) const;
  std::vector<int64_t> ShardParts(State st, int64_t per, const std::vector<int64_t>& w) const;
  void StaticAllocs();
  void LayOutBuckets();
  bool SyncNow(int64_t mb) const;
  void EmitSync(int64_t k, int64_t full, int32_t ready, int32_t bucket_alloc, int32_t unit,
                int64_t mb);
  void EmitExpertSync(int64_t full, int32_t ready, int32_t bucket_alloc, int32_t unit, int64_t mb);
  void OpenBuckets(MicroBatch& st, bool expert, int64_t elems, int32_t mb);
  void Produce(MicroBatch& st, bool expert, int64_t elems, int32_t bwd_weight, int32_t unit,
               int32_t mb);
  void EmitDeferredSyncs();
  void PlanUses();
  std::vector<int64_t> GatherParts(const Unit& unit) const;
  void EmitGather(int64_t j);
  int32_t RefetchForBackward(int32_t l, int32_t u, int32_t mb, int32_t after);
  std::pair<int64_t, int32_t> BeginUse();
  void EndUse(int64_t j, int32_t last_compute, Phase phase);
  void OptimizerStep(int32_t sync_done);

  // ---- per-device bytes of the collectives (volumes.cc)
  Status AssignCollectiveBytes();

  const StepContext& ctx_;
  const cost::PassCosts& pc_;
  const int stage_;
  const bool first_;
  const bool last_;
  const int64_t stage_layers_;
  const std::vector<ChunkLayers>& chunks_;  // this stage's, ctx.chunks[stage]
  const RankRole* role_ = nullptr;
  // Per-device elements on this stage, as the plan counts them (dense and expert parts
  // padded separately).
  int64_t embedding_local_ = 0;
  int64_t head_local_ = 0;
  bool tied_exchange_ = false;
  int64_t expert_ = 0;
  int64_t local_total_ = 0;
  int64_t dense_ = 0;
  int64_t grad_elements_ = 0;         // bucketed with the dense gradients
  int64_t expert_grad_elements_ = 0;  // bucketed apart (ep > 1, gradients not gathered)
  int64_t bucket_count_ = 0;

  std::vector<Unit> units_;
  std::vector<std::pair<int32_t, int32_t>> chunk_units_;  // [begin, end) of chunk c's units
  std::vector<PipelinePass> passes_;
  Schedule sched_;

  std::vector<Bucket> buckets_;
  std::vector<Bucket> expert_buckets_;
  std::vector<int64_t> bucket_weights_;
  std::vector<int64_t> unit_weights_;
  std::vector<int64_t> grad_d2h_per_bucket_;
  bool transient_buckets_ = false;
  std::vector<int32_t> sync_tail_;  // last gradient op per bucket / unit (step end)
  // defer_grad_sync: the last micro-batch's bucket syncs, in the order their buckets filled,
  // issued once the stage's last backward op (last_backward_) is known.
  struct DeferredSync {
    bool expert = false;
    int64_t bucket = 0;
    int32_t unit = -1;
  };
  std::vector<DeferredSync> deferred_syncs_;
  int32_t last_backward_ = -1;
  // Interleaved 1F1B under blocking_p2p (Build): the paired backward's receive, emitted early,
  // and the forward's send, held back until after the backward.
  int32_t early_recv_ = -1;
  struct HeldSend {
    int32_t mb = -1;  // -1: none held
    int32_t chunk = -1;
    int32_t last = -1;
    int32_t chain = -1;
  };
  HeldSend held_send_;
  std::vector<int32_t> d2h_ops_;  // grad shard copies to the host
  // overlap_grad_reduce false: the last reduce-scatter issued, which the next compute op
  // waits for (-1 when none is pending).
  int32_t blocking_sync_ = -1;

  std::vector<Use> use_list_;
  std::vector<int32_t> gather_of_;   // per use: the all-gather op
  std::vector<int32_t> gathered_;    // per use: the Alloc of its gathered buffer (S*)
  std::vector<int32_t> release_of_;  // per use: the op after which its buffer is reusable
  // Without resharding after forward: per forward use, the backward use that frees its
  // buffer; per backward use, the forward use whose buffer it reads; -1 otherwise.
  std::vector<int64_t> held_with_;
  std::vector<int64_t> fetch_parts_;
  int64_t next_use_ = 0;

  std::vector<MicroBatch> mbs_;
};

}  // namespace placesim::strategies::schedule_internal

#endif  // PLACESIM_STRATEGIES_SCHEDULE_INTERNAL_STAGE_BUILDER_H_
