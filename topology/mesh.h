// The device mesh: how many ranks each parallel axis has, and in which order ranks are laid
// out over GPUs. Shared by topology (rank placement), strategies and the simulator.
//
// The world is dp x tp x pp x cp ranks. Expert parallelism does not add ranks: its ep groups
// are carved out of the data-parallel ranks (as in Megatron-Core), so ep must divide dp.
// Thread-safety: plain values.
#ifndef PLACESIM_TOPOLOGY_MESH_H_
#define PLACESIM_TOPOLOGY_MESH_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace placesim::topology {

enum class Axis : uint8_t { kData = 0, kTensor = 1, kPipeline = 2, kContext = 3, kExpert = 4 };
inline constexpr int kNumAxes = 5;
const char* AxisName(Axis a);  // "dp", "tp", "pp", "cp", "ep"

struct MeshShape {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;

  int size(Axis a) const;
  // Number of ranks: dp * tp * pp * cp (ep is inside dp).
  int64_t world() const { return int64_t{dp} * tp * pp * cp; }
};

// The order of the rank-bearing axes (dp, tp, pp, cp) from innermost (fastest varying, the
// neighbours on one node) to outermost. Default: tp, cp, pp, dp (Megatron-LM order).
struct RankOrder {
  std::array<Axis, 4> inner_to_outer = {Axis::kTensor, Axis::kContext, Axis::kPipeline,
                                        Axis::kData};
};

// Parses "tp,cp,pp,dp" (innermost first; each of dp, tp, pp, cp exactly once).
StatusOr<RankOrder> ParseRankOrder(std::string_view text);
std::string ToString(const RankOrder& order);

// Coordinates of a rank on the mesh (ep coordinate = dp coordinate mod ep).
struct MeshCoord {
  int dp = 0, tp = 0, pp = 0, cp = 0, ep = 0;
};

// Rank <-> coordinate under an order. REQUIRES: 0 <= rank < shape.world().
MeshCoord RankToCoord(const MeshShape& shape, const RankOrder& order, int64_t rank);
int64_t CoordToRank(const MeshShape& shape, const RankOrder& order, const MeshCoord& coord);

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_MESH_H_
