// Tree: NCCL's double binary tree all-reduce (Sanders, Speck and Traeff 2009, as in NVIDIA's
// "Massively Scale Your Deep Learning Training with NCCL 2.4", 2019). The trees are NCCL's
// (trees.h): tree A from the ranks' lowest set bits, tree B its mirror (even N) or shift (odd
// N), so a rank interior in one tree is a leaf in the other and has at most two children in
// all. Each tree reduces and broadcasts half the buffer, pipelined in chunks: phase 1 (reduce)
// one flow per edge child -> parent, phase 2 (broadcast) one per edge parent -> child, each
// carrying S/2 with k = the taller tree's height h (about log2 N). Every device sends and
// receives at most S per phase, so an uncontended tree all-reduce takes about
// 2 h alpha + 2 S / B. The analytic model charges each tree flow S (its device's load over both
// trees), which no-contention alpha-beta would otherwise miss.
// All-reduce of a non-empty buffer only. Small all-reduces across nodes favour it (2 h alpha
// beats hierarchical's 2(L-1) + 2(M-1) latency steps), large ones hierarchical (whose bandwidth
// term 2(L-1)/L S / B_nvlink + 2(M-1)/(ML) S / B_nic beats 2 S / B_nic): auto runs it across
// nodes as a challenger, by estimate.
// Thread-safety: immutable.
#include <utility>

#include "sim/collectives/impl/builtins.h"
#include "sim/collectives/trees.h"

namespace placesim::sim::collectives {
namespace {

using strategies::CollectiveKind;

class TreeAllReduce final : public Algorithm {
 public:
  std::string_view name() const override { return "tree"; }
  std::string_view description() const override {
    return "double binary tree (all-reduce only): about 2 log2 N latency steps";
  }
  std::string_view citation() const override {
    return "Sanders, Speck and Traeff 2009, \"Two-tree algorithms for full bandwidth broadcast, "
           "reduction and scan\"; NCCL 2.4's trees";
  }
  NcclRow nccl_row() const override { return NcclRow::kTree; }
  bool AppliesTo(const CollectiveCall& call, const GroupLayout& /*layout*/) const override {
    return SplitsBuffer(call) && call.kind == CollectiveKind::kAllReduce;
  }
  AutoRole AutoRoleFor(const CollectiveCall& /*call*/, const GroupLayout& layout) const override {
    return layout.multi_node ? AutoRole::kChallenger : AutoRole::kNever;
  }
  StatusOr<std::vector<CommPhase>> Plan(CollectiveKind kind, const GroupLayout& layout,
                                        Routes& routes, const char* what) const override {
    PLACESIM_CHECK(kind == CollectiveKind::kAllReduce);
    const int n = layout.n;
    const DoubleBinaryTree trees = BuildDoubleBinaryTree(n);
    CommPhase up;
    CommPhase down;
    for (CommPhase* ph : {&up, &down}) {
      ph->num = 1;
      ph->den = 2;
      ph->analytic_num = 1;
      ph->analytic_den = 1;
      ph->steps = trees.height;
    }
    for (const std::vector<VertexId>& members : layout.groups) {
      for (const std::vector<int>& parents : trees.parents) {  // tree A, then tree B
        auto member = [&](int pos) { return members[static_cast<size_t>(pos)]; };
        for (int pos = 0; pos < n; ++pos) {
          const int parent = parents[static_cast<size_t>(pos)];
          if (parent < 0) continue;
          ASSIGN_OR_RETURN(FlowPath u, routes.Between(member(pos), member(parent), what));
          ASSIGN_OR_RETURN(FlowPath d, routes.Between(member(parent), member(pos), what));
          up.flows.push_back(std::move(u));
          down.flows.push_back(std::move(d));
        }
      }
    }
    std::vector<CommPhase> phases;
    phases.push_back(std::move(up));
    phases.push_back(std::move(down));
    return phases;
  }
};

}  // namespace

std::unique_ptr<const Algorithm> MakeDoubleBinaryTree() {
  return std::make_unique<TreeAllReduce>();
}

}  // namespace placesim::sim::collectives
