// FlowNetwork: a flow-level model of a network of directed links, in which concurrent flows
// share bandwidth max-min fairly. It is driven by the event engine but knows nothing of it.
//
// Model. A link l has a capacity C_l (bytes/s) and a latency. A flow f has a route (a list of
// link indices, the path its bytes take), a size in bytes and a start time. A flow lives in two
// phases, as in SimGrid's CM02 network model:
//   1. latency:  from its start until start + (sum of its route's link latencies + an optional
//                extra latency); it uses no bandwidth. This is the time for the first byte to
//                reach the destination.
//   2. transfer: its bytes drain at rate r_f (bytes/s), re-evaluated whenever any flow enters
//                or leaves a transfer phase; it completes when the last byte has drained.
// So an uncontended flow takes latency + size / bottleneck, the alpha-beta time (see
// alpha_beta.h). A zero-byte flow, or one with an empty route (source = destination), completes
// at the end of its latency phase.
//
// Max-min fairness. Rates r are feasible when sum_{f through l} r_f <= C_l on every link l.
// A feasible allocation is max-min fair when no r_f can be raised without lowering some r_g
// with r_g <= r_f; equivalently, every flow crosses a saturated "bottleneck" link on which its
// rate is the largest. This allocation exists, is unique, and is what progressive filling
// (water-filling) computes:
//   U := all flows (unfixed), R_l := C_l, n_l := number of unfixed flows through l
//   while U is not empty:
//     l* := argmin over links with n_l > 0 of R_l / n_l      (the most constrained link)
//     s  := R_l* / n_l*                                        (its fair share)
//     for every unfixed f through l*: r_f := s; remove f from U;
//                                     for every link k on f's route: R_k -= s, n_k -= 1
// Shares R_k / n_k never decrease as flows are fixed (a fixed flow took s <= R_k / n_k), so a
// min-heap of link shares whose outdated keys are refreshed when they surface finds l* each
// round. Cost: O(H + L log L) for H = total route length (hops) of the flows being solved and
// L = links in their component (one pop per round, plus one per refreshed key). Ties between equal
// shares are broken by link index, which keeps the result deterministic. Max-min is not a
// per-link equal split: with links A and B of capacity 10, f1 on A, f2 on A and B, f3 and f4
// on B, B is the bottleneck (10/3 < 10/2), fixing f2, f3, f4 at 10/3; f1 then gets the rest of
// A, 20/3, where splitting each link equally would give it 5 and leave A under-used.
//
// Incremental re-solving. Rates only change when a flow enters or leaves the transfer phase,
// and only within the connected component (links joined by flows that share them) of the
// links that flow touches; everything outside keeps its rate and its predicted completion.
// Changes are batched: Start() and completions only mark links dirty, and the next query
// solves each dirty component once (SimGrid's lmm::System selective update, in spirit).
// A flow that enters transfer alone on every link of its route (the common case on large
// fabrics, where each flow of a collective phase has links of its own) is a component of one
// flow: progressive filling fixes it at its route's bottleneck in one round, so its rate is
// taken while its links are read on entry, with no component search; a later flow of the same
// instant that joins one of its links makes it an ordinary seed again.
//
// Cost. Past a few thousand GPUs the link and flow tables outgrow the caches and a flow event
// costs about one memory load per link of its route; links and flow records are one cache line
// each (a link holding a lone crossing inline), hops are pooled per flow slot (no allocation
// per flow), the flows of one instant are processed as a batch whose records, hops and links
// are prefetched ahead in three stages (each stage reads what the one before fetched), a
// caller that knows a route's latency passes it (StartWithLatency) rather than have the links
// read, starting a phase's flows fetches the next flows' routes and records, and the pending
// events are bucketed by time (internal/time_buckets.h), so an instant leaves the queue at once.
//
// Time and exactness. Time is integer picoseconds. Progress is computed lazily per flow: a flow
// stores (remaining bytes at its last rate change, the time of that change, its rate), and its
// completion time is fixed at each rate change as now + ceil(remaining / rate), rounded up to
// the picosecond (the project's one rounding rule) by DrainTime (alpha_beta.h), after snapping
// values within 1e-12 relative of a whole picosecond so that floating-point noise never adds a
// spurious picosecond. A flow completes when the clock reaches its completion time — not when a
// floating-point remainder reaches zero — so no flow is ever left with a tiny residue that
// never drains. Flows whose rate a re-solve leaves unchanged keep their completion time.
//
// Closed phases. A phase whose flows meet each other (a tree all-reduce, an all-to-all) cannot
// be held as lone flows; StartClosed replays its run alone, simulated once, while nothing else
// touches its links, and makes it ordinary when something does (flow_network_closed.cc).
//
// Groups. A collective phase starts thousands of flows at one instant with the same bytes, and
// on a large fabric nearly each is alone on the links of its route for its whole life.
// StartGroup starts such a phase as one group: each flow whose links are idle (nothing crosses
// them, no other group holds them) and crossed by no other flow of the phase only marks its
// links as held until its completion time (its bottleneck's drain time after its latency,
// exactly what a lone flow gets), counting its bytes and busy time on them at once; the flows
// that meet something are left out and started one by one, in their places of the start
// order. The group then costs one pass over its links and one queue entry per distinct
// activation and completion time (the same instants the flows would have woken the caller
// at), instead of a record, hops, two queue entries and two passes over the links per flow.
// Exactness: while nothing else enters a held link, every held flow is a component of one
// flow from its activation to its completion, which is what the group predicted. The first
// flow that enters transfer on a link held by a group flow not yet complete turns the whole
// group into ordinary flows, each in the state it would have reached by then (in latency, or
// in transfer at its bottleneck since its activation, with its start order), after taking back
// what was counted in advance; flows of the group already complete stay counted. From there
// the model runs as if the flows had been started one by one. In a group of four flows or
// more, whose other held flows complete after this instant, only the flow held on that link
// is made ordinary (SplitFlow): the others are still alone on their links, so their
// predicted times stand, and the group is re-queued to wake the caller at their completion
// instants and report them at the last one's (a group splits at most a quarter of its flows
// before it is made ordinary whole, since each split scans its flows). A held flow that completes
// at the instant another flow enters its link still counts towards that link's peak, as an ordinary
// flow would (an instant's completions leave after its activations). A group's completion is
// reported once, at its last flow's completion time and in that flow's place in the report order.
// tests/network/flow_group_test.cc compares groups with flow-by-flow starts on derived cases and on
// random phases.
//
// Held templates. The same phase (the same FlowPath objects) is started thousands of times in
// a step, each time on links nothing else uses. A caller that keeps a GroupCache beside the
// phase lets StartGroup recognize it: at its second start, if its flows meet neither each
// other nor a route twice, the phase becomes a template (at most kMaxTemplates, of at least
// template_min_flows flows): its flattened routes, each flow's latency and bottleneck class
// (flows of one bottleneck drain the same bytes in the same time), and its number in the set
// of templates crossing each of its links (a link's record holds the number of its set, one of
// the few distinct sets, so that reading it costs no miss beyond the link's own). A template is
// clean when each of its links is idle-equivalent — nothing crosses it and any hold on it ended
// strictly before now and at or before the last instant whose completions were processed, a state
// every read treats as an untouched link — apart from the template's own latest hold, and no flow,
// hold or exclusion has touched them since. An eager StartGroup of a template that holds every flow
// leaves its links holding exactly that group's holds, so it makes the template clean; any other
// access of its links (Touch, in Activate and in the eager pass) makes it dirty. A clean template
// whose latest hold has ended, and whose link-sharing templates' lazy holds have too, starts
// lazily: the eager pass would find every link idle and hold every flow, so the group is queued
// with the same ticks, and the links are not written. What the holds would have counted is added to
// the template (bytes once per start, busy time per bottleneck class), and link_stats adds it to
// each link of the template: integer sums, so the order they are added in cannot change a figure; a
// charged link's peak is at least 1, as a hold makes it (peak is a running maximum).
// The first access of a link of a lazy hold that has not ended (Touch) writes its holds
// exactly as the eager pass would have (no other write reached those links meanwhile), and
// from there the model runs as above. tests/network/flow_group_test.cc repeats phases to
// compare templates with flow-by-flow starts.
//
// Determinism: every order (component traversal, ties in the solver, completions reported at
// the same picosecond — by start order) derives from the sequence of calls, never from
// addresses or hashing.
//
// Thread-safety: none; one network per simulation.
#ifndef PLACESIM_SIM_NETWORK_FLOW_NETWORK_H_
#define PLACESIM_SIM_NETWORK_FLOW_NETWORK_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/engine/event_queue.h"
#include "sim/network/internal/template_mask.h"
#include "sim/network/internal/time_buckets.h"

