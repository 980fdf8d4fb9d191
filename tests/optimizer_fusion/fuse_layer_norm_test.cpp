// fuse_layer_norm: the decomposed LayerNorm of torch's opset-13 export and the opset-17
// LayerNormalization become one LayerNorm layer, with the QuantizeLinear after it absorbed;
// structure, numbers (against the unfused graph by the reference executor) and must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

constexpr const char* kConstants =
    "<float[6] gamma = {0.5, 1.5, -1, 2, 0.25, 1}, float[6] beta = {0.1, -0.2, 0.3, 0, 1, -1}, "
    "float two = {2.0}, float three = {3.0}, float eps = {1e-5}, float ys = {0.02}, int8 yz = {0}>";

// torch's decomposition: `square` squares `d`, `tail` follows the normalized value `n`.
std::string decomposed(const std::string& square, const std::string& tail, int64_t axis = -1,
                       const std::string& extra_output = "") {
  std::string body = fmt::format(
      "mean = ReduceMean<axes = [{0}]>(x)\nd = Sub(x, mean)\n{1}\nv = ReduceMean<axes = [{0}]>(sq)\n"
      "ve = Add(v, eps)\ns = Sqrt(ve)\nn = Div(d, s)\n{2}",
      axis, square, tail);
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,3,6] x) => (float[2,3,6] y{})\n{}\n{{\n{}}}\n",
                     extra_output, kConstants, body);
}

Graph fuse(const std::string& text, Graph& original, float tolerance) {
  original = load_text(text);
  optimizer::PassContext context;
  optimizer::FusionPass pass("fuse_layer_norm");
  Graph fused = run_pass(original, pass, context);
  std::mt19937 rng(5);
  expect_same_outputs(original, fused, random_inputs(original, rng, -3.0f, 3.0f), tolerance);
  return fused;
}

TEST(FuseLayerNorm, DecomposedPatternBecomesOneLayer) {
  for (const char* square : {"sq = Pow(d, two)", "sq = Mul(d, d)"}) {
    SCOPED_TRACE(square);
    Graph original;
    Graph fused = fuse(decomposed(square, "g = Mul(n, gamma)\ny = Add(g, beta)\n"), original, 1e-5f);
    ASSERT_EQ(fused.nodes.size(), 1u);
    const Node& layer = fused.nodes[0];
    EXPECT_EQ(layer.op_type, layers::kLayerNorm);
    EXPECT_EQ(layer.outputs[0], "y");
    EXPECT_FLOAT_EQ(dynamic_cast<const LayerNormAttributes&>(*layer.typed_attributes).epsilon, 1e-5f);
    EXPECT_EQ(fused_layer_info(layer)->fused_nodes.size(), 9u);  // all nine nodes of the pattern
  }
}

TEST(FuseLayerNorm, WithoutAffinePartGammaIsOneAndBetaZero) {
  Graph original;
  Graph fused = fuse(decomposed("sq = Pow(d, two)", "y = Identity(n)\n"), original, 1e-5f);
  EXPECT_EQ(count_ops(fused, layers::kLayerNorm), 1);
  EXPECT_EQ(count_ops(fused, "ReduceMean"), 0);
}

TEST(FuseLayerNorm, QuantizeAfterItIsAbsorbed) {
  Graph original;
  Graph fused = fuse(decomposed("sq = Pow(d, two)",
                                "g = Mul(n, gamma)\nb = Add(g, beta)\nbq = QuantizeLinear(b, ys, yz)\n"
                                "y = DequantizeLinear(bq, ys, yz)\n"),
                     original, 0.0f);
  EXPECT_EQ(count_ops(fused, layers::kLayerNorm), 1);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 0);
  const Node* layer = find_op(fused, layers::kLayerNorm);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->outputs[0], "bq");  // writes the int8 value the Q wrote
  EXPECT_TRUE(layer->has_input(layers::kNormYScale));
}

TEST(FuseLayerNorm, Opset17OperatorBecomesTheLayer) {
  const std::string text = fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[2,3,6] x) => (float[2,3,6] y)\n{}\n{{\n"
      "y = LayerNormalization<axis = -1, epsilon = 0.001>(x, gamma, beta)\n}}\n",
      kConstants);
  Graph original;
  Graph fused = fuse(text, original, 1e-5f);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op_type, layers::kLayerNorm);
  EXPECT_FLOAT_EQ(dynamic_cast<const LayerNormAttributes&>(*fused.nodes[0].typed_attributes).epsilon, 1e-3f);
}

// ONNX Runtime's quantize_static dequantizes an initializer for all its readers: a beta that torch's
// export shares with a quantized bias reads DequantizeLinear(int32 bias); gamma from an s8 DQ too.
TEST(FuseLayerNorm, GammaAndBetaFromDequantizedConstants) {
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[2,3,6] x) => (float[2,3,6] y)\n"
      "<int8[6] gq = {50, 127, -90, 100, 12, 64}, float gs = {0.0157}, int8 gz = {0},\n"
      " int32[6] bq = {40, -80, 120, 0, 400, -400}, float[6] bs = {0.0025, 0.0025, 0.0025, 0.0025, 0.0025, 0.0025},\n"
      " int32[6] bz = {0, 0, 0, 0, 0, 0}>\n{\n"
      "gamma = DequantizeLinear(gq, gs, gz)\nbeta = DequantizeLinear<axis = 0>(bq, bs, bz)\n"
      "y = LayerNormalization<axis = -1, epsilon = 0.001>(x, gamma, beta)\n}\n";
  Graph original;
  Graph fused = fuse(text, original, 1e-5f);
  EXPECT_EQ(count_ops(fused, layers::kLayerNorm), 1);
  EXPECT_EQ(count_ops(fused, "LayerNormalization"), 0);
}

TEST(FuseLayerNorm, MustNotFire) {
  struct Case {
    const char* why;
    std::string text;
  };
  const Case cases[] = {
      {"cube instead of square", decomposed("sq = Pow(d, three)", "y = Identity(n)\n")},
      {"not the last axis", decomposed("sq = Pow(d, two)", "y = Identity(n)\n", 1)},
      {"centred value read elsewhere", decomposed("sq = Pow(d, two)", "y = Identity(n)\n", -1, ", float[2,3,6] d")},
      {"opset-17 op over two axes",
       fmt::format("<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[2,3,6] x) => (float[2,3,6] y)\n"
                   "<float[3,6] gamma2 = {{{}}}>\n{{\ny = LayerNormalization<axis = -2>(x, gamma2)\n}}\n",
                   fmt::join(std::vector<float>(18, 1.0f), ", "))},
  };
  for (const Case& test_case : cases) {
    SCOPED_TRACE(test_case.why);
    Graph original;
    Graph fused = fuse(test_case.text, original, 0.0f);
    EXPECT_EQ(count_ops(fused, layers::kLayerNorm), 0);
    EXPECT_EQ(fused.nodes.size(), original.nodes.size());
  }
}

}  // namespace
}  // namespace qdqrt::testing
