// FlowNetwork: progressive-filling max-min solver over dirty components, lazy per-flow
// progress, and exact picosecond completion times. The model and its maths are in
// flow_network.h.
#include "sim/network/flow_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "base/errors.h"
#include "sim/network/alpha_beta.h"
#include "sim/network/phase.h"

namespace placesim::sim {
namespace {

constexpr int64_t kMaxPs = std::numeric_limits<int64_t>::max();
constexpr double kPsPerSecond = 1e12;
// Flows of one instant are activated and completed in a batch; the links of the flow this far
// ahead are fetched while the current one is processed, since on large clusters nearly every
// link touched is a cache miss and the flows' links are independent of each other. The loads
// that find those links (the flow's record, then its hops) miss as well, so they are fetched
// one and two distances further ahead (PrefetchAhead).
constexpr size_t kPrefetchDistance = 8;
// The extra stages pay only when the tables outgrow the caches: in a quiet sitting they made
// a 1024-GPU step (about 12,000 links) 8% slower. Below this many links (4 MiB of link
// records, past 4096 GPUs on the built fabrics) they are skipped.
constexpr size_t kDeepPrefetchLinks = size_t{1} << 16;

// Orders the entries of one instant by start sequence, the order they are reported in.
template <typename P>
void SortByStart(std::vector<P>& v) {
  auto by_start = [](const P& a, const P& b) { return a.start_seq < b.start_seq; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
}

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
  deep_prefetch_ = links.size() >= kDeepPrefetchLinks;
  latency_ps_.resize(links.size());
  residual_.resize(links.size());
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
  return StartWithLatency(now, route, RouteLatency(route), size, tag, extra_latency);
}

// A slot of a pool: the last freed one, else a new one at `size` that `grow` appends. Slots
// stay below kGroupSlot, whose bit tells groups' queue entries from flows'.
template <typename Grow>
uint32_t FlowNetwork::TakeSlot(std::vector<uint32_t>& free, size_t size, Grow grow) {
  if (!free.empty()) {
    const uint32_t slot = free.back();
    free.pop_back();
    return slot;
  }
  PLACESIM_CHECK(size < kGroupSlot);
  grow();
  return static_cast<uint32_t>(size);
}

uint32_t FlowNetwork::NewFlow(std::span<const LinkIndex> route, int64_t size, uint64_t tag) {
  const uint32_t slot = TakeSlot(free_slots_, flows_.size(), [this] {
    flows_.emplace_back();
    scratch_.emplace_back();
    tags_.emplace_back();
  });
  Flow& f = flows_[slot];
  const size_t hop_capacity = f.hop_capacity_log2 == 0 ? 0 : size_t{1} << (f.hop_capacity_log2 - 1);
  if (route.size() > hop_capacity) {
    // A fresh range for the slot; its old one is abandoned. Capacities are powers of two, so a
    // slot moves at most log2(longest route) times and hops_ stays within twice what it needs.
    const size_t capacity = std::bit_ceil(route.size());
    PLACESIM_CHECK(hops_.size() + capacity < kNoHop);
    f.hop_first = static_cast<uint32_t>(hops_.size());
    f.hop_capacity_log2 = static_cast<uint8_t>(std::bit_width(capacity));
    hops_.resize(hops_.size() + capacity);
  }
  f.hop_count = static_cast<uint32_t>(route.size());
  Hop* hop = &hops_[f.hop_first];
  for (LinkIndex l : route) {
    PLACESIM_CHECK(l < links_.size());
    *hop++ = Hop{l, 0};
  }
  f.size = size;
  f.remaining = static_cast<double>(size);
  f.rate = 0;
  f.updated_ps = now_ps_;
  tags_[slot] = tag;
  f.lone = false;
  f.phase = Phase::kLatency;
  ++live_flows_;
  return slot;
}

FlowId FlowNetwork::StartWithLatency(SimTime now, std::span<const LinkIndex> route,
                                     Duration route_latency, Bytes size, uint64_t tag,
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
  // Saturating sums of non-negative terms do not depend on their order: this is the sum of
  // extra_latency and every link's latency, as Start() would add them one by one.
  PLACESIM_DCHECK(route_latency == RouteLatency(route));
  const int64_t latency_ps =
      SaturatingAdd(extra_latency.picoseconds(), route_latency.picoseconds());
  const uint32_t slot =
      QueueFlow(route, SaturatingAdd(now_ps_, latency_ps), size.count(), tag, next_start_seq_++);
  ++version_;
  return FlowId{MakeId(flows_[slot].generation, slot)};
}

uint32_t FlowNetwork::QueueFlow(std::span<const LinkIndex> route, int64_t active_ps, int64_t size,
                                uint64_t tag, uint64_t start_seq) {
  const uint32_t slot = NewFlow(route, size, tag);
  Flow& f = flows_[slot];
  f.start_seq = start_seq;
  if (active_ps == kMaxPs) time_overflowed_ = true;
  f.bucket = activations_.Push(Pending{active_ps, start_seq, slot, 0});
  return slot;
}

GroupStart FlowNetwork::StartGroup(SimTime now, std::span<const FlowPath> paths, Bytes size,
                                   int64_t extra_steps, uint64_t tag) {
  PLACESIM_CHECK(now.picoseconds() >= now_ps_);
  PLACESIM_CHECK(size >= Bytes::Zero());
  PLACESIM_CHECK(extra_steps >= 0);
  // A zero-byte flow completes at the end of its latency without entering transfer.
  if (paths.empty() || size == Bytes::Zero()) return GroupStart::kLinksBusy;
  if (now.picoseconds() > now_ps_) {  // as in StartWithLatency
    Advance(now.picoseconds() - 1);
    now_ps_ = now.picoseconds();
  }
  const uint32_t g = TakeSlot(free_groups_, groups_.size(), [this] { groups_.emplace_back(); });
  Group& group = groups_[g];
  group.paths = paths;
  group.size = size.count();
  group.tag = tag;
  group.held = 0;
  const GroupStart result = HoldLinks(g, group, extra_steps);
  if (result != GroupStart::kStarted) {
    FreeGroup(g);
    return result;
  }
  group.first_seq = next_start_seq_;
  next_start_seq_ += paths.size();
  // The flows left out start as ordinary flows, in their places of the start order.
  for (size_t j = 0; j < paths.size(); ++j) {
    if (group.excluded[j] == 0) continue;
    QueueFlow(paths[j].links, group.active_ps[j], group.size, tag, group.first_seq + j);
  }
  if (group.held == 0) {
    FreeGroup(g);
  } else {
    group.live = true;
    live_flows_ += group.held;
    PushTicks(g, group);
  }
  ++version_;
  return GroupStart::kStarted;
}

GroupStart FlowNetwork::HoldLinks(uint32_t g, Group& group, int64_t extra_steps) {
  const size_t n = group.paths.size();
  group.active_ps.resize(n);
  group.finish_ps.resize(n);
  group.excluded.assign(n, 0);
  const double bytes = static_cast<double>(group.size);
  size_t excluded = 0;
  size_t busy_flows = 0;  // left out for traffic outside the group
  double last_rate = -1;
  int64_t last_drain = 0;
  for (size_t j = 0; j < n; ++j) {
    if (deep_prefetch_) {
      if (j + 2 * kPrefetchDistance < n) {
        __builtin_prefetch(group.paths[j + 2 * kPrefetchDistance].links.data());
      }
      if (j + kPrefetchDistance < n) {
        for (LinkIndex l : group.paths[j + kPrefetchDistance].links) {
          __builtin_prefetch(&links_[l], /*rw=*/1);
        }
      }
    }
    const FlowPath& p = group.paths[j];
    // The activation time StartWithLatency gives the flow FlowModelNetwork starts for it.
    const bool fits =
        extra_steps == 0 || p.latency.picoseconds() <= Duration::Max().picoseconds() / extra_steps;
    const int64_t extra_ps = fits ? (p.latency * extra_steps).picoseconds() : kMaxPs;
    const int64_t active = SaturatingAdd(now_ps_, SaturatingAdd(extra_ps, p.latency.picoseconds()));
    group.active_ps[j] = active;
    // Alone on every link from its activation on, the flow is a component of one flow whose
    // max-min rate is its bottleneck (Activate), and it completes at its drain time after.
    // A link is free when nothing crosses it and any hold on it has left by then (a hold ending
    // now leaves in this instant's completions, after a flow activated now has joined it).
    // A flow that meets a link in use, held by another group, or crossed by another flow of
    // this group is left out of it, and so is that other flow: they start one by one.
    double rate = std::numeric_limits<double>::infinity();
    bool meets = p.links.empty();
    bool busy = false;
    for (LinkIndex l : p.links) {
      PLACESIM_CHECK(l < links_.size());
      const Link& link = links_[l];
      // A live hold is of a live group: this one only when it names g.
      const bool held = link.list == kHeld && link.busy_since_ps > now_ps_;
      const bool leaving = link.list == kHeld && link.busy_since_ps == now_ps_ &&
                           active == now_ps_ && link.busy_since_ps > completed_through_ps_;
      if (held && link.solo.slot == g) {
        if (group.excluded[link.solo.hop] == 0) {
          ExcludeFlow(g, group, link.solo.hop);
          ++excluded;
        }
        meets = true;
      } else if (link.count > 0 || held || leaving) {
        meets = true;
        busy = true;
      }
      rate = std::min(rate, link.capacity);
    }
    if (rate != last_rate) {
      last_drain = DrainPs(bytes, rate);
      last_rate = rate;
    }
    const int64_t finish = SaturatingAdd(active, last_drain);
    group.finish_ps[j] = finish;
    // A flow that would overflow the clock starts alone, which reports it.
    bool twice = false;
    if (!meets && finish != kMaxPs) {
      for (LinkIndex l : p.links) {
        Link& link = links_[l];
        if (link.list == kHeld && link.busy_since_ps > now_ps_) {  // its route crosses it twice
          twice = true;
          continue;
        }
        link.list = kHeld;
        link.solo = Crossing{g, static_cast<uint32_t>(j)};
        link.busy_since_ps = finish;
        link.bytes_carried += group.size;
        link.busy_ps += finish - active;
        link.peak = std::max(link.peak, 1u);
      }
    }
    if (meets || twice || finish == kMaxPs) {
      ExcludeFlow(g, group, j);
      ++excluded;
      if (busy) ++busy_flows;
    }
    // Mostly left out, the group would save little: for good when its own flows meet (trees,
    // all-to-alls), else until the traffic it meets has gone. Known as soon as a quarter of
    // the phase is left out, which in an all-to-all is within its first flows.
    if (excluded * 4 > n) {
      ReleaseHolds(g, group, j + 1);
      return (excluded - busy_flows) * 4 > n ? GroupStart::kUngroupable : GroupStart::kLinksBusy;
    }
  }
  // Left-out flows' links are free again: nothing the group holds is on them.
  ClearExclusions(g, group, n);
  group.held = static_cast<uint32_t>(n - excluded);
  return GroupStart::kStarted;
}

void FlowNetwork::ExcludeFlow(uint32_t g, Group& group, size_t j) {
  // Its free links are marked as the group's (never ending), so that a later flow of the group
  // that meets them is left out too; what a hold of it counted is taken back. Links in use or
  // held by other groups keep their state: later flows meet those anyway.
  for (LinkIndex l : group.paths[j].links) {
    Link& link = links_[l];
    if (link.count > 0) continue;
    if (link.list == kHeld && link.busy_since_ps >= now_ps_) {
      // Another group's, live or leaving now (a group that had this number before, too: its
      // holds end by now, while this group's end later).
      if (link.solo.slot != g || link.busy_since_ps == now_ps_) continue;
      if (link.solo.hop == j && link.busy_since_ps != kMaxPs) {
        link.bytes_carried -= group.size;
        link.busy_ps -= group.finish_ps[j] - group.active_ps[j];
      }
    }
    link.list = kHeld;
    link.solo = Crossing{g, static_cast<uint32_t>(j)};
    link.busy_since_ps = kMaxPs;
  }
  group.excluded[j] = 1;
}

void FlowNetwork::ClearExclusions(uint32_t g, const Group& group, size_t flows) {
  for (size_t j = 0; j < flows; ++j) {
    if (group.excluded[j] == 0) continue;
    for (LinkIndex l : group.paths[j].links) {
      Link& link = links_[l];
      if (link.list == kHeld && link.solo.slot == g && link.busy_since_ps == kMaxPs) {
        link.list = kNoList;
      }
    }
  }
}

void FlowNetwork::ReleaseRoute(std::span<const LinkIndex> links, int64_t size, int64_t busy_ps) {
  // The peak a hold raised to 1 stays: the flow, started one by one instead, reaches it too.
  for (LinkIndex l : links) {
    Link& link = links_[l];
    link.list = kNoList;
    link.bytes_carried -= size;
    link.busy_ps -= busy_ps;
  }
}

void FlowNetwork::ReleaseHolds(uint32_t g, const Group& group, size_t flows) {
  for (size_t j = 0; j < flows; ++j) {
    if (group.excluded[j] != 0) continue;
    ReleaseRoute(group.paths[j].links, group.size, group.finish_ps[j] - group.active_ps[j]);
  }
  ClearExclusions(g, group, flows);
}

void FlowNetwork::PushTicks(uint32_t g, Group& group) {
  group.ticks.clear();
  const uint32_t slot = kGroupSlot | g;
  const uint32_t version = group.generation << 1;
  // The distinct times of `times` in tick_times_, ascending (a phase's flows mostly share one).
  auto distinct = [this](const std::vector<int64_t>& times, const std::vector<char>& excluded) {
    tick_times_.clear();
    for (size_t j = 0; j < times.size(); ++j) {
      const int64_t t = times[j];
      if (excluded[j] == 0 && (tick_times_.empty() || tick_times_.back() != t)) {
        tick_times_.push_back(t);
      }
    }
    std::sort(tick_times_.begin(), tick_times_.end());
    tick_times_.erase(std::unique(tick_times_.begin(), tick_times_.end()), tick_times_.end());
  };
  distinct(group.active_ps, group.excluded);
  for (int64_t t : tick_times_) {
    const uint32_t b = activations_.Push(Pending{t, group.first_seq, slot, version});
    group.ticks.push_back(Group::Tick{t, b, false});
  }
  distinct(group.finish_ps, group.excluded);
  // The group completes in its last flow's place: the latest started of those completing last.
  const int64_t last = tick_times_.back();
  size_t key = 0;
  for (size_t j = 0; j < group.finish_ps.size(); ++j) {
    if (group.excluded[j] == 0 && group.finish_ps[j] == last) key = j;
  }
  for (int64_t t : tick_times_) {
    const bool final_tick = t == last;
    const uint32_t b = completions_.Push(
        Pending{t, group.first_seq + (final_tick ? key : 0), slot, version | final_tick});
    group.ticks.push_back(Group::Tick{t, b, true});
  }
}

void FlowNetwork::FreeGroup(uint32_t g) {
  Group& group = groups_[g];
  group.live = false;
  ++group.generation;
  free_groups_.push_back(g);
}

bool FlowNetwork::IsStaleTick(const Pending& p) const {
  if (IsClosedSlot(p.slot)) return IsStaleClosedTick(p);
  const Group& group = groups_[p.slot ^ kGroupSlot];
  return !group.live || (group.generation << 1) != (p.version & ~1u);
}

void FlowNetwork::ReleaseHold(LinkIndex l) {
  if (IsClosedSlot(links_[l].solo.slot)) return ReleaseClosedHold(l);
  Link& link = links_[l];
  const int64_t finish = link.busy_since_ps;
  if (finish > now_ps_) {
    MakeOrdinary(link.solo.slot);  // the link then carries its flow's crossing, or none yet
    return;
  }
  link.list = kNoList;
  if (finish > completed_through_ps_) {
    // Its flow, as an ordinary one, would leave in this instant's completions, after the flows
    // activated now have joined the link: it still counts towards their peak.
    ++link.unfixed;
    present_holds_.push_back(l);
  }
}

void FlowNetwork::MakeOrdinary(uint32_t g) {
  // Called while the flows of instant now_ps_ enter transfer: every queue entry up to now has
  // been taken, so the group's later ticks are exactly those still queued.
  Group& group = groups_[g];
  for (const Group::Tick& t : group.ticks) {
    if (t.time_ps > now_ps_) (t.completion ? completions_ : activations_).Kill(t.bucket);
  }
  uint32_t complete = 0;
  for (size_t j = 0; j < group.paths.size(); ++j) {
    if (group.excluded[j] != 0) continue;  // an ordinary flow already
    const int64_t active = group.active_ps[j];
    const int64_t finish = group.finish_ps[j];
    if (finish <= now_ps_) {  // complete (or leaving now): counted, its holds spent
      ++complete;
      continue;
    }
    const std::span<const LinkIndex> route = group.paths[j].links;
    ReleaseRoute(route, group.size, finish - active);
    const uint32_t slot = NewFlow(route, group.size, group.tag);
    --live_flows_;  // counted in the group's
    Flow& f = flows_[slot];
    f.start_seq = group.first_seq + j;
    if (active > now_ps_) {
      f.bucket = activations_.Push(Pending{active, f.start_seq, slot, 0});
      continue;
    }
    // In transfer since its activation, alone at its bottleneck: Activate and Settle's lone
    // path, replayed at `active`.
    f.phase = Phase::kTransfer;
    f.updated_ps = active;
    double rate = std::numeric_limits<double>::infinity();
    for (uint32_t h = f.hop_first; h < f.hop_first + f.hop_count; ++h) {
      Link& link = links_[hops_[h].link];
      link.busy_since_ps = active;
      AddCrossing(link, Crossing{slot, h});
      rate = std::min(rate, link.capacity);
    }
    f.rate = rate;
    PushCompletion(slot, finish);
  }
  live_flows_ -= complete;
  // The caller counts flows per transfer: those already complete are reported with the next
  // completions, together; they wake nobody, as their own completions woke the caller before.
  if (complete > 0) {
    overdue_.push_back(
        FlowCompletion{kGroupFlowId, group.tag, SimTime::Picoseconds(now_ps_), complete});
  }
  FreeGroup(g);
}

void FlowNetwork::CompleteGroup(uint32_t g) {
  const Group& group = groups_[g];
  const uint32_t n = group.held;
  done_.push_back(FlowCompletion{kGroupFlowId, group.tag, SimTime::Picoseconds(now_ps_), n});
  live_flows_ -= n;
  FreeGroup(g);
}

void FlowNetwork::PrefetchStart(std::span<const LinkIndex> route, size_t ahead) const {
  if (!deep_prefetch_) return;
  if (!route.empty()) __builtin_prefetch(route.data());
  if (ahead < free_slots_.size()) {
    const uint32_t slot = free_slots_[free_slots_.size() - 1 - ahead];
    PrefetchFlow(slot);
    __builtin_prefetch(&tags_[slot], /*rw=*/1);
  }
}

bool FlowNetwork::IsStaleActivation(const Pending& p) const {
  if (p.slot >= kGroupSlot) return IsStaleTick(p);
  const Flow& f = flows_[p.slot];
  return f.phase != Phase::kLatency || f.start_seq != p.start_seq;
}

bool FlowNetwork::IsStale(const Pending& p) const {
  if (p.slot >= kGroupSlot) return IsStaleTick(p);
  const Flow& f = flows_[p.slot];
  return f.phase != Phase::kTransfer || f.version != p.version || f.bucket == kNoBucket;
}

int64_t FlowNetwork::NextInternalEventPs() {
  return std::min(completions_.MinTime(), activations_.MinTime());
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
    TakeDueCompletions();
    const size_t transfers_done = batch_.size();
    TakeDueActivations();
    if (batch_.size() > transfers_done) SortByStart(batch_);
    for (size_t i = 0; i < activating_.size(); ++i) {
      PrefetchAhead(i, activating_.size(), [this](size_t k) { return activating_[k]; });
      Activate(activating_[i]);
    }
    for (size_t i = 0; i < batch_.size(); ++i) {
      PrefetchAhead(i, batch_.size(), [this](size_t k) { return batch_[k].slot; });
      const uint32_t slot = batch_[i].slot;
      if (IsClosedSlot(slot)) {
        // A closed phase made ordinary at this instant leaves its last tick here, stale.
        if (!IsStaleClosedTick(batch_[i])) CompleteClosed(slot & ~(kGroupSlot | kClosedMark));
      } else if (slot >= kGroupSlot) {
        CompleteGroup(slot ^ kGroupSlot);
      } else {
        Complete(slot);
      }
    }
    completed_through_ps_ = now_ps_;
    for (LinkIndex l : present_holds_) links_[l].unfixed = 0;
    present_holds_.clear();
    ++version_;
  }
  if (t_ps > now_ps_) now_ps_ = t_ps;
}

void FlowNetwork::TakeDueCompletions() {
  batch_.clear();
  popped_.clear();
  if (completions_.MinTime() != now_ps_) return;
  completions_.PopAt(now_ps_, popped_);
  for (size_t i = 0; i < popped_.size(); ++i) {
    if (deep_prefetch_ && i + kPrefetchDistance < popped_.size()) {
      PrefetchFlow(popped_[i + kPrefetchDistance].slot);
    }
    const Pending& p = popped_[i];
    if (IsStale(p)) continue;
    if (p.slot >= kGroupSlot) {  // a group's tick: only its last one completes it
      if ((p.version & 1) != 0) batch_.push_back(p);
      continue;
    }
    flows_[p.slot].bucket = kNoBucket;
    batch_.push_back(p);
  }
  SortByStart(batch_);
}

void FlowNetwork::TakeDueActivations() {
  activating_.clear();
  popped_.clear();
  if (activations_.MinTime() != now_ps_) return;
  activations_.PopAt(now_ps_, popped_);
  SortByStart(popped_);
  for (size_t i = 0; i < popped_.size(); ++i) {
    if (deep_prefetch_ && i + kPrefetchDistance < popped_.size()) {
      PrefetchFlow(popped_[i + kPrefetchDistance].slot);
    }
    const Pending& p = popped_[i];
    if (IsStaleActivation(p)) continue;  // cancelled
    if (p.slot >= kGroupSlot) continue;  // a group's flows enter transfer on their holds
    Flow& f = flows_[p.slot];
    f.bucket = kNoBucket;
    if (f.size == 0 || f.hop_count == 0) {
      batch_.push_back(p);  // nothing to transfer: done when the first byte would arrive
    } else {
      activating_.push_back(p.slot);
    }
  }
}

void FlowNetwork::PrefetchFlow(uint32_t slot) const {
  if (!deep_prefetch_ || slot >= kGroupSlot) return;
  __builtin_prefetch(&flows_[slot], /*rw=*/1);
}

void FlowNetwork::PrefetchHops(uint32_t slot) const {
  if (slot >= kGroupSlot) return;
  const Flow& f = flows_[slot];
  if (f.hop_count == 0) return;
  const char* first = reinterpret_cast<const char*>(&hops_[f.hop_first]);
  const char* last = reinterpret_cast<const char*>(&hops_[f.hop_first + f.hop_count - 1]);
  for (const char* p = first; p <= last; p += 64) __builtin_prefetch(p, /*rw=*/1);
  __builtin_prefetch(last, /*rw=*/1);
}

template <typename SlotAt>
void FlowNetwork::PrefetchAhead(size_t i, size_t n, SlotAt slot_at) const {
  if (deep_prefetch_) {
    if (i + 3 * kPrefetchDistance < n) PrefetchFlow(slot_at(i + 3 * kPrefetchDistance));
    if (i + 2 * kPrefetchDistance < n) PrefetchHops(slot_at(i + 2 * kPrefetchDistance));
  }
  if (i + kPrefetchDistance < n) PrefetchLinks(slot_at(i + kPrefetchDistance));
}

void FlowNetwork::PrefetchLinks(uint32_t slot) const {
  if (slot >= kGroupSlot) return;
  const Flow& f = flows_[slot];
  for (uint32_t h = f.hop_first; h < f.hop_first + f.hop_count; ++h) {
    __builtin_prefetch(&links_[hops_[h].link], /*rw=*/1);
  }
}

std::span<const FlowNetwork::Crossing> FlowNetwork::Crossings(const Link& link) const {
  if (link.list == kNoList) return {&link.solo, link.count};
  return lists_[link.list];
}

void FlowNetwork::AddCrossing(Link& link, Crossing c) {
  hops_[c.hop].pos = link.count;
  if (link.count == 0 && link.list == kNoList) {
    link.solo = c;
  } else {
    if (link.list == kNoList) {
      if (free_lists_.empty()) {
        link.list = static_cast<uint32_t>(lists_.size());
        lists_.emplace_back();
      } else {
        link.list = free_lists_.back();
        free_lists_.pop_back();
      }
      lists_[link.list].push_back(link.solo);
    }
    lists_[link.list].push_back(c);
  }
  ++link.count;
}

void FlowNetwork::RemoveCrossing(Link& link, uint32_t pos) {
  --link.count;
  if (link.list == kNoList) return;  // the inline crossing
  // Swap-remove, fixing the back-pointer of the crossing moved into its place.
  std::vector<Crossing>& list = lists_[link.list];
  const Crossing moved = list.back();
  list[pos] = moved;
  hops_[moved.hop].pos = pos;
  list.pop_back();
  if (list.empty()) {
    free_lists_.push_back(link.list);
    link.list = kNoList;
  }
}

void FlowNetwork::Activate(uint32_t slot) {
  {
    Flow& f = flows_[slot];
    f.phase = Phase::kTransfer;
    f.updated_ps = now_ps_;
    f.rate = 0;
  }
  // A flow that finds every link of its route idle is, for now, a component of its own, whose
  // max-min rate is its bottleneck: it is marked lone and solved by Settle without a component
  // search, unless a later flow of this instant joins one of its links, which clears the mark
  // (that flow's seed then solves both). A link held by a group flow is released first, which
  // may turn the group into ordinary flows (new slots and hops: nothing is held by reference).
  bool lone = true;
  double bottleneck = std::numeric_limits<double>::infinity();
  const uint32_t first = flows_[slot].hop_first;
  const uint32_t last = first + flows_[slot].hop_count;
  for (uint32_t h = first; h < last; ++h) {
    const LinkIndex l = hops_[h].link;
    if (links_[l].list == kHeld) [[unlikely]] {
      ReleaseHold(l);
    }
    Link& link = links_[l];
    if (link.count > 0) {
      lone = false;
      if (link.count == 1) {
        const uint32_t other = Crossings(link)[0].slot;
        if (flows_[other].lone) {
          flows_[other].lone = false;
          // A seed in the same component as this flow's, so it is never solved twice; it
          // lets Settle fetch the other flow's chain ahead as it does this one's.
          dirty_links_.push_back(Seed{l, other});
        }
      }
    } else {
      link.busy_since_ps = now_ps_;
    }
    AddCrossing(link, Crossing{slot, h});
    // unfixed: a held flow leaving at this instant still counts (see present_holds_).
    link.peak = std::max(link.peak, link.count + link.unfixed);
    bottleneck = std::min(bottleneck, link.capacity);
  }
  flows_[slot].lone = lone;
  if (lone) {
    lone_flows_.push_back(LoneFlow{slot, bottleneck});
  } else {
    // One seed suffices: all of the flow's links now lie in one component.
    dirty_links_.push_back(Seed{hops_[first].link, slot});
  }
}

void FlowNetwork::Leave(uint32_t slot, bool count_bytes) {
  Flow& f = flows_[slot];
  const int64_t credit = count_bytes ? f.size : 0;
  const bool transfer = f.phase == Phase::kTransfer;
  for (uint32_t h = f.hop_first; h < f.hop_first + f.hop_count; ++h) {
    const Hop& hop = hops_[h];
    Link& link = links_[hop.link];
    link.bytes_carried += credit;
    if (!transfer) continue;
    RemoveCrossing(link, hop.pos);
    if (link.count == 0) {
      link.busy_ps += now_ps_ - link.busy_since_ps;
    } else {
      // Every link still crossed is a seed: removing the flow may split its component.
      dirty_links_.push_back(Seed{hop.link, slot});
    }
  }
  if (f.bucket != kNoBucket) {
    (f.phase == Phase::kLatency ? activations_ : completions_).Kill(f.bucket);
    f.bucket = kNoBucket;
  }
  f.lone = false;
  f.phase = Phase::kFree;
  f.remaining = 0;
  f.rate = 0;
  ++f.generation;
  free_slots_.push_back(slot);
  --live_flows_;
  // Cancelled flows' activations: dropped once they are the majority, as for completions.
  if (activations_.dead() > 64 && activations_.dead() * 2 > activations_.size()) {
    activations_.Compact([this](const Pending& p) { return IsStaleActivation(p); });
  }
}

void FlowNetwork::Complete(uint32_t slot) {
  const Flow& f = flows_[slot];
  done_.push_back(FlowCompletion{FlowId{MakeId(f.generation, slot)}, tags_[slot],
                                 SimTime::Picoseconds(now_ps_)});
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
  if (!dirty_links_.empty()) {
    // Seeds are solved in the order they were dirtied; a seed already covered by an earlier
    // component in this pass is skipped (its epoch matches).
    ++epoch_;
    const uint64_t pass_epoch = epoch_;
    for (size_t i = 0; i < dirty_links_.size(); ++i) {
      // Past a few thousand GPUs most components are a few flows that share a link, and each
      // search starts with a chain of misses (the seed, its flows' marks, records, hops and
      // links): the chains of the seeds ahead are fetched in stages, through the flow that
      // dirtied each seed, whose route holds the seed and is most of a small component.
      if (deep_prefetch_) {
        PrefetchAhead(i, dirty_links_.size(), [this](size_t k) { return dirty_links_[k].slot; });
        if (i + 3 * kPrefetchDistance < dirty_links_.size()) {
          __builtin_prefetch(&scratch_[dirty_links_[i + 3 * kPrefetchDistance].slot], /*rw=*/1);
        }
      }
      const Link& seed = links_[dirty_links_[i].link];
      if (seed.seen_epoch >= pass_epoch) continue;
      // A link that no transfer crosses any more (its last flow left) has no component to solve.
      if (seed.count == 0) continue;
      SolveComponent(dirty_links_[i].link);
    }
    dirty_links_.clear();
  }
  // Lone flows still alone (a seed's component may have covered one; SolveComponent then
  // cleared its mark): a component of one flow, whose progressive filling fixes it at the
  // least capacity of its route in one round, exactly the bottleneck Activate recorded.
  for (size_t i = 0; i < lone_flows_.size(); ++i) {
    if (deep_prefetch_ && i + kPrefetchDistance < lone_flows_.size()) {
      PrefetchFlow(lone_flows_[i + kPrefetchDistance].slot);
    }
    const uint32_t slot = lone_flows_[i].slot;
    Flow& f = flows_[slot];
    if (!f.lone || f.phase != Phase::kTransfer) continue;
    f.lone = false;
    ++solver_stats_.solves;
    ++solver_stats_.flows_solved;
    solver_stats_.links_solved += f.hop_count;
    solver_stats_.last_component_flows = 1;
    solver_stats_.last_component_links = f.hop_count;
    ApplyRate(slot, lone_flows_[i].rate);
  }
  lone_flows_.clear();
}

void FlowNetwork::SolveComponent(LinkIndex seed) {
  // Each component gets a fresh epoch (>= the pass epoch), marking its links and flows.
  const uint64_t epoch = ++epoch_;
  CollectComponent(seed, epoch);
  ++solver_stats_.solves;
  solver_stats_.flows_solved += comp_flows_.size();
  solver_stats_.links_solved += comp_links_.size();
  solver_stats_.last_component_flows = static_cast<uint32_t>(comp_flows_.size());
  solver_stats_.last_component_links = static_cast<uint32_t>(comp_links_.size());
  if (comp_flows_.empty()) return;
  FillProgressively(epoch);
  // Apply: only flows whose rate changed are progressed and get a new completion time.
  for (uint32_t slot : comp_flows_) {
    const FlowScratch& x = scratch_[slot];
    PLACESIM_DCHECK(x.fixed_epoch == epoch && x.solved_rate > 0);
    flows_[slot].lone = false;
    ApplyRate(slot, x.solved_rate);
  }
}

void FlowNetwork::CollectComponent(LinkIndex seed, uint64_t epoch) {
  // Breadth-first search over the bipartite graph of links and transfer-phase flows.
  comp_links_.clear();
  comp_flows_.clear();
  links_[seed].seen_epoch = epoch;
  comp_links_.push_back(seed);
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    for (const Crossing& c : Crossings(links_[comp_links_[i]])) {
      const uint32_t slot = c.slot;
      FlowScratch& x = scratch_[slot];
      if (x.seen_epoch == epoch) continue;
      x.seen_epoch = epoch;
      comp_flows_.push_back(slot);
      const Flow& f = flows_[slot];
      for (uint32_t h = f.hop_first; h < f.hop_first + f.hop_count; ++h) {
        const LinkIndex l = hops_[h].link;
        Link& next = links_[l];
        if (next.seen_epoch == epoch) continue;
        next.seen_epoch = epoch;
        if (deep_prefetch_) __builtin_prefetch(&residual_[l], /*rw=*/1);  // for the filling
        comp_links_.push_back(l);
      }
    }
  }
}

