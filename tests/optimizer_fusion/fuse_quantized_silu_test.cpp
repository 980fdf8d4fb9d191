// fuse_quantized_silu: ONNX Runtime's QDQ SiLU (QLookup(Sigmoid) of x_q into QMul(x_q, .)) becomes
// one QLookup "QuantizedSiLU": structure, bit-equal numbers, must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x -> Q/DQ -> Sigmoid -> Q/DQ (ss) -> Mul(DQ(x) or DQ'(x), .) -> Q/DQ -> y.
std::string silu_model(const std::string& mul_x_scale = "xs", bool sigmoid_output_too = false) {
  const std::string outputs = sigmoid_output_too ? ", float[1,8,5,5] sd" : "";
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,8,5,5] x) => (float[1,8,5,5] y{})\n"
      "<float xs = {{0.05}}, float xs2 = {{0.04}}, uint8 xz = {{128}}, float ss = {{0.0039215}}, uint8 sz = {{0}},"
      " float ys = {{0.03}}, uint8 yz = {{10}}>\n{{\n"
      "xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\nxm = DequantizeLinear(xq, {}, xz)\n"
      "s = Sigmoid(xd)\nsq = QuantizeLinear(s, ss, sz)\nsd = DequantizeLinear(sq, ss, sz)\n"
      "m = Mul(xm, sd)\nmq = QuantizeLinear(m, ys, yz)\ny = DequantizeLinear(mq, ys, yz)\n}}\n",
      outputs, mul_x_scale);
}

Graph fuse(const std::string& text) {
  Graph original = load_text(text);
  optimizer::PassContext context;
  Graph graph = original;
  for (const char* name : {"fuse_qdq_binary", "fuse_qdq_lookup", "fuse_quantized_silu"}) {
    optimizer::FusionPass pass(name);
    graph = run_pass(graph, pass, context);
  }
  std::mt19937 rng(9);
  TensorMap inputs = random_inputs(original, rng, -6.0f, 6.0f);
  expect_same_outputs(original, graph, inputs, 0.0f);
  return graph;
}

TEST(FuseQuantizedSilu, LookupAndMulOfOneInt8TensorBecomeOneTable) {
  Graph fused = fuse(silu_model());
  EXPECT_EQ(count_ops(fused, layers::kQMul), 0);
  ASSERT_EQ(count_ops(fused, layers::kQLookup), 1);
  const Node* lookup = find_op(fused, layers::kQLookup);
  EXPECT_EQ(lookup->attrs<QLookupAttributes>().function, LookupFunction::kQuantizedSiLU);
  EXPECT_FLOAT_EQ(lookup->attrs<QLookupAttributes>().sigmoid_scale, 0.0039215f);
}

TEST(FuseQuantizedSilu, MustNotFireOnOtherParametersOrASharedSigmoid) {
  Graph other_scale = fuse(silu_model("xs2"));  // the Mul reads x_q with another scale
  EXPECT_EQ(count_ops(other_scale, layers::kQMul), 1);
  Graph shared = fuse(silu_model("xs", /*sigmoid_output_too=*/true));
  EXPECT_EQ(count_ops(shared, layers::kQMul), 1);
}

}  // namespace
}  // namespace qdqrt::testing
