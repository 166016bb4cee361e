// Cluster accessors and the graph storage helpers of internal::ClusterData.
// Thread-safety: Cluster is immutable once built; see cluster.h.
#include "topology/cluster.h"

#include <utility>

#include "topology/internal/graph.h"

namespace placesim::topology {
namespace internal {

VertexId ClusterData::AddVertex(VertexKind kind, std::string name, int node, int local_index,
                                Bytes capacity) {
  const auto v = static_cast<int32_t>(
      boost::add_vertex(VertexInfo{kind, name, node, local_index, capacity}, graph));
  by_name.emplace(std::move(name), v);
  ++vertex_count[static_cast<int>(kind)];
  const VertexId id{v};
  if (kind == VertexKind::kGpu) {
    gpu_index.resize(static_cast<size_t>(v) + 1, -1);
    gpu_index[v] = static_cast<int32_t>(gpus.size());
    gpus.push_back(id);
    if (node >= 0 && node < static_cast<int>(node_gpus.size())) node_gpus[node].push_back(id);
  } else if (kind == VertexKind::kHostMemory) {
    if (node >= 0 && node < static_cast<int>(host_memory.size())) host_memory[node] = id;
  } else if (kind == VertexKind::kNvme) {
    if (node >= 0 && node < static_cast<int>(nvme.size())) nvme[node] = id;
  }
  return id;
}

LinkId ClusterData::AddLink(VertexId from, VertexId to, LinkKind kind, Bandwidth bw,
                            Duration latency) {
  const LinkId id{static_cast<int32_t>(links.size())};
  boost::add_edge(from.value, to.value, EdgeProps{id.value}, graph);
  links.push_back(LinkInfo{from, to, kind, bw, latency, LinkId{}});
  ++link_count[static_cast<int>(kind)];
  return id;
}

LinkId ClusterData::AddDuplex(VertexId a, VertexId b, LinkKind kind, Bandwidth bw,
                              Duration latency) {
  const LinkId ab = AddLink(a, b, kind, bw, latency);
  const LinkId ba = AddLink(b, a, kind, bw, latency);
  links[ab.value].reverse = ba;
  links[ba.value].reverse = ab;
  return ab;
}

void ClusterData::InitNodes(int nodes) {
  node_gpus.assign(nodes, {});
  host_memory.assign(nodes, VertexId{});
  nvme.assign(nodes, VertexId{});
}

void ClusterData::Finalize() {
  const size_t n = boost::num_vertices(graph);
  in_begin.assign(n + 1, 0);
  out_begin.assign(n + 1, 0);
  for (const LinkInfo& l : links) {
    ++in_begin[l.to.value + 1];
    ++out_begin[l.from.value + 1];
  }
  for (size_t v = 0; v < n; ++v) {
    in_begin[v + 1] += in_begin[v];
    out_begin[v + 1] += out_begin[v];
  }
  in_links.assign(links.size(), -1);
  out_links.assign(links.size(), -1);
  std::vector<int32_t> in_next(in_begin.begin(), in_begin.end() - 1);
  std::vector<int32_t> out_next(out_begin.begin(), out_begin.end() - 1);
  for (size_t i = 0; i < links.size(); ++i) {
    in_links[in_next[links[i].to.value]++] = static_cast<int32_t>(i);
    out_links[out_next[links[i].from.value]++] = static_cast<int32_t>(i);
  }
  in_from.resize(links.size());
  for (size_t k = 0; k < in_links.size(); ++k) {
    in_from[k] = links[static_cast<size_t>(in_links[k])].from.value;
  }
  vertex_node.resize(n);
  for (size_t v = 0; v < n; ++v) vertex_node[v] = graph[v].node;
}

}  // namespace internal

Cluster::Cluster(std::unique_ptr<internal::ClusterData> data) : data_(std::move(data)) {}
Cluster::Cluster(const Cluster& other)
    : data_(std::make_unique<internal::ClusterData>(*other.data_)) {}
Cluster& Cluster::operator=(const Cluster& other) {
  if (this != &other) data_ = std::make_unique<internal::ClusterData>(*other.data_);
  return *this;
}
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;
Cluster::~Cluster() = default;

const ClusterSpec& Cluster::spec() const { return data_->spec; }
int Cluster::num_gpus() const { return static_cast<int>(data_->gpus.size()); }
int Cluster::num_nodes() const { return static_cast<int>(data_->host_memory.size()); }
int Cluster::num_vertices() const { return static_cast<int>(boost::num_vertices(data_->graph)); }
int Cluster::num_links() const { return static_cast<int>(data_->links.size()); }

VertexId Cluster::gpu(int index) const {
  PLACESIM_CHECK(index >= 0 && index < num_gpus());
  return data_->gpus[index];
}

int Cluster::gpu_index(VertexId v) const {
  if (!v.valid() || v.value >= static_cast<int32_t>(data_->gpu_index.size())) return -1;
  return data_->gpu_index[v.value];
}

std::span<const VertexId> Cluster::node_gpus(int node) const {
  PLACESIM_CHECK(node >= 0 && node < num_nodes());
  return data_->node_gpus[node];
}

VertexId Cluster::host_memory(int node) const {
  PLACESIM_CHECK(node >= 0 && node < num_nodes());
  return data_->host_memory[node];
}

VertexId Cluster::nvme(int node) const {
  PLACESIM_CHECK(node >= 0 && node < num_nodes());
  return data_->nvme[node];
}

const VertexInfo& Cluster::vertex(VertexId v) const {
  PLACESIM_CHECK(v.valid() && v.value < num_vertices());
  return data_->graph[v.value];
}

const LinkInfo& Cluster::link(LinkId l) const {
  PLACESIM_CHECK(l.valid() && l.value < num_links());
  return data_->links[l.value];
}

std::vector<LinkId> Cluster::out_links(VertexId v) const {
  PLACESIM_CHECK(v.valid() && v.value < num_vertices());
  std::vector<LinkId> out;
  for (auto [it, end] = boost::out_edges(v.value, data_->graph); it != end; ++it) {
    out.push_back(LinkId{data_->graph[*it].link});
  }
  return out;
}

std::vector<LinkId> Cluster::in_links(VertexId v) const {
  PLACESIM_CHECK(v.valid() && v.value < num_vertices());
  std::vector<LinkId> in;
  for (auto [it, end] = boost::in_edges(v.value, data_->graph); it != end; ++it) {
    in.push_back(LinkId{data_->graph[*it].link});
  }
  return in;
}

std::optional<VertexId> Cluster::FindVertex(std::string_view name) const {
  auto it = data_->by_name.find(std::string(name));
  if (it == data_->by_name.end()) return std::nullopt;
  return VertexId{it->second};
}

int Cluster::CountVertices(VertexKind kind) const {
  return data_->vertex_count[static_cast<int>(kind)];
}

int Cluster::CountLinks(LinkKind kind) const { return data_->link_count[static_cast<int>(kind)]; }

const FabricShape& Cluster::fabric_shape() const { return data_->fabric; }

}  // namespace placesim::topology
