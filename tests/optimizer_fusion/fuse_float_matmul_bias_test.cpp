// fuse_float_matmul_bias: a float MatMul by a constant matrix -> Add of a constant bias along the
// last axis becomes one FusedMatMul; structure, numbers (the reference's FusedMatMul against the two
// nodes: within 1e-5), the GELU after the bias, must-not-fire cases and a hand-written layer's
// refused attributes.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "core/ops/fused_layers.h"
#include "core/ops/fused_matmul.h"
#include "optimizer/fusions/fusion.h"
#include "parser/onnx_loader.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 5, 12] -> `body` (writing `outputs`), with w [12, 7], bias [7], row [1, 7], deep [1, 1, 7],
// rows [5, 1] and w2 [7, 12].
std::string matmul_model(const std::string& body, const std::string& outputs = "float[2,5,7] y") {
  std::mt19937 rng(5);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,5,12] x) => ({})
<{}, {}, {}, {}, {}, {}>
{{
{}
}})",
                     outputs, float_initializer("w", {12, 7}, -0.5f, 0.5f, rng),
                     float_initializer("bias", {7}, -1.0f, 1.0f, rng), float_initializer("row", {1, 7}, -1.0f, 1.0f, rng),
                     float_initializer("deep", {1, 1, 7}, -1.0f, 1.0f, rng),
                     float_initializer("rows", {5, 1}, -1.0f, 1.0f, rng),
                     float_initializer("w2", {7, 12}, -0.5f, 0.5f, rng), body);
}

Graph fuse(const std::string& text, optimizer::PassContext& context) {
  Graph original = load_text(text);
  optimizer::FusionPass pass("fuse_float_matmul_bias");
  Graph fused = run_pass(original, pass, context);
  std::mt19937 rng(3);
  expect_same_outputs(original, fused, random_inputs(original, rng), 1e-5f);
  return fused;
}

TEST(FuseFloatMatMulBias, MatMulAndBiasAddBecomeOneFusedMatMul) {
  struct Case {
    const char* body;
    const char* bias;
  };
  const Case cases[] = {
      {"  m = MatMul(x, w)\n  y = Add(m, bias)", "bias"},
      {"  m = MatMul(x, w)\n  y = Add(bias, m)", "bias"},  // torch's order
      {"  m = MatMul(x, w)\n  y = Add(m, row)", "row"},
      {"  m = MatMul(x, w)\n  y = Add(deep, m)", "deep"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    optimizer::PassContext context;
    Graph fused = fuse(matmul_model(c.body), context);
    ASSERT_EQ(fused.nodes.size(), 1u);
    const Node& layer = fused.nodes[0];
    EXPECT_EQ(layer.domain, layers::kDomain);
    EXPECT_EQ(layer.op_type, layers::kFusedMatMul);
    EXPECT_EQ(layer.inputs, (std::vector<std::string>{"x", "w", c.bias}));
    EXPECT_EQ(layer.outputs, std::vector<std::string>{"y"});
    const auto* attributes = dynamic_cast<const FusedMatMulAttributes*>(layer.typed_attributes.get());
    ASSERT_NE(attributes, nullptr);
    EXPECT_EQ(attributes->fused.fused_nodes.size(), 2u);
  }
}

TEST(FuseFloatMatMulBias, TwoLinearsInARowBothFuse) {
  optimizer::PassContext context;
  Graph fused = fuse(matmul_model("  m = MatMul(x, w)\n  h = Add(bias, m)\n  r = Relu(h)\n  m2 = MatMul(r, w2)\n"
                                  "  y = Add(m2, x)",
                                  "float[2,5,12] y"),
                     context);
  // The second Add adds a runtime value, not a bias: only the first pair fuses.
  EXPECT_EQ(count_ops(fused, layers::kFusedMatMul), 1);
  EXPECT_EQ(count_ops(fused, "MatMul"), 1);
  EXPECT_EQ(count_ops(fused, "Add"), 1);
}

// The product read elsewhere or a graph output, a bias that varies along another axis or adds a
// runtime value, a runtime B, a constant that is not a bias (rank above the product's), Sub: the
// nodes stay as they are.
TEST(FuseFloatMatMulBias, MustNotFire) {
  struct Case {
    std::string body, outputs;
  };
  const Case cases[] = {
      {"  m = MatMul(x, w)\n  y = Add(m, bias)\n  z = Relu(m)", "float[2,5,7] y, float[2,5,7] z"},
      {"  m = MatMul(x, w)\n  y = Add(m, bias)", "float[2,5,7] y, float[2,5,7] m"},
      {"  m = MatMul(x, w)\n  y = Add(m, rows)", "float[2,5,7] y"},
      {"  m = MatMul(x, w)\n  y = Add(m, m)", "float[2,5,7] y"},
      {"  m = MatMul(x, w)\n  y = Sub(m, bias)", "float[2,5,7] y"},
      {"  v = Relu(w)\n  m = MatMul(x, v)\n  y = Add(m, bias)", "float[2,5,7] y"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    optimizer::PassContext context;
    Graph fused = fuse(matmul_model(c.body, c.outputs), context);
    EXPECT_EQ(count_ops(fused, layers::kFusedMatMul), 0);
    EXPECT_EQ(count_ops(fused, "MatMul"), 1);
  }
}

// A bias whose rank is above A's would broadcast the product to more dims.
TEST(FuseFloatMatMulBias, MustNotFireWhenTheBiasAddsDims) {
  std::mt19937 rng(7);
  const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[5,12] x) => (float[1,5,7] y)
<{}, {}>
{{
  m = MatMul(x, w)
  y = Add(m, deep)
}})",
                                       float_initializer("w", {12, 7}, -0.5f, 0.5f, rng),
                                       float_initializer("deep", {1, 1, 7}, -1.0f, 1.0f, rng));
  optimizer::PassContext context;
  Graph fused = fuse(text, context);
  EXPECT_EQ(count_ops(fused, layers::kFusedMatMul), 0);
}

