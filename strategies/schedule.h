// Schedule: the hardware-agnostic work of one training step on one rank, as a DAG of plain
// ops that a simulator executes. Built by BuildSchedules for the data-parallel family (DDP,
// ZeRO-1/2/3, FSDP, hybrid sharding, ZeRO-Offload, ZeRO-Infinity) on dp, composed with
// Megatron tensor parallelism (with or without sequence parallelism) on tp, pipeline
// parallelism (GPipe, 1F1B, interleaved 1F1B) on pp, context parallelism (ring attention)
// on cp and, for mixture-of-experts models, expert parallelism on ep (DDP and ZeRO-1 on dp). Every
// rank of a pipeline stage plays the same role, so one Schedule per stage describes them all;
// stages exchange activations through matched send / receive ops. Durations are not part of a
// schedule: the device that runs an op decides them.
//
// What a step holds (m micro-batches of b sequences, L layers, units of layers_per_unit):
//   static state   Alloc ops first: params, grads, optimizer, offload staging on the device,
//                  offloaded states on the host or NVMe; never freed (they outlive the step).
//   forward        per micro-batch: embedding, L layers, output layer; each keeps its
//                  activations (Alloc kActivations, or kCheckpoints under full recompute).
//   backward       in reverse: [recompute] backward-input, backward-weight; activations freed
//                  after the backward-weight op of their layer. Recompute allocates what it
//                  rebuilds (the layer's activations less what it kept) and frees it with them.
//   gradient sync  replicated parameters (DDP, ZeRO-1/2, ZeRO-Offload): the gradient buffer
//                  is cut, in backward order, into buckets of bucket_bytes (the last one
//                  shorter); each bucket is all-reduced (G R, Ω R) or reduce-scattered (G or Ω
//                  sharded) as soon as the backward-weight op that completes it has run. The
//                  buckets cut at exact byte boundaries, where PyTorch DDP keeps each tensor
//                  whole. Gathered parameters (S*, or Θ offloaded): each unit's gradient is
//                  reduce-scattered after its backward. Gradients replicated on dp (G R) are
//                  synchronized only after the last micro-batch (DDP no_sync) unless
//                  sync_grads_every_micro_batch; sharded gradients after every micro-batch.
//   parameters     S*: every unit all-gathered before its forward and again before its
//                  backward, prefetch_depth uses ahead, and freed after use. Θ offloaded: the
//                  unit's shard is copied in (H2D or NVMe read) into staging, then gathered.
//   tensor par.    tp > 1: every state is this tp rank's slice (1/t of the matrices, the norms
//                  and row-parallel biases whole), so dp buckets and units shrink by t. A
//                  layer's forward, full recompute and backward-input are two blocks each
//                  (attention, MLP); each block closes with an all-reduce over the tp group of
//                  b s h x 2 bytes (forward: its output; backward: its input gradient), or
//                  with sequence parallelism opens with an all-gather and closes with a
//                  reduce-scatter of that buffer (Korthikanti et al. 2022). The compute that
//                  reads a collective's result depends on it, so tp communication sits on the
//                  critical path (unless ScheduleOptions::tp_comm_overlap chunks the blocks),
//                  except the backward's last one, which overlaps the layer's backward-weight
//                  GEMM. The vocab-parallel embedding's
//                  output is all-reduced (SP: reduce-scattered) once per forward pass, full
//                  recompute's included, as the plan counts it.
//   pipeline       pp > 1: stage i holds L / p layers in v chunks (v = virtual_stages under
//                  interleaved 1F1B, else 1); chunk c is virtual stage c p + i, the embedding on
//                  stage 0's chunk 0 and the output layer on stage p-1's chunk v-1. The stage
//                  runs the passes of PipelineOrder (pipeline.h); a pass that does not start the
//                  model opens with a kRecv of its input (forward: the activation of the virtual
//                  stage before; backward: the gradient from the one after), and one that does
//                  not end it closes with a send (kSendRecv on pp, stream kP2p) of b s h x 2 / t
//                  bytes (the scatter / gather optimization, or the sequence-parallel shard).
//                  No bubble is written anywhere: it is the time stages wait on their receives.
//                  Gradients of replicated parameters are synchronized after the last micro-
//                  batch's backward of each bucket; a tied word embedding's gradients are
//                  exchanged between the first and the last stage before the update.
//   context par.   cp > 1: each rank holds s / cp tokens; its GEMMs cover them and its queries
//                  attend to all s keys. Every attention pass (forward, full recompute,
//                  backward-input) runs in cp parts; the k-th ring exchange (kSendRecv on cp,
//                  K and V of s / cp tokens, 2 x kv-width / t x 2 bytes per token) brings the
//                  chunk part k reads, overlapping the parts before it, and in backward each
//                  part passes on its K/V gradient too. The model states are placed on cp as
//                  on dp and synchronized over dp x cp (Op::spans_context).
//   experts        MoE layers (experts > 1): the layer's MLP block is the router, then the
//                  experts; with ep > 1 (ep groups carved out of dp: ep consecutive dp ranks,
//                  GroupKind::kAxis on topology::Axis::kExpert) the tokens are dispatched to
//                  their experts by an all-to-all before and combined by one after (backward-
//                  input: the combine's gradient, the experts, the dispatch's gradient, then the
//                  router), each of top_k x capacity_factor x b s h x 2 bytes (1/t of the
//                  sequence under SP), so 2 x (forward passes + 1) per layer and micro-batch,
//                  full recompute's included. Under tp the tp collectives wrap the whole block.
//                  Each rank holds E / ep experts (1/t of each); with balanced routing it runs
//                  top_k x cf MLPs' worth of its own token count. Expert gradients are bucketed
//                  apart from the dense ones and synchronized over the dp / ep ranks holding the
//                  same experts (kReplicaGroup of dp / ep, stride ep, on dp), as are ZeRO-1's
//                  updated expert parameters; the dense ones over dp as above. With ep = 1 the
//                  experts are placed and synchronized with the dense states. Refused with
//                  ep > 1: gathered params or sharded grads (ZeRO-2/3, FSDP), offload, hybrid
//                  shard groups, and cp > 1.
//   optimizer      on the device shard (Compute, phase kOptimizer), or on the host
//                  (HostCompute) after the gradient shard is copied out after every micro-
//                  batch; then, for replicated parameters over a sharded optimizer, the
//                  updated shard (copied back when the optimizer is offloaded) all-gathered.
//
// FLOPs (Narayanan et al. 2021, eq. 3 per layer): a layer's forward on b sequences of s tokens
// is 24 b s h^2 + 4 b s^2 h (per cp rank 24 b s_c h^2 + 4 b s_c s h, s_c = s / cp); backward-input
// and backward-weight one forward each; full recompute re-runs the forward, selective recompute
// only the attention core (4 b s^2 h). The output layer carries eq. 3's vocabulary term, K/16 b s h
// V per micro-batch (K = 96 with full recompute, 72 otherwise) in three equal parts; the embedding
// lookup has no FLOPs. So the compute FLOPs of one rank's step times tp x cp x dp (every op's FLOPs
// are 1/t of the layer's), summed over the stages, equal Plan::flops_per_iteration, for every model
// shape (eq. 3 speaks of the GPT shape; the plan and the schedule both apply it as written).
// MoE layers (model.h): attention as eq. 3; the MLP term 16 b s h^2 once per routed expert,
// top_k x capacity_factor, plus the router 2 b s h E, each 1/t per tp rank.
// Bytes read and written per compute op (for a roofline): the op's weights, its input, and
// the activations it saves or reads back; the optimizer reads and writes its shard.
//
// Invariants (tested against Analyze for the same inputs, per stage against the plan's role of
// that stage):
//   - every dependency of op i has an index < i, so index order is a topological order; ops
//     of one stream run in index order, and deps name only what the stream order does not.
//   - static allocs equal the plan's memory per state to the byte (params, grads, optimizer,
//     offload_staging on device; offloaded_host and offloaded_nvme off device); the live
//     activation (+ checkpoint) bytes, recompute's working set included, peak at the plan's
//     activations figure.
//   - every Free names its Alloc (same bytes, tag and memory); at the end of the step only
//     the static allocs are live.
//   - the collectives' buffer bytes and per-device bytes, summed per (kind, state, axis, group),
//     equal the plan's collectives to the byte (sync_grads_every_micro_batch multiplies the
//     replicated-gradient sync by m; the tied embedding's all-reduce of two between the first
//     and last stage is one send of S each way), and the copies sum to the plan's offload
//     copies.
//   - every kRecv matches a send of its peer stage addressed to it, of the same micro-batch and
//     phase; sends and receives pair one to one.
// Thread-safety: plain values; BuildSchedules is a pure function of its inputs.
#ifndef PLACESIM_STRATEGIES_SCHEDULE_H_
#define PLACESIM_STRATEGIES_SCHEDULE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "strategies/pipeline.h"
#include "strategies/plan.h"
#include "strategies/schedule/ops.h"
#include "strategies/spec.h"
#include "topology/mesh.h"
#include "topology/spec.h"

