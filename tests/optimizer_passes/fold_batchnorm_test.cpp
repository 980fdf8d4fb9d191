#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// BN parameters for 4 channels; gamma has negative entries.
std::string batchnorm_initializers() {
  return "float[4] gamma = {1.5, -0.75, 0.5, -2.0}, float[4] beta = {0.1, -0.2, 0.3, 0.0}, "
         "float[4] mean = {0.05, -0.1, 0.2, 0.0}, float[4] var = {0.5, 1.2, 0.8, 2.0}";
}

TEST(FoldBatchnorm, FloatConvWeightsAndBias) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x) => (float[1,4,3,3] y)
    <float[4,2,3,3] w = )" + literal(72, 3, -1.0f, 1.0f) + R"(, float[4] b = {0.1, 0.2, -0.3, 0.4}, )" +
                            batchnorm_initializers() + R"(>
    {
      c = Conv(x, w, b)
      y = BatchNormalization<epsilon = 0.001>(c, gamma, beta, mean, var)
    })");
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_batchnorm"});
  EXPECT_EQ(op_sequence(rewritten), "Conv");
  EXPECT_EQ(rewritten.nodes[0].outputs[0], "y");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 21), 1e-5, 1e-4);
}

// x -> Q -> DQ -> Conv(DQ(int8 weight)) -> BN, per-tensor or per-channel weight scale.
std::string quantized_conv(const std::string& weight_scale, const std::string& weight_zero_point,
                           const std::string& extra_consumer = "") {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x) => (float[1,4,3,3] y)" + std::string(extra_consumer.empty() ? "" : ", float[1,4,3,3] z") + R"()
    <int8[4,2,3,3] wq = )" + literal(72, 5, -127.0f, 127.0f, true) + R"(, )" + weight_scale + ", " +
         weight_zero_point + R"(, float xs = {0.02}, int8 xzp = {0}, )" + batchnorm_initializers() + R"(>
    {
      xq = QuantizeLinear(x, xs, xzp)
      xd = DequantizeLinear(xq, xs, xzp)
      w = DequantizeLinear<axis = 0>(wq, ws, wzp)
      c = Conv(xd, w)
      y = BatchNormalization(c, gamma, beta, mean, var)
      )" + extra_consumer + R"(
    })";
}

void expect_quantized_fold(const std::string& weight_scale, const std::string& weight_zero_point) {
  Graph graph = parse_graph(quantized_conv(weight_scale, weight_zero_point));
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_batchnorm"});
  EXPECT_EQ(op_sequence(rewritten), "QuantizeLinear,DequantizeLinear,DequantizeLinear,Conv");
  const Node* weight_dq = nullptr;
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "DequantizeLinear" && node.inputs[0] == "wq") weight_dq = &node;
  }
  ASSERT_NE(weight_dq, nullptr) << "the weight DQ must still read the original int8 weight";
  // The int8 weight is untouched; the scale became per-channel and carries gamma's signs.
  EXPECT_EQ(rewritten.find_initializer("wq")->data<int8_t>()[0], graph.find_initializer("wq")->data<int8_t>()[0]);
  const Tensor* scale = rewritten.find_initializer(weight_dq->inputs[1]);
  ASSERT_NE(scale, nullptr);
  ASSERT_EQ(scale->shape(), (Shape{4}));
  EXPECT_LT(scale->data<float>()[1], 0.0f);
  EXPECT_GT(scale->data<float>()[2], 0.0f);
  const Tensor* zero_point = rewritten.find_initializer(weight_dq->inputs[2]);
  ASSERT_NE(zero_point, nullptr);
  EXPECT_EQ(zero_point->shape(), (Shape{4}));
  const Node& conv = rewritten.nodes.back();
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_NE(rewritten.find_initializer(conv.inputs[2]), nullptr);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 22), 1e-5, 1e-4);
}

TEST(FoldBatchnorm, QuantizedWeightPerTensorScaleBecomesPerChannel) {
  expect_quantized_fold("float ws = {0.01}", "int8 wzp = {0}");
}

TEST(FoldBatchnorm, QuantizedWeightPerChannelScale) {
  expect_quantized_fold("float[4] ws = {0.01, 0.02, 0.005, 0.03}", "int8[4] wzp = {0, 0, 0, 0}");
}

