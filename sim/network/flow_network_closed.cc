// FlowNetwork's closed phases (StartClosed): a phase whose flows share links with each other
// (the double binary trees of a tree all-reduce: a rank's two tree edges leave through one NIC),
// started while no other traffic is on its links, replays its run alone instead of solving it
// again. A data-parallel job starts the same plan hundreds of times per step with a few bucket
// sizes, each start tens of thousands of flows in components of a few flows.
//
// What is kept. Per phase (internal::ClosedPhase, in the phase's ClosedRunCache): its distinct
// links in ascending order, its routes renumbered onto them (order kept), their capacities and
// latencies. Per (bytes, extra steps) that a phase was started with twice (internal::ClosedRun):
// the run of its flows alone on a network of just those links, started at time 0 flow by flow
// exactly as FlowModelNetwork starts them: each flow's activation and completion time, each
// link's bytes, busy time, peak flows and last completion.
//
// Why a replay is exact. (1) Alone: every rate the model assigns is the max-min allocation of a
// connected component (flows joined by shared links), re-solved when one of its flows enters or
// leaves transfer; a component holds only flows that cross its links. While no flow outside the
// phase crosses a link of the phase, the phase's flows form components of their own, solved at
// the same instants (their own activations and completions) from the same inputs, so every rate,
// remaining byte count and completion picosecond is the one of the phase run alone, whatever
// else runs elsewhere. Ties between equal shares are broken by link index; the renumbering keeps
// the order of indices, so it breaks them alike. (2) Shifted: started at s instead of 0, every
// time is s later: activations are s + latency, completions now + DrainTime(remaining, rate),
// progress rate x (now - updated); only differences of times enter the arithmetic (a start that
// would saturate the clock is refused). (3) Reported alike: the caller is woken at every
// distinct activation and completion time of the phase (one queue entry each, as the flows
// had), and the phase's completion is reported once, at its last flow's time and in its place
// of the report order; its earlier completions only counted the transfer's flows down.
// (4) Statistics: bytes and busy time are added to each link at the start (as groups do); the
// peak is raised to 1 at once (each flow enters transfer on every link of its route at its
// activation, which no rate changes) and to the run's peak where higher at the completion.
//
// Intrusion. A link of the phase is held (Link::list == kHeld) until the last completion of a
// phase flow on it. The first flow that enters transfer on a held link whose hold has not ended
// makes the phase ordinary (MaterializeClosed): the run alone is simulated again up to the
// instant before (or through the current instant, if its completions were already processed),
// each flow gets the record it has there (in latency, in transfer with its remaining bytes, rate
// and last update, or complete), link statistics are taken back to what the run had counted by
// then, and the phase's events of the current instant join its batches (its activations to the
// activations being processed, its completions to the completions that follow them). From there
// the model runs as if the flows had been started one by one: by (1), up to that instant they
// had been. Activations of one instant commute (each only adds crossings; the peak of an instant
// is its final count, and the rates are solved after the whole batch), so the phase's flows may
// join the instant's activations after the one that met them.
//
// tests/network/flow_closed_test.cc compares closed phases with flow-by-flow starts on derived
// cases and on random phases that meet each other and ordinary flows.
//
// Thread-safety: as FlowNetwork; a ClosedRunCache belongs to one network.
#include <algorithm>
#include <limits>
#include <utility>

#include "base/errors.h"
#include "sim/network/alpha_beta.h"
#include "sim/network/flow_network.h"
#include "sim/network/flow_time.h"
#include "sim/network/phase.h"

namespace placesim::sim {
namespace internal {

// The run of a phase alone (see the file comment), times relative to its start.
struct ClosedRun {
  int64_t size = 0;
  int64_t extra_steps = 0;
  bool usable = false;  // false: the run overflows the clock, or no link of it is used
  // Per local link (index into ClosedPhase::links):
  std::vector<int64_t> bytes;    // bytes its flows carried
  std::vector<int64_t> busy_ps;  // time with a flow of the phase in transfer on it
  std::vector<int64_t> end_ps;   // the last completion of a flow crossing it
  std::vector<std::pair<uint32_t, uint32_t>> peaks;  // (local link, peak) where the peak is > 1
  std::vector<int64_t> activations;                  // distinct activation times, ascending
  std::vector<int64_t> completions;                  // distinct completion times, ascending
  uint32_t last_flow = 0;  // the flow reported last: last completion time, latest started
};

struct ClosedPhase {
  std::vector<LinkIndex> links;                   // distinct links of the routes, ascending
  std::vector<LinkSpec> specs;                    // per local link
  std::vector<LinkIndex> hops;                    // every route in local indices, flow after flow
  std::vector<uint32_t> first;                    // flow j's hops: hops[first[j], first[j + 1])
  std::vector<std::pair<int64_t, int64_t>> seen;  // (size, extra steps) started once
  std::vector<std::shared_ptr<const ClosedRun>> runs;

