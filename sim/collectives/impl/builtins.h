// Factories of the built-in collective algorithms, one per file of impl/ (internal to
// sim/collectives: RegisterBuiltins registers them).
// Thread-safety: the factories are pure.
#ifndef PLACESIM_SIM_COLLECTIVES_IMPL_BUILTINS_H_
#define PLACESIM_SIM_COLLECTIVES_IMPL_BUILTINS_H_

#include <memory>

#include "sim/collectives/algorithm.h"

namespace placesim::sim::collectives {

std::unique_ptr<const Algorithm> MakeRing();              // ring.cc
std::unique_ptr<const Algorithm> MakeDoubleBinaryTree();  // double_binary_tree.cc
std::unique_ptr<const Algorithm> MakeHierarchical();      // hierarchical.cc
std::unique_ptr<const Algorithm> MakePairwise();          // pairwise.cc

}  // namespace placesim::sim::collectives

#endif  // PLACESIM_SIM_COLLECTIVES_IMPL_BUILTINS_H_
