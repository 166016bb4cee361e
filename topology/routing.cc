// Deterministic shortest-path routing with hash-based ECMP; the metric and its rationale are
// in routing.h.
// Thread-safety: FindRoute is reentrant; a Router is single-threaded.
#include "topology/routing.h"

#include <algorithm>
#include <compare>
#include <limits>

#include "topology/internal/graph.h"

namespace placesim::topology {
namespace {

// SplitMix64 finaliser: a fixed, platform-independent mixing function (unlike std::hash).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t PairKey(VertexId src, VertexId dst) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(src.value)) << 32) |
         static_cast<uint32_t>(dst.value);
}

// Built fabrics (one node, fat-tree, rail-optimized) join nodes only through scale-out
// switches, so a route never gains by crossing a third node: entering and leaving it costs
// at least two more hops than the switch path. Explicit graphs may join nodes directly and
// are searched whole.
bool PruneForeignNodes(const Cluster& cluster) {
  return cluster.spec().fabric.kind != FabricKind::kExplicit;
}

bool IsEndpoint(VertexKind k) {
  return k == VertexKind::kGpu || k == VertexKind::kHostMemory || k == VertexKind::kNvme;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

}  // namespace

class Router::Search {
 public:
  // prune_foreign_nodes: never pass through a node other than the route's two ends (see
  // routing.h); exact for the built fabrics, where nodes meet only at scale-out switches.
  Search(const internal::ClusterData& g, bool prune_foreign_nodes)
      : g_(g),
        prune_(prune_foreign_nodes),
        cost_(boost::num_vertices(g.graph)),
        reached_(cost_.size(), 0),
        settled_(cost_.size(), 0) {}

  std::optional<Route> Run(VertexId src, VertexId dst) {
    const int32_t n = static_cast<int32_t>(cost_.size());
    PLACESIM_CHECK(src.valid() && src.value < n && dst.valid() && dst.value < n);
    if (src == dst) {
      return Route{
          {}, Bandwidth::BytesPerSecond(std::numeric_limits<double>::infinity()), Duration::Zero()};
    }
    NextEpoch();
    src_node_ = g_.graph[src.value].node;
    dst_node_ = g_.graph[dst.value].node;
    if (!Settle(src.value, dst.value)) return std::nullopt;

    Route route;
    route.bottleneck = Bandwidth::BytesPerSecond(std::numeric_limits<double>::infinity());
    const uint64_t seed = Mix(PairKey(src, dst));
    std::vector<int32_t> candidates;
    int32_t u = src.value;
    for (uint64_t hop = 0; u != dst.value; ++hop) {
      PLACESIM_CHECK(hop < static_cast<uint64_t>(n));  // a tight walk cannot revisit a vertex
      candidates.clear();
      for (int32_t k = g_.out_begin[u]; k < g_.out_begin[u + 1]; ++k) {
        const int32_t l = g_.out_links[k];
        const int32_t w = g_.links[l].to.value;
        if (settled_[w] == epoch_ && !Foreign(w) && Extend(w, dst.value, l) == cost_[u])
          candidates.push_back(l);
      }
      PLACESIM_CHECK(!candidates.empty());
      const int32_t l = candidates[Mix(seed + hop) % candidates.size()];
      const LinkInfo& info = g_.links[l];
      route.links.push_back(LinkId{l});
      route.bottleneck = std::min(route.bottleneck, info.bandwidth);
      route.latency = Duration::Picoseconds(
          SaturatingAdd(route.latency.picoseconds(), info.latency.picoseconds()));
      u = info.to.value;
    }
    return route;
  }

 private:
  struct Cost {
    int32_t transits = 0;
    int32_t hops = 0;
    // Minus the bottleneck bandwidth in bytes/s, so that smaller is better like the rest;
    // -infinity for the empty path at dst.
    double neg_bottleneck = -std::numeric_limits<double>::infinity();
    int64_t latency_ps = 0;
    friend auto operator<=>(const Cost&, const Cost&) = default;
  };
  using Entry = std::pair<Cost, int32_t>;

  // The cost from the tail of link `l` to dst through its head `w` (w already settled).
  Cost Extend(int32_t w, int32_t dst, int32_t l) const {
    const Cost& c = cost_[w];
    const bool transit = w != dst && IsEndpoint(g_.graph[w].kind);
    return Cost{c.transits + (transit ? 1 : 0), c.hops + 1,
                std::max(c.neg_bottleneck, -g_.links[l].bandwidth.bytes_per_second()),
                SaturatingAdd(c.latency_ps, g_.links[l].latency.picoseconds())};
  }

