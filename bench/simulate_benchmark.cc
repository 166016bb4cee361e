// Cost of `placesim simulate`: the executor replaying one training step on the event engine
// and the flow network, on the simulator's reference workloads. Targets (one core):
//   RingAllReduce1MiB1024Gpus        < 0.1 s  a 1 MiB ring all-reduce over 1024 GPUs behind
//                                              one switch of 400 GB/s links (1024 flows)
//   SimulateGpt32lFsdp64Gpus         < 0.5 s  examples/gpt-32l-fsdp-64gpu.textproto
//   SimulateLlama3_70bZero3_1024Gpus < 2 s    examples/llama3-70b-zero3-1024gpu.textproto,
//                                     < 1 GB  peak resident memory
// Setup (loading the scenario, building the cluster graph) is outside the timed loop; each
// iteration is one SimulateStep / ExecuteSchedule call with the flow network model (the
// default) and memory tracking (always on). The analytic variants show the price of
// contention modeling.
//
// Counters:
//   sim_step_s   the simulated step time (a sanity check that the workload is the intended one)
//   events       engine events handled per step; items/s is events per wall-clock second
//   peak_rss_MiB the process's peak resident set (VmHWM) when the benchmark ends. The mark
//                is reset before each benchmark (/proc/self/clear_refs), but only down to the
//                resident set the process still holds, which includes what earlier benchmarks
//                freed to the allocator and the baseline (binary, libraries, about 8 MiB); run
//                one benchmark alone (--benchmark_filter) for its own figure. Zero where /proc
//                is not available.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "base/check.h"
#include "base/status.h"
#include "base/units.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "strategies/schedule.h"
#include "topology/cluster.h"
#include "topology/presets.h"

namespace placesim::sim {
namespace {

// Resets the kernel's peak-RSS mark of this process to its current RSS (Linux >= 4.0).
void ResetPeakRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (clear_refs) clear_refs << "5";
}

// VmHWM of /proc/self/status in MiB; 0 when unavailable.
double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    int64_t kib = 0;
    fields >> kib;
    return static_cast<double>(kib) / 1024.0;
  }
  return 0.0;
}

std::string Example(const char* name) {
  return std::string(PLACESIM_SOURCE_DIR) + "/examples/" + name;
}

// A single node of 1024 H100s on one NVSwitch plane, 400 GB/s per GPU per direction: every
// ring edge crosses its sender's uplink and its receiver's downlink, and no two edges share a
// link, so all 1024 flows run at 400 GB/s.
topology::Cluster OneSwitch1024Gpus() {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = 1024;
  spec.node.nvlink_bandwidth = GBps(400);
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  PLACESIM_CHECK(cluster.ok());
  return std::move(cluster).value();
}

// One ring all-reduce of `buffer` bytes over the whole dp axis of `n` ranks.
strategies::Schedule OneAllReduce(int n, Bytes buffer) {
  strategies::Schedule s;
  s.role = "all ranks";
  s.ranks = n;
  strategies::Op op;
  op.kind = strategies::OpKind::kCollective;
  op.stream = strategies::Stream::kComm;
  op.collective = strategies::CollectiveKind::kAllReduce;
  op.group_size = n;
  op.buffer_bytes = buffer;
  op.bytes = Bytes::Count(2 * (n - 1) * buffer.count() / n);
  s.ops.push_back(op);
  return s;
}

void ReportCounters(benchmark::State& state, Duration step_time, uint64_t events) {
  state.counters["sim_step_s"] = step_time.ToSeconds();
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_rss_MiB"] = PeakRssMiB();
  state.SetItemsProcessed(static_cast<int64_t>(events) * state.iterations());
}

void BM_RingAllReduce1MiB1024Gpus(benchmark::State& state) {
  const int n = 1024;
  const topology::Cluster cluster = OneSwitch1024Gpus();
  const strategies::Schedule schedule = OneAllReduce(n, MiB(1));
  ExecutionContext context;
  context.mesh.dp = n;
  ExecutorOptions options;
  options.network = static_cast<NetworkModel>(state.range(0));
  ResetPeakRss();
  Duration step_time;
  uint64_t events = 0;
  for (auto _ : state) {
    StatusOr<RoleResult> r = ExecuteSchedule(cluster, schedule, context, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    step_time = r->step_time;
    events = r->events;
    benchmark::DoNotOptimize(step_time);
  }
  ReportCounters(state, step_time, events);
}

// Loads an example and simulates one step per iteration.
void SimulateExample(benchmark::State& state, const char* example) {
  StatusOr<Scenario> scenario = LoadScenarioFile(Example(example), {});
  if (!scenario.ok()) {
    state.SkipWithError(scenario.status().message().c_str());
    return;
  }
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(scenario->cluster);
  if (!cluster.ok()) {
    state.SkipWithError(cluster.status().message().c_str());
    return;
  }
  ExecutorOptions options;
  options.network = static_cast<NetworkModel>(state.range(0));
  ResetPeakRss();
  Duration step_time;
  uint64_t events = 0;
  for (auto _ : state) {
    StatusOr<SimResult> r =
        SimulateStep(*cluster, scenario->model, scenario->training, scenario->strategy, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    step_time = r->step_time;
    events = 0;
    for (const RoleResult& role : r->roles) events += role.events;
    benchmark::DoNotOptimize(step_time);
  }
  ReportCounters(state, step_time, events);
}

void BM_SimulateGpt32lFsdp64Gpus(benchmark::State& state) {
  SimulateExample(state, "gpt-32l-fsdp-64gpu.textproto");
}
void BM_SimulateLlama3_70bZero3_1024Gpus(benchmark::State& state) {
  SimulateExample(state, "llama3-70b-zero3-1024gpu.textproto");
}
void BM_SimulateLlama3_8bFsdp8Gpus(benchmark::State& state) {
  SimulateExample(state, "llama3-8b-fsdp.textproto");
}

constexpr int64_t kFlow = static_cast<int64_t>(NetworkModel::kFlow);
constexpr int64_t kAnalytic = static_cast<int64_t>(NetworkModel::kAnalytic);

BENCHMARK(BM_RingAllReduce1MiB1024Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateGpt32lFsdp64Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateLlama3_70bZero3_1024Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateLlama3_8bFsdp8Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace placesim::sim

BENCHMARK_MAIN();
