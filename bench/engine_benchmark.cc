// The simulator's hot paths: the event queue (push/pop per second at 1k and 1M pending events),
// the flow solver (re-solves per second at 1k and 100k concurrent flows) and the Chrome trace
// writer (complete events per second). Reported as items/s.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/engine/event_queue.h"
#include "sim/network/flow_network.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::sim {
namespace {

// Steady state at a fixed queue size: each iteration pops the earliest event and pushes one
// a pseudo-random delay later (the classic "hold" model of event-set benchmarks).
void BM_EventQueueHold(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::mt19937_64 rng(1);
  EventQueue q;
  q.Reserve(static_cast<size_t>(n) + 1);
  for (int64_t i = 0; i < n; ++i) {
    Event e;
    e.time = Picoseconds(static_cast<int64_t>(rng() % 1'000'000));
    e.kind = static_cast<uint16_t>(i & 7);
    q.Push(e);
  }
  for (auto _ : state) {
    Event e = q.Pop();
    e.time += Picoseconds(static_cast<int64_t>(rng() % 1'000'000));
    q.Push(e);
  }
  state.SetItemsProcessed(state.iterations());  // one push + one pop per item
}
BENCHMARK(BM_EventQueueHold)->Arg(1'000)->Arg(1'000'000);

// The full loop: an engine dispatching on kind, each event scheduling its successor.
void BM_EngineRun(benchmark::State& state) {
  const int64_t n = state.range(0);
  struct Handler {
    uint64_t left;
    void operator()(Engine& e, const Event& ev) {
      if (left == 0) return;
      --left;
      switch (ev.kind) {
        case 0:
          e.ScheduleAfter(Picoseconds(7 + (ev.payload % 13)), 1, ev.target, ev.payload * 3 + 1);
          break;
        default:
          e.ScheduleAfter(Picoseconds(11 + (ev.payload % 5)), 0, ev.target, ev.payload + 2);
          break;
      }
    }
  };
  for (auto _ : state) {
    Engine engine;
    for (int64_t i = 0; i < n; ++i)
      engine.ScheduleAt(Picoseconds(i), 0, static_cast<uint32_t>(i), i);
    Handler h{static_cast<uint64_t>(10 * n)};
    auto end = engine.Run(h);
    benchmark::DoNotOptimize(end.ok());
  }
  state.SetItemsProcessed(state.iterations() * 11 * n);
}
BENCHMARK(BM_EngineRun)->Arg(1'000)->Arg(100'000);

// Flow solver: `flows` concurrent flows on random host -> leaf -> spine -> leaf -> host routes
// over a two-level fat tree (1024 hosts, 32 leaves, 16 spines; 2 or 4 links per route). Each
// iteration cancels the oldest flow, starts a new one, and re-solves the component they touch
// (the flows are large enough that none completes while measuring).
void BM_FlowResolve(benchmark::State& state) {
  const int64_t flows = state.range(0);
  constexpr int kHosts = 1024, kLeaves = 32, kSpines = 16, kHostsPerLeaf = kHosts / kLeaves;
  // Links: host up [0, H), host down [H, 2H), leaf->spine [2H, 2H + L*S), spine->leaf next.
  std::vector<LinkSpec> links;
  for (int i = 0; i < 2 * kHosts; ++i) links.push_back({Gbps(400), Duration::Zero()});
  for (int i = 0; i < 2 * kLeaves * kSpines; ++i) links.push_back({Gbps(1600), Duration::Zero()});
  auto net_or = FlowNetwork::Create(links);
  FlowNetwork net = std::move(net_or).value();
  std::mt19937_64 rng(3);
  auto random_route = [&]() {
    int src = static_cast<int>(rng() % kHosts), dst = static_cast<int>(rng() % kHosts);
    int ls = src / kHostsPerLeaf, ld = dst / kHostsPerLeaf;
    std::vector<LinkIndex> r = {static_cast<LinkIndex>(src)};
    if (ls != ld) {
      int s = static_cast<int>(rng() % kSpines);
      r.push_back(static_cast<LinkIndex>(2 * kHosts + ls * kSpines + s));
      r.push_back(static_cast<LinkIndex>(2 * kHosts + kLeaves * kSpines + ld * kSpines + s));
    }
    r.push_back(static_cast<LinkIndex>(kHosts + dst));
    return r;
  };
  std::vector<FlowId> live;  // a ring: the oldest flow leaves as a new one starts
  for (int64_t i = 0; i < flows; ++i)
    live.push_back(net.Start(SimTime::Zero(), random_route(), GB(1000)));
  net.NextEventTime();
  int64_t t = 0;
  size_t oldest = 0;
  for (auto _ : state) {
    t += 1000;
    net.Cancel(live[oldest]);
    live[oldest] = net.Start(Picoseconds(t), random_route(), GB(1000));
    oldest = (oldest + 1) % live.size();
    benchmark::DoNotOptimize(net.NextEventTime());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["flows_per_solve"] = static_cast<double>(net.solver_stats().last_component_flows);
}
BENCHMARK(BM_FlowResolve)->Arg(1'000)->Arg(100'000)->Unit(benchmark::kMicrosecond);

void BM_ChromeTraceComplete(benchmark::State& state) {
  std::ostringstream out;
  traces::ChromeTraceWriter w(out);
  int64_t i = 0;
  const traces::TraceArg args[] = {{"flops", int64_t{123456789}}, {"layer", "decoder.17"}};
  for (auto _ : state) {
    w.Complete(static_cast<uint32_t>(i & 7), 1, "attention.forward", "compute",
               Picoseconds(i * 1234567), Picoseconds(1234567), args);
    if ((++i & 0xffff) == 0) out.str({});
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ChromeTraceComplete);

}  // namespace
}  // namespace placesim::sim

BENCHMARK_MAIN();
