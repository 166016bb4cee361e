// What `placesim topology` prints: counts, link groups, per-GPU injection bandwidth and the
// bisection bandwidth of a cluster, as a struct (for JSON output) and as text; and a
// Graphviz DOT export of the whole graph.
//
// Bisection bandwidth (per direction) is the capacity of the smallest cut that splits the
// GPUs into two equal halves, for the part of the cluster that joins them:
//   * single node: the NVSwitch plane is non-blocking, so a balanced cut severs the NVLink
//     of floor(gpus/2) GPUs: floor(gpus/2) x nvlink_bandwidth.
//   * two-level leaf/spine (fat-tree or rail-optimized), nodes >= 2: traffic from one half
//     to the other leaves its NICs (at most half the NIC bandwidth, B_nic / 2) and, when the
//     halves sit on different leaves, the leaves' uplinks. A leaf forwards across the cut at
//     most min(down bandwidth in use, up bandwidth); summed over leaves this is the
//     fabric's through capacity T, and a balanced cut along leaf boundaries carries half of
//     it. So bisection = min(B_nic, T) / 2. With full leaves, d down and u up ports of equal
//     speed and d/u = o, T = B_nic / o, giving the textbook B_nic / (2 o). When every NIC
//     shares a leaf with its peers (one leaf, or one leaf per rail), the cut only severs
//     NIC links: B_nic / 2.
//   * explicit graphs: not computed (a minimum balanced cut of a general graph is NP-hard);
//     reported as absent.
// Thread-safety: pure functions of the cluster.
#ifndef PLACESIM_TOPOLOGY_SUMMARY_H_
#define PLACESIM_TOPOLOGY_SUMMARY_H_

#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/units.h"
#include "topology/cluster.h"

namespace placesim::topology {

// Directed links of one kind and one per-direction bandwidth.
struct LinkGroup {
  LinkKind kind = LinkKind::kNetwork;
  Bandwidth bandwidth;
  int count = 0;
};

struct TopologyStats {
  FabricKind fabric = FabricKind::kSingleNode;
  std::string node_model;  // spec.node.name
  std::string gpu_model;   // spec.node.gpu.name
  int nodes = 0;
  int gpus = 0;
  int gpus_per_node = 0;  // 0 when nodes hold different numbers of GPUs (explicit graphs)
  Bytes hbm_per_gpu;
  std::array<int, 7> vertices_by_kind{};  // index by static_cast<int>(VertexKind)
  std::vector<LinkGroup> link_groups;     // by kind, then bandwidth descending
  int links = 0;                          // directed
  FabricShape shape;
  // Per GPU, per direction. Scale-up: NVLink bandwidth out of GPU 0. Scale-out: total
  // bandwidth of NIC -> switch links divided by the number of GPUs (zero without a fabric).
  Bandwidth scale_up_per_gpu;
  Bandwidth scale_out_per_gpu;
  std::optional<Bandwidth> bisection;  // per direction; see the file comment
};

// O(V + E).
TopologyStats ComputeTopologyStats(const Cluster& cluster);

// Multi-line human-readable summary ending in a newline. O(V + E).
std::string FormatTopologySummary(const Cluster& cluster);

// Writes the graph in Graphviz DOT: one node per vertex (label: name and kind), one edge
// per directed link (label: kind and per-direction bandwidth). O(V + E).
void WriteDot(const Cluster& cluster, std::ostream& out);

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_SUMMARY_H_
