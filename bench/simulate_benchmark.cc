// Cost of `placesim simulate`: the executor replaying one training step on the event engine
// and the flow network, on the simulator's reference workloads. Targets (one core):
//   RingAllReduce1MiB1024Gpus        < 2 ms   a 1 MiB ring all-reduce over 1024 GPUs behind
//                                              one switch of 400 GB/s links (1024 flows)
//   RingAllReduce1MiBScaling         < 50 ms  the same from 64 to 16,384 GPUs (at 16,384)
//   SimulateGpt32lFsdp64Gpus         < 0.5 s  examples/gpt-32l-fsdp-64gpu.textproto
//   SimulateLlama3_70bZero3_1024Gpus < 2 s    examples/llama3-70b-zero3-1024gpu.textproto,
//                                     < 1 GB  peak resident memory
//   SimulateGpt32lDp4Tp4Pp4_64Gpus   < 0.2 s  the GPT of gpt-32l-fsdp-64gpu (32 layers, h 4096)
//                                              under dp 4 x tp 4 x pp 4 (1F1B) on 8 DGX-A100
//   SimulateAstraSimGpt64Gpus                  the job of the ASTRA-sim figure (15.5 s),
//                                              like for like; see its comment
//   PairwiseAllToAllFatTree                    four pairwise all-to-alls of 64 MiB in ep groups
//                                              of 16 (two DGX-H100 nodes), 1024 to 16,384 GPUs
//                                              on a fat tree: the flows of the MoE examples,
//                                              which share their GPUs' NIC links
//   SimulateNarayanan1t3072Gpus      < 10 s   examples/narayanan-1t-3072gpu.textproto (tp 8 x
//                                     < 2 GB  pp 64 x dp 6, interleaved 1F1B over 1536 micro-
//                                              batches); one iteration, it is the longest run
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
#include "strategies/presets.h"
#include "strategies/schedule.h"
#include "strategies/spec.h"
#include "topology/cluster.h"
#include "topology/presets.h"
#include "topology/spec.h"

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

// A single node of `gpus` H100s (1024 in the reference workload) on one NVSwitch plane, 400 GB/s
// per GPU per direction: every ring edge crosses its sender's uplink and its receiver's downlink,
// and no two edges share a link, so all `gpus` flows run at 400 GB/s.
topology::Cluster OneSwitchGpus(int gpus) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = gpus;
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

// The "network" argument of the benchmarks: 0 the flow model, 1 the analytic one (the numbers
// name the runs in the stored baselines).
constexpr int64_t kFlow = 0;
constexpr int64_t kAnalytic = 1;
const char* NetworkModelArg(int64_t arg) { return arg == kAnalytic ? "analytic" : "flow"; }

void ReportCounters(benchmark::State& state, Duration step_time, uint64_t events) {
  state.counters["sim_step_s"] = step_time.ToSeconds();
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_rss_MiB"] = PeakRssMiB();
  state.SetItemsProcessed(static_cast<int64_t>(events) * state.iterations());
}

// Executes `schedule` once per iteration and reports the counters of the last run.
void ExecuteEachIteration(benchmark::State& state, const topology::Cluster& cluster,
                          const strategies::Schedule& schedule, const ExecutionContext& context,
                          const ExecutorOptions& options) {
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

// One 1 MiB ring all-reduce over `n` GPUs behind one switch, network model `network_arg`.
void RingAllReduce1MiB(benchmark::State& state, int n, int64_t network_arg) {
  const topology::Cluster cluster = OneSwitchGpus(n);
  const strategies::Schedule schedule = OneAllReduce(n, MiB(1));
  ExecutionContext context;
  context.mesh.dp = n;
  ExecutorOptions options;
  options.network = NetworkModelArg(network_arg);
  ExecuteEachIteration(state, cluster, schedule, context, options);
}

void BM_RingAllReduce1MiB1024Gpus(benchmark::State& state) {
  RingAllReduce1MiB(state, 1024, state.range(0));
}

// The same collective from 64 to 16,384 GPUs: its cost against N (targets: < 2 ms at 1024,
// < 50 ms at 16,384; a collective must cost O(N log N) or better in the engine and solver).
void BM_RingAllReduce1MiBScaling(benchmark::State& state) {
  RingAllReduce1MiB(state, static_cast<int>(state.range(0)), kFlow);
}

// `gpus` DGX-H100s (8 a node) on a two-level fat tree whose switch radix is the smallest
// power of two that holds the NICs, as bench/scale_curve.sh scales the examples.
topology::Cluster FatTreeGpus(int gpus) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.nodes = gpus / 8;
  spec.fabric.kind = topology::FabricKind::kFatTree;
  int radix = 4;
  while (radix * radix / 2 < gpus) radix *= 2;
  spec.fabric.switch_radix = radix;
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  PLACESIM_CHECK(cluster.ok());
  return std::move(cluster).value();
}

