// The float pipeline (OptimizeOptions::float_only, pass remove_fake_quantization): a QDQ graph
// becomes float ops, with the weights' quantization kept as float values.
#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// x -> Q/DQ -> Conv(DQ(int8 w), DQ(int32 bias)) -> BN -> Relu -> Q/DQ -> y.
std::string qdq_conv_bn(const std::string& extra, const std::string& conv_input = "xd") {
  std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x) => (float[1,4,3,3] y)
    <int8[4,2,3,3] wq = )";
  text += literal(72, 5, -127.0f, 127.0f, true);
  text += R"(, float[4] ws = {0.004, 0.006, 0.005, 0.003},
     int32[4] bq = {100, -200, 50, 0}, float[4] bs = {0.00008, 0.00012, 0.0001, 0.00006},
     float xs = {0.02}, int8 xzp = {0}, float ys = {0.03}, uint8 yzp = {10},
     float[4] gamma = {1.5, -0.75, 0.5, -2.0}, float[4] beta = {0.1, -0.2, 0.3, 0.0},
     float[4] mean = {0.05, -0.1, 0.2, 0.0}, float[4] var = {0.5, 1.2, 0.8, 2.0}>
    {
      xq = QuantizeLinear(x, xs, xzp)
      xd = DequantizeLinear(xq, xs, xzp)
      w = DequantizeLinear<axis = 0>(wq, ws)
      b = DequantizeLinear<axis = 0>(bq, bs)
      c = Conv()";
  text += conv_input;
  text += R"(, w, b)
      n = BatchNormalization(c, gamma, beta, mean, var)
      r = Relu(n)
)";
  text += extra;
  text += "\n}";
  return text;
}

TEST(RemoveFakeQuantization, FloatPipelineLeavesOnlyFloatOps) {
  Graph graph = parse_graph(qdq_conv_bn("rq = QuantizeLinear(r, ys, yzp)\n y = DequantizeLinear(rq, ys, yzp)"));
  Graph rewritten = run_passes(graph, {}, /*float_only=*/true);
  EXPECT_EQ(op_sequence(rewritten), "FusedConv");  // the Conv with the BN folded and its Relu
  EXPECT_EQ(rewritten.nodes.back().outputs[0], "y");
  for (const auto& [name, tensor] : rewritten.initializers) EXPECT_EQ(tensor.dtype(), DataType::kFloat) << name;

  // The same graph with the activation Q/DQ pairs dropped by hand (weights and bias still DQ'd
  // constants, BN still there): the float pipeline must compute exactly that.
  Graph by_hand = parse_graph(qdq_conv_bn("y = Identity(r)", "x"));
  expect_same_outputs(by_hand, rewritten, random_inputs(graph, 31), 1e-5, 1e-4);
}

TEST(RemoveFakeQuantization, KeepsIntegerInterfacesAndRescales) {
  // A Q at a graph output, and Q -> DQ with different scales (a rescale, not an identity).
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[8] x) => (uint8[8] yq, float[8] z)
    <float s1 = {0.05}, float s2 = {0.1}, uint8 zp = {128}>
    {
      yq = QuantizeLinear(x, s1, zp)
      z = DequantizeLinear(yq, s2, zp)
    })");
  Graph rewritten = run_passes(graph, {}, /*float_only=*/true);
  EXPECT_EQ(op_sequence(rewritten), "QuantizeLinear,DequantizeLinear");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 32));
}

TEST(RemoveFakeQuantization, NotInTheInt8Pipeline) {
  std::vector<std::string> int8 = optimizer::pipeline_pass_names();
  std::vector<std::string> float_only = optimizer::pipeline_pass_names(true);
  EXPECT_EQ(std::count(int8.begin(), int8.end(), "remove_fake_quantization"), 0);
  EXPECT_EQ(float_only, (std::vector<std::string>{"remove_identities", "fold_constants", "evaluate_shape_computations",
                                                  "remove_empty_pads", "fold_expand_into_broadcast", "lower_box_scatter", "lower_einsum",
                                                  "lower_reduce_l2", "fold_pad_into_pool", "lower_spatial_mean", "remove_fake_quantization",
                                                  "slice_gathered_parts", "split_sliced_projection", "merge_transposes",
                                                  "fold_batchnorm", "lower_conv3d", "lower_pool3d", "merge_transpose_reshape", "prune_dead_conv_taps", "fuse_layer_norm",
                                                  "fuse_float_conv_epilogue", "fuse_float_conv_gate",
                                                  "fuse_float_pool_row_sums", "fuse_float_depthwise_chain",
                                                  "fuse_float_batchnorm", "fuse_float_gelu", "fuse_float_matmul_bias"}));
  Graph graph = parse_graph(qdq_conv_bn("rq = QuantizeLinear(r, ys, yzp)\n y = DequantizeLinear(rq, ys, yzp)"));
  Graph int8_graph = run_passes(graph, {});
  EXPECT_GT(count_ops(int8_graph, "QConv"), 0);
}

}  // namespace
}  // namespace qdqrt::testing
