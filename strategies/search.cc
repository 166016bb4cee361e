// Strategy search, tier 1 (see search.h for the space, the pruning rule and the estimate).
//
// Work is split into structures (mesh, schedule, virtual stages, sequence parallelism,
// preset); the micro-batch and recompute loops of one structure run on one thread so the
// pruning state (the smallest micro-batch that failed, per recompute policy) stays local.
#include "strategies/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <thread>

#include "base/errors.h"
#include "strategies/cost/arith.h"
#include "strategies/cost/kernel_model.h"
#include "strategies/cost/nccl_tuning.h"
#include "strategies/cost/pass_costs.h"
#include "strategies/model.h"
#include "strategies/plan.h"
#include "strategies/presets.h"
#include "strategies/schedule.h"

namespace placesim::strategies {
namespace {

using topology::Axis;
using topology::MeshShape;

constexpr std::string_view kFields[] = {"strategy.dp",
                                        "strategy.tp",
                                        "strategy.pp",
                                        "strategy.cp",
                                        "strategy.ep",
                                        "strategy.preset",
                                        "training.micro_batch",
                                        "training.recompute",
                                        "training.sequence_parallel",
                                        "training.pipeline_schedule",
                                        "training.virtual_stages",
                                        "simulation.reshard_after_forward"};

// Rank of a recompute policy by the activation memory it keeps (full keeps the least).
int MemoryRank(Recompute r) {
  switch (r) {
    case Recompute::kFull:
      return 0;
    case Recompute::kSelective:
      return 1;
    case Recompute::kNone:
      return 2;
  }
  return 2;
}

std::vector<int> Divisors(int64_t n) {
  std::vector<int> d;
  for (int64_t i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(static_cast<int>(i));
  }
  return d;
}

std::string Normalize(std::string_view v) {
  std::string s;
  for (char c : v)
    s += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

topology::DataType ComputeType(Precision p) {
  switch (p) {
    case Precision::kFp16Mixed:
      return topology::DataType::kFp16;
    case Precision::kFp8Mixed:
      return topology::DataType::kFp8;
    case Precision::kBf16Mixed:
    case Precision::kBf16:
      return topology::DataType::kBf16;
  }
  return topology::DataType::kBf16;
}

// Members of rank 0's group of `col` that share rank 0's node (ranks r < gpus_per_node).
int64_t MembersOnFirstNode(const StrategySpec& s, const Collective& col, int gpus_per_node) {
  const MeshShape& m = s.mesh;
  const int64_t n = col.group_size;
  std::vector<topology::MeshCoord> coords;
  auto dp_coords = [&](int64_t count, int64_t step) {
    for (int64_t k = 0; k < count; ++k) {
      topology::MeshCoord c;
      c.dp = static_cast<int>(k * step);
      coords.push_back(c);
    }
  };
  switch (col.axis) {
    case Axis::kData:
      if (n == int64_t{m.dp} * m.cp && m.cp > 1) {
        for (int d = 0; d < m.dp; ++d) {
          for (int c = 0; c < m.cp; ++c) coords.push_back({d, 0, 0, c, 0});
        }
      } else if (n == m.dp) {
        dp_coords(n, 1);
      } else if (s.shard_group_size > 0 && n == s.shard_group_size) {
        dp_coords(n, 1);  // hybrid shard group: consecutive dp ranks
      } else {
        dp_coords(n, std::max<int64_t>(1, m.dp / std::max<int64_t>(n, 1)));  // replica groups
      }
      break;
    case Axis::kExpert:
      dp_coords(n, 1);
      break;
    case Axis::kTensor:
    case Axis::kPipeline:
    case Axis::kContext:
      for (int64_t k = 0; k < n; ++k) {
        topology::MeshCoord c;
        (col.axis == Axis::kTensor     ? c.tp
         : col.axis == Axis::kPipeline ? c.pp
                                       : c.cp) = static_cast<int>(k);
        coords.push_back(c);
      }
      break;
  }
  int64_t on_node = 0;
  for (const auto& c : coords) {
    if (CoordToRank(m, s.rank_order, c) < gpus_per_node) ++on_node;
  }
  return std::max<int64_t>(on_node, 1);
}

// ------------------------------------------------------------------------------ the estimate
// The tier-1 step-time estimate of a candidate (its model is in search.h). Times are
// Durations: every conversion from a rate rounds up to the picosecond, as the executor's.

Duration NonNegative(Duration d) { return std::max(Duration::Zero(), d); }

// `d` scaled by a real factor, rounded to the nearest picosecond.
Duration Scaled(Duration d, double k) { return Seconds(d.ToSeconds() * k); }

// The links a collective is charged at (see "collective" in search.h), with the latency of
// one step's route as the cluster graph (topology/build.cc) lays it: GPU, NVSwitch plane, GPU
// within a node; GPU, PCIe switch, NIC, leaf [, spine, leaf], NIC, PCIe switch, GPU across.
struct Links {
  Bandwidth nvlink;  // per GPU
  Bandwidth nic;     // per GPU: nics x nic_bandwidth / gpus
  Duration intra;    // one step within a node
  Duration inter;    // one step across nodes within one leaf
  Duration spine;    // added when a group spans more nodes than one leaf (per rail) serves
  int64_t nodes_per_leaf = std::numeric_limits<int64_t>::max();
};

Links LinksOf(const topology::ClusterSpec& cluster) {
  const topology::NodeSpec& node = cluster.node;
  const topology::FabricSpec& f = cluster.fabric;
  Links k;
  k.nvlink = node.nvlink_bandwidth;
  if (node.gpus > 0) {
    k.nic =
        Bandwidth::BytesPerSecond(node.nics * node.nic_bandwidth.bytes_per_second() / node.gpus);
  }
  k.intra = node.nvlink_latency * 2;
  if (k.nvlink <= Bandwidth::Zero()) {  // no NVSwitch plane: through the PCIe switch
    k.nvlink = k.nic > Bandwidth::Zero() ? k.nic : Bandwidth::BytesPerSecond(1);
    k.intra = node.pcie_latency * 2;
  }
  k.inter = node.pcie_latency * 4 + node.nic_latency * 2;
  k.spine = f.switch_latency * 2;
  const double o = f.oversubscription > 0 ? f.oversubscription : 1.0;
  const auto down = static_cast<int64_t>(std::floor(f.switch_radix * o / (o + 1) + 1e-9));
  if (down >= 1) {
    k.nodes_per_leaf = f.kind == topology::FabricKind::kRailOptimized
                           ? down
                           : std::max<int64_t>(1, down / std::max(1, node.nics));
  }
  return k;
}

// num / den of `bytes`, rounded to the nearest byte.
Bytes Share(Bytes bytes, int64_t num, int64_t den) {
  return Scale(bytes, static_cast<double>(num) / static_cast<double>(den));
}

// One phase of a collective's plan as the simulator's analytic network charges it
// (sim/collectives/impl/ring.cc, hierarchical.cc): `steps` route latencies and `bytes` per
// device at `bw`.
struct CallPhase {
  int64_t steps = 0;
  Bytes bytes;
  Bandwidth bw;
  Duration route;
  bool network = false;
  Duration Drain() const { return bytes / bw; }
  Duration Time() const { return route * steps + Drain(); }
};

// NCCL's per-call protocol cost (strategies/cost/nccl_tuning.h, the simulator's
// sim/collectives/nccl_model.h): per protocol its base latency, per step the hop latency NCCL
// measured beyond the route's own, and the bandwidth the protocol gives up; the cheapest
// protocol runs.
Duration ProtocolOverhead(cost::NcclRow row, CollectiveKind kind, int64_t n,
                          std::span<const CallPhase> phases, bool pipelined, Bytes buffer) {
  bool multi_node = false;
  for (const CallPhase& ph : phases) multi_node |= ph.network;
  const int r = static_cast<int>(row);
  const bool plateau = row == cost::NcclRow::kRing && multi_node &&
                       kind == CollectiveKind::kAllReduce &&
                       static_cast<double>(buffer.count()) >=
                           static_cast<double>(n) / 16 * cost::kNcclRingPlateauBytesPer16Ranks;
  std::array<double, 2> drain_ps{};  // the phases' drain times, in picoseconds
  for (size_t k = 0; k < phases.size(); ++k) {
    drain_ps[k] = static_cast<double>(phases[k].Drain().picoseconds());
  }
  Duration best = Duration::Zero();
  for (int proto = 0; proto < cost::kNumNcclProtocols; ++proto) {
    const auto p = static_cast<cost::NcclProtocol>(proto);
    const double eff = cost::NcclProtocolEfficiency(row, p, kind, multi_node);
    Duration latency = Microseconds(cost::kNcclBaseLatencyUs[r][proto]);
    double slower = 0, longest = 0, longest_slowed = 0;  // picoseconds
    for (size_t k = 0; k < phases.size(); ++k) {
      const CallPhase& ph = phases[k];
      double hop_us = cost::kNcclHopLatencyUs[r][ph.network ? 1 : 0][proto];
      if (multi_node && !ph.network && p == cost::NcclProtocol::kLL) {
        hop_us *= cost::kNcclLLMultiNodeNvlinkFactor;
      }
      latency += NonNegative(Microseconds(hop_us) - ph.route) * std::max<int64_t>(ph.steps, 1);
      slower += drain_ps[k] * (1.0 / eff - 1.0);
      longest = std::max(longest, drain_ps[k]);
      longest_slowed = std::max(longest_slowed, drain_ps[k] / eff);
    }
    if (pipelined) slower = longest_slowed - longest;
    if (plateau && p == cost::NcclProtocol::kSimple) {
      latency = Duration::Picoseconds(latency.picoseconds() * cost::kNcclRingPlateauNum /
                                      cost::kNcclRingPlateauDen);
    }
    const Duration total = latency + Duration::Picoseconds(static_cast<int64_t>(slower));
    if (proto == 0 || total < best) best = total;
  }
  return best;
}

// One call of `kind` over `n` ranks, `l` of them on the first node, moving buffer `bytes`: a
// ring within one node; across nodes, as auto plans it, NCCL's multi-channel ring for
// all-gather and reduce-scatter (N - M in-node steps carrying (L - 1)/L of the ring volume, M - 1
// crossing steps carrying 1/L of it through each member's NIC) and the two-level
// (hierarchical) plan for all-reduce, their phases pipelined in staging-buffer chunks (the
// longest phase plus one chunk's fill of the others); one transfer for a send/recv; plus the
// protocol cost.
Duration CallTime(CollectiveKind kind, int64_t n, int64_t l, Bytes bytes, const Links& k) {
  if (n <= 1 || bytes <= Bytes::Zero()) return Duration::Zero();
  const Bandwidth nic = k.nic > Bandwidth::Zero() ? k.nic : k.nvlink;
  const int64_t nodes = (n + l - 1) / l;
  const Duration inter = k.inter + (nodes > k.nodes_per_leaf ? k.spine : Duration::Zero());
  std::array<CallPhase, 2> buf;
  size_t count = 0;
  if (kind == CollectiveKind::kSendRecv) {
    buf[count++] = l >= n ? CallPhase{1, bytes, k.nvlink, k.intra, false}
                          : CallPhase{1, bytes, nic, inter, true};
    const std::span<const CallPhase> phases(buf.data(), count);
    return phases[0].Time() + ProtocolOverhead(cost::NcclRow::kP2p, kind, 2, phases, false, bytes);
  }
  const int64_t f = kind == CollectiveKind::kAllReduce ? 2 : 1;
  if (nodes <= 1) {
    buf[count++] = {f * (n - 1), Share(bytes, f * (n - 1), n), k.nvlink, k.intra, false};
  } else if (l > 1 && kind != CollectiveKind::kAllReduce) {
    buf[count++] = {n - nodes, Share(bytes, (l - 1) * (n - 1), l * n), k.nvlink, k.intra, false};
    buf[count++] = {nodes - 1, Share(bytes, n - 1, l * n), nic, inter, true};
  } else {
    if (l > 1) buf[count++] = {f * (l - 1), Share(bytes, f * (l - 1), l), k.nvlink, k.intra, false};
    buf[count++] = {f * (nodes - 1), Share(bytes, f * (nodes - 1), nodes * l), nic, inter, true};
  }
  const std::span<const CallPhase> phases(buf.data(), count);
  const bool pipelined = nodes > 1;
  Duration sum, longest;
  for (const CallPhase& ph : phases) {
    sum += ph.Time();
    longest = std::max(longest, ph.Time());
  }
  const int64_t chunks =
      std::max<int64_t>(1, cost::CeilDiv(bytes.count(), cost::kNcclStagingBuffer.count()));
  const Duration plan =
      pipelined ? longest + Duration::Picoseconds((sum - longest).picoseconds() / chunks) : sum;
  return plan + ProtocolOverhead(cost::NcclRow::kRing, kind, n, phases, pipelined, bytes);
}

bool IsDataAxis(Axis a) { return a == Axis::kData || a == Axis::kContext; }

// The executor's compute model (sim/executor): an op takes max(FLOPs / (peak x
// matmul_efficiency), (read + written) / (hbm_bandwidth x memory_efficiency)), then its
// element-wise traffic at the same HBM rate; kernel overhead is counted apart.
// REQUIRES: flops > 0.
struct Roofline {
  FlopRate flops;
  Bandwidth hbm;
  Duration Op(const cost::Work& w) const {
    if (hbm <= Bandwidth::Zero()) return w.flops / flops;
    return std::max(w.flops / flops, (w.read + w.written) / hbm) + w.elementwise / hbm;
  }
};

// One micro-batch of one rank role as the schedule runs it: the roofline time of its forward,
// backward (input and weight) and recompute ops, and how many ops each phase launches.
struct PassWork {
  Duration forward;
  Duration backward;
  Duration recompute;
  int64_t forward_kernels = 0;
  int64_t backward_kernels = 0;  // recompute ops included
  // Of those, the embedding's and the output layer's ops (one and one; one and two).
  Duration embedding_forward, embedding_backward, head_forward, head_backward;
};

// One op's work under ring attention, as the schedule runs a block that holds attention:
// `parts` kernels of 1/parts of the work each, the first one keeping the remainders of the
// byte split.
Duration SplitOp(const Roofline& roof, const cost::Work& w, int64_t parts, int64_t& kernels) {
  kernels += parts;
  if (parts <= 1) return roof.Op(w);
  cost::Work part{w.flops / static_cast<double>(parts), w.read / parts, w.written / parts,
                  w.elementwise / parts};
  cost::Work first = part;
  first.read = w.read - part.read * (parts - 1);
  first.written = w.written - part.written * (parts - 1);
  first.elementwise = w.elementwise - part.elementwise * (parts - 1);
  return roof.Op(first) + roof.Op(part) * (parts - 1);
}

// Adds `times` runs of a layer pass: one op per block the schedule emits (the non-empty ones),
// the block holding attention (whole or attention) in `attention_parts` kernels.
void AddLayerPass(const Roofline& roof, const cost::LayerPass& pass, int64_t attention_parts,
                  int64_t times, Duration& time, int64_t& kernels) {
  const std::pair<const cost::Work*, bool> blocks[] = {{&pass.whole, true},
                                                       {&pass.attention, true},
                                                       {&pass.mlp, false},
                                                       {&pass.router, false},
                                                       {&pass.experts, false}};
  for (const auto& [w, holds_attention] : blocks) {
    if (w->flops <= Flops() && w->read + w->written + w->elementwise <= Bytes::Zero()) continue;
    int64_t ops = 0;
    time += SplitOp(roof, *w, holds_attention ? attention_parts : 1, ops) * times;
    kernels += ops * times;
  }
}

// The compute ops of one micro-batch of `role`, with the work the schedule gives them
// (cost::PassCosts): per layer its forward, [recompute], backward-input and backward-weight
// passes; on the first stage the embedding's forward and backward-weight; on the last the
// output layer's forward, backward-input and backward-weight.
PassWork RoleWork(const cost::PassCosts& pc, const ParameterBreakdown& p, const RankRole& role,
                  const Roofline& roof, ContextParallelComm cp_comm) {
  PassWork w;
  const int64_t layers = role.layers;
  // Ring attention runs the attention-holding block of every pass but selective recompute's
  // (the attention core, rebuilt apart) as cp parts; the all-gather variant as one op.
  const int64_t parts = cp_comm == ContextParallelComm::kAllGather ? 1 : pc.cp;
  AddLayerPass(roof, pc.forward, parts, layers, w.forward, w.forward_kernels);
  AddLayerPass(roof, pc.backward_input, parts, layers, w.backward, w.backward_kernels);
  w.backward += roof.Op(pc.backward_weight) * layers;
  w.backward_kernels += layers;
  AddLayerPass(roof, pc.recompute_pass, pc.recompute == Recompute::kFull ? parts : 1, layers,
               w.recompute, w.backward_kernels);
  if (role.has_embedding) {
    w.embedding_forward = roof.Op(pc.embedding_forward);
    w.embedding_backward = roof.Op(pc.embedding_backward_weight);
    w.forward += w.embedding_forward;
    w.backward += w.embedding_backward;
    w.forward_kernels += 1;
    w.backward_kernels += 1;
  }
  if (role.has_head) {
    // The output unit's gradients: the vocab-parallel head and the final norm, and on a last
    // stage that is not also the first the copy of a tied word embedding (Megatron-LM).
    const int64_t head_elements = cost::CeilDiv(p.head, pc.tp) + p.final_norm +
                                  (p.head == 0 && !role.has_embedding ? pc.vocab_elements : 0);
    w.head_forward = roof.Op(pc.output_forward);
    w.head_backward =
        roof.Op(pc.output_backward_input) + roof.Op(pc.OutputBackwardWeight(head_elements));
    w.forward += w.head_forward;
    w.backward += w.head_backward;
    w.forward_kernels += 1;
    w.backward_kernels += 2;
  }
  return w;
}

// Where one role's collectives are charged (see "overlap" in search.h).
struct RoleComm {
  // Exposed on every layer, summed over the step: tp, pp, cp (K/V exchange) and ep calls.
  Duration tp, pp, cp, ep;
  Duration tp_chunk;  // one tp-th chunk of every tensor-parallel call (tp_comm_overlap)
  // Data-parallel traffic of the comm stream: per micro-batch in backward (k_bwd, sharded
  // gradients by bucket), once per step beside the last backward (k_step), after the optimizer
  // (k_after); `tail` the last call of the last backward.
  Duration k_bwd, k_step, k_after, tail;
  // The share of a backward that runs before its first gradient bucket is complete (the
  // buckets fill in backward order at the rate the backward produces gradients): the last
  // backward's syncs cannot start earlier.
  double ready = 0;
  // Sharded gradients' reduce-scatters that the backward waits for (the framework reduces
  // without overlap, FrameworkDefaults): exposed whole, summed over the step.
  Duration blocking;
  bool gathers = false;  // S*: every unit gathered before its forward and its backward
  bool held = false;     // ... or before its forward only, held for its backward (SHARD_GRAD_OP)
  // S*, per unit in forward order: its gathers (one forward's, and again one backward's) and
  // its gradients' reduce-scatters beside the backward (not blocking), per micro-batch.
  std::vector<Duration> unit_gather, unit_reduce;
  Duration refetch;  // ZeRO-3's re-fetch after each micro-batch's recompute
};

// How a role's gathered parameters split into units and calls, as the schedule issues them
// (strategies/schedule/data_parallel.cc): its layers in units of layers_per_unit, the
// embedding and the output layer one unit each; DeepSpeed ZeRO-3's per-parameter gathers
// (FrameworkDefaults) one all-gather per weight matrix of every layer (LayerWeightMatrices,
// the norms and biases riding along). Weights are this rank's parameter elements.
struct UnitLayout {
  int64_t layers = 0;
  int64_t layers_per_unit = 1;
  double layer = 0;      // one layer's elements
  double embedding = 0;  // 0 when the role has none
  double head = 0;       // the output unit's; 0 when the role has none
  bool per_parameter = false;
  std::vector<int64_t> matrices;   // one layer's weight matrices, forward order
  std::vector<int64_t> refetched;  // the matrices ZeRO-3 gathers again after recompute
  double Total() const { return layer * static_cast<double>(layers) + embedding + head; }
};

// The calls of one occurrence of a data-parallel collective: `count` calls of `bytes` each;
// `first` the first call of a forward (the front of the model), which is also the last of a
// backward.
struct CallSizes {
  std::vector<std::pair<int64_t, Bytes>> groups;
  Bytes first;
  double ready = 0;  // the share of the buffer the first call of a backward waits for
};

// The time of each unit's share of gathered buffer `s`, in forward order, each unit one call
// of `time`, or (per_parameter) one per weight matrix of each of its layers. The layer units
// are alike, so each distinct unit is timed once.
template <typename TimeOf>
std::vector<Duration> PerUnitTimes(const UnitLayout& u, Bytes s, bool per_parameter,
                                   const TimeOf& time) {
  const double total = u.Total();
  if (total <= 0) return {time(s)};
  const auto share = [&](double w) { return Scale(s, w / total); };
  int64_t matrices = 0;
  for (int64_t m : u.matrices) matrices += m;
  const auto layers_time = [&](int64_t layers) {
    const Bytes bytes = share(u.layer * static_cast<double>(layers));
    if (!per_parameter || matrices <= 0) return time(bytes);
    Duration t;
    for (int64_t m : u.matrices) {
      t += time(Scale(share(u.layer), static_cast<double>(m) / static_cast<double>(matrices))) *
           layers;
    }
    return t;
  };
  std::vector<Duration> out;
  if (u.embedding > 0) out.push_back(time(share(u.embedding)));
  const int64_t lpu = std::max<int64_t>(1, u.layers_per_unit);
  if (u.layers >= lpu) out.insert(out.end(), static_cast<size_t>(u.layers / lpu), layers_time(lpu));
  if (u.layers % lpu > 0) out.push_back(layers_time(u.layers % lpu));
  if (u.head > 0) out.push_back(time(share(u.head)));
  return out;
}

// Adds `b` to `a` element by element (a grows to b's size).
void AddTimes(std::vector<Duration>& a, const std::vector<Duration>& b) {
  if (a.size() < b.size()) a.resize(b.size());
  for (size_t i = 0; i < b.size(); ++i) a[i] += b[i];
}

// The calls of ZeRO-3's re-fetch after recompute: every layer's released matrices, buffer
// `s` over the role's layers.
CallSizes RefetchCalls(const UnitLayout& u, Bytes s) {
  CallSizes out;
  int64_t total = 0;
  for (int64_t m : u.refetched) total += m;
  const int64_t layers = std::max<int64_t>(1, u.layers);
  if (total <= 0) total = 1;
  const Bytes per_layer = s / layers;
  for (int64_t m : u.refetched) {
    out.groups.push_back(
        {layers, Scale(per_layer, static_cast<double>(m) / static_cast<double>(total))});
  }
  if (out.groups.empty()) out.groups.push_back({1, s});
  out.first = out.groups.front().second;
  return out;
}

// Buffer `s` in gradient buckets: full buckets, the last one shorter.
CallSizes BucketCalls(Bytes s, Bytes bucket) {
  CallSizes out;
  const int64_t calls = cost::CeilDiv(s.count(), bucket.count());
  if (calls > 1) out.groups.push_back({calls - 1, bucket});
  out.first = s - bucket * (calls - 1);
  out.groups.push_back({1, out.first});
  out.ready = calls > 1 ? bucket / s : 1.0;
  return out;
}

// Charges one data-parallel collective: it runs as one call per gather unit (per weight
// matrix under per-parameter gathers) for gathered parameters and their gradients, one per
// gradient bucket otherwise, each call paying its own latency and protocol cost.
void ChargeDataParallel(const Collective& col, int64_t l, const Plan& plan, const UnitLayout& u,
                        bool gathered_params, bool blocking_reduce, Bytes bucket,
                        const Links& links, RoleComm& k) {
  const Bytes s = col.buffer_bytes;
  const bool refetch = col.reason == CommPurpose::kParamRefetch;
  const bool gather =
      col.reason == CommPurpose::kParamGather || col.reason == CommPurpose::kExpertParamGather;
  const auto time = [&](Bytes bytes) {
    return CallTime(col.kind, col.group_size, l, bytes, links);
  };
  if (gather || (col.state == State::kGrads && gathered_params)) {
    // Unit by unit: every unit's gather before its forward and its backward; its gradients'
    // reduce-scatter after its backward.
    const std::vector<Duration> units = PerUnitTimes(u, s, gather && u.per_parameter, time);
    Duration one;
    for (Duration t : units) one += t;
    if (gather) {
      k.gathers = true;
      k.held = col.count != 2 * plan.micro_batches;  // one gather per micro-batch, not two
      AddTimes(k.unit_gather, units);
    } else if (blocking_reduce) {
      k.blocking += one * col.count;
    } else if (col.count == plan.micro_batches) {
      AddTimes(k.unit_reduce, units);
    } else {
      k.k_step += one * col.count;  // hybrid sharding's replica all-reduce, once per step
    }
    return;
  }
  const CallSizes calls = refetch ? RefetchCalls(u, s) : BucketCalls(s, bucket);
  Duration one;
  for (const auto& [count, bytes] : calls.groups) one += time(bytes) * count;
  const Duration first_call = time(calls.first);
  // Without overlap the reduction is exposed: sharded gradients' reduce-scatters stall the
  // backward (DeepSpeed), replicated gradients wait for its end (Megatron-LM).
  if (blocking_reduce && col.state == State::kGrads) {
    k.blocking += one * col.count;
  } else if (refetch) {
    k.refetch += one;  // matrices gathered again after each micro-batch's recompute
  } else if (col.state == State::kParams) {
    k.k_after += one;  // updated replicated params, after the sharded optimizer step
  } else if (col.count == plan.micro_batches && plan.micro_batches > 1) {
    k.k_bwd += one;  // sharded gradients: every micro-batch's backward
    k.tail = std::max(k.tail, first_call);
    k.ready = std::max(k.ready, calls.ready);
  } else {
    k.k_step += one * col.count;  // replicated: after the last one
    k.tail = std::max(k.tail, first_call);
    k.ready = std::max(k.ready, calls.ready);
  }
}

// What the estimate of every role shares.
struct EstimateInputs {
  const ModelSpec* model = nullptr;
  const TrainingSpec* training = nullptr;
  const StrategySpec* strategy = nullptr;
  const topology::ClusterSpec* cluster = nullptr;
  const Plan* plan = nullptr;
  cost::PassCosts costs;
  ParameterBreakdown params;
  Roofline roof;
  FlopRate peak;
  Duration overhead;  // per kernel
  Bytes bucket;       // the gradient bucket, at least 1 byte
  bool tp_comm_overlap = false;
  HostDispatch host;
  bool per_parameter = false;      // DeepSpeed ZeRO-3's gathers (FrameworkDefaults)
  std::vector<int64_t> matrices;   // LayerWeightMatrices
  std::vector<int64_t> refetched;  // RefetchAfterRecompute's matrices
};

// The role's gather units, weighted by its parameter elements (tp-local).
UnitLayout UnitsOf(const EstimateInputs& in, const RankRole& role) {
  const ParameterBreakdown& p = in.params;
  const int64_t tp = std::max(1, in.strategy->mesh.tp);
  UnitLayout u;
  u.layers = role.layers;
  u.layers_per_unit = std::max<int64_t>(1, in.strategy->layers_per_unit);
  u.layer = static_cast<double>(p.layer_tp_split) / static_cast<double>(tp) +
            static_cast<double>(p.layer_tp_replicated);
  u.embedding = role.has_embedding
                    ? std::max(1.0, static_cast<double>(p.embedding) / static_cast<double>(tp))
                    : 0;
  u.head = role.has_head ? std::max(1.0, static_cast<double>(p.head) / static_cast<double>(tp) +
                                             static_cast<double>(p.final_norm))
                         : 0;
  u.per_parameter = in.per_parameter;
  u.matrices = in.matrices;
  u.refetched = in.refetched;
  return u;
}

RoleComm ChargeCollectives(const EstimateInputs& in, const RankRole& role,
                           const UnitLayout& units) {
  const StrategySpec& strategy = *in.strategy;
  const Plan& plan = *in.plan;
  const Links links = LinksOf(*in.cluster);
  // S*: gradients then go unit by unit, not by bucket.
  const bool gathered_params =
      std::any_of(role.collectives.begin(), role.collectives.end(), [](const Collective& col) {
        return col.reason == CommPurpose::kParamGather ||
               col.reason == CommPurpose::kExpertParamGather;
      });
  // The framework's reduction without overlap (docs/overheads.md); the estimate takes the
  // preset's default, not a scenario's override.
  const bool blocking_reduce = !FrameworkDefaults(strategy.name).overlap_grad_reduce;
  const int gpus = std::max(1, in.cluster->node.gpus);
  RoleComm k;
  for (const Collective& col : role.collectives) {
    const int64_t l = MembersOnFirstNode(strategy, col, gpus);
    if (IsDataAxis(col.axis) && !(col.axis == Axis::kContext && col.state == State::kActivations)) {
      ChargeDataParallel(col, l, plan, units, gathered_params, blocking_reduce, in.bucket, links,
                         k);
      continue;
    }
    const Duration t = CallTime(col.kind, col.group_size, l, col.buffer_bytes, links) * col.count;
    (col.axis == Axis::kContext    ? k.cp
     : col.axis == Axis::kTensor   ? k.tp
     : col.axis == Axis::kPipeline ? k.pp
                                   : k.ep) += t;
    if (in.tp_comm_overlap && col.axis == Axis::kTensor && strategy.mesh.tp > 1) {
      k.tp_chunk +=
          CallTime(col.kind, col.group_size, l, col.buffer_bytes / strategy.mesh.tp, links) *
          col.count;
    }
  }
  return k;
}

// The parameter elements of each gather unit, in forward order (as PerUnitTimes).
std::vector<double> UnitWeights(const UnitLayout& u) {
  std::vector<double> w;
  if (u.embedding > 0) w.push_back(u.embedding);
  const int64_t lpu = std::max<int64_t>(1, u.layers_per_unit);
  for (int64_t i = 0; i < u.layers / lpu; ++i) w.push_back(u.layer * static_cast<double>(lpu));
  if (u.layers % lpu > 0) w.push_back(u.layer * static_cast<double>(u.layers % lpu));
  if (u.head > 0) w.push_back(u.head);
  return w;
}

// The compute-stream time of each gather unit of a role, in forward order (as PerUnitTimes):
// forward and backward (recompute included), kernel overheads included.
struct UnitCompute {
  std::vector<Duration> forward, backward;
};

UnitCompute UnitComputeOf(const PassWork& w, const UnitLayout& u, Duration overhead) {
  const Duration emb_f = u.embedding > 0 ? w.embedding_forward + overhead : Duration::Zero();
  const Duration emb_b = u.embedding > 0 ? w.embedding_backward + overhead : Duration::Zero();
  const Duration head_f = u.head > 0 ? w.head_forward + overhead : Duration::Zero();
  const Duration head_b = u.head > 0 ? w.head_backward + overhead * 2 : Duration::Zero();
  const int64_t layers = std::max<int64_t>(1, u.layers);
  const Duration layer_f = Duration::Picoseconds(
      (w.forward + overhead * w.forward_kernels - emb_f - head_f).picoseconds() / layers);
  const Duration layer_b = Duration::Picoseconds(
      (w.backward + w.recompute + overhead * w.backward_kernels - emb_b - head_b).picoseconds() /
      layers);
  UnitCompute c;
  const auto add = [&](Duration f, Duration b) {
    c.forward.push_back(f);
    c.backward.push_back(b);
  };
  if (u.embedding > 0) add(emb_f, emb_b);
  const int64_t lpu = std::max<int64_t>(1, u.layers_per_unit);
  for (int64_t i = 0; i < u.layers / lpu; ++i) add(layer_f * lpu, layer_b * lpu);
  if (u.layers % lpu > 0) add(layer_f * (u.layers % lpu), layer_b * (u.layers % lpu));
  if (u.head > 0) add(head_f, head_b);
  return c;
}

// Gathered parameters (S*), one micro-batch, as the schedule runs them with one unit of
// prefetch: a unit's compute waits for its gather, and the next unit's gather runs beside it,
// so what a unit's compute does not cover stays exposed: in the forward max(0, g_{i+1} - f_i),
// then the backward's first gather (the last unit's) beside the last forward; in the backward
// (last unit first) the previous unit's reduce-scatter and the next gather beside b_i. Held
// units (SHARD_GRAD_OP) have no backward gathers.
// `after_previous`: a previous micro-batch's last reduce-scatter (the first unit's, issued
// after its backward) is queued ahead of this forward's second gather.
// `next_forward`: the next micro-batch's first gather beside the last backward unit.
Duration ExposedGathers(const RoleComm& k, const UnitCompute& c, bool after_previous,
                        bool next_forward) {
  const std::vector<Duration>& g = k.unit_gather;
  const size_t n = std::min(g.size(), c.forward.size());
  if (n == 0) return Duration::Zero();
  const auto reduce = [&](size_t i) {
    return i < k.unit_reduce.size() ? k.unit_reduce[i] : Duration::Zero();
  };
  Duration e;
  for (size_t i = 0; i < n; ++i) {
    Duration next = i + 1 < n ? g[i + 1] : (k.held ? Duration::Zero() : g[n - 1]);
    if (i == 0 && after_previous) next += reduce(0);
    e += NonNegative(next - c.forward[i]);
  }
  for (size_t k_ = n; k_-- > 0;) {  // backward: units n-1 .. 0
    const Duration queued = k_ + 1 < n ? reduce(k_ + 1) : Duration::Zero();
    if (k_ > 0) {
      // Held units are not gathered again in the backward.
      e += NonNegative((k.held ? Duration::Zero() : g[k_ - 1]) + queued - c.backward[k_]);
    } else {
      // The first unit's backward carries the second unit's reduce-scatter, and before the
      // next micro-batch also its first gather.
      e += NonNegative((next_forward ? g[0] : Duration::Zero()) + queued - c.backward[0]);
    }
  }
  return e;
}

// When, into the last backward, its first gradient bucket (`share` of the gradient) is
// complete: the gradients of a unit are complete when its backward ends, and the backward
// runs the units last to first.
Duration FirstBucketReady(double share, const UnitLayout& layout, const UnitCompute& units) {
  const std::vector<double> weights = UnitWeights(layout);
  const double total = layout.Total();
  if (total <= 0 || weights.size() != units.backward.size()) return Duration::Zero();
  Duration t;
  double produced = 0;
  for (size_t i = weights.size(); i-- > 0;) {
    t += units.backward[i];
    produced += weights[i];
    if (produced >= share * total * (1 - 1e-12)) break;
  }
  return t;
}

// Exposed data-parallel time. Bucketed traffic: every micro-batch but the last hides its
// traffic under its own compute; the last one's backward also carries the once-per-step
// syncs, which start once the first bucket is complete and of which the last call stays
// exposed. Gathered parameters: unit by unit (ExposedGathers), the step's first gather
// exposed whole, then the last unit's reduce-scatter and the step's replica syncs.
Duration ExposedDataParallel(const RoleComm& k, const UnitLayout& layout, const UnitCompute& units,
                             Duration c_fwd, Duration c_bwd, int64_t m) {
  Duration dp = k.k_after + k.blocking;
  if (k.gathers) {
    Duration traffic;  // one backward's gathers (none when held) and reduce-scatters
    for (Duration t : k.unit_gather) traffic += k.held ? Duration::Zero() : t;
    for (Duration t : k.unit_reduce) traffic += t;
    const Duration slack = NonNegative(c_bwd - traffic);
    // Micro-batch 0, then 1 .. m - 2, then the last (m > 1).
    Duration gathers = ExposedGathers(k, units, false, m > 1);
    if (m > 1) {
      gathers +=
          ExposedGathers(k, units, true, true) * (m - 2) + ExposedGathers(k, units, true, false);
    }
    dp += k.unit_gather.front() + gathers + NonNegative(k.refetch - slack) * m +
          (k.unit_reduce.empty() ? Duration::Zero() : k.unit_reduce.front()) +
          NonNegative(k.k_bwd + k.k_step - slack);
    return dp;
  }
  dp += NonNegative(k.k_bwd - c_fwd - c_bwd) * (m - 1);
  if (k.k_bwd + k.k_step > Duration::Zero()) {
    dp += std::max(k.tail, FirstBucketReady(k.ready, layout, units) + k.k_bwd + k.k_step - c_bwd);
  }
  return dp;
}

// Offload copies over PCIe, exposed, and the optimizer step over the offloaded shard on the
// host as the executor runs it: the same work as the GPU step (cost::PassCosts::OptimizerStep)
// at the host's FLOP rate and memory bandwidth. The shard's elements are the offloaded bytes
// over the bytes per element of the states offloaded (all sharded alike).
Duration OffloadTime(const EstimateInputs& in, const RankRole& role) {
  const topology::NodeSpec& node = in.cluster->node;
  Duration t;
  if (node.pcie_bandwidth > Bandwidth::Zero()) t += role.copy_bytes / node.pcie_bandwidth;
  const Bytes offloaded = role.memory.offloaded_host + role.memory.offloaded_nvme;
  const StateBytes bpp = in.costs.bpp;
  int64_t per_element = 0;
  for (const auto& [st, bytes] :
       {std::pair{State::kParams, bpp.params}, std::pair{State::kGrads, bpp.grads},
        std::pair{State::kOptimizer, bpp.optimizer}}) {
    if (OffloadTargetOf(*in.strategy, st) != OffloadTarget::kNone) per_element += bytes;
  }
  if (offloaded <= Bytes::Zero() || per_element <= 0 || node.host_flops <= FlopRate::Zero() ||
      node.host_memory_bandwidth <= Bandwidth::Zero()) {
    return t;
  }
  const cost::Work w = in.costs.OptimizerStep(offloaded.count() / per_element);
  return t + std::max(w.flops / node.host_flops, (w.read + w.written) / node.host_memory_bandwidth);
}

// One of the cp parts the schedule splits a pass's attention-holding block into under ring
// attention (SplitOp), with its kernel's overhead.
Duration AttentionPart(const EstimateInputs& in, const cost::LayerPass& pass) {
  const bool whole = pass.whole.flops > Flops() ||
                     pass.whole.read + pass.whole.written + pass.whole.elementwise > Bytes::Zero();
  const cost::Work& w = whole ? pass.whole : pass.attention;
  const int64_t parts = std::max(1, in.strategy->mesh.cp);
  const cost::Work part{w.flops / static_cast<double>(parts), w.read / parts, w.written / parts,
                        w.elementwise / parts};
  return in.roof.Op(part) + in.overhead;
}

// The schedule issues a layer's weight-gradient op after its last input-gradient op, and the
// calls that follow that op run on their own stream beside it: one block's tensor-parallel
// calls (of the layer's two blocks; the backward holds one of the passes' shares: forward,
// backward and the full recompute's forward) and, under ring attention, the last of the
// backward's key/value exchanges (a layer exchanges cp - 1 times per forward and twice that
// per backward). Each layer and micro-batch hides at most its weight-gradient op's time.
void HideBesideWeightGradients(const EstimateInputs& in, const RankRole& role, int64_t m,
                               RoleComm& comm) {
  const MeshShape& mesh = in.strategy->mesh;
  const int64_t layers = role.layers;
  if (layers <= 0 || in.tp_comm_overlap) return;
  const bool full = in.plan->effective_recompute == Recompute::kFull;
  Duration window = in.roof.Op(in.costs.backward_weight) + in.overhead;
  if (mesh.tp > 1) {
    const int64_t passes = full ? 3 : 2;
    const Duration block = Duration::Picoseconds(comm.tp.picoseconds() / (passes * 2 * layers * m));
    const Duration hidden = std::min(block, window);
    comm.tp -= hidden * (layers * m);
    window -= hidden;
  }
  if (mesh.cp > 1 && in.training->context_parallel_comm != ContextParallelComm::kAllGather) {
    const int64_t calls = (mesh.cp - 1) * (full ? 4 : 3);
    const Duration exchange = Duration::Picoseconds(comm.cp.picoseconds() / (calls * layers * m));
    // A forward (and the full recompute's) runs the attention block in cp parts; the first
    // exchange waits for the first part, each later one runs beside the next part.
    Duration hidden = std::min(exchange, window);
    const int64_t beside_parts = mesh.cp - 2;
    hidden += std::min(exchange, AttentionPart(in, in.costs.forward)) * beside_parts;
    if (full)
      hidden += std::min(exchange, AttentionPart(in, in.costs.recompute_pass)) * beside_parts;
    comm.cp -= hidden * (layers * m);
  }
}

// How long one micro-batch's layer passes of `role` wait for the host (HostDispatch): per
// layer, the host's time for the pass less the pass's kernels (their roofline time and
// per-kernel overhead), when positive; forward, backward (input and weight together, as
// autograd issues them) and recompute, each over the role's layers.
struct HostWaits {
  Duration forward, backward, recompute;
};
HostWaits HostWaitsOf(const EstimateInputs& in, const RankRole& role) {
  const cost::PassCosts& pc = in.costs;
  const int64_t parts =
      in.training->context_parallel_comm == ContextParallelComm::kAllGather ? 1 : pc.cp;
  const auto wait = [&](const cost::LayerPass& pass, int64_t attention_parts, Duration extra,
                        int64_t extra_kernels, Duration host) {
    Duration time = extra;
    int64_t kernels = extra_kernels;
    AddLayerPass(in.roof, pass, attention_parts, 1, time, kernels);
    return NonNegative(host - (time + in.overhead * kernels)) * role.layers;
  };
  HostWaits w;
  if (in.host.forward > Duration::Zero()) {
    w.forward = wait(pc.forward, parts, Duration::Zero(), 0, in.host.forward);
    if (pc.recompute != Recompute::kNone) {
      w.recompute = wait(pc.recompute_pass, pc.recompute == Recompute::kFull ? parts : 1,
                         Duration::Zero(), 0, in.host.forward);
    }
  }
  if (in.host.backward > Duration::Zero()) {
    w.backward =
        wait(pc.backward_input, parts, in.roof.Op(pc.backward_weight), 1, in.host.backward);
  }
  return w;
}

StepEstimate EstimateRole(const EstimateInputs& in, const RankRole& role) {
  const Plan& plan = *in.plan;
  const MeshShape& mesh = in.strategy->mesh;
  const int64_t m = std::max<int64_t>(1, plan.micro_batches);
  const PassWork w =
      RoleWork(in.costs, in.params, role, in.roof, in.training->context_parallel_comm);
  int64_t kernels = (w.forward_kernels + w.backward_kernels) * m;
  // The GPU optimizer step over the device's shard of Ω (none when Ω is offloaded).
  Duration optimizer;
  const StateBytes bpp = in.costs.bpp;
  if (role.memory.optimizer > Bytes::Zero() && bpp.optimizer > 0) {
    optimizer = in.roof.Op(in.costs.OptimizerStep(role.memory.optimizer.count() / bpp.optimizer));
    kernels += 1;
  }
  // Per-micro-batch windows: the compute-stream time of one micro-batch's forward and
  // backward (recompute included), kernel overheads included.
  const HostWaits host = HostWaitsOf(in, role);
  const Duration c_fwd = w.forward + host.forward + in.overhead * w.forward_kernels;
  const Duration c_bwd =
      w.backward + w.recompute + host.backward + host.recompute + in.overhead * w.backward_kernels;
  const Duration t_compute = (c_fwd + c_bwd) * m;
  const UnitLayout layout = UnitsOf(in, role);
  RoleComm comm = ChargeCollectives(in, role, layout);
  HideBesideWeightGradients(in, role, m, comm);
  if (in.tp_comm_overlap && mesh.tp > 1) {
    // Chunked blocks (see "overlap" in search.h): of every call one chunk stays exposed, the
    // other tp - 1 hide under the chunked passes' compute; the attention block is not chunked
    // under ring attention, nor the MLP block of a mixture of experts.
    const int64_t blocks = (mesh.cp == 1 ? 1 : 0) + (in.model->transformer.experts <= 1 ? 1 : 0);
    const Duration hideable = (w.forward + w.backward + w.recompute) * m;
    const Duration chunked = comm.tp_chunk + NonNegative(comm.tp_chunk * (mesh.tp - 1) - hideable);
    comm.tp = Scaled(comm.tp, 1 - blocks / 2.0) + Scaled(chunked, blocks / 2.0);
    kernels += blocks * m * role.layers * (mesh.tp - 1) *
               (plan.effective_recompute != Recompute::kNone ? 3 : 2);
  }
  StepEstimate e;
  e.parts = {
      (w.forward + w.backward + host.forward + host.backward) * m,
      (w.recompute + host.recompute) * m,
      in.overhead * kernels,
      optimizer,
      Scaled(t_compute, plan.bubble_fraction),
      ExposedDataParallel(comm, layout, UnitComputeOf(w, layout, in.overhead), c_fwd, c_bwd, m),
      comm.tp,
      comm.pp,
      comm.cp,
      comm.ep,
      OffloadTime(in, role)};
  for (const Duration& part : e.parts) e.total += part;
  return e;
}

// One unit of screening work: every micro-batch and recompute policy of one structure.
struct Structure {
  Candidate base;  // mesh, preset, schedule, v, sequence parallelism
  int64_t order = 0;
};

struct StructureResult {
  std::vector<ScreenedCandidate> feasible;
  SearchStats stats;
};

// The (tp_comm_overlap, gradient bucket) variants of a structure's candidates: knobs the plan
// does not read, so one Analyze serves them all. Each knob is searched only where it changes
// something (tp > 1; dp·cp > 1 with Θ replicated on dp), else left to the scenario.
std::vector<std::pair<std::optional<bool>, Bytes>> Variants(const SearchSpace& space,
                                                            const StrategySpec& strategy) {
  const MeshShape& mesh = strategy.mesh;
  std::vector<std::optional<bool>> overlaps = {std::nullopt};
  if (mesh.tp > 1 && !space.tp_comm_overlap.empty()) {
    overlaps.assign(space.tp_comm_overlap.begin(), space.tp_comm_overlap.end());
  }
  std::vector<Bytes> buckets = {Bytes::Zero()};
  if (UsesGradientBuckets(strategy) && !space.gradient_buckets.empty()) {
    buckets = space.gradient_buckets;
  }
  std::vector<std::pair<std::optional<bool>, Bytes>> out;
  for (Bytes b : buckets) {
    for (std::optional<bool> o : overlaps) out.push_back({o, b});
  }
  return out;
}

StructureResult ScreenStructure(const ModelSpec& model, const TrainingSpec& base_training,
                                const topology::ClusterSpec& cluster, const SearchSpace& space,
                                const SearchOptions& options, const Structure& st) {
  StructureResult r;
  StatusOr<StrategySpec> strategy = CandidateStrategy(st.base, cluster);
  if (!strategy.ok()) return r;
  const int64_t dp = st.base.mesh.dp;
  std::vector<int64_t> batches = space.micro_batches;
  std::sort(batches.begin(), batches.end());
  std::vector<Recompute> policies = space.recompute;
  std::sort(policies.begin(), policies.end(),
            [](Recompute a, Recompute b) { return MemoryRank(a) < MemoryRank(b); });
  std::array<int64_t, 3> fail_at;  // by MemoryRank: the smallest micro-batch that did not fit
  fail_at.fill(std::numeric_limits<int64_t>::max());
  const auto variants = Variants(space, *strategy);
  AnalyzeOptions analyze = options.analyze;
  if (st.base.reshard_after_forward) analyze.reshard_after_forward = st.base.reshard_after_forward;
  // Order: structure, recompute, micro-batch, variant (a variant is one more digit, so with
  // one variant the order is the same as without them).
  const auto n_variants = static_cast<int64_t>(std::max<size_t>(1, space.tp_comm_overlap.size()) *
                                               std::max<size_t>(1, space.gradient_buckets.size()));
  const int64_t per_structure =
      static_cast<int64_t>(space.recompute.size() * batches.size()) * n_variants;
  const auto n = static_cast<int64_t>(variants.size());
  for (Recompute rc : policies) {
    const int rank = MemoryRank(rc);
    for (int64_t mb : batches) {
      if (base_training.global_batch % (mb * dp) != 0) continue;
      r.stats.candidates += n;
      bool pruned = false;
      for (int k = 0; k <= rank; ++k) pruned = pruned || fail_at[static_cast<size_t>(k)] <= mb;
      if (pruned) {
        r.stats.pruned += n;
        continue;
      }
      Candidate c = st.base;
      c.micro_batch = mb;
      c.recompute = rc;
      const auto rc_pos =
          std::find(space.recompute.begin(), space.recompute.end(), rc) - space.recompute.begin();
      const auto mb_pos = std::find(space.micro_batches.begin(), space.micro_batches.end(), mb) -
                          space.micro_batches.begin();
      const int64_t order =
          st.order * per_structure +
          (static_cast<int64_t>(rc_pos) * static_cast<int64_t>(batches.size()) + mb_pos) *
              n_variants;
      const TrainingSpec training = CandidateTraining(c, base_training);
      ++r.stats.analyzed;
      StatusOr<Plan> plan = Analyze(model, training, *strategy, cluster, analyze);
      if (!plan.ok()) {
        r.stats.rejected += n;
        continue;
      }
      bool fits = true;
      for (const auto& role : plan->roles) fits = fits && role.memory.fits;
      if (!fits) {
        fail_at[static_cast<size_t>(rank)] = std::min(fail_at[static_cast<size_t>(rank)], mb);
        r.stats.rejected += n;
        continue;
      }
      if (!plan->ok()) {
        r.stats.rejected += n;
        continue;
      }
      for (int64_t i = 0; i < n; ++i) {
        ScreenedCandidate s;
        s.candidate = c;
        s.candidate.tp_comm_overlap = variants[static_cast<size_t>(i)].first;
        s.candidate.gradient_bucket = variants[static_cast<size_t>(i)].second;
        s.candidate.order = order + i;
        s.estimate =
            EstimateStep(model, training, *strategy, cluster, *plan,
                         GradientBucket(CandidateBucket(s.candidate, options.gradient_bucket),
                                        *strategy, training, std::nullopt),
                         s.candidate.tp_comm_overlap.value_or(false), options.host);
        s.memory = plan->largest().memory.total;
        s.capacity = plan->largest().memory.capacity;
        r.feasible.push_back(std::move(s));
        ++r.stats.feasible;
      }
    }
  }
  return r;
}

// Θ gathered (S*) over dp·cp > 1 ranks into device buffers: HoldsGatheredParameters but for
// the pipeline.
bool GathersIntoDeviceBuffers(const StrategySpec& strategy) {
  return int64_t{strategy.mesh.dp} * strategy.mesh.cp > 1 &&
         strategy.at(Axis::kData, State::kParams).mode == Mode::kShardedGather &&
         OffloadTargetOf(strategy, State::kParams) == OffloadTarget::kNone;
}

// The presets whose framework has the reshard_after_forward switch: PyTorch FSDP's
// (FrameworkDefaults). DeepSpeed's ZeRO-3 has none (export --to deepspeed says so).
bool HasReshardSwitch(std::string_view preset) {
  return preset == "fsdp" || preset == "fsdp-hybrid";
}

// The reshard_after_forward values of a structure: the space's where an FSDP preset can hold
// its gathered parameters, else the scenario's (unset). A pipelined strategy that gathers
// its parameters reshards whatever the scenario says, set explicitly: held parameters under
// a pipeline are not modelled, and the simulator refuses them.
std::vector<std::optional<bool>> ReshardChoices(const SearchSpace& space, std::string_view preset,
                                                const StatusOr<StrategySpec>& strategy,
                                                bool scenario_reshard) {
  if (!strategy.ok() || !GathersIntoDeviceBuffers(*strategy)) return {std::nullopt};
  if (strategy->mesh.pp > 1) return {scenario_reshard ? std::nullopt : std::optional<bool>(true)};
  if (!HasReshardSwitch(preset) || space.reshard_after_forward.empty()) return {std::nullopt};
  return {space.reshard_after_forward.begin(), space.reshard_after_forward.end()};
}

// Every structure of the space, in preference order.
std::vector<Structure> Structures(const ModelSpec& model, const topology::ClusterSpec& cluster,
                                  const SearchSpace& space, bool scenario_reshard) {
  const TransformerSpec& t = model.transformer;
  const int64_t world = int64_t{cluster.nodes} * cluster.node.gpus;
  auto has = [](const auto& list, const auto& v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  std::vector<Structure> out;
  for (int tp : space.tp) {
    for (int pp : space.pp) {
      for (int cp : space.cp) {
        const int64_t inner = int64_t{tp} * pp * cp;
        if (world % inner != 0 || !has(space.dp, static_cast<int>(world / inner))) continue;
        const int dp = static_cast<int>(world / inner);
        for (int ep : space.ep) {
          if (dp % ep != 0) continue;
          const MeshShape mesh{dp, tp, pp, cp, ep};
          // Pipeline schedules: one (1F1B, or GPipe when 1F1B is excluded) without pipelining.
          std::vector<std::pair<PipelineSchedule, int>> schedules;
          if (pp == 1) {
            if (!has(space.virtual_stages, 1)) continue;
            if (has(space.schedules, PipelineSchedule::k1F1B)) {
              schedules.push_back({PipelineSchedule::k1F1B, 1});
            } else if (has(space.schedules, PipelineSchedule::kGpipe)) {
              schedules.push_back({PipelineSchedule::kGpipe, 1});
            }
          } else {
            for (PipelineSchedule s : space.schedules) {
              for (int v : space.virtual_stages) {
                if ((s == PipelineSchedule::kInterleaved1F1B) != (v > 1)) continue;
                if (t.layers % (int64_t{pp} * v) != 0) continue;
                schedules.push_back({s, v});
              }
            }
          }
          std::vector<bool> sps = {false};
          if (tp > 1) sps = space.sequence_parallel;
          std::vector<std::optional<bool>> flashes = {std::nullopt};
          if (!space.flash_attention.empty()) {
            flashes.assign(space.flash_attention.begin(), space.flash_attention.end());
          }
          for (const auto& [schedule, v] : schedules) {
            for (bool sp : sps) {
              for (const std::string& preset : space.presets) {
                for (std::optional<bool> flash : flashes) {
                  // One data-parallel rank: every preset places the states the same way.
                  if (int64_t{dp} * cp == 1 && preset != space.presets.front()) continue;
                  StatusOr<StrategySpec> s = ExpandStrategyPreset(preset, mesh, cluster.node.gpus);
                  if (preset == "fsdp-hybrid" &&
                      (!s.ok() || s->shard_group_size <= 0 || s->shard_group_size >= dp)) {
                    continue;
                  }
                  Structure st;
                  st.base.mesh = mesh;
                  st.base.preset = preset;
                  st.base.schedule = schedule;
                  st.base.virtual_stages = v;
                  st.base.sequence_parallel = sp;
                  st.base.flash_attention = flash;
                  for (std::optional<bool> reshard :
                       ReshardChoices(space, preset, s, scenario_reshard)) {
                    st.base.reshard_after_forward = reshard;
                    st.order = static_cast<int64_t>(out.size());
                    out.push_back(st);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

template <typename T, typename F>
std::string JoinValues(const std::vector<T>& values, F name) {
  std::vector<std::string> names;
  for (const auto& v : values) names.push_back(name(v));
  return JoinNames(names);
}

}  // namespace

const char* CostPartName(CostPart p) {
  switch (p) {
    case CostPart::kCompute:
      return "compute";
    case CostPart::kRecompute:
      return "recompute";
    case CostPart::kKernelOverhead:
      return "kernel overhead";
    case CostPart::kOptimizer:
      return "optimizer step";
    case CostPart::kBubble:
      return "pipeline bubble";
    case CostPart::kDataParallel:
      return "exposed dp communication";
    case CostPart::kTensorParallel:
      return "tp communication";
    case CostPart::kPipelineP2p:
      return "pp send/recv";
    case CostPart::kContextParallel:
      return "cp key/value exchange";
    case CostPart::kExpertParallel:
      return "ep all-to-all";
    case CostPart::kOffload:
      return "offload copies and host optimizer";
  }
  return "unknown";
}

SearchSpace DefaultSearchSpace(const ModelSpec& model, const TrainingSpec& training,
                               const topology::ClusterSpec& cluster) {
  const TransformerSpec& t = model.transformer;
  const int64_t world = int64_t{cluster.nodes} * cluster.node.gpus;
  const int64_t kv = t.kv_heads > 0 ? t.kv_heads : t.heads;
  SearchSpace s;
  for (int d : Divisors(world)) {
    s.dp.push_back(d);
    if (t.heads % d == 0 && kv % d == 0 && d <= cluster.node.gpus && cluster.node.gpus % d == 0) {
      s.tp.push_back(d);
    }
    if (t.layers % d == 0) s.pp.push_back(d);
    if (t.seq_len % d == 0) s.cp.push_back(d);
    if (t.experts > 1 && t.experts % d == 0) s.ep.push_back(d);
  }
  if (s.ep.empty()) s.ep = {1};
  s.presets = {"ddp", "zero1", "zero2", "zero3", "fsdp-hybrid", "zero-offload"};
  for (int64_t mb : {16, 8, 4, 2, 1}) {
    if (training.global_batch % mb == 0) s.micro_batches.push_back(mb);
  }
  s.recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  s.sequence_parallel = {true};
  s.schedules = {PipelineSchedule::k1F1B, PipelineSchedule::kInterleaved1F1B,
                 PipelineSchedule::kGpipe};
  s.virtual_stages = {1, 2, 4};
  return s;
}

SearchSpace ExhaustiveSearchSpace(const ModelSpec& model, const TrainingSpec& training,
                                  const topology::ClusterSpec& cluster) {
  SearchSpace s = DefaultSearchSpace(model, training, cluster);
  // megatron is left out: it places every state as ddp does, with zero1's overheads. fsdp
  // places them as zero3 does, but with FSDP's overheads (one gather per unit, reduce-scatters
  // beside the backward) and reshard_after_forward, which DeepSpeed's ZeRO-3 lacks.
  s.presets = {"ddp",          "zero1",         "zero2",
               "zero3",        "fsdp",          "fsdp-hybrid",
               "zero-offload", "zero-infinity", "zero-infinity-host"};
  s.micro_batches.clear();
  for (int d : Divisors(training.global_batch)) s.micro_batches.push_back(d);
  std::reverse(s.micro_batches.begin(), s.micro_batches.end());  // larger first, as default
  s.sequence_parallel = {true, false};
  s.virtual_stages = Divisors(model.transformer.layers);
  s.flash_attention = {training.flash_attention, !training.flash_attention};
  s.tp_comm_overlap = {false, true};
  s.gradient_buckets = {Bytes::Zero(), kWholeGradientBucket};
  s.reshard_after_forward = {true, false};
  return s;
}

std::vector<std::string> SearchSpaceNames() { return {"default", "exhaustive"}; }

StatusOr<SearchSpace> NamedSearchSpace(std::string_view name, const ModelSpec& model,
                                       const TrainingSpec& training,
                                       const topology::ClusterSpec& cluster) {
  RETURN_IF_ERROR(CheckSearchSpaceName(name));
  if (name == "exhaustive") return ExhaustiveSearchSpace(model, training, cluster);
  return DefaultSearchSpace(model, training, cluster);
}

Status CheckSearchSpaceName(std::string_view name) {
  const std::vector<std::string> names = SearchSpaceNames();
  if (std::find(names.begin(), names.end(), name) != names.end()) return OkStatus();
  return InvalidArgumentError(
      fmt::format("--space \"{}\": unknown search space; valid: {}", name, JoinNames(names)));
}

std::vector<std::string> SearchFieldNames() {
  return std::vector<std::string>(std::begin(kFields), std::end(kFields));
}

Status FixSearchField(std::string_view field, std::string_view value, SearchSpace* space) {
  const std::string v = Normalize(value);
  auto bad = [&](const std::string& valid) {
    return InvalidArgumentError(
        fmt::format("--fix {}={}: not in the search space; valid: {}", field, value, valid));
  };
  auto fix_int = [&](auto& list) -> Status {
    using T = typename std::decay_t<decltype(list)>::value_type;
    int64_t n = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    const bool parsed = ec == std::errc() && ptr == v.data() + v.size();
    if (!parsed || std::find(list.begin(), list.end(), static_cast<T>(n)) == list.end()) {
      return bad(JoinValues(list, [](T x) { return std::to_string(x); }));
    }
    list = {static_cast<T>(n)};
    return OkStatus();
  };
  if (field == "strategy.dp") return fix_int(space->dp);
  if (field == "strategy.tp") return fix_int(space->tp);
  if (field == "strategy.pp") return fix_int(space->pp);
  if (field == "strategy.cp") return fix_int(space->cp);
  if (field == "strategy.ep") return fix_int(space->ep);
  if (field == "training.micro_batch") return fix_int(space->micro_batches);
  if (field == "training.virtual_stages") return fix_int(space->virtual_stages);
  if (field == "strategy.preset") {
    if (std::find(space->presets.begin(), space->presets.end(), v) == space->presets.end()) {
      return bad(JoinNames(space->presets));
    }
    space->presets = {v};
    return OkStatus();
  }
  if (field == "training.recompute") {
    for (Recompute r : space->recompute) {
      if (v == RecomputeName(r)) {
        space->recompute = {r};
        return OkStatus();
      }
    }
    return bad(JoinValues(space->recompute, [](Recompute r) { return RecomputeName(r); }));
  }
  if (field == "training.pipeline_schedule") {
    for (PipelineSchedule s : space->schedules) {
      if (v == PipelineScheduleName(s) ||
          (v == "interleaved" && s == PipelineSchedule::kInterleaved1F1B)) {
        space->schedules = {s};
        return OkStatus();
      }
    }
    return bad(
        JoinValues(space->schedules, [](PipelineSchedule s) { return PipelineScheduleName(s); }));
  }
  if (field == "training.sequence_parallel") {
    if (v != "true" && v != "false") return bad("true, false");
    space->sequence_parallel = {v == "true"};
    return OkStatus();
  }
  if (field == "simulation.reshard_after_forward") {
    // An empty list (the default space) holds the scenario's value; pinning either searches it.
    std::vector<bool>& list = space->reshard_after_forward;
    const bool known = v == "true" || v == "false";
    if (!known ||
        (!list.empty() && std::find(list.begin(), list.end(), v == "true") == list.end())) {
      return bad(list.empty() ? "true, false" : JoinValues(list, [](bool b) {
        return std::string(b ? "true" : "false");
      }));
    }
    list = {v == "true"};
    return OkStatus();
  }
  return InvalidArgumentError(fmt::format("--fix {}={}: unknown field; valid: {}", field, value,
                                          JoinNames(SearchFieldNames())));
}

std::string CandidateLabel(const Candidate& c) {
  std::string s =
      fmt::format("{} dp{} tp{} pp{} cp{}", c.preset, c.mesh.dp, c.mesh.tp, c.mesh.pp, c.mesh.cp);
  if (c.mesh.ep > 1) s += fmt::format(" ep{}", c.mesh.ep);
  s += fmt::format(" mb{} recompute={}", c.micro_batch, RecomputeName(c.recompute));
  if (c.sequence_parallel) s += " sp";
  if (c.mesh.pp > 1) {
    s += fmt::format(" {}", PipelineScheduleName(c.schedule));
    if (c.virtual_stages > 1) s += fmt::format(" v{}", c.virtual_stages);
  }
  if (c.flash_attention.value_or(false)) s += " flash";
  if (c.tp_comm_overlap.value_or(false)) s += " tp-overlap";
  if (c.gradient_bucket == kWholeGradientBucket) {
    s += " bucket=whole";
  } else if (c.gradient_bucket > Bytes::Zero()) {
    s += " bucket=" + ToString(c.gradient_bucket);
  }
  if (c.reshard_after_forward == false) s += " no-reshard";
  return s;
}

StatusOr<StrategySpec> CandidateStrategy(const Candidate& c, const topology::ClusterSpec& cluster) {
  return ExpandStrategyPreset(c.preset, c.mesh, std::max(1, cluster.node.gpus));
}

TrainingSpec CandidateTraining(const Candidate& c, const TrainingSpec& base) {
  TrainingSpec t = base;
  t.micro_batch = c.micro_batch;
  t.recompute = c.recompute;
  t.sequence_parallel = c.sequence_parallel && c.mesh.tp > 1;
  t.pipeline_schedule = c.schedule;
  t.virtual_stages = c.virtual_stages;
  if (c.flash_attention) t.flash_attention = *c.flash_attention;
  return t;
}

std::optional<Bytes> CandidateBucket(const Candidate& c, std::optional<Bytes> search_bucket) {
  if (c.gradient_bucket > Bytes::Zero()) return c.gradient_bucket;
  return search_bucket;
}

bool UsesGradientBuckets(const StrategySpec& strategy) {
  return int64_t{strategy.mesh.dp} * strategy.mesh.cp > 1 &&
         strategy.at(Axis::kData, State::kParams).mode == Mode::kReplicated;
}

bool HoldsGatheredParameters(const StrategySpec& strategy) {
  return strategy.mesh.pp == 1 && GathersIntoDeviceBuffers(strategy);
}

StepEstimate EstimateStep(const ModelSpec& model, const TrainingSpec& training,
                          const StrategySpec& strategy, const topology::ClusterSpec& cluster,
                          const Plan& plan, Bytes gradient_bucket, bool tp_comm_overlap,
                          const HostDispatch& host) {
  const topology::DeviceSpec& gpu = cluster.node.gpu;
  EstimateInputs in;
  in.model = &model;
  in.training = &training;
  in.strategy = &strategy;
  in.cluster = &cluster;
  in.plan = &plan;
  in.costs = cost::ComputePassCosts(model.transformer, training, strategy.mesh,
                                    plan.effective_recompute, plan.effective_sequence_parallel);
  in.params = CountParameters(model.transformer);
  in.peak = gpu.Peak(ComputeType(training.precision));
  const double efficiency = cost::StepMatmulEfficiency(model.transformer, training, strategy.mesh,
                                                       gpu, ComputeType(training.precision));
  in.roof.flops = in.peak * (efficiency > 0 ? efficiency : 1.0);
  in.roof.hbm = gpu.hbm_bandwidth * (gpu.memory_efficiency > 0 ? gpu.memory_efficiency : 1.0);
  in.overhead = gpu.kernel_overhead;
  in.bucket = std::max(Bytes::Count(1), gradient_bucket);
  in.tp_comm_overlap = tp_comm_overlap;
  in.host = host;
  const FrameworkOverheads framework = FrameworkDefaults(strategy.name);
  in.per_parameter = framework.gather == GatherGranularity::kPerParameter;
  in.matrices = LayerWeightMatrices(model.transformer);
  if (framework.max_reuse_distance.has_value()) {
    in.refetched =
        RefetchAfterRecompute(model.transformer, strategy.mesh.tp, *framework.max_reuse_distance)
            .matrices;
  }
  // The slowest role paces the step.
  StepEstimate slowest;
  slowest.total = Duration::Zero() - Duration::Picoseconds(1);
  for (const RankRole& role : plan.roles) {
    StepEstimate e = EstimateRole(in, role);
    if (e.total > slowest.total) slowest = e;
  }
  const Flops model_flops =
      ModelFlopsPerIteration(model.transformer, training.global_batch, Recompute::kNone) /
      static_cast<double>(strategy.mesh.world());
  if (slowest.total > Duration::Zero() && in.peak > FlopRate::Zero()) {
    slowest.mfu = (model_flops / in.peak) / slowest.total;
  }
  return slowest;
}

std::string DominantCostVsBest(const StepEstimate& row, const StepEstimate& best) {
  int worst = -1;
  Duration excess = Duration::Zero();
  for (int i = 0; i < kNumCostParts; ++i) {
    const Duration d = row.parts[static_cast<size_t>(i)] - best.parts[static_cast<size_t>(i)];
    if (d > excess) {
      excess = d;
      worst = i;
    }
  }
  if (worst < 0 || best.total <= Duration::Zero()) return "no part above the best";
  return fmt::format("+{:.1f}% {}", 100.0 * (excess / best.total),
                     CostPartName(static_cast<CostPart>(worst)));
}

StatusOr<SearchResult> ScreenCandidates(const ModelSpec& model, const TrainingSpec& training,
                                        const topology::ClusterSpec& cluster,
                                        const SearchSpace& space, const SearchOptions& options) {
  if (!model.has_architecture()) {
    return InvalidArgumentError(
        "model: search needs a transformer architecture (layers, hidden, heads, ...), not a bare "
        "parameter count");
  }
  if (cluster.nodes < 1 || cluster.node.gpus < 1) {
    return InvalidArgumentError("cluster: search needs at least one GPU");
  }
  if (cluster.node.gpu.Peak(ComputeType(training.precision)) <= FlopRate::Zero()) {
    return InvalidArgumentError(
        fmt::format("cluster.node.gpu: no peak rate for precision {}; the estimate needs it",
                    PrecisionName(training.precision)));
  }
  const std::vector<Structure> structures =
      Structures(model, cluster, space, options.analyze.reshard_after_forward.value_or(true));
  std::vector<StructureResult> results(structures.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next.fetch_add(1); i < structures.size(); i = next.fetch_add(1)) {
      results[i] = ScreenStructure(model, training, cluster, space, options, structures[i]);
    }
  };
  const size_t threads = std::max<size_t>(
      1, std::min<size_t>(static_cast<size_t>(std::max(1, options.jobs)), structures.size()));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();

  SearchResult out;
  for (auto& r : results) {
    out.stats.candidates += r.stats.candidates;
    out.stats.analyzed += r.stats.analyzed;
    out.stats.pruned += r.stats.pruned;
    out.stats.rejected += r.stats.rejected;
    out.stats.feasible += r.stats.feasible;
    for (auto& s : r.feasible) out.feasible.push_back(std::move(s));
  }
  std::sort(out.feasible.begin(), out.feasible.end(),
            [](const ScreenedCandidate& a, const ScreenedCandidate& b) {
              if (a.estimate.total != b.estimate.total) return a.estimate.total < b.estimate.total;
              return a.candidate.order < b.candidate.order;
            });
  return out;
}

}  // namespace placesim::strategies
