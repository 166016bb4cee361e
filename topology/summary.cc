// Topology statistics, the text summary and the DOT export; the bisection derivation is in
// summary.h.
// Thread-safety: pure functions of the cluster.
#include "topology/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/graphviz.hpp>
#include <map>

#include "topology/dot.h"
#include "topology/internal/graph.h"

namespace placesim::topology {
namespace {

std::optional<Bandwidth> Bisection(const Cluster& cluster, const TopologyStats& stats) {
  const ClusterSpec& spec = cluster.spec();
  const NodeSpec& n = spec.node;
  switch (spec.fabric.kind) {
    case FabricKind::kExplicit:
      return std::nullopt;
    case FabricKind::kSingleNode:
      if (stats.scale_up_per_gpu.bytes_per_second() <= 0) return std::nullopt;
      return n.nvlink_bandwidth * static_cast<double>(n.gpus / 2);
    case FabricKind::kFatTree:
    case FabricKind::kRailOptimized:
    case FabricKind::kClos:
      break;
  }
  if (spec.nodes == 1) {
    // Only one node: the scale-out fabric joins nothing, so report the NVSwitch plane.
    if (stats.scale_up_per_gpu.bytes_per_second() <= 0) return std::nullopt;
    return n.nvlink_bandwidth * static_cast<double>(n.gpus / 2);
  }
  const FabricShape& s = stats.shape;
  const Bandwidth nic_total = n.nic_bandwidth * static_cast<double>(int64_t{spec.nodes} * n.nics);
  const bool one_leaf_per_group = s.leaves <= 1 || (s.rails > 0 && s.leaves_per_rail == 1);
  if (one_leaf_per_group) return nic_total / 2.0;
  const Bandwidth link_bw = spec.fabric.link_bandwidth.bytes_per_second() > 0
                                ? spec.fabric.link_bandwidth
                                : n.nic_bandwidth;
  // Through capacity T: per leaf, min(NIC bandwidth attached, uplink bandwidth).
  Bandwidth through;
  const auto add_leaves = [&](int64_t ports, int leaves) {
    for (int l = 0; l < leaves; ++l) {
      // Zero on the empty leaves of a partly filled Clos pod.
      const int64_t used =
          std::clamp<int64_t>(ports - int64_t{l} * s.down_ports_per_leaf, 0, s.down_ports_per_leaf);
      through += std::min(n.nic_bandwidth * static_cast<double>(used),
                          link_bw * static_cast<double>(s.up_ports_per_leaf));
    }
  };
  if (s.rails > 0) {
    for (int r = 0; r < s.rails; ++r) add_leaves(spec.nodes, s.leaves_per_rail);
  } else if (s.cores > 0) {
    // Three-tier Clos: a pod passes min(what its leaves pass up, its spines' core uplinks).
    const int64_t pod_ports = int64_t{std::min(spec.fabric.pod_nodes, spec.nodes)} * n.nics;
    const Bandwidth pod_up = link_bw / spec.fabric.pod_oversubscription *
                             static_cast<double>(int64_t{s.spines_per_pod} * s.spine_ports);
    for (int p = 0; p < s.pods; ++p) {
      const Bandwidth before = through;
      through = Bandwidth();
      add_leaves(std::min(pod_ports, int64_t{spec.nodes} * n.nics - p * pod_ports),
                 s.leaves_per_pod);
      through = before + std::min(through, pod_up);
    }
  } else {
    add_leaves(int64_t{spec.nodes} * n.nics, s.leaves);
  }
  return std::min(nic_total, through) / 2.0;
}

}  // namespace

TopologyStats ComputeTopologyStats(const Cluster& cluster) {
  const internal::ClusterData& g = internal::ClusterAccess::Data(cluster);
  TopologyStats st;
  st.fabric = g.spec.fabric.kind;
  st.node_model = g.spec.node.name;
  st.gpu_model = g.spec.node.gpu.name;
  st.nodes = cluster.num_nodes();
  st.gpus = cluster.num_gpus();
  st.hbm_per_gpu = g.spec.node.gpu.hbm_capacity;
  st.gpus_per_node = st.nodes > 0 ? static_cast<int>(g.node_gpus[0].size()) : 0;
  for (const auto& ng : g.node_gpus) {
    if (static_cast<int>(ng.size()) != st.gpus_per_node) st.gpus_per_node = 0;
  }
  st.vertices_by_kind = g.vertex_count;
  st.links = cluster.num_links();
  st.shape = g.fabric;

  std::map<std::pair<int, double>, int> groups;  // (kind, -bandwidth) -> count
  Bandwidth nic_out;
  for (const LinkInfo& l : g.links) {
    ++groups[{static_cast<int>(l.kind), -l.bandwidth.bytes_per_second()}];
    if (l.kind == LinkKind::kNetwork && g.graph[l.from.value].kind == VertexKind::kNic) {
      nic_out += l.bandwidth;
    }
  }
  for (const auto& [key, count] : groups) {
    st.link_groups.push_back(
        {static_cast<LinkKind>(key.first), Bandwidth::BytesPerSecond(-key.second), count});
  }
  if (st.gpus > 0) {
    for (LinkId l : cluster.out_links(cluster.gpu(0))) {
      if (g.links[l.value].kind == LinkKind::kNvlink)
        st.scale_up_per_gpu += g.links[l.value].bandwidth;
    }
    st.scale_out_per_gpu = nic_out / static_cast<double>(st.gpus);
  }
  st.bisection = Bisection(cluster, st);
  return st;
}

std::string FormatTopologySummary(const Cluster& cluster) {
  const TopologyStats st = ComputeTopologyStats(cluster);
  std::string out;
  out += fmt::format("cluster: {} node{} of {} ({} fabric)\n", st.nodes, st.nodes == 1 ? "" : "s",
                     st.node_model.empty() ? "unnamed node" : st.node_model,
                     FabricKindName(st.fabric));
  out += fmt::format("GPUs: {} x {}", st.gpus, st.gpu_model.empty() ? "unnamed GPU" : st.gpu_model);
  if (st.gpus_per_node > 0) out += fmt::format(", {} per node", st.gpus_per_node);
  out += fmt::format(", {} HBM each\n", ToString(st.hbm_per_gpu));
  out += "vertices:";
  for (int k = 0; k < static_cast<int>(st.vertices_by_kind.size()); ++k) {
    if (st.vertices_by_kind[k] == 0) continue;
    out +=
        fmt::format(" {} {},", VertexKindName(static_cast<VertexKind>(k)), st.vertices_by_kind[k]);
  }
  if (out.back() == ',') out.pop_back();
  out += fmt::format("\nlinks: {} directed (per-direction bandwidth)\n", st.links);
  for (const LinkGroup& lg : st.link_groups) {
    out += fmt::format("  {:<8} {:>7} x {}\n", LinkKindName(lg.kind), lg.count,
                       ToString(lg.bandwidth));
  }
  const FabricShape& s = st.shape;
  if (s.leaves > 0) {
    out += fmt::format("fabric: {} {}", s.leaves, s.leaves == 1 ? "leaf" : "leaves");
    if (s.rails > 0) out += fmt::format(" ({} rails x {})", s.rails, s.leaves_per_rail);
    out +=
        fmt::format(", {} {}; {} down / {} up ports per leaf", s.spines,
                    s.spines == 1 ? "spine" : "spines", s.down_ports_per_leaf, s.up_ports_per_leaf);
    if (s.spines > 0) out += fmt::format(", {} cables per leaf-spine pair", s.links_per_leaf_spine);
    out += '\n';
    if (s.pods > 0) {
      out += fmt::format(
          "pods: {} x ({} leaves, {} spines); {} cores ({} planes x {}), {} cables "
          "per spine-core pair at 1/{} bandwidth\n",
          s.pods, s.leaves_per_pod, s.spines_per_pod, s.cores, s.spines_per_pod, s.cores_per_plane,
          s.links_per_spine_core, cluster.spec().fabric.pod_oversubscription);
    }
  }
  out += fmt::format("per-GPU injection: scale-up {} (NVLink), scale-out {} (network)\n",
                     ToString(st.scale_up_per_gpu), ToString(st.scale_out_per_gpu));
  out += fmt::format("bisection bandwidth: {}\n",
                     st.bisection ? ToString(*st.bisection) + " per direction"
                                  : std::string("not computed for this fabric"));
  return out;
}

void WriteDot(const Cluster& cluster, std::ostream& out) {
  const internal::ClusterData& g = internal::ClusterAccess::Data(cluster);
  const auto vertex_label = [&](std::ostream& os, internal::Graph::vertex_descriptor v) {
    const VertexInfo& info = g.graph[v];
    os << "[label=\"" << DotEscape(info.name) << "\\n" << VertexKindName(info.kind) << "\"]";
  };
  const auto edge_label = [&](std::ostream& os, internal::Graph::edge_descriptor e) {
    const LinkInfo& l = g.links[g.graph[e].link];
    os << "[label=\"" << LinkKindName(l.kind) << " " << ToString(l.bandwidth) << "\"]";
  };
  boost::write_graphviz(out, g.graph, vertex_label, edge_label);
}

}  // namespace placesim::topology
