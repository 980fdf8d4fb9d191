// fuse_add_quantize: a residual block's end, Add(a, b) [-> Relu] read by a QuantizeLinear, becomes
// one AddQuantize writing the Q's codes and (when others read it) the float sum; structure, numbers
// (the fused reference against the nodes: exact) and must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// a and b [2, 4, 5, 5] (each an Add of an input and a constant, so they are computed values), a
// uint8 quantizer (ys, yz), an int8 one (ss, sz), then `body`.
std::string residual_model(const std::string& body, const std::string& outputs) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,4,5,5] xa, float[2,4,5,5] xb, float[2,4,1,1] xc) => ({})
<float one = {{1}}, float ys = {{0.02}}, uint8 yz = {{3}}, float ss = {{0.03}}, int8 sz = {{-2}}>
{{
  a = Add(xa, one)
  b = Add(xb, one)
{}
}})",
                     outputs, body);
}

Graph fuse(const std::string& text) {
  Graph original = load_text(text);
  optimizer::PassContext context;
  optimizer::FusionPass pass("fuse_add_quantize");
  Graph fused = run_pass(original, pass, context);
  std::mt19937 rng(5);
  expect_same_outputs(original, fused, random_inputs(original, rng, -3.0f, 3.0f), 0.0f);
  return fused;
}

TEST(FuseAddQuantize, AddReluQuantizeWithTheSumReadOnBecomeOneLayer) {
  // The next block reads the sum (its residual) and the codes (its conv's input, here a DQ).
  Graph fused = fuse(residual_model("  s = Add(a, b)\n  r = Relu(s)\n  q = QuantizeLinear(r, ys, yz)\n"
                                    "  d = DequantizeLinear(q, ys, yz)\n  n = Add(r, d)",
                                    "float[2,4,5,5] n"));
  EXPECT_EQ(count_ops(fused, "Relu"), 0);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 0);
  EXPECT_EQ(count_ops(fused, "Add"), 3);  // the inputs' two and the next block's
  const Node* layer = find_op(fused, layers::kAddQuantize);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->inputs, (std::vector<std::string>{"a", "b", "ys", "yz"}));
  EXPECT_EQ(layer->outputs, (std::vector<std::string>{"q", "r"}));
  const auto* attributes = dynamic_cast<const AddQuantizeAttributes*>(layer->typed_attributes.get());
  ASSERT_NE(attributes, nullptr);
  EXPECT_EQ(attributes->fused.activation.kind, ActivationKind::kRelu);
  // Named after the Add; the Add, the Relu and the Q fused (the text gives nodes generated names).
  ASSERT_EQ(attributes->fused.fused_nodes.size(), 3u);
  EXPECT_EQ(attributes->fused.fused_nodes[0], layer->name);
  EXPECT_EQ(attributes->fused.fused_nodes[1].rfind("Relu", 0), 0u);
  EXPECT_EQ(attributes->fused.fused_nodes[2].rfind("QuantizeLinear", 0), 0u);
}

TEST(FuseAddQuantize, QuantizeAsOnlyReaderLeavesOneOutputAndNoReluIsTaken) {
  Graph fused = fuse(residual_model("  s = Add(b, a)\n  q = QuantizeLinear(s, ss, sz)\n  y = DequantizeLinear(q, ss, sz)",
                                    "float[2,4,5,5] y"));
  const Node* layer = find_op(fused, layers::kAddQuantize);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->inputs, (std::vector<std::string>{"b", "a", "ss", "sz"}));
  EXPECT_EQ(layer->outputs, std::vector<std::string>{"q"});
  EXPECT_EQ(layer->attrs<AddQuantizeAttributes>().fused.activation.kind, ActivationKind::kNone);
}

TEST(FuseAddQuantize, SumThatIsAGraphOutputStaysAnOutput) {
  Graph fused = fuse(residual_model("  s = Add(a, b)\n  r = Relu(s)\n  q = QuantizeLinear(r, ys, yz)\n"
                                    "  y = DequantizeLinear(q, ys, yz)",
                                    "float[2,4,5,5] y, float[2,4,5,5] r"));
  const Node* layer = find_op(fused, layers::kAddQuantize);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->outputs, (std::vector<std::string>{"q", "r"}));
}

TEST(FuseAddQuantize, MustNotFireWithoutAQuantizerOnBroadcastOrConstantOperand) {
  // No Q reads the sum.
  Graph no_q = fuse(residual_model("  s = Add(a, b)\n  y = Relu(s)", "float[2,4,5,5] y"));
  EXPECT_EQ(count_ops(no_q, layers::kAddQuantize), 0);
  EXPECT_EQ(count_ops(no_q, "Relu"), 1);
  // A per-channel term broadcast over the pixels is not a residual.
  Graph broadcast = fuse(residual_model("  c = Add(xc, one)\n  s = Add(a, c)\n  q = QuantizeLinear(s, ys, yz)\n"
                                        "  y = DequantizeLinear(q, ys, yz)",
                                        "float[2,4,5,5] y"));
  EXPECT_EQ(count_ops(broadcast, layers::kAddQuantize), 0);
  EXPECT_EQ(count_ops(broadcast, "QuantizeLinear"), 1);
  // A constant operand (the inputs' own Adds of `one`, here read by a Q) stays an Add.
  Graph constant = fuse(residual_model("  q = QuantizeLinear(a, ys, yz)\n  y = DequantizeLinear(q, ys, yz)\n"
                                       "  z = Add(y, b)",
                                       "float[2,4,5,5] z"));
  EXPECT_EQ(count_ops(constant, layers::kAddQuantize), 0);
  // The Add's result read by a Relu and by something else: the Relu is not taken; the Q reads the
  // Relu, not the Add, so nothing fuses.
  Graph shared = fuse(residual_model("  s = Add(a, b)\n  r = Relu(s)\n  q = QuantizeLinear(r, ys, yz)\n"
                                     "  d = DequantizeLinear(q, ys, yz)\n  y = Add(s, d)",
                                     "float[2,4,5,5] y"));
  EXPECT_EQ(count_ops(shared, layers::kAddQuantize), 0);
  EXPECT_EQ(count_ops(shared, "Relu"), 1);
}

}  // namespace
}  // namespace qdqrt::testing
