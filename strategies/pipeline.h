// Pipeline schedules: the order in which a stage runs the forward and backward passes of a
// step. Shared by the analyzer (activation memory per stage, exactly as the schedule holds
// it) and the schedule builder.
// Thread-safety: pure functions.
#ifndef PLACESIM_STRATEGIES_PIPELINE_H_
#define PLACESIM_STRATEGIES_PIPELINE_H_

#include <cstdint>
#include <vector>

#include "strategies/spec.h"

namespace placesim::strategies {

// One forward or backward pass of a micro-batch through one model chunk of a stage.
struct PipelinePass {
  bool backward = false;
  int32_t micro_batch = 0;
  int32_t chunk = 0;  // model chunk (virtual stage) of the stage, 0..v-1

  friend bool operator==(const PipelinePass&, const PipelinePass&) = default;
};

// The order in which pipeline stage `stage` of `p` runs the m x v forward and m x v backward
// passes of a step (v = model chunks per stage; 1 unless interleaved).
//   kGpipe (Huang et al. 2019): every forward, then every backward, micro-batches ascending.
//   k1F1B (PipeDream-Flush, Narayanan et al. 2021): min(p - stage - 1, m) warm-up forwards,
//     then one forward and one backward alternately, then the remaining backwards.
//   kInterleaved1F1B (Megatron-LM's interleaved schedule, Narayanan et al. 2021 Section
//     2.2.2): the k-th forward runs chunk (k mod p v) / p of micro-batch (k / p v) p + k mod p,
//     the k-th backward the same micro-batch on chunk v - 1 - (k mod p v) / p; warm-up
//     (p - stage - 1) 2 + (v - 1) p forwards (all m v when m = p), then 1F1B. REQUIRES m % p
//     == 0 (Megatron-LM's requirement, checked by Analyze's "interleaved-microbatches").
// With p = 1 every schedule is forward, backward per micro-batch. `limit` >= 0 returns only
// the first `limit` passes of the order.
// REQUIRES: p >= 1, 0 <= stage < p, v >= 1, m >= 1.
std::vector<PipelinePass> PipelineOrder(PipelineSchedule schedule, int p, int v, int64_t m,
                                        int stage, int64_t limit = -1);

// How many of the stage's first passes contain the peak of what it keeps in flight (and of
// any count over the chunks of the passes in flight): every forward up to the first backward,
// then, in the 1F1B steady state, one period of the chunk pattern (p v passes of each kind
// under interleaving, whose in-flight set repeats with it), twice over. Walking this prefix
// instead of all 2 m v passes keeps the analyzer's cost independent of m.
int64_t PipelinePeakHorizon(PipelineSchedule schedule, int p, int v, int64_t m, int stage);

// The transformer layers of one model chunk (virtual stage) of a pipeline stage: layers
// [first, first + count) of the model.
struct ChunkLayers {
  int64_t first = 0;
  int64_t count = 0;

  friend bool operator==(const ChunkLayers&, const ChunkLayers&) = default;
};

// How the layers of each stage (`stage_layers`, one entry per stage, first to last) are laid
// out over its v model chunks; result[stage][chunk]. Chunk c of stage i is virtual stage
// c p + i, and the virtual stages hold consecutive layers in that order (Megatron-LM's
// interleaved assignment; with v = 1, stage i holds the layers after those of stages < i).
// A stage's n layers give each chunk n / v; the n mod v left over go one each to the last
// chunks of the first stage and to the first chunks of every other stage, so the chunk that
// also runs the embedding (stage 0's first) and the one that runs the output layer (stage
// p - 1's last) are the lighter ones, as Llama 3's uneven stages make them (Llama Team 2024,
// Section 3.3.2). When v divides every stage's count this is Megatron-LM's even split of
// each stage over its chunks.
// REQUIRES: v >= 1, every entry >= 0. O(p v).
std::vector<std::vector<ChunkLayers>> PipelineChunkLayers(const std::vector<int64_t>& stage_layers,
                                                          int v);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_PIPELINE_H_
