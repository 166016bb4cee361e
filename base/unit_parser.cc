#include "base/unit_parser.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "base/suggest.h"

namespace placesim {
namespace {

struct UnitEntry {
  const char* name;
  double factor;  // multiplier to the base unit (bytes, bytes/s, seconds, FLOP/s)
};

// Splits "NUMBER UNIT" into its parts; fails when either is missing or the number is bad.
Status SplitQuantity(std::string_view text, std::string_view kind, std::string_view accepted,
                     double* number, std::string_view* unit) {
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) {
    return InvalidArgumentError(
        fmt::format("\"{}\" is not a {}: expected a number and a unit ({})", text, kind, accepted));
  }
  size_t i = 0;
  auto digit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t digits = 0;
  while (digit(i)) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (digit(i)) ++i, ++digits;
  }
  if (digits > 0 && i < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (digit(i + 1) ||
       ((i + 1 < s.size()) && (s[i + 1] == '-' || s[i + 1] == '+') && digit(i + 2)))) {
    i += 2;
    while (digit(i)) ++i;
  }
  if (digits == 0) {
    return InvalidArgumentError(fmt::format(
        "\"{}\" is not a {}: it must start with a number, then a unit ({})", text, kind, accepted));
  }
  std::string_view num = s.substr(0, i);
  std::string_view rest = s.substr(i);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) {
    return InvalidArgumentError(
        fmt::format("\"{}\" has no unit: a {} needs one of: {}", text, kind, accepted));
  }
  double v = 0;
  std::string num_str(num.front() == '+' ? num.substr(1) : num);
  auto [ptr, ec] = std::from_chars(num_str.data(), num_str.data() + num_str.size(), v);
  if (ec != std::errc() || ptr != num_str.data() + num_str.size() || !std::isfinite(v)) {
    return InvalidArgumentError(
        fmt::format("\"{}\": the number \"{}\" is out of range", text, num));
  }
  if (v < 0) {
    return InvalidArgumentError(fmt::format("\"{}\": a {} must not be negative", text, kind));
  }
  *number = v;
  *unit = rest;
  return OkStatus();
}

std::string Accepted(const std::vector<UnitEntry>& units) {
  std::string out;
  for (size_t i = 0; i < units.size(); ++i) {
    if (i) out += ", ";
    out += units[i].name;
  }
  return out;
}

const std::vector<UnitEntry>& ByteUnits() {
  static const auto* const kUnits = new std::vector<UnitEntry>{
      {"B", 1},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"PB", 1e15},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"PiB", 1125899906842624.0},
      {"b", 1 / 8.0},
      {"Kb", 1e3 / 8},
      {"Mb", 1e6 / 8},
      {"Gb", 1e9 / 8},
      {"Tb", 1e12 / 8},
      {"Kib", 1024.0 / 8},
      {"Mib", 1048576.0 / 8},
      {"Gib", 1073741824.0 / 8},
  };
  return *kUnits;
}

const std::vector<UnitEntry>& BandwidthUnits() {
  static const auto* const kUnits = new std::vector<UnitEntry>{
      {"B/s", 1},           {"KB/s", 1e3},           {"MB/s", 1e6},
      {"GB/s", 1e9},        {"TB/s", 1e12},          {"KiB/s", 1024.0},
      {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}, {"TiB/s", 1099511627776.0},
      {"b/s", 1 / 8.0},     {"Kb/s", 1e3 / 8},       {"Mb/s", 1e6 / 8},
      {"Gb/s", 1e9 / 8},    {"Tb/s", 1e12 / 8},      {"bps", 1 / 8.0},
      {"Kbps", 1e3 / 8},    {"Mbps", 1e6 / 8},       {"Gbps", 1e9 / 8},
      {"Tbps", 1e12 / 8},   {"Gbit/s", 1e9 / 8},     {"Tbit/s", 1e12 / 8},
  };
  return *kUnits;
}

const std::vector<UnitEntry>& DurationUnits() {
  static const auto* const kUnits = new std::vector<UnitEntry>{
      {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3}, {"s", 1},
  };
  return *kUnits;
}

