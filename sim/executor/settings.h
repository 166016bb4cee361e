// Simulation settings: the knobs of `placesim simulate` that a scenario file can set (the
// `simulation` message of sim/scenario/proto/scenario.proto), as a plain struct. The scenario
// loader fills it; ExecutorOptionsFromSettings (executor.h) turns it into executor options.
// This header holds only plain types, so the scenario library includes it without linking the
// executor. Thread-safety: plain values.
#ifndef PLACESIM_SIM_EXECUTOR_SETTINGS_H_
#define PLACESIM_SIM_EXECUTOR_SETTINGS_H_

#include "base/units.h"

namespace placesim::sim {

enum class NetworkModel {
  kFlow,      // flow-level, max-min fair sharing of every link (default)
  kAnalytic,  // alpha-beta per flow, no contention: faster, for sweeps
};
const char* NetworkModelName(NetworkModel m);  // "flow", "analytic"

// How a collective moves its bytes (the models are stated in executor.h).
enum class CollectiveAlgorithm {
  kAuto,          // per op, like NCCL: ring in one node, else the lower alpha-beta estimate of
                  // hierarchical and (all-reduce only) tree (default)
  kRing,          // flat ring over the group
  kTree,          // double binary tree (all-reduce only; other kinds use kAuto's choice)
  kHierarchical,  // intra-node, then per rail across nodes (multi-node groups with the same
                  // number of members on every node; others use the ring)
  kPairwise,      // all-to-all only, and always: every member sends S/N to each other at once
};
const char* CollectiveAlgorithmName(CollectiveAlgorithm a);  // "auto", "ring", "tree", ...

// Defaults match the executor's and the schedule builder's.
struct SimulationSettings {
  NetworkModel network_model = NetworkModel::kFlow;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::kAuto;
  // PyTorch DDP's bucket_cap_mb = 25. Trade-off: smaller buckets overlap more of the gradient
  // sync with backward but pay the collective latency more often. >= 1 byte.
  Bytes gradient_bucket_size = MiB(25);
  // Units gathered ahead of use under S* (and streamed ahead under O), 0 to 64. Deeper
  // prefetch hides more of the gathers and holds more gathered parameters.
  int prefetch_depth = 1;
  // Synchronize replicated gradients after every micro-batch (DDP without no_sync).
  bool sync_grads_every_micro_batch = false;
  // Chunked tensor-parallel blocks whose collectives overlap the next chunk's compute.
  bool tp_comm_overlap = false;
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_EXECUTOR_SETTINGS_H_
