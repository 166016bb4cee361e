// The cluster graph: every GPU, switch, NIC, host memory and NVMe drive of a cluster as a
// vertex, every physical link as two directed links (one per direction of a full-duplex
// cable), built from a ClusterSpec by BuildCluster.
//
// The rest of placesim sees dense integer ids only:
//   VertexId  0 .. num_vertices()-1, in construction order (see cluster.cc for the order);
//   LinkId    0 .. num_links()-1; the two directions of a full-duplex link are consecutive
//             (even id = first direction, id ^ 1 = its reverse) for generated fabrics.
// Both are small strong-typedef structs so a vertex id cannot be passed where a link id is
// expected; `.value` is the index for callers that keep per-vertex or per-link arrays.
// The underlying Boost.Graph adjacency_list stays inside topology/ (internal/graph.h).
//
// Invariants of a built Cluster: every link has bandwidth > 0 and latency >= 0; every GPU
// reaches every other GPU and its node's host memory, and is reached by them; counts are
// within the limits stated on BuildCluster.
//
// Thread-safety: a Cluster is immutable after BuildCluster; all const methods may be called
// concurrently. (The route cache lives in Router, routing.h, which is not thread-safe.)
#ifndef PLACESIM_TOPOLOGY_CLUSTER_H_
#define PLACESIM_TOPOLOGY_CLUSTER_H_

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "topology/spec.h"

namespace placesim::topology {

struct VertexId {
  int32_t value = -1;  // -1 = none
  constexpr bool valid() const { return value >= 0; }
  friend constexpr auto operator<=>(VertexId, VertexId) = default;
};

struct LinkId {
  int32_t value = -1;  // -1 = none
  constexpr bool valid() const { return value >= 0; }
  friend constexpr auto operator<=>(LinkId, LinkId) = default;
};

struct VertexInfo {
  VertexKind kind = VertexKind::kGpu;
  std::string name;  // unique, e.g. "node3/gpu5", "leaf2", "rail1/leaf0", "spine0"
  int node = -1;     // node the vertex belongs to; -1 for scale-out switches
  // Index among the vertices of its kind on its node (GPU 5 of node 3 -> 5); for scale-out
  // switches, among the leaves or the spines of the fabric.
  int local_index = 0;
  // Memory capacity for GPUs (HBM), host memory and NVMe; zero for other kinds.
  Bytes capacity;
};

struct LinkInfo {
  VertexId from;
  VertexId to;
  LinkKind kind = LinkKind::kNetwork;
  Bandwidth bandwidth;  // this direction
  Duration latency;     // paid once per traversal of this link
  LinkId reverse;       // the opposite direction of the same cable; invalid for a simplex link
};

// Shape of a generated two-level scale-out fabric (all zero for single-node and explicit).
struct FabricShape {
  int leaves = 0;
  int spines = 0;
  int down_ports_per_leaf = 0;   // d = floor(radix * o / (o + 1))
  int up_ports_per_leaf = 0;     // u = radix - d (zero when there is a single leaf)
  int links_per_leaf_spine = 0;  // u / spines parallel cables between a leaf and a spine
  int rails = 0;                 // rail-optimized only: NICs per node
  int leaves_per_rail = 0;       // rail-optimized only
  // Three-tier Clos only (leaves and spines above count every pod's).
  int pods = 0;
  int leaves_per_pod = 0;
  int spines_per_pod = 0;        // spine s of every pod joins core plane s
  int spine_ports = 0;           // down ports of a spine = up ports = radix / 2
  int cores_per_plane = 0;       // zero when there is a single pod
  int cores = 0;                 // spines_per_pod x cores_per_plane
  int links_per_spine_core = 0;  // spine_ports / cores_per_plane parallel cables
};

namespace internal {
struct ClusterData;
struct ClusterAccess;
}  // namespace internal

class Cluster {
 public:
  Cluster(const Cluster& other);
  Cluster& operator=(const Cluster& other);
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  ~Cluster();

  const ClusterSpec& spec() const;

  int num_gpus() const;
  // Nodes: spec().nodes for generated fabrics; 1 + the largest node index of the explicit
  // vertices for kExplicit.
  int num_nodes() const;
  int num_vertices() const;
  int num_links() const;  // directed links

  // Global GPU index -> vertex. For generated fabrics index = node * gpus_per_node + local;
  // for kExplicit, the order the GPUs are listed in. REQUIRES: 0 <= index < num_gpus().
  VertexId gpu(int index) const;
  // Vertex -> global GPU index, or -1 when `v` is not a GPU.
  int gpu_index(VertexId v) const;
  // The GPUs of one node, in local order. REQUIRES: 0 <= node < num_nodes().
  std::span<const VertexId> node_gpus(int node) const;
  // Invalid VertexId when the node has none (possible for nvme, and for host memory of an
  // explicit node without GPUs). REQUIRES: 0 <= node < num_nodes().
  VertexId host_memory(int node) const;
  VertexId nvme(int node) const;

  // REQUIRES: v / l valid and in range. O(1).
  const VertexInfo& vertex(VertexId v) const;
  const LinkInfo& link(LinkId l) const;
  // Directed links leaving / entering `v`, in construction order. O(degree).
  std::vector<LinkId> out_links(VertexId v) const;
  std::vector<LinkId> in_links(VertexId v) const;
  // nullopt when no vertex has that name. O(1) expected.
  std::optional<VertexId> FindVertex(std::string_view name) const;

  int CountVertices(VertexKind kind) const;  // O(1)
  int CountLinks(LinkKind kind) const;       // directed links, O(1)
  const FabricShape& fabric_shape() const;

 private:
  friend struct internal::ClusterAccess;
  explicit Cluster(std::unique_ptr<internal::ClusterData> data);
  std::unique_ptr<internal::ClusterData> data_;
};

// Limits that keep a scenario's cost bounded; a spec beyond them is refused before anything
// is allocated.
// 262,144 GPUs: clusters of 100,000+ GPUs (a 131,072-GPU job) with room to spare.
inline constexpr int64_t kMaxGpus = 262'144;
inline constexpr int64_t kMaxNodeGpus = 65'536;  // GPUs of one node
inline constexpr int64_t kMaxNodes = 65'536;
inline constexpr int64_t kMaxVertices = 1'000'000;
inline constexpr int64_t kMaxLinks = 8'000'000;  // directed

// Validates `spec` and builds its graph. Every problem is reported at once: the status
// message has one "path: value: rule" line per problem (kInvalidArgument), e.g.
//   cluster.node.nvlink_bandwidth: -1.00 B/s: must be >= 0 (0 = no NVLink)
//   cluster.links[3].bandwidth: 0.00 B/s: must be > 0
// Graph shape per fabric kind (full contract in cluster.cc):
//   kSingleNode     one node, no scale-out switches (NICs, if any, are left unconnected).
//   kFatTree        two-level leaf/spine; NIC ports fill leaves in order.
//   kRailOptimized  NIC i of every node on rail i's leaves; all leaves joined by spines.
//   kExplicit       spec.vertices and spec.links as written.
//   kClos           pods of leaves and spines (NIC ports fill a pod's leaves in order);
//                   spine s of every pod cabled to core plane s.
// Complexity: O(V + E) after validation, which is itself O(V + E); a spec over the limits
// above is refused in O(1) (plus O(size of spec.vertices/links) for explicit graphs).
StatusOr<Cluster> BuildCluster(const ClusterSpec& spec);

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_CLUSTER_H_