namespace placesim::sim {

// Dense index of a directed link, 0 .. num_links() - 1.
using LinkIndex = uint32_t;

struct LinkSpec {
  Bandwidth capacity;  // > 0
  Duration latency;    // >= 0, added once to each flow whose route crosses the link
};

// Handle of a flow. Handles are never reused while a flow is in the network; once a flow
// completes, its handle becomes unknown (State() answers kGone).
enum class FlowId : uint64_t {};

enum class FlowState {
  kLatency,   // started, first byte not yet delivered; no bandwidth used
  kTransfer,  // draining at Rate()
  kGone,      // completed (or never existed)
};

struct FlowCompletion {
  FlowId id;           // kGroupFlowId for a group's completion (StartGroup)
  uint64_t tag;        // the tag given to Start()
  SimTime time;        // when its last byte arrived
  uint32_t flows = 1;  // flows it stands for: 1, or a group's flow count
};

// The id of a group's completion: a group has no FlowId of its own.
inline constexpr FlowId kGroupFlowId{~uint64_t{0}};

// Kept by a caller beside a phase it starts repeatedly (CommPhase::group_cache), so that
// StartGroup can recognize the phase (see "Held templates"): zero-initialized, filled by the
// network, meaningful only to the network that filled it (a value from another is reset).
struct GroupCache {
  uint64_t network = 0;  // the serial of the network that filled it, 0 for none
  uint32_t state = 0;    // 0: not started there, 1: started once, kNone, else template + 2
  static constexpr uint32_t kNone = ~uint32_t{0};  // never a template
};

// A flow's route and its latency (phase.h).
struct FlowPath;

// What StartGroup did.
enum class GroupStart {
  kStarted,      // as a group, maybe with some flows left out (started one by one)
  kLinksBusy,    // nothing started: too many flows meet traffic now; the phase may group later
  kUngroupable,  // nothing started: too many of its flows meet each other; they always will
};

// What FlowNetwork::StartClosed keeps per phase (its links, routes and isolated runs), so that
// later starts of the phase reuse them. Filled and read only by StartClosed; one per phase.
namespace internal {
struct ClosedPhase;
struct ClosedRun;
}  // namespace internal
struct ClosedRunCache {
  std::shared_ptr<internal::ClosedPhase> phase;
};

struct LinkStats {
  // Bytes of completed flows routed over the link (exact; a flow counts when it completes).
  Bytes bytes_carried;
  // Time with at least one flow in its transfer phase on the link, up to now().
  Duration busy_time;
  uint32_t active_flows = 0;  // flows in transfer phase on the link now
  uint32_t peak_flows = 0;    // maximum of active_flows over time
};

// Work done by the max-min solver, to observe incrementality and cost.
struct SolverStats {
  uint64_t solves = 0;        // component solves
  uint64_t flows_solved = 0;  // sum over solves of the flows in the component
  uint64_t links_solved = 0;  // sum over solves of the links in the component
  uint64_t rate_changes = 0;  // flows whose rate actually changed
  uint32_t last_component_flows = 0;
  uint32_t last_component_links = 0;
};

class FlowNetwork {
 public:
  // Validates the links: every capacity must be finite and > 0, every latency >= 0.
  // Errors name the link: `links[3].capacity: 0 B/s: must be > 0`.
  static StatusOr<FlowNetwork> Create(std::vector<LinkSpec> links);

