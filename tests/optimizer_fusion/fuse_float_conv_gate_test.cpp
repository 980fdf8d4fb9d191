// fuse_float_conv_gate: squeeze-excite's Mul(x, gate [N, C, 1, 1]) before a 1x1 float conv becomes
// the conv's gate input (FusedConv input 4) when the target ISA's rule says it pays; structure,
// numbers (bit-equal: the reference multiplies x by the gate, then convolves, as the graph did) and
// must-not-fire cases with the reasons inspect shows.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused_conv.h"
#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 8, 6, 6] -> c = Conv 3x3 (8 channels) -> gate g = Sigmoid(GlobalAveragePool(c)) ->
// m = Mul(c, g) -> `body` (which reads m), `out_channels` outputs of the 1x1 conv w1.
std::string gate_model(const std::string& body, int64_t out_channels, const std::string& outputs) {
  std::mt19937 rng(7);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g ({}) => ({})
<{}, {}, {}, {}, float[1,8,1,1] cg = {{0.5, 1, 2, 0.25, 1, 1, 0.5, 2}}>
{{
  c = Conv <pads = [1, 1, 1, 1]> (x, w0, b0)
  p = GlobalAveragePool(c)
  g = Sigmoid(p)
{}
}})",
                     "float[2,8,6,6] x", outputs, float_initializer("w0", {8, 8, 3, 3}, -0.5f, 0.5f, rng),
                     float_initializer("b0", {8}, -0.5f, 0.5f, rng),
                     float_initializer("w1", {out_channels, 8, 1, 1}, -0.5f, 0.5f, rng),
                     float_initializer("b1", {out_channels}, -0.5f, 0.5f, rng), body);
}

std::string out_shape(int64_t channels) { return fmt::format("float[2,{},6,6] y", channels); }

Graph fuse(const std::string& text, optimizer::PassContext& context, bool epilogue_first = false) {
  Graph original = load_text(text);
  Graph graph = original;
  if (epilogue_first) {
    optimizer::FusionPass epilogue("fuse_float_conv_epilogue");
    graph = run_pass(graph, epilogue, context);
  }
  optimizer::FusionPass gate("fuse_float_conv_gate");
  Graph fused = run_pass(graph, gate, context);
  std::mt19937 rng(3);
  expect_same_outputs(original, fused, random_inputs(original, rng, -2.0f, 2.0f), 0.0f);
  return fused;
}

const Node* gated_conv(const Graph& graph) {
  const Node* conv = find_op(graph, layers::kFusedConv);
  return conv != nullptr && conv->has_input(layers::kFusedConvGate) ? conv : nullptr;
}

std::vector<std::string> fused_nodes(const Node& node) { return node.find_attribute("fused_nodes")->strings; }

// 2 x 8 padded outputs (the scalar GEMM's tile) <= 6 x 6 pixels: the gate folds.
TEST(FuseFloatConvGate, GateMulBeforeA1x1ConvBecomesItsGateInput) {
  for (const char* product : {"m = Mul(c, g)", "m = Mul(g, c)"}) {
    SCOPED_TRACE(product);
    optimizer::PassContext context;
    context.target_isa = kernels::Isa::kScalar;
    Graph fused = fuse(gate_model(fmt::format("  {}\n  y = Conv(m, w1, b1)", product), 4, out_shape(4)), context);
    const Node* layer = gated_conv(fused);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(count_ops(fused, "Mul"), 0);
    EXPECT_EQ(layer->input(layers::kFusedConvX), "c");
    EXPECT_EQ(layer->input(layers::kFusedConvGate), "g");
    EXPECT_FALSE(layer->has_input(layers::kFusedConvResidual));
    EXPECT_EQ(layer->outputs, std::vector<std::string>{"y"});
    ASSERT_EQ(fused_nodes(*layer).size(), 2u);  // the Mul, then the conv
    EXPECT_EQ(fused_nodes(*layer)[1], layer->name);
    EXPECT_TRUE(context.float_reasons.empty());
  }
}

