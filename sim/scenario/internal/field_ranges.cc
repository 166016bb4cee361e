// The physical fields' ranges (see field_ranges.h). Bounds are written as users write them and
// parsed by the scenario's own unit parser, so the message's text and the checked value are
// one source.
//
// Why these bounds (today's parts, for scale): HBM 16 GB to 192 GB at 0.9 to 8 TB/s, NVLink
// 50 to 900 GB/s, NICs 100 to 800 Gb/s, link latencies 0.1 to 10 us, kernel launches about
// 5 us, dense peaks 20 TFLOP/s to 5 PFLOP/s. 1 MB/s is slower than 10 Mb/s Ethernet;
// 1000 TB/s is a hundred times HBM3e; a one-second hop or kernel launch is a million times
// today's.
#include "sim/scenario/internal/field_ranges.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "base/check.h"
#include "base/unit_parser.h"

namespace placesim::sim::scenario_internal {
namespace {

struct Row {
  std::string_view path;  // list indices written as "[]"
  std::string_view lo, hi;
  // What 0 means for this field, shown in the rule ("none"), or empty where 0 is an error
  // the resolver reports itself (e.g. hbm_capacity "must be > 0").
  std::string_view zero;
};

constexpr std::string_view kSlowest = "1 MB/s", kFastest = "1000 TB/s";
constexpr std::string_view kSmallest = "1 MiB", kLargest = "1 PiB";
constexpr std::string_view kLongestHop = "1 s";
constexpr std::string_view kSlowestCompute = "1 GFLOP/s", kFastestCompute = "1000 PFLOP/s";

constexpr std::array<Row, 4> kSizes = {{
    {"cluster.node.gpu.hbm_capacity", kSmallest, kLargest, ""},
    {"cluster.node.host_memory", kSmallest, kLargest, "no host memory"},
    {"cluster.node.nvme_capacity", kSmallest, kLargest, "no NVMe"},
    // At least one parameter's gradient; a bucket past 1 TiB is the whole model of any size
    // this simulator takes.
    {"simulation.gradient_bucket_size", "1 B", "1 TiB", ""},
}};
constexpr std::array<Row, 8> kBandwidths = {{
    {"cluster.node.gpu.hbm_bandwidth", kSlowest, kFastest, ""},
    {"cluster.node.nvlink_bandwidth", kSlowest, kFastest, "no NVLink"},
    {"cluster.node.pcie_bandwidth", kSlowest, kFastest, "no PCIe"},
    {"cluster.node.host_memory_bandwidth", kSlowest, kFastest, "none"},
    {"cluster.node.nvme_bandwidth", kSlowest, kFastest, "none"},
    {"cluster.node.nic_bandwidth", kSlowest, kFastest, "no NIC"},
    {"cluster.fabric.link_bandwidth", kSlowest, kFastest, ""},
    {"cluster.links[].bandwidth", kSlowest, kFastest, ""},
}};
constexpr std::array<Row, 6> kDurations = {{
    {"cluster.node.gpu.kernel_overhead", "0 s", kLongestHop, ""},
    {"cluster.node.nvlink_latency", "0 s", kLongestHop, ""},
    {"cluster.node.pcie_latency", "0 s", kLongestHop, ""},
    {"cluster.node.nic_latency", "0 s", kLongestHop, ""},
    {"cluster.fabric.switch_latency", "0 s", kLongestHop, ""},
    {"cluster.links[].latency", "0 s", kLongestHop, ""},
}};
constexpr std::array<Row, 6> kRates = {{
    {"cluster.node.gpu.peak_fp32", kSlowestCompute, kFastestCompute, "unsupported"},
    {"cluster.node.gpu.peak_tf32", kSlowestCompute, kFastestCompute, "unsupported"},
    {"cluster.node.gpu.peak_bf16", kSlowestCompute, kFastestCompute, "unsupported"},
    {"cluster.node.gpu.peak_fp16", kSlowestCompute, kFastestCompute, "unsupported"},
    {"cluster.node.gpu.peak_fp8", kSlowestCompute, kFastestCompute, "unsupported"},
    {"cluster.node.host_flops", kSlowestCompute, kFastestCompute, "no offloaded compute"},
}};

// "cluster.links[3].latency" -> "cluster.links[].latency".
std::string WithoutIndices(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  bool in_index = false;
  for (char c : path) {
    if (c == '[') in_index = true;
    if (c == ']') in_index = false;
    if (!in_index || c == '[') out += c;
  }
  return out;
}

template <typename T>
T ParseBound(std::string_view text, StatusOr<T> (*parse)(std::string_view)) {
  StatusOr<T> v = parse(text);
  PLACESIM_CHECK(v.ok());  // the tables' bounds are constants, tested to parse
  return *v;
}

template <typename T, size_t N>
std::optional<std::string> Check(const std::array<Row, N>& rows, std::string_view path, T v,
                                 StatusOr<T> (*parse)(std::string_view)) {
  if (v == T{}) return std::nullopt;
  const std::string key = WithoutIndices(path);
  const auto row =
      std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.path == key; });
  if (row == rows.end()) return std::nullopt;
  if (v >= ParseBound(row->lo, parse) && v <= ParseBound(row->hi, parse)) return std::nullopt;
  const std::string zero = row->zero.empty() ? "" : fmt::format("0 ({}) or ", row->zero);
  return fmt::format("must be {}between {} and {}", zero, row->lo, row->hi);
}

template <size_t N>
void Append(const std::array<Row, N>& rows, std::vector<RangedField>* out) {
  for (const Row& r : rows)
    out->push_back({std::string(r.path), std::string(r.lo), std::string(r.hi)});
}

}  // namespace

std::optional<std::string> QuantityOutOfRange(std::string_view path, Bytes v) {
  return Check(kSizes, path, v, &ParseBytes);
}
std::optional<std::string> QuantityOutOfRange(std::string_view path, Bandwidth v) {
  return Check(kBandwidths, path, v, &ParseBandwidth);
}
std::optional<std::string> QuantityOutOfRange(std::string_view path, Duration v) {
  return Check(kDurations, path, v, &ParseDuration);
}
std::optional<std::string> QuantityOutOfRange(std::string_view path, FlopRate v) {
  return Check(kRates, path, v, &ParseFlopRate);
}

std::vector<RangedField> RangedQuantityFields() {
  std::vector<RangedField> out;
  Append(kSizes, &out);
  Append(kBandwidths, &out);
  Append(kDurations, &out);
  Append(kRates, &out);
  return out;
}

}  // namespace placesim::sim::scenario_internal
