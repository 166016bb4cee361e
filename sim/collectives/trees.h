// NCCL's double binary tree (Sanders, Speck and Traeff 2009, as built by NCCL's
// src/graph/trees.cc, ncclGetBtree / ncclGetDtree), used by the tree all-reduce
// (impl/double_binary_tree.cc).
//
// Tree A over ranks 0..N-1: rank r's parent is found from its lowest set bit b,
// (r ^ b) | (b << 1), or r ^ b when that is out of range; rank 0 is the root. Odd ranks have
// no children. Tree B is tree A mirrored (r -> N-1-r) when N is even and shifted by one
// (r -> r+1 mod N) when N is odd, so that a rank interior in one tree is a leaf in the other:
// every rank has at most two children over both trees, and so sends and receives at most S
// in each phase when every tree edge carries S/2.
// Thread-safety: pure functions.
#ifndef PLACESIM_SIM_COLLECTIVES_TREES_H_
#define PLACESIM_SIM_COLLECTIVES_TREES_H_

#include <array>
#include <vector>

namespace placesim::sim::collectives {

struct DoubleBinaryTree {
  std::array<std::vector<int>, 2> parents;  // per tree, per rank; -1 for the root
  int height = 0;                           // edges on the longest root-to-leaf path of either tree
};

// REQUIRES: n >= 1. O(N log N).
DoubleBinaryTree BuildDoubleBinaryTree(int n);

}  // namespace placesim::sim::collectives

#endif  // PLACESIM_SIM_COLLECTIVES_TREES_H_
