// The storage behind Cluster: a Boost.Graph adjacency_list plus dense side tables.
// Included only by topology/*.cc; no other module may include it (Boost.Graph types never
// leave topology/).
//
// Invariants: graph vertex descriptor i == VertexId{i}; the bundled edge property `link`
// of every graph edge is the LinkId whose LinkInfo is links[link]; links[i].from/to match
// the edge's source/target.
// Thread-safety: immutable once built; concurrent reads are safe.
#ifndef PLACESIM_TOPOLOGY_INTERNAL_GRAPH_H_
#define PLACESIM_TOPOLOGY_INTERNAL_GRAPH_H_

#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "topology/cluster.h"

namespace placesim::topology::internal {

struct EdgeProps {
  int32_t link = -1;
};

// Directed; bidirectionalS keeps in-edges too, which the reverse searches of routing and
// validation need. vecS storage keeps descriptors equal to dense ids.
using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexInfo, EdgeProps>;

struct ClusterData {
  ClusterSpec spec;
  Graph graph;
  std::vector<LinkInfo> links;                       // by LinkId
  std::vector<VertexId> gpus;                        // by global GPU index
  std::vector<int32_t> gpu_index;                    // by VertexId; -1 if not a GPU
  std::vector<std::vector<VertexId>> node_gpus;      // by node
  std::vector<VertexId> host_memory;                 // by node
  std::vector<VertexId> nvme;                        // by node
  std::unordered_map<std::string, int32_t> by_name;  // vertex name -> VertexId
  std::array<int, 7> vertex_count{};                 // by VertexKind
  std::array<int, 5> link_count{};                   // by LinkKind
  FabricShape fabric;
  // Compressed adjacency derived from `graph` by Finalize(), for the routing hot loop: the
  // links entering vertex v are in_links[in_begin[v] .. in_begin[v+1]), leaving it
  // out_links[out_begin[v] .. out_begin[v+1]), each in construction order. Flat int arrays
  // avoid chasing Boost's per-edge list nodes on every relaxation.
  std::vector<int32_t> in_begin, in_links, out_begin, out_links;
  // in_from[k] is the tail vertex of in_links[k]; vertex_node[v] is graph[v].node. The search
  // reads them for every link it scans, most of which it rejects (pruned or settled), so they
  // are kept apart from the wider LinkInfo and vertex records.
  std::vector<int32_t> in_from, vertex_node;

  VertexId AddVertex(VertexKind kind, std::string name, int node, int local_index, Bytes capacity);
  // Adds one directed link; returns its id.
  LinkId AddLink(VertexId from, VertexId to, LinkKind kind, Bandwidth bw, Duration latency);
  // Adds both directions (consecutive ids, each other's reverse); returns the first.
  LinkId AddDuplex(VertexId a, VertexId b, LinkKind kind, Bandwidth bw, Duration latency);
  // Sets up the per-node tables; call once the node count is known.
  void InitNodes(int nodes);
  // Builds the compressed adjacency; call once after the last AddLink.
  void Finalize();
};

struct ClusterAccess {
  static Cluster Make(std::unique_ptr<ClusterData> data) { return Cluster(std::move(data)); }
  static const ClusterData& Data(const Cluster& c) { return *c.data_; }
};

}  // namespace placesim::topology::internal

#endif  // PLACESIM_TOPOLOGY_INTERNAL_GRAPH_H_