void FlowNetwork::FillProgressively(uint64_t epoch) {
  // shares_ is a min-heap on (share, link index) holding at most one entry per link. Fixing
  // flows only raises the shares of the other links they cross (see the header), so an
  // entry's key is a lower bound of its link's current share: when it reaches the top, either
  // its key is current — the link is the bottleneck — or it is re-inserted with its current
  // share. This keeps the heap at O(links) entries and costs one pop per round plus one per
  // re-insertion, instead of a push for every fixed crossing. The pops follow the strict order
  // (share, link), and every flow fixed in a round subtracts the same share, so neither the
  // order of the crossing lists nor that of comp_links_ can change a rate.
  auto share_after = [](const Share& a, const Share& b) {
    if (a.share != b.share) return a.share > b.share;
    return a.link > b.link;
  };
  shares_.clear();
  for (LinkIndex l : comp_links_) {
    Link& link = links_[l];
    residual_[l] = link.capacity;
    link.unfixed = link.count;
    if (link.unfixed > 0) shares_.push_back(Share{residual_[l] / link.unfixed, l});
  }
  std::make_heap(shares_.begin(), shares_.end(), share_after);
  while (!shares_.empty()) {
    Share top = shares_.front();
    std::pop_heap(shares_.begin(), shares_.end(), share_after);
    shares_.pop_back();
    Link& bottleneck = links_[top.link];
    if (bottleneck.unfixed == 0) continue;  // all its flows were fixed elsewhere
    const double current = residual_[top.link] / bottleneck.unfixed;
    if (current != top.share) {
      shares_.push_back(Share{current, top.link});
      std::push_heap(shares_.begin(), shares_.end(), share_after);
      continue;
    }
    const double s = current;
    for (const Crossing& c : Crossings(bottleneck)) {
      FlowScratch& x = scratch_[c.slot];
      if (x.fixed_epoch == epoch) continue;
      x.fixed_epoch = epoch;
      x.solved_rate = s;
      const Flow& f = flows_[c.slot];
      for (uint32_t h = f.hop_first; h < f.hop_first + f.hop_count; ++h) {
        const LinkIndex l = hops_[h].link;
        residual_[l] = std::max(0.0, residual_[l] - s);
        --links_[l].unfixed;
      }
    }
  }
}

