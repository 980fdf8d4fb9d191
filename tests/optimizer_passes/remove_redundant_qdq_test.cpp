#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const std::vector<std::string> kRemove = {"remove_redundant_qdq"};

std::string chain(const std::string& second_scale, const std::string& second_zero_point) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[3,5] x) => (float[3,5] y, float[3,5] z)
    <float s = {0.05}, int8 zp = {2}, float s2 = {)" + second_scale + R"(}, int8 zp2 = {)" + second_zero_point + R"(}>
    {
      q1 = QuantizeLinear(x, s, zp)
      d1 = DequantizeLinear(q1, s, zp)
      q2 = QuantizeLinear(d1, s2, zp2)
      y = DequantizeLinear(q2, s2, zp2)
      z = Relu(d1)
    })";
}

TEST(RemoveRedundantQdq, QdqQChainWithEqualParametersCollapses) {
  Graph graph = parse_graph(chain("0.05", "2"));
  Graph rewritten = run_passes(graph, kRemove);
  EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 1);
  // d1 stays for the Relu; y now dequantizes q1 directly.
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 2);
  for (const Node& node : rewritten.nodes) {
    if (node.outputs[0] == "y") {
      EXPECT_EQ(node.inputs[0], "q1");
    }
  }
  expect_same_outputs(graph, rewritten, random_inputs(graph, 41), 0.0, 0.0);
}

TEST(RemoveRedundantQdq, IntegerGraphOutputKeepsItsName) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[6] x) => (uint8[6] y)
    <float s = {0.05}, uint8 zp = {128}>
    {
      q = QuantizeLinear(x, s, zp)
      d = DequantizeLinear(q, s, zp)
      y = QuantizeLinear(d, s, zp)
    })");
  Graph rewritten = run_passes(graph, kRemove);
  EXPECT_EQ(op_sequence(rewritten), "QuantizeLinear");
  EXPECT_EQ(rewritten.nodes[0].outputs[0], "y");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 42), 0.0, 0.0);
}

TEST(RemoveRedundantQdq, MustNotFireOnRequantizeOrQatRounding) {
  // Different scale or zero-point: a requantization, kept.
  for (const auto& [scale, zero_point] : std::vector<std::pair<std::string, std::string>>{{"0.04", "2"}, {"0.05", "1"}}) {
    Graph graph = parse_graph(chain(scale, zero_point));
    Graph rewritten = run_passes(graph, kRemove);
    EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 2) << scale << " " << zero_point;
  }
  // Q -> DQ between two float ops carries the model's rounding.
  Graph qat = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[6] x) => (float[6] y)
    <float s = {0.05}, int8 zp = {0}>
    {
      a = Relu(x)
      q = QuantizeLinear(a, s, zp)
      d = DequantizeLinear(q, s, zp)
      y = Sigmoid(d)
    })");
  EXPECT_EQ(op_sequence(run_passes(qat, kRemove)), "Relu,QuantizeLinear,DequantizeLinear,Sigmoid");
  // DQ of a graph input straight to a Q that is a graph output: nothing to rename, kept.
  Graph passthrough = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int8[6] x) => (int8[6] y)
    <float s = {0.05}, int8 zp = {0}>
    {
      d = DequantizeLinear(x, s, zp)
      y = QuantizeLinear(d, s, zp)
    })");
  Graph kept = run_passes(passthrough, kRemove);
  EXPECT_EQ(op_sequence(kept), "DequantizeLinear,QuantizeLinear");
  expect_same_outputs(passthrough, kept, random_inputs(passthrough, 43), 0.0, 0.0);
}

}  // namespace
}  // namespace qdqrt::testing