  FlowNetwork(FlowNetwork&&) = default;
  FlowNetwork& operator=(FlowNetwork&&) = default;

  // Starts a flow of `size` bytes at time `now` over `route`, tagged with `tag` (returned in
  // its FlowCompletion, so the caller needs no map from FlowId to its own work). Its latency
  // phase lasts the sum of the route's link latencies plus `extra_latency`.
  // REQUIRES: now >= this->now(); every route index < num_links(); size >= 0;
  // extra_latency >= 0. A route may cross a link more than once; each crossing takes a share.
  // Flows due to complete before `now` are completed first and reported by the next
  // AdvanceTo. Complexity: O(route length) plus O(log n); the re-solve is deferred.
  FlowId Start(SimTime now, std::span<const LinkIndex> route, Bytes size, uint64_t tag = 0,
               Duration extra_latency = Duration::Zero());
  // Start() for a caller that already holds the route's latency (a FlowPath carries it): the
  // same flow, the same times, without reading the links' latencies, which past a few thousand
  // GPUs are one cache miss per link. REQUIRES: route_latency == RouteLatency(route) (checked
  // in debug builds), and Start()'s requirements.
  FlowId StartWithLatency(SimTime now, std::span<const LinkIndex> route, Duration route_latency,
                          Bytes size, uint64_t tag = 0, Duration extra_latency = Duration::Zero());

  // Starts one flow of `size` bytes per path, tagged `tag`, path j over paths[j].links with
  // route latency paths[j].latency and extra latency paths[j].latency x extra_steps (saturating
  // at Duration::Max()): the same flows, start order, times and link statistics as
  // StartWithLatency for each path in order, when each flow can be predicted alone on its links
  // (see "Groups" above). The held flows' completions are then reported as one FlowCompletion
  // with `flows` = their count, unless a later flow joins one of their links, which makes them
  // ordinary flows reported one by one (those already complete then as one FlowCompletion,
  // first in the next AdvanceTo's); the flows left out are reported one by one. Returns kStarted,
  // or, having started nothing, why not (the caller then starts the flows one by one): more than a
  // quarter of the flows would be left out, or `size` is zero (kLinksBusy). While a group flow
  // holds a link, link_stats counts its bytes and busy time as of its predicted completion, and not
  // in active_flows; at or after that time the figures are exact. REQUIRES: now >= this->now();
  // paths outlive the group; size >= 0; extra_steps >= 0; every route index < num_links();
  // paths[j].latency == RouteLatency(paths[j].links). Complexity: O(total route length) plus O(d
  // log d) for d distinct activation and completion times.
  // `cache`, when given, is the caller's GroupCache of these paths (the same object each
  // start of the same paths): the phase may then start as a held template (see "Held
  // templates"), with the same result. O(d log d) then, after its first starts.
  GroupStart StartGroup(SimTime now, std::span<const FlowPath> paths, Bytes size,
                        int64_t extra_steps, uint64_t tag, GroupCache* cache = nullptr);
  // Phases of fewer flows than this never become templates (default 256; tests lower it).
  void set_template_min_flows(size_t flows) { template_min_flows_ = flows; }
  // Solver epochs are restarted (every mark cleared) before they pass this (default and most
  // 2^32 - 1, what a link's mark holds; tests lower it to restart them often).
  void set_epoch_limit(uint64_t limit) { epoch_limit_ = std::min(limit, kEpochLimit); }

