#include "topology/dot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace placesim::topology {
namespace {

constexpr int kNumLinkKinds = static_cast<int>(LinkKind::kMemory) + 1;

// Colours a reader tells apart, also in grey print: NVLink green (NVIDIA's), PCIe blue,
// network orange, fabric (switch to switch) red, memory grey.
constexpr std::array<const char*, kNumLinkKinds> kLinkColours = {"#4d9221", "#2166ac", "#e08214",
                                                                 "#b2182b", "#878787"};

const char* Colour(LinkKind kind) { return kLinkColours[static_cast<int>(kind)]; }

// Top-down order in the picture: scale-out switches above NICs above intra-node switches
// above GPUs above memory. An edge goes from the higher to the lower so `dot` ranks them so.
int Level(VertexKind kind) {
  switch (kind) {
    case VertexKind::kSwitch:
      return 0;
    case VertexKind::kNic:
      return 1;
    case VertexKind::kNvSwitch:
    case VertexKind::kPcieSwitch:
      return 2;
    case VertexKind::kGpu:
      return 3;
    case VertexKind::kHostMemory:
    case VertexKind::kNvme:
      return 4;
  }
  return 4;
}

const char* Shape(VertexKind kind) {
  switch (kind) {
    case VertexKind::kGpu:
      return "box";
    case VertexKind::kHostMemory:
    case VertexKind::kNvme:
      return "cylinder";
    case VertexKind::kNic:
      return "ellipse";
    default:
      return "hexagon";
  }
}

// True for the one direction of a link that stands for the cable: the lower id of a
// full-duplex pair, or a simplex link.
bool DrawsCable(const Cluster& cluster, int id) {
  const LinkInfo& l = cluster.link(LinkId{id});
  return !(l.reverse.value >= 0 && l.reverse.value < id);
}

void WriteHeader(std::ostream& out) {
  out << "digraph placesim {\n"
         "  graph [fontname=\"Helvetica\", newrank=true, ranksep=0.8, nodesep=0.15];\n"
         "  node [fontname=\"Helvetica\", fontsize=10, style=filled, fillcolor=white];\n"
         "  edge [dir=none, penwidth=1.2];\n";
}

// The legend: one row per link kind present, with its per-direction bandwidths.
void WriteLegend(const Cluster& cluster, std::ostream& out) {
  std::array<std::set<int64_t>, kNumLinkKinds> bandwidths;
  for (int id = 0; id < cluster.num_links(); ++id) {
    const LinkInfo& l = cluster.link(LinkId{id});
    bandwidths[static_cast<int>(l.kind)].insert(
        static_cast<int64_t>(l.bandwidth.bytes_per_second()));
  }
  out << "  legend [shape=plaintext, fillcolor=none, label=<<table border=\"0\" "
         "cellspacing=\"2\"><tr><td colspan=\"2\"><b>links (per direction; thicker: several "
         "cables, hover for the count)</b></td></tr>";
  for (int k = 0; k < kNumLinkKinds; ++k) {
    if (bandwidths[k].empty()) continue;
    std::string values;
    for (int64_t bw : bandwidths[k]) {
      values += (values.empty() ? "" : ", ") +
                ToString(Bandwidth::BytesPerSecond(static_cast<double>(bw)));
    }
    out << fmt::format(
        "<tr><td><font color=\"{}\">&#9473;&#9473;&#9473;</font></td>"
        "<td align=\"left\">{} {}</td></tr>",
        kLinkColours[k], LinkKindName(static_cast<LinkKind>(k)), values);
  }
  out << "</table>>];\n";
}

void WriteVertex(const Cluster& cluster, int v, const std::string& indent, std::ostream& out) {
  const VertexInfo& info = cluster.vertex(VertexId{v});
  out << fmt::format("{}v{} [label=\"{}\", shape={}, tooltip=\"{} ({})\"];\n", indent, v,
                     DotEscape(info.name), Shape(info.kind), DotEscape(info.name),
                     VertexKindName(info.kind));
}

// `minlen` > 1 pushes the head that many ranks down (the node-level picture staggers nodes).
void WriteEdge(const std::string& a, const std::string& b, const LinkInfo& l, int count,
               bool simplex, int minlen, std::ostream& out) {
  std::string what = fmt::format("{} {}", LinkKindName(l.kind), ToString(l.bandwidth));
  if (count > 1) what = fmt::format("{} x {}", count, what);
  out << fmt::format(
      "  {} -> {} [color=\"{}\", tooltip=\"{}\"{}{}{}];\n", a, b, Colour(l.kind), what,
      count > 1 ? fmt::format(", penwidth={:.1f}", 1.2 + std::log2(count)) : "",
      simplex ? ", dir=forward" : "", minlen > 1 ? fmt::format(", minlen={}", minlen) : "");
}

// Orients a cable so the higher level is the tail (drawn above).
// Between vertices of one level (leaf and spine switches) the later-built one is the tail:
// the builders (cluster.cc) add spines after leaves, so spines are drawn on top.
std::pair<int, int> Oriented(const Cluster& cluster, const LinkInfo& l) {
  int from = l.from.value, to = l.to.value;
  const int from_level = Level(cluster.vertex(l.from).kind);
  const int to_level = Level(cluster.vertex(l.to).kind);
  if (to_level < from_level || (to_level == from_level && to > from)) std::swap(from, to);
  return {from, to};
}

void WriteGpuLevel(const Cluster& cluster, std::ostream& out) {
  std::map<int, std::vector<int>> by_node;
  for (int v = 0; v < cluster.num_vertices(); ++v)
    by_node[cluster.vertex(VertexId{v}).node].push_back(v);
  for (const auto& [node, vertices] : by_node) {
    if (node < 0) {
      for (int v : vertices) WriteVertex(cluster, v, "  ", out);
      continue;
    }
    out << fmt::format(
        "  subgraph cluster_node{} {{\n    label=\"node {}\"; style=rounded; "
        "color=\"#999999\";\n",
        node, node);
    for (int v : vertices) WriteVertex(cluster, v, "    ", out);
    out << "  }\n";
  }
  for (int id = 0; id < cluster.num_links(); ++id) {
    if (!DrawsCable(cluster, id)) continue;
    const LinkInfo& l = cluster.link(LinkId{id});
    bool simplex = l.reverse.value < 0;
    auto [from, to] =
        simplex ? std::pair<int, int>{l.from.value, l.to.value} : Oriented(cluster, l);
    WriteEdge(fmt::format("v{}", from), fmt::format("v{}", to), l, 1, simplex, 1, out);
  }
}

void WriteNodeLevel(const Cluster& cluster, std::ostream& out) {
  std::map<int, int> gpus_per_node;
  for (int v = 0; v < cluster.num_vertices(); ++v) {
    const VertexInfo& info = cluster.vertex(VertexId{v});
    if (info.node < 0) {
      WriteVertex(cluster, v, "  ", out);
    } else {
      gpus_per_node[info.node] += info.kind == VertexKind::kGpu ? 1 : 0;
    }
  }
  for (const auto& [node, gpus] : gpus_per_node) {
    out << fmt::format("  n{} [label=\"node {}\\n{} GPUs\", shape=box3d];\n", node, node, gpus);
  }
  // Cables that leave a node, folded per (end, end, kind, bandwidth); cables inside a node
  // are not drawn.
  std::map<std::tuple<std::string, std::string, int, int64_t>, std::pair<int, LinkId>> cables;
  for (int id = 0; id < cluster.num_links(); ++id) {
    if (!DrawsCable(cluster, id)) continue;
    const LinkInfo& l = cluster.link(LinkId{id});
    auto [from, to] = Oriented(cluster, l);
    const VertexInfo& a = cluster.vertex(VertexId{from});
    const VertexInfo& b = cluster.vertex(VertexId{to});
    if (a.node >= 0 && a.node == b.node) continue;
    auto end = [](int v, const VertexInfo& info) {
      return info.node < 0 ? fmt::format("v{}", v) : fmt::format("n{}", info.node);
    };
    auto key = std::make_tuple(end(from, a), end(to, b), static_cast<int>(l.kind),
                               static_cast<int64_t>(l.bandwidth.bytes_per_second()));
    auto& [count, link] = cables[key];
    if (count++ == 0) link = LinkId{id};
  }
  // One row of 128 nodes is a picture 30,000 pixels wide; staggering the nodes over rows of
  // about kNodesPerRow (by their index, so neighbours sit on different rows) keeps it
  // within a few screens.
  constexpr int kNodesPerRow = 32;
  const int rows =
      std::max<int>(1, (static_cast<int>(gpus_per_node.size()) + kNodesPerRow - 1) / kNodesPerRow);
  for (const auto& [key, value] : cables) {
    const LinkInfo& l = cluster.link(value.second);
    const std::string& head = std::get<1>(key);
    const int minlen = head[0] == 'n' ? 1 + std::stoi(head.substr(1)) % rows : 1;
    WriteEdge(std::get<0>(key), head, l, value.first, l.reverse.value < 0, minlen, out);
  }
}

}  // namespace

std::string DotEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void WriteReadableDot(const Cluster& cluster, std::ostream& out, DotLevel level) {
  if (level == DotLevel::kAuto) {
    level = cluster.num_gpus() > kMaxGpusPerGpuDot ? DotLevel::kNode : DotLevel::kGpu;
  }
  WriteHeader(out);
  if (level == DotLevel::kGpu) {
    WriteGpuLevel(cluster, out);
  } else {
    WriteNodeLevel(cluster, out);
  }
  WriteLegend(cluster, out);
  out << "}\n";
}

}  // namespace placesim::topology
