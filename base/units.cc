#include "base/units.h"

#include <fmt/format.h>

#include <cmath>

namespace placesim {
namespace {

// Formats `v` with the largest prefix of `step` (1000 or 1024) that keeps it >= 1.
std::string WithPrefix(double v, double step, const char* const* prefixes, int count,
                       const char* suffix) {
  int i = 0;
  double a = std::fabs(v);
  while (i + 1 < count && a >= step) {
    a /= step;
    v /= step;
    ++i;
  }
  return fmt::format("{:.2f} {}{}", v, prefixes[i], suffix);
}

constexpr const char* kSi[] = {"", "K", "M", "G", "T", "P", "E"};
constexpr const char* kIec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

}  // namespace

std::string ToString(Bytes b) {
  return WithPrefix(static_cast<double>(b.count()), 1000.0, kSi, 7, "B");
}
std::string ToIecString(Bytes b) {
  return WithPrefix(static_cast<double>(b.count()), 1024.0, kIec, 7, "B");
}
std::string ToString(Bandwidth bw) {
  return WithPrefix(bw.bytes_per_second(), 1000.0, kSi, 7, "B/s");
}
std::string ToString(FlopRate r) { return WithPrefix(r.per_second(), 1000.0, kSi, 7, "FLOP/s"); }

std::string ToString(Duration d) {
  if (d == Duration::Max()) return "inf";
  double ps = static_cast<double>(d.picoseconds());
  double a = std::fabs(ps);
  if (a >= 1e12) return fmt::format("{:.3f} s", ps / 1e12);
  if (a >= 1e9) return fmt::format("{:.3f} ms", ps / 1e9);
  if (a >= 1e6) return fmt::format("{:.3f} us", ps / 1e6);
  if (a >= 1e3) return fmt::format("{:.3f} ns", ps / 1e3);
  return fmt::format("{} ps", d.picoseconds());
}

}  // namespace placesim