  // Starts the flows StartGroup would (the same paths, bytes, extra latency, tag and start
  // order) as one closed phase when every link they cross is idle now (nothing crosses it, no
  // group or closed phase holds it): the phase's run alone, on its links alone, is simulated
  // once per (size, extra_steps) and kept in `cache`, and later starts replay it shifted in
  // time (flow_network_closed.cc states why that is exact). Its flows may share links with
  // each other. Returns false, having started nothing, when a link is busy, when the phase's
  // run would overflow the clock, or on the first start of a (size, extra_steps), which
  // records it (a run is simulated only for a key that repeats; a phase keeps at most 16 runs,
  // and a key past them is started one by one); the caller then starts the flows one by one.
  // Reported as StartGroup's groups are: one FlowCompletion at the last flow's completion,
  // in its place of the report order; the caller is woken at every instant where a flow of the
  // phase activates or completes. REQUIRES: StartGroup's requirements; `cache` used only with
  // these paths and this network. Complexity: O(distinct links + distinct tick times), plus
  // one flow-by-flow run of the phase alone when a key first repeats.
  bool StartClosed(SimTime now, std::span<const FlowPath> paths, Bytes size, int64_t extra_steps,
                   uint64_t tag, ClosedRunCache& cache);

  // A cache hint, no effect on the model: fetches what the Start() that comes `ahead` calls
  // from now will read for `route` (the route itself and the flow record and tag it will
  // take), so that a caller starting a batch of flows can overlap their misses.
  // O(route length).
  void PrefetchStart(std::span<const LinkIndex> route, size_t ahead) const;
  // Whether PrefetchStart (and the network's own record and hop prefetches) do anything: only
  // when the link table is past the caches. A caller may skip PrefetchStart when false.
  bool deep_prefetch() const { return deep_prefetch_; }

  // Aborts a flow that has not completed: it leaves its links at now() and is never reported
  // complete; the bytes it sent are not credited to link statistics. Returns false when `id` is
  // unknown or already complete. Its bandwidth is re-shared at the next query.
  // Complexity: O(route length).
  bool Cancel(FlowId id);

  // The earliest time at which AdvanceTo will change something (a flow completes or leaves its
  // latency phase); now() when completions are waiting to be reported; SimTime::Max() when
  // the network is idle. Settles pending changes (re-solves dirty components) first.
  SimTime NextEventTime();

  // Moves the clock to `t`, processing every latency end and completion up to and including
  // `t` in time order, and appends the flows completed since the last call to `out` — in order
  // of completion time, then start order. REQUIRES: t >= now().
  void AdvanceTo(SimTime t, std::vector<FlowCompletion>& out);
  std::vector<FlowCompletion> AdvanceTo(SimTime t);

  // Changes whenever NextEventTime() may have changed (Start, AdvanceTo, and any query that
  // processes due events). An executor reads it after NextEventTime(), stores it in the event
  // it schedules at that time, and ignores events whose version is no longer current.
  uint64_t version() const { return version_; }

  // Current rate of a flow in its transfer phase; zero in its latency phase or when gone.
  // Like NextEventTime(), settles pending changes at now() first.
  Bandwidth Rate(FlowId id);
  FlowState State(FlowId id) const;
  // Bytes not yet delivered at now(); zero when gone.
  double RemainingBytes(FlowId id);

  SimTime now() const { return SimTime::Picoseconds(now_ps_); }

  // True once a flow's activation or completion time saturated at SimTime::Max() (a latency or a
  // drain time past the representable picoseconds): NextEventTime() then answers Max(), which
  // would otherwise read as "idle" and leave the flow stuck forever.
  bool time_overflowed() const { return time_overflowed_; }
  size_t num_links() const { return links_.size(); }
  // Flows started and not yet reported complete.
  size_t num_flows() const { return live_flows_; }
  LinkStats link_stats(LinkIndex link) const;
  const SolverStats& solver_stats() const { return solver_stats_; }

  // Sum of the link latencies of `route`. REQUIRES: valid indices.
  Duration RouteLatency(std::span<const LinkIndex> route) const;
  // Smallest link capacity on `route`; Bandwidth::Zero() for an empty route.
  Bandwidth RouteBottleneck(std::span<const LinkIndex> route) const;

 private:
  enum class Phase : uint8_t { kFree, kLatency, kTransfer };

  // Sentinel of the crossing lists: no hop.
  static constexpr uint32_t kNoHop = ~uint32_t{0};
  static constexpr uint32_t kNoList = ~uint32_t{0};
  static constexpr uint32_t kNoBucket = internal::kNoBucket;
  // Link::list of a link held by a group flow (see Group).
  static constexpr uint32_t kHeld = kNoList - 1;
  // Queue entries whose slot is at or above this name group kGroupSlot ^ slot.
  static constexpr uint32_t kGroupSlot = uint32_t{1} << 31;
  template <typename Grow>
  static uint32_t TakeSlot(std::vector<uint32_t>& free, size_t size, Grow grow);

