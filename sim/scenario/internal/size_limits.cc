// Size limits of a scenario (see size_limits.h). Each product mirrors one formula of
// strategies/model.cc and strategies/analyzer.cc at its largest, in bytes of 16-bit values.
#include "sim/scenario/internal/size_limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace placesim::sim::scenario_internal {
namespace {

struct Factor {
  const char* field;  // the scenario field, e.g. "model.seq_len"
  double value;
  int power = 1;  // seq_len² in the attention scores
};

// Adds a problem when constant × the factors exceeds kMaxModelBytes.
void Limit(const char* what, double constant, const std::vector<Factor>& factors,
           ErrorList* errors) {
  double bytes = constant;
  std::vector<std::string> names, values;
  for (const Factor& f : factors) {
    for (int i = 0; i < f.power; ++i) bytes *= f.value;
    const char* square = f.power == 2 ? "²" : "";
    names.push_back(fmt::format("{}{}", f.field, square));
    values.push_back(fmt::format("{}{}", f.value, square));
  }
  if (bytes <= kMaxModelBytes) return;
  errors->Add(fmt::format("{}", fmt::join(names, " × ")),
              fmt::format("{}", fmt::join(values, " × ")),
              fmt::format("{} would take {:.3g} bytes, over the limit of 2^60 = {:.3g} bytes; "
                          "lower one of them",
                          what, bytes, kMaxModelBytes));
}

}  // namespace

void CheckSizeLimits(const strategies::TransformerSpec& t, const strategies::TrainingSpec& tr,
                     int64_t dp, ErrorList* errors) {
  if (t.layers <= 0) return;  // a bare parameter count: no shapes to multiply
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  const Factor layers{"model.layers", d(t.layers)};
  const Factor hidden{"model.hidden", d(t.hidden)};
  const Factor seq{"model.seq_len", d(t.seq_len)};
  const Factor micro{"training.micro_batch", d(tr.micro_batch)};
  // Model states: 12 l h² weights at up to 16 bytes each (Adam, mixed precision).
  Limit("the model states", 16.0 * 12.0, {layers, hidden, {"model.hidden", d(t.hidden)}}, errors);
  Limit("the embeddings' states", 16.0, {{"model.vocab", d(t.vocab)}, hidden}, errors);
  const int64_t expert_ffn = t.expert_ffn_hidden > 0 ? t.expert_ffn_hidden : t.ffn_hidden;
  if (t.experts > 1) {
    Limit("the experts' states", 16.0 * 3.0,
          {{"model.experts", d(t.experts)},
           hidden,
           {"model.expert_ffn_hidden", d(expert_ffn)},
           layers},
          errors);
  }
  // Per micro-batch, over all layers: the attention scores (9 a s² b in the memory traffic),
  // the projections' inputs and outputs (8 s b a d), the layer inputs (11 s b h) and the
  // MLP's inner activations (6 s b f, times top_k × capacity_factor for experts).
  const int64_t head_dim = t.head_dim > 0 ? t.head_dim : (t.heads > 0 ? t.hidden / t.heads : 0);
  // Flash attention never forms the scores (model.cc skips the term).
  if (!tr.flash_attention) {
    Limit("the attention scores of one micro-batch", 9.0,
          {{"model.heads", d(t.heads)}, {"model.seq_len", d(t.seq_len), 2}, micro, layers}, errors);
  }
  Limit("the attention projections of one micro-batch", 8.0,
        {seq,
         micro,
         {"model.heads", d(t.heads)},
         {"model.head_dim", d(std::max<int64_t>(1, head_dim))},
         layers},
        errors);
  Limit("the layer inputs of one micro-batch", 11.0, {seq, micro, hidden, layers}, errors);
  const double moe =
      t.experts > 1
          ? std::max(1.0, d(t.top_k) * std::max(t.capacity_factor, 1.0) * t.routing_imbalance)
          : 1.0;
  std::vector<Factor> mlp = {
      seq, micro, {"model.ffn_hidden", d(std::max(t.ffn_hidden, expert_ffn))}, layers};
  if (t.experts > 1) {
    mlp.push_back({"model.top_k", d(t.top_k)});
    mlp.push_back({"model.capacity_factor", std::max(t.capacity_factor, 1.0)});
    mlp.push_back({"model.shared_experts + 1", d(t.shared_experts + 1)});
  }
  Limit("the MLP activations of one micro-batch", 6.0, mlp, errors);
  Limit("the logits of one micro-batch", 8.0, {seq, micro, {"model.vocab", d(t.vocab)}}, errors);
  // A step's traffic per device: every layer's activations moved a few times per micro-batch,
  // for global_batch / dp sequences.
  Limit("one step's activation traffic per device", 8.0 * moe,
        {{"training.global_batch / strategy.dp", d(tr.global_batch) / d(std::max<int64_t>(1, dp))},
         seq,
         hidden,
         layers},
        errors);
}

}  // namespace placesim::sim::scenario_internal
