// Rank placement; see placement.h for the rule.
#include "topology/placement.h"

#include <fmt/format.h>

#include <array>

#include "base/errors.h"

namespace placesim::topology {

StatusOr<std::vector<VertexId>> PlaceRanks(const Cluster& cluster, const MeshShape& mesh,
                                           const RankOrder& order) {
  ErrorList errors;
  for (Axis a : {Axis::kData, Axis::kTensor, Axis::kPipeline, Axis::kContext, Axis::kExpert}) {
    if (mesh.size(a) < 1) {
      errors.Add(fmt::format("mesh.{}", AxisName(a)), std::to_string(mesh.size(a)), "must be >= 1");
    }
  }
  if (mesh.ep >= 1 && mesh.dp >= 1 && mesh.dp % mesh.ep != 0) {
    errors.Add("mesh.ep", std::to_string(mesh.ep),
               fmt::format("must divide dp ({}); expert groups are carved out of the "
                           "data-parallel ranks",
                           mesh.dp));
  }
  std::array<int, kNumAxes> seen{};
  bool order_ok = true;
  for (Axis a : order.inner_to_outer) {
    const int i = static_cast<int>(a);
    if (i < 0 || i >= kNumAxes || a == Axis::kExpert || seen[i]++ > 0) order_ok = false;
  }
  if (!order_ok) {
    errors.Add("rank_order", fmt::format("\"{}\"", ToString(order)),
               "expected each of dp, tp, pp, cp exactly once");
  }
  // In double so that absurd sizes cannot overflow int64 before they are refused.
  const double world = static_cast<double>(mesh.dp) * mesh.tp * mesh.pp * mesh.cp;
  if (errors.empty() && world != static_cast<double>(cluster.num_gpus())) {
    errors.Add(
        "mesh",
        fmt::format("dp={} x tp={} x pp={} x cp={} = {:.0f} ranks", mesh.dp, mesh.tp, mesh.pp,
                    mesh.cp, world),
        fmt::format("must equal the cluster's {} GPUs (one rank per GPU)", cluster.num_gpus()));
  }
  if (!errors.empty()) return errors.ToStatus();

  std::vector<VertexId> gpus(static_cast<size_t>(mesh.world()));
  for (size_t r = 0; r < gpus.size(); ++r) gpus[r] = cluster.gpu(static_cast<int>(r));
  return gpus;
}

}  // namespace placesim::topology
