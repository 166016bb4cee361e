// Physical quantities as types: Bytes, Duration, Bandwidth, Flops, FlopRate, Power, Energy.
//
// Values are built only through named factories (GiB(80), GBps(450), Gbps(400),
// Microseconds(5), TeraFlopRate(989)), and only the operators that make physical sense
// exist (Bytes / Bandwidth -> Duration, Flops / FlopRate -> Duration, ...), so a bandwidth in
// bits can never be added to one in bytes by accident.
//
// Representations:
//   Bytes     int64 count of bytes. Memory is accounted to the byte.
//   Duration  int64 picoseconds (about +/-106 days of range); the simulator's clock unit.
//   Bandwidth double bytes per second.
//   Flops     double floating-point operations.
//   FlopRate  double operations per second.
//   Power     double watts.
//   Energy    double joules.
//
// Overflow rule: Bytes and Duration arithmetic never wraps. A sum, difference or product
// that does not fit in int64 gives Bytes::Overflow() / Duration::Max(), and any operation on
// such a value gives it again (it is sticky, like a NaN), so a model that computes an
// impossible size carries the mark to its result, where overflowed() tells it apart and the
// caller names the inputs that scaled it (strategies' Analyze, sim/scenario's size checks).
//
// Rounding rule (the only one): a conversion from a real-valued quantity to a Duration
// rounds *up* to the next whole picosecond, so any non-zero transfer or computation takes at
// least 1 ps and time never runs backwards; results beyond the range saturate at
// Duration::Max(). Factories taking doubles (GB(31.4), Seconds(0.5)) round to nearest.
//
// SI prefixes are powers of 1000 (KB, GB, Gbps, GB/s); IEC prefixes are powers of 1024
// (KiB, GiB). Bits are told apart from bytes by a lower-case "b" (Gb/s = 1e9/8 bytes/s).
//
// Thread-safety: plain values.
#ifndef PLACESIM_BASE_UNITS_H_
#define PLACESIM_BASE_UNITS_H_

#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace placesim {

namespace units_internal {
// Rounds a finite double to the nearest int64, saturating at the int64 range.
constexpr int64_t RoundToInt64(double x) {
  if (!(x == x)) return 0;  // NaN
  if (x >= 9.2233720368547748e18) return std::numeric_limits<int64_t>::max();
  if (x <= -9.2233720368547748e18) return std::numeric_limits<int64_t>::min();
  return x >= 0 ? static_cast<int64_t>(x + 0.5) : -static_cast<int64_t>(-x + 0.5);
}
// Rounds a finite, non-negative double up to an int64, saturating.
constexpr int64_t CeilToInt64(double x) {
  if (!(x == x) || x <= 0) return 0;
  if (x >= 9.2233720368547748e18) return std::numeric_limits<int64_t>::max();
  int64_t t = static_cast<int64_t>(x);
  return static_cast<double>(t) < x ? t + 1 : t;
}
inline constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
// a + b, a - b, a * b, or kSaturated when either is kSaturated or the result does not fit.
constexpr int64_t AddSat(int64_t a, int64_t b) {
  int64_t r = 0;
  return a == kSaturated || b == kSaturated || __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}
constexpr int64_t SubSat(int64_t a, int64_t b) {
  int64_t r = 0;
  return a == kSaturated || b == kSaturated || __builtin_sub_overflow(a, b, &r) ? kSaturated : r;
}
constexpr int64_t MulSat(int64_t a, int64_t b) {
  int64_t r = 0;
  return a == kSaturated || b == kSaturated || __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}
}  // namespace units_internal

// ---------------------------------------------------------------------------------------------
class Bytes {
 public:
  constexpr Bytes() = default;
  static constexpr Bytes Count(int64_t n) { return Bytes(n); }
  static constexpr Bytes Zero() { return Bytes(0); }
  // The result of arithmetic that did not fit (see the overflow rule); compares greatest.
  static constexpr Bytes Overflow() { return Bytes(units_internal::kSaturated); }

  constexpr int64_t count() const { return n_; }
  constexpr bool overflowed() const { return n_ == units_internal::kSaturated; }
  constexpr double ToGB() const { return static_cast<double>(n_) / 1e9; }
  constexpr double ToGiB() const { return static_cast<double>(n_) / (1024.0 * 1024 * 1024); }
  constexpr double ToMB() const { return static_cast<double>(n_) / 1e6; }

