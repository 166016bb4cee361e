// The public entry points of sim/export (see export.h): framework names, the dispatch to the
// three exporters, and the scenario a search candidate stands for.
#include "sim/export/export.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/errors.h"
#include "sim/export/internal.h"

namespace placesim::exporting {
namespace {

constexpr Framework kFrameworks[] = {Framework::kMegatron, Framework::kDeepSpeed, Framework::kFsdp};

}  // namespace

const char* FrameworkName(Framework f) {
  switch (f) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kDeepSpeed:
      return "deepspeed";
    case Framework::kFsdp:
      return "fsdp";
  }
  return "?";
}

std::vector<std::string> FrameworkNames() {
  std::vector<std::string> names;
  for (Framework f : kFrameworks) names.emplace_back(FrameworkName(f));
  return names;
}

StatusOr<Framework> ParseFramework(std::string_view name) {
  for (Framework f : kFrameworks) {
    if (name == FrameworkName(f)) return f;
  }
  return InvalidArgumentError(
      fmt::format("--to: \"{}\": unknown framework; valid: {}", name, JoinNames(FrameworkNames())));
}

StatusOr<Exported> Export(const sim::Scenario& scenario, Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return internal::ExportMegatron(scenario);
    case Framework::kDeepSpeed:
      return internal::ExportDeepSpeed(scenario);
    case Framework::kFsdp:
      return internal::ExportFsdp(scenario);
  }
  return InternalError("unknown framework");
}

StatusOr<sim::Scenario> ScenarioForCandidate(const sim::Scenario& scenario,
                                             const strategies::Candidate& candidate) {
  StatusOr<strategies::StrategySpec> strategy =
      strategies::CandidateStrategy(candidate, scenario.cluster);
  if (!strategy.ok()) return strategy.status();
  sim::Scenario out = scenario;
  out.name = fmt::format("{}, search row {}", scenario.name, strategies::CandidateLabel(candidate));
  out.strategy = *std::move(strategy);
  out.training = strategies::CandidateTraining(candidate, scenario.training);
  if (candidate.tp_comm_overlap) out.simulation.tp_comm_overlap = *candidate.tp_comm_overlap;
  if (candidate.reshard_after_forward) {
    out.simulation.reshard_after_forward = candidate.reshard_after_forward;
  }
  out.simulation.gradient_bucket_size =
      strategies::CandidateBucket(candidate, scenario.simulation.gradient_bucket_size);
  return out;
}

}  // namespace placesim::exporting
