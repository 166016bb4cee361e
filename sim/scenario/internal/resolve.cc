// Preset resolution, validation and conversion of a scenario document. See resolve.h.
//
// Merge order for every part: the preset's value, then the document's field when it is set
// (proto3 `optional` presence), then the documented default for anything still unset.
// Validation runs on the merged values, so a bad value is reported at the schema path that
// sets it whether it came from the user or from a preset.
#include "sim/scenario/internal/resolve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/errors.h"
#include "base/suggest.h"
#include "base/unit_parser.h"
#include "base/units.h"
#include "sim/collectives/registry.h"
#include "sim/network/network_model.h"
#include "sim/scenario/internal/economics.h"
#include "sim/scenario/internal/field_ranges.h"
#include "sim/scenario/internal/hf_config.h"
#include "sim/scenario/internal/overrides.h"
#include "sim/scenario/internal/size_limits.h"
#include "strategies/presets.h"
#include "topology/mesh.h"
#include "topology/presets.h"

namespace placesim::sim::scenario_internal {
namespace {

namespace pb = ::placesim::scenario::proto;
using strategies::State;
using topology::Axis;

constexpr std::string_view kUnset = "(unset)";
// Quantity strings longer than this are refused before parsing, which keeps messages short.
constexpr size_t kMaxQuantityChars = 64;
// The most ranks a mesh may have: every GPU of the largest cluster.
constexpr int64_t kMaxWorld = int64_t{kMaxNodes} * kMaxGpusPerNode;

// A user string as shown in messages: quoted, and cut short when long.
std::string Quote(std::string_view s) {
  if (s.size() > 80) return fmt::format("\"{}...\"", s.substr(0, 77));
  return fmt::format("\"{}\"", s);
}

// Collects problems, keeping at most kMaxReportedProblems lines.
class Problems {
 public:
  void Add(std::string_view path, std::string_view value, std::string_view rule) {
    if (Count()) list_.Add(path, value, rule);
  }
  void AddStatus(std::string_view path, const Status& status) {
    if (Count()) list_.AddStatus(path, status);
  }
  bool empty() const { return total_ == 0; }
  size_t total() const { return total_; }

  Status ToStatus(std::string_view name) const {
    std::string message =
        fmt::format("{}: {} problem{} in the scenario:", name, total_, total_ == 1 ? "" : "s");
    for (const std::string& line : list_.lines()) {
      message += '\n';
      message += line;
    }
    if (total_ > list_.size()) {
      message += fmt::format("\n({} more problems not shown)", total_ - list_.size());
    }
    return InvalidArgumentError(std::move(message));
  }

 private:
  bool Count() { return ++total_ <= kMaxReportedProblems; }
  ErrorList list_;
  size_t total_ = 0;
};

// A capacity factor of E / top_k already gives each expert every token; past a thousand it is
// a typo, and the padded expert sizes it multiplies would leave int64.
constexpr double kMaxCapacityFactor = 1000;

std::string Between(int64_t lo, int64_t hi) {
  return fmt::format("must be between {} and {}", lo, hi);
}

std::string NodesTimesGpus(int nodes, int gpus) {
  return fmt::format("{} node{} × {}", nodes, nodes == 1 ? "" : "s", gpus);
}

// Multiplies non-negative values, saturating at `cap` + 1 so products of large sizes never
// overflow.
int64_t CappedProduct(std::initializer_list<int64_t> values, int64_t cap) {
  int64_t p = 1;
  for (int64_t v : values) {
    if (v != 0 && p > (cap + 1) / v) return cap + 1;
    p *= v;
  }
  return std::min(p, cap + 1);
}

// The names of the fields set in `msg`, except `skip`, e.g. "hbm_capacity, peak_bf16".
std::string SetFieldNames(const google::protobuf::Message& msg,
                          std::initializer_list<std::string_view> skip = {}) {
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  msg.GetReflection()->ListFields(msg, &fields);
  std::vector<std::string> names;
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (std::find(skip.begin(), skip.end(), f->name()) == skip.end()) names.push_back(f->name());
  }
  return JoinNames(names);
}

// Marks a preset's description when the scenario overrides some of its fields, so reports
// never present a modified preset as the stock one.
void NoteOverrides(std::string* description, const std::string& fields) {
  if (fields.empty()) return;
  if (!description->empty()) *description += "; ";
  *description += "overridden: " + fields;
}

// The topology kind of a document vertex kind; nullopt when unset or unknown.
std::optional<topology::VertexKind> VertexKindOf(pb::VertexKind kind) {
  switch (kind) {
    case pb::VERTEX_KIND_GPU:
      return topology::VertexKind::kGpu;
    case pb::VERTEX_KIND_NVSWITCH:
      return topology::VertexKind::kNvSwitch;
    case pb::VERTEX_KIND_PCIE_SWITCH:
      return topology::VertexKind::kPcieSwitch;
    case pb::VERTEX_KIND_NIC:
      return topology::VertexKind::kNic;
    case pb::VERTEX_KIND_HOST_MEMORY:
      return topology::VertexKind::kHostMemory;
    case pb::VERTEX_KIND_NVME:
      return topology::VertexKind::kNvme;
    case pb::VERTEX_KIND_SWITCH:
      return topology::VertexKind::kSwitch;
    default:
      return std::nullopt;
  }
}

// The topology kind of a document link kind; unset and network kinds read as a network link.
topology::LinkKind LinkKindOf(pb::LinkKind kind) {
  switch (kind) {
    case pb::LINK_KIND_NVLINK:
      return topology::LinkKind::kNvlink;
    case pb::LINK_KIND_PCIE:
      return topology::LinkKind::kPcie;
    case pb::LINK_KIND_FABRIC:
      return topology::LinkKind::kFabric;
    case pb::LINK_KIND_MEMORY:
      return topology::LinkKind::kMemory;
    default:
      return topology::LinkKind::kNetwork;
  }
}

// The mesh axis a document axis names; nullopt when unset.
std::optional<Axis> AxisOf(pb::Axis axis) {
  switch (axis) {
    case pb::AXIS_DP:
      return Axis::kData;
    case pb::AXIS_TP:
      return Axis::kTensor;
    case pb::AXIS_PP:
      return Axis::kPipeline;
    case pb::AXIS_CP:
      return Axis::kContext;
    case pb::AXIS_EP:
      return Axis::kExpert;
    default:
      return std::nullopt;
  }
}

// The placement mode a document mode names; nullopt when unset.
std::optional<strategies::Mode> ModeOf(pb::Mode mode) {
  switch (mode) {
    case pb::MODE_REPLICATED:
      return strategies::Mode::kReplicated;
    case pb::MODE_SHARDED:
      return strategies::Mode::kSharded;
    case pb::MODE_SHARDED_GATHER:
      return strategies::Mode::kShardedGather;
    case pb::MODE_MATERIALIZED:
      return strategies::Mode::kMaterialized;
    case pb::MODE_OFFLOADED:
      return strategies::Mode::kOffloaded;
    default:
      return std::nullopt;
  }
}

class Resolver {
 public:
  Resolver(const pb::Scenario& doc, std::string_view name) : doc_(doc), name_(name) {}

  StatusOr<Scenario> Run() {
    CheckEnums(doc_, "");
    ResolveCluster();
    ResolveModel();
    ResolveStrategy();  // needs the GPU count
    ResolveTraining();  // needs dp
    ResolveSimulation();
    if (doc_.has_economics()) ResolveEconomicsMessage();  // needs the GPU
    // Products of fields, once each field is in its range.
    if (problems_.empty()) {
      ErrorList sizes;
      CheckSizeLimits(out_.model.transformer, out_.training, out_.strategy.mesh.dp, &sizes);
      if (!sizes.empty()) problems_.AddStatus("", sizes.ToStatus());
    }
    if (!problems_.empty()) return problems_.ToStatus(name_);
    out_.name = doc_.name().empty() ? DefaultName() : doc_.name();
    out_.description = doc_.description();
    return std::move(out_);
  }

