// The "analytic" network model: alpha-beta per flow, no contention (Hockney 1994). A phase
// takes the longest of its flows alone, AlphaBetaTime(route bottleneck, steps x route latency,
// the phase's analytic bytes), and a transfer the sum of its phases, known when it starts; so
// the model has no events of its own and costs O(phases + bandwidth classes of their links)
// per transfer: a phase's crossings are counted once, on its first start, and its links are
// charged once per read of the statistics, not once per start (see "Deferred charges").
// Link statistics: every flow adds its bytes to each link of its route and bytes / the link's
// bandwidth (rounded up to the picosecond per flow) to its busy time (so utilisation is the load a
// step puts on the link, which may exceed 1 where flows would have contended); the peak is the most
// flows of one phase on a link. Thread-safety: one run (link_stats, though const, applies the
// deferred charges).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/network/alpha_beta.h"
#include "sim/network/impl/builtins.h"

namespace placesim::sim::network_impl {
namespace {

// Deferred charges. A start of phase P with one flow's bytes b adds, to each link l crossed by
// c flows of P, c x b bytes and c x DrainTime(b, bw(l)) of busy time (the per-crossing rule
// above, summed over P's c crossings of l), and raises l's peak to at least c. Over the starts
// b_1 .. b_n of P this is c x (b_1 + ... + b_n) bytes and c x (D_1 + ... + D_n) busy time,
// with D_i = DrainTime(b_i, bw(l)), which depends on l only through its bandwidth. So a start
// adds b_i to P's byte sum and D_i to P's sum for each bandwidth (class) of its links, O(classes)
// work; the per-link charges are applied when the statistics are read (Flush), once per phase
// and link for all of its starts since the last read. Exactness: the charges are non-negative
// integers, and integer addition is associative and commutative, so the totals are the same
// integers as charging every start at once; every partial sum is at most the final total, so
// none overflows where the per-start sums did not. The peak is a maximum, applied once on the
// phase's first start. A drain of Duration::Max() (a link of zero bandwidth) saturates: the
// per-start rule set such a link's busy time to Max, and so does the flush (it stays Max,
// where the per-start rule would have overflowed on a later finite charge).
// tests/network/analytic_charges_test.cc compares both rules on random starts.
class AnalyticNetwork final : public Network {
 public:
  explicit AnalyticNetwork(const std::vector<LinkSpec>& links)
      : class_of_(links.size()),
        bytes_(links.size(), 0),
        busy_ps_(links.size(), 0),
        peak_(links.size(), 0),
        scratch_(links.size(), 0) {
    // Bandwidth classes by bit pattern: DrainTime is a function of the value, so equal bits
    // give equal drains (and a NaN, which no ordering would place, is still one class).
    std::unordered_map<uint64_t, uint32_t> index;
    for (size_t l = 0; l < links.size(); ++l) {
      const double bw = links[l].capacity.bytes_per_second();
      const auto [it, fresh] =
          index.try_emplace(std::bit_cast<uint64_t>(bw), static_cast<uint32_t>(class_bw_.size()));
      if (fresh) class_bw_.push_back(bw);
      class_of_[l] = it->second;
    }
    class_drain_.assign(class_bw_.size(), 0);
    class_seen_.assign(class_bw_.size(), 0);
  }

  std::optional<Duration> Start(SimTime /*now*/, std::span<const CommPhase> phases,
                                TransferSize size, uint64_t /*tag*/) override {
    for (const CommPhase& ph : phases) {
      if (ph.link_counts == nullptr) CountLinks(ph);
      Charge& charge = ChargeOf(ph);
      const Bytes bytes = PhaseBytes(ph, size);
      charge.bytes += bytes.count();
      for (size_t k = 0; k < charge.classes.size(); ++k) {
        const Duration drain =
            DrainTime(static_cast<double>(bytes.count()), class_bw_[charge.classes[k]]);
        charge.drain_ps[k] = SaturatingSum(charge.drain_ps[k], drain.picoseconds());
      }
      if (!charge.pending) {
        charge.pending = true;
        pending_.push_back(&charge);
      }
    }
    return AnalyticTime(phases, size);
  }

  SimTime NextEventTime() override { return SimTime::Max(); }
  uint64_t version() const override { return 0; }
  void AdvanceTo(SimTime /*now*/, std::vector<uint64_t>& /*finished*/) override {}

