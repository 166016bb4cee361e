// FlowNetwork: progressive-filling max-min solver over dirty components, lazy per-flow
// progress, and exact picosecond completion times. The model and its maths are in
// flow_network.h.
#include "sim/network/flow_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/errors.h"
#include "sim/network/alpha_beta.h"

namespace placesim::sim {
namespace {

constexpr int64_t kMaxPs = std::numeric_limits<int64_t>::max();
constexpr double kPsPerSecond = 1e12;

// Min-heap order on (time, start sequence): std heaps are max-heaps, so "a after b".
struct PendingAfter {
  template <typename P>
  bool operator()(const P& a, const P& b) const {
    if (a.time_ps != b.time_ps) return a.time_ps > b.time_ps;
    return a.start_seq > b.start_seq;
  }
};

// Picoseconds to drain `bytes` at `rate`, rounded up after snapping (see alpha_beta.h).
int64_t DrainPs(double bytes, double rate) { return DrainTime(bytes, rate).picoseconds(); }

int64_t SaturatingAdd(int64_t a, int64_t b) { return b > kMaxPs - a ? kMaxPs : a + b; }

constexpr uint64_t MakeId(uint32_t generation, uint32_t slot) {
  return (static_cast<uint64_t>(generation) << 32) | slot;
}

}  // namespace

StatusOr<FlowNetwork> FlowNetwork::Create(std::vector<LinkSpec> links) {
  ErrorList errors;
  for (size_t i = 0; i < links.size(); ++i) {
    double c = links[i].capacity.bytes_per_second();
    if (!(c > 0) || !std::isfinite(c)) {
      errors.Add(fmt::format("links[{}].capacity", i), ToString(links[i].capacity),
                 "must be finite and > 0");
    }
    if (links[i].latency < Duration::Zero()) {
      errors.Add(fmt::format("links[{}].latency", i),
                 fmt::format("{} ps", links[i].latency.picoseconds()), "must be >= 0");
    }
  }
  if (links.size() > std::numeric_limits<LinkIndex>::max()) {
    errors.Add("links", fmt::format("{} links", links.size()), "must be fewer than 2^32");
  }
  RETURN_IF_ERROR(errors.ToStatus());
  return FlowNetwork(std::move(links));
}

FlowNetwork::FlowNetwork(std::vector<LinkSpec> links) {
  links_.resize(links.size());
  latency_ps_.resize(links.size());
  for (size_t i = 0; i < links.size(); ++i) {
    links_[i].capacity = links[i].capacity.bytes_per_second();
    latency_ps_[i] = links[i].latency.picoseconds();
  }
}

FlowNetwork::Flow* FlowNetwork::Find(FlowId id) {
  return const_cast<Flow*>(static_cast<const FlowNetwork*>(this)->Find(id));
}

const FlowNetwork::Flow* FlowNetwork::Find(FlowId id) const {
  uint64_t v = static_cast<uint64_t>(id);
  uint32_t slot = static_cast<uint32_t>(v & 0xffffffffu);
  if (slot >= flows_.size()) return nullptr;
  const Flow& f = flows_[slot];
  if (f.phase == Phase::kFree || f.generation != static_cast<uint32_t>(v >> 32)) return nullptr;
  return &f;
}

Duration FlowNetwork::RouteLatency(std::span<const LinkIndex> route) const {
  int64_t ps = 0;
  for (LinkIndex l : route) {
    PLACESIM_CHECK(l < links_.size());
    ps = SaturatingAdd(ps, latency_ps_[l]);
  }
  return Duration::Picoseconds(ps);
}

Bandwidth FlowNetwork::RouteBottleneck(std::span<const LinkIndex> route) const {
  if (route.empty()) return Bandwidth::Zero();
  double c = std::numeric_limits<double>::infinity();
  for (LinkIndex l : route) {
    PLACESIM_CHECK(l < links_.size());
    c = std::min(c, links_[l].capacity);
  }
  return Bandwidth::BytesPerSecond(c);
}

FlowId FlowNetwork::Start(SimTime now, std::span<const LinkIndex> route, Bytes size, uint64_t tag,
                          Duration extra_latency) {
  PLACESIM_CHECK(now.picoseconds() >= now_ps_);
  PLACESIM_CHECK(size >= Bytes::Zero());
  PLACESIM_CHECK(extra_latency >= Duration::Zero());
  // Process only what is due strictly before `now`: events at `now` itself wait for the next
  // query, so that all flows started at one instant are solved together, once.
  if (now.picoseconds() > now_ps_) {
    Advance(now.picoseconds() - 1);
    now_ps_ = now.picoseconds();
  }

  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    PLACESIM_CHECK(flows_.size() < std::numeric_limits<uint32_t>::max());
    slot = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[slot];
  f.hops.clear();
  int64_t latency_ps = extra_latency.picoseconds();
  for (LinkIndex l : route) {
    PLACESIM_CHECK(l < links_.size());
    f.hops.push_back(Hop{l, 0});
    latency_ps = SaturatingAdd(latency_ps, latency_ps_[l]);
  }
  f.size = size.count();
  f.remaining = static_cast<double>(f.size);
  f.rate = 0;
  f.updated_ps = now_ps_;
  f.finish_ps = kMaxPs;
  f.start_seq = next_start_seq_++;
  f.tag = tag;
  f.has_entry = false;
  f.phase = Phase::kLatency;
  ++live_flows_;

  const int64_t active_ps = SaturatingAdd(now_ps_, latency_ps);
  if (active_ps == kMaxPs) time_overflowed_ = true;
  activations_.push_back(Pending{active_ps, f.start_seq, slot, 0});
  std::push_heap(activations_.begin(), activations_.end(), PendingAfter());
  ++version_;
  return FlowId{MakeId(f.generation, slot)};
}

bool FlowNetwork::IsStaleActivation(const Pending& p) const {
  const Flow& f = flows_[p.slot];
  return f.phase != Phase::kLatency || f.start_seq != p.start_seq;
}

bool FlowNetwork::IsStale(const Pending& p) const {
  const Flow& f = flows_[p.slot];
  return f.phase != Phase::kTransfer || f.version != p.version || !f.has_entry;
}

int64_t FlowNetwork::NextInternalEventPs() {
  while (!completions_.empty() && IsStale(completions_.front())) {
    std::pop_heap(completions_.begin(), completions_.end(), PendingAfter());
    completions_.pop_back();
    --stale_completions_;
  }
  while (!activations_.empty() && IsStaleActivation(activations_.front())) {
    std::pop_heap(activations_.begin(), activations_.end(), PendingAfter());
    activations_.pop_back();
  }
  int64_t t = kMaxPs;
  if (!completions_.empty()) t = completions_.front().time_ps;
  if (!activations_.empty()) t = std::min(t, activations_.front().time_ps);
  return t;
}

void FlowNetwork::Advance(int64_t t_ps) {
  PLACESIM_CHECK(t_ps >= now_ps_);
  for (;;) {
    Settle();
    int64_t next = NextInternalEventPs();
    if (next > t_ps) break;
    now_ps_ = next;
    // Everything due at this instant is processed before one re-solve, and reported in start
    // order: completions first (their bandwidth is free again), then latency ends.
    batch_.clear();
    while (!completions_.empty() && completions_.front().time_ps == now_ps_) {
      Pending p = completions_.front();
      std::pop_heap(completions_.begin(), completions_.end(), PendingAfter());
      completions_.pop_back();
      if (IsStale(p)) {
        --stale_completions_;
        continue;
      }
      flows_[p.slot].has_entry = false;
      batch_.push_back(p);
    }
    size_t transfers_done = batch_.size();
    while (!activations_.empty() && activations_.front().time_ps == now_ps_) {
      Pending p = activations_.front();
      std::pop_heap(activations_.begin(), activations_.end(), PendingAfter());
      activations_.pop_back();
      if (IsStaleActivation(p)) continue;  // cancelled
      const Flow& f = flows_[p.slot];
      if (f.size == 0 || f.hops.empty()) {
        batch_.push_back(p);  // nothing to transfer: done when the first byte would arrive
      } else {
        Activate(p.slot);
      }
    }
    if (batch_.size() > transfers_done) {
      std::sort(batch_.begin(), batch_.end(),
                [](const Pending& a, const Pending& b) { return a.start_seq < b.start_seq; });
    }
    for (const Pending& p : batch_) Complete(p.slot);
    ++version_;
  }
  if (t_ps > now_ps_) now_ps_ = t_ps;
}

void FlowNetwork::Activate(uint32_t slot) {
  Flow& f = flows_[slot];
  f.phase = Phase::kTransfer;
  f.updated_ps = now_ps_;
  f.rate = 0;
  for (uint32_t h = 0; h < f.hops.size(); ++h) {
    Link& link = links_[f.hops[h].link];
    f.hops[h].pos = static_cast<uint32_t>(link.crossings.size());
    link.crossings.push_back(Crossing{slot, h});
    uint32_t n = static_cast<uint32_t>(link.crossings.size());
    if (n == 1) link.busy_since_ps = now_ps_;
    link.peak = std::max(link.peak, n);
  }
  // One seed suffices: all of the flow's links now lie in one component.
  dirty_links_.push_back(f.hops.front().link);
}

void FlowNetwork::Leave(uint32_t slot, bool count_bytes) {
  Flow& f = flows_[slot];
  if (f.phase == Phase::kTransfer) {
    for (const Hop& hop : f.hops) {
      Link& link = links_[hop.link];
      // Swap-remove this crossing, fixing the back-pointer of the crossing moved into its place.
      Crossing moved = link.crossings.back();
      link.crossings[hop.pos] = moved;
      flows_[moved.slot].hops[moved.hop].pos = hop.pos;
      link.crossings.pop_back();
      if (link.crossings.empty()) {
        link.busy_ps += now_ps_ - link.busy_since_ps;
      } else {
        // Every link still crossed is a seed: removing the flow may split its component.
        dirty_links_.push_back(hop.link);
      }
    }
  }
  if (count_bytes) {
    for (const Hop& hop : f.hops) links_[hop.link].bytes_carried += f.size;
  }
  if (f.has_entry) ++stale_completions_;
  f.has_entry = false;
  f.phase = Phase::kFree;
  f.remaining = 0;
  f.rate = 0;
  ++f.generation;
  free_slots_.push_back(slot);
  --live_flows_;
}

void FlowNetwork::Complete(uint32_t slot) {
  const Flow& f = flows_[slot];
  done_.push_back(
      FlowCompletion{FlowId{MakeId(f.generation, slot)}, f.tag, SimTime::Picoseconds(now_ps_)});
  Leave(slot, /*count_bytes=*/true);
}

bool FlowNetwork::Cancel(FlowId id) {
  const Flow* f = Find(id);
  if (f == nullptr) return false;
  Leave(static_cast<uint32_t>(static_cast<uint64_t>(id) & 0xffffffffu), /*count_bytes=*/false);
  ++version_;
  return true;
}

void FlowNetwork::Settle() {
  if (dirty_links_.empty()) return;
  // Seeds are solved in the order they were dirtied; a seed already covered by an earlier
  // component in this pass is skipped (its epoch matches).
  ++epoch_;
  uint64_t pass_epoch = epoch_;
  for (size_t i = 0; i < dirty_links_.size(); ++i) {
    LinkIndex seed = dirty_links_[i];
    if (links_[seed].seen_epoch >= pass_epoch) continue;
    // A link that no transfer crosses any more (its last flow left) has no component to solve.
    if (links_[seed].crossings.empty()) continue;
    SolveComponent(seed);
  }
  dirty_links_.clear();
}

void FlowNetwork::SolveComponent(LinkIndex seed) {
  // Each component gets a fresh epoch (>= the pass epoch), marking its links and flows.
  const uint64_t epoch = ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();

  // Breadth-first search over the bipartite graph of links and transfer-phase flows.
  links_[seed].seen_epoch = epoch;
  comp_links_.push_back(seed);
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    const Link& link = links_[comp_links_[i]];
    for (const Crossing& c : link.crossings) {
      Flow& f = flows_[c.slot];
      if (f.seen_epoch == epoch) continue;
      f.seen_epoch = epoch;
      comp_flows_.push_back(c.slot);
      for (const Hop& hop : f.hops) {
        Link& next = links_[hop.link];
        if (next.seen_epoch == epoch) continue;
        next.seen_epoch = epoch;
        comp_links_.push_back(hop.link);
      }
    }
  }