 private:
  // ----------------------------------------------------------------------- value helpers
  template <typename T>
  void ParseQuantity(const std::string& path, const std::string& text,
                     StatusOr<T> (*parse)(std::string_view), T* out) {
    if (text.size() > kMaxQuantityChars) {
      problems_.Add(
          path, Quote(text),
          fmt::format("too long for a quantity (at most {} characters)", kMaxQuantityChars));
      return;
    }
    StatusOr<T> v = parse(text);
    if (!v.ok()) {
      problems_.AddStatus(path, v.status());
      return;
    }
    // Kept even when out of range, so that the field's other rules do not report it again.
    if (std::optional<std::string> rule = QuantityOutOfRange(path, *v)) {
      problems_.Add(path, Quote(text), *rule);
    }
    *out = *v;
  }
  void SizeField(const std::string& path, bool has, const std::string& text, placesim::Bytes* out) {
    if (has) ParseQuantity(path, text, &ParseBytes, out);
  }
  void BandwidthField(const std::string& path, bool has, const std::string& text, Bandwidth* out) {
    if (has) ParseQuantity(path, text, &ParseBandwidth, out);
  }
  void DurationField(const std::string& path, bool has, const std::string& text, Duration* out) {
    if (has) ParseQuantity(path, text, &ParseDuration, out);
  }
  void RateField(const std::string& path, bool has, const std::string& text, FlopRate* out) {
    if (has) ParseQuantity(path, text, &ParseFlopRate, out);
  }
  bool InRange(const std::string& path, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v <= hi) return true;
    problems_.Add(path, std::to_string(v), Between(lo, hi));
    return false;
  }
  bool Efficiency(const std::string& path, double v) {
    if (v >= kMinEfficiency && v <= 1) return true;  // false for NaN too
    problems_.Add(path, fmt::format("{}", v),
                  fmt::format("must be between {} and 1 (a fraction of the peak)", kMinEfficiency));
    return false;
  }

  // A down:up ratio, in [1, kMaxOversubscription]; `meaning` explains its values.
  void Oversubscription(const std::string& path, double v, std::string_view meaning) {
    if (v >= 1.0 && v <= kMaxOversubscription) return;  // false for NaN too
    problems_.Add(path, fmt::format("{}", v),
                  fmt::format("must be between 1 and {} ({})", kMaxOversubscription, meaning));
  }

  std::string DefaultName() const {
    std::string_view n = name_;
    size_t slash = n.find_last_of("/\\");
    if (slash != std::string_view::npos) n.remove_prefix(slash + 1);
    size_t dot = n.rfind('.');
    if (dot != std::string_view::npos && dot > 0) n = n.substr(0, dot);
    return std::string(n);
  }