  // A flow's hops lie contiguously in hops_ (its route, in order), pooled per slot, so that
  // starting a flow allocates nothing.
  struct Hop {
    LinkIndex link;
    uint32_t pos;  // index of this crossing in its link's crossings
  };
  struct Crossing {
    uint32_t slot;  // flow slot
    uint32_t hop;   // index into hops_
  };
  // A link held by a group flow has count == 0, list == kHeld, solo == {group, flow index}
  // and busy_since_ps == the flow's completion time; its bytes and busy time already count the
  // flow. A hold whose completion time is <= now is spent: the link is idle.
  // Everything a flow event touches on a link, in one cache line: the hot paths (Activate,
  // Leave, the solver) load each link of a route once, and the link tables of 100,000+ GPU
  // clusters are far larger than the caches. A link crossed by one flow holds that crossing
  // inline; a second flow moves them to a list of lists_ (kept until the link is idle again).
  struct alignas(64) Link {
    double capacity = 0;  // bytes/s
    int64_t bytes_carried = 0;
    int64_t busy_ps = 0;
    int64_t busy_since_ps = 0;
    uint32_t seen_epoch = 0;  // solver scratch (see ResetEpochs)
    // The set of held templates crossing the link: an index of template_sets_, 0 for none.
    uint32_t templates = 0;
    Crossing solo{};          // the crossing when list == kNoList and count == 1
    uint32_t list = kNoList;  // index into lists_ of its crossings, kNoList when inline
    uint32_t count = 0;       // flows in transfer phase, one per crossing
    uint32_t peak = 0;
    uint32_t unfixed = 0;  // solver scratch
  };
  static_assert(sizeof(Link) == 64);
  // What every flow event reads, in one cache line (the records are aligned): the solver's
  // scratch (FlowScratch) and the tag live apart, since a lone flow never needs the first and
  // only its completion reads the second.
  struct alignas(64) Flow {
    double remaining = 0;  // bytes left at updated_ps
    double rate = 0;       // bytes/s
    int64_t updated_ps = 0;
    int64_t size = 0;
    uint64_t start_seq = 0;
    uint32_t hop_first = 0;  // its hops: hops_[hop_first, hop_first + hop_count)
    uint32_t hop_count = 0;
    uint32_t generation = 0;
    uint32_t version = 0;  // invalidates stale completion-heap entries
    // The bucket of its live entry: in activations_ while in its latency phase, in
    // completions_ while in transfer; kNoBucket when none.
    uint32_t bucket = kNoBucket;
    // hops_ reserved for the slot (reused by its next flows): 2^(hop_capacity_log2 - 1),
    // none when 0.
    uint8_t hop_capacity_log2 = 0;
    // Activated alone on every link of its route and not joined since: its max-min rate is
    // its route's bottleneck, solved without a component search (see Activate).
    bool lone = false;
    Phase phase = Phase::kFree;
  };
  static_assert(sizeof(Flow) == 64);
  // The solver's marks and result for a flow of a component being solved.
  struct FlowScratch {
    double solved_rate = 0;
    uint64_t seen_epoch = 0;
    uint64_t fixed_epoch = 0;
  };
  struct Seed {  // a link whose component must be re-solved, and the flow that dirtied it
    LinkIndex link;
    uint32_t slot;  // a cache hint only: the flow may have left since
  };
  struct LoneFlow {  // a flow activated alone, and its route's bottleneck
    uint32_t slot;
    double rate;
  };
  struct Pending {  // an entry of the activation or completion heap
    int64_t time_ps;
    uint64_t start_seq;
    uint32_t slot;
    uint32_t version;
  };
  // A group of flows started by StartGroup and not yet complete or made ordinary.
  struct Group {
    struct Tick {  // one of its queue entries
      int64_t time_ps;
      uint32_t bucket;
      bool completion;
    };
    std::span<const FlowPath> paths;
    std::vector<int64_t> active_ps;  // per flow: end of its latency phase
    std::vector<int64_t> finish_ps;  // per flow: its completion
    std::vector<char> excluded;      // per flow: left out, started as an ordinary flow
    std::vector<Tick> ticks;
    int64_t size = 0;
    uint32_t held = 0;       // flows not left out
    uint32_t splits = 0;     // flows made ordinary one by one (SplitFlow)
    uint64_t first_seq = 0;  // flow j has start_seq first_seq + j
    uint64_t tag = 0;
    uint32_t generation = 0;  // entries carry it (Pending::version >> 1): older ones are stale
    bool live = false;
    // Started from a template and not yet written: active_ps, finish_ps and excluded are
    // filled when its holds are (MaterializeHolds).
    bool lazy = false;
  };
  // A phase started as a held template: see "Held templates".
  using TemplateMask = internal::TemplateMask;
  static constexpr size_t kMaxTemplates = TemplateMask::kBits;
  struct TemplateVariant {  // the times of one (size, extra_steps) of a template
    int64_t size = 0;
    int64_t extra_steps = 0;
    bool usable = false;                // no time saturates
    int64_t active_factor = 0;          // activation offset = latency x active_factor
    std::vector<int64_t> class_drain;   // per bottleneck class: drain time of `size`
    std::vector<int64_t> active_ticks;  // distinct activation offsets, ascending
    std::vector<int64_t> finish_ticks;  // distinct completion offsets, ascending
    uint32_t key = 0;                   // the latest started of the flows completing last
  };
  struct Template {
    // Flows that meet another flow of the phase or cross a link twice (or have no route):
    // HoldLinks leaves exactly these out on idle links, and they start one by one. The others
    // are held; only their links belong to the template.
    std::vector<uint32_t> left_out;
    std::vector<uint32_t> held;   // the held flows' indices, ascending
    std::vector<uint32_t> first;  // held[k]'s links: links[first[k], first[k + 1])
    std::vector<LinkIndex> links;
    std::vector<uint32_t> flow_class;  // per held flow: its bottleneck, an index of class_rate
    std::vector<double> class_rate;
    std::vector<int64_t> latency_ps;  // per flow of the phase: its route latency
    std::vector<std::pair<LinkIndex, uint32_t>> link_flow;  // (link, held flow k), sorted
    TemplateMask conflicts;  // templates sharing a link with it, itself included
    std::vector<TemplateVariant> variants;
    // Counted by lazy starts, added by link_stats: bytes per link, busy time per class.
    int64_t pending_bytes = 0;
    std::vector<int64_t> pending_busy;
    bool charged = false;
    int64_t hold_until_ps = -1;  // the last completion of its latest hold, eager or lazy
    // While dirty and not overflowed: the links touched since it was last clean, which are
    // all the links whose state may have changed since (some more than once).
    std::vector<LinkIndex> touched;
    // Its latest lazy hold (while its bit is set in lazy_live_).
    uint32_t group = 0;
    uint32_t generation = 0;
    uint32_t variant = 0;
    int64_t start_ps = 0;
    std::vector<uint32_t> busy;  // held flows k it left out for traffic (ascending)
  };
  struct Share {  // an entry of the solver's heap
    double share;
    LinkIndex link;
  };