  ++solver_stats_.solves;
  solver_stats_.flows_solved += comp_flows_.size();
  solver_stats_.links_solved += comp_links_.size();
  solver_stats_.last_component_flows = static_cast<uint32_t>(comp_flows_.size());
  solver_stats_.last_component_links = static_cast<uint32_t>(comp_links_.size());
  if (comp_flows_.empty()) return;

  // Progressive filling. shares_ is a min-heap on (share, link index) holding at most one entry
  // per link. Fixing flows only raises the shares of the other links they cross (see the
  // header), so an entry's key is a lower bound of its link's current share: when it reaches
  // the top, either its key is current — the link is the bottleneck — or it is re-inserted with
  // its current share. This keeps the heap at O(links) entries and costs one pop per round plus
  // one per re-insertion, instead of a push for every fixed crossing.
  auto share_after = [](const Share& a, const Share& b) {
    if (a.share != b.share) return a.share > b.share;
    return a.link > b.link;
  };
  shares_.clear();
  for (LinkIndex l : comp_links_) {
    Link& link = links_[l];
    link.residual = link.capacity;
    link.unfixed = static_cast<uint32_t>(link.crossings.size());
    if (link.unfixed > 0) shares_.push_back(Share{link.residual / link.unfixed, l});
  }
  std::make_heap(shares_.begin(), shares_.end(), share_after);
  while (!shares_.empty()) {
    Share top = shares_.front();
    std::pop_heap(shares_.begin(), shares_.end(), share_after);
    shares_.pop_back();
    Link& bottleneck = links_[top.link];
    if (bottleneck.unfixed == 0) continue;  // all its flows were fixed elsewhere
    const double current = bottleneck.residual / bottleneck.unfixed;
    if (current != top.share) {
      shares_.push_back(Share{current, top.link});
      std::push_heap(shares_.begin(), shares_.end(), share_after);
      continue;
    }
    const double s = current;
    for (const Crossing& c : bottleneck.crossings) {
      Flow& f = flows_[c.slot];
      if (f.fixed_epoch == epoch) continue;
      f.fixed_epoch = epoch;
      f.solved_rate = s;
      for (const Hop& hop : f.hops) {
        Link& link = links_[hop.link];
        link.residual = std::max(0.0, link.residual - s);
        --link.unfixed;
      }
    }
  }

