// fuse_float_conv_epilogue: a float Conv [-> residual Add] [-> Relu/Clip/Sigmoid/HardSwish/SiLU]
// becomes one FusedConv; structure, numbers (bit-equal: the reference runs the same ops in the same
// order) and must-not-fire cases with the reasons inspect shows.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused_conv.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 4, 6, 6] -> r = Relu(x) -> c = Conv(x) (4 -> 4 channels, 3x3, pads 1, `group`) -> `body`.
std::string conv_model(const std::string& body, int64_t group = 1, const std::string& outputs = "float[2,4,6,6] y") {
  std::mt19937 rng(5);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,4,6,6] x) => ({})
<{}, {}, float lo = {{-0.25}}, float hi = {{0.5}}>
{{
  r = Relu(x)
  c = Conv <group = {}, pads = [1, 1, 1, 1]> (x, w, bias)
{}
}})",
                     outputs, float_initializer("w", {4, 4 / group, 3, 3}, -0.5f, 0.5f, rng),
                     float_initializer("bias", {4}, -0.5f, 0.5f, rng), group, body);
}

Graph fuse(const std::string& text, optimizer::PassContext& context) {
  Graph original = load_text(text);
  optimizer::FusionPass pass("fuse_float_conv_epilogue");
  Graph fused = run_pass(original, pass, context);
  std::mt19937 rng(3);
  expect_same_outputs(original, fused, random_inputs(original, rng, -2.0f, 2.0f), 0.0f);
  return fused;
}

const Node* fused_conv(const Graph& graph) { return find_op(graph, layers::kFusedConv); }

std::vector<std::string> fused_nodes(const Node& node) { return node.find_attribute("fused_nodes")->strings; }

