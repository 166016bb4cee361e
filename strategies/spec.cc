// Names and symbols of the workload enums declared in strategies/spec.h. The strings are part
// of placesim's stable output (reports, JSON keys' values, scenario files), so they never
// change once published.
// Thread-safety: pure functions returning string literals.
#include "strategies/spec.h"

namespace placesim::strategies {

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16Mixed:
      return "bf16-mixed";
    case Precision::kFp16Mixed:
      return "fp16-mixed";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp8Mixed:
      return "fp8-mixed";
  }
  return "unknown";
}

const char* OptimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::kAdam:
      return "adam";
    case Optimizer::kAdamW:
      return "adamw";
    case Optimizer::kSgdMomentum:
      return "sgd-momentum";
    case Optimizer::kAdam8bit:
      return "adam-8bit";
  }
  return "unknown";
}

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "unknown";
}

const char* ContextParallelCommName(ContextParallelComm c) {
  switch (c) {
    case ContextParallelComm::kRing:
      return "ring";
    case ContextParallelComm::kAllGather:
      return "all-gather";
  }
  return "unknown";
}

const char* PipelineScheduleName(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::k1F1B:
      return "1f1b";
    case PipelineSchedule::kInterleaved1F1B:
      return "interleaved-1f1b";
  }
  return "unknown";
}

const char* StateName(State s) {
  switch (s) {
    case State::kParams:
      return "params";
    case State::kOptimizer:
      return "optimizer";
    case State::kGrads:
      return "grads";
    case State::kActivations:
      return "activations";
  }
  return "unknown";
}

const char* StateSymbol(State s) {
  switch (s) {
    case State::kParams:
      return "Θ";
    case State::kOptimizer:
      return "Ω";
    case State::kGrads:
      return "G";
    case State::kActivations:
      return "A";
  }
  return "?";
}

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kReplicated:
      return "replicated";
    case Mode::kSharded:
      return "sharded";
    case Mode::kShardedGather:
      return "sharded-gather";
    case Mode::kMaterialized:
      return "materialized";
    case Mode::kOffloaded:
      return "offloaded";
  }
  return "unknown";
}

const char* ModeSymbol(Mode m) {
  switch (m) {
    case Mode::kReplicated:
      return "R";
    case Mode::kSharded:
      return "S";
    case Mode::kShardedGather:
      return "S*";
    case Mode::kMaterialized:
      return "M";
    case Mode::kOffloaded:
      return "O";
  }
  return "?";
}

const char* OffloadTargetName(OffloadTarget t) {
  switch (t) {
    case OffloadTarget::kNone:
      return "none";
    case OffloadTarget::kHost:
      return "host";
    case OffloadTarget::kNvme:
      return "nvme";
  }
  return "unknown";
}

OffloadTarget OffloadTargetOf(const StrategySpec& strategy, State s) {
  for (const auto& axis : strategy.placement) {
    const Placement& p = axis[static_cast<int>(s)];
    if (p.mode == Mode::kOffloaded) return p.target;
  }
  return OffloadTarget::kNone;
}

}  // namespace placesim::strategies
