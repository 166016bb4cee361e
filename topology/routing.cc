// Deterministic shortest-path routing with hash-based ECMP; the metric and its rationale are
// in routing.h.
// Thread-safety: FindRoute is reentrant; a Router is single-threaded.
#include "topology/routing.h"

#include <algorithm>
#include <bit>
#include <compare>
#include <deque>
#include <limits>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

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

// The route cache's empty slot: no pair has it, since vertex ids are below 2^31.
constexpr uint64_t kNoPair = ~uint64_t{0};
constexpr size_t kFirstCacheSlots = 64;  // a power of two

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

Route EmptyRoute() {
  Route r;
  r.bottleneck = Bandwidth::BytesPerSecond(std::numeric_limits<double>::infinity());
  return r;
}

// Appends link l to the route and folds it into the route's bottleneck and latency, in route
// order (the latency saturates, so the order of the sums is part of the result).
void AppendLink(const internal::ClusterData& g, int32_t l, Route& route) {
  const LinkInfo& info = g.links[l];
  route.links.push_back(LinkId{l});
  route.bottleneck = std::min(route.bottleneck, info.bandwidth);
  route.latency =
      Duration::Picoseconds(SaturatingAdd(route.latency.picoseconds(), info.latency.picoseconds()));
}

// The ECMP choice among n equal-cost candidates at hop `hop` of the pair with seed `seed`.
size_t EcmpPick(uint64_t seed, uint64_t hop, size_t n) { return Mix(seed + hop) % n; }

// The tight links out of the vertices of a walk's fabric part (Router::Share): a vertex's
// candidates are links[begin[i] .. begin[i + 1]) for vertices[i]; vertices are sorted.
struct FabricPart {
  std::vector<int32_t> vertices;
  std::vector<int32_t> begin{0};
  std::vector<int32_t> links;