// One weight DQ read by two Convs (torch shares a quantized weight used twice): each BN folds
// into its own copy of the DQ; the int8 weight stays one shared initializer. `second_bn`: the
// second conv has a BN too, else it must keep the original scale.
void expect_shared_weight_fold(bool second_bn) {
  std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x) => (float[1,4,3,3] y1, float[1,4,3,3] y2)
    <int8[4,2,3,3] wq = )";
  text += literal(72, 5, -127.0f, 127.0f, true);
  text += R"(, float ws = {0.01}, float xs = {0.02}, int8 xzp = {0}, )";
  text += batchnorm_initializers();
  text += R"(, float[4] gamma2 = {0.5, 2.0, -1.0, 1.25}, float[4] beta2 = {0.0, 0.1, 0.2, -0.3}>
    {
      xq = QuantizeLinear(x, xs, xzp)
      xd = DequantizeLinear(xq, xs, xzp)
      w = DequantizeLinear(wq, ws)
      c1 = Conv(xd, w)
      y1 = BatchNormalization(c1, gamma, beta, mean, var)
      c2 = Conv(xd, w)
)";
  text += second_bn ? "y2 = BatchNormalization(c2, gamma2, beta2, mean, var)\n}" : "y2 = Relu(c2)\n}";
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_batchnorm"});
  EXPECT_EQ(count_ops(rewritten, "BatchNormalization"), 0);
  std::vector<const Node*> weight_dqs;
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "DequantizeLinear" && node.inputs[0] == "wq") weight_dqs.push_back(&node);
  }
  ASSERT_EQ(weight_dqs.size(), 2u);
  EXPECT_NE(weight_dqs[0]->inputs[1], weight_dqs[1]->inputs[1]);
  int untouched = 0;
  for (const Node* dq : weight_dqs) {
    const Tensor* scale = rewritten.find_initializer(dq->inputs[1]);
    ASSERT_NE(scale, nullptr);
    untouched += scale->numel() == 1 && scale->data<float>()[0] == 0.01f;
  }
  EXPECT_EQ(untouched, second_bn ? 0 : 1);
  EXPECT_EQ(rewritten.initializers.count("wq"), 1u);
  EXPECT_EQ(rewritten.find_initializer("wq")->data<int8_t>()[5], graph.find_initializer("wq")->data<int8_t>()[5]);
  // The folded graph still fuses: two QConv layers reading the one int8 weight.
  Graph fused = run_passes(graph, {});
  EXPECT_EQ(count_ops(fused, "QConv"), 2);
  EXPECT_EQ(count_ops(fused, "BatchNormalization"), 0);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 23), 1e-5, 1e-4);
}

TEST(FoldBatchnorm, SharedWeightDequantizeIsDuplicatedPerConv) { expect_shared_weight_fold(true); }

TEST(FoldBatchnorm, SharedWeightDequantizeKeepsTheOtherConvsScale) { expect_shared_weight_fold(false); }

TEST(FoldBatchnorm, MustNotFireWhenConvOutputHasAnotherReader) {
  Graph graph = parse_graph(quantized_conv("float ws = {0.01}", "int8 wzp = {0}", "z = Relu(c)"));
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_batchnorm"});
  EXPECT_EQ(count_ops(rewritten, "BatchNormalization"), 1);
}

TEST(FoldBatchnorm, MustNotFireWithRuntimeParametersOrWeight) {
  Graph runtime_mean = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x, float[4] mean) => (float[1,4,3,3] y)
    <float[4,2,3,3] w = )" + literal(72, 3, -1.0f, 1.0f) + R"(, float[4] gamma = {1, 1, 1, 1},
     float[4] beta = {0, 0, 0, 0}, float[4] var = {1, 1, 1, 1}>
    {
      c = Conv(x, w)
      y = BatchNormalization(c, gamma, beta, mean, var)
    })");
  EXPECT_EQ(count_ops(run_passes(runtime_mean, {"fold_constants", "fold_batchnorm"}), "BatchNormalization"), 1);

  Graph runtime_weight = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x, float[4,2,3,3] w) => (float[1,4,3,3] y)
    <)" + batchnorm_initializers() + R"(>
    {
      c = Conv(x, w)
      y = BatchNormalization(c, gamma, beta, mean, var)
    })");
  EXPECT_EQ(count_ops(run_passes(runtime_weight, {"fold_constants", "fold_batchnorm"}), "BatchNormalization"), 1);
}

}  // namespace
}  // namespace qdqrt::testing
