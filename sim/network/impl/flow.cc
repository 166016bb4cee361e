// The "flow" network model: every flow of a phase is a FlowNetwork flow (max-min fair sharing
// of every directed link, re-solved when flows start or end; flow_network.h states the maths),
// so concurrent transfers contend where their routes meet. A transfer's next phase starts the
// moment the last flow of the previous one completes; the transfer ends with its last phase.
//
// Invariants: a slot holds one running transfer; FlowNetwork tags are slot numbers, so a
// completion finds its transfer in O(1). Freed slots are reused last-in first-out, which keeps
// the run deterministic.
// Thread-safety: one run.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "sim/network/impl/builtins.h"

namespace placesim::sim::network_impl {
namespace {

class FlowModelNetwork final : public Network {
 public:
  explicit FlowModelNetwork(FlowNetwork net) : net_(std::move(net)) {}

  std::optional<Duration> Start(SimTime now, std::span<const CommPhase> phases, TransferSize size,
                                uint64_t tag) override {
    uint32_t slot = 0;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(running_.size());
      running_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    running_[slot] = Running{phases, size, tag, 0, 0};
    if (!StartPhase(now, slot, 0)) {
      // No flow at all (excluded by the contract): it ends at once, through the engine.
      free_.push_back(slot);
      return Duration::Zero();
    }
    return std::nullopt;
  }

  SimTime NextEventTime() override { return net_.NextEventTime(); }
  uint64_t version() const override { return net_.version(); }

  void AdvanceTo(SimTime now, std::vector<uint64_t>& finished) override {
    completions_.clear();
    net_.AdvanceTo(now, completions_);
    for (const FlowCompletion& c : completions_) {
      const uint32_t slot = static_cast<uint32_t>(c.tag);
      Running& r = running_[slot];
      r.flows_left -= c.flows;  // a group's completion stands for several flows
      if (r.flows_left > 0) continue;
      if (!StartPhase(now, slot, r.phase + 1)) {
        finished.push_back(r.tag);
        free_.push_back(slot);
      }
    }
  }

  LinkStats link_stats(LinkIndex link) const override { return net_.link_stats(link); }
  bool time_overflowed() const override { return net_.time_overflowed(); }

 private:
  struct Running {
    std::span<const CommPhase> phases;
    TransferSize size;
    uint64_t tag = 0;
    uint32_t phase = 0;      // the phase running
    int64_t flows_left = 0;  // its flows not yet complete
  };

  // Starts the first phase with flows from `k` on; false when none is left.
  bool StartPhase(SimTime now, uint32_t slot, uint32_t k) {
    Running& r = running_[slot];
    while (k < r.phases.size() && r.phases[k].flows.empty()) ++k;
    if (k == r.phases.size()) return false;
    const CommPhase& ph = r.phases[k];
    r.phase = k;
    r.flows_left = static_cast<int64_t>(ph.flows.size());
    const Bytes bytes = PhaseBytes(ph, r.size);
    const int64_t extra_steps = std::max<int64_t>(ph.steps - 1, 0);
    // A phase whose flows are each alone on their links starts as one group (the same times and
    // statistics, at a fraction of the cost; FlowNetwork::StartGroup), else flow by flow.
    if (!ph.ungroupable) {
      const GroupStart g =
          net_.StartGroup(now, ph.flows, bytes, extra_steps, slot, &ph.group_cache);
      if (g == GroupStart::kStarted) return true;
      if (g == GroupStart::kUngroupable) ph.ungroupable = true;
    }
    // Flows that meet each other: a phase on otherwise idle links replays its run alone.
    if (ph.ungroupable && net_.StartClosed(now, ph.flows, bytes, extra_steps, slot, ph.closed)) {
      return true;
    }
    constexpr size_t kAhead = 8;  // flows whose misses overlap the current one's
    const bool prefetch = net_.deep_prefetch();
    for (size_t j = 0; j < ph.flows.size(); ++j) {
      if (prefetch && j + kAhead < ph.flows.size()) {
        net_.PrefetchStart(ph.flows[j + kAhead].links, kAhead);
      }
      const FlowPath& p = ph.flows[j];
      // Saturates rather than wrapping negative; the network then reports the time overflow.
      const bool fits = extra_steps == 0 ||
                        p.latency.picoseconds() <= Duration::Max().picoseconds() / extra_steps;
      net_.StartWithLatency(now, p.links, p.latency, bytes, slot,
                            fits ? p.latency * extra_steps : Duration::Max());
    }
    return true;
  }

  FlowNetwork net_;
  std::vector<Running> running_;
  std::vector<uint32_t> free_;
  std::vector<FlowCompletion> completions_;
};

class FlowModel final : public NetworkModel {
 public:
  std::string_view name() const override { return "flow"; }
  std::string_view description() const override {
    return "flow level: concurrent flows share every link max-min fairly (default)";
  }
  std::string_view citation() const override {
    return "max-min sharing as in SimGrid's CM02 model (Casanova and Marchal 2002), validated by "
           "Velho, Schnorr, Casanova and Legrand 2013";
  }
  StatusOr<std::unique_ptr<Network>> Create(std::vector<LinkSpec> links) const override {
    ASSIGN_OR_RETURN(FlowNetwork net, FlowNetwork::Create(std::move(links)));
    return std::unique_ptr<Network>(std::make_unique<FlowModelNetwork>(std::move(net)));
  }
};

}  // namespace

std::unique_ptr<const NetworkModel> MakeFlowModel() { return std::make_unique<FlowModel>(); }

}  // namespace placesim::sim::network_impl