// Four all-to-alls of 64 MiB in the ep groups of 16 ranks that tile `gpus` GPUs (each group
// two nodes, as in examples/qwen3-moe-235b-a22b-ep16.textproto), one after another on the
// comm stream: 15 flows a GPU each, 8 of them sharing its NIC link. Past a few thousand GPUs
// this is the flow network's cost per flow with crossing lists on most links of a route.
void BM_PairwiseAllToAllFatTree(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  constexpr int kEp = 16;
  const topology::Cluster cluster = FatTreeGpus(n);
  strategies::Schedule schedule;
  schedule.role = "all ranks";
  schedule.ranks = n;
  for (int i = 0; i < 4; ++i) {
    strategies::Op op;
    op.kind = strategies::OpKind::kCollective;
    op.stream = strategies::Stream::kComm;
    op.collective = strategies::CollectiveKind::kAllToAll;
    op.axis = topology::Axis::kExpert;
    op.group_size = kEp;
    op.buffer_bytes = MiB(64);
    op.bytes = Bytes::Count(MiB(64).count() * (kEp - 1) / kEp);
    schedule.ops.push_back(op);
  }
  ExecutionContext context;
  context.mesh.dp = n;
  context.mesh.ep = kEp;
  ExecutorOptions options;
  ExecuteEachIteration(state, cluster, schedule, context, options);
}

