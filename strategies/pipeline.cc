// PipelineOrder (see pipeline.h).
#include "strategies/pipeline.h"

#include <algorithm>

namespace placesim::strategies {

namespace {

// Forwards the interleaved schedule runs before its first backward on `stage`: (p - stage -
// 1) 2 + (v - 1) p, or all m v when m = p (Megatron-LM's all-warm-up case).
int64_t InterleavedWarmup(int p, int v, int64_t m, int stage) {
  const int64_t total = m * v;
  if (m == p) return total;
  return std::min<int64_t>(int64_t{p - stage - 1} * 2 + int64_t{v - 1} * p, total);
}

}  // namespace

std::vector<PipelinePass> PipelineOrder(PipelineSchedule schedule, int p, int v, int64_t m,
                                        int stage, int64_t limit) {
  std::vector<PipelinePass> out;
  const auto M = static_cast<int32_t>(m);
  const auto cap = static_cast<size_t>(limit < 0 ? 2 * m * v : std::min(limit, 2 * m * v));
  out.reserve(cap);
  // Appends a pass; false once the order holds `cap` passes.
  const auto push = [&](PipelinePass pass) {
    if (out.size() >= cap) return false;
    out.push_back(pass);
    return true;
  };
  if (p <= 1) {
    for (int32_t mb = 0; mb < M; ++mb) {
      if (!push({false, mb, 0}) || !push({true, mb, 0})) break;
    }
    return out;
  }
  if (schedule == PipelineSchedule::kGpipe) {
    for (int32_t mb = 0; mb < M && push({false, mb, 0}); ++mb) {
    }
    for (int32_t mb = 0; mb < M && push({true, mb, 0}); ++mb) {
    }
    return out;
  }
  if (schedule == PipelineSchedule::k1F1B || v <= 1) {
    const int32_t warmup = std::min<int32_t>(p - stage - 1, M);
    int32_t f = 0, b = 0;
    for (; f < warmup; ++f) {
      if (!push({false, f, 0})) return out;
    }
    while (f < M) {
      if (!push({false, f++, 0}) || !push({true, b++, 0})) return out;
    }
    while (b < M) {
      if (!push({true, b++, 0})) return out;
    }
    return out;
  }
  // Interleaved 1F1B (Megatron-LM forward_backward_pipelining_with_interleaving).
  const int64_t total = m * v;
  const int64_t group = int64_t{p} * v;
  const auto pass = [&](int64_t k, bool backward) {
    const int64_t in_group = k % group;
    auto chunk = static_cast<int32_t>(in_group / p);
    if (backward) chunk = v - 1 - chunk;
    return PipelinePass{backward, static_cast<int32_t>((k / group) * p + in_group % p), chunk};
  };
  const int64_t warmup = InterleavedWarmup(p, v, m, stage);
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f) {
    if (!push(pass(f, false))) return out;
  }
  while (f < total) {
    if (!push(pass(f++, false)) || !push(pass(b++, true))) return out;
  }
  while (b < total) {
    if (!push(pass(b++, true))) return out;
  }
  return out;
}

int64_t PipelinePeakHorizon(PipelineSchedule schedule, int p, int v, int64_t m, int stage) {
  const int64_t total = 2 * m * v;
  if (p <= 1) return std::min<int64_t>(total, 2);
  if (schedule == PipelineSchedule::kGpipe) return std::min(total, m + 1);
  if (schedule == PipelineSchedule::k1F1B || v <= 1)
    return std::min(total, 2 * std::min<int64_t>(p - stage, m) + 2);
  return std::min(total, InterleavedWarmup(p, v, m, stage) + 4 * int64_t{p} * v + 2);
}

std::vector<std::vector<ChunkLayers>> PipelineChunkLayers(const std::vector<int64_t>& stage_layers,
                                                          int v) {
  const size_t p = stage_layers.size();
  std::vector<std::vector<ChunkLayers>> out(p, std::vector<ChunkLayers>(static_cast<size_t>(v)));
  for (size_t i = 0; i < p; ++i) {
    const int64_t n = stage_layers[i];
    const int64_t extra = n % v;
    for (int c = 0; c < v; ++c) {
      // Stage 0 gives its left-over layers to its last chunks, the others to their first.
      const bool more = i == 0 ? c >= v - extra : c < extra;
      out[i][static_cast<size_t>(c)].count = n / v + (more ? 1 : 0);
    }
  }
  int64_t next = 0;
  for (int c = 0; c < v; ++c) {
    for (size_t i = 0; i < p; ++i) {
      ChunkLayers& chunk = out[i][static_cast<size_t>(c)];
      chunk.first = next;
      next += chunk.count;
    }
  }
  return out;
}

}  // namespace placesim::strategies