// MatMul -> bias Add -> GELU (the erf chain, fuse_float_gelu's Gelu first): one FusedMatMul with
// function Gelu; the GELU stays apart when the sum has another reader.
TEST(FuseFloatMatMulBias, TheGeluAfterTheBiasJoins) {
  const std::string gelu_chain = "  d = Div(h, sqrt2)\n  e = Erf(d)\n  p = Add(e, one)\n  g = Mul(h, p)\n  y = Mul(g, half)";
  auto model = [&](const std::string& extra, const std::string& outputs) {
    std::mt19937 rng(5);
    return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,5,12] x) => ({})
<{}, {}, float sqrt2 = {{1.4142135}}, float one = {{1.0}}, float half = {{0.5}}>
{{
  m = MatMul(x, w)
  h = Add(bias, m)
{}{}
}})",
                       outputs, float_initializer("w", {12, 7}, -0.5f, 0.5f, rng),
                       float_initializer("bias", {7}, -1.0f, 1.0f, rng), gelu_chain, extra);
  };
  struct Case {
    std::string extra, outputs;
    bool gelu_joins;
  };
  const Case cases[] = {
      {"", "float[2,5,7] y", true},
      {"\n  z = Relu(h)", "float[2,5,7] y, float[2,5,7] z", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    Graph original = load_text(model(c.extra, c.outputs));
    optimizer::PassContext context;
    optimizer::FusionPass gelu("fuse_float_gelu");
    optimizer::FusionPass bias("fuse_float_matmul_bias");
    Graph fused = run_pass(run_pass(original, gelu, context), bias, context);
    std::mt19937 rng(3);
    expect_same_outputs(original, fused, random_inputs(original, rng), 1e-5f);
    const Node* layer = find_op(fused, layers::kFusedMatMul);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer->attrs<FusedMatMulAttributes>().gelu, c.gelu_joins);
    EXPECT_EQ(count_ops(fused, "Gelu"), c.gelu_joins ? 0 : 1);
    EXPECT_EQ(layer->outputs, std::vector<std::string>{c.gelu_joins ? "y" : "h"});
    EXPECT_EQ(layer->attrs<FusedMatMulAttributes>().fused.fused_nodes.size(), c.gelu_joins ? 3u : 2u);
  }
}

// A FusedMatMul written by hand with an activation, a pointwise program or a function other than
// Gelu is refused, naming the node.
TEST(FuseFloatMatMulBias, HandWrittenLayerWithAnActivationIsRefused) {
  std::mt19937 rng(11);
  for (const char* attributes : {"activation = \"Relu\"", "pointwise_code = [1, 0, 0, 0]", "function = \"Sigmoid\""}) {
    SCOPED_TRACE(attributes);
    const std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13, "qdqrt" : 1]>
g (float[2,5,12] x) => (float[2,5,7] y)
<{}, {}>
{{
  y = qdqrt.FusedMatMul <{}> (x, w, bias)
}})",
                                         float_initializer("w", {12, 7}, -0.5f, 0.5f, rng),
                                         float_initializer("bias", {7}, -1.0f, 1.0f, rng), attributes);
    onnx::ModelProto model;
    ASSERT_TRUE(onnx::OnnxParser::Parse(model, text.c_str()).IsOK());
    auto graph = load_onnx_model(model);
    ASSERT_FALSE(graph.ok());
    EXPECT_NE(graph.status().message().find("FusedMatMul"), std::string::npos) << graph.status().to_string();
  }
}

}  // namespace
}  // namespace qdqrt::testing