const std::vector<UnitEntry>& FlopRateUnits() {
  static const auto* const kUnits = new std::vector<UnitEntry>{
      {"FLOP/s", 1},     {"KFLOP/s", 1e3}, {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12},
      {"PFLOP/s", 1e15}, {"FLOPS", 1},     {"GFLOPS", 1e9},  {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
  };
  return *kUnits;
}

Status Scale(std::string_view text, double number, const UnitEntry& unit, double* out) {
  *out = number * unit.factor;
  if (!std::isfinite(*out)) {
    return InvalidArgumentError(fmt::format("\"{}\" is out of range", text));
  }
  return OkStatus();
}

// The known units equal to `unit` ignoring ASCII case.
std::vector<std::string> CaseVariants(std::string_view unit,
                                      const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (EditDistance(unit, name) == 0) out.push_back(name);
  }
  return out;
}

// True when `typed` and `unit` (equal ignoring case) write every 'b' in the same case: a case
// variant may fix a prefix (`gbps` -> `Gbps`, `MS` -> `ms`) but never turn a bit into a byte.
bool SameBitByteLetters(std::string_view typed, std::string_view unit) {
  for (size_t i = 0; i < typed.size() && i < unit.size(); ++i) {
    if ((typed[i] == 'b' || typed[i] == 'B') && typed[i] != unit[i]) return false;
  }
  return true;
}

std::string QuotedAlternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + fmt::format("\"{}\"", names[i]);
  }
  return out;
}

Status ParseScaled(std::string_view text, std::string_view kind,
                   const std::vector<UnitEntry>& units, double* out) {
  std::string accepted = Accepted(units);
  double number = 0;
  std::string_view unit;
  RETURN_IF_ERROR(SplitQuantity(text, kind, accepted, &number, &unit));
  for (const UnitEntry& u : units) {
    if (unit == u.name) return Scale(text, number, u, out);
  }
  std::vector<std::string> names;
  for (const UnitEntry& u : units) names.emplace_back(u.name);
  std::vector<std::string> variants = CaseVariants(unit, names);
  if (variants.size() == 1 && SameBitByteLetters(unit, variants[0])) {
    for (const UnitEntry& u : units) {
      if (variants[0] == u.name) return Scale(text, number, u, out);
    }
  }
  if (!variants.empty()) {
    return InvalidArgumentError(fmt::format(
        "\"{}\": unit \"{}\" is ambiguous: write {} (case matters here: \"B\" is a byte and "
        "\"b\" a bit)",
        text, unit, QuotedAlternatives(variants)));
  }
  return InvalidArgumentError(fmt::format("\"{}\": unknown unit \"{}\" for a {}; valid: {}{}", text,
                                          unit, kind, accepted, DidYouMean(unit, names)));
}

}  // namespace

StatusOr<Bytes> ParseBytes(std::string_view text) {
  double v = 0;
  RETURN_IF_ERROR(ParseScaled(text, "size in bytes", ByteUnits(), &v));
  // 2^62 bytes (4 EiB) is far beyond any memory placesim models and keeps sums safe.
  if (v > 4.611686018427387904e18) {
    return InvalidArgumentError(fmt::format("\"{}\" is out of range: at most 4 EiB", text));
  }
  double whole = std::round(v);
  if (std::fabs(v - whole) > 1e-6 * std::max(1.0, v)) {
    return InvalidArgumentError(
        fmt::format("\"{}\" is not a whole number of bytes ({} bytes)", text, v));
  }
  return Bytes::Count(static_cast<int64_t>(whole));
}

StatusOr<Bandwidth> ParseBandwidth(std::string_view text) {
  double v = 0;
  RETURN_IF_ERROR(ParseScaled(text, "bandwidth", BandwidthUnits(), &v));
  return Bandwidth::BytesPerSecond(v);
}

StatusOr<Duration> ParseDuration(std::string_view text) {
  double v = 0;
  RETURN_IF_ERROR(ParseScaled(text, "duration", DurationUnits(), &v));
  // Beyond about 106 days the picosecond clock overflows.
  if (v * 1e12 >= 9.2e18) {
    return InvalidArgumentError(fmt::format("\"{}\" is out of range: at most 9.2e6 s", text));
  }
  return Seconds(v);
}

StatusOr<FlopRate> ParseFlopRate(std::string_view text) {
  double v = 0;
  RETURN_IF_ERROR(ParseScaled(text, "compute rate", FlopRateUnits(), &v));
  return FlopRate::PerSecond(v);
}

}  // namespace placesim
