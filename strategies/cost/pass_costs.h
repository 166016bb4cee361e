// The work of one training pass on one rank, computed once per scenario: FLOPs, bytes read and
// written and element-wise HBM traffic of every compute op the schedule emits, the buffers its
// collectives and sends move, and the activations a layer keeps. The schedule builder emits
// exactly these numbers; step estimates read them instead of re-deriving the physics.
//
// Scope: one tp / cp / ep shard, one micro-batch of b sequences (s_c = ceil(s / cp) tokens
// each). The formulas and their sources are in model.h (eq. 3 FLOPs, Korthikanti activations,
// element-wise traffic); docs/schedule.md shows how the blocks split a layer.
// Invariants: every field is a pure function of the inputs; integer rounding is the
// schedule's (floor for the attention / MLP split of bytes, ceil for per-rank shards), so
// sums over a step agree with the plan to the byte.
// Thread-safety: plain values.
#ifndef PLACESIM_STRATEGIES_COST_PASS_COSTS_H_
#define PLACESIM_STRATEGIES_COST_PASS_COSTS_H_

#include <cstdint>

#include "base/units.h"
#include "strategies/model.h"
#include "strategies/spec.h"
#include "topology/mesh.h"

namespace placesim::strategies::cost {

// The work of one compute op, for a roofline: FLOPs, bytes of its GEMMs' operands (weights,
// input, saved activations) read and written, and the HBM traffic of the memory-bound kernels
// between its GEMMs (elementwise), which run apart and add to its time.
struct Work {
  Flops flops;
  Bytes read;
  Bytes written;
  Bytes elementwise;

  friend Work operator+(const Work& a, const Work& b) {
    return Work{a.flops + b.flops, a.read + b.read, a.written + b.written,
                a.elementwise + b.elementwise};
  }
};

// One layer pass as the schedule cuts it into ops. Only the blocks it emits are non-zero:
//   dense, tp = 1          whole (the layer as one op)
//   dense, tp > 1          attention, mlp (a tp collective between them)
//   MoE                    attention, router, experts (all-to-alls between them under ep)
//   selective recompute    whole (the attention core), whatever the shape
// so Total() is the pass's work in every case.
struct LayerPass {
  Work whole;
  Work attention;
  Work mlp;
  Work router;
  Work experts;

  Work Total() const { return whole + attention + mlp + router + experts; }
};

struct PassCosts {
  // ---- shape, as the schedule reads it
  int64_t tp = 1;
  int64_t cp = 1;
  int64_t ep = 1;
  bool sequence_parallel = false;  // the plan's effective choice
  bool moe = false;                // experts > 1
  Recompute recompute = Recompute::kNone;
  int64_t tokens = 0;  // s_c = ceil(s / cp): a sequence's tokens on this cp rank
  StateBytes bpp;
  Optimizer optimizer = Optimizer::kAdamW;

  // ---- parameters held per rank (elements)
  int64_t layer_elements = 0;         // one layer: tp slice + replicated + router + experts
  int64_t layer_expert_elements = 0;  // of which the experts: ceil(ceil(E_params / ep) / tp)
  int64_t vocab_elements = 0;         // a vocab-parallel V h matrix: ceil(V h / tp)

  // ---- per layer, per micro-batch
  LayerPass forward;
  LayerPass recompute_pass;  // zero under Recompute::kNone
  LayerPass backward_input;
  Work backward_weight;
  Work attention_core;  // 4 b s_c s h / t: what selective recompute re-runs

  // ---- embedding (first stage) and output layer (last stage), per micro-batch
  Work embedding_forward;
  Work embedding_backward_weight;
  Work output_forward;
  Work output_backward_input;
  // The output layer's backward-weight; it writes the gradients of `head_elements`.
  Work OutputBackwardWeight(int64_t head_elements) const;
  // The optimizer's update of `elements` (this rank's shard): reads gradients and optimizer
  // state, writes optimizer state and parameters.
  Work OptimizerStep(int64_t elements) const;

  // ---- buffers (bytes, 16-bit activations)
  Bytes io;          // a layer's input or output: 2 b s_c h (1/t under sequence parallelism)
  Bytes tp_buffer;   // a tp collective's full buffer: 2 b s_c h
  Bytes p2p;         // a pipeline send: 2 b s_c h / t
  Bytes kv;          // one ring-attention exchange: K and V of s_c tokens, this tp rank's heads
  Bytes all_to_all;  // one MoE dispatch or combine (ep > 1): busiest x 2 b s_c h (/t under SP)

  // ---- activations per micro-batch
  Bytes layer_kept;             // what a layer keeps until its backward under `recompute`
  Bytes layer_full;             // what it would keep without recompute (backward reads all of it)
  Bytes embedding_activations;  // b s_c h (1/t under sequence parallelism)
  Bytes output_activations;     // (4 b s_c h + 4 b s_c V) / t: fp32 logits and their input
};

// REQUIRES: t has an architecture; mesh.tp, cp, ep >= 1; training.micro_batch >= 1.
// `recompute` and `sequence_parallel` are the plan's effective choices
// (Plan::effective_recompute, Plan::effective_sequence_parallel). O(1).
PassCosts ComputePassCosts(const TransformerSpec& t, const TrainingSpec& training,
                           const topology::MeshShape& mesh, Recompute recompute,
                           bool sequence_parallel);

}  // namespace placesim::strategies::cost

#endif  // PLACESIM_STRATEGIES_COST_PASS_COSTS_H_
