// The collective algorithms known to a simulation, by name, and the choice of one per call.
//
// Choice. A call runs the forced algorithm (ExecutorOptions::algorithm, the scenario's
// simulation.collective_algorithm) when that one applies to it; otherwise, and under "auto",
// auto's choice, NCCL-like: among the registered algorithms that apply (in id order) the first
// kPreferred one, else the first kFallback one; then each kChallenger replaces the choice when
// its analytic estimate (Algorithm::Estimate) is strictly lower, so ties keep the earlier
// choice. With the built-ins: groups within one node use the ring; all-gather and
// reduce-scatter use the ring everywhere (NCCL's only algorithm for them: across nodes its
// multi-channel ring, impl/ring.cc); all-reduces that span nodes take the lower estimate of
// hierarchical (the ring when hierarchical does not apply) and tree, ties to hierarchical;
// all-to-all is always pairwise.
//
// Adding an algorithm: one file in impl/ (an Algorithm subclass, its maths in the file's
// opening comment, and a factory declared in impl/builtins.h), one line in RegisterBuiltins,
// and its name as a value of the scenario schema's CollectiveAlgorithm enum so scenario files
// can force it. A test or a tool may register its own in its own Registry instead.
//
// Thread-safety: see plugin_registry.h; BuiltinRegistry() is immutable and safe to share.
#ifndef PLACESIM_SIM_COLLECTIVES_REGISTRY_H_
#define PLACESIM_SIM_COLLECTIVES_REGISTRY_H_

#include <string_view>

#include "base/status.h"
#include "sim/collectives/algorithm.h"
#include "sim/network/plugin_registry.h"

namespace placesim::sim::collectives {

// The plans of one call's candidate algorithms, built or found on demand (the executor's
// CommPlanner caches them per stage, group and kind).
class PlanSource {
 public:
  // The plan of registered algorithm `algorithm` for the call being chosen.
  virtual StatusOr<const CommPlan*> PlanOf(int algorithm) = 0;

 protected:
  ~PlanSource() = default;
};

// Unknown names answer `unknown collective algorithm "foo"; valid: auto, ring, tree, ...`.
class Registry : public PluginRegistry<Algorithm> {
 public:
  static constexpr std::string_view kAutoName = "auto";
  static constexpr std::string_view kAutoDescription =
      "per call, like NCCL: ring within a node and for all-gather and reduce-scatter; "
      "all-reduce across nodes the lower estimate of hierarchical and tree; all-to-all "
      "pairwise (default)";
  static constexpr std::string_view kAutoCitation =
      "NCCL's tuning model (src/graph/tuning.cc): the lowest predicted time per call";
  static constexpr int kAuto = -1;  // Select's answer for "auto"

  Registry() : PluginRegistry<Algorithm>("collective algorithm", {std::string(kAutoName)}) {}

  // kAuto for "auto", else the id of a registered name; Lookup's error otherwise.
  StatusOr<int> Select(std::string_view name) const;

  // The plan of `call` over `layout`: the forced algorithm's (an id, or kAuto) when it applies,
  // else auto's choice (see the file comment). Only the candidates' plans are asked of
  // `plans`. Errors: the plans'; kInternal when no registered algorithm applies.
  // REQUIRES: at most 64 registered algorithms.
  // Complexity: O(algorithms) plus the plans asked for.
  StatusOr<const CommPlan*> Choose(const CollectiveCall& call, const GroupLayout& layout,
                                   int forced, PlanSource& plans) const;
};

// Registers the built-ins, in this order (their ids, and the order of every output):
// ring, tree, hierarchical, pairwise.
void RegisterBuiltins(Registry& registry);
// The built-in algorithms, built on first use and immutable after.
const Registry& BuiltinRegistry();

}  // namespace placesim::sim::collectives

#endif  // PLACESIM_SIM_COLLECTIVES_REGISTRY_H_