  explicit FlowNetwork(std::vector<LinkSpec> links);

  // Takes a free slot for a flow of `route`, `size` bytes, tagged `tag`, with its hops, in
  // its latency phase; the caller queues its activation.
  uint32_t NewFlow(std::span<const LinkIndex> route, int64_t size, uint64_t tag);
  // NewFlow with its start order, its activation queued at `active_ps`.
  uint32_t QueueFlow(std::span<const LinkIndex> route, int64_t active_ps, int64_t size,
                     uint64_t tag, uint64_t start_seq);
  // Leaves flow j out of the group being held (see HoldLinks).
  void ExcludeFlow(uint32_t g, Group& group, size_t j);
  // StartGroup's pass over the routes: holds every link, or holds none and says why not.
  GroupStart HoldLinks(uint32_t g, Group& group, int64_t extra_steps);
  // Fetches the routes and links HoldLinks reaches a few flows after flow j of `group`.
  void PrefetchGroupPaths(const Group& group, size_t j) const;
  // Gives back the holds of the first `flows` flows of group g and what they counted, and
  // clears the marks of those left out.
  void ReleaseHolds(uint32_t g, const Group& group, size_t flows);
  void ClearExclusions(uint32_t g, const Group& group, size_t flows);
  // Queues the group's ticks: one activation per distinct activation time, one completion per
  // distinct completion time, the last one carrying the group's completion.
  void PushTicks(uint32_t g, Group& group);
  // A link held by a group flow, met by a flow entering transfer: idle again when the hold is
  // spent, else its group is made ordinary.
  void ReleaseHold(LinkIndex l);
  void MakeOrdinary(uint32_t g);
  // Makes held flow j of group g, whose hold ends after now, an ordinary flow and keeps the
  // group for the others; false, having done nothing, when the group must go whole.
  bool SplitFlow(uint32_t g, uint32_t j);
  // Held flow j of `group`, whose hold ends after now, as the ordinary flow it would be now.
  void Unhold(const Group& group, size_t j);
  void CompleteGroup(uint32_t g);
  // Held templates. The template of `paths` per `cache`, registering it at its second start;
  // -1 when it has none.
  int FindTemplate(std::span<const FlowPath> paths, GroupCache& cache);
  int RegisterTemplate(std::span<const FlowPath> paths);
  // The variant of template t for (size, extra_steps), computed on first use.
  uint32_t TemplateVariantOf(uint32_t t, int64_t size, int64_t extra_steps);
  // Starts the group lazily when template t is clean and nothing it shares links with holds
  // them; false, having done nothing, otherwise.
  bool StartLazy(uint32_t t, std::span<const FlowPath> paths, int64_t size, int64_t extra_steps,
                 uint64_t tag);
  // Whether template t's latest hold is idle-equivalent on every link (see "Held templates").
  bool HoldEnded(const Template& t) const;
  // Called before reading link l's state: dirties the templates on it, writing the holds of
  // those holding it lazily. It reads the link's record (Link::templates), which the caller
  // reads next, and the set's mask only for a link that a template crosses.
  void Touch(LinkIndex l) {
    const uint32_t s = links_[l].templates;
    if (s == 0) return;
    const TemplateMask& m = template_sets_[s];
    if (m.Meets(lazy_live_)) MaterializeHolds(m & lazy_live_);
    if (!(m & ~overflowed_).Any()) return;
    LogTouch(l, m & ~overflowed_);
  }
  // Records a write of link l made with no Touch before it (MakeOrdinary).
  void LogWrite(LinkIndex l) {
    const uint32_t s = links_[l].templates;
    if (s == 0) return;
    const TemplateMask m = template_sets_[s] & ~overflowed_;
    if (m.Any()) LogTouch(l, m);
  }
  // Makes the templates of `m` dirty, recording l in their logs (see Template::touched).
  void LogTouch(LinkIndex l, const TemplateMask& m);
  // Makes the templates of `m` dirty with no log: the next start of each is eager.
  void Overflow(const TemplateMask& m) {
    clean_ &= ~m;
    overflowed_ |= m;
  }
  // Reads the links template t's log names: false when one may be held over or not depending
  // on the flow (a hold ending now, not yet processed); else the template's flows that meet
  // traffic on them, in tm.busy.
  bool ScanLog(uint32_t t);
  // Queues the ticks of lazy group g for the held flows not in tm.busy; returns the last
  // completion offset.
  int64_t PushLazyTicks(uint32_t g, Group& group, const Template& tm, const TemplateVariant& v);
  void MarkClean(uint32_t t);
  // After StartGroup held `group` of template t eagerly: clean, with a log of the links of the
  // template's flows it left out.
  void AfterEagerStart(uint32_t t, const Group& group);
  // Writes the lazy holds of the templates of `templates` (of template t) that have not ended.
  void MaterializeHolds(const TemplateMask& templates);
  void MaterializeHold(size_t t);
  // The number of set m in template_sets_, adding it when new.
  uint32_t TemplateSetOf(const TemplateMask& m);
  // Queues one tick of group g at `t`.
  void PushTick(uint32_t g, Group& group, int64_t t, bool completion, bool final_tick, size_t key);
  void FreeGroup(uint32_t g);
  bool IsStaleTick(const Pending& p) const;
  // Gives back the holds of `links` taken for one flow of `size` bytes busy `busy_ps`.
  void ReleaseRoute(std::span<const LinkIndex> links, int64_t size, int64_t busy_ps);
  Flow* Find(FlowId id);
  const Flow* Find(FlowId id) const;
  void Advance(int64_t t_ps);
  // Cache hints for the flow in `slot`: its record, its hops (reads the record), the links of
  // its route (reads the hops). PrefetchAhead issues them for the flows 3, 2 and 1 prefetch
  // distances after position i of a batch of n, slot_at(k) naming the k-th flow's slot. The
  // record and hop stages (and PrefetchStart) run only when deep_prefetch_ is set.
  void PrefetchFlow(uint32_t slot) const;
  void PrefetchHops(uint32_t slot) const;
  void PrefetchLinks(uint32_t slot) const;
  template <typename SlotAt>
  void PrefetchAhead(size_t i, size_t n, SlotAt slot_at) const;
  std::span<const Crossing> Crossings(const Link& link) const;
  void AddCrossing(Link& link, Crossing c);
  void RemoveCrossing(Link& link, uint32_t pos);
  void Activate(uint32_t slot);
  void Complete(uint32_t slot);
  void Settle();
  void SolveComponent(LinkIndex seed);
  void CollectComponent(LinkIndex seed, uint64_t epoch);
  void FillProgressively(uint64_t epoch);
  // Clears every solver mark and restarts the epochs at 0, so that they fit Link::seen_epoch.
  void ResetEpochs();
  void ApplyRate(uint32_t slot, double rate);
  void PushCompletion(uint32_t slot, int64_t finish_ps);
  bool IsStale(const Pending& p) const;
  bool IsStaleActivation(const Pending& p) const;
  void Leave(uint32_t slot, bool count_bytes);
  int64_t NextInternalEventPs();
  void TakeDueCompletions();
  void TakeDueActivations();

