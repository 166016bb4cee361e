// Strategy search, tier 1: enumerate the parallel strategies of a model on a cluster and
// screen every one with the analytic plan (Analyze) and an analytic step-time estimate.
// `placesim search` (sim/cli/search.h) ranks the survivors and simulates the best of them.
//
// The space. A candidate is a mesh dp·tp·pp·cp = world (ep inside dp for MoE models), a
// data-parallel preset, a micro-batch size, a recompute policy, sequence parallelism and a
// pipeline schedule (with its virtual stages), and, in the exhaustive space, flash attention,
// tp_comm_overlap, the gradient bucket and reshard_after_forward. DefaultSearchSpace lists
// the common values of each knob, ExhaustiveSearchSpace every value placesim models
// (Calculon's knobs mapped onto placesim's; `--space exhaustive`); FixSearchField pins one
// (`--fix`). A combination is a candidate when
//   tp | heads, tp | kv_heads, tp | gpus_per_node (tensor parallelism stays inside a node),
//   layers % (pp·v) == 0, cp | seq_len, ep | dp and ep | experts,
//   (micro_batch·dp) | global_batch,
//   interleaved 1F1B ⇔ v > 1 and pp > 1 (pp = 1 takes one schedule: 1F1B, v = 1),
//   sequence parallelism only with tp > 1,
//   fsdp-hybrid only where it differs from zero3 (its shard group is smaller than dp), and
//   with dp·cp = 1 only the first preset (a data-parallel group of one rank shards and
//   offloads nothing, so every preset places the states the same way),
//   tp_comm_overlap only with tp > 1, gradient buckets only where gradients are bucketed
//   (UsesGradientBuckets), and reshard_after_forward only on FSDP's presets (fsdp,
//   fsdp-hybrid) where they gather parameters into device buffers without a pipeline
//   (HoldsGatheredParameters); elsewhere those three are left to the scenario, except that a
//   pipelined candidate gathering its parameters always reshards (held parameters under a
//   pipeline are not modelled).
// For GPT-3 175B on 64 A100s (examples/gpt3-175b-tp8-pp8.textproto) the default space holds
// 17,727 candidates, the exhaustive one 1,659,672 (Calculon's search of that job: about 3.2
// million), screened in about 1.9 s on 2 threads of a 2-core machine.
//
// Screening. A candidate survives when Analyze reports no correctness error and its largest
// rank role fits in HBM. Analyze costs tens of microseconds, so candidates that are certain
// not to fit are pruned without it: activation memory grows with the micro-batch and with
// weaker recompute (full < selective < none, Korthikanti et al. 2022 Table 2), while model
// states, gather and staging buffers do not depend on either. Per-stage activations are
// a_l(b)·min(c, m) with a_l(b) = b·a_l(1) the bytes of one layer for a micro-batch of b, c the
// micro-batches a schedule keeps in flight and m = G/(b·dp): min(b·c, G/dp)·a_l(1), which is
// non-decreasing in b for 1F1B, interleaved and GPipe alike. So once (r, b) does not fit,
// every (r', b') with b' >= b and r' no more aggressive than r is skipped. Candidates are
// enumerated per "structure" (mesh, schedule, virtual stages, sequence parallelism, preset,
// flash attention) and structures are screened on `jobs` threads; results are stored by
// index, so the output is the same for every thread count. Candidates that differ only in
// tp_comm_overlap or the gradient bucket share one plan (Analyze reads neither) and differ
// only in their estimate.
//
// The estimate (per rank role; the slowest role is the step). It follows what the executor
// (sim/executor/executor.h) does with the schedule of a step (strategies/schedule.h); for
// data-parallel meshes it is tested against SimulateStep (within 15% on the shipped examples).
//   roofline  an op of f FLOPs reading and writing B bytes, with E bytes of element-wise
//             traffic, takes max(f / (peak · matmul_efficiency), B / (hbm_bandwidth ·
//             memory_efficiency)) + E / (hbm_bandwidth · memory_efficiency), peak of the
//             precision's compute type (bf16 for bf16 and bf16-mixed, fp16, fp8); every kernel
//             adds kernel_overhead (the executor's compute model).
//   compute   the ops of one micro-batch with the work the schedule gives them, from the one
//             source both read (cost::PassCosts, strategies/cost/pass_costs.h: eq. 3 FLOPs
//             over the model's shapes, MoE router and busiest-rank experts, ceil(s/cp) tokens
//             per cp rank, tp/ep-local weights, Korthikanti activations, element-wise traffic).
//             Per layer of the role's l: a forward, [a recompute], a backward-input pass (one
//             op per block: the whole layer; attention and MLP under tp > 1; attention, router
//             and experts for a mixture of experts; the attention core under selective
//             recompute; under ring attention, cp > 1, the block holding attention runs as cp
//             ops of 1/cp of its work) and a backward-weight op; the embedding's forward and
//             backward-weight (first stage); the output layer's forward, backward-input and
//             backward-weight (last stage). T_c = m (C_fwd + C_bwd) with C_fwd, C_bwd the
//             roofline time plus kernels · kernel_overhead of one micro-batch's forward,
//             backward (+ recompute).
//   optimizer the GPU step over the role's Ω shard of ω = optimizer bytes / bytes per element
//             (cost::PassCosts::OptimizerStep): roofline of (12 or 4 or 16)·ω FLOPs and
//             ω (G + 2Ω + Θ) bytes read and written (memory-bound), one kernel; none when Ω is
//             offloaded (see offload).
//   bubble    T_c·β with β = (p−1)/m (1F1B, GPipe) or (p−1)/(v·m) (interleaved): the plan's
//             bubble_fraction. This is the usual 1/(1 − b) scaling with b = (p−1)/(m+p−1),
//             the idle fraction of the step: 1/(1 − b) = 1 + (p−1)/m.
//   collective of N ranks, L of them per node on M = N/L nodes, buffer S, ring factor
//             f = 2 (all-reduce) or 1 (reduce-scatter, all-gather, all-to-all), as the
//             simulator's analytic network runs its algorithms' plans (sim/collectives):
//               M = 1:  a ring, f(N−1) steps of route latency a and f(N−1)/N·S / B_nvlink
//               M > 1:  NCCL's two-level plan, an NVLink phase (f(L−1) steps, f(L−1)/L·S at
//                       B_nvlink) and a per-rail phase (f(M−1) steps of the network route,
//                       f(M−1)/(M·L)·S at B_nic), pipelined: the longer phase plus the other's
//                       share of one 4 MiB staging chunk
//             with B_nvlink the per-GPU NVLink bandwidth, B_nic = nics·nic_bandwidth/gpus, a
//             the route's latency as the cluster graph lays it (GPU–NVSwitch–GPU: 2 NVLink
//             hops; GPU–PCIe–NIC–leaf[–spine–leaf]–NIC–PCIe–GPU across nodes); send/recv: one
//             step over NVLink or the network. Every call adds NCCL's per-call protocol cost
//             from the simulator's own table (strategies/cost/nccl_tuning.h): for the cheapest
//             of LL, LL128, Simple, its base latency + steps × max(0, hop latency − a) + the
//             bandwidth it gives up. A data-parallel occurrence runs as k calls, each paying
//             that: under S* one per gather unit (DeepSpeed ZeRO-3: one per weight matrix of
//             each layer, FrameworkDefaults' per-parameter gathers; its re-fetch one per
//             released matrix), else one per gradient bucket: k = ⌈S / bucket⌉ calls, k − 1
//             full buckets and a shorter last one.
//   overlap   tp collectives, pp send/recv, cp ring-attention send/recv and ep all-to-all are
//             exposed (on the critical path of every layer; pp sends are small; ring attention
//             can hide its passes under attention compute, so cp is a conservative bound),
//             but for what runs beside a layer's weight-gradient op, which the schedule issues
//             after the layer's last input-gradient op: one block's tp calls (of two) and the
//             backward's last key/value exchange, per layer and micro-batch, at most that op;
//             and in a forward (and a full recompute) under ring attention every exchange but
//             the first, each beside one of the cp attention parts, at most that part.
//             With tp_comm_overlap (chunked blocks, ScheduleOptions) a block's work and
//             collectives run in tp chunks: of every call one chunk t(S/tp) stays exposed and
//             the other tp − 1 hide under the chunked passes' compute C = m (forward +
//             backward + recompute): tp' = (1 − f)·T + f·(T_1 + max(0, (tp − 1)·T_1 − C)),
//             T the unchunked tp time, T_1 the sum of one chunk of every call, f the share of
//             blocks chunked (½ each for attention, not with cp > 1, and the MLP, not for
//             mixtures of experts); each chunked block launches tp − 1 more kernels, so
//             2(tp − 1) more per layer and chunked pass (forward, backward-input, recompute).
//             Data-parallel collectives (dp, and cp when it joins the dp group) run on one
//             comm stream beside compute, by when they happen:
//               per micro-batch  S* gathers (before every unit's forward, K_f, and backward),
//                                sharded-gradient reduce-scatters (ZeRO-2/3, in backward);
//                                K_b = backward gathers + reduce-scatters of one micro-batch;
//               per step         replicated-gradient syncs after the last micro-batch (DDP
//                                all-reduce, ZeRO-1 reduce-scatter, hybrid replica all-reduce),
//                                K_s, beside the last backward;
//               after the step   the all-gather of updated replicated parameters (ZeRO-1/2),
//                                K_a, after the optimizer: nothing left to hide it.
//             Exposed, with t_last the last call of the last backward:
//               S*:    unit by unit, one unit of prefetch: g_0 (the step's first gather) + per
//                      micro-batch Σ_i max(0, g_{i+1} − f_i) (a unit's forward f_i hides the
//                      next unit's gather) + max(0, g_{U−1} − f_{U−1}) + Σ over the backward
//                      (last unit first) max(0, g_next + r_prev − b_i) (the next gather queued
//                      behind the previous unit's reduce-scatter), the last unit's
//                      reduce-scatter, and what does not fit beside the backward of the
//                      re-fetches and once-per-step syncs; units' compute f_i, b_i from the
//                      roofline of their layers (the embedding and output units apart);
//               else:  (m−1)·max(0, K_b − C_fwd − C_bwd) + max(t_last, R + K_b + K_s − C_bwd)
//                      (reduce-scatters block nothing, so they also hide under the next
//                      micro-batch's forward; R, the backward time until the first bucket is
//                      complete: gradients are complete unit by unit, last unit first).
//             Reductions without overlap (DeepSpeed's overlap_comm, Megatron-LM's
//             overlap_grad_reduce off by default) are exposed whole.
//   offload   offload copies over PCIe, exposed, plus the host optimizer step as the executor
//             runs it: the GPU step's work over the offloaded shard at the host's FLOP rate and
//             memory bandwidth (roofline).
//   total     compute + recompute + kernel overhead + optimizer + bubble + exposed dp + tp +
//             pp + cp + ep + offload.
//   MFU       model FLOPs (72 coefficient, no recompute) / world / (total · peak).
// Not modelled: contention between replicas on shared links (the flow network), and the
// simulator's choice of the double binary tree for small cross-node all-reduces.
// Ties are broken by a fixed preference: ddp, zero1, zero2, zero3, fsdp-hybrid, zero-offload;
// larger micro-batches; recompute none, selective, full.
//
// Thread-safety: pure functions; ScreenCandidates starts and joins its own threads.
#ifndef PLACESIM_STRATEGIES_SEARCH_H_
#define PLACESIM_STRATEGIES_SEARCH_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "strategies/analyzer.h"
#include "strategies/schedule.h"  // kWholeGradientBucket, GradientBucket
#include "strategies/spec.h"
#include "topology/mesh.h"
#include "topology/spec.h"