  // Apply: only flows whose rate changed are progressed and get a new completion time.
  for (uint32_t slot : comp_flows_) {
    Flow& f = flows_[slot];
    PLACESIM_DCHECK(f.fixed_epoch == epoch && f.solved_rate > 0);
    if (f.solved_rate == f.rate) continue;
    if (f.rate > 0) {
      // rate * dt / 1e12 rather than rate * (dt * 1e-12): exact for round figures.
      double moved = f.rate * static_cast<double>(now_ps_ - f.updated_ps) / kPsPerSecond;
      f.remaining = std::max(0.0, f.remaining - moved);
    }
    f.updated_ps = now_ps_;
    f.rate = f.solved_rate;
    f.finish_ps = SaturatingAdd(now_ps_, DrainPs(f.remaining, f.rate));
    if (f.finish_ps == kMaxPs) time_overflowed_ = true;
    ++solver_stats_.rate_changes;
    PushCompletion(slot);
  }
}

void FlowNetwork::PushCompletion(uint32_t slot) {
  Flow& f = flows_[slot];
  if (f.has_entry) ++stale_completions_;
  ++f.version;
  f.has_entry = true;
  completions_.push_back(Pending{f.finish_ps, f.start_seq, slot, f.version});
  std::push_heap(completions_.begin(), completions_.end(), PendingAfter());
  // Drop stale entries once they are the majority, keeping the heap O(live flows).
  if (stale_completions_ > 64 && stale_completions_ * 2 > completions_.size()) {
    std::erase_if(completions_, [this](const Pending& p) { return IsStale(p); });
    std::make_heap(completions_.begin(), completions_.end(), PendingAfter());
    stale_completions_ = 0;
  }
}