  // Proto3 enums are open: the text and JSON parsers accept numbers outside the enum, which
  // would otherwise read as the default. Every enum value in the document must be named.
  void CheckEnums(const google::protobuf::Message& msg, const std::string& path) {
    using google::protobuf::FieldDescriptor;
    const google::protobuf::Reflection* r = msg.GetReflection();
    std::vector<const FieldDescriptor*> fields;
    r->ListFields(msg, &fields);
    for (const FieldDescriptor* f : fields) {
      std::string here = path.empty() ? f->name() : path + "." + f->name();
      int count = f->is_repeated() ? r->FieldSize(msg, f) : 1;
      for (int i = 0; i < count; ++i) {
        std::string at = f->is_repeated() ? fmt::format("{}[{}]", here, i) : here;
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          CheckEnums(f->is_repeated() ? r->GetRepeatedMessage(msg, f, i) : r->GetMessage(msg, f),
                     at);
        } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
          int v = f->is_repeated() ? r->GetRepeatedEnumValue(msg, f, i) : r->GetEnumValue(msg, f);
          if (f->enum_type()->FindValueByNumber(v) == nullptr) {
            problems_.Add(at, std::to_string(v),
                          "not a value of the enum; valid: " + EnumNames(f->enum_type(), false));
          }
        }
      }
    }
  }

  // ----------------------------------------------------------------------------- cluster
  // The node and its GPU before any field override: from the presets, or written out.
  // `ok` is false when the base is unusable (an unknown preset, no GPU count, an incomplete
  // GPU), which skips the checks that would only repeat that problem.
  struct NodeBase {
    bool ok = true;
    bool have_gpu = false;
    bool preset_unknown = false;
  };
  NodeBase ResolveNodeBase() {
    const pb::Cluster& c = doc_.cluster();
    const pb::Node& n = c.node();
    topology::ClusterSpec& cluster = out_.cluster;
    NodeBase base;
    if (c.has_node_preset()) {
      const topology::NodeSpec* preset = topology::FindNodePreset(c.node_preset());
      if (preset == nullptr) {
        problems_.Add("cluster.node_preset", Quote(c.node_preset()),
                      "unknown node preset; valid: " + JoinNames(topology::NodePresetNames()) +
                          DidYouMean(c.node_preset(), topology::NodePresetNames()));
        base.ok = false;
        base.preset_unknown = true;
      } else {
        cluster.node = *preset;
        base.have_gpu = true;
      }
    } else {
      cluster.node = topology::NodeSpec{};
      cluster.node.name = "custom";
      if (!n.has_gpus()) {
        problems_.Add("cluster.node.gpus", kUnset,
                      "required without a node preset: GPUs per node, between 1 and 1024; or "
                      "set cluster.node_preset (valid: " +
                          JoinNames(topology::NodePresetNames()) + ")");
        base.ok = false;
      }
    }
    topology::NodeSpec& node = cluster.node;
    if (n.has_gpu_preset()) {
      const topology::DeviceSpec* d = topology::FindDevicePreset(n.gpu_preset());
      if (d == nullptr) {
        problems_.Add("cluster.node.gpu_preset", Quote(n.gpu_preset()),
                      "unknown GPU preset; valid: " + JoinNames(topology::DevicePresetNames()) +
                          DidYouMean(n.gpu_preset(), topology::DevicePresetNames()));
        base.ok = false;
        base.preset_unknown = true;
      } else {
        node.gpu = *d;
        base.have_gpu = true;
      }
    }
    const pb::Device& g = n.gpu();
    if (!base.have_gpu && !base.preset_unknown) {
      std::vector<std::string> missing;
      if (!g.has_hbm_capacity()) missing.push_back("hbm_capacity");
      if (!g.has_hbm_bandwidth()) missing.push_back("hbm_bandwidth");
      if (!g.has_peak_fp32() && !g.has_peak_tf32() && !g.has_peak_bf16() && !g.has_peak_fp16() &&
          !g.has_peak_fp8()) {
        missing.push_back("a peak rate (peak_bf16, ...)");
      }
      if (!g.has_matmul_efficiency()) missing.push_back("matmul_efficiency");
      if (!g.has_memory_efficiency()) missing.push_back("memory_efficiency");
      node.gpu = topology::DeviceSpec{};
      node.gpu.name = "custom";
      if (!missing.empty()) {
        problems_.Add("cluster.node.gpu", "(incomplete)",
                      "without a GPU preset the GPU must be written out; missing: " +
                          JoinNames(missing) + "; or set cluster.node.gpu_preset (valid: " +
                          JoinNames(topology::DevicePresetNames()) + ")");
        base.ok = false;
      }
    }
    return base;
  }

  // The GPU fields the document sets over the base (parsed even when a preset is unknown, so
  // their errors show too).
  void ApplyGpuFields(bool have_gpu) {
    const pb::Device& g = doc_.cluster().node().gpu();
    topology::DeviceSpec& dev = out_.cluster.node.gpu;
    const std::string gp = "cluster.node.gpu.";
    SizeField(gp + "hbm_capacity", g.has_hbm_capacity(), g.hbm_capacity(), &dev.hbm_capacity);
    BandwidthField(gp + "hbm_bandwidth", g.has_hbm_bandwidth(), g.hbm_bandwidth(),
                   &dev.hbm_bandwidth);
    auto peak = [&dev](topology::DataType t) -> FlopRate* {
      return &dev.peak[static_cast<int>(t)];
    };
    RateField(gp + "peak_fp32", g.has_peak_fp32(), g.peak_fp32(), peak(topology::DataType::kFp32));
    RateField(gp + "peak_tf32", g.has_peak_tf32(), g.peak_tf32(), peak(topology::DataType::kTf32));
    RateField(gp + "peak_bf16", g.has_peak_bf16(), g.peak_bf16(), peak(topology::DataType::kBf16));
    RateField(gp + "peak_fp16", g.has_peak_fp16(), g.peak_fp16(), peak(topology::DataType::kFp16));
    RateField(gp + "peak_fp8", g.has_peak_fp8(), g.peak_fp8(), peak(topology::DataType::kFp8));
    // A flat efficiency the scenario sets replaces the preset's shape-aware kernel model.
    if (g.has_matmul_efficiency()) {
      dev.matmul_efficiency = g.matmul_efficiency();
      dev.kernels = topology::KernelProfile{};
    }
    if (g.has_memory_efficiency()) dev.memory_efficiency = g.memory_efficiency();
    DurationField(gp + "kernel_overhead", g.has_kernel_overhead(), g.kernel_overhead(),
                  &dev.kernel_overhead);

    if (have_gpu) NoteOverrides(&dev.description, SetFieldNames(g));
  }

  // The node fields the document sets over the base.
  void ApplyNodeFields() {
    const pb::Cluster& c = doc_.cluster();
    const pb::Node& n = c.node();
    topology::NodeSpec& node = out_.cluster.node;
    const std::string np = "cluster.node.";
    if (c.has_node_preset()) {
      NoteOverrides(&node.description, SetFieldNames(n, {"gpu", "gpu_preset"}));
    }
    if (n.has_gpus()) node.gpus = n.gpus();
    BandwidthField(np + "nvlink_bandwidth", n.has_nvlink_bandwidth(), n.nvlink_bandwidth(),
                   &node.nvlink_bandwidth);
    DurationField(np + "nvlink_latency", n.has_nvlink_latency(), n.nvlink_latency(),
                  &node.nvlink_latency);
    if (n.has_nvswitches()) node.nvswitches = n.nvswitches();
    if (n.has_pcie_switches()) node.pcie_switches = n.pcie_switches();
    BandwidthField(np + "pcie_bandwidth", n.has_pcie_bandwidth(), n.pcie_bandwidth(),
                   &node.pcie_bandwidth);
    DurationField(np + "pcie_latency", n.has_pcie_latency(), n.pcie_latency(), &node.pcie_latency);
    SizeField(np + "host_memory", n.has_host_memory(), n.host_memory(), &node.host_memory);
    BandwidthField(np + "host_memory_bandwidth", n.has_host_memory_bandwidth(),
                   n.host_memory_bandwidth(), &node.host_memory_bandwidth);
    RateField(np + "host_flops", n.has_host_flops(), n.host_flops(), &node.host_flops);
    SizeField(np + "nvme_capacity", n.has_nvme_capacity(), n.nvme_capacity(), &node.nvme_capacity);
    BandwidthField(np + "nvme_bandwidth", n.has_nvme_bandwidth(), n.nvme_bandwidth(),
                   &node.nvme_bandwidth);
    if (n.has_nics()) node.nics = n.nics();
    BandwidthField(np + "nic_bandwidth", n.has_nic_bandwidth(), n.nic_bandwidth(),
                   &node.nic_bandwidth);
    DurationField(np + "nic_latency", n.has_nic_latency(), n.nic_latency(), &node.nic_latency);
  }

  // Range checks of the merged node and GPU; returns whether the GPU count is usable.
  bool CheckNodeValues() {
    const topology::NodeSpec& node = out_.cluster.node;
    const topology::DeviceSpec& dev = node.gpu;
    const std::string np = "cluster.node.";
    const std::string gp = "cluster.node.gpu.";
    const bool gpus_ok = InRange(np + "gpus", node.gpus, 1, kMaxGpusPerNode);
    InRange(np + "nvswitches", node.nvswitches, 0, 1024);
    InRange(np + "pcie_switches", node.pcie_switches, 0, 1024);
    InRange(np + "nics", node.nics, 0, 1024);
    if (dev.hbm_capacity.count() <= 0) {
      problems_.Add(gp + "hbm_capacity", ToString(dev.hbm_capacity), "must be > 0");
    }
    if (dev.hbm_bandwidth.bytes_per_second() <= 0) {
      problems_.Add(gp + "hbm_bandwidth", ToString(dev.hbm_bandwidth), "must be > 0");
    }
    if (std::none_of(dev.peak.begin(), dev.peak.end(),
                     [](FlopRate r) { return r.per_second() > 0; })) {
      problems_.Add(gp + "peak_bf16", "all peak rates are 0",
                    "at least one of peak_fp32, peak_tf32, peak_bf16, peak_fp16, peak_fp8 "
                    "must be > 0");
    }
    Efficiency(gp + "matmul_efficiency", dev.matmul_efficiency);
    Efficiency(gp + "memory_efficiency", dev.memory_efficiency);
    return gpus_ok;
  }

  // The GPUs of a node reach each other, and nodes reach each other through NICs (graph
  // fabrics describe their own links instead).
  void CheckNodeConnectivity(bool nodes_ok) {
    const topology::ClusterSpec& cluster = out_.cluster;
    const topology::NodeSpec& node = cluster.node;
    const std::string np = "cluster.node.";
    if (node.gpus > 1 && node.nvlink_bandwidth.bytes_per_second() <= 0 &&
        node.pcie_bandwidth.bytes_per_second() <= 0) {
      problems_.Add(np + "nvlink_bandwidth", ToString(node.nvlink_bandwidth),
                    fmt::format("the {} GPUs of a node need NVLink or PCIe bandwidth > 0 to "
                                "reach each other",
                                node.gpus));
    }
    if (nodes_ok && cluster.nodes > 1) {
      if (node.nics < 1) {
        problems_.Add(
            np + "nics", std::to_string(node.nics),
            fmt::format("a cluster of {} nodes needs at least 1 NIC per node", cluster.nodes));
      }
      if (node.nic_bandwidth.bytes_per_second() <= 0) {
        problems_.Add(np + "nic_bandwidth", ToString(node.nic_bandwidth),
                      fmt::format("must be > 0 in a cluster of {} nodes", cluster.nodes));
      }
    }
  }

  void ResolveCluster() {
    const pb::Cluster& c = doc_.cluster();
    topology::ClusterSpec& cluster = out_.cluster;
    if (!c.has_node_preset() && !c.has_node()) {
      problems_.Add("cluster", kUnset,
                    "a cluster is required: set cluster.node_preset (valid: " +
                        JoinNames(topology::NodePresetNames()) +
                        ") or describe cluster.node (gpus and a GPU)");
      return;
    }
    const NodeBase base = ResolveNodeBase();
    ApplyGpuFields(base.have_gpu);
    ApplyNodeFields();
    cluster.nodes = c.has_nodes() ? c.nodes() : 1;
    bool nodes_ok = InRange("cluster.nodes", cluster.nodes, 1, kMaxNodes);
    const bool gpus_ok = base.ok && CheckNodeValues();

    ResolveFabric(nodes_ok);
    bool is_explicit = cluster.fabric.kind == topology::FabricKind::kExplicit;
    if (base.ok && gpus_ok && !is_explicit) CheckNodeConnectivity(nodes_ok);
    if (base.ok && gpus_ok && nodes_ok) {
      gpus_ = static_cast<int64_t>(cluster.nodes) * cluster.node.gpus;
      if (is_explicit) CheckExplicitGpuCount();
    }
  }

  // The three-tier Clos fields: required and range-checked for that kind, refused on others
  // (the capacity checks are BuildCluster's).
  void ResolveClosFields(const pb::Fabric& f, topology::FabricSpec& fabric) {
    const std::string fp = "cluster.fabric.";
    if (fabric.kind != topology::FabricKind::kClos) {
      for (const auto& [field, set] :
           {std::pair{"pod_nodes", f.has_pod_nodes()},
            std::pair{"pod_oversubscription", f.has_pod_oversubscription()}}) {
        if (set) {
          problems_.Add(fp + field, "set",
                        "only FABRIC_KIND_THREE_TIER_CLOS has pods; leave it unset or set "
                        "cluster.fabric.kind: FABRIC_KIND_THREE_TIER_CLOS");
        }
      }
      return;
    }
    if (!f.has_pod_nodes()) {
      problems_.Add(fp + "pod_nodes", "unset",
                    "FABRIC_KIND_THREE_TIER_CLOS needs the nodes per pod, 1 to 65536");
    } else {
      fabric.pod_nodes = f.pod_nodes();
      InRange(fp + "pod_nodes", fabric.pod_nodes, 1, 65536);
    }
    fabric.pod_oversubscription = f.has_pod_oversubscription() ? f.pod_oversubscription() : 1.0;
    Oversubscription(fp + "pod_oversubscription", fabric.pod_oversubscription,
                     "1 = non-blocking between pods, 7 = 7:1 down:up");
  }

  void ResolveFabric(bool nodes_ok) {
    const pb::Cluster& c = doc_.cluster();
    const pb::Fabric& f = c.fabric();
    topology::FabricSpec& fabric = out_.cluster.fabric;
    int nodes = out_.cluster.nodes;
    const std::string fp = "cluster.fabric.";
    switch (f.kind()) {
      case pb::FABRIC_KIND_SINGLE_NODE:
        fabric.kind = topology::FabricKind::kSingleNode;
        if (nodes_ok && nodes > 1) {
          problems_.Add(fp + "kind", "FABRIC_KIND_SINGLE_NODE",
                        fmt::format("needs cluster.nodes = 1, but it is {}; use "
                                    "FABRIC_KIND_FAT_TREE or FABRIC_KIND_RAIL_OPTIMIZED",
                                    nodes));
        }
        break;
      case pb::FABRIC_KIND_FAT_TREE:
        fabric.kind = topology::FabricKind::kFatTree;
        break;
      case pb::FABRIC_KIND_RAIL_OPTIMIZED:
        fabric.kind = topology::FabricKind::kRailOptimized;
        break;
      case pb::FABRIC_KIND_EXPLICIT:
        fabric.kind = topology::FabricKind::kExplicit;
        break;
      case pb::FABRIC_KIND_THREE_TIER_CLOS:
        fabric.kind = topology::FabricKind::kClos;
        break;
      default:  // FABRIC_KIND_UNSPECIFIED, or a number outside the enum from JSON
        fabric.kind =
            nodes == 1 ? topology::FabricKind::kSingleNode : topology::FabricKind::kFatTree;
        break;
    }
    fabric.switch_radix = f.has_switch_radix() ? f.switch_radix() : 64;
    InRange(fp + "switch_radix", fabric.switch_radix, 2, 65536);
    fabric.oversubscription = f.has_oversubscription() ? f.oversubscription() : 1.0;
    Oversubscription(fp + "oversubscription", fabric.oversubscription,
                     "1 = non-blocking, 2 = 2:1 oversubscribed");
    BandwidthField(fp + "link_bandwidth", f.has_link_bandwidth(), f.link_bandwidth(),
                   &fabric.link_bandwidth);
    if (f.has_link_bandwidth() && fabric.link_bandwidth.bytes_per_second() <= 0) {
      problems_.Add(fp + "link_bandwidth", Quote(f.link_bandwidth()),
                    "must be > 0 (leave it unset to use the NIC bandwidth)");
    }
    DurationField(fp + "switch_latency", f.has_switch_latency(), f.switch_latency(),
                  &fabric.switch_latency);
    ResolveClosFields(f, fabric);

    bool is_explicit = fabric.kind == topology::FabricKind::kExplicit;
    if (!is_explicit) {
      if (c.vertices_size() > 0 || c.links_size() > 0) {
        problems_.Add("cluster.vertices",
                      fmt::format("{} vertices, {} links", c.vertices_size(), c.links_size()),
                      "an explicit graph needs cluster.fabric.kind: FABRIC_KIND_EXPLICIT");
      }
      return;
    }
    ResolveGraph(nodes_ok);
  }

  void ResolveGraph(bool nodes_ok) {
    const pb::Cluster& c = doc_.cluster();
    topology::ClusterSpec& cluster = out_.cluster;
    if (c.vertices_size() == 0 || c.links_size() == 0) {
      problems_.Add("cluster.vertices",
                    fmt::format("{} vertices, {} links", c.vertices_size(), c.links_size()),
                    "FABRIC_KIND_EXPLICIT needs the graph: at least one vertex and one link");
      return;
    }
    if (c.vertices_size() > kMaxExplicitVertices || c.links_size() > kMaxExplicitLinks) {
      problems_.Add("cluster.vertices",
                    fmt::format("{} vertices, {} links", c.vertices_size(), c.links_size()),
                    fmt::format("an explicit graph has at most {} vertices and {} links",
                                kMaxExplicitVertices, kMaxExplicitLinks));
      return;
    }
    std::unordered_map<std::string, int> index;  // vertex name -> its first position
    index.reserve(static_cast<size_t>(c.vertices_size()));
    cluster.vertices.reserve(static_cast<size_t>(c.vertices_size()));
    for (int i = 0; i < c.vertices_size(); ++i) {
      cluster.vertices.push_back(ResolveVertex(i, nodes_ok, index));
    }
    cluster.links.reserve(static_cast<size_t>(c.links_size()));
    for (int i = 0; i < c.links_size(); ++i) cluster.links.push_back(ResolveLink(i, index));
  }

  // cluster.vertices[i], registering its name in `index` (which reports duplicates).
  topology::ExplicitVertex ResolveVertex(int i, bool nodes_ok,
                                         std::unordered_map<std::string, int>& index) {
    const pb::Vertex& v = doc_.cluster().vertices(i);
    const std::string p = fmt::format("cluster.vertices[{}].", i);
    topology::ExplicitVertex ev;
    ev.name = v.name();
    ev.node = v.node();
    if (v.name().empty()) {
      problems_.Add(p + "name", "\"\"", "must not be empty");
    } else if (auto [it, inserted] = index.emplace(v.name(), i); !inserted) {
      problems_.Add(p + "name", Quote(v.name()),
                    fmt::format("duplicate: already the name of cluster.vertices[{}]", it->second));
    }
    if (const std::optional<topology::VertexKind> kind = VertexKindOf(v.kind())) {
      ev.kind = *kind;
    } else {
      problems_.Add(p + "kind",
                    pb::VertexKind_Name(v.kind()).empty() ? std::to_string(v.kind())
                                                          : pb::VertexKind_Name(v.kind()),
                    "must be set; valid: " + EnumNames(pb::VertexKind_descriptor(), false));
    }
    if (nodes_ok) InRange(p + "node", v.node(), 0, out_.cluster.nodes - 1);
    return ev;
  }

  // cluster.links[i], whose ends must name vertices in `index`.
  topology::ExplicitLink ResolveLink(int i, const std::unordered_map<std::string, int>& index) {
    const pb::Link& l = doc_.cluster().links(i);
    const std::string p = fmt::format("cluster.links[{}].", i);
    topology::ExplicitLink el;
    el.from = l.from();
    el.to = l.to();
    for (const auto& [field, name] : {std::pair{"from", &l.from()}, {"to", &l.to()}}) {
      if (index.find(*name) == index.end()) {
        problems_.Add(p + field, Quote(*name), "no vertex has this name");
      }
    }
    if (l.from() == l.to() && !l.from().empty()) {
      problems_.Add(p + "to", Quote(l.to()), "a link joins two different vertices");
    }
    el.kind = LinkKindOf(l.kind());
    if (l.bandwidth().empty()) {
      problems_.Add(p + "bandwidth", kUnset, "required, e.g. \"50 GB/s\"");
    } else {
      BandwidthField(p + "bandwidth", true, l.bandwidth(), &el.bandwidth);
      if (el.bandwidth.bytes_per_second() <= 0 && ParseBandwidth(l.bandwidth()).ok()) {
        problems_.Add(p + "bandwidth", Quote(l.bandwidth()), "must be > 0");
      }
    }
    DurationField(p + "latency", !l.latency().empty(), l.latency(), &el.latency);
    el.full_duplex = l.has_full_duplex() ? l.full_duplex() : true;
    return el;
  }

  void CheckExplicitGpuCount() {
    int64_t gpu_vertices = std::count_if(
        out_.cluster.vertices.begin(), out_.cluster.vertices.end(),
        [](const topology::ExplicitVertex& v) { return v.kind == topology::VertexKind::kGpu; });
    if (gpu_vertices != gpus_) {
      problems_.Add("cluster.vertices", fmt::format("{} GPU vertices", gpu_vertices),
                    fmt::format("must equal the cluster's {} GPUs ({})", gpus_,
                                NodesTimesGpus(out_.cluster.nodes, out_.cluster.node.gpus)));
    }
  }

  // ------------------------------------------------------------------------------- model
  // A Hugging Face config's path is relative to the scenario file (to the working directory
  // when the scenario is not a file).
  std::string HfConfigPath(const std::string& written) const {
    std::filesystem::path path(written);
    if (path.is_absolute()) return written;
    std::error_code ec;
    const std::filesystem::path scenario(name_);
    if (std::filesystem::is_regular_file(scenario, ec))
      return (scenario.parent_path() / path).lexically_normal().string();
    return written;
  }

  // The model the document's fields start from: a preset, a Hugging Face config, or nothing.
  // False when that base is in error (reported).
  bool ResolveModelBase() {
    const pb::Model& m = doc_.model();
    strategies::ModelSpec& model = out_.model;
    if (m.has_preset() && m.has_hf_config()) {
      problems_.Add("model.hf_config", Quote(m.hf_config()),
                    "set either model.preset or model.hf_config, not both");
      return false;
    }
    if (m.has_preset()) {
      const strategies::ModelSpec* preset = strategies::FindModelPreset(m.preset());
      if (preset == nullptr) {
        problems_.Add("model.preset", Quote(m.preset()),
                      "unknown model preset; valid: " + JoinNames(strategies::ModelPresetNames()) +
                          DidYouMean(m.preset(), strategies::ModelPresetNames()));
        return false;
      }
      model = *preset;
    } else if (m.has_hf_config()) {
      StatusOr<strategies::ModelSpec> read = ReadHfConfig(HfConfigPath(m.hf_config()));
      if (!read.ok()) {
        problems_.Add("model.hf_config", Quote(m.hf_config()), read.status().message());
        return false;
      }
      model = *std::move(read);
      if (!m.has_seq_len()) {
        problems_.Add("model.seq_len", kUnset,
                      "required beside model.hf_config (the config's max_position_embeddings is "
                      "the longest context, not the training length); " +
                          Between(1, 100'000'000));
      }
    } else {
      model = strategies::ModelSpec{};
      model.name = "custom";
    }
    return true;
  }

  // The fields of current models' shapes (HF configs), over the base's.
  void ResolveModelShapeFields(const pb::Model& m, strategies::TransformerSpec& t) {
    if (m.has_head_dim()) t.head_dim = m.head_dim();
    if (m.has_qkv_bias()) t.qkv_bias = m.qkv_bias();
    if (m.has_qk_norm()) t.qk_norm = m.qk_norm();
    if (m.has_expert_ffn_hidden()) t.expert_ffn_hidden = m.expert_ffn_hidden();
    if (m.has_shared_experts()) t.shared_experts = m.shared_experts();
    if (m.has_first_dense_layers()) t.first_dense_layers = m.first_dense_layers();
    if (m.has_moe_layer_interval()) t.moe_layer_interval = m.moe_layer_interval();
    if (m.has_q_lora_rank()) t.q_lora_rank = m.q_lora_rank();
    if (m.has_kv_lora_rank()) t.kv_lora_rank = m.kv_lora_rank();
    if (m.has_qk_rope_head_dim()) t.qk_rope_head_dim = m.qk_rope_head_dim();
    if (m.has_qk_nope_head_dim()) t.qk_nope_head_dim = m.qk_nope_head_dim();
    if (m.has_v_head_dim()) t.v_head_dim = m.v_head_dim();
    InRange("model.head_dim", t.head_dim, 0, 100'000);
    InRange("model.expert_ffn_hidden", t.expert_ffn_hidden, 0, 100'000'000);
    InRange("model.shared_experts", t.shared_experts, 0, 100'000);
    InRange("model.first_dense_layers", t.first_dense_layers, 0, 100'000);
    InRange("model.moe_layer_interval", t.moe_layer_interval, 0, 100'000);
    InRange("model.q_lora_rank", t.q_lora_rank, 0, 10'000'000);
    if (InRange("model.kv_lora_rank", t.kv_lora_rank, 0, 10'000'000) && t.kv_lora_rank > 0) {
      // Multi-head latent attention needs its per-head widths.
      const std::pair<const char*, int64_t> widths[] = {
          {"model.qk_rope_head_dim", t.qk_rope_head_dim},
          {"model.qk_nope_head_dim", t.qk_nope_head_dim},
          {"model.v_head_dim", t.v_head_dim}};
      for (const auto& [path, v] : widths) {
        if (v == 0) {
          problems_.Add(path, kUnset,
                        "required with model.kv_lora_rank > 0 (multi-head latent attention); " +
                            Between(1, 100'000));
        } else {
          InRange(path, v, 1, 100'000);
        }
      }
    }
  }

  void ResolveModel() {
    const pb::Model& m = doc_.model();
    strategies::ModelSpec& model = out_.model;
    strategies::TransformerSpec& t = model.transformer;
    if (!ResolveModelBase()) return;
    bool arch_written = m.has_layers() || m.has_hidden() || m.has_heads() || m.has_kv_heads() ||
                        m.has_ffn_hidden() || m.has_vocab() || m.has_seq_len() || m.has_hf_config();
    if (m.has_layers()) t.layers = m.layers();
    if (m.has_hidden()) t.hidden = m.hidden();
    if (m.has_heads()) t.heads = m.heads();
    if (m.has_kv_heads()) t.kv_heads = m.kv_heads();
    if (m.has_ffn_hidden()) t.ffn_hidden = m.ffn_hidden();
    if (m.has_vocab()) t.vocab = m.vocab();
    if (m.has_seq_len()) t.seq_len = m.seq_len();
    if (m.has_tied_embeddings()) t.tied_embeddings = m.tied_embeddings();
    if (m.has_gated_mlp()) t.gated_mlp = m.gated_mlp();
    if (m.has_experts()) t.experts = m.experts();
    if (m.has_top_k()) t.top_k = m.top_k();
    if (m.has_capacity_factor()) t.capacity_factor = m.capacity_factor();
    if (m.has_routing_imbalance()) t.routing_imbalance = m.routing_imbalance();
    if (m.has_parameter_count()) model.parameter_count = m.parameter_count();
    ResolveModelShapeFields(m, t);
    if (m.has_preset()) NoteOverrides(&model.description, SetFieldNames(m, {"preset"}));
    if (m.has_hf_config())
      NoteOverrides(&model.description, SetFieldNames(m, {"hf_config", "seq_len"}));

    if (!m.has_preset() && !arch_written && !m.has_parameter_count()) {
      problems_.Add("model", kUnset,
                    "a model is required: set model.preset (valid: " +
                        JoinNames(strategies::ModelPresetNames()) +
                        "), or its architecture (layers, hidden, heads, vocab, seq_len), or "
                        "model.parameter_count");
      return;
    }
    if (t.kv_heads == 0) t.kv_heads = t.heads;
    if (t.ffn_hidden == 0 && t.hidden > 0 && t.hidden <= 10'000'000) t.ffn_hidden = 4 * t.hidden;

    if (arch_written || t.layers > 0) {
      auto required = [&](const char* field, int64_t v, int64_t hi) {
        std::string path = std::string("model.") + field;
        if (v == 0) {
          problems_.Add(path, kUnset,
                        fmt::format("required with an architecture; {}", Between(1, hi)));
          return false;
        }
        return InRange(path, v, 1, hi);
      };
      required("layers", t.layers, 100'000);
      required("hidden", t.hidden, 10'000'000);
      bool heads_ok = required("heads", t.heads, 100'000);
      required("ffn_hidden", t.ffn_hidden, 100'000'000);
      required("vocab", t.vocab, 100'000'000);
      required("seq_len", t.seq_len, 100'000'000);
      if (heads_ok && InRange("model.kv_heads", t.kv_heads, 1, t.heads) &&
          t.heads % t.kv_heads != 0) {
        problems_.Add("model.kv_heads", std::to_string(t.kv_heads),
                      fmt::format("must divide heads = {}", t.heads));
      }
    }
    if (InRange("model.experts", t.experts, 0, 100'000) && t.experts > 1) {
      if (t.top_k == 0) {
        problems_.Add(
            "model.top_k", kUnset,
            fmt::format("required with experts = {}; {}", t.experts, Between(1, t.experts)));
      } else {
        InRange("model.top_k", t.top_k, 1, t.experts);
      }
    }
    if (!(t.capacity_factor >= 0) || !(t.capacity_factor <= kMaxCapacityFactor)) {
      problems_.Add("model.capacity_factor", fmt::format("{}", t.capacity_factor),
                    fmt::format("must be a number in (0, {}], or 0 for dropless routing",
                                kMaxCapacityFactor));
    }
    if (!(t.routing_imbalance >= 1) || !(t.routing_imbalance <= kMaxCapacityFactor)) {
      problems_.Add("model.routing_imbalance", fmt::format("{}", t.routing_imbalance),
                    fmt::format("must be a number in [1, {}] (1 = balanced)", kMaxCapacityFactor));
    } else if (t.routing_imbalance != 1 && t.experts > 1 && t.capacity_factor > 0) {
      problems_.Add("model.routing_imbalance", fmt::format("{}", t.routing_imbalance),
                    fmt::format("applies to dropless routing (model.capacity_factor 0); with "
                                "capacity_factor {} every expert computes its padded capacity",
                                t.capacity_factor));
    } else if (t.routing_imbalance != 1 && t.experts <= 1) {
      problems_.Add("model.routing_imbalance", fmt::format("{}", t.routing_imbalance),
                    "applies to mixture-of-experts models only (experts > 1)");
    }
    InRange("model.parameter_count", model.parameter_count, 0, 1'000'000'000'000'000);
  }

  // ---------------------------------------------------------------------------- training
  void ResolveTraining() {
    const pb::Training& tr = doc_.training();
    strategies::TrainingSpec& t = out_.training;
    switch (tr.precision()) {
      case pb::PRECISION_FP16_MIXED:
        t.precision = strategies::Precision::kFp16Mixed;
        break;
      case pb::PRECISION_BF16:
        t.precision = strategies::Precision::kBf16;
        break;
      case pb::PRECISION_FP8_MIXED:
        t.precision = strategies::Precision::kFp8Mixed;
        break;
      default:
        t.precision = strategies::Precision::kBf16Mixed;
        break;
    }
    switch (tr.optimizer()) {
      case pb::OPTIMIZER_ADAMW:
        t.optimizer = strategies::Optimizer::kAdamW;
        break;
      case pb::OPTIMIZER_SGD_MOMENTUM:
        t.optimizer = strategies::Optimizer::kSgdMomentum;
        break;
      case pb::OPTIMIZER_ADAM_8BIT:
        t.optimizer = strategies::Optimizer::kAdam8bit;
        break;
      default:
        t.optimizer = strategies::Optimizer::kAdam;
        break;
    }
    switch (tr.recompute()) {
      case pb::RECOMPUTE_SELECTIVE:
        t.recompute = strategies::Recompute::kSelective;
        break;
      case pb::RECOMPUTE_FULL:
        t.recompute = strategies::Recompute::kFull;
        break;
      default:
        t.recompute = strategies::Recompute::kNone;
        break;
    }
    switch (tr.pipeline_schedule()) {
      case pb::PIPELINE_SCHEDULE_GPIPE:
        t.pipeline_schedule = strategies::PipelineSchedule::kGpipe;
        break;
      case pb::PIPELINE_SCHEDULE_INTERLEAVED_1F1B:
        t.pipeline_schedule = strategies::PipelineSchedule::kInterleaved1F1B;
        break;
      default:
        t.pipeline_schedule = strategies::PipelineSchedule::k1F1B;
        break;
    }
    t.context_parallel_comm = tr.context_parallel_comm() == pb::CONTEXT_PARALLEL_COMM_ALL_GATHER
                                  ? strategies::ContextParallelComm::kAllGather
                                  : strategies::ContextParallelComm::kRing;
    t.sequence_parallel = tr.has_sequence_parallel() && tr.sequence_parallel();
    t.flash_attention = tr.has_flash_attention() && tr.flash_attention();
    ResolveAttentionKernel(tr.attention_kernel(), &t);
    t.main_grads_fp32 = tr.has_main_grads_fp32() && tr.main_grads_fp32();
    t.distribute_saved_activations =
        tr.has_distribute_saved_activations() && tr.distribute_saved_activations();
    if (t.main_grads_fp32 && t.precision == strategies::Precision::kBf16) {
      problems_.Add("training.main_grads_fp32", "true",
                    "needs a mixed precision (PRECISION_BF16_MIXED, PRECISION_FP16_MIXED or "
                    "PRECISION_FP8_MIXED): pure PRECISION_BF16 keeps no fp32 state");
    }
    CheckDistributedSavedActivations(t);
    t.virtual_stages = tr.has_virtual_stages() ? tr.virtual_stages() : 1;
    InRange("training.virtual_stages", t.virtual_stages, 1, 1024);
    t.micro_batch = tr.has_micro_batch() ? tr.micro_batch() : 1;
    bool micro_ok = InRange("training.micro_batch", t.micro_batch, 1, 1'000'000);
    int64_t dp = out_.strategy.mesh.dp;
    if (tr.has_global_batch()) {
      t.global_batch = tr.global_batch();
      if (InRange("training.global_batch", t.global_batch, 1, 1'000'000'000) && micro_ok &&
          mesh_ok_ && t.global_batch % (t.micro_batch * dp) != 0) {
        problems_.Add("training.global_batch", std::to_string(t.global_batch),
                      fmt::format("must be a multiple of micro_batch × dp = {} × {} = {}",
                                  t.micro_batch, dp, t.micro_batch * dp));
      }
    } else {
      t.global_batch = micro_ok && mesh_ok_ ? t.micro_batch * dp : t.micro_batch;
    }
  }

  // training.distribute_saved_activations: full recompute, tp > 1 and no sequence parallelism.
  void CheckDistributedSavedActivations(const strategies::TrainingSpec& t) {
    if (!t.distribute_saved_activations) return;
    const int64_t tp = out_.strategy.mesh.tp;
    std::string why;
    if (t.recompute != strategies::Recompute::kFull) {
      why = "needs training.recompute RECOMPUTE_FULL (only full recompute keeps layer inputs)";
    } else if (tp <= 1) {
      why = fmt::format(
          "needs tensor parallelism (strategy.tp is {}): the inputs are split over "
          "the tp ranks",
          tp);
    } else if (t.sequence_parallel) {
      why =
          "cannot be combined with training.sequence_parallel, which already splits each "
          "kept input over tp";
    }
    if (!why.empty()) {
      problems_.Add("training.distribute_saved_activations", "true", why + "; allowed here: false");
    }
  }

  // training.attention_kernel: a fused kernel the resolved GPU's kernel model has, and only
  // with flash_attention on (otherwise the choice would silently do nothing).
  void ResolveAttentionKernel(int value, strategies::TrainingSpec* t) {
    using topology::AttentionKernel;
    if (value == pb::ATTENTION_KERNEL_UNSPECIFIED || !pb::AttentionKernel_IsValid(value)) return;
    const std::string path = "training.attention_kernel";
    const std::string name = pb::AttentionKernel_Name(static_cast<pb::AttentionKernel>(value));
    t->attention_kernel = static_cast<AttentionKernel>(value);  // same numbers, asserted below
    if (!t->flash_attention) {
      problems_.Add(path, name,
                    "names a fused kernel, but training.flash_attention is not true (the "
                    "attention core would run unfused); set flash_attention: true or leave "
                    "attention_kernel unset");
      return;
    }
    const topology::DeviceSpec& gpu = out_.cluster.node.gpu;
    const std::string device = gpu.name.empty() ? "this GPU" : gpu.name;
    if (!gpu.kernels.present()) {
      problems_.Add(path, name,
                    fmt::format("{} has no kernel model (a GPU written out, one that sets "
                                "cluster.node.gpu.matmul_efficiency, or a preset without "
                                "one), so its flat efficiency covers attention; valid here: "
                                "ATTENTION_KERNEL_UNSPECIFIED",
                                device));
      return;
    }
    if (gpu.kernels.Attention(t->attention_kernel) != nullptr) return;
    std::vector<std::string> valid = {"ATTENTION_KERNEL_UNSPECIFIED"};
    for (const pb::AttentionKernel k :
         {pb::ATTENTION_KERNEL_CUDNN, pb::ATTENTION_KERNEL_FLASH_ATTENTION_2}) {
      if (gpu.kernels.Attention(static_cast<AttentionKernel>(k)) != nullptr) {
        valid.push_back(pb::AttentionKernel_Name(k));
      }
    }
    problems_.Add(path, name,
                  fmt::format("{} does not run on {} (cuDNN fused attention and "
                              "FlashAttention-2 need an NVIDIA GPU of compute capability 8.0 "
                              "or newer); valid here: {}",
                              AttentionKernelName(t->attention_kernel), device, JoinNames(valid)));
  }
  static_assert(static_cast<int>(topology::AttentionKernel::kCudnn) == pb::ATTENTION_KERNEL_CUDNN &&
                static_cast<int>(topology::AttentionKernel::kFlashAttention2) ==
                    pb::ATTENTION_KERNEL_FLASH_ATTENTION_2);

  // -------------------------------------------------------------------------- simulation
  void ResolveSimulation() {
    const pb::Simulation& sim = doc_.simulation();
    SimulationSettings& out = out_.simulation;
    // The enums name registered plug-ins: NETWORK_MODEL_FLOW is the network model "flow",
    // COLLECTIVE_ALGORITHM_RING the algorithm "ring". Unset (or a number CheckEnums reports)
    // leaves the default; a name its registry lacks is reported with the registered ones.
    if (const auto* v = pb::NetworkModel_descriptor()->FindValueByNumber(sim.network_model());
        v != nullptr && v->number() != 0) {
      out.network_model = ShortEnumName(v);
    }
    if (Status s = BuiltinNetworkModels().Lookup(out.network_model).status(); !s.ok()) {
      problems_.AddStatus("simulation.network_model", s);
    }
    if (const auto* v =
            pb::CollectiveAlgorithm_descriptor()->FindValueByNumber(sim.collective_algorithm());
        v != nullptr && v->number() != 0) {
      out.collective_algorithm = ShortEnumName(v);
    }
    if (Status s = collectives::BuiltinRegistry().Select(out.collective_algorithm).status();
        !s.ok()) {
      problems_.AddStatus("simulation.collective_algorithm", s);
    }
    if (sim.has_gradient_bucket_size()) {
      placesim::Bytes bucket = placesim::Bytes::Zero();
      const size_t before = problems_.total();
      SizeField("simulation.gradient_bucket_size", true, sim.gradient_bucket_size(), &bucket);
      if (problems_.total() == before && bucket.count() < 1) {
        problems_.Add("simulation.gradient_bucket_size", Quote(sim.gradient_bucket_size()),
                      "must be at least 1 B");
      }
      out.gradient_bucket_size = bucket;
    }
    out.prefetch_depth = sim.has_prefetch_depth() ? sim.prefetch_depth() : 1;
    InRange("simulation.prefetch_depth", out.prefetch_depth, 0, 64);
    out.sync_grads_every_micro_batch =
        sim.has_sync_grads_every_micro_batch() && sim.sync_grads_every_micro_batch();
    out.tp_comm_overlap = sim.has_tp_comm_overlap() && sim.tp_comm_overlap();
    out.protocol_cost = !sim.has_protocol_cost() || sim.protocol_cost();
    if (sim.gather_granularity() == pb::GATHER_GRANULARITY_PER_UNIT) {
      out.gather_granularity = "per-unit";
    } else if (sim.gather_granularity() == pb::GATHER_GRANULARITY_PER_PARAMETER) {
      out.gather_granularity = "per-parameter";
    }
    if (sim.has_overlap_grad_reduce()) out.overlap_grad_reduce = sim.overlap_grad_reduce();
    if (sim.has_blocking_p2p()) out.blocking_p2p = sim.blocking_p2p();
    if (sim.has_reshard_after_forward()) {
      out.reshard_after_forward = sim.reshard_after_forward();
      if (!sim.reshard_after_forward() && out_.strategy.mesh.pp > 1) {
        problems_.Add("simulation.reshard_after_forward", "false",
                      fmt::format("is modelled without pipeline parallelism only (strategy.pp is "
                                  "{}); allowed here: true",
                                  out_.strategy.mesh.pp));
      }
    }
    if (sim.has_zero3_max_reuse_distance() &&
        InRange("simulation.zero3_max_reuse_distance", sim.zero3_max_reuse_distance(), 0,
                kMaxReuseDistance)) {
      out.zero3_max_reuse_distance = sim.zero3_max_reuse_distance();
    }
    out.host_time_per_layer = HostTime("simulation.host_time_per_layer",
                                       sim.has_host_time_per_layer(), sim.host_time_per_layer())
                                  .value_or(Duration::Zero());
    out.host_time_per_layer_backward =
        HostTime("simulation.host_time_per_layer_backward", sim.has_host_time_per_layer_backward(),
                 sim.host_time_per_layer_backward());
  }

  // A host time per layer pass: unset when absent; "0 s" to "1 s" when set.
  std::optional<Duration> HostTime(const std::string& path, bool has, const std::string& text) {
    if (!has) return std::nullopt;
    Duration d = Duration::Zero();
    const size_t before = problems_.total();
    DurationField(path, true, text, &d);
    if (problems_.total() != before) return std::nullopt;
    if (d > Seconds(1)) {
      problems_.Add(path, Quote(text), "must be at most \"1 s\"");
      return std::nullopt;
    }
    return d;
  }

  // --------------------------------------------------------------------------- economics
  void ResolveEconomicsMessage() {
    std::vector<EconomicsProblem> found;
    out_.economics = ResolveEconomics(doc_.economics(), out_.cluster.node.gpu, &found);
    for (const EconomicsProblem& p : found) problems_.Add(p.path, p.value, p.rule);
  }

  // ---------------------------------------------------------------------------- strategy
  // The mesh: tp, pp, cp, ep as written (1 when unset), dp as written or derived from the GPU
  // count. Sets mesh_ok_ when the mesh covers the cluster and ep divides dp.
  topology::MeshShape ResolveMesh() {
    const pb::Strategy& s = doc_.strategy();
    topology::MeshShape mesh;
    bool sizes_ok = true;
    auto size = [&](const char* axis, bool has, int v, int* out) {
      *out = has ? v : 1;
      sizes_ok &= InRange(std::string("strategy.") + axis, *out, 1, kMaxNodes);
    };
    size("tp", s.has_tp(), s.tp(), &mesh.tp);
    size("pp", s.has_pp(), s.pp(), &mesh.pp);
    size("cp", s.has_cp(), s.cp(), &mesh.cp);
    size("ep", s.has_ep(), s.ep(), &mesh.ep);
    mesh.dp = s.has_dp() ? s.dp() : 0;
    sizes_ok &= InRange("strategy.dp", mesh.dp, 0, kMaxWorld);
    if (!sizes_ok || gpus_ <= 0) return mesh;

    const topology::ClusterSpec& c = out_.cluster;
    int64_t inner = CappedProduct({mesh.tp, mesh.pp, mesh.cp}, kMaxWorld);
    if (mesh.dp == 0) {
      if (gpus_ % inner != 0) {
        problems_.Add("strategy.dp", "0 (derived)",
                      fmt::format("cannot derive dp: the cluster's {} GPUs ({}) are not a "
                                  "multiple of tp × pp × cp = {}",
                                  gpus_, NodesTimesGpus(c.nodes, c.node.gpus), inner));
      } else {
        mesh.dp = static_cast<int>(gpus_ / inner);
      }
    } else {
      int64_t world = CappedProduct({mesh.dp, mesh.tp, mesh.pp, mesh.cp}, kMaxWorld);
      if (world != gpus_) {
        problems_.Add(
            "strategy",
            fmt::format("dp={} tp={} pp={} cp={} ({}{} ranks)", mesh.dp, mesh.tp, mesh.pp, mesh.cp,
                        world > kMaxWorld ? "more than " : "", std::min(world, kMaxWorld)),
            fmt::format("must equal the cluster's {} GPUs ({})", gpus_,
                        NodesTimesGpus(c.nodes, c.node.gpus)));
      }
    }
    if (mesh.dp > 0 && mesh.world() == gpus_) {
      if (mesh.dp % mesh.ep != 0) {
        problems_.Add("strategy.ep", std::to_string(mesh.ep),
                      fmt::format("must divide dp = {} (expert-parallel groups are carved "
                                  "out of the data-parallel ranks)",
                                  mesh.dp));
      } else {
        mesh_ok_ = true;
      }
    }
    return mesh;
  }

  // The strategy: a preset expanded on the mesh, or written out ("custom"). Returns whether
  // its placements are written out in full (a custom strategy, nothing wrong with its name).
  bool ResolveStrategyBase(const topology::MeshShape& mesh) {
    const pb::Strategy& s = doc_.strategy();
    std::string preset = s.has_preset() ? s.preset() : "";
    std::vector<std::string> names = strategies::StrategyPresetNames();
    names.push_back("custom");
    // A case variant (`FSDP`) stands for its preset from here on, in outputs too.
    if (std::find(names.begin(), names.end(), preset) == names.end()) {
      preset = UniqueCaseInsensitiveMatch(preset, names).value_or(preset);
    }
    bool custom = preset.empty() || preset == "custom";
    bool known = true;
    if (custom && s.placements_size() == 0) {
      problems_.Add("strategy.preset", s.has_preset() ? Quote(preset) : std::string(kUnset),
                    "a strategy is required: name a preset (valid: " + JoinNames(names) +
                        ") or write strategy.placements out with preset \"custom\"");
      known = false;
    } else if (!custom && std::find(names.begin(), names.end(), preset) == names.end()) {
      problems_.Add(
          "strategy.preset", Quote(preset),
          "unknown strategy preset; valid: " + JoinNames(names) + DidYouMean(preset, names));
      known = false;
    }
    strategies::StrategySpec& spec = out_.strategy;
    if (!custom && known && mesh_ok_) {
      StatusOr<strategies::StrategySpec> expanded =
          strategies::ExpandStrategyPreset(preset, mesh, out_.cluster.node.gpus);
      if (!expanded.ok()) {
        problems_.AddStatus("strategy.preset", expanded.status());
        known = false;
      } else {
        spec = *std::move(expanded);
      }
    } else {
      spec = strategies::StrategySpec{};
      spec.name = custom ? "custom" : preset;
    }
    spec.mesh = mesh;
    return custom && known;
  }

  // The strategy's scalar options over the base: rank order, unit size, shard groups, the
  // layers of each stage.
  void ResolveStrategyOptions(const topology::MeshShape& mesh) {
    const pb::Strategy& s = doc_.strategy();
    strategies::StrategySpec& spec = out_.strategy;
    if (s.has_rank_order()) {
      StatusOr<topology::RankOrder> order = topology::ParseRankOrder(s.rank_order());
      if (!order.ok()) {
        problems_.Add("strategy.rank_order", Quote(s.rank_order()), order.status().message());
      } else {
        spec.rank_order = *order;
      }
    }
    if (s.has_layers_per_unit()) spec.layers_per_unit = s.layers_per_unit();
    InRange("strategy.layers_per_unit", spec.layers_per_unit, 1, 100'000);
    if (s.has_shard_group_size()) spec.shard_group_size = s.shard_group_size();
    if (InRange("strategy.shard_group_size", spec.shard_group_size, 0, kMaxWorld) && mesh_ok_ &&
        spec.shard_group_size > 0 && mesh.dp % spec.shard_group_size != 0) {
      problems_.Add(
          "strategy.shard_group_size", std::to_string(spec.shard_group_size),
          fmt::format("must divide dp = {} (or be 0: shard over the whole dp axis)", mesh.dp));
    }
    spec.pipeline_stage_layers.assign(s.pipeline_stage_layers().begin(),
                                      s.pipeline_stage_layers().end());
  }

  void ResolveStrategy() {
    const topology::MeshShape mesh = ResolveMesh();
    const bool written_out = ResolveStrategyBase(mesh);
    ResolveStrategyOptions(mesh);
    ResolvePlacements(written_out);
  }

  // The placements the document writes, over the preset's (or the empty custom) strategy.
  void ResolvePlacements(bool written_out) {
    const pb::Strategy& s = doc_.strategy();
    strategies::StrategySpec& spec = out_.strategy;
    std::array<int, topology::kNumAxes> seen;
    seen.fill(-1);
    std::array<std::array<bool, strategies::kNumStates>, topology::kNumAxes> placed{};
    for (int i = 0; i < s.placements_size(); ++i) {
      const pb::AxisPlacement& ap = s.placements(i);
      const std::string p = fmt::format("strategy.placements[{}].", i);
      const std::optional<Axis> axis = AxisOf(ap.axis());
      if (!axis) {
        problems_.Add(p + "axis", kUnset,
                      "must be set; valid: " + EnumNames(pb::Axis_descriptor(), false));
        continue;
      }
      int a = static_cast<int>(*axis);
      if (seen[a] >= 0) {
        problems_.Add(p + "axis", pb::Axis_Name(ap.axis()),
                      fmt::format("already placed by strategy.placements[{}]; each axis "
                                  "appears once",
                                  seen[a]));
        continue;
      }
      seen[a] = i;
      const std::pair<const char*, const pb::StatePlacement*> states[] = {
          {"params", ap.has_params() ? &ap.params() : nullptr},
          {"optimizer", ap.has_optimizer() ? &ap.optimizer() : nullptr},
          {"grads", ap.has_grads() ? &ap.grads() : nullptr},
          {"activations", ap.has_activations() ? &ap.activations() : nullptr},
      };
      for (int st = 0; st < strategies::kNumStates; ++st) {
        if (states[st].second == nullptr) continue;
        const std::optional<strategies::Placement> placement =
            ResolveStatePlacement(p + states[st].first, *states[st].second, written_out);
        if (!placement) continue;  // keeps the preset's placement
        spec.at(*axis, static_cast<State>(st)) = *placement;
        placed[a][st] = true;
      }
    }
    if (written_out) CheckEveryStatePlaced(placed);
  }

  // One state's placement on one axis; nullopt when its mode is unset (reported when the
  // strategy is written out, or a target says a placement was meant).
  std::optional<strategies::Placement> ResolveStatePlacement(const std::string& path,
                                                             const pb::StatePlacement& sp,
                                                             bool written_out) {
    strategies::Placement placement;
    if (const std::optional<strategies::Mode> mode = ModeOf(sp.mode())) {
      placement.mode = *mode;
    } else {
      if (written_out || sp.target() != pb::OFFLOAD_TARGET_UNSPECIFIED) {
        problems_.Add(path + ".mode", kUnset,
                      "must be set; valid: " + EnumNames(pb::Mode_descriptor(), false));
      }
      return std::nullopt;
    }
    if (placement.mode == strategies::Mode::kOffloaded) {
      placement.target = sp.target() == pb::OFFLOAD_TARGET_NVME ? strategies::OffloadTarget::kNvme
                                                                : strategies::OffloadTarget::kHost;
    } else if (sp.target() != pb::OFFLOAD_TARGET_UNSPECIFIED) {
      problems_.Add(path + ".target", pb::OffloadTarget_Name(sp.target()),
                    "only with mode MODE_OFFLOADED");
    }
    return placement;
  }

  // A custom strategy places every state on every axis of size > 1.
  void CheckEveryStatePlaced(
      const std::array<std::array<bool, strategies::kNumStates>, topology::kNumAxes>& placed) {
    const strategies::StrategySpec& spec = out_.strategy;
    for (int a = 0; a < topology::kNumAxes; ++a) {
      Axis axis = static_cast<Axis>(a);
      int size = spec.mesh.size(axis);
      if (size <= 1) continue;
      std::vector<std::string> missing;
      for (int st = 0; st < strategies::kNumStates; ++st) {
        if (!placed[a][st]) missing.push_back(strategies::StateName(static_cast<State>(st)));
      }
      if (!missing.empty()) {
        problems_.Add("strategy.placements",
                      fmt::format("axis {} (size {})", topology::AxisName(axis), size),
                      JoinNames(missing) +
                          " not placed: a custom strategy places every state on every axis of "
                          "size > 1");
      }
    }
  }

  const pb::Scenario& doc_;
  std::string_view name_;
  Problems problems_;
  Scenario out_;
  int64_t gpus_ = 0;  // nodes × gpus per node once both are valid, else 0
  bool mesh_ok_ = false;
};

}  // namespace

StatusOr<Scenario> ResolveScenario(const pb::Scenario& doc, std::string_view display_name) {
  return Resolver(doc, display_name).Run();
}

}  // namespace placesim::sim::scenario_internal
