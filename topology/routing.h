// Routing on the cluster graph: deterministic shortest paths with equal-cost multipath
// (ECMP) spreading, and a per-pair route cache.
//
// Path metric, compared lexicographically (smaller is better):
//   1. transits: intermediate vertices that are endpoints, i.e. GPUs, host memories and
//      NVMe drives. Traffic through a GPU is a software relay and traffic through host
//      memory crosses the CPU root complex, both of which NCCL-style transports avoid when a
//      switch path exists; they are still used when nothing else connects two vertices
//      (e.g. GPU-to-GPU over PCIe across root ports, or an explicit ring of GPUs).
//   2. hops: number of links.
//   3. bottleneck: the narrowest link's bandwidth, larger is better (widest-shortest path).
//      Two GPUs of a DGX-A100 that share a PCIe switch are two hops apart both through the
//      NVSwitch (300 GB/s) and through the PCIe switch (32 GB/s); NCCL uses NVLink, and so
//      must the route.
//   4. latency: sum of link latencies (integer picoseconds, so ties are exact).
// Among equal-cost next links (which spine, which parallel cable, which of two NICs on the
// GPU's PCIe switch) the choice at hop k is hash(src, dst, k) modulo the number of
// candidates, taken in link construction order: the same pair always gets the same route,
// and different pairs spread over the equal-cost links, as hash-based ECMP does in switches.
// Routes are directed: the route b->a is computed independently of a->b.
//
// Search: a Dijkstra on the reversed graph from dst over the metric above, stopped when src
// is settled, then a walk forward from src along links that keep the metric tight. The
// metric is isotone in its first three parts (a narrower link never makes a path wider), so
// those are optimal; the latency tie-break among equally wide paths is best effort.
// On the built fabrics (one node, fat-tree, rail-optimized), where nodes meet only at
// scale-out switches, the search skips the vertices of every node other than src's and dst's:
// a path through a third node enters and leaves it through its NICs, at least two hops more
// than the switch path it bypasses, so no shortest path uses one. That keeps a cross-node
// search to the two nodes and the switches. Explicit graphs are searched whole.
// The search runs in two passes. The first looks only for routes that transit no endpoint:
// a bidirectional breadth-first search from src and dst (through non-endpoints only) finds
// the fewest hops H of such a route and the DAG of the vertices and links on the H-hop
// paths; the metric is then evaluated on that DAG alone, from dst back to src. It finds
// every route the full search would (same links, same ECMP choice; routing.cc proves it),
// and the full search runs only when no transit-free route exists. The BFS grows the side
// with fewer links to scan, so two GPUs behind one NVSwitch plane of N GPUs meet at the
// switch without scanning its N links, and a route between two pods of a three-tier Clos
// costs the two pods' spines and the cores on its DAG instead of a Dijkstra over every
// switch of the fabric.
// Complexity per uncached route: O(sum of the degrees of the vertices the BFS expands + the
// DAG's links) when a transit-free route exists, else O((V + E) log V); a cached route costs
// one hash lookup. A Router (or FindRoute) allocates O(V) search state once.
#ifndef PLACESIM_TOPOLOGY_ROUTING_H_
#define PLACESIM_TOPOLOGY_ROUTING_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/units.h"
#include "topology/cluster.h"

namespace placesim::topology {

struct Route {
  std::vector<LinkId> links;  // from src to dst in order; empty when src == dst
  Bandwidth bottleneck;       // BottleneckBandwidth(links)
  Duration latency;           // RouteLatency(links)
};

// The smallest bandwidth on `links` (bytes/s per direction); +infinity for an empty route,
// so moving bytes along it takes no time. REQUIRES: every id valid for `cluster`. O(n).
Bandwidth BottleneckBandwidth(const Cluster& cluster, std::span<const LinkId> links);
// Sum of the link latencies. O(n).
Duration RouteLatency(const Cluster& cluster, std::span<const LinkId> links);

// Computes the route src -> dst without caching; nullopt when dst is not reachable from src.
// REQUIRES: src and dst are valid vertices of `cluster`. Thread-safe (allocates its own
// search state).
std::optional<Route> FindRoute(const Cluster& cluster, VertexId src, VertexId dst);

// The same route computed by the full search alone, without the transit-free first pass: the
// reference the tests compare FindRoute with. Same contract as FindRoute.
std::optional<Route> FindRouteExhaustive(const Cluster& cluster, VertexId src, VertexId dst);

// Caches routes per (src, dst) pair and reuses its search buffers between uncached look-ups;
// pairs on two nodes whose routes cross the fabric between the same two switches share the
// search of the fabric part (Router::Share in routing.cc, which proves the routes the same as
// FindRoute's). Memory grows with the number of distinct pairs asked for (a route of h hops
// costs about 4h + 100 bytes), plus at most 64 MiB of shared searches. A look-up of a cached
// pair costs one hash probe. The cluster must outlive the Router.
// Thread-safety: not thread-safe (Find mutates the cache); use one Router per thread.
class Router {
 public:
  explicit Router(const Cluster& cluster);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The route src -> dst, or nullptr when dst is unreachable from src. The pointer stays
  // valid, and the route unchanged, for the Router's lifetime.
  // REQUIRES: src and dst are valid vertices of the cluster.
  const Route* Find(VertexId src, VertexId dst);

  size_t cached_pairs() const { return cached_pairs_; }
  // How many of the cached routes were spliced from a search shared with other pairs
  // (Router::Share in routing.cc) rather than searched on their own.
  size_t shared_routes() const;
  const Cluster& cluster() const { return cluster_; }

  class Search;  // search buffers, defined in routing.cc
  class Share;   // searches shared between pairs, defined in routing.cc

 private:
  const Cluster& cluster_;
  std::unique_ptr<Search> search_;
  std::unique_ptr<Share> share_;  // uses *search_
  // The cache: an open-addressing table of (src, dst) keys, linear probing, at most half
  // full, pointing into routes_ (null = unreachable); a deque, so the pointers stay valid as
  // it grows. A look-up reads one slot and the route, not a bucket, a node and the route.
  struct Slot {
    uint64_t key;
    const Route* route;
  };
  void GrowCache();
  std::vector<Slot> slots_;
  std::deque<Route> routes_;
  size_t cached_pairs_ = 0;
};

}  // namespace placesim::topology

#endif  // PLACESIM_TOPOLOGY_ROUTING_H_
