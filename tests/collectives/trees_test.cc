// NCCL's double binary tree: the shape of tree A for eight ranks, and for every size up to
// 64 that both are trees and that no rank has more than two children over the two.
#include "sim/collectives/trees.h"

#include <gtest/gtest.h>

#include <vector>

namespace placesim::sim::collectives {
namespace {

TEST(DoubleBinaryTree, EightRanksFollowNcclsLowestSetBitRule) {
  // Parent of r with lowest set bit b: (r ^ b) | (b << 1), or r ^ b when that is >= 8.
  //   1 -> 2, 2 -> 4, 3 -> 2, 4 -> 0 (8 is out of range), 5 -> 6, 6 -> 4, 7 -> 6.
  // Tree B mirrors it (r -> 7 - r): 6 -> 5, 5 -> 3, 4 -> 5, 3 -> 7, 2 -> 1, 1 -> 3, 0 -> 1.
  DoubleBinaryTree t = BuildDoubleBinaryTree(8);
  EXPECT_EQ(t.parents[0], (std::vector<int>{-1, 2, 4, 2, 0, 6, 4, 6}));
  EXPECT_EQ(t.parents[1], (std::vector<int>{1, 3, 1, 7, 5, 3, 5, -1}));
  // Longest path 1 -> 2 -> 4 -> 0 (and its mirror): three edges.
  EXPECT_EQ(t.height, 3);
}

TEST(DoubleBinaryTree, EveryRankHasAtMostTwoChildrenOverBothTrees) {
  for (int n = 1; n <= 64; ++n) {
    DoubleBinaryTree t = BuildDoubleBinaryTree(n);
    std::vector<int> children(static_cast<size_t>(n), 0);
    for (const std::vector<int>& parents : t.parents) {
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        const int p = parents[static_cast<size_t>(r)];
        if (p < 0) {
          ++roots;
          continue;
        }
        ASSERT_LT(p, n);
        ++children[static_cast<size_t>(p)];
        // Every rank reaches the root in at most n steps.
        int steps = 0;
        for (int q = r; parents[static_cast<size_t>(q)] >= 0; q = parents[static_cast<size_t>(q)]) {
          ASSERT_LE(++steps, n) << "n=" << n << " rank " << r;
        }
      }
      EXPECT_EQ(roots, 1) << "n=" << n;
    }
    for (int r = 0; r < n; ++r) {
      EXPECT_LE(children[static_cast<size_t>(r)], 2) << "n=" << n << " rank " << r;
    }
    // A binary tree of n nodes is at least floor(log2 n) tall.
    int floor_log2 = 0;
    while ((2 << floor_log2) <= n) ++floor_log2;
    EXPECT_GE(t.height, floor_log2) << "n=" << n;
  }
}

}  // namespace
}  // namespace placesim::sim::collectives
