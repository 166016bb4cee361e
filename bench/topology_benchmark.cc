// Topology benchmarks: building a 128-node DGX-H100 fat-tree cluster, routing between random
// GPU pairs without and with the Router's cache, and a Router's first look-ups of an
// all-to-all's NIC pairs. Items/s = clusters built or routes returned per second. Fixed
// seeds, so every run asks for the same pairs.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/routing.h"

namespace placesim::topology {
namespace {

ClusterSpec FatTreeSpec(int nodes) {
  ClusterSpec spec;
  spec.node = *FindNodePreset("DGX-H100");
  spec.nodes = nodes;
  spec.fabric.kind = FabricKind::kFatTree;
  spec.fabric.switch_radix = 64;
  spec.fabric.switch_latency = Nanoseconds(300);
  return spec;
}

std::vector<std::pair<VertexId, VertexId>> RandomGpuPairs(const Cluster& c, int n) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> pick(0, c.num_gpus() - 1);
  std::vector<std::pair<VertexId, VertexId>> pairs(n);
  for (auto& p : pairs) p = {c.gpu(pick(rng)), c.gpu(pick(rng))};
  return pairs;
}

void BM_BuildFatTree(benchmark::State& state) {
  const ClusterSpec spec = FatTreeSpec(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    StatusOr<Cluster> c = BuildCluster(spec);
    if (!c.ok()) {
      state.SkipWithError(c.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(c->num_links());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BuildFatTree)->Arg(128)->Unit(benchmark::kMillisecond);

// Every look-up is a fresh search (no cache).
void BM_RouteUncached(benchmark::State& state) {
  StatusOr<Cluster> c = BuildCluster(FatTreeSpec(static_cast<int>(state.range(0))));
  if (!c.ok()) {
    state.SkipWithError(c.status().message().c_str());
    return;
  }
  const auto pairs = RandomGpuPairs(*c, 4096);
  size_t i = 0;
  for (auto _ : state) {
    std::optional<Route> r = FindRoute(*c, pairs[i].first, pairs[i].second);
    benchmark::DoNotOptimize(r);
    i = (i + 1) % pairs.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RouteUncached)->Arg(128);

// A Router whose cache already holds every pair asked for: one hash look-up per route.
void BM_RouteCached(benchmark::State& state) {
  StatusOr<Cluster> c = BuildCluster(FatTreeSpec(static_cast<int>(state.range(0))));
  if (!c.ok()) {
    state.SkipWithError(c.status().message().c_str());
    return;
  }
  const auto pairs = RandomGpuPairs(*c, 4096);
  Router router(*c);
  for (const auto& [a, b] : pairs) benchmark::DoNotOptimize(router.Find(a, b));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(router.Find(pairs[i].first, pairs[i].second));
    i = (i + 1) % pairs.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RouteCached)->Arg(128);

// A fresh Router asked once for every ordered pair of the 64 NICs of 8 nodes, one node per
// leaf (nodes 0, 16, ..., 112 of the 128-node fat tree, 4 nodes a leaf): the NIC-to-NIC legs
// of an expert-parallel all-to-all over 64 GPUs, every pair crossing the spines, 64 pairs
// per pair of leaves. Includes the Router's construction. Items/s = routes.
void BM_RouterAllToAll(benchmark::State& state) {
  StatusOr<Cluster> c = BuildCluster(FatTreeSpec(static_cast<int>(state.range(0))));
  if (!c.ok()) {
    state.SkipWithError(c.status().message().c_str());
    return;
  }
  std::vector<VertexId> nics;
  for (int node = 0; node < c->spec().nodes; node += c->spec().nodes / 8) {
    for (int j = 0; j < c->spec().node.nics; ++j) {
      nics.push_back(*c->FindVertex("node" + std::to_string(node) + "/nic" + std::to_string(j)));
    }
  }
  for (auto _ : state) {
    Router router(*c);
    for (VertexId a : nics) {
      for (VertexId b : nics) {
        if (a != b) benchmark::DoNotOptimize(router.Find(a, b));
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(nics.size()) *
                          static_cast<int64_t>(nics.size() - 1));
}
BENCHMARK(BM_RouterAllToAll)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace placesim::topology

BENCHMARK_MAIN();
