// FlowNetwork: progressive-filling max-min solver over dirty components, lazy per-flow
// progress, and exact picosecond completion times. The model and its maths are in
// flow_network.h.
#include "sim/network/flow_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "base/errors.h"
#include "sim/network/alpha_beta.h"
#include "sim/network/flow_time.h"
#include "sim/network/phase.h"

namespace placesim::sim {
namespace {

using flow_time::kMaxPs;
using flow_time::SaturatingAdd;
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

constexpr uint64_t MakeId(uint32_t generation, uint32_t slot) {
  return (static_cast<uint64_t>(generation) << 32) | slot;
}

// Serials of networks, for GroupCache::network: never 0, never reused within a process.
std::atomic<uint64_t> next_serial{1};

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
  serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
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
  // data() + offset, not &hops_[...]: an empty route may come first, while hops_ is empty.
  Hop* hop = hops_.data() + f.hop_first;
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
                                   int64_t extra_steps, uint64_t tag, GroupCache* cache) {
  PLACESIM_CHECK(now.picoseconds() >= now_ps_);
  PLACESIM_CHECK(size >= Bytes::Zero());
  PLACESIM_CHECK(extra_steps >= 0);
  // A zero-byte flow completes at the end of its latency without entering transfer.
  if (paths.empty() || size == Bytes::Zero()) return GroupStart::kLinksBusy;
  if (now.picoseconds() > now_ps_) {  // as in StartWithLatency
    Advance(now.picoseconds() - 1);
    now_ps_ = now.picoseconds();
  }
  const int t = cache == nullptr ? -1 : FindTemplate(paths, *cache);
  if (t >= 0 && StartLazy(static_cast<uint32_t>(t), paths, size.count(), extra_steps, tag)) {
    return GroupStart::kStarted;
  }
  // The eager pass touches every link of its own template: a log of them would be dropped
  // (AfterEagerStart) or overflow, so the template is left unlogged until then.
  if (t >= 0) Overflow(TemplateMask::Bit(static_cast<size_t>(t)));
  const uint32_t g = TakeSlot(free_groups_, groups_.size(), [this] { groups_.emplace_back(); });
  Group& group = groups_[g];
  group.paths = paths;
  group.size = size.count();
  group.tag = tag;
  group.held = 0;
  group.splits = 0;
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
  if (t >= 0 && group.held > 0) AfterEagerStart(static_cast<uint32_t>(t), group);
  ++version_;
  return GroupStart::kStarted;
}

void FlowNetwork::PrefetchGroupPaths(const Group& group, size_t j) const {
  const size_t n = group.paths.size();
  if (j + 2 * kPrefetchDistance < n) {
    __builtin_prefetch(group.paths[j + 2 * kPrefetchDistance].links.data());
  }
  if (j + kPrefetchDistance < n) {
    for (LinkIndex l : group.paths[j + kPrefetchDistance].links) {
      __builtin_prefetch(&links_[l], /*rw=*/1);
    }
  }
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
    if (deep_prefetch_) PrefetchGroupPaths(group, j);
    const FlowPath& p = group.paths[j];
    // The activation time StartWithLatency gives the flow FlowModelNetwork starts for it.
    const int64_t active = SaturatingAdd(now_ps_, flow_time::ActivePs(p, extra_steps));
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
      Touch(l);
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
  for (int64_t t : tick_times_) PushTick(g, group, t, false, false, 0);
  distinct(group.finish_ps, group.excluded);
  // The group completes in its last flow's place: the latest started of those completing last.
  const int64_t last = tick_times_.back();
  size_t key = 0;
  for (size_t j = 0; j < group.finish_ps.size(); ++j) {
    if (group.excluded[j] == 0 && group.finish_ps[j] == last) key = j;
  }
  for (int64_t t : tick_times_) PushTick(g, group, t, true, t == last, key);
}

void FlowNetwork::PushTick(uint32_t g, Group& group, int64_t t, bool completion, bool final_tick,
                           size_t key) {
  const uint32_t slot = kGroupSlot | g;
  const uint32_t version = group.generation << 1;
  uint32_t b = 0;
  if (completion) {
    b = completions_.Push(
        Pending{t, group.first_seq + (final_tick ? key : 0), slot, version | final_tick});
  } else {
    b = activations_.Push(Pending{t, group.first_seq, slot, version});
  }
  group.ticks.push_back(Group::Tick{t, b, completion});
}

void FlowNetwork::FreeGroup(uint32_t g) {
  Group& group = groups_[g];
  group.live = false;
  group.lazy = false;
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
    // The link then carries its flow's crossing, or none yet.
    const Crossing held = link.solo;
    if (!SplitFlow(held.slot, held.hop)) MakeOrdinary(held.slot);
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

void FlowNetwork::Unhold(const Group& group, size_t j) {
  const int64_t active = group.active_ps[j];
  const int64_t finish = group.finish_ps[j];
  const std::span<const LinkIndex> route = group.paths[j].links;
  for (LinkIndex l : route) LogWrite(l);  // its holds give way to crossings or nothing
  ReleaseRoute(route, group.size, finish - active);
  const uint32_t slot = NewFlow(route, group.size, group.tag);
  --live_flows_;  // counted in the group's
  Flow& f = flows_[slot];
  f.start_seq = group.first_seq + j;
  if (active > now_ps_) {
    f.bucket = activations_.Push(Pending{active, f.start_seq, slot, 0});
    return;
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

bool FlowNetwork::SplitFlow(uint32_t g, uint32_t j) {
  // Called where MakeOrdinary is, for held flow j, whose hold ends after now. Every other held
  // flow stays alone on its links, so its predicted times stand; only flow j must share. The
  // group then stands for the others: it reports them once, at the last one's completion in
  // its place of the start order (the latest started of those completing last), and wakes the
  // caller at their completion instants, so its later completion ticks are queued anew for
  // them (flow j, ordinary, queues its own). Its activation ticks stay: flow j, in latency,
  // queues its activation at the same instant, and a group's activation tick wakes the caller
  // and does nothing else. When the others all complete by now, the group would end in this
  // instant, whose completions were taken: it is made ordinary whole instead. Each split
  // scans the group's flows, so a group splits at most n / kSplitShare times, O(n^2) in all.
  constexpr size_t kSplitShare = 4;
  Group& group = groups_[g];
  const size_t n = group.paths.size();
  if ((group.splits + 1) * kSplitShare > n) return false;
  tick_times_.clear();
  int64_t last = -1;
  size_t key = 0;
  for (size_t k = 0; k < n; ++k) {
    const int64_t finish = group.finish_ps[k];
    if (group.excluded[k] != 0 || k == j || finish <= now_ps_) continue;
    if (tick_times_.empty() || tick_times_.back() != finish) tick_times_.push_back(finish);
    if (finish >= last) {
      last = finish;
      key = k;
    }
  }
  if (last < 0) return false;
  // Entries of this group's number queued before are stale from here on (IsStaleTick): the
  // killed ones may sit in buckets that stay live.
  size_t kept = 0;
  for (const Group::Tick& t : group.ticks) {
    if (t.completion && t.time_ps > now_ps_) {
      completions_.Kill(t.bucket);
      continue;
    }
    group.ticks[kept++] = t;
  }
  group.ticks.resize(kept);
  ++group.generation;
  std::sort(tick_times_.begin(), tick_times_.end());
  tick_times_.erase(std::unique(tick_times_.begin(), tick_times_.end()), tick_times_.end());
  for (int64_t t : tick_times_) PushTick(g, group, t, true, t == last, key);
  Unhold(group, j);
  group.excluded[j] = 1;
  --group.held;
  ++group.splits;
  return true;
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
    if (group.finish_ps[j] <= now_ps_) {   // complete (or leaving now): counted, its holds spent
      ++complete;
      continue;
    }
    Unhold(group, j);
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

int FlowNetwork::FindTemplate(std::span<const FlowPath> paths, GroupCache& cache) {
  if (cache.network != serial_) cache = GroupCache{serial_, 0};
  if (cache.state >= 2 && cache.state != GroupCache::kNone)
    return static_cast<int>(cache.state - 2);
  if (cache.state == 0 && paths.size() >= template_min_flows_) {
    cache.state = 1;  // a phase started once may never repeat: not worth a template yet
    return -1;
  }
  const int t =
      cache.state == 1 && templates_.size() < kMaxTemplates ? RegisterTemplate(paths) : -1;
  cache.state = t < 0 ? GroupCache::kNone : static_cast<uint32_t>(t) + 2;
  return t;
}

int FlowNetwork::RegisterTemplate(std::span<const FlowPath> paths) {
  // Bottleneck classes are found by a linear search: a phase has a handful (its route kinds).
  constexpr size_t kMaxClasses = 64;
  const size_t n = paths.size();
  Template tm;
  // The flows HoldLinks leaves out on idle links: those crossing a link another crossing of
  // the phase crosses too (the sharing closes over them), and those with no route.
  std::vector<std::pair<LinkIndex, uint32_t>> crossings;
  std::vector<char> out(n, 0);
  for (size_t j = 0; j < n; ++j) {
    if (paths[j].links.empty()) out[j] = 1;
    for (LinkIndex l : paths[j].links) {
      PLACESIM_CHECK(l < links_.size());
      crossings.emplace_back(l, static_cast<uint32_t>(j));
    }
  }
  std::sort(crossings.begin(), crossings.end());
  for (size_t i = 0; i + 1 < crossings.size(); ++i) {
    if (crossings[i].first == crossings[i + 1].first) {
      out[crossings[i].second] = 1;
      out[crossings[i + 1].second] = 1;
    }
  }
  for (size_t j = 0; j < n; ++j) {
    (out[j] != 0 ? tm.left_out : tm.held).push_back(static_cast<uint32_t>(j));
    tm.latency_ps.push_back(paths[j].latency.picoseconds());
  }
  if (tm.left_out.size() * 4 > n) return -1;  // HoldLinks refuses such a phase
  for (uint32_t j : tm.held) {
    tm.first.push_back(static_cast<uint32_t>(tm.links.size()));
    double rate = std::numeric_limits<double>::infinity();
    for (LinkIndex l : paths[j].links) {
      tm.links.push_back(l);
      rate = std::min(rate, links_[l].capacity);
    }
    const auto c = std::find(tm.class_rate.begin(), tm.class_rate.end(), rate);
    tm.flow_class.push_back(static_cast<uint32_t>(c - tm.class_rate.begin()));
    if (c == tm.class_rate.end()) tm.class_rate.push_back(rate);
    if (tm.class_rate.size() > kMaxClasses) return -1;
  }
  tm.first.push_back(static_cast<uint32_t>(tm.links.size()));
  for (size_t k = 0; k < tm.held.size(); ++k) {
    for (uint32_t i = tm.first[k]; i < tm.first[k + 1]; ++i) {
      tm.link_flow.emplace_back(tm.links[i], static_cast<uint32_t>(k));
    }
  }
  std::sort(tm.link_flow.begin(), tm.link_flow.end());
  const auto t = static_cast<uint32_t>(templates_.size());
  const TemplateMask bit = TemplateMask::Bit(t);
  tm.conflicts = bit;
  // Each link moves from its set to that set with t added; a template's links lie in a few
  // sets, so the new sets are looked up once per old one.
  std::map<uint32_t, uint32_t> moved;
  for (LinkIndex l : tm.links) {
    const uint32_t from = links_[l].templates;
    auto [it, added] = moved.try_emplace(from, 0);
    if (added) {
      tm.conflicts |= template_sets_[from];
      it->second = TemplateSetOf(template_sets_[from] | bit);
    }
    links_[l].templates = it->second;
  }
  (tm.conflicts & ~bit).ForEach([&](size_t c) { templates_[c].conflicts |= bit; });
  tm.pending_busy.assign(tm.class_rate.size(), 0);
  templates_.push_back(std::move(tm));
  return static_cast<int>(t);
}

uint32_t FlowNetwork::TemplateVariantOf(uint32_t t, int64_t size, int64_t extra_steps) {
  constexpr size_t kMaxVariants = 8;  // the sizes a phase is started with in one step
  Template& tm = templates_[t];
  for (size_t i = 0; i < tm.variants.size(); ++i) {
    const TemplateVariant& v = tm.variants[i];
    if (v.size == size && v.extra_steps == extra_steps) return static_cast<uint32_t>(i);
  }
  if (tm.variants.size() == kMaxVariants) tm.variants.clear();  // only by the latest hold's
  TemplateVariant v;
  v.size = size;
  v.extra_steps = extra_steps;
  v.active_factor = extra_steps + 1;
  for (double rate : tm.class_rate) {
    v.class_drain.push_back(DrainPs(static_cast<double>(size), rate));
  }
  // HoldLinks' times less now: the activation offset latency x (extra_steps + 1), the
  // completion offset that plus the class's drain time. A phase where either saturates stays
  // eager (HoldLinks leaves such flows out, and queues activations at the saturated time).
  v.usable = true;
  for (int64_t latency : tm.latency_ps) {
    v.usable = v.usable && latency <= (kMaxPs - 1) / v.active_factor;
  }
  int64_t last = -1;
  for (size_t k = 0; v.usable && k < tm.held.size(); ++k) {
    const int64_t active = tm.latency_ps[tm.held[k]] * v.active_factor;
    const int64_t drain = v.class_drain[tm.flow_class[k]];
    v.usable = drain < kMaxPs - active;
    const int64_t finish = v.usable ? active + drain : 0;
    if (v.active_ticks.empty() || v.active_ticks.back() != active) v.active_ticks.push_back(active);
    if (v.finish_ticks.empty() || v.finish_ticks.back() != finish) v.finish_ticks.push_back(finish);
    if (finish >= last) {
      last = finish;
      v.key = tm.held[k];
    }
  }
  for (std::vector<int64_t>* ticks : {&v.active_ticks, &v.finish_ticks}) {
    std::sort(ticks->begin(), ticks->end());
    ticks->erase(std::unique(ticks->begin(), ticks->end()), ticks->end());
  }
  tm.variants.push_back(std::move(v));
  return static_cast<uint32_t>(tm.variants.size() - 1);
}

void FlowNetwork::AfterEagerStart(uint32_t t, const Group& group) {
  // The template's links now hold this group's holds, except those of its flows left out for
  // traffic (the phase's own meetings leave out only flows whose links are not the
  // template's): those are its log, as if touched after it was clean.
  Template& tm = templates_[t];
  tm.hold_until_ps = -1;
  for (uint32_t j : tm.held) {
    if (group.excluded[j] == 0) tm.hold_until_ps = std::max(tm.hold_until_ps, group.finish_ps[j]);
  }
  MarkClean(t);
  const TemplateMask bit = TemplateMask::Bit(t);
  for (size_t k = 0; k < tm.held.size() && !overflowed_.Test(t); ++k) {
    if (group.excluded[tm.held[k]] == 0) continue;
    for (uint32_t i = tm.first[k]; i < tm.first[k + 1]; ++i) LogTouch(tm.links[i], bit);
  }
}

void FlowNetwork::MarkClean(uint32_t t) {
  clean_ |= TemplateMask::Bit(t);
  overflowed_ &= ~TemplateMask::Bit(t);
  templates_[t].touched.clear();
}

void FlowNetwork::LogTouch(LinkIndex l, const TemplateMask& m) {
  m.ForEach([&](size_t t) {
    const TemplateMask bit = TemplateMask::Bit(t);
    Template& tm = templates_[t];
    if (clean_.Test(t)) {
      clean_ &= ~bit;
      tm.touched.clear();
    }
    // A log as long as its links reads as many links as the eager pass would, which also
    // writes them, logs them into the templates sharing them and sorts the group's times: past
    // that the eager pass is as cheap. A bound of half the links let two templates sharing
    // half their links overflow each other's log with their eager passes, for good.
    if (tm.touched.size() >= tm.links.size()) {
      Overflow(bit);
      tm.touched = {};
    } else {
      tm.touched.push_back(l);
    }
  });
}

uint32_t FlowNetwork::TemplateSetOf(const TemplateMask& m) {
  const auto [it, added] =
      template_set_index_.try_emplace(m, static_cast<uint32_t>(template_sets_.size()));
  if (added) template_sets_.push_back(m);
  return it->second;
}

bool FlowNetwork::ScanLog(uint32_t t) {
  // Called once the latest holds on its links have ended, just before a lazy start. Links it
  // did not touch are as they were when it was last clean; each it touched is idle for
  // HoldLinks when nothing crosses it and any hold on it has been processed complete (neither
  // held nor leaving; the group's hold written over it would hide it until it is
  // idle-equivalent), and busy for every flow when crossed or held past now.
  Template& tm = templates_[t];
  tm.busy.clear();
  for (LinkIndex l : tm.touched) {
    const Link& link = links_[l];
    const bool held = link.list == kHeld;
    if (link.count == 0 && (!held || link.busy_since_ps <= completed_through_ps_)) continue;
    if (link.count == 0 && link.busy_since_ps <= now_ps_) return false;
    tm.busy.push_back(std::lower_bound(tm.link_flow.begin(), tm.link_flow.end(),
                                       std::pair<LinkIndex, uint32_t>{l, 0})
                          ->second);
  }
  std::sort(tm.busy.begin(), tm.busy.end());
  tm.busy.erase(std::unique(tm.busy.begin(), tm.busy.end()), tm.busy.end());
  return true;
}

int64_t FlowNetwork::PushLazyTicks(uint32_t g, Group& group, const Template& tm,
                                   const TemplateVariant& v) {
  group.ticks.clear();
  if (tm.busy.empty()) {
    for (int64_t a : v.active_ticks) PushTick(g, group, now_ps_ + a, false, false, 0);
    const int64_t last = v.finish_ticks.back();
    for (int64_t f : v.finish_ticks) PushTick(g, group, now_ps_ + f, true, f == last, v.key);
    return last;
  }
  // PushTicks' distinct times over the flows held this time.
  std::vector<int64_t> active;
  std::vector<int64_t> finish;
  size_t key = 0;
  int64_t last = -1;
  for (size_t k = 0, b = 0; k < tm.held.size(); ++k) {
    if (b < tm.busy.size() && tm.busy[b] == k) {
      ++b;
      continue;
    }
    const int64_t a = tm.latency_ps[tm.held[k]] * v.active_factor;
    const int64_t f = a + v.class_drain[tm.flow_class[k]];
    // A phase's flows mostly share their times: only changes are kept before the sort.
    if (active.empty() || active.back() != a) active.push_back(a);
    if (finish.empty() || finish.back() != f) finish.push_back(f);
    if (f >= last) {
      last = f;
      key = tm.held[k];
    }
  }
  for (std::vector<int64_t>* ticks : {&active, &finish}) {
    std::sort(ticks->begin(), ticks->end());
    ticks->erase(std::unique(ticks->begin(), ticks->end()), ticks->end());
  }
  for (int64_t a : active) PushTick(g, group, now_ps_ + a, false, false, 0);
  for (int64_t f : finish) PushTick(g, group, now_ps_ + f, true, f == last, key);
  return last;
}

bool FlowNetwork::HoldEnded(const Template& t) const {
  return t.hold_until_ps < now_ps_ && t.hold_until_ps <= completed_through_ps_;
}

bool FlowNetwork::StartLazy(uint32_t t, std::span<const FlowPath> paths, int64_t size,
                            int64_t extra_steps, uint64_t tag) {
  const TemplateMask bit = TemplateMask::Bit(t);
  if (overflowed_.Test(t)) return false;
  // Its own latest hold and those of the templates it shares links with must have ended: the
  // eager pass would meet them (a lazy one is not written on the links yet).
  bool ended = true;
  templates_[t].conflicts.ForEach([&](size_t c) { ended = ended && HoldEnded(templates_[c]); });
  if (!ended) return false;
  const uint32_t vi = TemplateVariantOf(t, size, extra_steps);
  Template& tm = templates_[t];
  const TemplateVariant& v = tm.variants[vi];
  // HoldLinks leaves out a flow whose completion would saturate the clock.
  if (!v.usable || tm.held.empty() || v.finish_ticks.back() >= kMaxPs - now_ps_) return false;
  const bool clean = clean_.Test(t);
  if (clean) {
    tm.busy.clear();
  } else if (!ScanLog(t)) {
    return false;
  }
  const size_t n = paths.size();
  // HoldLinks refuses a phase with more than a quarter left out.
  if ((tm.left_out.size() + tm.busy.size()) * 4 > n || tm.busy.size() == tm.held.size()) {
    return false;
  }
  const uint32_t g = TakeSlot(free_groups_, groups_.size(), [this] { groups_.emplace_back(); });
  Group& group = groups_[g];
  group.paths = paths;
  group.size = size;
  group.tag = tag;
  group.held = static_cast<uint32_t>(tm.held.size() - tm.busy.size());
  group.splits = 0;
  group.first_seq = next_start_seq_;
  next_start_seq_ += n;
  // As StartGroup after HoldLinks: the flows left out, in their places of the start order,
  // then the group's ticks for the same times PushTicks finds.
  lazy_out_ = tm.left_out;
  for (uint32_t k : tm.busy) lazy_out_.push_back(tm.held[k]);
  std::sort(lazy_out_.begin(), lazy_out_.end());
  for (uint32_t j : lazy_out_) {
    QueueFlow(paths[j].links, now_ps_ + tm.latency_ps[j] * v.active_factor, size, tag,
              group.first_seq + j);
  }
  group.live = true;
  group.lazy = true;
  live_flows_ += group.held;
  const int64_t last = PushLazyTicks(g, group, tm, v);
  // Counted for every held flow; those left out for traffic take theirs back on their links.
  tm.pending_bytes += size;
  for (size_t c = 0; c < v.class_drain.size(); ++c) tm.pending_busy[c] += v.class_drain[c];
  for (uint32_t k : tm.busy) {
    for (uint32_t i = tm.first[k]; i < tm.first[k + 1]; ++i) {
      Link& link = links_[tm.links[i]];
      link.bytes_carried -= size;
      link.busy_ps -= v.class_drain[tm.flow_class[k]];
    }
  }
  if (!clean) {
    // Clean but for the busy flows' links, which still carry traffic: those are its log.
    MarkClean(t);
    for (uint32_t k : tm.busy) {
      for (uint32_t i = tm.first[k]; i < tm.first[k + 1]; ++i) LogTouch(tm.links[i], bit);
    }
  }
  tm.charged = true;
  tm.hold_until_ps = now_ps_ + last;
  tm.group = g;
  tm.generation = group.generation;
  tm.variant = vi;
  tm.start_ps = now_ps_;
  lazy_live_ |= bit;
  ++version_;
  return true;
}

void FlowNetwork::MaterializeHolds(const TemplateMask& templates) {
  templates.ForEach([&](size_t t) { MaterializeHold(t); });
}

void FlowNetwork::MaterializeHold(size_t t) {
  lazy_live_ &= ~TemplateMask::Bit(t);
  const Template& tm = templates_[t];
  if (HoldEnded(tm)) return;  // its holds would be idle-equivalent: nothing to write
  const TemplateVariant& v = tm.variants[tm.variant];
  Group& group = groups_[tm.group];
  // The group completes at hold_until_ps: it may be gone while its holds still matter.
  const bool live = group.live && group.lazy && group.generation == tm.generation;
  if (live) {
    // HoldLinks' arrays; a left-out flow's completion is never read.
    const size_t n = tm.latency_ps.size();
    group.active_ps.resize(n);
    group.finish_ps.resize(n);
    group.excluded.assign(n, 0);
    for (uint32_t j : tm.left_out) {
      group.excluded[j] = 1;
      group.active_ps[j] = group.finish_ps[j] = tm.start_ps + tm.latency_ps[j] * v.active_factor;
    }
    group.lazy = false;
  }
  for (size_t k = 0, b = 0; k < tm.held.size(); ++k) {
    const uint32_t j = tm.held[k];
    if (b < tm.busy.size() && tm.busy[b] == k) {  // left out for traffic: never held
      ++b;
      if (live) {
        group.excluded[j] = 1;
        group.active_ps[j] = group.finish_ps[j] = tm.start_ps + tm.latency_ps[j] * v.active_factor;
      }
      continue;
    }
    const int64_t active = tm.start_ps + tm.latency_ps[j] * v.active_factor;
    const int64_t finish = active + v.class_drain[tm.flow_class[k]];
    if (live) {
      group.active_ps[j] = active;
      group.finish_ps[j] = finish;
    }
    for (uint32_t i = tm.first[k]; i < tm.first[k + 1]; ++i) {
      Link& link = links_[tm.links[i]];
      link.list = kHeld;
      link.solo = Crossing{tm.group, j};
      link.busy_since_ps = finish;
    }
  }
  // No log: these are its own latest holds, which every template on them waits to end.
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
    Touch(l);
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
    // component in this pass is skipped (its epoch matches). A pass takes at most one epoch
    // per seed and its own.
    if (epoch_ + dirty_links_.size() + 1 > epoch_limit_) ResetEpochs();
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

void FlowNetwork::ResetEpochs() {
  // Every mark is then below every later epoch, as every mark was below the next epoch.
  for (Link& link : links_) link.seen_epoch = 0;
  for (FlowScratch& x : scratch_) x.seen_epoch = x.fixed_epoch = 0;
  epoch_ = 0;
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
  s.active_flows = link.count;
  s.peak_flows = link.peak;
  // What lazy starts of the templates on the link counted for it (see "Held templates").
  template_sets_[link.templates].ForEach([&](size_t t) {
    const Template& tm = templates_[t];
    if (!tm.charged) return;
    const auto it = std::lower_bound(tm.link_flow.begin(), tm.link_flow.end(),
                                     std::pair<LinkIndex, uint32_t>{l, 0});
    s.bytes_carried = s.bytes_carried + Bytes::Count(tm.pending_bytes);
    busy += tm.pending_busy[tm.flow_class[it->second]];
    s.peak_flows = std::max(s.peak_flows, 1u);
  });
  s.busy_time = Duration::Picoseconds(busy);
  return s;
}

}  // namespace placesim::sim