namespace placesim::strategies {

// The values every knob may take. Each list is in preference order (the tie-break).
struct SearchSpace {
  std::vector<int> dp, tp, pp, cp, ep;
  std::vector<std::string> presets;
  std::vector<int64_t> micro_batches;
  std::vector<Recompute> recompute;
  // Sequence parallelism when tp > 1: {true} (default), {false}, or both.
  std::vector<bool> sequence_parallel;
  std::vector<PipelineSchedule> schedules;
  std::vector<int> virtual_stages;
  // Empty (default): the scenario's value (training.flash_attention). Otherwise searched.
  std::vector<bool> flash_attention;
  // Chunked tensor-parallel blocks (ScheduleOptions::tp_comm_overlap), searched when tp > 1;
  // empty (default): the scenario's simulation.tp_comm_overlap, which the estimate ignores.
  std::vector<bool> tp_comm_overlap;
  // Gradient bucket sizes, searched where buckets exist (dp·cp > 1 and Θ replicated on dp:
  // ddp, zero1, zero2, zero-offload; S* and offloaded Θ sync per unit); Bytes::Zero() stands
  // for SearchOptions::gradient_bucket. Empty (default): that one only.
  std::vector<Bytes> gradient_buckets;
  // FSDP's reshard_after_forward (false: SHARD_GRAD_OP, each unit held from its forward to
  // its backward), searched on the fsdp and fsdp-hybrid presets where
  // HoldsGatheredParameters; empty (default): SearchOptions::analyze.reshard_after_forward,
  // the scenario's.
  std::vector<bool> reshard_after_forward;
};

// The default space (see the file comment): dp, tp, pp, cp the divisors of the world that the
// model and node allow, ep the divisors of the experts (1 for dense models), presets ddp,
// zero1, zero2, zero3, fsdp-hybrid, zero-offload, micro-batches 16, 8, 4, 2, 1 (those that
// divide global_batch), recompute none, selective, full, schedules 1F1B, interleaved 1F1B
// (v = 2, 4) and GPipe. REQUIRES: model.has_architecture().
SearchSpace DefaultSearchSpace(const ModelSpec& model, const TrainingSpec& training,
                               const topology::ClusterSpec& cluster);

// Calculon's exhaustive space mapped onto placesim's knobs (README, "Strategy search"): the
// default space's meshes with every micro-batch that divides global_batch, every v that
// divides layers / pp, presets ddp, zero1, zero2, zero3, fsdp, fsdp-hybrid, zero-offload,
// zero-infinity, zero-infinity-host, sequence parallelism on and off, flash attention on and
// off (first the scenario's), tp_comm_overlap off and on, gradient buckets of
// SearchOptions::gradient_bucket and kWholeGradientBucket (dp overlap on and off), and
// reshard_after_forward on and off (FULL_SHARD and SHARD_GRAD_OP). It holds
// every candidate of DefaultSearchSpace. REQUIRES: model.has_architecture().
SearchSpace ExhaustiveSearchSpace(const ModelSpec& model, const TrainingSpec& training,
                                  const topology::ClusterSpec& cluster);

// "default", "exhaustive": the names NamedSearchSpace accepts (`placesim search --space`).
std::vector<std::string> SearchSpaceNames();

// OK for a name of SearchSpaceNames(); otherwise kInvalidArgument
// `--space "NAME": unknown search space; valid: default, exhaustive`.
Status CheckSearchSpaceName(std::string_view name);

// The space of that name, or CheckSearchSpaceName's error.
StatusOr<SearchSpace> NamedSearchSpace(std::string_view name, const ModelSpec& model,
                                       const TrainingSpec& training,
                                       const topology::ClusterSpec& cluster);

// The fields FixSearchField accepts: strategy.dp, strategy.tp, strategy.pp, strategy.cp,
// strategy.ep, strategy.preset, training.micro_batch, training.recompute,
// training.sequence_parallel, training.pipeline_schedule, training.virtual_stages,
// simulation.reshard_after_forward.
std::vector<std::string> SearchFieldNames();

// Narrows `space` to field = value. The value must be one the space holds (enums by their
// short names, e.g. "full", "interleaved-1f1b"; '_' reads as '-'); otherwise
// kInvalidArgument "--fix FIELD=VALUE: ...; valid: ..." listing the values (or the fields).
Status FixSearchField(std::string_view field, std::string_view value, SearchSpace* space);

// One point of the space.
struct Candidate {
  topology::MeshShape mesh;
  std::string preset;
  int64_t micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int virtual_stages = 1;
  // Unset: the scenario's (training.flash_attention, simulation.tp_comm_overlap,
  // simulation.reshard_after_forward).
  std::optional<bool> flash_attention;
  std::optional<bool> tp_comm_overlap;
  std::optional<bool> reshard_after_forward;
  // Bytes::Zero(): the search's (SearchOptions::gradient_bucket, the scenario's, else the
  // framework's).
  Bytes gradient_bucket;
  // Position in the preference order; unique within one search.
  int64_t order = 0;
};

// "zero1 dp8 tp8 pp1 cp1 mb2 recompute=selective sp 1f1b" style one-line label; " flash",
// " tp-overlap", " bucket=whole" (or " bucket=25 MiB") follow when set on, and
// " no-reshard" when reshard_after_forward is set false.
std::string CandidateLabel(const Candidate& c);

// The strategy and training setup of a candidate (the base training gives precision,
// optimizer and global batch, and flash attention unless the candidate sets it). kNotFound
// for an unknown preset.
StatusOr<StrategySpec> CandidateStrategy(const Candidate& c, const topology::ClusterSpec& cluster);
TrainingSpec CandidateTraining(const Candidate& c, const TrainingSpec& base);
// The gradient bucket of a candidate: its own, or `search_bucket` when it sets none (unset:
// the framework default, resolved by GradientBucket for the candidate's strategy).
std::optional<Bytes> CandidateBucket(const Candidate& c, std::optional<Bytes> search_bucket);
// Whether the strategy synchronizes gradients by bucket: dp·cp > 1 with Θ replicated on dp
// (S* and offloaded Θ go unit by unit, and one data-parallel rank syncs nothing).
bool UsesGradientBuckets(const StrategySpec& strategy);
// Whether reshard_after_forward can be false for the strategy: Θ gathered (S*) over
// dp·cp > 1 ranks into device buffers (not offloaded: offloaded parameters are streamed in
// per use) and no pipeline (pp = 1).
bool HoldsGatheredParameters(const StrategySpec& strategy);

// The parts of the estimate (see the file comment), in the order reports list them.
enum class CostPart {
  kCompute,         // forward and backward ops (roofline), no recompute
  kRecompute,       // the recompute ops (roofline)
  kKernelOverhead,  // kernels launched x kernel_overhead
  kOptimizer,       // the GPU optimizer step (memory-bound roofline)
  kBubble,          // pipeline bubble
  kDataParallel,
  kTensorParallel,
  kPipelineP2p,
  kContextParallel,  // ring-attention key/value passing
  kExpertParallel,
  kOffload,
};
inline constexpr int kNumCostParts = 11;
// "compute", "recompute", "kernel overhead", "optimizer step", "pipeline bubble", ...
const char* CostPartName(CostPart p);

struct StepEstimate {
  std::array<Duration, kNumCostParts> parts{};
  Duration total;
  double mfu = 0;
};

// A candidate that fits and is correct.
struct ScreenedCandidate {
  Candidate candidate;
  StepEstimate estimate;
  Bytes memory;    // the largest role's total (Analyze)
  Bytes capacity;  // HBM
  Bytes headroom() const { return capacity - memory; }
};

// Host time to issue one layer's kernels per pass (the scenario's simulation.host_time_per_layer
// and host_time_per_layer_backward): a layer pass whose kernels are shorter waits for the host,
// as the executor charges it (docs/overheads.md, "Host dispatch"). Zero: no wait.
struct HostDispatch {
  Duration forward;   // forward and recompute passes
  Duration backward;  // a backward pass: backward-input and backward-weight together
};

struct SearchOptions {
  int jobs = 1;  // threads; the result does not depend on it
  HostDispatch host;
  // The bucket that stays exposed after backward; unset: each candidate's framework default
  // (GradientBucket: Megatron-LM's for megatron and zero1, PyTorch DDP's 25 MiB otherwise).
  std::optional<Bytes> gradient_bucket;
  AnalyzeOptions analyze;
};

// candidates = pruned + rejected + feasible. Candidates that differ only in knobs the plan
// does not read (tp_comm_overlap, gradient bucket) share one Analyze call, so analyzed can be
// fewer than rejected + feasible; reshard_after_forward changes the plan's gather buffers, so
// each of its values is analyzed.
struct SearchStats {
  int64_t candidates = 0;  // points of the space that satisfy the divisibility rules
  int64_t analyzed = 0;    // Analyze calls
  int64_t pruned = 0;      // skipped by the memory monotonicity (certain not to fit)
  int64_t rejected = 0;    // analyzed and found not to fit or incorrect
  int64_t feasible = 0;
};

struct SearchResult {
  std::vector<ScreenedCandidate> feasible;  // by estimate, then preference order
  SearchStats stats;
};

// Enumerates and screens the space. kInvalidArgument when the model has no architecture or
// the cluster has no GPUs or no peak rate for the precision.
// Complexity: O(candidates) estimates and at most that many Analyze calls.
StatusOr<SearchResult> ScreenCandidates(const ModelSpec& model, const TrainingSpec& training,
                                        const topology::ClusterSpec& cluster,
                                        const SearchSpace& space,
                                        const SearchOptions& options = {});

// The analytic estimate of one candidate from its plan (exposed for tests and reports);
// `tp_comm_overlap` charges tensor-parallel traffic as chunked blocks (see "overlap"); a layer
// pass shorter than `host`'s time for it is charged that time, the difference in `compute`
// (recompute passes: in `recompute`).
// REQUIRES: the model has an architecture; the GPU has a peak rate for the precision.
StepEstimate EstimateStep(const ModelSpec& model, const TrainingSpec& training,
                          const StrategySpec& strategy, const topology::ClusterSpec& cluster,
                          const Plan& plan, Bytes gradient_bucket, bool tp_comm_overlap = false,
                          const HostDispatch& host = {});

// "+12% exposed dp communication": the part whose time exceeds the best's by the most, as a
// share of the best total; "no part above the best" when no part exceeds the best's.
std::string DominantCostVsBest(const StepEstimate& row, const StepEstimate& best);

}  // namespace placesim::strategies

#endif  // PLACESIM_STRATEGIES_SEARCH_H_
