// BuildCluster: validation of a ClusterSpec and the builders that turn it into a graph.
//
// Graph of one node (generated fabrics), vertex order node-major: GPUs, NVSwitch plane,
// PCIe switches, NICs, host memory, NVMe; then leaves, then spines. Every cable is a pair of
// directed links with the same bandwidth and latency:
//   GPU  <-> NVSwitch plane   nvlink_bandwidth, nvlink_latency   (kNvlink)
//            The physical NVSwitch chips act as one non-blocking plane, so one vertex stands
//            for all of them; it exists when nvlink_bandwidth > 0 and gpus >= 2 (a zero
//            bandwidth means "no NVLink": GPUs then talk over PCIe).
//   GPU  <-> PCIe switch      pcie_bandwidth, pcie_latency       (kPcie)
//   NIC  <-> PCIe switch      pcie_bandwidth, pcie_latency       (kPcie)
//            GPU i sits on switch floor(i * P / gpus), NIC j on floor(j * P / nics), so on a
//            DGX (P = 4) GPUs 0,1 share switch 0 with NICs 0,1: GPU i reaches NIC i without
//            crossing the CPU (GPUDirect RDMA), which is why GPU i normally uses rail i.
//   PCIe switch <-> host memory   pcie_bandwidth, pcie_latency   (kPcie; the root complex)
//   NVMe <-> host memory      nvme_bandwidth, pcie_latency       (kMemory; if nvme_capacity > 0)
//   NIC  <-> leaf switch      nic_bandwidth, nic_latency         (kNetwork)
//   leaf <-> spine            fabric.link_bandwidth (or nic_bandwidth when zero),
//                             fabric.switch_latency              (kFabric)
//
// Two-level fat-tree (kFatTree) with switch radix k and oversubscription o:
//   down ports per leaf d = floor(k * o / (o + 1)), up ports u = k - d (so d:u = o:1).
//   NIC port p = node * nics + j attaches to leaf floor(p / d); leaves L = ceil(ports / d).
//   Each leaf spreads its u uplinks evenly over S spines (u / S parallel cables to each),
//   where S is the smallest divisor of u with S * k >= L * u (every spine port budget met).
//   A spine has L * u / S <= k ports in use, so L <= k: at most k * d NIC ports (2048 for
//   radix 64 at 1:1). Beyond that a third level is needed, which placesim does not build:
//   the spec is refused with that limit. A single leaf needs no spines (S = 0, no uplinks).
//   Leaves are cabled for their full u uplinks even when partly filled, as real fabrics are.
// Rail-optimized (kRailOptimized): rails R = nics; NIC j of every node goes to rail j's
//   leaves, node n to leaf floor(n / d) of its rail (leaves per rail Lr = ceil(nodes / d));
//   the R * Lr leaves join through spines sized by the same rule (R * Lr <= k).
// Three-tier Clos (kClos), the fabric of Meta's Llama 3 clusters (Llama 3 paper, arXiv
//   2407.21783, section 3.3.1: racks under ToR switches, 3,072-GPU pods of full bisection,
//   pods joined by aggregation switches at 1:7): pods of P = pod_nodes nodes (the last may be
//   partly filled), each a two-level fat tree as above (NIC ports fill the pod's Lp =
//   ceil(P * nics / d) leaves in order; leaves of every pod cabled for u uplinks) whose
//   spines are the pod's middle tier. A spine splits its radix evenly, s = floor(k / 2) ports
//   down and s up, as in the k-ary three-tier fat tree of Al-Fares et al. (SIGCOMM 2008);
//   spines per pod Sp = the smallest divisor of u with Sp * s >= Lp * u (so Lp <= s). Core
//   tier: spine j of every pod goes to plane j, whose Cp cores (the smallest divisor of s with
//   Cp * k >= pods * s, so pods <= k) each take s / Cp parallel cables from every spine of
//   the plane; cores = Sp * Cp, none when there is one pod. Oversubscription between pods is
//   carried as bandwidth: every spine-core cable carries link_bw / pod_oversubscription. That
//   is the aggregate of a spine with 1/o as many full-speed uplinks, shared evenly by the
//   flows that cross (what a pod sees under a data-parallel all-reduce across pods), and
//   unlike fewer cables it is seen by the contention-free analytic network model too (which
//   times each flow alone); the cost is that a lone cross-pod flow gets 1/o of a cable.
//   The even spine split budgets ports conservatively: a physical 7:1 spine of radix 64 has
//   56 down ports, not 32.
// Explicit (kExplicit): vertices and links as written; the node count is 1 + the largest
//   vertex node; capacities come from spec.node (GPU HBM, host memory, NVMe).
//
// Validation collects every problem in one ErrorList before anything is allocated; the
// size limits (cluster.h) are checked from the spec's numbers alone, so a 10^6-node spec is
// refused in microseconds. After building, a reachability pass (Boost.Graph BFS from GPU 0
// forwards and on the reversed graph) checks that every GPU and every host memory of a node
// with GPUs reaches GPU 0 and is reached from it, which (by transitivity) makes every GPU
// reach every other GPU and its host memory, in O(V + E).
//
// Thread-safety: pure functions of their arguments.
#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/errors.h"
#include "topology/cluster.h"
#include "topology/internal/graph.h"