TEST(FuseFloatConvEpilogue, SiluResidualAndClampsJoinTheConv) {
  struct Case {
    std::string body;
    std::string function, activation;
    bool residual;
    size_t nodes;
  };
  const std::vector<Case> cases = {
      {"  s = Sigmoid(c)\n  y = Mul(c, s)", "SiLU", "", false, 3},
      {"  s = Sigmoid(c)\n  y = Mul(s, c)", "SiLU", "", false, 3},
      {"  a = Add(r, c)\n  y = Relu(a)", "", "Relu", true, 3},
      {"  a = Add(c, r)\n  s = Sigmoid(a)\n  y = Mul(a, s)", "SiLU", "", true, 4},
      {"  y = Clip(c, lo, hi)", "", "Clip", false, 2},
      {"  y = Sigmoid(c)", "Sigmoid", "", false, 2},
      {"  y = HardSwish(c)", "HardSwish", "", false, 2},
      {"  y = Add(c, r)", "", "", true, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    optimizer::PassContext context;
    Graph fused = fuse(conv_model(c.body), context);
    const Node* layer = fused_conv(fused);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(fused.nodes.size(), c.residual ? 2u : 1u);  // [the Relu writing r,] the FusedConv
    EXPECT_EQ(fused_nodes(*layer).size(), c.nodes);
    EXPECT_EQ(fused_nodes(*layer)[0], layer->name);  // the conv's
    EXPECT_EQ(layer->input(layers::kFusedConvResidual), c.residual ? "r" : "");
    EXPECT_EQ(layer->outputs[0], "y");
    const auto& attributes = layer->attrs<FusedConvAttributes>();
    EXPECT_EQ(conv_epilogue_function_name(attributes.function), c.function);
    EXPECT_EQ(activation_kind_name(attributes.fused.activation.kind), c.activation);
    EXPECT_TRUE(context.float_reasons.empty());
  }
}

// torch's hardswish below opset 14: HardSigmoid<alpha=1/6, beta=0.5>(v) then Mul(v, .), in either
// operand order, is a HardSwish epilogue (within 1e-6: the reference's HardSwish rounds once where
// the two nodes round twice). The default HardSigmoid (alpha 0.2) is not HardSwish and stays.
TEST(FuseFloatConvEpilogue, HardSigmoidTimesTheValueIsHardSwish) {
  for (const char* body : {"  s = HardSigmoid<alpha=0.16666667, beta=0.5>(c)\n  y = Mul(c, s)",
                           "  s = HardSigmoid<alpha=0.16666667>(c)\n  y = Mul(s, c)"}) {
    SCOPED_TRACE(body);
    optimizer::PassContext context;
    Graph original = load_text(conv_model(body));
    optimizer::FusionPass pass("fuse_float_conv_epilogue");
    Graph fused = run_pass(original, pass, context);
    std::mt19937 rng(3);
    expect_same_outputs(original, fused, random_inputs(original, rng, -8.0f, 8.0f), 1e-6f);
    const Node* layer = fused_conv(fused);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(fused.nodes.size(), 1u);
    EXPECT_EQ(fused_nodes(*layer).size(), 3u);
    EXPECT_EQ(layer->attrs<FusedConvAttributes>().function, ConvEpilogueFunction::kHardSwish);
  }
  for (const char* body : {"  s = HardSigmoid(c)\n  y = Mul(c, s)",
                           "  s = HardSigmoid<alpha=0.16666667, beta=0.25>(c)\n  y = Mul(c, s)"}) {
    SCOPED_TRACE(body);
    optimizer::PassContext context;
    Graph fused = fuse(conv_model(body), context);
    EXPECT_EQ(fused_conv(fused), nullptr);
    EXPECT_EQ(count_ops(fused, "HardSigmoid"), 1);
    EXPECT_EQ(count_ops(fused, "Mul"), 1);
  }
}

TEST(FuseFloatConvEpilogue, DepthwiseConvsFuseToo) {
  optimizer::PassContext context;
  Graph fused = fuse(conv_model("  y = Relu(c)", 4), context);
  ASSERT_NE(fused_conv(fused), nullptr);
}

TEST(FuseFloatConvEpilogue, MustNotFire) {
  {
    SCOPED_TRACE("a group conv of 2-channel groups (too narrow for the igemm) runs an NCHW kernel: no epilogue");
    optimizer::PassContext context;
    Graph fused = fuse(conv_model("  y = Relu(c)", 2), context);
    EXPECT_EQ(fused_conv(fused), nullptr);
    ASSERT_EQ(context.float_reasons.size(), 1u);
    EXPECT_NE(context.float_reasons[0].reason.find("groups of 2 output channels"), std::string::npos)
        << context.float_reasons[0].reason;
  }
  {
    SCOPED_TRACE("the residual is written after the conv");
    optimizer::PassContext context;
    Graph fused = fuse(conv_model("  late = Sigmoid(x)\n  y = Add(c, late)"), context);
    EXPECT_EQ(fused_conv(fused), nullptr);
    EXPECT_EQ(count_ops(fused, "Add"), 1);
  }
  {
    SCOPED_TRACE("the conv's output is read twice");
    optimizer::PassContext context;
    Graph fused = fuse(conv_model("  a = Relu(c)\n  y = Add(a, c)"), context);
    EXPECT_EQ(fused_conv(fused), nullptr);
  }
  {
    SCOPED_TRACE("the sigmoid is a graph output");
    optimizer::PassContext context;
    Graph fused = fuse(conv_model("  s = Sigmoid(c)\n  y = Mul(c, s)", 1, "float[2,4,6,6] y, float[2,4,6,6] s"),
                       context);
    const Node* layer = fused_conv(fused);
    EXPECT_EQ(layer, nullptr);
    EXPECT_EQ(count_ops(fused, "Mul"), 1);
  }
  {
    SCOPED_TRACE("a broadcast Add is not a residual; the Relu after it stays too");
    optimizer::PassContext context;
    Graph fused = fuse(conv_model("  p = GlobalAveragePool(x)\n  a = Add(c, p)\n  y = Relu(a)"), context);
    EXPECT_EQ(fused_conv(fused), nullptr);
  }
  {
    SCOPED_TRACE("LeakyRelu is not a conv epilogue");
    optimizer::PassContext context;
    Graph fused = fuse(conv_model("  y = LeakyRelu(c)"), context);
    EXPECT_EQ(fused_conv(fused), nullptr);
  }
}

}  // namespace
}  // namespace qdqrt::testing
