// Folding: one training step whose schedule is too long to replay op by op (more ops than
// ExecutorOptions::schedule.max_ops) is simulated exactly enough by replaying the same job at
// three shorter gradient-accumulation lengths and extrapolating. A step of m micro-batches is
// periodic in m once the pipeline (or the accumulation loop) is in steady state: every further
// period of d micro-batches (d = pp, the pipeline's period; 1 without a pipeline) adds the same
// time, bytes and calls. The three replays m1 < m2 < m3 = m1 + 2d, with m3 congruent to m mod d,
// measure that increment twice; when the two agree (kFoldTolerance) every additive figure is
// extended linearly to m, and peak memory (constant in steady state, or linear under GPipe)
// likewise. simulate, sweep and search all simulate through SimulateStepFolded.
//
// Invariants: a step that fits is replayed in full, unchanged (SimResult::folded_from empty);
// a folded result has folded_from = {m1, m2, m3}; its plan is the full step's.
// Thread-safety: pure function of its inputs, state local (as sim::SimulateStep).
#ifndef PLACESIM_SIM_STUDY_FOLD_H_
#define PLACESIM_SIM_STUDY_FOLD_H_

#include "base/status.h"
#include "sim/executor/executor.h"
#include "strategies/spec.h"
#include "topology/cluster.h"

namespace placesim::study {

// How far the second period's increment may differ from the first's, as a fraction of the
// step time of the longest replay, before folding is refused as not periodic. The error of the
// extrapolation grows with this difference times the periods extrapolated; tests/study/
// fold_test.cc checks folded against full replays within 0.1% on every case that fits.
inline constexpr double kFoldTolerance = 1e-4;

// sim::SimulateStep, folding the step when its schedule exceeds options.schedule.max_ops.
// Errors: SimulateStep's; kOutOfRange when folding is needed but options.trace is set (a folded
// step has no timeline of its own), when even the shortest periodic replays exceed the limit,
// or when the replays are not periodic (the message gives both increments). The replays
// themselves may hold up to strategies::kMaxScheduleOps ops each, whatever max_ops is.
// Complexity: a fold costs three replays of at most about 2 + 4 periods' ops each.
StatusOr<sim::SimResult> SimulateStepFolded(const topology::Cluster& cluster,
                                            const strategies::ModelSpec& model,
                                            const strategies::TrainingSpec& training,
                                            const strategies::StrategySpec& strategy,
                                            const sim::ExecutorOptions& options = {});

}  // namespace placesim::study

#endif  // PLACESIM_SIM_STUDY_FOLD_H_