// Builds the cluster and simulates one step of the workload per iteration.
void SimulateWorkload(benchmark::State& state, const topology::ClusterSpec& spec,
                      const strategies::ModelSpec& model, const strategies::TrainingSpec& training,
                      const strategies::StrategySpec& strategy) {
  StatusOr<topology::Cluster> cluster = topology::BuildCluster(spec);
  if (!cluster.ok()) {
    state.SkipWithError(cluster.status().message().c_str());
    return;
  }
  ExecutorOptions options;
  options.network = NetworkModelArg(state.range(0));
  ResetPeakRss();
  Duration step_time;
  uint64_t events = 0;
  for (auto _ : state) {
    StatusOr<SimResult> r = SimulateStep(*cluster, model, training, strategy, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
    step_time = r->step_time;
    // Every role carries the events of the whole run (the lanes share one engine).
    events = r->roles.front().events;
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
  SimulateWorkload(state, scenario->cluster, scenario->model, scenario->training,
                   scenario->strategy);
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

// A GPT of 32 layers, hidden 4096, 32 heads, FFN 16384, sequence 2048.
strategies::ModelSpec Gpt32l(int64_t vocab) {
  strategies::ModelSpec model;
  model.name = "custom";
  strategies::TransformerSpec& t = model.transformer;
  t.layers = 32;
  t.hidden = 4096;
  t.heads = 32;
  t.kv_heads = 32;
  t.ffn_hidden = 16384;
  t.vocab = vocab;
  t.seq_len = 2048;
  return model;
}

// Simulates `model` under Megatron-LM's dp 4 x tp 4 x pp 4 (1F1B) on `spec`.
void SimulateDp4Tp4Pp4(benchmark::State& state, const topology::ClusterSpec& spec,
                       const strategies::ModelSpec& model, strategies::TrainingSpec training) {
  training.pipeline_schedule = strategies::PipelineSchedule::k1F1B;
  StatusOr<strategies::StrategySpec> strategy =
      strategies::ExpandStrategyPreset("megatron", {.dp = 4, .tp = 4, .pp = 4}, spec.node.gpus);
  if (!strategy.ok()) {
    state.SkipWithError(strategy.status().message().c_str());
    return;
  }
  SimulateWorkload(state, spec, model, training, *strategy);
}

// The GPT of examples/gpt-32l-fsdp-64gpu.textproto (32 layers, hidden 4096, MLP 16384, 32
// heads, sequence 2048, vocabulary 51200, tied embeddings) with Megatron-LM's 3D parallelism:
// tp 4 inside a node, pp 4 (8 layers a stage, 1F1B), dp 4, on 8 DGX-A100 nodes (64 A100s) of a
// rail-optimized fabric. "Batch 64, micro-batch 8" is read per data-parallel rank as in that
// example: 64 sequences per replica per step, global batch 64 x dp 4 = 256, so each pipeline
// runs 256 / (8 x 4) = 8 micro-batches of 8. Full recompute, as in that example: stage 0 of
// 1F1B keeps 4 micro-batches in flight, 32 layer checkpoints of 2 s b h = 134 MB (4.3 GB).
void BM_SimulateGpt32lDp4Tp4Pp4_64Gpus(benchmark::State& state) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-A100");
  spec.nodes = 8;
  spec.fabric.kind = topology::FabricKind::kRailOptimized;
  spec.fabric.switch_radix = 40;
  strategies::ModelSpec model = Gpt32l(51200);
  model.transformer.tied_embeddings = true;
  model.transformer.learned_position_embeddings = true;
  model.transformer.biases = true;
  strategies::TrainingSpec training;
  training.micro_batch = 8;
  training.global_batch = 64 * 4;
  training.recompute = strategies::Recompute::kFull;
  SimulateDp4Tp4Pp4(state, spec, model, training);
}

// The job behind the ASTRA-sim figure the README quotes (15.5 s to simulate), like for like:
// GPT, 32 layers, hidden 4096, FFN 16384, 32 heads, vocabulary 32000 (untied, no learned
// positions), sequence 2048; global batch 64 in micro-batches of 2 per dp rank, so each of
// the dp 4 pipelines runs 64 / (2 x 4) = 8 micro-batches; no recompute, sequence
// parallelism, fused attention; dp 4 x tp 4 x pp 4 (1F1B) on 64 GPUs behind one switch at
// 400 GB/s per GPU per direction (H100s; the figure names no GPU, and the old benchmark's
// A100s were one of its differences). BM_SimulateGpt32lDp4Tp4Pp4_64Gpus differs in four
// times the tokens, full recompute and A100s on a rail-optimized fabric.
void BM_SimulateAstraSimGpt64Gpus(benchmark::State& state) {
  topology::ClusterSpec spec;
  spec.node = *topology::FindNodePreset("DGX-H100");
  spec.node.gpus = 64;
  spec.node.nvlink_bandwidth = GBps(400);
  spec.nodes = 1;
  spec.fabric.kind = topology::FabricKind::kSingleNode;
  strategies::TrainingSpec training;
  training.micro_batch = 2;
  training.global_batch = 64;
  training.recompute = strategies::Recompute::kNone;
  training.sequence_parallel = true;
  training.flash_attention = true;
  SimulateDp4Tp4Pp4(state, spec, Gpt32l(32000), training);
}
void BM_SimulateNarayanan1t3072Gpus(benchmark::State& state) {
  SimulateExample(state, "narayanan-1t-3072gpu.textproto");
}

BENCHMARK(BM_RingAllReduce1MiB1024Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingAllReduce1MiBScaling)
    ->ArgName("gpus")
    ->RangeMultiplier(4)
    ->Range(64, 16384)
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
BENCHMARK(BM_SimulateGpt32lDp4Tp4Pp4_64Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateAstraSimGpt64Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Arg(kAnalytic)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PairwiseAllToAllFatTree)
    ->ArgName("gpus")
    ->RangeMultiplier(4)
    ->Range(1024, 16384)
    ->Unit(benchmark::kMillisecond);
// One iteration: a step of this job takes seconds to simulate.
BENCHMARK(BM_SimulateNarayanan1t3072Gpus)
    ->ArgName("network")
    ->Arg(kFlow)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace placesim::sim

BENCHMARK_MAIN();
