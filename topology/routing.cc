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
        mark_(cost_.size()) {}

  // exhaustive: skip the transit-free first pass and run the full search alone, the
  // reference the first pass must agree with.
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
    transit_free_ = !exhaustive && TransitFreeCosts(src.value, dst.value);
    bool found = transit_free_;
    if (!found) {
      NextEpoch();
      found = Settle(src.value, dst.value);
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

  // The first pass's per-vertex state; each field is valid only while its stamp == epoch_.
  struct Mark {
    uint32_t fwd = 0;  // fwd_hops is the hop distance from src
    uint32_t bwd = 0;  // bwd_hops is the hop distance to dst
    uint32_t dag = 0;  // on a minimum-hop transit-free path; pos = its hops from src
    int32_t fwd_hops = 0;
    int32_t bwd_hops = 0;
    int32_t pos = 0;
  };

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
      std::fill(mark_.begin(), mark_.end(), Mark{});
      epoch_ = 1;
    }
  }

  // The first pass: the costs of a transit-free route, computed on the vertices of the
  // minimum-hop transit-free paths src -> dst only; false when no transit-free path exists.
  //
  // Exactness (the routes are those of the Dijkstra over the whole graph, Settle): a path
  // with no transit costs less than any path with one, and among transit-free paths the
  // metric compares hops first. Let H be the fewest hops of a transit-free path, d_s(v) and
  // d_t(v) the transit-free hop distances from src and to dst; the DAG is the vertices with
  // d_s + d_t = H and the links u -> w between them with d_s(w) = d_s(u) + 1. (a) For u on
  // the DAG, the Dijkstra's cost of u is the minimum over u's out-links to vertices w with
  // d_t(w) = d_t(u) - 1 of Extend(w): any other link gives more hops. Such a w is on the DAG
  // (d_s(w) <= d_s(u) + 1 by the link, and d_s(w) + d_t(w) >= H since w is a relay or dst),
  // so the DAG's links are exactly those the minimum ranges over, and the recurrence below
  // computes the same cost for every DAG vertex, whatever the order of evaluation (min of
  // the same values). (b) The Dijkstra's tight walk from src takes the settled heads w of
  // links u -> w with Extend(w) = cost(u); those have d_t(w) = d_t(u) - 1, so they are DAG
  // links, and every DAG vertex other than src is settled before src (fewer hops, so a
  // smaller cost, and CannotImprove skips only vertices with at least src's hops).
  // TightLinks selects them among the DAG links by the same test, in the same (link id)
  // order. The ECMP pick, which depends only on the candidate list, is therefore the same.
  // The relay rule is the full search's on a transit-free path: its inner vertices are
  // non-endpoints outside foreign nodes; src and dst may be endpoints.
  //
  // The hop distances come from a bidirectional breadth-first search that always grows the
  // side whose frontier has fewer links to scan. It stops at the first level that meets
  // the other side; then H = min(d_s + d_t) over the vertices both sides have seen (every
  // path of at most a + b hops, a and b the two depths, has a vertex seen by both). Every
  // DAG link lies inside one side's explored levels (a link from forward level a to a
  // vertex beyond backward level b would make H = a + b + 1 > a + b), and the DAG vertices
  // are found by walking those links back from the meeting vertices: a DAG vertex seen by
  // one side only is joined to a meeting vertex by DAG links within that side's levels. On the
  // three-tier Clos a route between pods costs the two pods' spines' ports and the cores of the
  // DAG, not the whole fabric as the Dijkstra from dst did.
  bool TransitFreeCosts(int32_t src, int32_t dst) {
    if (!MeetHalfway(src, dst)) return false;
    int32_t h = std::numeric_limits<int32_t>::max();
    for (int32_t v : meet_) h = std::min(h, mark_[v].fwd_hops + mark_[v].bwd_hops);
    for (int32_t v : meet_) {
      if (mark_[v].fwd_hops + mark_[v].bwd_hops == h) SetOnDag(v, mark_[v].fwd_hops);
    }
    if (dag_by_pos_.size() < static_cast<size_t>(h)) dag_by_pos_.resize(static_cast<size_t>(h));
    for (int32_t p = 0; p < h; ++p) dag_by_pos_[p].clear();
    // Each side's links back from the meeting vertices, deepest level first, so a vertex is
    // known to be on the DAG before the links into (forward) or out of (backward) it are read.
    for (size_t i = fwd_links_.size(); i-- > 0;) {
      const int32_t l = fwd_links_[i];
      const int32_t u = g_.links[l].from.value;
      if (mark_[g_.links[l].to.value].dag != epoch_) continue;
      SetOnDag(u, mark_[u].fwd_hops);
      dag_by_pos_[mark_[u].pos].push_back(l);
    }
    for (size_t i = bwd_links_.size(); i-- > 0;) {
      const int32_t l = bwd_links_[i];
      const int32_t u = g_.links[l].from.value;
      if (mark_[u].dag != epoch_) continue;
      SetOnDag(g_.links[l].to.value, h - mark_[g_.links[l].to.value].bwd_hops);
      dag_by_pos_[mark_[u].pos].push_back(l);
    }
    cost_[dst] = Cost{};
    reached_[dst] = epoch_;
    for (int32_t p = h - 1; p >= 0; --p) {
      for (int32_t l : dag_by_pos_[p]) {
        const int32_t u = g_.links[l].from.value;
        const Cost nc = Extend(g_.links[l].to.value, dst, l);
        if (reached_[u] != epoch_ || nc < cost_[u]) {
          cost_[u] = nc;
          reached_[u] = epoch_;
        }
      }
    }
    return true;
  }

  void SetOnDag(int32_t v, int32_t pos) {
    mark_[v].dag = epoch_;
    mark_[v].pos = pos;
  }

  bool OnDag(int32_t u, int32_t w) const {
    return mark_[u].dag == epoch_ && mark_[w].dag == epoch_ && mark_[w].pos == mark_[u].pos + 1;
  }

  // May a transit-free path src -> dst pass through v (other than as src)?
  bool MayRelay(int32_t v, int32_t dst) const {
    return v == dst || (!IsEndpoint(g_.graph[v].kind) && !Foreign(v));
  }

  // The bidirectional breadth-first search of TransitFreeCosts: fills meet_ with the vertices
  // both sides have seen, and fwd_links_ / bwd_links_ with the links each side found from
  // one level to the next, in level order; false when one side runs out first.
  bool MeetHalfway(int32_t src, int32_t dst) {
    fwd_frontier_.assign(1, src);
    bwd_frontier_.assign(1, dst);
    mark_[src].fwd = epoch_;
    mark_[src].fwd_hops = 0;
    mark_[dst].bwd = epoch_;
    mark_[dst].bwd_hops = 0;
    fwd_links_.clear();
    bwd_links_.clear();
    meet_.clear();
    while (meet_.empty()) {
      if (fwd_frontier_.empty() || bwd_frontier_.empty()) return false;
      if (Degrees(fwd_frontier_, g_.out_begin) <= Degrees(bwd_frontier_, g_.in_begin)) {
        Grow</*forward=*/true>(src, dst);
      } else {
        Grow</*forward=*/false>(src, dst);
      }
    }
    return true;
  }

  static int64_t Degrees(const std::vector<int32_t>& frontier, const std::vector<int32_t>& begin) {
    int64_t d = 0;
    for (int32_t v : frontier) d += begin[v + 1] - begin[v];
    return d;
  }

  // One level of one side: forward scans out-links from src's side, backward in-links from
  // dst's side. Only src and relays are expanded: dst (and src, backwards) is met, not passed.
  template <bool forward>
  void Grow(int32_t src, int32_t dst) {
    std::vector<int32_t>& frontier = forward ? fwd_frontier_ : bwd_frontier_;
    std::vector<int32_t>& found = forward ? fwd_links_ : bwd_links_;
    const std::vector<int32_t>& begin = forward ? g_.out_begin : g_.in_begin;
    const std::vector<int32_t>& links = forward ? g_.out_links : g_.in_links;
    next_.clear();
    for (int32_t v : frontier) {
      const int32_t hops = (forward ? mark_[v].fwd_hops : mark_[v].bwd_hops) + 1;
      for (int32_t k = begin[v]; k < begin[v + 1]; ++k) {
        const int32_t l = links[k];
        const int32_t w = forward ? g_.links[l].to.value : g_.in_from[k];
        if (!(forward ? MayRelay(w, dst) : MayRelay(w, src))) continue;
        Mark& m = mark_[w];
        uint32_t& seen = forward ? m.fwd : m.bwd;
        int32_t& w_hops = forward ? m.fwd_hops : m.bwd_hops;
        if (seen != epoch_) {
          seen = epoch_;
          w_hops = hops;
          next_.push_back(w);
          if ((forward ? m.bwd : m.fwd) == epoch_) meet_.push_back(w);
        } else if (w_hops != hops) {
          continue;
        }
        found.push_back(l);
      }
    }
    frontier.swap(next_);
  }

  // The full search: a Dijkstra from dst over reversed links until src is settled; false if
  // it never is. The heap lives in heap_ so its buffer is reused between searches.
  bool Settle(int32_t src, int32_t dst) {
    const auto later = [](const Entry& a, const Entry& b) { return a.first > b.first; };
    heap_.clear();
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
      for (int32_t k = g_.in_begin[v]; k < g_.in_begin[v + 1]; ++k) {
        relax(v, g_.in_from[k], g_.in_links[k]);
      }
    }
    return false;
  }

  // The links of the tight walk out of u, in construction order (link id order). After the
  // first pass only the DAG's vertices have costs, so only its links are looked at.
  // REQUIRES (first pass): u is on the DAG.
  void TightLinks(int32_t u, int32_t dst, std::vector<int32_t>& out) const {
    out.clear();
    if (!transit_free_) {
      for (int32_t k = g_.out_begin[u]; k < g_.out_begin[u + 1]; ++k) {
        const int32_t w = g_.links[g_.out_links[k]].to.value;
        if (settled_[w] == epoch_ && !Foreign(w) && Extend(w, dst, g_.out_links[k]) == cost_[u]) {
          out.push_back(g_.out_links[k]);
        }
      }
      return;
    }
    // u's DAG links are among its out-links and among the DAG links of its level; the shorter
    // list is read, so that a switch with N GPUs below it costs no O(N) scan per route. A link
    // may be twice in a level (both sides found it).
    const std::vector<int32_t>& level = dag_by_pos_[mark_[u].pos];
    const auto consider = [&](int32_t l) {
      const int32_t w = g_.links[l].to.value;
      if (OnDag(u, w) && Extend(w, dst, l) == cost_[u]) out.push_back(l);
    };
    if (g_.out_begin[u + 1] - g_.out_begin[u] <= static_cast<int32_t>(level.size())) {
      for (int32_t k = g_.out_begin[u]; k < g_.out_begin[u + 1]; ++k) consider(g_.out_links[k]);
    } else {
      for (int32_t l : level) {
        if (g_.links[l].from.value == u) consider(l);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
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
  std::vector<uint32_t> settled_;  // == epoch_ when cost_ is final in the full search
  std::vector<Mark> mark_;
  uint32_t epoch_ = 0;
  bool transit_free_ = false;  // the last search found its route in the first pass
  std::vector<Entry> heap_;
  // The first pass's buffers, reused between searches.
  std::vector<int32_t> fwd_frontier_, bwd_frontier_, next_, fwd_links_, bwd_links_, meet_;
  std::vector<std::vector<int32_t>> dag_by_pos_;  // DAG links by their tail's pos
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