// A FusedConv keeps its residual and activation and takes the gate; its fused nodes start with the Mul.
TEST(FuseFloatConvGate, AFusedConvKeepsItsEpilogue) {
  optimizer::PassContext context;
  context.target_isa = kernels::Isa::kScalar;
  Graph fused = fuse(gate_model("  m = Mul(c, g)\n  q = Conv(m, w1, b1)\n  a = Add(q, x)\n  y = Relu(a)", 8,
                                out_shape(8)),
                     context, /*epilogue_first=*/true);
  const Node* layer = gated_conv(fused);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->input(layers::kFusedConvResidual), "x");
  EXPECT_EQ(layer->attrs<FusedConvAttributes>().fused.activation.kind, ActivationKind::kRelu);
  EXPECT_EQ(fused_nodes(*layer).size(), 4u);
  EXPECT_EQ(count_ops(fused, "Mul") + count_ops(fused, "Add") + count_ops(fused, "Relu"), 0);
}

// The rule follows the target ISA's GEMM tile: 2 x sgemm_padded_n(outputs) <= pixels.
TEST(FuseFloatConvGate, TheRuleFollowsTheTargetIsa) {
  for (int value = 0; value <= static_cast<int>(kernels::Isa::kAmxInt8); ++value) {
    const auto isa = static_cast<kernels::Isa>(value);
    if (!kernels::isa_supported(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    optimizer::PassContext context;
    context.target_isa = isa;
    EXPECT_EQ(context.isa(), kernels::usable_isa(isa));
    Graph fused = fuse(gate_model("  m = Mul(c, g)\n  y = Conv(m, w1, b1)", 12, out_shape(12)), context);
    const bool folds = 2 * kernels::sgemm_padded_n(12, context.isa()) <= 36;
    EXPECT_EQ(gated_conv(fused) != nullptr, folds);
    if (!folds) {
      EXPECT_NE(float_reason_for(fused, context, "y").find("36 pixels"), std::string::npos);
    }
  }
}

TEST(FuseFloatConvGate, MustNotFire) {
  optimizer::PassContext scalar;
  scalar.target_isa = kernels::Isa::kScalar;
  {
    SCOPED_TRACE("scaling the weights costs more than the Mul: 2 x 24 padded outputs > 36 pixels");
    optimizer::PassContext context = scalar;
    Graph fused = fuse(gate_model("  m = Mul(c, g)\n  y = Conv(m, w1, b1)", 20, out_shape(20)), context);
    EXPECT_EQ(gated_conv(fused), nullptr);
    EXPECT_EQ(count_ops(fused, "Mul"), 1);
    ASSERT_EQ(context.float_reasons.size(), 1u);
    EXPECT_NE(context.float_reasons[0].reason.find("costs more than half a pass"), std::string::npos)
        << context.float_reasons[0].reason;
  }
  {
    SCOPED_TRACE("the product has another reader");
    optimizer::PassContext context = scalar;
    Graph fused = fuse(gate_model("  m = Mul(c, g)\n  q = Conv(m, w1, b1)\n  y = Add(q, m)", 8, out_shape(8)),
                       context);
    EXPECT_EQ(gated_conv(fused), nullptr);
  }
  {
    SCOPED_TRACE("a 3x3 conv does not scale its weights by a gate");
    optimizer::PassContext context = scalar;
    Graph fused = fuse(gate_model("  m = Mul(c, g)\n  y = Conv <pads = [1, 1, 1, 1]> (m, w0, b0)", 8, out_shape(8)),
                       context);
    EXPECT_EQ(gated_conv(fused), nullptr);
    EXPECT_TRUE(context.float_reasons.empty());
  }
  {
    SCOPED_TRACE("a constant factor is not a gate");
    optimizer::PassContext context = scalar;
    Graph fused = fuse(gate_model("  m = Mul(c, cg)\n  y = Conv(m, w1, b1)", 4, out_shape(4)), context);
    EXPECT_EQ(gated_conv(fused), nullptr);
  }
  {
    SCOPED_TRACE("the gated tensor is the graph's input, not a channels-last conv output");
    optimizer::PassContext context = scalar;
    Graph fused = fuse(gate_model("  px = GlobalAveragePool(x)\n  gx = Sigmoid(px)\n  m = Mul(x, gx)\n"
                                  "  y = Conv(m, w1, b1)",
                                  4, out_shape(4)),
                       context);
    EXPECT_EQ(gated_conv(fused), nullptr);
    ASSERT_EQ(context.float_reasons.size(), 1u);
    EXPECT_NE(context.float_reasons[0].reason.find("channels-last"), std::string::npos) << context.float_reasons[0].reason;
  }
}

}  // namespace
}  // namespace qdqrt::testing
