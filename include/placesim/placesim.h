// placesim as a library: load a scenario, override its fields, analyze it, simulate one
// training step, and run the studies (sweep, search, compare) — from C++, without argv.
// The `placesim` command line is this facade's first client: it adds flags and formatting,
// and its messages are these functions' messages behind "placesim COMMAND: ".
//
// Results are plain structs (the analytic strategies::Plan, sim::SimResult, the study
// structs); no JSON or protobuf type appears here. Errors are Status values whose messages
// name the field path (or the command-line flag that sets the option), the value and what is
// allowed; kInvalidArgument for bad input, kNotFound for unreadable files, kInternal for a
// bug. Nothing here throws on bad input, exits or aborts.
//
// Units: sizes are Bytes, times are Duration (int64 picoseconds), rates FlopRate/Bandwidth
// (base/units.h). A sweep point's or search row's figures carry the same units.
//
// Thread-safety: every function is reentrant and keeps its state local; calls on different
// arguments may run concurrently. A ScenarioSource is a value (copies are deep); one
// instance needs external synchronization. A trace writer must not be shared between
// concurrent simulations.
#ifndef PLACESIM_INCLUDE_PLACESIM_PLACESIM_H_
#define PLACESIM_INCLUDE_PLACESIM_PLACESIM_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/units.h"
#include "sim/executor/executor.h"
#include "sim/scenario/scenario.h"
#include "sim/study/compare.h"
#include "sim/study/search.h"
#include "sim/study/sweep.h"
#include "strategies/plan.h"
#include "traces/trace_sink.h"

