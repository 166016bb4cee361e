// Collective algorithms: the interface every algorithm implements (one file each in impl/) and
// the plain types they work on. An algorithm turns a collective over a partition of groups
// (GroupLayout) into phases of flows (sim/network/phase.h) that the network model runs; the
// executor's CommPlanner lays the groups out on the cluster and caches each plan, and a
// Registry (registry.h) picks the algorithm of every call: the one the scenario forces when it
// applies, else "auto".
//
// Every group of the layout sends at once (symmetry folding, sim/executor/executor.h), so a
// phase holds the flows of all groups. Byte counts are relative to the call's buffer S
// (CommPhase::num / den), which lets one plan serve every call of the same kind and layout.
//
// Thread-safety: algorithms are immutable; Plan may run concurrently for different runs.
#ifndef PLACESIM_SIM_COLLECTIVES_ALGORITHM_H_
#define PLACESIM_SIM_COLLECTIVES_ALGORITHM_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/collectives/nccl_model.h"
#include "sim/network/phase.h"
#include "strategies/schedule.h"
#include "topology/cluster.h"

namespace placesim::sim {

inline constexpr int kNumLinkKinds = 5;  // topology::LinkKind values
static_assert(kNumLinkKinds == static_cast<int>(topology::LinkKind::kMemory) + 1);

}  // namespace placesim::sim

namespace placesim::sim::collectives {

using topology::VertexId;

// One collective call as an algorithm sees it.
struct CollectiveCall {
  strategies::CollectiveKind kind = strategies::CollectiveKind::kAllReduce;
  Bytes bytes;         // what each member sends (the op's ring volume)
  Bytes buffer_bytes;  // S, the buffer reduced or gathered
  // Charge NCCL's protocol cost (Algorithm::Cost); false (default): the plan's alpha-beta
  // time alone. The executor sets it from ExecutorOptions::protocol_cost.
  bool protocol_cost = false;
};

// The groups of a collective's partition and how they sit on the nodes.
struct GroupLayout {
  int n = 1;                                  // members per group
  std::vector<std::vector<VertexId>> groups;  // every replayed group, members in axis order
  // Members of each group per node (in order of first member), when every node a group
  // touches holds the same number of its members; empty otherwise.
  std::vector<std::vector<std::vector<VertexId>>> per_node;
  bool multi_node = false;  // a group spans more than one node
  // Groups of the partition that are not replayed: each lies inside one node that holds no
  // simulated rank, so its flows meet none of the simulated ranks' flows, and by symmetry it
  // runs exactly as a replayed group does (see "Symmetry folding" in executor.h).
  std::vector<std::vector<VertexId>> unreplayed;
};

// A collective's phases and the algorithm (registry id) that built them.
struct CommPlan {
  int algorithm = -1;
  std::vector<CommPhase> phases;
  // Per phase, link hops per LinkKind of the flows of groups not replayed: each time the phase
  // runs they carry its bytes, counted in the link statistics. Empty when there are none.
  std::vector<std::array<int64_t, kNumLinkKinds>> unreplayed_hops;
  // Per phase, 1 when one of its flows leaves its node (NCCL's network latencies apply), and
  // the members per group: what the protocol cost (nccl_model.h) reads. Set with the plan.
  std::vector<uint8_t> on_network;
  int64_t ranks = 0;
  // The phases run at once, each one its own transfer, the call ending when the last one
  // does: an algorithm that pipelines its phases in chunks (Algorithm::pipelined). Set with
  // the plan. False: the phases run one after another.
  bool pipelined = false;
};

// Routes between GPUs, for the flows of a plan (the executor's CommPlanner).
class Routes {
 public:
  virtual ~Routes() = default;
  // From one GPU to another: through the NIC nearest each GPU (its rail) when they are on
  // different nodes, as NCCL's transports do; the plain route within a node. Errors
  // (kInvalidArgument, starting with `what`): no route.
  virtual StatusOr<FlowPath> Between(VertexId from, VertexId to, const char* what) = 0;
  // from -> NIC of `from` -> NIC of `to` -> to, through the NIC nearest each GPU, whatever
  // their nodes; the plain route when a node has no such NIC (explicit graphs, no NICs).
  virtual StatusOr<FlowPath> OverRail(VertexId from, VertexId to, const char* what) = 0;
};

// How "auto" treats an algorithm for a call it applies to (registry.h states the choice).
enum class AutoRole {
  kNever,       // auto does not pick it for this call; it runs only when forced
  kFallback,    // the choice when no preferred algorithm applies (the ring)
  kPreferred,   // the choice when it applies (hierarchical across nodes, pairwise all-to-all)
  kChallenger,  // replaces the choice when its estimate is strictly lower (the tree)
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // Registered name, as scenarios, summaries and traces spell it ("ring").
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;  // one line
  virtual std::string_view citation() const = 0;     // the paper or library it follows

