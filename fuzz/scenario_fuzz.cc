// libFuzzer harness: a scenario (text format or JSON) with `--set` overrides, through load,
// overrides, resolve, analyze and, for small scenarios, one simulated step.
//
// Input: SCENARIO [\0 FIELD.PATH=VALUE]... — the bytes up to the first NUL are the scenario
// (JSON when they start with '{'), each NUL-separated piece after it one override. Any
// status is fine except kInternal, which placesim reserves for its own bugs; crashes, hangs,
// sanitizer reports and kInternal are findings. The simulation is capped (world, layers,
// micro-batches) so that each input takes milliseconds, as libFuzzer needs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "placesim/placesim.h"

namespace {

// True when `s` is OK; aborts (a finding) when it is kInternal, placesim's own bug.
bool Ok(const placesim::Status& s, const char* stage) {
  if (s.code() != placesim::StatusCode::kInternal) return s.ok();
  std::fprintf(stderr, "internal error in %s: %s\n", stage, std::string(s.message()).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  std::vector<std::string> sets;
  for (size_t at = nul; at != std::string_view::npos && at < input.size();) {
    const size_t next = input.find('\0', at + 1);
    sets.emplace_back(input.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    at = next;
  }
  const auto format = !text.empty() && text.front() == '{'
                          ? placesim::api::ScenarioFormat::kJson
                          : placesim::api::ScenarioFormat::kTextProto;
  auto source = placesim::api::LoadScenarioText(text, format, "fuzz");
  if (!Ok(source.status(), "load") || !Ok(placesim::api::ApplyOverrides(&*source, sets), "set")) {
    return 0;
  }
  auto scenario = placesim::api::Resolve(*source);
  if (!Ok(scenario.status(), "resolve")) return 0;
  auto plan = placesim::api::Analyze(*scenario);
  if (!Ok(plan.status(), "analyze")) return 0;
  // One step of a small scenario simulates in milliseconds; a large one can take seconds.
  if (plan->world <= 16 && plan->micro_batches <= 8 && scenario->model.transformer.layers <= 8) {
    Ok(placesim::api::Simulate(*scenario).status(), "simulate");
  }
  return 0;
}