namespace placesim::strategies {

struct ScheduleOptions {
  // Gradient bucket size (PyTorch DDP bucket_cap_mb = 25, i.e. 25 MiB; DeepSpeed's
  // reduce_bucket_size plays the same role for ZeRO-1/2). Must be >= 1 byte.
  Bytes bucket_bytes = MiB(25);
  // Units gathered ahead of the one in use under S* or streamed under O (as AnalyzeOptions).
  int prefetch_depth = 1;
  // Replicated gradients: synchronize after every micro-batch instead of only after the last
  // (DDP without no_sync).
  bool sync_grads_every_micro_batch = false;
  // Tensor-parallel communication overlapped with compute (Megatron-LM's --tp-comm-overlap,
  // Transformer Engine's chunked GEMMs): each tensor-parallel block runs in tp chunks of its
  // sequence. Under sequence parallelism the chunks' all-gathers are issued first, each chunk
  // computes as soon as its own has arrived, and each chunk's reduce-scatter follows its
  // compute; without it, each chunk's all-reduce follows its compute. The next block waits
  // for the last chunk's collective, so only the first all-gather and the last closing
  // collective stay exposed. Volumes are unchanged (tp collectives of 1/tp the buffer each).
  // Blocks holding ring attention (cp > 1) are not chunked.
  bool tp_comm_overlap = false;
};

// The most ops one schedule may hold. A step's ops grow with micro-batches × (layers + units
// + gradient buckets); past this the schedule and its replay would take gigabytes and
// minutes, so BuildSchedules refuses it up front (kOutOfRange) instead of building it.
// Real jobs stay far below: 126 layers × 512 micro-batches is about half a million ops.
inline constexpr int64_t kMaxScheduleOps = int64_t{1} << 22;  // 4,194,304

// One schedule per pipeline stage, in stage order (one when pp = 1), with every kRecv's match
// set. Returns kFailedPrecondition, naming the reason, for what it does not generate: expert
// parallelism ("model-parallel schedules are not generated yet: ep=8"), pp without Θ, Ω and G
// split on pp, cp whose model states are placed otherwise than on dp or whose activations
// are not split on cp, tp without Megatron slicing (Θ, Ω, G S on tp) or
// with M / O activations on tp, a bare parameter count without an architecture, offloaded or
// dp-sharded activations, and placements with correctness errors (Analyze's findings);
// kInvalidArgument for inputs Analyze rejects or a bucket size below one byte; kOutOfRange,
// with the count and what reduces it, when the schedule could exceed kMaxScheduleOps.
// The cluster serves Analyze only (the plan the schedule agrees with); no duration is derived.
StatusOr<std::vector<Schedule>> BuildSchedules(const ModelSpec& model, const TrainingSpec& training,
                                               const StrategySpec& strategy,
                                               const topology::ClusterSpec& cluster,
                                               const ScheduleOptions& options = {});

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_SCHEDULE_H_