  constexpr Bytes& operator+=(Bytes o) {
    n_ = units_internal::AddSat(n_, o.n_);
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    n_ = units_internal::SubSat(n_, o.n_);
    return *this;
  }
  friend constexpr Bytes operator+(Bytes a, Bytes b) {
    return Bytes(units_internal::AddSat(a.n_, b.n_));
  }
  friend constexpr Bytes operator-(Bytes a, Bytes b) {
    return Bytes(units_internal::SubSat(a.n_, b.n_));
  }
  friend constexpr Bytes operator*(Bytes a, int64_t k) {
    return Bytes(units_internal::MulSat(a.n_, k));
  }
  friend constexpr Bytes operator*(int64_t k, Bytes a) { return a * k; }
  // Integer division truncates (a shard of s over N devices holds floor(s/N) bytes; callers
  // that need the ceiling use DivCeil). REQUIRES: k > 0.
  friend constexpr Bytes operator/(Bytes a, int64_t k) {
    return a.overflowed() ? a : Bytes(a.n_ / k);
  }
  friend constexpr Bytes DivCeil(Bytes a, int64_t k) {
    return a.overflowed() ? a : Bytes(a.n_ / k + (a.n_ % k > 0 ? 1 : 0));
  }
  // Dimensionless ratio.
  friend constexpr double operator/(Bytes a, Bytes b) {
    return static_cast<double>(a.n_) / static_cast<double>(b.n_);
  }
  // Scales by a real factor, rounding to the nearest byte.
  friend constexpr Bytes Scale(Bytes a, double f) {
    return a.overflowed() ? a : Bytes(units_internal::RoundToInt64(static_cast<double>(a.n_) * f));
  }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;

 private:
  constexpr explicit Bytes(int64_t n) : n_(n) {}
  int64_t n_ = 0;
};

constexpr Bytes KB(double v) { return Bytes::Count(units_internal::RoundToInt64(v * 1e3)); }
constexpr Bytes MB(double v) { return Bytes::Count(units_internal::RoundToInt64(v * 1e6)); }
constexpr Bytes GB(double v) { return Bytes::Count(units_internal::RoundToInt64(v * 1e9)); }
constexpr Bytes TB(double v) { return Bytes::Count(units_internal::RoundToInt64(v * 1e12)); }
constexpr Bytes KiB(double v) { return Bytes::Count(units_internal::RoundToInt64(v * 1024.0)); }
constexpr Bytes MiB(double v) {
  return Bytes::Count(units_internal::RoundToInt64(v * 1024.0 * 1024));
}
constexpr Bytes GiB(double v) {
  return Bytes::Count(units_internal::RoundToInt64(v * 1024.0 * 1024 * 1024));
}
constexpr Bytes TiB(double v) {
  return Bytes::Count(units_internal::RoundToInt64(v * 1024.0 * 1024 * 1024 * 1024));
}