  // Closed phases (StartClosed; flow_network_closed.cc). A link a closed phase holds has
  // list == kHeld, solo == {kClosedMark | its number, kNoHop} and busy_since_ps == the last
  // completion of the phase's flows on it; its queue entries name kGroupSlot | kClosedMark | c.
  static constexpr uint32_t kClosedMark = uint32_t{1} << 30;
  struct Closed {
    std::shared_ptr<const internal::ClosedPhase> phase;
    std::shared_ptr<const internal::ClosedRun> run;
    std::span<const FlowPath> paths;
    std::vector<Group::Tick> ticks;
    int64_t start_ps = 0;
    int64_t size = 0;
    int64_t extra_steps = 0;
    uint64_t first_seq = 0;
    uint64_t tag = 0;
    uint32_t generation = 0;
    bool live = false;
  };
  static bool IsClosedSlot(uint32_t slot) { return (slot & ~kGroupSlot) >= kClosedMark; }
  // Fills ph's links and local routes from `paths`.
  void MapClosedPhase(std::span<const FlowPath> paths, internal::ClosedPhase& ph) const;
  // The phase alone on a network of its links, its flows started at 0 (flow j in slot j).
  static FlowNetwork StartAlone(const internal::ClosedPhase& ph, std::span<const FlowPath> paths,
                                int64_t size, int64_t extra_steps);
  static std::shared_ptr<const internal::ClosedRun> RunAlone(const internal::ClosedPhase& ph,
                                                             std::span<const FlowPath> paths,
                                                             int64_t size, int64_t extra_steps);
  // Holds the phase's links for closed phase c, or holds none and answers false.
  bool HoldClosedLinks(uint32_t c);
  void PushClosedTicks(uint32_t c);
  bool IsStaleClosedTick(const Pending& p) const;
  void CompleteClosed(uint32_t c);
  // A flow enters transfer on a link of live closed phase c: its flows become ordinary flows in
  // the state their run alone had reached (see flow_network_closed.cc).
  void MaterializeClosed(uint32_t c);
  // A link held by a closed phase, met by a flow entering transfer (ReleaseHold).
  void ReleaseClosedHold(LinkIndex l);
  void FreeClosed(uint32_t c);
  std::vector<Closed> closed_;
  std::vector<uint32_t> free_closed_;
  std::vector<uint32_t> closed_scratch_;  // HoldClosedLinks: links whose peak it raised from 0

