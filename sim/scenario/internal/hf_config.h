// Reads a Hugging Face transformers `config.json` into the model vocabulary (TransformerSpec):
// the shape of Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V3, GPT-2 and
// GPT-NeoX models, by their `model_type`. Internal to sim/scenario (model.hf_config).
//
// Invariants: the keys read and their defaults are those of transformers' configuration_*.py
// for each model_type; the keys that fix the parameter count (layers, widths, heads, vocab,
// experts) are required, never defaulted, so a truncated config is an error and not a
// different model. seq_len is not read (see scenario.proto, Model.hf_config).
// Thread-safety: stateless.
#ifndef PLACESIM_SIM_SCENARIO_INTERNAL_HF_CONFIG_H_
#define PLACESIM_SIM_SCENARIO_INTERNAL_HF_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "strategies/spec.h"

namespace placesim::sim::scenario_internal {

// The model_type values ReadHfConfig understands, in the order of its error messages.
const std::vector<std::string>& HfModelTypes();

// Parses `text`, the contents of the config at `path` (named in every message). The result
// is a ModelSpec named after the config's model_type, with seq_len 0 and, for MoE models,
// dropless routing (capacity_factor 0).
// Errors: kInvalidArgument "PATH: $.KEY: PROBLEM; ALLOWED" for malformed JSON, an unknown
// model_type, a missing required key, a value of the wrong type or out of range, or a
// feature the model vocabulary cannot hold (Qwen3-MoE mlp_only_layers, DeepSeek
// moe_layer_freq != 1).
StatusOr<strategies::ModelSpec> ParseHfConfig(std::string_view text, std::string_view path);

// Reads the file at `path`, then ParseHfConfig. kNotFound when it cannot be read.
StatusOr<strategies::ModelSpec> ReadHfConfig(const std::string& path);

}  // namespace placesim::sim::scenario_internal

#endif  // PLACESIM_SIM_SCENARIO_INTERNAL_HF_CONFIG_H_