SimTime FlowNetwork::NextEventTime() {
  Advance(now_ps_);
  if (!done_.empty()) return SimTime::Picoseconds(now_ps_);
  return SimTime::Picoseconds(NextInternalEventPs());
}

void FlowNetwork::AdvanceTo(SimTime t, std::vector<FlowCompletion>& out) {
  PLACESIM_CHECK(t.picoseconds() >= now_ps_);
  Advance(t.picoseconds());
  out.insert(out.end(), done_.begin(), done_.end());
  done_.clear();
  ++version_;
}

std::vector<FlowCompletion> FlowNetwork::AdvanceTo(SimTime t) {
  std::vector<FlowCompletion> out;
  AdvanceTo(t, out);
  return out;
}

Bandwidth FlowNetwork::Rate(FlowId id) {
  Advance(now_ps_);
  const Flow* f = Find(id);
  if (f == nullptr || f->phase != Phase::kTransfer) return Bandwidth::Zero();
  return Bandwidth::BytesPerSecond(f->rate);
}

FlowState FlowNetwork::State(FlowId id) const {
  const Flow* f = Find(id);
  if (f == nullptr) return FlowState::kGone;
  return f->phase == Phase::kTransfer ? FlowState::kTransfer : FlowState::kLatency;
}

double FlowNetwork::RemainingBytes(FlowId id) {
  Advance(now_ps_);
  const Flow* f = Find(id);
  if (f == nullptr) return 0;
  if (f->phase != Phase::kTransfer) return f->remaining;
  double moved = f->rate * static_cast<double>(now_ps_ - f->updated_ps) / kPsPerSecond;
  return std::max(0.0, f->remaining - moved);
}

LinkStats FlowNetwork::link_stats(LinkIndex l) const {
  PLACESIM_CHECK(l < links_.size());
  const Link& link = links_[l];
  LinkStats s;
  s.bytes_carried = Bytes::Count(link.bytes_carried);
  int64_t busy = link.busy_ps;
  if (!link.crossings.empty()) busy += now_ps_ - link.busy_since_ps;
  s.busy_time = Duration::Picoseconds(busy);
  s.active_flows = static_cast<uint32_t>(link.crossings.size());
  s.peak_flows = link.peak;
  return s;
}

}  // namespace placesim::sim