  std::vector<Link> links_;
  // Link latencies apart from links_, so that starting a flow reads a compact array.
  std::vector<int64_t> latency_ps_;
  std::vector<Flow> flows_;
  std::vector<FlowScratch> scratch_;          // per slot, see FlowScratch
  std::vector<uint64_t> tags_;                // per slot, the tag given to Start()
  std::vector<Hop> hops_;                     // every slot's hops, see Hop
  std::vector<std::vector<Crossing>> lists_;  // crossings of links crossed by several flows
  std::vector<uint32_t> free_lists_;
  std::vector<double> residual_;  // solver scratch per link, apart from the hot records
  std::vector<uint32_t> free_slots_;
  internal::TimeBuckets<Pending> activations_;
  internal::TimeBuckets<Pending> completions_;  // lazily invalidated (see Flow::version)
  std::vector<FlowCompletion> done_;            // completed, not yet reported
  // Flows of groups made ordinary that had completed: reported by the next AdvanceTo, before
  // done_, without making NextEventTime answer now (see MakeOrdinary).
  std::vector<FlowCompletion> overdue_;
  std::vector<Seed> dirty_links_;
  std::vector<LoneFlow> lone_flows_;   // activated alone since the last Settle (see Flow::lone)
  std::vector<Pending> batch_;         // scratch: completions at one instant
  std::vector<uint32_t> activating_;   // scratch: latency ends at one instant
  std::vector<Pending> popped_;        // scratch: entries taken from a queue
  std::vector<LinkIndex> comp_links_;  // scratch: the component being solved
  std::vector<uint32_t> comp_flows_;
  std::vector<Share> shares_;
  std::vector<Group> groups_;
  std::vector<uint32_t> free_groups_;
  std::vector<int64_t> tick_times_;  // scratch of PushTicks
  std::vector<Template> templates_;
  std::vector<uint32_t> lazy_out_;  // scratch of StartLazy
  // The distinct sets of templates that cross a link (Link::templates); [0] is the empty set.
  std::vector<TemplateMask> template_sets_{TemplateMask{}};
  std::map<TemplateMask, uint32_t> template_set_index_;  // template_sets_[i] -> i
  TemplateMask clean_;                                   // templates that are clean
  TemplateMask lazy_live_;                               // latest hold lazy and not written
  TemplateMask overflowed_ = TemplateMask::All();        // dirty templates with no usable log
  uint64_t serial_ = 0;                                  // this network's GroupCache::network
  size_t template_min_flows_ = 256;
  // Links whose hold ended at this instant and that a flow entered since: the held flow still
  // counts towards their peak until this instant's completions are processed, as it would
  // have as an ordinary flow. Link::unfixed (solver scratch, zero outside a solve) counts them.
  std::vector<LinkIndex> present_holds_;
  // The latest instant whose completions have been processed (left their links).
  int64_t completed_through_ps_ = -1;
  int64_t now_ps_ = 0;
  bool time_overflowed_ = false;  // see time_overflowed()
  // Whether the record, hop and start prefetches run: only for link tables past the caches.
  bool deep_prefetch_ = false;
  uint64_t next_start_seq_ = 0;
  uint64_t epoch_ = 0;
  static constexpr uint64_t kEpochLimit = ~uint32_t{0};
  uint64_t epoch_limit_ = kEpochLimit;
  uint64_t version_ = 0;
  size_t live_flows_ = 0;
  SolverStats solver_stats_;
};

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_NETWORK_FLOW_NETWORK_H_