  void Clear() {
    vertices.clear();
    begin.assign(1, 0);
    links.clear();
  }
  // REQUIRES: v is larger than every vertex added before.
  void Add(int32_t v, const std::vector<int32_t>& candidates) {
    vertices.push_back(v);
    links.insert(links.end(), candidates.begin(), candidates.end());
    begin.push_back(static_cast<int32_t>(links.size()));
  }
  // The candidates out of v; empty when v is not in the part. O(log vertices).
  std::span<const int32_t> Candidates(int32_t v) const {
    const auto it = std::lower_bound(vertices.begin(), vertices.end(), v);
    if (it == vertices.end() || *it != v) return {};
    const size_t i = static_cast<size_t>(it - vertices.begin());
    return std::span<const int32_t>(links).subspan(static_cast<size_t>(begin[i]),
                                                   static_cast<size_t>(begin[i + 1] - begin[i]));
  }
  size_t ints() const { return vertices.size() + begin.size() + links.size(); }
};

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

    Route route = EmptyRoute();
    const uint64_t seed = Mix(PairKey(src, dst));
    std::vector<int32_t> candidates;
    int32_t u = src.value;
    for (uint64_t hop = 0; u != dst.value; ++hop) {
      PLACESIM_CHECK(hop < static_cast<uint64_t>(n));  // a tight walk cannot revisit a vertex
      TightLinks(u, dst.value, candidates);
      PLACESIM_CHECK(!candidates.empty());
      const int32_t l = candidates[EcmpPick(seed, hop, candidates.size())];
      AppendLink(g_, l, route);
      u = g_.links[l].to.value;
    }
    return route;
  }

  // True when the last Run found its route in the transit-free first pass; its DAG and costs
  // are then still in place for TightFrom.
  bool last_transit_free() const { return transit_free_; }

  // After a Run(src, dst) with last_transit_free(): every vertex the tight walk can reach
  // from `from` (a vertex of the route) before it reaches `to`, with its tight links (the
  // walk's candidates there, in link id order), into `part`. O(the links of those vertices).
  void TightFrom(int32_t from, int32_t to, int32_t dst, FabricPart& part) {
    part.Clear();
    std::vector<std::pair<int32_t, std::vector<int32_t>>> found;
    std::vector<int32_t> level{from}, next, candidates;
    // Every tight link goes one DAG position further, so the walk's vertices come in levels.
    while (!level.empty()) {
      next.clear();
      for (int32_t u : level) {
        if (u == to) continue;
        TightLinks(u, dst, candidates);
        PLACESIM_CHECK(!candidates.empty());
        for (int32_t l : candidates) next.push_back(g_.links[l].to.value);
        found.emplace_back(u, candidates);
      }
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      level.swap(next);
    }
    std::sort(found.begin(), found.end());
    for (const auto& [u, links] : found) part.Add(u, links);
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

// Sharing the search between pairs whose routes cross the scale-out fabric between the same
// two switches. A route between two nodes is, on the built fabrics, a fixed way out of the
// source's node, a walk through the fabric, and a fixed way into the destination's node;
// pairs behind the same two leaves (or NICs on them) repeat the fabric part's search. Share
// keeps, per (first fabric vertex F, last fabric vertex L, cost of the way in), the walk's
// candidate links at every fabric vertex it can reach, and splices each pair's own ways out
// and in around a walk that picks among them by the pair's own ECMP hash.
//
// Exactness. Let s lie on node A and d on node B, A != B, on a built fabric (foreign nodes
// pruned). A "relay" is a non-endpoint vertex; nodes are joined only through node -1 (fabric)
// vertices, as checked below.
//  (1) Out-chain of s: the relays of A reachable from s through relays of A (the closure,
//      searched breadth-first, so each has its fewest hops from s), and every link from s or
//      the closure to outside A. If one of those leads to another node's vertex, s gets no
//      chain; the others lead to fabric relays (exits) or to fabric endpoints, which no route
//      to d passes. If every exit leads to one vertex F, one exit e = (u -> F) has the fewest
//      hops from s, and one way leads back from u to s through the closure a depth at a time,
//      those links and e are the one fewest-hop way from s to F through A.
//      In-chain of d: the same with links reversed, from one vertex L to d.
//  (2) Closed nodes: every connected set of relays of a node is joined (by links of either
//      direction) to at most one vertex outside the node, a fabric vertex. A simple path from
//      s to d cannot then return into A once it has left, nor visit B before its last run
//      there: such a visit is a run of relays of one connected set, entered from and left to
//      its one outside neighbour, a repeated vertex. (Its ends are not s or d: a link between
//      a relay of one node and an endpoint of another voids that endpoint's chain.)
//  So a simple transit-free path s -> d is a way from s to F through A (its first vertex
//  outside A is an exit's, F), a path F -> L through the fabric (other nodes are pruned), and
//  a way from L to d through B, each chosen independently of the others; a minimum-hop one,
//  on the first pass's DAG, takes a fewest-hop way out and in, which are the chains. The
//  chains' vertices lie on no other DAG path, so the walk has one candidate on each chain
//  link. The first pass gives a DAG vertex the least cost over its DAG links, from dst
//  backwards; on the fabric part that recurrence starts from the cost of L, which is the
//  in-chain's cost (no transits: its inner vertices are relays), and reads only fabric links.
//  Pairs with the same F, L and in-chain cost therefore have the same costs, and the same
//  tight links, at every fabric vertex: the walk's candidate lists, in link id order, are
//  those Share keeps, and the pick among them is the pair's own hash at the pair's own hop
//  index. Bottleneck and latency are folded in route order as Run does. Wherever the
//  conditions fail (same node; a node joined to another node or to two fabric vertices by
//  one set of relays; two fewest-hop ways out, as from a GPU of a DGX-A100 whose PCIe switch
//  holds two NICs; an explicit graph; a route that needs a transit) the pair is searched as
//  before. Routing.SharedSearchesFindTheRoutesOfTheFullSearch compares both.
//
// Cost: the chains of a vertex and the closedness of all nodes are computed once (O(V + E)
// for the latter, at the first shareable pair). A key's first pair is searched as before; its
// second is searched and its fabric part kept; every later one costs the chains' links and a
// binary search per fabric hop. The kept parts are bounded (kMaxSharedInts); past the bound
// they are all dropped and regrown, which changes only the time.
class Router::Share {
 public:
  Share(const internal::ClusterData& g, Search& search, bool enabled)
      : g_(g), search_(search), enabled_(enabled) {}

  // The route src -> dst, exactly as Search::Run gives it.
  std::optional<Route> Find(VertexId src, VertexId dst) {
    const Chain* out = nullptr;
    const Chain* in = nullptr;
    if (!Shareable(src.value, dst.value, out, in)) return search_.Run(src, dst);
    const Key key{out->fabric, in->fabric, in->hops, in->neg_bottleneck, in->latency_ps};
    const auto [it, fresh] = parts_.try_emplace(key);
    Part& part = it->second;
    if (fresh) kept_ints_ += kIntsPerPart;
    if (part.state == PartState::kShared) return Splice(src.value, dst.value, *out, *in, part);
    if (kept_ints_ > kMaxSharedInts) {
      parts_.clear();
      kept_ints_ = 0;
      return search_.Run(src, dst);
    }
    std::optional<Route> r = search_.Run(src, dst);
    if (fresh || part.state != PartState::kSeen) return r;
    if (!r.has_value() || !search_.last_transit_free()) {
      part.state = PartState::kNotShared;
      return r;
    }
    search_.TightFrom(out->fabric, in->fabric, dst.value, part.fabric);
    part.state = PartState::kShared;
    kept_ints_ += part.fabric.ints();
    return r;
  }

  size_t shared_routes() const { return shared_routes_; }

 private:
  // The kept fabric parts' size bound, in ints (64 MiB). The 131,072-GPU Clos job of bench/
  // keeps 7,168 parts of 3.5 M ints in all; a part between two of its pods holds the tight
  // links of a leaf, the spines of both pods and the cores between them.
  static constexpr size_t kMaxSharedInts = size_t{1} << 24;
  // What a key costs before its part is kept (its hash node), counted against the bound.
  static constexpr size_t kIntsPerPart = 32;

  // The links of a way out of (or into) a node, in route order, and its fabric end; for a
  // way in, also the first pass's cost at L of the route to d (no transits).
  struct Chain {
    int32_t begin = 0;
    int32_t size = 0;
    int32_t fabric = -1;
    int32_t hops = 0;
    double neg_bottleneck = -std::numeric_limits<double>::infinity();
    int64_t latency_ps = 0;
  };
  struct Key {
    int32_t first = 0;
    int32_t last = 0;
    int32_t hops = 0;
    double neg_bottleneck = 0;
    int64_t latency_ps = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = Mix((static_cast<uint64_t>(static_cast<uint32_t>(k.first)) << 32) |
                       static_cast<uint32_t>(k.last));
      h = Mix(h ^ static_cast<uint64_t>(k.hops));
      h = Mix(h ^ std::bit_cast<uint64_t>(k.neg_bottleneck));
      return Mix(h ^ static_cast<uint64_t>(k.latency_ps));
    }
  };
  // kSeen: one pair searched; kShared: the fabric part is kept; kNotShared: its pairs need a
  // transit (or have no route), so they are searched.
  enum class PartState : uint8_t { kSeen, kShared, kNotShared };
  struct Part {
    PartState state = PartState::kSeen;
    FabricPart fabric;
  };
  static constexpr int32_t kUnknown = -2;
  static constexpr int32_t kNone = -1;

  bool Shareable(int32_t s, int32_t d, const Chain*& out, const Chain*& in) {
    if (!enabled_ || s == d) return false;
    const int a = g_.vertex_node[static_cast<size_t>(s)];
    const int b = g_.vertex_node[static_cast<size_t>(d)];
    if (a < 0 || b < 0 || a == b) return false;
    if (closed_.empty()) FindClosedNodes();
    if (!closed_[static_cast<size_t>(a)] || !closed_[static_cast<size_t>(b)]) return false;
    out = ChainOf</*forward=*/true>(s);
    if (out == nullptr) return false;
    in = ChainOf</*forward=*/false>(d);
    return in != nullptr;
  }

  std::optional<Route> Splice(int32_t s, int32_t d, const Chain& out, const Chain& in,
                              const Part& part) {
    Route route = EmptyRoute();
    route.links.reserve(static_cast<size_t>(out.size + in.size) + 4);
    for (int32_t i = 0; i < out.size; ++i) AppendLink(g_, chain_links_[out.begin + i], route);
    const uint64_t seed = Mix(PairKey(VertexId{s}, VertexId{d}));
    const uint64_t n = g_.links.size();
    uint64_t hop = static_cast<uint64_t>(out.size);
    for (int32_t u = out.fabric; u != in.fabric; ++hop) {
      const std::span<const int32_t> candidates = part.fabric.Candidates(u);
      PLACESIM_CHECK(!candidates.empty() && hop < n);
      const int32_t l = candidates[EcmpPick(seed, hop, candidates.size())];
      AppendLink(g_, l, route);
      u = g_.links[l].to.value;
    }
    for (int32_t i = 0; i < in.size; ++i) AppendLink(g_, chain_links_[in.begin + i], route);
    ++shared_routes_;
    return route;
  }

  // (2) of the proof: marks each node closed or not, in one pass over every node's relays.
  void FindClosedNodes() {
    int nodes = 0;
    for (int node : g_.vertex_node) nodes = std::max(nodes, node + 1);
    closed_.assign(static_cast<size_t>(nodes), 1);
    std::vector<uint8_t> seen(g_.vertex_node.size(), 0);
    std::vector<int32_t> stack;
    for (size_t v = 0; v < seen.size(); ++v) {
      const int node = g_.vertex_node[v];
      if (node < 0 || seen[v] || IsEndpoint(g_.graph[v].kind)) continue;
      int32_t outside = -1;
      bool ok = true;
      seen[v] = 1;
      stack.assign(1, static_cast<int32_t>(v));
      while (!stack.empty()) {
        const int32_t u = stack.back();
        stack.pop_back();
        const auto visit = [&](int32_t w) {
          if (g_.vertex_node[static_cast<size_t>(w)] == node) {
            if (!seen[static_cast<size_t>(w)] && !IsEndpoint(g_.graph[w].kind)) {
              seen[static_cast<size_t>(w)] = 1;
              stack.push_back(w);
            }
          } else if (g_.vertex_node[static_cast<size_t>(w)] >= 0 ||
                     (outside >= 0 && outside != w)) {
            ok = false;
          } else {
            outside = w;
          }
        };
        for (int32_t k = g_.out_begin[u]; k < g_.out_begin[u + 1]; ++k) {
          visit(g_.links[g_.out_links[k]].to.value);
        }
        for (int32_t k = g_.in_begin[u]; k < g_.in_begin[u + 1]; ++k) visit(g_.in_from[k]);
      }
      if (!ok) closed_[static_cast<size_t>(node)] = 0;
    }
  }

  // The out-chain (forward) or in-chain of v, computed on first use; nullptr when v has none.
  template <bool forward>
  const Chain* ChainOf(int32_t v) {
    std::vector<int32_t>& index = forward ? out_chain_ : in_chain_;
    if (index.empty()) index.assign(g_.vertex_node.size(), kUnknown);
    if (index[static_cast<size_t>(v)] == kUnknown) {
      index[static_cast<size_t>(v)] =
          ComputeChain<forward>(v) ? static_cast<int32_t>(chains_.size() - 1) : kNone;
    }
    const int32_t i = index[static_cast<size_t>(v)];
    return i == kNone ? nullptr : &chains_[static_cast<size_t>(i)];
  }

  // The far end of link l as seen from v's side: its head going out, its tail coming in.
  template <bool forward>
  int32_t Far(int32_t l) const {
    return forward ? g_.links[l].to.value : g_.links[l].from.value;
  }
  template <bool forward>
  int32_t Near(int32_t l) const {
    return forward ? g_.links[l].from.value : g_.links[l].to.value;
  }
  // v's out-links (forward) or in-links, as a range of link ids.
  template <bool forward>
  std::span<const int32_t> LinksOf(int32_t v) const {
    const std::vector<int32_t>& begin = forward ? g_.out_begin : g_.in_begin;
    const std::vector<int32_t>& links = forward ? g_.out_links : g_.in_links;
    return std::span<const int32_t>(links).subspan(static_cast<size_t>(begin[v]),
                                                   static_cast<size_t>(begin[v + 1] - begin[v]));
  }

  // (1) of the proof for v; appends the chain to chains_ and returns true, or returns false.
  template <bool forward>
  bool ComputeChain(int32_t v) {
    int32_t exit = -1;
    if (!Closure<forward>(v, exit)) return false;
    // Back from the exit's near end to v, one BFS depth at a time; way_ holds them exit first.
    way_.assign(1, exit);
    for (int32_t x = Near<forward>(exit); x != v;) {
      int32_t only = -1;
      for (int32_t l : LinksOf<!forward>(x)) {
        const size_t y = static_cast<size_t>(Far<!forward>(l));
        if (closure_[y] != stamp_ || depth_[y] != depth_[static_cast<size_t>(x)] - 1) continue;
        if (only >= 0) return false;
        only = l;
      }
      if (only < 0) return false;
      way_.push_back(only);
      x = Far<!forward>(only);
    }
    Chain c;
    c.begin = static_cast<int32_t>(chain_links_.size());
    c.size = static_cast<int32_t>(way_.size());
    c.fabric = Far<forward>(exit);
    // Route order: out-chains start at v, so the links found back from the exit are reversed.
    if (forward) std::reverse(way_.begin(), way_.end());
    chain_links_.insert(chain_links_.end(), way_.begin(), way_.end());
    if (!forward) {
      // The first pass's cost at L (Search::Extend from d back to L; no transits).
      for (size_t i = way_.size(); i-- > 0;) {
        const LinkInfo& info = g_.links[way_[i]];
        ++c.hops;
        c.neg_bottleneck = std::max(c.neg_bottleneck, -info.bandwidth.bytes_per_second());
        c.latency_ps = SaturatingAdd(c.latency_ps, info.latency.picoseconds());
      }
    }
    chains_.push_back(c);
    return true;
  }

  // The closure of (1): a breadth-first search from v through the relays of v's node, which
  // it marks (stamp_) with their depth; finds the exit at the least depth. False when an exit
  // leads elsewhere than the others, two exits share the least depth, there is no exit, or a
  // link reaches another node's vertex (which a route could use).
  template <bool forward>
  bool Closure(int32_t v, int32_t& exit) {
    if (closure_.empty()) {
      closure_.assign(g_.vertex_node.size(), 0);
      depth_.assign(g_.vertex_node.size(), 0);
    }
    if (++stamp_ == 0) {
      std::fill(closure_.begin(), closure_.end(), 0);
      stamp_ = 1;
    }
    const int node = g_.vertex_node[static_cast<size_t>(v)];
    closure_[static_cast<size_t>(v)] = stamp_;
    depth_[static_cast<size_t>(v)] = 0;
    queue_.assign(1, v);
    int32_t fabric = -1;
    int32_t best = std::numeric_limits<int32_t>::max();
    int ties = 0;
    for (size_t i = 0; i < queue_.size(); ++i) {
      const int32_t u = queue_[i];
      const int32_t depth = depth_[static_cast<size_t>(u)] + 1;
      for (int32_t l : LinksOf<forward>(u)) {
        const int32_t w = Far<forward>(l);
        const int w_node = g_.vertex_node[static_cast<size_t>(w)];
        const bool relay = !IsEndpoint(g_.graph[w].kind);
        if (w_node == node) {
          if (relay && closure_[static_cast<size_t>(w)] != stamp_) {
            closure_[static_cast<size_t>(w)] = stamp_;
            depth_[static_cast<size_t>(w)] = depth;
            queue_.push_back(w);
          }
        } else if (w_node >= 0 || (relay && fabric >= 0 && fabric != w)) {
          return false;
        } else if (relay) {
          fabric = w;
          if (depth < best) {
            best = depth;
            exit = l;
            ties = 0;
          }
          ties += depth == best ? 1 : 0;
        }
      }
    }
    return exit >= 0 && ties == 1;
  }

  const internal::ClusterData& g_;
  Search& search_;
  const bool enabled_;
  std::vector<uint8_t> closed_;                // by node; empty until the first shareable look-up
  std::vector<int32_t> out_chain_, in_chain_;  // by vertex: index into chains_, or kUnknown/kNone
  std::deque<Chain> chains_;  // a deque, so a chain stays put while others are added
  std::vector<int32_t> chain_links_;
  std::unordered_map<Key, Part, KeyHash> parts_;
  size_t kept_ints_ = 0;
  size_t shared_routes_ = 0;
  // ComputeChain's scratch: closure_[v] == stamp_ when v is in the closure, at depth_[v].
  std::vector<uint32_t> closure_;
  std::vector<int32_t> depth_;
  uint32_t stamp_ = 0;
  std::vector<int32_t> queue_, way_;
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
                                       PruneForeignNodes(cluster))),
      share_(std::make_unique<Share>(internal::ClusterAccess::Data(cluster), *search_,
                                     PruneForeignNodes(cluster))) {}

Router::~Router() = default;

const Route* Router::Find(VertexId src, VertexId dst) {
  const uint64_t key = PairKey(src, dst);
  if (slots_.empty()) slots_.assign(kFirstCacheSlots, Slot{kNoPair, nullptr});
  const size_t mask = slots_.size() - 1;
  size_t i = Mix(key) & mask;
  for (; slots_[i].key != kNoPair; i = (i + 1) & mask) {
    if (slots_[i].key == key) return slots_[i].route;
  }
  std::optional<Route> r = share_->Find(src, dst);
  const Route* route = r.has_value() ? &routes_.emplace_back(std::move(*r)) : nullptr;
  slots_[i] = Slot{key, route};
  if (++cached_pairs_ * 2 > slots_.size()) GrowCache();
  return route;
}

void Router::GrowCache() {
  std::vector<Slot> old(slots_.size() * 2, Slot{kNoPair, nullptr});
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.key == kNoPair) continue;
    size_t i = Mix(s.key) & mask;
    while (slots_[i].key != kNoPair) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

size_t Router::shared_routes() const { return share_->shared_routes(); }

}  // namespace placesim::topology