namespace placesim::topology {
namespace {

using internal::ClusterData;

bool Finite(double x) { return std::isfinite(x); }

// Bandwidth rule: finite and > 0, or >= 0 when zero means "none".
void CheckBandwidth(ErrorList& errors, const std::string& path, Bandwidth bw, bool zero_ok) {
  const double v = bw.bytes_per_second();
  if (!Finite(v) || v < 0 || (!zero_ok && v == 0)) {
    errors.Add(path, ToString(bw), zero_ok ? "must be >= 0" : "must be > 0");
  }
}

void CheckLatency(ErrorList& errors, const std::string& path, Duration d) {
  if (d < Duration::Zero()) errors.Add(path, ToString(d), "must be >= 0");
}

void CheckBytes(ErrorList& errors, const std::string& path, Bytes b) {
  if (b < Bytes::Zero()) errors.Add(path, ToString(b), "must be >= 0");
}

void CheckIntRange(ErrorList& errors, const std::string& path, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    errors.Add(path, std::to_string(v), fmt::format("must be between {} and {}", lo, hi));
  }
}

void ValidateDevice(const DeviceSpec& d, ErrorList& errors) {
  const std::string p = "cluster.node.gpu.";
  CheckBytes(errors, p + "hbm_capacity", d.hbm_capacity);
  CheckBandwidth(errors, p + "hbm_bandwidth", d.hbm_bandwidth, /*zero_ok=*/true);
  for (int t = 0; t < kNumDataTypes; ++t) {
    const double r = d.peak[t].per_second();
    if (!Finite(r) || r < 0) {
      errors.Add(fmt::format("{}peak.{}", p, DataTypeName(static_cast<DataType>(t))),
                 ToString(d.peak[t]), "must be >= 0 (0 = unsupported)");
    }
  }
  const auto fraction = [&](const char* field, double v) {
    if (!Finite(v) || v < 0 || v > 1) {
      errors.Add(p + field, fmt::format("{}", v), "must be between 0 and 1");
    }
  };
  fraction("matmul_efficiency", d.matmul_efficiency);
  fraction("memory_efficiency", d.memory_efficiency);
  CheckLatency(errors, p + "kernel_overhead", d.kernel_overhead);
}

void ValidateNode(const NodeSpec& n, ErrorList& errors) {
  const std::string p = "cluster.node.";
  ValidateDevice(n.gpu, errors);
  CheckIntRange(errors, p + "gpus", n.gpus, 1, kMaxNodeGpus);
  CheckBandwidth(errors, p + "nvlink_bandwidth", n.nvlink_bandwidth, /*zero_ok=*/true);
  CheckLatency(errors, p + "nvlink_latency", n.nvlink_latency);
  CheckIntRange(errors, p + "nvswitches", n.nvswitches, 0, kMaxVertices);
  CheckIntRange(errors, p + "pcie_switches", n.pcie_switches, 1, std::max(n.gpus, 1));
  CheckBandwidth(errors, p + "pcie_bandwidth", n.pcie_bandwidth, /*zero_ok=*/false);
  CheckLatency(errors, p + "pcie_latency", n.pcie_latency);
  CheckBytes(errors, p + "host_memory", n.host_memory);
  CheckBandwidth(errors, p + "host_memory_bandwidth", n.host_memory_bandwidth, true);
  if (!Finite(n.host_flops.per_second()) || n.host_flops.per_second() < 0) {
    errors.Add(p + "host_flops", ToString(n.host_flops), "must be >= 0");
  }
  CheckBytes(errors, p + "nvme_capacity", n.nvme_capacity);
  if (n.nvme_capacity > Bytes::Zero() && n.nvme_bandwidth.bytes_per_second() == 0) {
    errors.Add(p + "nvme_bandwidth", ToString(n.nvme_bandwidth),
               "must be > 0 when nvme_capacity is > 0");
  } else {
    CheckBandwidth(errors, p + "nvme_bandwidth", n.nvme_bandwidth, /*zero_ok=*/true);
  }
  CheckIntRange(errors, p + "nics", n.nics, 0, kMaxVertices);
  if (n.nics > 0) CheckBandwidth(errors, p + "nic_bandwidth", n.nic_bandwidth, false);
  CheckLatency(errors, p + "nic_latency", n.nic_latency);
}

// The dimensions of a two-level scale-out fabric, computed from the spec's numbers only.
struct FabricPlan {
  FabricShape shape;
  int64_t vertices = 0;  // whole cluster
  int64_t links = 0;     // whole cluster, directed
};

// Smallest divisor s of u with s * radix >= leaves * u. REQUIRES: 1 <= leaves <= radix.
int SpineCount(int64_t leaves, int64_t u, int64_t radix) {
  for (int64_t s = 1; s <= u; ++s) {
    if (u % s == 0 && s * radix >= leaves * u) return static_cast<int>(s);
  }
  return static_cast<int>(u);
}

// A leaf switch's ports: `down` to NICs, `up` to spines (zero unless the fabric has two
// levels and its fields are valid).
struct LeafPorts {
  int64_t down = 0;
  int64_t up = 0;
};

// Validates the cluster size and the fabric fields; returns the leaves' port split.
LeafPorts ValidateFabricFields(const ClusterSpec& spec, ErrorList& errors) {
  const NodeSpec& n = spec.node;
  const FabricSpec& f = spec.fabric;
  const size_t errors_before = errors.size();
  CheckIntRange(errors, "cluster.nodes", spec.nodes, 1, kMaxNodes);
  if (errors.size() == errors_before && n.gpus >= 1 && int64_t{spec.nodes} * n.gpus > kMaxGpus) {
    errors.Add("cluster.nodes", std::to_string(spec.nodes),
               fmt::format("{} nodes x {} GPUs = {} GPUs; placesim simulates at most {} GPUs",
                           spec.nodes, n.gpus, int64_t{spec.nodes} * n.gpus, kMaxGpus));
  }
  if (f.kind == FabricKind::kSingleNode && spec.nodes > 1) {
    errors.Add("cluster.fabric.kind", FabricKindName(f.kind),
               fmt::format("a single-node fabric needs nodes == 1 (got {}); use fat_tree, "
                           "rail_optimized or explicit",
                           spec.nodes));
  }
  if (spec.nodes > 1 && n.nics < 1) {
    errors.Add("cluster.node.nics", std::to_string(n.nics),
               "must be >= 1 when nodes > 1 (the nodes need a scale-out network)");
  }
  LeafPorts ports;
  if (f.kind != FabricKind::kFatTree && f.kind != FabricKind::kRailOptimized &&
      f.kind != FabricKind::kClos) {
    return ports;
  }
  if (f.kind == FabricKind::kClos) {
    CheckIntRange(errors, "cluster.fabric.pod_nodes", f.pod_nodes, 1, kMaxNodes);
    const double po = f.pod_oversubscription;
    if (!Finite(po) || po < 1) {
      errors.Add("cluster.fabric.pod_oversubscription", fmt::format("{}", po),
                 "must be >= 1 (1 = non-blocking between pods, 7 = 7:1 down:up at the spines)");
    }
  }
  CheckIntRange(errors, "cluster.fabric.switch_radix", f.switch_radix, 2, 65'536);
  CheckBandwidth(errors, "cluster.fabric.link_bandwidth", f.link_bandwidth, true);
  CheckLatency(errors, "cluster.fabric.switch_latency", f.switch_latency);
  const double o = f.oversubscription;
  if (!Finite(o) || o <= 0) {
    errors.Add("cluster.fabric.oversubscription", fmt::format("{}", o),
               "must be > 0 (1 = non-blocking, 2 = 2:1 down:up)");
  } else if (f.switch_radix >= 2 && f.switch_radix <= 65'536) {
    // The epsilon keeps exact ratios such as 64 * 3 / 4 = 48 from flooring to 47.
    ports.down = static_cast<int64_t>(std::floor(f.switch_radix * o / (o + 1) + 1e-9));
    ports.up = f.switch_radix - ports.down;
    if (ports.down < 1 || ports.up < 1) {
      errors.Add("cluster.fabric.oversubscription", fmt::format("{}", o),
                 fmt::format("gives radix-{} leaves {} down and {} up ports; both must be >= 1",
                             f.switch_radix, ports.down, ports.up));
    }
  }
  return ports;
}

// The leaves and spines of a two-level fabric (fat-tree or rail-optimized) over the spec's
// nodes; false, with an error, when they do not fit radix-port switches.
bool ShapeTwoLevelFabric(const ClusterSpec& spec, LeafPorts ports, ErrorList& errors,
                         FabricShape* shape) {
  const NodeSpec& n = spec.node;
  const FabricSpec& f = spec.fabric;
  const int64_t nodes = spec.nodes;
  const int64_t radix = f.switch_radix;
  const int64_t d = ports.down;
  int64_t leaves = 0;
  if (f.kind == FabricKind::kFatTree) {
    const int64_t nic_ports = nodes * n.nics;
    leaves = (nic_ports + d - 1) / d;
    if (leaves > radix) {
      errors.Add(
          "cluster.nodes", std::to_string(nodes),
          fmt::format("{} nodes x {} NICs = {} NIC ports, but a two-level fat-tree of "
                      "radix-{} switches with {} down ports per leaf (oversubscription "
                      "{}) connects at most {} NIC ports ({} leaves x {}); raise "
                      "cluster.fabric.switch_radix or oversubscription, or use fewer "
                      "nodes",
                      nodes, n.nics, nic_ports, radix, d, f.oversubscription, radix * d, radix, d));
      return false;
    }
  } else {
    const int64_t per_rail = (nodes + d - 1) / d;
    leaves = n.nics * per_rail;
    if (leaves > radix) {
      errors.Add("cluster.nodes", std::to_string(nodes),
                 fmt::format("a rail-optimized two-level fabric of radix-{} switches has at "
                             "most {} leaves, but {} rails x {} leaves per rail ({} down ports "
                             "each) = {}; at most {} nodes fit; raise "
                             "cluster.fabric.switch_radix or oversubscription, or use fewer "
                             "nodes",
                             radix, radix, n.nics, per_rail, d, leaves, (radix / n.nics) * d));
      return false;
    }
    shape->rails = n.nics;
    shape->leaves_per_rail = static_cast<int>(per_rail);
  }
  shape->leaves = static_cast<int>(leaves);
  shape->down_ports_per_leaf = static_cast<int>(d);
  if (leaves > 1) {
    shape->up_ports_per_leaf = static_cast<int>(ports.up);
    shape->spines = SpineCount(leaves, ports.up, radix);
    shape->links_per_leaf_spine = static_cast<int>(ports.up / shape->spines);
  }
  return true;
}

// The pods, leaves, spines and cores of a three-tier Clos (see the file comment); false,
// with an error naming the field to change, when they do not fit radix-port switches.
bool ShapeClos(const ClusterSpec& spec, LeafPorts ports, ErrorList& errors, FabricShape* shape) {
  const FabricSpec& f = spec.fabric;
  const int64_t nics = spec.node.nics;
  const int64_t radix = f.switch_radix;
  const int64_t d = ports.down;
  const int64_t s = radix / 2;
  if (nics == 0) return true;  // one node without NICs: nothing to cable
  const int64_t pod_nodes = std::min<int64_t>(f.pod_nodes, spec.nodes);
  const int64_t leaves_per_pod = (pod_nodes * nics + d - 1) / d;
  const int64_t pods = (int64_t{spec.nodes} + pod_nodes - 1) / pod_nodes;
  if (leaves_per_pod > s) {
    errors.Add("cluster.fabric.pod_nodes", std::to_string(f.pod_nodes),
               fmt::format("a pod of {} nodes x {} NICs needs {} leaves of {} down ports, but a "
                           "radix-{} spine has {} down ports; at most {} nodes per pod fit",
                           pod_nodes, nics, leaves_per_pod, d, radix, s, s * d / nics));
    return false;
  }
  if (pods > radix) {
    errors.Add("cluster.nodes", std::to_string(spec.nodes),
               fmt::format("{} nodes in pods of {} make {} pods, but a radix-{} core switch "
                           "joins at most {} pods; at most {} nodes fit; raise "
                           "cluster.fabric.pod_nodes or switch_radix",
                           spec.nodes, pod_nodes, pods, radix, radix, radix * pod_nodes));
    return false;
  }
  shape->pods = static_cast<int>(pods);
  shape->leaves_per_pod = static_cast<int>(leaves_per_pod);
  shape->leaves = static_cast<int>(pods * leaves_per_pod);
  shape->down_ports_per_leaf = static_cast<int>(d);
  shape->up_ports_per_leaf = static_cast<int>(ports.up);
  shape->spines_per_pod = SpineCount(leaves_per_pod, ports.up, s);
  shape->spines = static_cast<int>(pods) * shape->spines_per_pod;
  shape->links_per_leaf_spine = static_cast<int>(ports.up / shape->spines_per_pod);
  shape->spine_ports = static_cast<int>(s);
  if (pods > 1) {
    shape->cores_per_plane = SpineCount(pods, s, radix);
    shape->cores = shape->spines_per_pod * shape->cores_per_plane;
    shape->links_per_spine_core = static_cast<int>(s / shape->cores_per_plane);
  }
  return true;
}

// Validates the fabric fields and the cluster size; fills `plan` when they are valid.
void PlanFabric(const ClusterSpec& spec, ErrorList& errors, FabricPlan* plan) {
  const NodeSpec& n = spec.node;
  const size_t errors_before = errors.size();
  const LeafPorts ports = ValidateFabricFields(spec, errors);
  if (errors.size() != errors_before || n.gpus < 1 || n.nics < 0 || n.pcie_switches < 1) return;

  // Per-node counts; all products in int64 (each factor is already bounded above).
  const bool clos = spec.fabric.kind == FabricKind::kClos;
  const bool multi_level = clos || spec.fabric.kind == FabricKind::kFatTree ||
                           spec.fabric.kind == FabricKind::kRailOptimized;
  const int64_t nodes = spec.nodes;
  const bool plane = n.nvlink_bandwidth.bytes_per_second() > 0 && n.gpus >= 2;
  const bool has_nvme = n.nvme_capacity > Bytes::Zero();
  const int64_t node_vertices =
      n.gpus + (plane ? 1 : 0) + n.pcie_switches + n.nics + 1 + (has_nvme ? 1 : 0);
  const int64_t node_cables = (plane ? n.gpus : 0) + n.gpus + n.nics + n.pcie_switches +
                              (has_nvme ? 1 : 0) + (multi_level ? n.nics : 0);
  FabricShape shape;
  if (clos ? !ShapeClos(spec, ports, errors, &shape)
           : multi_level && !ShapeTwoLevelFabric(spec, ports, errors, &shape)) {
    return;
  }
  plan->shape = shape;
  plan->vertices = nodes * node_vertices + shape.leaves + shape.spines + shape.cores;
  const int64_t spine_core_cables = shape.cores > 0 ? int64_t{shape.spines} * shape.spine_ports : 0;
  plan->links = 2 * (nodes * node_cables + int64_t{shape.leaves} * shape.up_ports_per_leaf +
                     spine_core_cables);
  if (plan->vertices > kMaxVertices) {
    errors.Add("cluster.nodes", std::to_string(nodes),
               fmt::format("the graph would have {} vertices; at most {} are allowed",
                           plan->vertices, kMaxVertices));
  }
  if (plan->links > kMaxLinks) {
    errors.Add("cluster.nodes", std::to_string(nodes),
               fmt::format("the graph would have {} directed links; at most {} are allowed",
                           plan->links, kMaxLinks));
  }
}

void BuildNodes(const ClusterSpec& spec, ClusterData& g, std::vector<VertexId>& nic_ids) {
  const NodeSpec& n = spec.node;
  const bool plane = n.nvlink_bandwidth.bytes_per_second() > 0 && n.gpus >= 2;
  const bool has_nvme = n.nvme_capacity > Bytes::Zero();
  g.InitNodes(spec.nodes);
  nic_ids.reserve(static_cast<size_t>(spec.nodes) * n.nics);
  std::vector<VertexId> gpus(n.gpus), pcie(n.pcie_switches);
  for (int node = 0; node < spec.nodes; ++node) {
    const std::string pre = fmt::format("node{}/", node);
    for (int i = 0; i < n.gpus; ++i) {
      gpus[i] = g.AddVertex(VertexKind::kGpu, fmt::format("{}gpu{}", pre, i), node, i,
                            n.gpu.hbm_capacity);
    }
    VertexId nvswitch;
    if (plane) {
      nvswitch = g.AddVertex(VertexKind::kNvSwitch, pre + "nvswitch", node, 0, Bytes::Zero());
    }
    for (int s = 0; s < n.pcie_switches; ++s) {
      pcie[s] = g.AddVertex(VertexKind::kPcieSwitch, fmt::format("{}pcie{}", pre, s), node, s,
                            Bytes::Zero());
    }
    const size_t first_nic = nic_ids.size();
    for (int j = 0; j < n.nics; ++j) {
      nic_ids.push_back(
          g.AddVertex(VertexKind::kNic, fmt::format("{}nic{}", pre, j), node, j, Bytes::Zero()));
    }
    const VertexId host =
        g.AddVertex(VertexKind::kHostMemory, pre + "host", node, 0, n.host_memory);
    VertexId nvme;
    if (has_nvme) nvme = g.AddVertex(VertexKind::kNvme, pre + "nvme", node, 0, n.nvme_capacity);

    for (int i = 0; i < n.gpus; ++i) {
      if (plane) {
        g.AddDuplex(gpus[i], nvswitch, LinkKind::kNvlink, n.nvlink_bandwidth, n.nvlink_latency);
      }
      const int s = static_cast<int>(int64_t{i} * n.pcie_switches / n.gpus);
      g.AddDuplex(gpus[i], pcie[s], LinkKind::kPcie, n.pcie_bandwidth, n.pcie_latency);
    }
    for (int j = 0; j < n.nics; ++j) {
      const int s = static_cast<int>(int64_t{j} * n.pcie_switches / n.nics);
      g.AddDuplex(nic_ids[first_nic + j], pcie[s], LinkKind::kPcie, n.pcie_bandwidth,
                  n.pcie_latency);
    }
    for (int s = 0; s < n.pcie_switches; ++s) {
      g.AddDuplex(pcie[s], host, LinkKind::kPcie, n.pcie_bandwidth, n.pcie_latency);
    }
    if (has_nvme) {
      g.AddDuplex(nvme, host, LinkKind::kMemory, n.nvme_bandwidth, n.pcie_latency);
    }
  }
}

// Adds the leaves and spines of `plan` and cables NICs to leaves and leaves to spines.
// `leaf_of_nic(k)` gives the leaf index of the k-th NIC in nic_ids order.
template <typename LeafOf>
void BuildFabric(const ClusterSpec& spec, const FabricShape& shape,
                 const std::vector<VertexId>& nic_ids, LeafOf leaf_of_nic, ClusterData& g) {
  const NodeSpec& n = spec.node;
  const Bandwidth link_bw = spec.fabric.link_bandwidth.bytes_per_second() > 0
                                ? spec.fabric.link_bandwidth
                                : n.nic_bandwidth;
  std::vector<VertexId> leaves(shape.leaves), spines(shape.spines);
  for (int l = 0; l < shape.leaves; ++l) {
    const std::string name =
        shape.rails > 0
            ? fmt::format("rail{}/leaf{}", l / shape.leaves_per_rail, l % shape.leaves_per_rail)
            : fmt::format("leaf{}", l);
    leaves[l] = g.AddVertex(VertexKind::kSwitch, name, -1, l, Bytes::Zero());
  }
  for (int s = 0; s < shape.spines; ++s) {
    spines[s] = g.AddVertex(VertexKind::kSwitch, fmt::format("spine{}", s), -1, s, Bytes::Zero());
  }
  for (size_t k = 0; k < nic_ids.size(); ++k) {
    g.AddDuplex(nic_ids[k], leaves[leaf_of_nic(k)], LinkKind::kNetwork, n.nic_bandwidth,
                n.nic_latency);
  }
  for (int l = 0; l < shape.leaves; ++l) {
    for (int s = 0; s < shape.spines; ++s) {
      for (int c = 0; c < shape.links_per_leaf_spine; ++c) {
        g.AddDuplex(leaves[l], spines[s], LinkKind::kFabric, link_bw, spec.fabric.switch_latency);
      }
    }
  }
}

// Adds the leaves, spines and cores of a three-tier Clos and cables them (file comment).
void BuildClosFabric(const ClusterSpec& spec, const FabricShape& shape,
                     const std::vector<VertexId>& nic_ids, ClusterData& g) {
  const NodeSpec& n = spec.node;
  const FabricSpec& f = spec.fabric;
  const Bandwidth link_bw =
      f.link_bandwidth.bytes_per_second() > 0 ? f.link_bandwidth : n.nic_bandwidth;
  const int lp = shape.leaves_per_pod, sp = shape.spines_per_pod;
  std::vector<VertexId> leaves(shape.leaves), spines(shape.spines), cores(shape.cores);
  for (int l = 0; l < shape.leaves; ++l) {
    leaves[l] = g.AddVertex(VertexKind::kSwitch, fmt::format("pod{}/leaf{}", l / lp, l % lp), -1, l,
                            Bytes::Zero());
  }
  for (int s = 0; s < shape.spines; ++s) {
    spines[s] = g.AddVertex(VertexKind::kSwitch, fmt::format("pod{}/spine{}", s / sp, s % sp), -1,
                            s, Bytes::Zero());
  }
  for (int c = 0; c < shape.cores; ++c) {
    cores[c] = g.AddVertex(
        VertexKind::kSwitch,
        fmt::format("plane{}/core{}", c / shape.cores_per_plane, c % shape.cores_per_plane), -1, c,
        Bytes::Zero());
  }
  const int64_t pod_ports = int64_t{std::min(f.pod_nodes, spec.nodes)} * n.nics;
  for (size_t k = 0; k < nic_ids.size(); ++k) {
    const int64_t pod = static_cast<int64_t>(k) / pod_ports;
    const int64_t leaf =
        pod * lp + (static_cast<int64_t>(k) - pod * pod_ports) / shape.down_ports_per_leaf;
    g.AddDuplex(nic_ids[k], leaves[leaf], LinkKind::kNetwork, n.nic_bandwidth, n.nic_latency);
  }
  const auto cable = [&](VertexId a, VertexId b, int count, Bandwidth bw) {
    for (int c = 0; c < count; ++c) g.AddDuplex(a, b, LinkKind::kFabric, bw, f.switch_latency);
  };
  for (int l = 0; l < shape.leaves; ++l) {
    for (int s = 0; s < sp; ++s) {
      cable(leaves[l], spines[(l / lp) * sp + s], shape.links_per_leaf_spine, link_bw);
    }
  }
  const Bandwidth core_bw = link_bw / f.pod_oversubscription;
  for (int s = 0; s < shape.spines && shape.cores > 0; ++s) {
    for (int c = 0; c < shape.cores_per_plane; ++c) {
      cable(spines[s], cores[(s % sp) * shape.cores_per_plane + c], shape.links_per_spine_core,
            core_bw);
    }
  }
}

// Reachability (see the file comment). `path` prefixes the messages.
void CheckReachability(const ClusterData& g, const std::string& path, ErrorList& errors) {
  if (g.gpus.empty()) return;
  const auto n = boost::num_vertices(g.graph);
  const auto index = boost::get(boost::vertex_index, g.graph);
  std::vector<boost::default_color_type> fwd(n, boost::white_color), rev(n, boost::white_color);
  const auto root = static_cast<internal::Graph::vertex_descriptor>(g.gpus[0].value);
  boost::breadth_first_search(
      g.graph, root, boost::color_map(boost::make_iterator_property_map(fwd.begin(), index)));
  const auto reversed = boost::make_reverse_graph(g.graph);
  boost::breadth_first_search(
      reversed, root, boost::color_map(boost::make_iterator_property_map(rev.begin(), index)));

  constexpr int kMaxReported = 10;
  int problems = 0;
  const std::string& root_name = g.graph[root].name;
  const auto report = [&](VertexId v, const char* what) {
    const size_t i = static_cast<size_t>(v.value);
    const bool reached = fwd[i] != boost::white_color;
    const bool reaches = rev[i] != boost::white_color;
    if (reached && reaches) return;
    if (++problems > kMaxReported) return;
    const char* dir = !reached && !reaches ? "neither reaches nor is reached from"
                      : !reached           ? "is not reached from"
                                           : "does not reach";
    errors.Add(path, fmt::format("{} \"{}\"", what, g.graph[i].name),
               fmt::format("{} GPU \"{}\"; every GPU must reach, in both directions, every "
                           "other GPU and its node's host memory",
                           dir, root_name));
  };
  for (VertexId v : g.gpus) report(v, "GPU");
  for (size_t node = 0; node < g.node_gpus.size(); ++node) {
    if (!g.node_gpus[node].empty() && g.host_memory[node].valid()) {
      report(g.host_memory[node], "host memory");
    }
  }
  if (problems > kMaxReported) {
    errors.Add(path, fmt::format("{} more unreachable vertices", problems - kMaxReported),
               "not listed");
  }
}

StatusOr<Cluster> BuildGenerated(const ClusterSpec& spec) {
  ErrorList errors;
  ValidateNode(spec.node, errors);
  FabricPlan plan;
  PlanFabric(spec, errors, &plan);
  if (!errors.empty()) return errors.ToStatus();

  auto data = std::make_unique<ClusterData>();
  data->spec = spec;
  data->fabric = plan.shape;
  data->links.reserve(static_cast<size_t>(plan.links));
  data->by_name.reserve(static_cast<size_t>(plan.vertices));
  std::vector<VertexId> nic_ids;
  BuildNodes(spec, *data, nic_ids);
  const FabricShape& shape = plan.shape;
  const int nics = spec.node.nics;
  if (spec.fabric.kind == FabricKind::kFatTree) {
    const int d = shape.down_ports_per_leaf;
    BuildFabric(
        spec, shape, nic_ids, [d](size_t k) { return static_cast<int>(k / d); }, *data);
  } else if (spec.fabric.kind == FabricKind::kRailOptimized) {
    const int d = shape.down_ports_per_leaf;
    const int per_rail = shape.leaves_per_rail;
    BuildFabric(
        spec, shape, nic_ids,
        [=](size_t k) {
          const int node = static_cast<int>(k / nics), rail = static_cast<int>(k % nics);
          return rail * per_rail + node / d;
        },
        *data);
  } else if (spec.fabric.kind == FabricKind::kClos) {
    BuildClosFabric(spec, shape, nic_ids, *data);
  }
  data->Finalize();
  CheckReachability(*data, "cluster", errors);
  if (!errors.empty()) return errors.ToStatus();
  return internal::ClusterAccess::Make(std::move(data));
}

// Size limits of an explicit graph, from the list lengths alone.
void CheckExplicitSize(const ClusterSpec& spec, ErrorList& errors) {
  if (static_cast<int64_t>(spec.vertices.size()) > kMaxVertices) {
    errors.Add("cluster.vertices", fmt::format("{} vertices", spec.vertices.size()),
               fmt::format("at most {} are allowed", kMaxVertices));
  }
  int64_t directed = 0;
  for (const ExplicitLink& l : spec.links) directed += l.full_duplex ? 2 : 1;
  if (directed > kMaxLinks) {
    errors.Add("cluster.links", fmt::format("{} directed links", directed),
               fmt::format("at most {} are allowed", kMaxLinks));
  }
}

// The vertices of an explicit graph by name, and the highest node number they name.
struct ExplicitIndex {
  std::unordered_map<std::string, size_t> position;  // name -> position in spec.vertices
  int max_node = -1;
};

// Validates the vertices: unique names, node numbers in range, at most one host memory and
// one NVMe per node, a host memory wherever there are GPUs, and a bounded GPU count.
ExplicitIndex ValidateExplicitVertices(const ClusterSpec& spec, ErrorList& errors) {
  ExplicitIndex ex;
  std::unordered_map<std::string, size_t>& index = ex.position;
  index.reserve(spec.vertices.size());
  std::unordered_map<int, size_t> host_of_node, nvme_of_node;
  int64_t gpus = 0;
  for (size_t i = 0; i < spec.vertices.size(); ++i) {
    const ExplicitVertex& v = spec.vertices[i];
    const std::string p = fmt::format("cluster.vertices[{}]", i);
    if (v.name.empty()) {
      errors.Add(p + ".name", "\"\"", "must not be empty");
    } else if (auto [it, inserted] = index.emplace(v.name, i); !inserted) {
      errors.Add(p + ".name", fmt::format("\"{}\"", v.name),
                 fmt::format("duplicate name (first used by cluster.vertices[{}]); vertex names "
                             "must be unique",
                             it->second));
    }
    if (v.node < 0 || v.node >= kMaxNodes) {
      errors.Add(p + ".node", std::to_string(v.node),
                 fmt::format("must be between 0 and {}", kMaxNodes - 1));
      continue;
    }
    ex.max_node = std::max(ex.max_node, v.node);
    if (v.kind == VertexKind::kGpu) ++gpus;
    auto* table = v.kind == VertexKind::kHostMemory ? &host_of_node
                  : v.kind == VertexKind::kNvme     ? &nvme_of_node
                                                    : nullptr;
    if (table != nullptr) {
      if (auto [it, inserted] = table->emplace(v.node, i); !inserted) {
        errors.Add(p + ".kind", VertexKindName(v.kind),
                   fmt::format("node {} already has one (\"{}\"); at most one {} vertex per node",
                               v.node, spec.vertices[it->second].name, VertexKindName(v.kind)));
      }
    }
  }
  if (gpus == 0) {
    errors.Add("cluster.vertices", fmt::format("{} vertices", spec.vertices.size()),
               "must include at least one GPU");
  } else if (gpus > kMaxGpus) {
    errors.Add("cluster.vertices", fmt::format("{} GPUs", gpus),
               fmt::format("at most {} GPUs are allowed", kMaxGpus));
  }
  for (size_t i = 0; i < spec.vertices.size(); ++i) {
    const ExplicitVertex& v = spec.vertices[i];
    if (v.kind == VertexKind::kGpu && v.node >= 0 && v.node < kMaxNodes &&
        !host_of_node.contains(v.node)) {
      errors.Add(
          fmt::format("cluster.vertices[{}]", i), fmt::format("GPU \"{}\"", v.name),
          fmt::format("node {} has no host_memory vertex; every node with GPUs needs one", v.node));
    }
  }
  return ex;
}

// Validates the links: both ends name vertices, they differ, and bandwidth and latency are
// sound.
void ValidateExplicitLinks(const ClusterSpec& spec,
                           const std::unordered_map<std::string, size_t>& index,
                           ErrorList& errors) {
  const auto valid_names = [&] {
    std::vector<std::string> names;
    for (size_t i = 0; i < spec.vertices.size() && names.size() < 8; ++i) {
      names.push_back(fmt::format("\"{}\"", spec.vertices[i].name));
    }
    std::string list = JoinNames(names);
    if (spec.vertices.size() > names.size()) list += ", ...";
    return list;
  };
  for (size_t i = 0; i < spec.links.size(); ++i) {
    const ExplicitLink& l = spec.links[i];
    const std::string p = fmt::format("cluster.links[{}]", i);
    for (const auto& [field, name] : {std::pair{".from", &l.from}, std::pair{".to", &l.to}}) {
      if (!index.contains(*name)) {
        errors.Add(p + field, fmt::format("\"{}\"", *name),
                   fmt::format("unknown vertex; valid: {}", valid_names()));
      }
    }
    if (l.from == l.to && index.contains(l.from)) {
      errors.Add(p + ".to", fmt::format("\"{}\"", l.to), "a link must join two different vertices");
    }
    CheckBandwidth(errors, p + ".bandwidth", l.bandwidth, /*zero_ok=*/false);
    CheckLatency(errors, p + ".latency", l.latency);
  }
}

// The graph of a validated explicit spec, GPUs numbered within their node in list order.
std::unique_ptr<ClusterData> MakeExplicitGraph(const ClusterSpec& spec, const ExplicitIndex& ex) {
  const int max_node = ex.max_node;
  const std::unordered_map<std::string, size_t>& index = ex.position;
  auto data = std::make_unique<ClusterData>();
  data->spec = spec;
  data->InitNodes(max_node + 1);
  std::vector<int> local(max_node + 1, 0);
  for (const ExplicitVertex& v : spec.vertices) {
    Bytes capacity;
    int local_index = 0;
    if (v.kind == VertexKind::kGpu) {
      capacity = spec.node.gpu.hbm_capacity;
      local_index = local[v.node]++;
    } else if (v.kind == VertexKind::kHostMemory) {
      capacity = spec.node.host_memory;
    } else if (v.kind == VertexKind::kNvme) {
      capacity = spec.node.nvme_capacity;
    }
    data->AddVertex(v.kind, v.name, v.node, local_index, capacity);
  }
  for (const ExplicitLink& l : spec.links) {
    const VertexId a{static_cast<int32_t>(index.at(l.from))};
    const VertexId b{static_cast<int32_t>(index.at(l.to))};
    if (l.full_duplex) {
      data->AddDuplex(a, b, l.kind, l.bandwidth, l.latency);
    } else {
      data->AddLink(a, b, l.kind, l.bandwidth, l.latency);
    }
  }
  data->Finalize();
  return data;
}

StatusOr<Cluster> BuildExplicit(const ClusterSpec& spec) {
  ErrorList errors;
  CheckExplicitSize(spec, errors);
  if (!errors.empty()) return errors.ToStatus();
  ValidateDevice(spec.node.gpu, errors);
  const ExplicitIndex ex = ValidateExplicitVertices(spec, errors);
  ValidateExplicitLinks(spec, ex.position, errors);
  if (!errors.empty()) return errors.ToStatus();
  std::unique_ptr<ClusterData> data = MakeExplicitGraph(spec, ex);
  CheckReachability(*data, "cluster.links", errors);
  if (!errors.empty()) return errors.ToStatus();
  return internal::ClusterAccess::Make(std::move(data));
}

}  // namespace

StatusOr<Cluster> BuildCluster(const ClusterSpec& spec) {
  if (spec.fabric.kind == FabricKind::kExplicit) return BuildExplicit(spec);
  return BuildGenerated(spec);
}

}  // namespace placesim::topology