void FlowNetwork::ApplyRate(uint32_t slot, double rate) {
  Flow& f = flows_[slot];
  if (rate == f.rate) return;
  if (f.rate > 0) {
    // rate * dt / 1e12 rather than rate * (dt * 1e-12): exact for round figures.
    double moved = f.rate * static_cast<double>(now_ps_ - f.updated_ps) / kPsPerSecond;
    f.remaining = std::max(0.0, f.remaining - moved);
  }
  f.updated_ps = now_ps_;
  f.rate = rate;
  const int64_t finish_ps = SaturatingAdd(now_ps_, DrainPs(f.remaining, f.rate));
  if (finish_ps == kMaxPs) time_overflowed_ = true;
  ++solver_stats_.rate_changes;
  PushCompletion(slot, finish_ps);
}

void FlowNetwork::PushCompletion(uint32_t slot, int64_t finish_ps) {
  Flow& f = flows_[slot];
  if (f.bucket != kNoBucket) completions_.Kill(f.bucket);
  ++f.version;
  f.bucket = completions_.Push(Pending{finish_ps, f.start_seq, slot, f.version});
  // Drop stale entries once they are the majority, keeping the queue O(live flows).
  if (completions_.dead() > 64 && completions_.dead() * 2 > completions_.size()) {
    completions_.Compact([this](const Pending& p) { return IsStale(p); });
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
  out.insert(out.end(), overdue_.begin(), overdue_.end());
  overdue_.clear();
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
  if (link.count > 0) busy += now_ps_ - link.busy_since_ps;
  s.busy_time = Duration::Picoseconds(busy);
  s.active_flows = link.count;
  s.peak_flows = link.peak;
  return s;
}

}  // namespace placesim::sim