  // Whether it can run `call` over `layout` (a forced algorithm that cannot falls back to auto).
  virtual bool AppliesTo(const CollectiveCall& call, const GroupLayout& layout) const = 0;
  // REQUIRES: AppliesTo(call, layout).
  virtual AutoRole AutoRoleFor(const CollectiveCall& call, const GroupLayout& layout) const = 0;
  // The phases of `kind` over every group of `layout`, relative to the buffer S, so the plan
  // serves every call of that kind and layout. `what` opens error messages.
  // REQUIRES: AppliesTo a call of `kind` over `layout` with a non-empty buffer, or of any size
  // for kinds that do not scale S. Errors: the routes' (no route between two members).
  virtual StatusOr<std::vector<CommPhase>> Plan(strategies::CollectiveKind kind,
                                                const GroupLayout& layout, Routes& routes,
                                                const char* what) const = 0;
  // The row of NCCL's tuning tables its per-call cost follows (nccl_model.h).
  virtual NcclRow nccl_row() const { return NcclRow::kRing; }
  // Whether its phases run at once, pipelined in chunks of the buffer (CommPlan::pipelined),
  // rather than one after another.
  virtual bool pipelined() const { return false; }
  // What `call` on `plan` costs beyond its transfers: the protocol NCCL would run it with and
  // the time that protocol adds (CheapestProtocol; Simple at no cost when !call.protocol_cost),
  // plus the pipeline fill of a pipelined plan (PipelineFill), which is charged either way.
  // REQUIRES: `plan` was built by this algorithm, with its on_network filled.
  // O(phases x distinct routes).
  ProtocolCost Cost(const CommPlan& plan, const CollectiveCall& call) const;
  // The analytic estimate "auto" compares: by default the plan's alpha-beta time, no
  // contention (PlanTime), plus Cost's overhead. REQUIRES: as Cost.
  virtual Duration Estimate(const CommPlan& plan, const CollectiveCall& call) const;
};

// The buffer a pipelined plan moves per chunk: NCCL's default staging buffer per channel and
// peer, NCCL_BUFFSIZE = 4 MiB (DEFAULT_BUFFSIZE in NVIDIA/nccl src/init.cc), which the
// Simple protocol fills before the next stage of the pipeline can start on it.
inline constexpr Bytes kPipelineChunk = strategies::cost::kNcclStagingBuffer;

// The plan's alpha-beta time, no contention: its phases' AnalyticTime summed, or their
// longest when the plan is pipelined. O(phases x distinct routes).
Duration PlanTime(const CommPlan& plan, TransferSize size);
// What chunking adds to a pipelined plan's longest phase: the first chunk has to pass the
// other phases before the last one can, (sum of phase times - longest) / C for C =
// ceil(S / kPipelineChunk) chunks, so a buffer of one chunk runs its phases back to back.
// Zero for a plan that is not pipelined. O(phases x distinct routes).
Duration PipelineFill(const CommPlan& plan, TransferSize size);
// The transfers a plan starts: one per phase that moves bytes when pipelined, all of its
// phases as one transfer otherwise (empty when nothing moves).
std::vector<std::span<const CommPhase>> Transfers(const CommPlan& plan);

// Helpers for implementations.

// All-reduce, reduce-scatter or all-gather of a non-empty buffer: the kinds whose volume
// splits S, which the hierarchical and tree algorithms need.
bool SplitsBuffer(const CollectiveCall& call);
// Ring steps of a collective over n members: 2(n-1) for all-reduce, n-1 for the others, one for
// a point-to-point transfer; 0 for n <= 1.
int64_t RingSteps(strategies::CollectiveKind kind, int64_t n);
// Adds one flow per ring edge ring[k] -> ring[k+1 mod n] to `phase`; nothing for n < 2.
Status AddRing(Routes& routes, const std::vector<VertexId>& ring, const char* what,
               CommPhase& phase);
// Adds one flow from every member to each other member, n (n-1) flows in member order.
Status AddAllPairs(Routes& routes, const std::vector<VertexId>& members, const char* what,
                   CommPhase& phase);

}  // namespace placesim::sim::collectives

#endif  // PLACESIM_SIM_COLLECTIVES_ALGORITHM_H_
