// Scenario loading: from a .textproto or .json file (the schema is
// sim/scenario/proto/scenario.proto) to plain typed structs the rest of placesim uses.
//
// The pipeline is parse -> apply `--set` overrides -> resolve presets and merge their
// overrides -> validate (every problem at once) -> convert. Protobuf never appears in this
// header: callers see only Scenario and ScenarioDocument.
//
// Errors (never exceptions, never a crash, whatever the input):
//   * parse errors: kInvalidArgument, "FILE:LINE:COLUMN: message" (JSON errors that protobuf
//     reports without a position carry the field path instead);
//   * override and validation errors: kInvalidArgument, a header line then one problem per
//     line as "PATH: VALUE: RULE", listing valid names for unknown fields and presets;
//   * a missing or unreadable file: kNotFound.
// Inputs are bounded: files and texts above kMaxScenarioBytes are refused, and every count
// (nodes, GPUs, vertices, ...) is range-checked before anything is built.
//
// Thread-safety: the free functions are thread-safe. A ScenarioDocument is a value; distinct
// documents may be used from different threads, one document needs external synchronization.
#ifndef PLACESIM_SIM_SCENARIO_SCENARIO_H_
#define PLACESIM_SIM_SCENARIO_SCENARIO_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/collectives/simulation_settings.h"
#include "sim/economics/settings.h"
#include "strategies/spec.h"
#include "topology/spec.h"

namespace placesim::sim {

// A fully resolved scenario: presets expanded, overrides applied, defaults filled in, and
// every rule of the schema checked. Every field holds a real value (no "unset").
struct Scenario {
  std::string name;
  std::string description;
  topology::ClusterSpec cluster;
  strategies::ModelSpec model;
  strategies::TrainingSpec training;
  // The mesh is complete (dp derived when the file left it 0) and dp*tp*pp*cp equals the
  // cluster's GPU count.
  strategies::StrategySpec strategy;
  // How to simulate it (the `simulation` message; defaults when absent).
  SimulationSettings simulation;
  // Cost and energy settings (the `economics` message); absent when the file has none, and
  // then no cost or energy figure is printed.
  std::optional<economics::EconomicsSettings> economics;
};

enum class ScenarioFormat {
  kAuto,       // JSON when the first non-blank character is '{', text format otherwise
  kTextProto,  // Protobuf text format
  kJson,       // Protobuf's JSON mapping
};

// Scenario files larger than this are refused with a clear message.
inline constexpr int64_t kMaxScenarioBytes = int64_t{16} << 20;  // 16 MiB

// A parsed scenario document that can be overridden field by field and resolved many times,
// so a sweep parses its file once and produces each point with a copy, a few overrides and
// a Resolve(). Copies are deep and independent.
class ScenarioDocument {
 public:
  // An empty document (every field unset); Resolve() reports what is missing.
  ScenarioDocument();
  ~ScenarioDocument();
  ScenarioDocument(const ScenarioDocument& other);
  ScenarioDocument& operator=(const ScenarioDocument& other);
  ScenarioDocument(ScenarioDocument&& other) noexcept;
  ScenarioDocument& operator=(ScenarioDocument&& other) noexcept;

  // Parses `text` (at most kMaxScenarioBytes). `display_name` names the input in messages
  // and, without its directory and extension, is the scenario's default name.
  static StatusOr<ScenarioDocument> Parse(std::string_view text, ScenarioFormat format,
                                          std::string_view display_name = "<input>");
  // Reads and parses a file; the format follows the extension (.textproto, .txtpb, .pbtxt,
  // .textpb, .txt: text; .json: JSON), else it is sniffed. kNotFound when unreadable.
  static StatusOr<ScenarioDocument> ReadFile(const std::string& path);

  // Sets the scalar field at `path` (dotted field names from the Scenario root, repeated
  // elements indexed as `links[3]`) from `value` parsed by the field's type:
  //   integers  decimal digits with an optional sign, range-checked for the field's type;
  //   doubles   a finite decimal number ("0.45", "1e-3");
  //   bools     true or false (any case);
  //   strings   the text as is, or inside matching single or double quotes;
  //   enums     the full name (RECOMPUTE_FULL) or the short one (full), any case, '-' = '_'.
  // Sub-messages along the path are created on demand; a repeated index must exist.
  // On error the document is unchanged and the message names the path, the value and what
  // is allowed (valid field names, enum names or the integer range).
  // Complexity: one hash lookup per path segment.
  Status ApplyOverride(std::string_view path, std::string_view value);
  // Same, for one "FIELD.PATH=VALUE" string (split at the first '=').
  Status ApplyOverride(std::string_view assignment);
  // Applies every assignment in order and reports every bad one at once; the good ones are
  // applied even when others fail.
  Status ApplyOverrides(const std::vector<std::string>& assignments);

  // Resolves presets, fills defaults, validates every rule and converts. Does not modify the
  // document, so one document may be resolved any number of times.
  StatusOr<Scenario> Resolve() const;

  // The document in Protobuf text format (overrides included, presets not expanded).
  std::string ToTextProto() const;
  const std::string& display_name() const;

 private:
  struct Impl;
  explicit ScenarioDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Loads a scenario file and applies `overrides` ("field.path=value" strings, applied in
// order after parsing, before presets are resolved, so they override the file and presets).
StatusOr<Scenario> LoadScenarioFile(const std::string& path,
                                    const std::vector<std::string>& overrides);

// Same, from text already in memory.
StatusOr<Scenario> LoadScenarioText(std::string_view text, ScenarioFormat format,
                                    const std::vector<std::string>& overrides,
                                    std::string_view display_name = "<input>");

}  // namespace placesim::sim

#endif  // PLACESIM_SIM_SCENARIO_SCENARIO_H_
