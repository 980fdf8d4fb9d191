// fuse_channel_gate: squeeze-excite's Mul(x, gate [N, C, 1, 1]) -> Q becomes one ChannelGate;
// structure, numbers (bit-equal: the same Mul and QuantizeLinear) and must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x -> GlobalAveragePool -> Sigmoid = gate (or `gate_op`), Mul(x, gate) [-> Q -> DQ] -> y.
std::string gate_model(const std::string& gate_op, bool output_q, bool gate_first = false) {
  std::string body = "p = GlobalAveragePool(x)\n" + gate_op;
  body += gate_first ? "m = Mul(g, x)\n" : "m = Mul(x, g)\n";
  body += output_q ? "mq = QuantizeLinear(m, ys, yz)\ny = DequantizeLinear(mq, ys, yz)\n" : "y = Identity(m)\n";
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,8,5,5] x) => (float[2,8,5,5] y)\n"
                     "<float ys = {{0.01}}, int8 yz = {{3}}, float[1,8,1,1] cg = {{0.5, 1, 2, 0.25, 1, 1, 0.5, 2}}>\n"
                     "{{\n{}}}\n",
                     body);
}

Graph fuse(const std::string& text, Graph& original) {
  original = load_text(text);
  optimizer::PassContext context;
  optimizer::FusionPass gate("fuse_channel_gate");
  Graph fused = run_pass(original, gate, context);
  std::mt19937 rng(3);
  TensorMap inputs = random_inputs(original, rng, -2.0f, 2.0f);
  expect_same_outputs(original, fused, inputs, 0.0f);
  return fused;
}

TEST(FuseChannelGate, SqueezeExciteMulThenQBecomesOneLayer) {
  for (bool gate_first : {false, true}) {
    SCOPED_TRACE(gate_first ? "Mul(gate, x)" : "Mul(x, gate)");
    Graph original;
    Graph fused = fuse(gate_model("g = Sigmoid(p)\n", true, gate_first), original);
    EXPECT_EQ(count_ops(fused, "Mul"), 0);
    EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 0);
    const Node* gate = find_op(fused, layers::kChannelGate);
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->input(layers::kGateX), "x");
    EXPECT_EQ(gate->input(layers::kGateGate), "g");
  }
}

TEST(FuseChannelGate, MustNotFireWithoutAQConstantGateOrOtherGateShape) {
  Graph original;
  Graph no_q = fuse(gate_model("g = Sigmoid(p)\n", false), original);
  EXPECT_EQ(count_ops(no_q, "Mul"), 1);
  // A constant per-channel factor is the pointwise fusion's (a program constant), not a gate.
  std::string constant_text = gate_model("g = Sigmoid(p)\n", true);
  constant_text.replace(constant_text.find("m = Mul(x, g)"), 13, "m = Mul(x, cg)");
  Graph constant = fuse(constant_text, original);
  EXPECT_EQ(count_ops(constant, layers::kChannelGate), 0);
  // A [N, 1, H, W] spatial gate is not a channel gate.
  Graph spatial = fuse(gate_model("r = ReduceMean <axes = [1], keepdims = 1> (x)\ng = Sigmoid(r)\n", true), original);
  EXPECT_EQ(count_ops(spatial, layers::kChannelGate), 0);
  EXPECT_EQ(count_ops(spatial, "Mul"), 1);
}

}  // namespace
}  // namespace qdqrt::testing
