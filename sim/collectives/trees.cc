#include "sim/collectives/trees.h"

#include <algorithm>

#include "base/check.h"

namespace placesim::sim::collectives {
namespace {

// ncclGetBtree's parent of `rank` in a tree of `n` ranks.
int BtreeParent(int n, int rank) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && (bit & rank) == 0) bit <<= 1;
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

int Height(const std::vector<int>& parents) {
  int height = 0;
  for (size_t r = 0; r < parents.size(); ++r) {
    int depth = 0;
    for (int p = parents[r]; p >= 0; p = parents[static_cast<size_t>(p)]) {
      ++depth;
      PLACESIM_CHECK(depth <= static_cast<int>(parents.size()));  // no cycles
    }
    height = std::max(height, depth);
  }
  return height;
}

}  // namespace

DoubleBinaryTree BuildDoubleBinaryTree(int n) {
  PLACESIM_CHECK(n >= 1);
  DoubleBinaryTree t;
  for (auto& p : t.parents) p.assign(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    t.parents[0][static_cast<size_t>(r)] = BtreeParent(n, r);
    if (n % 2 == 1) {  // shift by one
      const int u = BtreeParent(n, (r - 1 + n) % n);
      t.parents[1][static_cast<size_t>(r)] = u < 0 ? -1 : (u + 1) % n;
    } else {  // mirror
      const int u = BtreeParent(n, n - 1 - r);
      t.parents[1][static_cast<size_t>(r)] = u < 0 ? -1 : n - 1 - u;
    }
  }
  t.height = std::max(Height(t.parents[0]), Height(t.parents[1]));
  return t;
}

}  // namespace placesim::sim::collectives
