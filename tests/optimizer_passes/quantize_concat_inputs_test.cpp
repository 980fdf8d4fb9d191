// quantize_concat_inputs: Concat -> Q becomes Q/DQ on each float input -> Concat -> Q, exact (the
// same codes), so the concat fusion makes a QConcat of 8-bit inputs; must-not-fire cases keep the
// graph as it was.
#include <fmt/format.h>

#include <string>

#include <gtest/gtest.h>

#include "optimizer/passes/quantize_concat_inputs.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const Node* find_op(const Graph& graph, const std::string& op_type) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == op_type) return &node;
  }
  return nullptr;
}

const Node* producer_of(const Graph& graph, const std::string& value) {
  for (const Node& node : graph.nodes) {
    for (const std::string& output : node.outputs) {
      if (output == value) return &node;
    }
  }
  return nullptr;
}

// Two float branches (Relu, Sigmoid) concatenated on the channels, then quantized. `extra_body`
// adds nodes; `outputs` the graph's outputs besides y.
std::string concat_model(const std::string& extra_body = "", const std::string& extra_outputs = "",
                         const std::string& q_params = "ys, yz", const std::string& extra_initializers = "") {
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,5] x1, float[1,2,4,5] x2) => (float[1,5,4,5] y{})
    <float ys = {{0.02}}, int8 yz = {{-3}}, float os = {{0.05}}, int8 oz = {{0}}{}>
    {{
      a = Relu(x1)
      b = Sigmoid(x2)
      c = Concat<axis = 1>(a, b)
      cq = QuantizeLinear(c, {})
      y = DequantizeLinear(cq, {})
{}    }})",
                     extra_outputs, extra_initializers, q_params, q_params, extra_body);
}

void expect_unchanged(const std::string& text) {
  SCOPED_TRACE(text);
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"quantize_concat_inputs"});
  EXPECT_EQ(op_sequence(rewritten), op_sequence(graph));
  EXPECT_EQ(find_op(rewritten, "Concat")->inputs, find_op(graph, "Concat")->inputs);
}

TEST(QuantizeConcatInputs, EachFloatInputIsQuantizedWithTheOutputsParameters) {
  Graph graph = parse_graph(concat_model());
  Graph rewritten = run_passes(graph, {"quantize_concat_inputs"});
  EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 3);
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 3);
  const Node* concat = find_op(rewritten, "Concat");
  ASSERT_NE(concat, nullptr);
  ASSERT_EQ(concat->inputs.size(), 2u);
  for (const std::string& input : concat->inputs) {
    const Node* dq = producer_of(rewritten, input);
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->op_type, "DequantizeLinear");
    EXPECT_EQ(dq->inputs[1], "ys");
    EXPECT_EQ(dq->inputs[2], "yz");
    const Node* q = producer_of(rewritten, dq->inputs[0]);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->op_type, "QuantizeLinear");
    EXPECT_EQ(q->inputs[1], "ys");
  }
  // The same codes: Q(concat(a, b)) == concat(Q(a), Q(b)), and DQ -> Q gives the codes back.
  expect_same_outputs(graph, rewritten, random_inputs(graph, 3, 4.0f), 0.0, 0.0);
}

TEST(QuantizeConcatInputs, TheWholePipelineMakesAQConcatWithTheSameCodes) {
  Graph graph = parse_graph(concat_model());
  Graph optimized = graph;
  auto report = optimizer::optimize(optimized);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(count_ops(optimized, "Concat"), 0);
  EXPECT_EQ(count_ops(optimized, "QConcat"), 1);
  expect_same_outputs(graph, optimized, random_inputs(graph, 4, 4.0f), 0.0, 0.0);
}

TEST(QuantizeConcatInputs, AnInputQuantizedAlikeAlreadyReusesItsQuantizer) {
  // a is also read by a Q with the concat's parameters (another consumer's input quantizer).
  Graph graph = parse_graph(concat_model("      aq = QuantizeLinear(a, ys, yz)\n      z = DequantizeLinear(aq, ys, yz)\n",
                                         ", float[1,3,4,5] z"));
  Graph rewritten = run_passes(graph, {"quantize_concat_inputs"});
  EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 3);  // aq reused: one new Q (for b)
  const Node* dq = producer_of(rewritten, find_op(rewritten, "Concat")->inputs[0]);
  ASSERT_NE(dq, nullptr);
  EXPECT_EQ(dq->inputs[0], "aq");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 5, 4.0f), 0.0, 0.0);
}

