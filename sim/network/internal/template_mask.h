// TemplateMask: a fixed set of held-template numbers (FlowNetwork, "Held templates"), one bit
// per template, wider than a machine word. The flow network keeps one mask per distinct set of
// templates crossing a link (a link stores the set's number, not the mask), and a few masks of
// its own (clean, lazily held, overflowed templates).
// Invariant: bits at and past kBits are never set. Operations are O(kWords).
// Thread-safety: a plain value.
#ifndef PLACESIM_SIM_NETWORK_INTERNAL_TEMPLATE_MASK_H_
#define PLACESIM_SIM_NETWORK_INTERNAL_TEMPLATE_MASK_H_

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>

namespace placesim::sim::internal {

class TemplateMask {
 public:
  static constexpr size_t kWords = 4;
  static constexpr size_t kBits = 64 * kWords;

  // The mask of template t alone. REQUIRES: t < kBits.
  static TemplateMask Bit(size_t t) {
    TemplateMask m;
    m.words_[t / 64] = uint64_t{1} << (t % 64);
    return m;
  }
  // Every template.
  static TemplateMask All() {
    TemplateMask m;
    m.words_.fill(~uint64_t{0});
    return m;
  }

  bool Any() const {
    uint64_t any = 0;
    for (uint64_t w : words_) any |= w;
    return any != 0;
  }
  // Whether this and `o` have a template in common.
  bool Meets(const TemplateMask& o) const { return (*this & o).Any(); }
  bool Test(size_t t) const { return ((words_[t / 64] >> (t % 64)) & 1) != 0; }

  TemplateMask& operator|=(const TemplateMask& o) {
    for (size_t i = 0; i < kWords; ++i) words_[i] |= o.words_[i];
    return *this;
  }
  TemplateMask& operator&=(const TemplateMask& o) {
    for (size_t i = 0; i < kWords; ++i) words_[i] &= o.words_[i];
    return *this;
  }
  friend TemplateMask operator|(TemplateMask a, const TemplateMask& b) { return a |= b; }
  friend TemplateMask operator&(TemplateMask a, const TemplateMask& b) { return a &= b; }
  friend TemplateMask operator~(TemplateMask a) {
    for (uint64_t& w : a.words_) w = ~w;
    return a;
  }
  friend bool operator==(const TemplateMask&, const TemplateMask&) = default;
  friend auto operator<=>(const TemplateMask&, const TemplateMask&) = default;

  // Calls f(t) for each template t of the mask, ascending.
  template <typename F>
  void ForEach(F f) const {
    for (size_t i = 0; i < kWords; ++i) {
      for (uint64_t w = words_[i]; w != 0; w &= w - 1) {
        f(64 * i + static_cast<size_t>(std::countr_zero(w)));
      }
    }
  }

 private:
  std::array<uint64_t, kWords> words_{};
};

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_NETWORK_INTERNAL_TEMPLATE_MASK_H_
