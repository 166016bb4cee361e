// The "analytic" network model: alpha-beta per flow, no contention (Hockney 1994). A phase
// takes the longest of its flows alone, AlphaBetaTime(route bottleneck, steps x route latency,
// the phase's analytic bytes), and a transfer the sum of its phases, known when it starts; so
// the model has no events of its own and costs O(distinct routes + distinct links) per transfer
// (a phase's crossings are counted once, on its first start).
// Link statistics: every flow adds its bytes to each link of its route and bytes / the link's
// bandwidth (rounded up to the picosecond per flow) to its busy time (so utilisation is the load a
// step puts on the link, which may exceed 1 where flows would have contended); the peak is the most
// flows of one phase on a link. Thread-safety: one run.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "sim/network/alpha_beta.h"
#include "sim/network/impl/builtins.h"

namespace placesim::sim::network_impl {
namespace {

class AnalyticNetwork final : public Network {
 public:
  explicit AnalyticNetwork(const std::vector<LinkSpec>& links)
      : bandwidth_(links.size()),
        bytes_(links.size(), 0),
        busy_ps_(links.size(), 0),
        peak_(links.size(), 0),
        scratch_(links.size(), 0) {
    for (size_t l = 0; l < links.size(); ++l) bandwidth_[l] = links[l].capacity.bytes_per_second();
  }

  std::optional<Duration> Start(SimTime /*now*/, std::span<const CommPhase> phases,
                                TransferSize size, uint64_t /*tag*/) override {
    for (const CommPhase& ph : phases) {
      // Every flow of a phase carries the same bytes, so a link crossed by c of them gains c
      // times one flow's bytes and drain time: counted once per phase (its link_counts, kept
      // for the plan's later starts), charged once per link (the same integers as charging
      // each crossing, without a division per crossing).
      if (ph.link_counts.empty()) CountLinks(ph);
      const Bytes bytes = PhaseBytes(ph, size);
      for (const auto& [l, c] : ph.link_counts) {
        const Duration drain = DrainTime(static_cast<double>(bytes.count()), bandwidth_[l]);
        bytes_[l] += static_cast<int64_t>(c) * bytes.count();
        busy_ps_[l] = drain == Duration::Max()
                          ? Duration::Max().picoseconds()
                          : busy_ps_[l] + static_cast<int64_t>(c) * drain.picoseconds();
        peak_[l] = std::max(peak_[l], c);
      }
    }
    return AnalyticTime(phases, size);
  }

  // Fills ph.link_counts from its flows. O(crossings).
  void CountLinks(const CommPhase& ph) {
    for (const FlowPath& p : ph.flows) {
      for (LinkIndex l : p.links) {
        if (scratch_[l]++ == 0) touched_.push_back(l);
      }
    }
    ph.link_counts.reserve(touched_.size());
    for (LinkIndex l : touched_) {
      ph.link_counts.emplace_back(l, scratch_[l]);
      scratch_[l] = 0;
    }
    touched_.clear();
  }

  SimTime NextEventTime() override { return SimTime::Max(); }
  uint64_t version() const override { return 0; }
  void AdvanceTo(SimTime /*now*/, std::vector<uint64_t>& /*finished*/) override {}

  LinkStats link_stats(LinkIndex link) const override {
    LinkStats s;
    s.bytes_carried = Bytes::Count(bytes_[link]);
    s.busy_time = Duration::Picoseconds(busy_ps_[link]);
    s.peak_flows = peak_[link];
    return s;
  }

 private:
  std::vector<double> bandwidth_;  // bytes/s per link, read for every flow
  std::vector<int64_t> bytes_;
  std::vector<int64_t> busy_ps_;
  std::vector<uint32_t> peak_;
  // Flows of the current phase per link, and the links it touched.
  std::vector<uint32_t> scratch_;
  std::vector<LinkIndex> touched_;
};

class AnalyticModel final : public NetworkModel {
 public:
  std::string_view name() const override { return "analytic"; }
  std::string_view description() const override {
    return "alpha-beta per flow, no contention: faster, for sweeps";
  }
  std::string_view citation() const override {
    return "Hockney 1994, \"The communication challenge for MPP: Intel Paragon and Meiko CS-2\"";
  }
  // The links are not validated: a link no transfer uses may have any bandwidth.
  StatusOr<std::unique_ptr<Network>> Create(std::vector<LinkSpec> links) const override {
    return std::unique_ptr<Network>(std::make_unique<AnalyticNetwork>(links));
  }
};

}  // namespace

std::unique_ptr<const NetworkModel> MakeAnalyticModel() {
  return std::make_unique<AnalyticModel>();
}

}  // namespace placesim::sim::network_impl
