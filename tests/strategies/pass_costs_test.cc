// Oracle tests of cost::PassCosts against Narayanan et al. 2021 eq. 3 and the buffer
// formulas of docs/schedule.md, on a small GPT shape where every term is easy to write out.
#include "strategies/cost/pass_costs.h"

#include <gtest/gtest.h>

#include "strategies/cost/arith.h"
#include "strategies/presets.h"

namespace placesim::strategies::cost {
namespace {

// A GPT shape (kv_heads = heads, f = 4h, biases): h = 64, a = 4, s = 32, V = 1000.
TransformerSpec Gpt() {
  TransformerSpec t;
  t.layers = 4;
  t.hidden = 64;
  t.heads = 4;
  t.kv_heads = 4;
  t.ffn_hidden = 256;
  t.vocab = 1000;
  t.seq_len = 32;
  t.biases = true;
  t.learned_position_embeddings = true;
  return t;
}

TrainingSpec Training(int64_t micro_batch) {
  TrainingSpec training;
  training.micro_batch = micro_batch;
  return training;
}

topology::MeshShape Mesh(int tp, int cp) {
  topology::MeshShape mesh;
  mesh.tp = tp;
  mesh.cp = cp;
  return mesh;
}

TEST(CeilDiv, RoundsUpAndLeavesSplitsOverOneDeviceWhole) {
  EXPECT_EQ(CeilDiv(7, 2), 4);
  EXPECT_EQ(CeilDiv(8, 2), 4);
  EXPECT_EQ(CeilDiv(7, 1), 7);
  EXPECT_EQ(CeilDiv(7, 0), 7);
}

TEST(RingBytesPerDevice, AllReduceMovesTwiceNMinusOneOverNRoundedToNearest) {
  // 2 x 3 / 4 x 10 = 15; 1 x 2 / 3 x 10 = 6.67 -> 7; one device moves nothing.
  EXPECT_EQ(RingBytesPerDevice(Bytes::Count(10), 2, 4), Bytes::Count(15));
  EXPECT_EQ(RingBytesPerDevice(Bytes::Count(10), 1, 3), Bytes::Count(7));
  EXPECT_EQ(RingBytesPerDevice(Bytes::Count(10), 2, 1), Bytes::Zero());
}

TEST(PassCosts, LayerForwardIsEquationThree) {
  // b = 2, s = 32, h = 64: 24 b s h^2 + 4 b s^2 h = 6,291,456 + 524,288 = 6,815,744.
  const PassCosts c = ComputePassCosts(Gpt(), Training(2), Mesh(1, 1), Recompute::kNone, false);
  EXPECT_DOUBLE_EQ(c.forward.whole.flops.count(), 6'815'744.0);
  EXPECT_DOUBLE_EQ(c.forward.Total().flops.count(), 6'815'744.0);
  // Backward-input and backward-weight one forward each.
  EXPECT_DOUBLE_EQ(c.backward_input.Total().flops.count(), 6'815'744.0);
  EXPECT_DOUBLE_EQ(c.backward_weight.flops.count(), 6'815'744.0);
  // No recompute: nothing re-run.
  EXPECT_DOUBLE_EQ(c.recompute_pass.Total().flops.count(), 0.0);
  // The output layer: 2 b s h V = 2 x 2 x 32 x 64 x 1000 = 8,192,000 a pass.
  EXPECT_DOUBLE_EQ(c.output_forward.flops.count(), 8'192'000.0);
  EXPECT_DOUBLE_EQ(c.OutputBackwardWeight(10).flops.count(), 8'192'000.0);
  EXPECT_EQ(c.OutputBackwardWeight(10).written, Bytes::Count(10 * c.bpp.grads));
}

TEST(PassCosts, TensorParallelismSplitsTheLayerIntoTwoBlocksOfOneTthTheWork) {
  // tp = 2: attention (8 b s h^2 + 4 b s^2 h) / 2 = (2,097,152 + 524,288) / 2 = 1,310,720;
  // MLP 16 b s h^2 / 2 = 2,097,152; the whole op is not emitted.
  const PassCosts c = ComputePassCosts(Gpt(), Training(2), Mesh(2, 1), Recompute::kNone, false);
  EXPECT_DOUBLE_EQ(c.forward.attention.flops.count(), 1'310'720.0);
  EXPECT_DOUBLE_EQ(c.forward.mlp.flops.count(), 2'097'152.0);
  EXPECT_DOUBLE_EQ(c.forward.whole.flops.count(), 0.0);
  EXPECT_DOUBLE_EQ(c.forward.Total().flops.count(), 6'815'744.0 / 2);
}

TEST(PassCosts, SelectiveRecomputeReRunsTheAttentionCore) {
  // 4 b s^2 h = 4 x 2 x 1024 x 64 = 524,288.
  const PassCosts c =
      ComputePassCosts(Gpt(), Training(2), Mesh(1, 1), Recompute::kSelective, false);
  EXPECT_DOUBLE_EQ(c.recompute_pass.whole.flops.count(), 524'288.0);
  EXPECT_EQ(c.recompute_pass.whole.written, c.layer_full - c.layer_kept);
}

TEST(PassCosts, BuffersFollowTheShardOfTheSequenceAndHeads) {
  // b = 2, s = 32 over cp = 2 -> s_c = 16 tokens; h = 64; tp = 2.
  const PassCosts c = ComputePassCosts(Gpt(), Training(2), Mesh(2, 2), Recompute::kNone, true);
  EXPECT_EQ(c.tokens, 16);
  EXPECT_EQ(c.tp_buffer, Bytes::Count(2 * 2 * 16 * 64));     // 2 b s_c h = 4096
  EXPECT_EQ(c.p2p, Bytes::Count(2 * 2 * 16 * 64 / 2));       // / t = 2048
  EXPECT_EQ(c.io, Bytes::Count(2 * 2 * 16 * 64 / 2));        // sequence parallel: / t
  EXPECT_EQ(c.kv, Bytes::Count(2 * 2 * 16 * (64 / 2) * 2));  // K and V, half the heads
  EXPECT_EQ(c.all_to_all, Bytes::Zero());                    // dense
  EXPECT_EQ(c.embedding_activations, Bytes::Count(2 * 16 * 64 / 2));
}

TEST(PassCosts, MoeLayerIsAttentionRouterAndExperts) {
  // Mixtral 8x7B (h = 4096, s = 4096, 8 SwiGLU experts of f = 14336, top-2, capacity 1),
  // b = 1, ep = 8, tp = 1. Router: 2 b s h E = 2 x 4096 x 4096 x 8 = 268,435,456 FLOPs.
  // Experts: top_k x cf = 2 MLPs a token, each 2 x 3 h f = 352,321,536 FLOPs:
  // 2 x 4096 x 352,321,536 = 2,886,218,022,912. All-to-all: 2 x (2 b s h) = 67,108,864 bytes.
  const TransformerSpec& t = FindModelPreset("mixtral-8x7b")->transformer;
  topology::MeshShape mesh = Mesh(1, 1);
  mesh.dp = 8;
  mesh.ep = 8;
  const PassCosts c = ComputePassCosts(t, Training(1), mesh, Recompute::kNone, false);
  EXPECT_DOUBLE_EQ(c.forward.router.flops.count(), 268'435'456.0);
  EXPECT_DOUBLE_EQ(c.forward.experts.flops.count(), 2'886'218'022'912.0);
  EXPECT_DOUBLE_EQ(c.forward.whole.flops.count(), 0.0);
  EXPECT_DOUBLE_EQ(c.forward.mlp.flops.count(), 0.0);
  EXPECT_EQ(c.all_to_all, Bytes::Count(67'108'864));
  // Each rank holds 8 / ep = 1 expert of 3 h f = 176,160,768 parameters.
  EXPECT_EQ(c.layer_expert_elements, 176'160'768);
}

}  // namespace
}  // namespace placesim::strategies::cost
