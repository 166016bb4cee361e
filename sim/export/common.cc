// The shared derivations of the exporters (see internal.h): the data-parallel axis as a ZeRO
// stage, batch arithmetic, headers and the refusal list.
#include <fmt/format.h>

#include <charconv>
#include <string>
#include <vector>

#include "sim/export/internal.h"
#include "strategies/model.h"
#include "strategies/schedule.h"

namespace placesim::exporting::internal {
namespace {

using strategies::Mode;
using strategies::Placement;
using strategies::State;
using topology::Axis;

std::string Named(State s, const Placement& p) {
  return fmt::format("{} {} ({}) on dp", strategies::StateName(s), strategies::ModeSymbol(p.mode),
                     strategies::ModeName(p.mode));
}

// Whether a state counts as partitioned over dp: sharded, gathered-before-use or offloaded
// (ZeRO-Offload and ZeRO-Infinity partition what they move off the GPU).
bool Partitioned(const Placement& p) {
  return p.mode == Mode::kSharded || p.mode == Mode::kShardedGather || p.mode == Mode::kOffloaded;
}

// Refuses the placements no framework runs on the data-parallel axis.
void CheckModes(const strategies::StrategySpec& s, Findings& f) {
  const Placement& theta = s.at(Axis::kData, State::kParams);
  const Placement& act = s.at(Axis::kData, State::kActivations);
  if (theta.mode == Mode::kSharded || theta.mode == Mode::kMaterialized) {
    f.Refuse(Named(State::kParams, theta),
             "a data-parallel rank computes with every parameter; shard them with S* "
             "(gathered before use: ZeRO-3 / FSDP)");
  }
  if (act.mode != Mode::kReplicated) {
    f.Refuse(Named(State::kActivations, act),
             "every data-parallel rank keeps the activations of its own micro-batches; "
             "training.recompute is the way to shrink them");
  }
  for (State st : {State::kOptimizer, State::kGrads}) {
    const Placement& p = s.at(Axis::kData, st);
    if (p.mode == Mode::kShardedGather || p.mode == Mode::kMaterialized) {
      f.Refuse(Named(st, p), "ZeRO and FSDP shard this state (S) or offload it (O)");
    }
  }
}

}  // namespace

void Findings::Refuse(std::string_view what, std::string_view why) {
  refusals_.AddLine(fmt::format("{} cannot express {}: {}", framework_, what, why));
}

DataParallelPlan ReadDataParallel(const strategies::StrategySpec& s, Findings& f) {
  CheckModes(s, f);
  const Placement& theta = s.at(Axis::kData, State::kParams);
  const Placement& omega = s.at(Axis::kData, State::kOptimizer);
  const Placement& grad = s.at(Axis::kData, State::kGrads);
  DataParallelPlan p;
  p.zero_stage = Partitioned(theta) ? 3 : Partitioned(grad) ? 2 : Partitioned(omega) ? 1 : 0;
  if (p.zero_stage >= 2 && !Partitioned(omega)) {
    f.Refuse(fmt::format("{} with {}", Named(State::kGrads, grad), Named(State::kOptimizer, omega)),
             "ZeRO's stages nest: sharding gradients (stage 2) or parameters (stage 3) "
             "shards the optimizer state too");
  }
  if (p.zero_stage == 3 && !Partitioned(grad)) {
    f.Refuse(fmt::format("{} with {}", Named(State::kParams, theta), Named(State::kGrads, grad)),
             "ZeRO-3 and FSDP shard the gradients of the parameters they shard");
  }
  const bool omega_off = omega.mode == Mode::kOffloaded;
  const bool grad_off = grad.mode == Mode::kOffloaded;
  if (omega_off != grad_off) {
    f.Refuse(fmt::format("{} with {}", Named(State::kOptimizer, omega), Named(State::kGrads, grad)),
             "optimizer offload runs the optimizer step on the host, so the gradient shards "
             "move there with the optimizer state (place both offloaded, or neither)");
  }
  if (omega_off) p.optimizer_offload = omega.target;
  if (theta.mode == Mode::kOffloaded) p.param_offload = theta.target;
  if (p.zero_stage >= 1 && s.shard_group_size > 0 && s.shard_group_size < s.mesh.dp) {
    p.shard_group = s.shard_group_size;
  }
  return p;
}

int64_t GradientAccumulationSteps(const sim::Scenario& scenario) {
  const int64_t per_step = scenario.training.micro_batch * scenario.strategy.mesh.dp;
  return per_step > 0 ? scenario.training.global_batch / per_step : 1;
}

Bytes SimulatedBucket(const sim::Scenario& scenario) {
  return strategies::GradientBucket(scenario.simulation.gradient_bucket_size, scenario.strategy,
                                    scenario.training, scenario.simulation.overlap_grad_reduce);
}

int64_t BucketElements(const sim::Scenario& scenario) {
  return SimulatedBucket(scenario).count() / strategies::BytesPerParameter(scenario.training).grads;
}

std::string Decimal(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : fmt::format("{}", v);
}

std::vector<std::string> HeaderLines(const sim::Scenario& scenario, std::string_view what) {
  const topology::MeshShape& m = scenario.strategy.mesh;
  std::vector<std::string> lines;
  lines.push_back(
      fmt::format("{} for scenario \"{}\", exported by placesim.", what, scenario.name));
  lines.push_back(fmt::format("strategy {}: {} GPUs = dp {} x tp {} x pp {} x cp {}{}",
                              scenario.strategy.name, m.world(), m.dp, m.tp, m.pp, m.cp,
                              m.ep > 1 ? fmt::format(" (ep {} inside dp)", m.ep) : ""));
  if (scenario.cluster.node.gpus > 0) {
    lines.push_back(fmt::format("cluster: {} node(s) x {} GPUs", scenario.cluster.nodes,
                                scenario.cluster.node.gpus));
  }
  return lines;
}

void RequireArchitecture(const sim::Scenario& scenario, Findings& findings) {
  if (!scenario.model.has_architecture()) {
    findings.Refuse("a model given by its parameter count alone",
                    "the framework builds the model from its layers, hidden size and heads; "
                    "describe the architecture in the scenario's model");
  }
}

}  // namespace placesim::exporting::internal
