// placesim as a library: the README's "Use it as a library" snippet, built by CMake so it
// cannot rot. Analyzes the ZeRO paper's 7.5B model on 64 GPUs, then sweeps the ZeRO stage.
//
//   build/release/examples/api_example examples/zero-7.5b.textproto
#include <cstdio>

#include "placesim/placesim.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: api_example SCENARIO\n");
    return 2;
  }
  namespace api = placesim::api;
  placesim::StatusOr<api::ScenarioSource> source = api::LoadScenarioFile(argv[1]);
  if (!source.ok()) {
    std::fprintf(stderr, "%s\n", source.status().message().c_str());
    return 2;
  }
  placesim::StatusOr<api::Scenario> scenario = api::Resolve(*source);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", scenario.status().message().c_str());
    return 2;
  }
  placesim::StatusOr<api::Plan> plan = api::Analyze(*scenario);
  if (!plan.ok()) return 2;
  std::printf("memory per device: %lld bytes\n",
              static_cast<long long>(plan->largest().memory.total.count()));

  api::SweepOptions sweep;
  sweep.vary = {"strategy.preset=ddp,zero1,zero2,zero3"};
  placesim::StatusOr<api::SweepResult> result = api::Sweep(*source, sweep);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().message().c_str());
    return 2;
  }
  for (const placesim::study::SweepPoint& p : result->points) {
    std::printf("%-6s %lld bytes\n", p.values[0].c_str(),
                static_cast<long long>(p.memory_total ? p.memory_total->count() : -1));
  }
  return 0;
}