TEST(QuantizeConcatInputs, InputsDequantizedWithTheOutputsParametersStay) {
  // x1 arrives quantized with the output's parameters: only the float input b gets a Q/DQ.
  std::string text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,5] x1, float[1,2,4,5] x2) => (float[1,5,4,5] y)
    <float ys = {0.02}, int8 yz = {-3}>
    {
      xq = QuantizeLinear(x1, ys, yz)
      a = DequantizeLinear(xq, ys, yz)
      b = Sigmoid(x2)
      c = Concat<axis = 1>(a, b)
      cq = QuantizeLinear(c, ys, yz)
      y = DequantizeLinear(cq, ys, yz)
    })";
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"quantize_concat_inputs"});
  EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 3);
  EXPECT_EQ(find_op(rewritten, "Concat")->inputs[0], "a");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 6, 4.0f), 0.0, 0.0);
}

// A float input that a Reshape moves from the layer writing it (a lowered 3-D conv back to 5-D):
// its new Q goes above the Reshape, so the layer writes the codes; a Reshape whose input another
// node reads keeps the Q after it.
TEST(QuantizeConcatInputs, TheNewQuantizerMovesAboveAReshapeOfALayersOutput) {
  const std::string model = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,20] x1, float[1,2,20] x2) => (float[1,5,4,5] y{extra_output})
    <float ys = {0.02}, int8 yz = {-3}, int64[4] s1 = {1, 3, 4, 5}, int64[4] s2 = {1, 2, 4, 5}>
    {
      r1 = Relu(x1)
      a = Reshape(r1, s1)
      r2 = Sigmoid(x2)
      b = Reshape(r2, s2)
      c = Concat<axis = 1>(a, b)
      cq = QuantizeLinear(c, ys, yz)
      y = DequantizeLinear(cq, ys, yz)
    })";
  auto with = [&](const std::string& extra_output) {
    std::string text = model;
    text.replace(text.find("{extra_output}"), 14, extra_output);
    return text;
  };
  Graph graph = parse_graph(with(""));
  Graph rewritten = run_passes(graph, {"quantize_concat_inputs"});
  for (const char* value : {"r1", "r2"}) {
    int quantizers = 0;
    for (const Node& node : rewritten.nodes) quantizers += node.op_type == "QuantizeLinear" && node.inputs[0] == value;
    EXPECT_EQ(quantizers, 1) << value << ": " << op_sequence(rewritten);
  }
  expect_same_outputs(graph, rewritten, random_inputs(graph, 5, 4.0f), 0.0, 0.0);
  // r2 is also a graph output: its Reshape's input has another reader, the Q stays after b.
  Graph kept = run_passes(parse_graph(with(", float[1,2,20] r2")), {"quantize_concat_inputs"});
  int after_b = 0, on_r2 = 0;
  for (const Node& node : kept.nodes) {
    after_b += node.op_type == "QuantizeLinear" && node.inputs[0] == "b";
    on_r2 += node.op_type == "QuantizeLinear" && node.inputs[0] == "r2";
  }
  EXPECT_EQ(after_b, 1) << op_sequence(kept);
  EXPECT_EQ(on_r2, 0) << op_sequence(kept);
}

TEST(QuantizeConcatInputs, MustNotFire) {
  // The concat is also read by a float op (here: a graph output).
  expect_unchanged(concat_model("", ", float[1,5,4,5] c"));
  // An input is read by a Q with other parameters: its producer would feed two quantizers.
  expect_unchanged(concat_model("      aq = QuantizeLinear(a, os, oz)\n      z = DequantizeLinear(aq, os, oz)\n",
                                ", float[1,3,4,5] z"));
  // Per-channel output parameters.
  expect_unchanged(concat_model("", "", "cs, cz", ", float[5] cs = {0.1, 0.2, 0.3, 0.4, 0.5}, int8[5] cz = {0, 0, 0, 0, 0}"));
  // An input dequantized with other parameters (the QConcat would requantize it).
  expect_unchanged(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,5] x1, float[1,2,4,5] x2) => (float[1,5,4,5] y)
    <float ys = {0.02}, int8 yz = {-3}, float os = {0.05}, int8 oz = {0}>
    {
      xq = QuantizeLinear(x1, os, oz)
      a = DequantizeLinear(xq, os, oz)
      b = Sigmoid(x2)
      c = Concat<axis = 1>(a, b)
      cq = QuantizeLinear(c, ys, yz)
      y = DequantizeLinear(cq, ys, yz)
    })");
  // A constant input (a learned token concatenated to the activations).
  expect_unchanged(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,5] x1) => (float[1,5,4,5] y)
    <float ys = {0.02}, int8 yz = {-3}, float[1,2,4,5] token = )" + literal(40, 9, -1.0f, 1.0f) + R"(>
    {
      a = Relu(x1)
      c = Concat<axis = 1>(a, token)
      cq = QuantizeLinear(c, ys, yz)
      y = DequantizeLinear(cq, ys, yz)
    })");
  // No Q after the concat.
  expect_unchanged(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,5] x1, float[1,2,4,5] x2) => (float[1,5,4,5] y)
    {
      a = Relu(x1)
      b = Sigmoid(x2)
      y = Concat<axis = 1>(a, b)
    })");
}

}  // namespace
}  // namespace qdqrt::testing
