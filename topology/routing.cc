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
        settled_(cost_.size(), 0),
        src_out_(cost_.size(), 0),
        in_(SortByFarEnd(g.in_begin, g.in_links, /*far_is_tail=*/true)),
        out_(SortByFarEnd(g.out_begin, g.out_links, /*far_is_tail=*/false)) {}

  // exhaustive: skip the transit-free first pass of Settle and run the full
  // search alone, the reference the first pass must agree with.
  std::optional<Route> Run(VertexId src, VertexId dst, bool exhaustive = false) {
    const int32_t n = static_cast<int32_t>(cost_.size());
    PLACESIM_CHECK(src.valid() && src.value < n && dst.valid() && dst.value < n);
    if (src == dst) {
      return Route{
          {}, Bandwidth::BytesPerSecond(std::numeric_limits<double>::infinity()), Duration::Zero()};
    }
    NextEpoch();
    src_node_ = g_.graph[src.value].node;
    dst_node_ = g_.graph[dst.value].node;
    transit_free_ = !exhaustive && Settle(src.value, dst.value, /*transit_free=*/true);
    bool found = transit_free_;
    if (!found) {
      NextEpoch();
      found = Settle(src.value, dst.value, /*transit_free=*/false);
    }
    if (!found) return std::nullopt;

    Route route;
    route.bottleneck = Bandwidth::BytesPerSecond(std::numeric_limits<double>::infinity());
    const uint64_t seed = Mix(PairKey(src, dst));
    std::vector<int32_t> candidates;
    int32_t u = src.value;
    for (uint64_t hop = 0; u != dst.value; ++hop) {
      PLACESIM_CHECK(hop < static_cast<uint64_t>(n));  // a tight walk cannot revisit a vertex
      TightLinks(u, dst.value, candidates);
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
      std::fill(src_out_.begin(), src_out_.end(), 0);
      epoch_ = 1;
    }
  }

  // Dijkstra from dst over reversed links until src is settled; false if it never is.
  // The heap lives in heap_ so its buffer is reused between searches.
  //
  // transit_free: the first pass, restricted to paths with no transit; it relaxes only links
  // from non-endpoints and from src, and once src is reached, only src's. Exact when it settles
  // src: every transit-free cost is below every cost with a transit, so the entries it leaves out
  // would have popped after all of its own, never changing a transit-free cost or the pruning; and
  // the walk never takes an endpoint w != dst (Extend would count a transit). On the built fabrics
  // a switch's in-links from GPUs (all of them, on a one-node NVSwitch plane) are the bulk of the
  // graph: skipping them, and the links from foreign nodes by range instead of one by one, makes a
  // route cost the switches near its ends, not the whole cluster.
  bool Settle(int32_t src, int32_t dst, bool transit_free) {
    const auto later = [](const Entry& a, const Entry& b) { return a.first > b.first; };
    heap_.clear();
    if (transit_free) {
      for (int32_t k = g_.out_begin[src]; k < g_.out_begin[src + 1]; ++k) {
        src_out_[g_.links[g_.out_links[k]].to.value] = epoch_;
      }
    }
    cost_[dst] = Cost{};
    reached_[dst] = epoch_;
    heap_.push_back({Cost{}, dst});
    const auto relax = [&](int32_t v, int32_t u, int32_t l) {
      if (settled_[u] == epoch_ || Foreign(u)) return;
      const Cost nc = Extend(v, dst, l);
      if (reached_[u] != epoch_ || nc < cost_[u]) {
        cost_[u] = nc;
        reached_[u] = epoch_;
        heap_.push_back({nc, u});
        std::push_heap(heap_.begin(), heap_.end(), later);
      }
    };
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
      if (!transit_free) {
        for (int32_t k = g_.in_begin[v]; k < g_.in_begin[v + 1]; ++k) {
          relax(v, g_.in_from[k], g_.in_links[k]);
        }
        continue;
      }
      if (src_out_[v] == epoch_) {
        for (int32_t k = g_.out_begin[src]; k < g_.out_begin[src + 1]; ++k) {
          const int32_t l = g_.out_links[k];
          if (g_.links[l].to.value == v) relax(v, src, l);
        }
      }
      // A tail other than src would get at least src's hops: it could neither be expanded
      // (CannotImprove) nor lie on the walk, whose vertices have fewer hops than src.
      const bool only_src = reached_[src] == epoch_ && c.transits == cost_[src].transits &&
                            c.hops + 1 >= cost_[src].hops;
      // Captured through a copy: clang 14 (Debian's, the sanitizer build's compiler) cannot
      // capture a structured binding.
      if (!only_src) {
        ForRelayLinks(in_, v, [&, head = v](int32_t u, int32_t l) { relax(head, u, l); });
      }
    }
    return false;
  }

  // One direction of the adjacency, each vertex's links re-sorted for the first pass: those
  // whose far end is not an endpoint first, grouped by the far end's node (scale-out switches,
  // node -1, first), construction order within a group; relay_end[v] ends that part, and the
  // links to or from endpoints follow.
  struct SortedLinks {
    std::vector<int32_t> begin, relay_end, far, links;
  };

  SortedLinks SortByFarEnd(const std::vector<int32_t>& begin, const std::vector<int32_t>& links,
                           bool far_is_tail) const {
    const size_t n = cost_.size();
    SortedLinks s{begin, std::vector<int32_t>(n), std::vector<int32_t>(links.size()), links};
    const auto far = [&](int32_t l) {
      return far_is_tail ? g_.links[l].from.value : g_.links[l].to.value;
    };
    const auto key = [&](int32_t l) {
      const int32_t u = far(l);
      return std::pair{IsEndpoint(g_.graph[u].kind) ? 1 : 0, g_.vertex_node[u]};
    };
    for (size_t v = 0; v < n; ++v) {
      const auto first = s.links.begin() + begin[v];
      const auto last = s.links.begin() + begin[v + 1];
      std::stable_sort(first, last, [&](int32_t x, int32_t y) { return key(x) < key(y); });
      s.relay_end[v] = begin[v];
      for (int32_t k = begin[v]; k < begin[v + 1]; ++k) {
        s.far[k] = far(s.links[k]);
        if (key(s.links[k]).first == 0) s.relay_end[v] = k + 1;
      }
    }
    return s;
  }

  // Calls f(far end, link) for v's links in `s` whose far end is not an endpoint and, on
  // pruned fabrics, lies on a switch or in src's or dst's node.
  template <typename F>
  void ForRelayLinks(const SortedLinks& s, int32_t v, F&& f) const {
    if (!prune_) {
      for (int32_t k = s.begin[v]; k < s.relay_end[v]; ++k) f(s.far[k], s.links[k]);
      return;
    }
    const auto node_range = [&](int node) {
      const auto first = s.far.begin() + s.begin[v];
      const auto last = s.far.begin() + s.relay_end[v];
      const auto lo =
          std::partition_point(first, last, [&](int32_t u) { return g_.vertex_node[u] < node; });
      for (auto it = lo; it != last && g_.vertex_node[*it] == node; ++it) {
        f(*it, s.links[static_cast<size_t>(it - s.far.begin())]);
      }
    };
    node_range(-1);
    if (src_node_ >= 0) node_range(src_node_);
    if (dst_node_ >= 0 && dst_node_ != src_node_) node_range(dst_node_);
  }

  // The links of the tight walk out of u, in construction order (link id order). After the
  // first pass only non-endpoints and dst are settled, so only those heads are looked at.
  void TightLinks(int32_t u, int32_t dst, std::vector<int32_t>& out) const {
    out.clear();
    const auto consider = [&](int32_t w, int32_t l) {
      if (settled_[w] == epoch_ && !Foreign(w) && Extend(w, dst, l) == cost_[u]) out.push_back(l);
    };
    if (!transit_free_) {
      for (int32_t k = g_.out_begin[u]; k < g_.out_begin[u + 1]; ++k) {
        consider(g_.links[g_.out_links[k]].to.value, g_.out_links[k]);
      }
      return;
    }
    ForRelayLinks(out_, u, consider);
    if (IsEndpoint(g_.graph[dst].kind)) {
      for (int32_t k = g_.in_begin[dst]; k < g_.in_begin[dst + 1]; ++k) {
        if (g_.in_from[k] == u) consider(dst, g_.in_links[k]);
      }
    }
    std::sort(out.begin(), out.end());
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
  std::vector<uint32_t> src_out_;  // == epoch_ when src has a link to the vertex
  uint32_t epoch_ = 0;
  const SortedLinks in_;       // in-links by tail
  const SortedLinks out_;      // out-links by head
  bool transit_free_ = false;  // the last search found its route in the first pass
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

std::optional<Route> FindRouteExhaustive(const Cluster& cluster, VertexId src, VertexId dst) {
  Router::Search search(internal::ClusterAccess::Data(cluster), PruneForeignNodes(cluster));
  return search.Run(src, dst, /*exhaustive=*/true);
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
