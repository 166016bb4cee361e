// PipelineOrder (see pipeline.h).
#include "strategies/pipeline.h"

#include <algorithm>

namespace placesim::strategies {

std::vector<PipelinePass> PipelineOrder(PipelineSchedule schedule, int p, int v, int64_t m,
                                        int stage) {
  std::vector<PipelinePass> out;
  const auto M = static_cast<int32_t>(m);
  if (p <= 1) {
    for (int32_t mb = 0; mb < M; ++mb) {
      out.push_back({false, mb, 0});
      out.push_back({true, mb, 0});
    }
    return out;
  }
  if (schedule == PipelineSchedule::kGpipe) {
    for (int32_t mb = 0; mb < M; ++mb) out.push_back({false, mb, 0});
    for (int32_t mb = 0; mb < M; ++mb) out.push_back({true, mb, 0});
    return out;
  }
  if (schedule == PipelineSchedule::k1F1B || v <= 1) {
    const int32_t warmup = std::min<int32_t>(p - stage - 1, M);
    int32_t f = 0, b = 0;
    for (; f < warmup; ++f) out.push_back({false, f, 0});
    while (f < M) {
      out.push_back({false, f++, 0});
      out.push_back({true, b++, 0});
    }
    while (b < M) out.push_back({true, b++, 0});
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
  const int64_t warmup =
      m == p ? total : std::min<int64_t>(int64_t{p - stage - 1} * 2 + int64_t{v - 1} * p, total);
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(pass(f, false));
  while (f < total) {
    out.push_back(pass(f++, false));
    out.push_back(pass(b++, true));
  }
  while (b < total) out.push_back(pass(b++, true));
  return out;
}

}  // namespace placesim::strategies