namespace placesim::api {

using sim::Scenario;        // a resolved, validated scenario
using sim::ScenarioFormat;  // kAuto, kTextProto, kJson
using sim::SimResult;       // one simulated step
using strategies::Plan;     // the analytic plan

// ------------------------------------------------------------------------------ scenarios
// A parsed scenario before presets are resolved: the document, the bytes it was parsed
// from and the overrides applied so far (a sweep's fingerprint covers all three).
struct ScenarioSource {
  sim::ScenarioDocument document;
  std::string text;                    // the source bytes
  std::vector<std::string> overrides;  // "FIELD.PATH=VALUE", in the order applied
};

// Reads and parses a scenario file (.textproto, .txtpb, .pbtxt, .textpb, .txt: text format;
// .json: JSON; else sniffed). kNotFound when unreadable; parse errors as "FILE:LINE:COL: ...".
StatusOr<ScenarioSource> LoadScenarioFile(const std::string& path);
// Parses scenario text (at most sim::kMaxScenarioBytes); `name` names it in messages.
StatusOr<ScenarioSource> LoadScenarioText(std::string_view text,
                                          ScenarioFormat format = ScenarioFormat::kAuto,
                                          std::string_view name = "<input>");

// Applies "FIELD.PATH=VALUE" assignments in order (the `--set` syntax: dotted field names
// from the scenario root, `links[3]` for repeated elements, values parsed by the field's
// type, units kept: "cluster.node.nic_bandwidth=400 Gb/s"). Every bad one is reported at
// once as "bad --set override:" and one line each; `source` then keeps the good ones but
// records none. Complexity: one hash lookup per path segment.
Status ApplyOverrides(ScenarioSource* source, const std::vector<std::string>& assignments);

// Resolves presets, fills defaults and validates every rule (every problem at once).
// Does not modify `source`.
StatusOr<Scenario> Resolve(const ScenarioSource& source);

// LoadScenarioFile + ApplyOverrides + Resolve, with their messages.
StatusOr<Scenario> LoadScenario(const std::string& path,
                                const std::vector<std::string>& overrides = {});

// -------------------------------------------------------------------------------- analyze
// The analytic plan: memory per state per rank role, communication per collective, the
// correctness verdict (Plan::ok()). An incorrect strategy is a plan with findings, not an
// error. Complexity: O(layers + collectives); well under a millisecond for the examples.
StatusOr<Plan> Analyze(const Scenario& scenario);

// ------------------------------------------------------------------------------- simulate
struct SimulateOptions {
  // "" keeps the scenario's simulation.network_model; "flow" (max-min fair sharing of every
  // link) or "analytic" (alpha-beta, no contention: faster) overrides it.
  std::string network;
  // Ranks whose timelines the trace holds, strictly increasing, below the world size
  // (ParseRankList makes one from "0-7,64"). Empty: the simulated rank of each role.
  // REQUIRES a trace.
  std::vector<int64_t> trace_ranks;
  // Where the timeline goes (a traces::ChromeTraceWriter, or any other sink); not owned, may
  // be null (no trace). The caller calls Finish() after Simulate returns.
  traces::TraceSink* trace = nullptr;
};

// The option errors that need no scenario: an unknown network, trace ranks without a trace.
Status CheckSimulateOptions(const SimulateOptions& options);

// "0-7,64" -> {0..7, 64}: sorted, distinct ranks below `world`; messages name --trace-ranks.
StatusOr<std::vector<int64_t>> ParseRankList(std::string_view text, int64_t world);

// Builds the cluster and replays one training step of every pipeline stage on it; a step over
// the schedule op limit is folded (study/fold.h: SimResult::folded_from says so).
// Errors: CheckSimulateOptions'; the cluster's; the executor's refusals (kInvalidArgument,
// kOutOfRange for too large a trace, kInternal for a deadlock); the fold's (kOutOfRange: a
// folded step with a trace, or one that is not periodic).
// Complexity: the executor's (events × log events); seconds for the largest examples.
StatusOr<SimResult> Simulate(const Scenario& scenario, const SimulateOptions& options = {});

// ---------------------------------------------------------------------------------- sweep
struct SweepOptions {
  std::vector<std::string> vary;  // "FIELD.PATH=V1,V2,..." with ranges; see study/sweep.h
  std::string shard = "1/1";      // "K/N": only the points i with i % N == K - 1
  study::SweepMode mode = study::SweepMode::kAnalyze;
  std::string network = "scenario";  // with kSimulate: scenario, flow or analytic
  int64_t jobs = 0;  // 0 to 4096 threads; 0 = the hardware's concurrency. Results do not
                     // depend on it.
  // Optional; called on the calling thread about every 100 ms with (done, total).
  std::function<void(int64_t done, int64_t total)> progress;
};

struct SweepResult {
  std::string fingerprint;  // identifies the sweep for merging its shards
  study::SweepMode mode = study::SweepMode::kAnalyze;
  std::string network;
  std::vector<study::VaryAxis> axes;  // expanded values, in the order given
  int64_t total_points = 0;           // of the whole sweep, all shards together
  study::ShardSpec shard;
  std::vector<study::SweepPoint> points;  // this shard's, by global index
  int64_t failed() const;                 // points with ok == false
};

// Runs the cartesian product of the vary lists over `source` (its overrides apply to every
// point before the varied fields). Bad input — option values, malformed lists, values the
// fields refuse, more than study::kMaxSweepPoints points — is kInvalidArgument, "bad input:"
// then every problem, one per line. A point that fails is a point with its error, not an
// error of the sweep. Complexity: one Resolve + Analyze (+ SimulateStep) per point.
StatusOr<SweepResult> Sweep(const ScenarioSource& source, const SweepOptions& options);

// --------------------------------------------------------------------------------- search
// The space, the fixes, tier 2's K and network, the rows to keep, the threads.
using SearchOptions = study::SearchRequest;
// Every feasible candidate screened; `ranked` holds the best options.top by step time.
using SearchResult = study::SearchStudy;

// Ranks the strategies that fit the scenario's model on its cluster (its strategy is
// ignored). Bad options, a model without an architecture and bad fixes are
// kInvalidArgument, "bad input:" then every problem. No feasible candidate is an empty
// `ranked`, not an error. Complexity: tier 1 O(candidates), tier 2 simulate_top steps.
StatusOr<SearchResult> Search(const Scenario& scenario, const SearchOptions& options = {});

// -------------------------------------------------------------------------------- compare
// Compares two JSON result files of the same kind (analyze, simulate, sweep or merge with
// --format json, or Google Benchmark JSON); `threshold` is a fraction (0.02 for 2%;
// study::ParseThreshold reads "2%"). Unreadable or unknown files: every one's message, one
// per line, each starting with its path. Different kinds: kInvalidArgument naming both.
StatusOr<study::Comparison> Compare(const std::string& baseline_path,
                                    const std::string& current_path, double threshold = 0.02);

}  // namespace placesim::api

#endif  // PLACESIM_INCLUDE_PLACESIM_PLACESIM_H_