  std::span<const LinkIndex> Route(size_t j) const {
    return std::span<const LinkIndex>(hops).subspan(first[j], first[j + 1] - first[j]);
  }
};

}  // namespace internal

namespace {

using flow_time::ActivePs;
using flow_time::ExtraLatency;
using flow_time::kMaxPs;
using flow_time::SaturatingAdd;

// Bounds on what a phase keeps: a run costs some 24 bytes per link of the phase (1.5 MB for a
// tree all-reduce over 16,384 ranks), and a phase started with ever new sizes gains nothing.
constexpr size_t kMaxRuns = 16;
constexpr size_t kMaxSeenKeys = 256;

}  // namespace

// The phase's links and routes in local indices, once per phase.
void FlowNetwork::MapClosedPhase(std::span<const FlowPath> paths, internal::ClosedPhase& ph) const {
  for (const FlowPath& p : paths) ph.links.insert(ph.links.end(), p.links.begin(), p.links.end());
  std::sort(ph.links.begin(), ph.links.end());
  ph.links.erase(std::unique(ph.links.begin(), ph.links.end()), ph.links.end());
  ph.specs.reserve(ph.links.size());
  for (LinkIndex l : ph.links) {
    PLACESIM_CHECK(l < links_.size());
    ph.specs.push_back(LinkSpec{Bandwidth::BytesPerSecond(links_[l].capacity),
                                Duration::Picoseconds(latency_ps_[l])});
  }
  ph.first.reserve(paths.size() + 1);
  for (const FlowPath& p : paths) {
    ph.first.push_back(static_cast<uint32_t>(ph.hops.size()));
    for (LinkIndex l : p.links) {
      const auto it = std::lower_bound(ph.links.begin(), ph.links.end(), l);
      ph.hops.push_back(static_cast<LinkIndex>(it - ph.links.begin()));
    }
  }
  ph.first.push_back(static_cast<uint32_t>(ph.hops.size()));
}

// The phase alone on its links, its flows started at 0 in order (flow j in slot j, tagged j).
FlowNetwork FlowNetwork::StartAlone(const internal::ClosedPhase& ph,
                                    std::span<const FlowPath> paths, int64_t size,
                                    int64_t extra_steps) {
  FlowNetwork alone(ph.specs);
  for (size_t j = 0; j < paths.size(); ++j) {
    alone.StartWithLatency(SimTime::Zero(), ph.Route(j), paths[j].latency, Bytes::Count(size), j,
                           ExtraLatency(paths[j], extra_steps));
  }
  return alone;
}

std::shared_ptr<const internal::ClosedRun> FlowNetwork::RunAlone(const internal::ClosedPhase& ph,
                                                                 std::span<const FlowPath> paths,
                                                                 int64_t size,
                                                                 int64_t extra_steps) {
  auto run = std::make_shared<internal::ClosedRun>();
  run->size = size;
  run->extra_steps = extra_steps;
  FlowNetwork alone = StartAlone(ph, paths, size, extra_steps);
  std::vector<int64_t> finish(paths.size(), kMaxPs);
  std::vector<FlowCompletion> done;
  for (;;) {
    const SimTime t = alone.NextEventTime();
    if (t == SimTime::Max()) break;
    done.clear();
    alone.AdvanceTo(t, done);
    for (const FlowCompletion& c : done) {
      finish[c.tag] = c.time.picoseconds();
      if (run->completions.empty() || run->completions.back() != finish[c.tag]) {
        run->completions.push_back(finish[c.tag]);
      }
      run->last_flow = static_cast<uint32_t>(c.tag);
    }
  }
  for (size_t j = 0; j < paths.size(); ++j) {
    const int64_t active = ActivePs(paths[j], extra_steps);
    if (active == kMaxPs || finish[j] == kMaxPs) return run;  // overflows: not usable
    run->activations.push_back(active);
  }
  std::sort(run->activations.begin(), run->activations.end());
  run->activations.erase(std::unique(run->activations.begin(), run->activations.end()),
                         run->activations.end());
  const size_t n = ph.links.size();
  run->bytes.resize(n);
  run->busy_ps.resize(n);
  run->end_ps.assign(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const LinkStats s = alone.link_stats(i);
    run->bytes[i] = s.bytes_carried.count();
    run->busy_ps[i] = s.busy_time.picoseconds();
    if (s.peak_flows > 1) run->peaks.emplace_back(i, s.peak_flows);
  }
  for (size_t j = 0; j < paths.size(); ++j) {
    for (LinkIndex i : ph.Route(j)) run->end_ps[i] = std::max(run->end_ps[i], finish[j]);
  }
  run->usable = n > 0 && !alone.time_overflowed();
  return run;
}

bool FlowNetwork::StartClosed(SimTime now, std::span<const FlowPath> paths, Bytes size,
                              int64_t extra_steps, uint64_t tag, ClosedRunCache& cache) {
  PLACESIM_CHECK(now.picoseconds() >= now_ps_);
  PLACESIM_CHECK(size >= Bytes::Zero());
  PLACESIM_CHECK(extra_steps >= 0);
  if (paths.empty() || size == Bytes::Zero()) return false;
  if (now.picoseconds() > now_ps_) {  // as in StartWithLatency
    Advance(now.picoseconds() - 1);
    now_ps_ = now.picoseconds();
  }
  if (cache.phase == nullptr) cache.phase = std::make_shared<internal::ClosedPhase>();
  internal::ClosedPhase& ph = *cache.phase;
  const std::pair<int64_t, int64_t> key{size.count(), extra_steps};
  std::shared_ptr<const internal::ClosedRun> run;
  for (const auto& r : ph.runs) {
    if (r->size == key.first && r->extra_steps == key.second) run = r;
  }
  if (run == nullptr) {
    // Simulated alone only for a key that repeats: a phase started once with each size (or
    // with sizes that never repeat) would pay its run twice.
    if (std::find(ph.seen.begin(), ph.seen.end(), key) == ph.seen.end()) {
      if (ph.seen.size() < kMaxSeenKeys) ph.seen.push_back(key);
      return false;
    }
    if (ph.runs.size() == kMaxRuns) return false;
    // The links and routes are mapped with the first run: a phase whose keys never repeat (a
    // plan made afresh for each start) costs a look-up, not a sort of its links.
    if (ph.first.empty()) MapClosedPhase(paths, ph);
    run = RunAlone(ph, paths, key.first, key.second);
    ph.runs.push_back(run);
  }
  PLACESIM_CHECK(ph.first.size() == paths.size() + 1);
  if (!run->usable || now_ps_ > kMaxPs - run->completions.back()) return false;
  uint32_t c = static_cast<uint32_t>(closed_.size());
  if (free_closed_.empty()) {
    PLACESIM_CHECK(c < kClosedMark);
    closed_.emplace_back();
  } else {
    c = free_closed_.back();
    free_closed_.pop_back();
  }
  Closed& cl = closed_[c];
  cl.phase = cache.phase;
  cl.run = run;
  cl.paths = paths;
  cl.start_ps = now_ps_;
  cl.size = key.first;
  cl.extra_steps = extra_steps;
  cl.tag = tag;
  if (!HoldClosedLinks(c)) {
    FreeClosed(c);
    return false;
  }
  cl.first_seq = next_start_seq_;
  next_start_seq_ += paths.size();
  cl.live = true;
  live_flows_ += paths.size();
  PushClosedTicks(c);
  ++version_;
  return true;
}

bool FlowNetwork::HoldClosedLinks(uint32_t c) {
  const Closed& cl = closed_[c];
  const internal::ClosedPhase& ph = *cl.phase;
  const internal::ClosedRun& run = *cl.run;
  const Crossing mark{kClosedMark | c, kNoHop};
  constexpr size_t kAhead = 16;  // the links are ascending: mostly neighbours, a few misses
  closed_scratch_.clear();
  for (size_t i = 0; i < ph.links.size(); ++i) {
    if (deep_prefetch_ && i + kAhead < ph.links.size()) {
      __builtin_prefetch(&links_[ph.links[i + kAhead]], /*rw=*/1);
    }
    // A template's lazy holds on the link are written first (the hold check below then sees
    // them), and the templates that cross it log it, so their next lazy start sees this hold.
    Touch(ph.links[i]);
    Link& link = links_[ph.links[i]];
    // Idle: nothing crosses it and no hold on it is live or leaving in this instant's
    // completions (a group's or closed phase's hold that ends now, not yet processed).
    const bool held =
        link.list == kHeld && (link.busy_since_ps > now_ps_ ||
                               (link.busy_since_ps == now_ps_ && now_ps_ > completed_through_ps_));
    if (link.count > 0 || held) {
      for (size_t k = 0; k < i; ++k) {  // give back what was taken
        Link& taken = links_[ph.links[k]];
        taken.list = kNoList;
        taken.bytes_carried -= run.bytes[k];
        taken.busy_ps -= run.busy_ps[k];
      }
      for (uint32_t k : closed_scratch_) links_[ph.links[k]].peak = 0;
      return false;
    }
    // A spent hold on it is dropped: nothing reads it again (ReleaseHold would only clear it).
    link.list = kHeld;
    link.solo = mark;
    link.busy_since_ps = cl.start_ps + run.end_ps[i];
    link.bytes_carried += run.bytes[i];
    link.busy_ps += run.busy_ps[i];
    if (link.peak == 0) {
      link.peak = 1;
      closed_scratch_.push_back(static_cast<uint32_t>(i));
    }
  }
  return true;
}

void FlowNetwork::PushClosedTicks(uint32_t c) {
  Closed& cl = closed_[c];
  const internal::ClosedRun& run = *cl.run;
  const uint32_t slot = kGroupSlot | kClosedMark | c;
  const uint32_t version = cl.generation << 1;
  cl.ticks.clear();
  for (int64_t t : run.activations) {
    const uint32_t b = activations_.Push(Pending{cl.start_ps + t, cl.first_seq, slot, version});
    cl.ticks.push_back(Group::Tick{cl.start_ps + t, b, false});
  }
  // The phase completes in its last flow's place.
  const int64_t last = run.completions.back();
  for (int64_t t : run.completions) {
    const bool final_tick = t == last;
    const uint32_t b =
        completions_.Push(Pending{cl.start_ps + t, cl.first_seq + (final_tick ? run.last_flow : 0),
                                  slot, version | static_cast<uint32_t>(final_tick)});
    cl.ticks.push_back(Group::Tick{cl.start_ps + t, b, true});
  }
}

bool FlowNetwork::IsStaleClosedTick(const Pending& p) const {
  const Closed& cl = closed_[p.slot & ~(kGroupSlot | kClosedMark)];
  return !cl.live || (cl.generation << 1) != (p.version & ~1u);
}

void FlowNetwork::CompleteClosed(uint32_t c) {
  const Closed& cl = closed_[c];
  const internal::ClosedPhase& ph = *cl.phase;
  for (const auto& [i, peak] : cl.run->peaks) {
    Link& link = links_[ph.links[i]];
    link.peak = std::max(link.peak, peak);
  }
  const uint32_t n = static_cast<uint32_t>(cl.paths.size());
  done_.push_back(FlowCompletion{kGroupFlowId, cl.tag, SimTime::Picoseconds(now_ps_), n});
  live_flows_ -= n;
  FreeClosed(c);
}

void FlowNetwork::FreeClosed(uint32_t c) {
  Closed& cl = closed_[c];
  cl.live = false;
  ++cl.generation;
  cl.phase.reset();
  cl.run.reset();
  free_closed_.push_back(c);
}

void FlowNetwork::ReleaseClosedHold(LinkIndex l) {
  Link& link = links_[l];
  const int64_t end = link.busy_since_ps;
  // A hold that has not ended is of a live phase: a phase made ordinary clears its holds, and
  // a complete one's all ended by its last completion, which has been processed.
  if (end > now_ps_ || (end == now_ps_ && end > completed_through_ps_)) {
    MaterializeClosed(link.solo.slot & ~kClosedMark);
    return;
  }
  link.list = kNoList;  // its flows have left: idle
}

void FlowNetwork::MaterializeClosed(uint32_t c) {
  Closed& cl = closed_[c];
  PLACESIM_DCHECK(cl.live);
  const internal::ClosedPhase& ph = *cl.phase;
  const internal::ClosedRun& run = *cl.run;
  for (const Group::Tick& t : cl.ticks) {
    if (t.time_ps > now_ps_) (t.completion ? completions_ : activations_).Kill(t.bucket);
  }
  // The run alone up to where the model stands: after the previous instant, or after this one
  // when its completions were processed already (a flow started now with no latency).
  FlowNetwork alone = StartAlone(ph, cl.paths, cl.size, cl.extra_steps);
  const bool instant_done = completed_through_ps_ >= now_ps_;
  const int64_t upto = now_ps_ - cl.start_ps - (instant_done ? 0 : 1);
  if (upto >= 0) alone.AdvanceTo(SimTime::Picoseconds(upto));
  const uint32_t mark = kClosedMark | c;
  for (size_t i = 0; i < ph.links.size(); ++i) {
    Link& link = links_[ph.links[i]];
    const Link& a = alone.links_[i];
    if (link.list == kHeld && link.solo.slot == mark) link.list = kNoList;
    LogWrite(ph.links[i]);  // its hold becomes crossings (or nothing): templates re-read it
    PLACESIM_DCHECK(a.count == 0 || link.count == 0);
    link.bytes_carried += a.bytes_carried - run.bytes[i];
    link.busy_ps += a.busy_ps - run.busy_ps[i];
    link.peak = std::max(link.peak, a.peak);
    if (a.count > 0) link.busy_since_ps = cl.start_ps + a.busy_since_ps;
  }
  uint32_t complete = 0;
  bool batch_grew = false;
  for (size_t j = 0; j < cl.paths.size(); ++j) {
    const Flow& g = alone.flows_[j];
    if (g.phase == Phase::kFree) {  // complete: counted by the run's statistics
      ++complete;
      continue;
    }
    const uint32_t slot = NewFlow(cl.paths[j].links, cl.size, cl.tag);
    --live_flows_;  // counted in the phase's
    Flow& f = flows_[slot];
    f.start_seq = cl.first_seq + j;
    f.bucket = kNoBucket;
    if (g.phase == Phase::kLatency) {
      const int64_t active = cl.start_ps + ActivePs(cl.paths[j], cl.extra_steps);
      if (active > now_ps_) {
        f.bucket = activations_.Push(Pending{active, f.start_seq, slot, 0});
      } else if (f.hop_count == 0) {  // done when its first byte arrives, as TakeDueActivations
        batch_.push_back(Pending{active, f.start_seq, slot, 0});
        batch_grew = true;
      } else {
        activating_.push_back(slot);  // joins this instant's activations
      }
      continue;
    }
    f.phase = Phase::kTransfer;
    f.remaining = g.remaining;
    f.rate = g.rate;
    f.updated_ps = cl.start_ps + g.updated_ps;
    for (uint32_t h = f.hop_first; h < f.hop_first + f.hop_count; ++h) {
      Link& link = links_[hops_[h].link];
      AddCrossing(link, Crossing{slot, h});
      link.peak = std::max(link.peak, link.count + link.unfixed);
    }
    // The completion ApplyRate gave it at its last rate change.
    const int64_t finish =
        SaturatingAdd(f.updated_ps, DrainTime(f.remaining, f.rate).picoseconds());
    if (finish > now_ps_) {
      PushCompletion(slot, finish);
    } else {  // completes in this instant's batch, after its activations
      batch_.push_back(Pending{now_ps_, f.start_seq, slot, ++f.version});
      batch_grew = true;
    }
  }
  live_flows_ -= complete;
  // Flows already complete are reported with the next completions, together, as a group's.
  if (complete > 0) {
    overdue_.push_back(
        FlowCompletion{kGroupFlowId, cl.tag, SimTime::Picoseconds(now_ps_), complete});
  }
  if (batch_grew) {
    std::sort(batch_.begin(), batch_.end(),
              [](const Pending& a, const Pending& b) { return a.start_seq < b.start_seq; });
  }
  FreeClosed(c);
}

}  // namespace placesim::sim
