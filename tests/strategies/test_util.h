// Small builders shared by the strategies tests: a hand-written cluster (so the tests do not
// depend on topology presets) and a training setup.
#ifndef PLACESIM_TESTS_STRATEGIES_TEST_UTIL_H_
#define PLACESIM_TESTS_STRATEGIES_TEST_UTIL_H_

#include <string>

#include "base/units.h"
#include "strategies/presets.h"
#include "strategies/spec.h"
#include "topology/spec.h"

namespace placesim::strategies::test_util {

// `nodes` nodes of `gpus` GPUs with `hbm` each, 2 TB of host memory and 30 TB of NVMe.
inline topology::ClusterSpec MakeCluster(int nodes, int gpus = 8, Bytes hbm = GB(80)) {
  topology::ClusterSpec c;
  c.nodes = nodes;
  c.node.gpus = gpus;
  c.node.gpu.hbm_capacity = hbm;
  c.node.host_memory = TB(2);
  c.node.nvme_capacity = TB(30);
  return c;
}

// Mixed-precision Adam (K = 12), one micro-batch per step per data-parallel rank.
inline TrainingSpec MakeTraining(int64_t micro_batch, int64_t global_batch) {
  TrainingSpec t;
  t.micro_batch = micro_batch;
  t.global_batch = global_batch;
  return t;
}

inline const ModelSpec& Model(const std::string& name) {
  const ModelSpec* m = FindModelPreset(name);
  PLACESIM_CHECK(m != nullptr);
  return *m;
}

}  // namespace placesim::strategies::test_util

#endif  // PLACESIM_TESTS_STRATEGIES_TEST_UTIL_H_