  void NextEpoch() {
    if (++epoch_ == 0) {  // wrapped: forget every stamp
      std::fill(reached_.begin(), reached_.end(), 0);
      std::fill(settled_.begin(), settled_.end(), 0);
      epoch_ = 1;
    }
  }

  // Dijkstra from dst over reversed links until src is settled; false if it never is.
  // The heap lives in heap_ so its buffer is reused between searches.
  bool Settle(int32_t src, int32_t dst) {
    const auto later = [](const Entry& a, const Entry& b) { return a.first > b.first; };
    heap_.clear();
    cost_[dst] = Cost{};
    reached_[dst] = epoch_;
    heap_.push_back({Cost{}, dst});
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      const auto [c, v] = heap_.back();
      heap_.pop_back();
      if (settled_[v] == epoch_ || cost_[v] < c) continue;
      settled_[v] = epoch_;
      if (v == src) return true;
      // Once src is reached, a vertex whose own cost already has as many transits and hops
      // as src's best so far cannot lie on a better path: src is at least one hop further.
      if (reached_[src] == epoch_ && CannotImprove(c, cost_[src])) continue;
      for (int32_t k = g_.in_begin[v]; k < g_.in_begin[v + 1]; ++k) {
        const int32_t u = g_.in_from[k];
        if (settled_[u] == epoch_ || Foreign(u)) continue;
        const Cost nc = Extend(v, dst, g_.in_links[k]);
        if (reached_[u] != epoch_ || nc < cost_[u]) {
          cost_[u] = nc;
          reached_[u] = epoch_;
          heap_.push_back({nc, u});
          std::push_heap(heap_.begin(), heap_.end(), later);
        }
      }
    }
    return false;
  }

  // True when every path src -> v -> dst costs more than `best`: it has at least c's
  // transits and one hop more than c, and the metric compares transits, then hops.
  static bool CannotImprove(const Cost& c, const Cost& best) {
    return c.transits > best.transits || (c.transits == best.transits && c.hops >= best.hops);
  }

  bool Foreign(int32_t v) const {
    if (!prune_) return false;
    const int node = g_.vertex_node[static_cast<size_t>(v)];
    return node >= 0 && node != src_node_ && node != dst_node_;
  }

  const internal::ClusterData& g_;
  const bool prune_;
  int src_node_ = -1;
  int dst_node_ = -1;
  std::vector<Cost> cost_;
  std::vector<uint32_t> reached_;  // == epoch_ when cost_ holds a value of this search
  std::vector<uint32_t> settled_;  // == epoch_ when cost_ is final in this search
  uint32_t epoch_ = 0;
  std::vector<Entry> heap_;
};

Bandwidth BottleneckBandwidth(const Cluster& cluster, std::span<const LinkId> links) {
  Bandwidth b = Bandwidth::BytesPerSecond(std::numeric_limits<double>::infinity());
  for (LinkId l : links) b = std::min(b, cluster.link(l).bandwidth);
  return b;
}

Duration RouteLatency(const Cluster& cluster, std::span<const LinkId> links) {
  int64_t ps = 0;
  for (LinkId l : links) ps = SaturatingAdd(ps, cluster.link(l).latency.picoseconds());
  return Duration::Picoseconds(ps);
}

std::optional<Route> FindRoute(const Cluster& cluster, VertexId src, VertexId dst) {
  Router::Search search(internal::ClusterAccess::Data(cluster), PruneForeignNodes(cluster));
  return search.Run(src, dst);
}

Router::Router(const Cluster& cluster)
    : cluster_(cluster),
      search_(std::make_unique<Search>(internal::ClusterAccess::Data(cluster),
                                       PruneForeignNodes(cluster))) {}

Router::~Router() = default;

const Route* Router::Find(VertexId src, VertexId dst) {
  const uint64_t key = PairKey(src, dst);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    std::optional<Route> r = search_->Run(src, dst);
    it = cache_.emplace(key, r ? std::make_unique<Route>(std::move(*r)) : nullptr).first;
  }
  return it->second.get();
}

}  // namespace placesim::topology