  LinkStats link_stats(LinkIndex link) const override {
    if (!pending_.empty()) Flush();
    LinkStats s;
    s.bytes_carried = Bytes::Count(bytes_[link]);
    s.busy_time = Duration::Picoseconds(busy_ps_[link]);
    s.peak_flows = peak_[link];
    return s;
  }

 private:
  using LinkCounts = CommPhase::LinkCounts;

  // One phase's charges not yet applied to its links: sums over its starts since the last
  // flush of one flow's bytes and, per bandwidth class among its links, of one flow's drain.
  struct Charge {
    std::shared_ptr<const LinkCounts> links;  // kept alive here: the phase may die first
    std::vector<uint32_t> classes;            // the distinct classes of `links`
    std::vector<int64_t> drain_ps;            // by position in `classes`
    int64_t bytes = 0;
    bool pending = false;
  };

  // a + b, or Max once either is Max (a drain of Max marks a link busy for ever).
  static int64_t SaturatingSum(int64_t a, int64_t b) {
    constexpr int64_t kMax = Duration::Max().picoseconds();
    return a == kMax || b == kMax ? kMax : a + b;
  }

  // Fills ph.link_counts from its flows. O(crossings).
  void CountLinks(const CommPhase& ph) {
    for (const FlowPath& p : ph.flows) {
      for (LinkIndex l : p.links) {
        if (scratch_[l]++ == 0) touched_.push_back(l);
      }
    }
    auto counts = std::make_shared<LinkCounts>();
    counts->reserve(touched_.size());
    for (LinkIndex l : touched_) {
      counts->emplace_back(l, scratch_[l]);
      scratch_[l] = 0;
    }
    touched_.clear();
    ph.link_counts = std::move(counts);
  }

  // This network's charge of ph, made (and ph's peaks applied) on its first start here.
  // O(1) expected, O(links of ph) the first time.
  Charge& ChargeOf(const CommPhase& ph) {
    const auto [it, fresh] = charge_of_.try_emplace(ph.link_counts.get(), nullptr);
    if (!fresh) return *it->second;
    Charge& charge = *charges_.emplace_back(std::make_unique<Charge>());
    it->second = &charge;
    charge.links = ph.link_counts;
    for (const auto& [l, c] : *charge.links) {
      peak_[l] = std::max(peak_[l], c);
      const uint32_t k = class_of_[l];
      if (class_seen_[k] == 0) {
        class_seen_[k] = 1;
        charge.classes.push_back(k);
      }
    }
    for (uint32_t k : charge.classes) class_seen_[k] = 0;
    charge.drain_ps.assign(charge.classes.size(), 0);
    return charge;
  }

  // Applies every pending charge to its links and clears it. O(links of the pending phases).
  void Flush() const {
    for (Charge* charge : pending_) {
      for (size_t k = 0; k < charge->classes.size(); ++k) {
        class_drain_[charge->classes[k]] = charge->drain_ps[k];
        charge->drain_ps[k] = 0;
      }
      for (const auto& [l, c] : *charge->links) {
        const int64_t drain = class_drain_[class_of_[l]];
        bytes_[l] += static_cast<int64_t>(c) * charge->bytes;
        busy_ps_[l] =
            drain == Duration::Max().picoseconds() || busy_ps_[l] == Duration::Max().picoseconds()
                ? Duration::Max().picoseconds()
                : busy_ps_[l] + static_cast<int64_t>(c) * drain;
      }
      charge->bytes = 0;
      charge->pending = false;
    }
    pending_.clear();
  }

  std::vector<double> class_bw_;    // bytes/s of each bandwidth class
  std::vector<uint32_t> class_of_;  // by link
  // The statistics as of the last flush; link_stats flushes first, so they are mutable.
  mutable std::vector<int64_t> bytes_;
  mutable std::vector<int64_t> busy_ps_;
  std::vector<uint32_t> peak_;
  // The charges, one per phase (its link counts) started here, and those not yet applied.
  std::unordered_map<const LinkCounts*, Charge*> charge_of_;
  std::vector<std::unique_ptr<Charge>> charges_;
  mutable std::vector<Charge*> pending_;
  // Scratch: flows of the current phase per link and the links it touched (CountLinks); a
  // class's drain while flushing one charge; classes seen while making one.
  std::vector<uint32_t> scratch_;
  std::vector<LinkIndex> touched_;
  mutable std::vector<int64_t> class_drain_;
  std::vector<uint8_t> class_seen_;
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