// ---------------------------------------------------------------------------------------------
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration Picoseconds(int64_t ps) { return Duration(ps); }
  static constexpr Duration Zero() { return Duration(0); }
  static constexpr Duration Max() { return Duration(std::numeric_limits<int64_t>::max()); }
  // Rounds up to the next picosecond (see the rounding rule above).
  static constexpr Duration CeilSeconds(double s) {
    return Duration(units_internal::CeilToInt64(s * 1e12));
  }

  constexpr int64_t picoseconds() const { return ps_; }
  constexpr double ToSeconds() const { return static_cast<double>(ps_) * 1e-12; }
  constexpr double ToMilliseconds() const { return static_cast<double>(ps_) * 1e-9; }
  constexpr double ToMicroseconds() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr double ToNanoseconds() const { return static_cast<double>(ps_) * 1e-3; }

  // Max() is also what arithmetic that does not fit gives (see the overflow rule).
  constexpr bool overflowed() const { return ps_ == units_internal::kSaturated; }

  constexpr Duration& operator+=(Duration o) {
    ps_ = units_internal::AddSat(ps_, o.ps_);
    return *this;
  }
  constexpr Duration& operator-=(Duration o) {
    ps_ = units_internal::SubSat(ps_, o.ps_);
    return *this;
  }
  friend constexpr Duration operator+(Duration a, Duration b) {
    return Duration(units_internal::AddSat(a.ps_, b.ps_));
  }
  friend constexpr Duration operator-(Duration a, Duration b) {
    return Duration(units_internal::SubSat(a.ps_, b.ps_));
  }
  friend constexpr Duration operator*(Duration a, int64_t k) {
    return Duration(units_internal::MulSat(a.ps_, k));
  }
  friend constexpr Duration operator*(int64_t k, Duration a) { return a * k; }
  friend constexpr double operator/(Duration a, Duration b) {
    return static_cast<double>(a.ps_) / static_cast<double>(b.ps_);
  }
  friend constexpr auto operator<=>(Duration, Duration) = default;

 private:
  constexpr explicit Duration(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

constexpr Duration Picoseconds(int64_t v) { return Duration::Picoseconds(v); }
constexpr Duration Nanoseconds(double v) {
  return Duration::Picoseconds(units_internal::RoundToInt64(v * 1e3));
}
constexpr Duration Microseconds(double v) {
  return Duration::Picoseconds(units_internal::RoundToInt64(v * 1e6));
}
constexpr Duration Milliseconds(double v) {
  return Duration::Picoseconds(units_internal::RoundToInt64(v * 1e9));
}
constexpr Duration Seconds(double v) {
  return Duration::Picoseconds(units_internal::RoundToInt64(v * 1e12));
}

// ---------------------------------------------------------------------------------------------
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth BytesPerSecond(double v) { return Bandwidth(v); }
  static constexpr Bandwidth Zero() { return Bandwidth(0); }

  constexpr double bytes_per_second() const { return v_; }
  constexpr double ToGBps() const { return v_ / 1e9; }        // gigabytes per second
  constexpr double ToGbps() const { return v_ * 8.0 / 1e9; }  // gigabits per second

  friend constexpr Bandwidth operator+(Bandwidth a, Bandwidth b) { return Bandwidth(a.v_ + b.v_); }
  friend constexpr Bandwidth operator-(Bandwidth a, Bandwidth b) { return Bandwidth(a.v_ - b.v_); }
  constexpr Bandwidth& operator+=(Bandwidth o) {
    v_ += o.v_;
    return *this;
  }
  friend constexpr Bandwidth operator*(Bandwidth a, double k) { return Bandwidth(a.v_ * k); }
  friend constexpr Bandwidth operator*(double k, Bandwidth a) { return Bandwidth(a.v_ * k); }
  friend constexpr Bandwidth operator/(Bandwidth a, double k) { return Bandwidth(a.v_ / k); }
  friend constexpr double operator/(Bandwidth a, Bandwidth b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(Bandwidth, Bandwidth) = default;

 private:
  constexpr explicit Bandwidth(double v) : v_(v) {}
  double v_ = 0;
};

constexpr Bandwidth GBps(double v) { return Bandwidth::BytesPerSecond(v * 1e9); }
constexpr Bandwidth MBps(double v) { return Bandwidth::BytesPerSecond(v * 1e6); }
constexpr Bandwidth GiBps(double v) { return Bandwidth::BytesPerSecond(v * 1024.0 * 1024 * 1024); }
constexpr Bandwidth Gbps(double v) { return Bandwidth::BytesPerSecond(v * 1e9 / 8.0); }
constexpr Bandwidth Mbps(double v) { return Bandwidth::BytesPerSecond(v * 1e6 / 8.0); }

// Time to move `b` at rate `bw`, rounded up to the picosecond; Duration::Max() when bw is 0.
constexpr Duration operator/(Bytes b, Bandwidth bw) {
  if (b.count() <= 0) return Duration::Zero();
  if (bw.bytes_per_second() <= 0) return Duration::Max();
  return Duration::CeilSeconds(static_cast<double>(b.count()) / bw.bytes_per_second());
}
// Bytes moved in `d` at rate `bw`, truncated to whole bytes.
constexpr Bytes operator*(Bandwidth bw, Duration d) {
  double v = bw.bytes_per_second() * d.ToSeconds();
  return Bytes::Count(v >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(v));
}

// ---------------------------------------------------------------------------------------------
class Flops {
 public:
  constexpr Flops() = default;
  static constexpr Flops Count(double v) { return Flops(v); }
  constexpr double count() const { return v_; }
  friend constexpr Flops operator+(Flops a, Flops b) { return Flops(a.v_ + b.v_); }
  constexpr Flops& operator+=(Flops o) {
    v_ += o.v_;
    return *this;
  }
  friend constexpr Flops operator*(Flops a, double k) { return Flops(a.v_ * k); }
  friend constexpr Flops operator*(double k, Flops a) { return Flops(a.v_ * k); }
  friend constexpr Flops operator/(Flops a, double k) { return Flops(a.v_ / k); }
  friend constexpr auto operator<=>(Flops, Flops) = default;

 private:
  constexpr explicit Flops(double v) : v_(v) {}
  double v_ = 0;
};

class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate PerSecond(double v) { return FlopRate(v); }
  static constexpr FlopRate Zero() { return FlopRate(0); }
  constexpr double per_second() const { return v_; }
  constexpr double ToTflops() const { return v_ / 1e12; }
  friend constexpr FlopRate operator*(FlopRate a, double k) { return FlopRate(a.v_ * k); }
  friend constexpr FlopRate operator*(double k, FlopRate a) { return FlopRate(a.v_ * k); }
  friend constexpr double operator/(FlopRate a, FlopRate b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(FlopRate, FlopRate) = default;

 private:
  constexpr explicit FlopRate(double v) : v_(v) {}
  double v_ = 0;
};

constexpr FlopRate TeraFlopRate(double v) { return FlopRate::PerSecond(v * 1e12); }
constexpr FlopRate GigaFlopRate(double v) { return FlopRate::PerSecond(v * 1e9); }

// Time to execute `f` at `r`, rounded up; Duration::Max() when r is 0.
constexpr Duration operator/(Flops f, FlopRate r) {
  if (f.count() <= 0) return Duration::Zero();
  if (r.per_second() <= 0) return Duration::Max();
  return Duration::CeilSeconds(f.count() / r.per_second());
}

// ---------------------------------------------------------------------------------------------
// Electrical power and energy, for the cost and energy figures (sim/economics).
class Power {
 public:
  constexpr Power() = default;
  static constexpr Power Watts(double w) { return Power(w); }
  static constexpr Power Zero() { return Power(0); }
  constexpr double watts() const { return v_; }
  friend constexpr Power operator+(Power a, Power b) { return Power(a.v_ + b.v_); }
  friend constexpr Power operator-(Power a, Power b) { return Power(a.v_ - b.v_); }
  friend constexpr Power operator*(Power a, double k) { return Power(a.v_ * k); }
  friend constexpr Power operator*(double k, Power a) { return Power(a.v_ * k); }
  friend constexpr auto operator<=>(Power, Power) = default;

 private:
  constexpr explicit Power(double w) : v_(w) {}
  double v_ = 0;
};

constexpr Power Watts(double v) { return Power::Watts(v); }

class Energy {
 public:
  constexpr Energy() = default;
  static constexpr Energy Joules(double j) { return Energy(j); }
  constexpr double joules() const { return v_; }
  constexpr double ToKilowattHours() const { return v_ / 3.6e6; }  // 1 kWh = 3.6e6 J
  friend constexpr Energy operator+(Energy a, Energy b) { return Energy(a.v_ + b.v_); }
  friend constexpr Energy operator*(Energy a, double k) { return Energy(a.v_ * k); }
  friend constexpr Energy operator*(double k, Energy a) { return Energy(a.v_ * k); }
  friend constexpr auto operator<=>(Energy, Energy) = default;

 private:
  constexpr explicit Energy(double j) : v_(j) {}
  double v_ = 0;
};

constexpr Energy Joules(double v) { return Energy::Joules(v); }
constexpr Energy KilowattHours(double v) { return Energy::Joules(v * 3.6e6); }

// Energy drawn at power `p` for `d`.
constexpr Energy operator*(Power p, Duration d) { return Joules(p.watts() * d.ToSeconds()); }
constexpr Energy operator*(Duration d, Power p) { return p * d; }

// Human-readable forms for reports, e.g. "31.40 GB", "450 GB/s", "1.25 ms", "989 TFLOP/s".
std::string ToString(Bytes b);     // SI, 2 decimals past the unit prefix
std::string ToIecString(Bytes b);  // IEC, e.g. "29.24 GiB"
std::string ToString(Duration d);
std::string ToString(Bandwidth bw);  // bytes per second, SI
std::string ToString(FlopRate r);

}  // namespace placesim

#endif  // PLACESIM_BASE_UNITS_H_
