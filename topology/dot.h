// The cluster as a picture for Graphviz (`placesim topology --dot FILE`): drawn for people,
// not for tools. WriteDot (summary.h) stays the exact graph, one edge per directed link;
// this writer draws one edge per cable (both directions of a full-duplex link), a box per
// node around its GPUs, switches and NICs, edge colours by link kind and a legend. Past a
// size where per-GPU pictures stop being readable (and `dot` stops finishing quickly), it
// draws one vertex per node instead, with the scale-out switches and the cables between.
// Thread-safety: stateless functions.
#ifndef PLACESIM_TOPOLOGY_DOT_H_
#define PLACESIM_TOPOLOGY_DOT_H_

#include <ostream>
#include <string>

#include "topology/cluster.h"

namespace placesim::topology {

enum class DotLevel {
  kAuto,  // kGpu up to kMaxGpusPerGpuDot GPUs, kNode beyond
  kGpu,   // every vertex: GPUs, NVSwitches, NICs, host memory...; a cluster box per node
  kNode,  // one vertex per node, plus every vertex outside the nodes (scale-out switches)
};

// Past this many GPUs kAuto draws nodes: 64 GPUs (8 DGX nodes) is about 300 vertices and
// 600 cables, which `dot` lays out in about a second and a screen still shows.
inline constexpr int kMaxGpusPerGpuDot = 64;

// Writes `cluster` as a Graphviz digraph whose edges carry no arrows (dir=none) except on
// simplex links. Vertex ids are stable ("v<VertexId>" or "n<node>"); labels are the vertex
// names. Node-level edges that stand for several cables are thicker and say how many in their
// tooltip ("8 x network 50.00 GB/s"). O(V + E)
// time and output.
void WriteReadableDot(const Cluster& cluster, std::ostream& out, DotLevel level = DotLevel::kAuto);

// `s` escaped for a double-quoted DOT attribute (quotes and backslashes), for both writers.
std::string DotEscape(const std::string& s);

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_DOT_H_
