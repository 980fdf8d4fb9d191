// Q fan-out: a fused conv whose (float) output feeds several QuantizeLinear nodes writes the int8
// tensor of one of them; the others become QRequantize from it, or read it as is when their
// parameters are equal. Structure, numbers and must-not-fire cases.
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "optimizer/fusions/fusion.h"
#include "core/ops/fused_layers.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

struct Quantizer {
  std::string type;  // "int8" / "uint8"
  float scale;
  int zero_point;
};

// x -> Q/DQ -> Conv [-> Relu] -> {Q_a -> DQ -> out_a, Q_b -> DQ -> out_b} [, Sigmoid -> out_f].
std::string fan_out_model(const Quantizer& a, const Quantizer& b, bool float_reader, std::mt19937& rng,
                          bool relu = true) {
  std::vector<std::string> init = {
      "float xs = {0.02}",
      "int8 xz = {0}",
      int_initializer("int8", "w", {8, 4, 3, 3}, -127, 127, rng),
      float_initializer("ws", {8}, 0.004f, 0.01f, rng),
      float_initializer("bias", {8}, -0.3f, 0.3f, rng),
      fmt::format("float sa = {{{}}}", a.scale),
      fmt::format("{} za = {{{}}}", a.type, a.zero_point),
      fmt::format("float sb = {{{}}}", b.scale),
      fmt::format("{} zb = {{{}}}", b.type, b.zero_point),
  };
  std::string outputs = "float[1,8,6,6] out_a, float[1,8,6,6] out_b";
  std::string body =
      "xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\n"
      "wd = DequantizeLinear <axis = 0> (w, ws)\n"
      "c = Conv <pads = [1, 1, 1, 1]> (xd, wd, bias)\n" +
      std::string(relu ? "act = Relu(c)\n" : "act = Identity(c)\n") +
      "qa = QuantizeLinear(act, sa, za)\nout_a = DequantizeLinear(qa, sa, za)\n"
      "qb = QuantizeLinear(act, sb, zb)\nout_b = DequantizeLinear(qb, sb, zb)\n";
  if (float_reader) {
    outputs += ", float[1,8,6,6] out_f";
    body += "out_f = Sigmoid(act)\n";
  }
  std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,4,6,6] x) => (" + outputs + ")\n<";
  for (size_t i = 0; i < init.size(); ++i) text += (i ? ", " : "") + init[i];
  return text + ">\n{\n" + body + "}\n";
}

Graph fuse(const Graph& original, optimizer::PassContext& context) {
  optimizer::FusionPass pass("fuse_qdq_conv");
  return run_pass(original, pass, context);
}

// The value node `name`'s first input reads.
std::string first_input_of(const Graph& graph, const std::string& output) {
  for (const Node& node : graph.nodes) {
    if (!node.outputs.empty() && node.outputs[0] == output) return node.input(0);
  }
  return "";
}

std::string producer_op(const Graph& graph, const std::string& value) {
  for (const Node& node : graph.nodes) {
    if (!node.outputs.empty() && node.outputs[0] == value) return node.op_type;
  }
  return "";
}

TEST(FuseQdqFanOut, DifferentScalesBecomeARequantize) {
  std::mt19937 rng(71);
  // a's range [-10.24, 10.16] covers b's [-6.4, 6.35]: a is the layer's output.
  Graph original = load_text(fan_out_model({"int8", 0.08f, 0}, {"int8", 0.05f, 0}, false, rng));
  optimizer::PassContext context;
  Graph fused = fuse(original, context);
  EXPECT_EQ(count_ops(fused, layers::kQConv), 1);
  EXPECT_EQ(count_ops(fused, layers::kQRequantize), 1);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 1);  // the graph input's
  EXPECT_EQ(count_ops(fused, "Conv") + count_ops(fused, "Relu"), 0);
  const Node* requantize = find_op(fused, layers::kQRequantize);
  ASSERT_NE(requantize, nullptr);
  EXPECT_EQ(producer_op(fused, requantize->input(layers::kUnaryX)), layers::kQConv);
  const Attribute* sources = requantize->find_attribute("fused_nodes");
  ASSERT_NE(sources, nullptr);
  EXPECT_EQ(sources->strings, std::vector<std::string>{requantize->name});  // the Q it replaced
  EXPECT_EQ(producer_op(fused, first_input_of(fused, "out_a")), layers::kQConv);
  EXPECT_EQ(producer_op(fused, first_input_of(fused, "out_b")), layers::kQRequantize);
  // Double rounding: out_b within 1 LSB (0.05) of the original; out_a as the plain fusion.
  for (int trial = 0; trial < 3; ++trial) {
    TensorMap inputs = random_inputs(original, rng);
    expect_same_outputs(original, fused, inputs, 0.05f * 1.001f);
  }
}

// Straight from the conv (no activation: the conv output itself has the several readers).
TEST(FuseQdqFanOut, ConvOutputWithoutActivation) {
  std::mt19937 rng(76);
  Graph loaded = load_text(fan_out_model({"int8", 0.08f, 0}, {"int8", 0.05f, 0}, false, rng, /*relu=*/false));
  // Drop the Identity (the pipeline's remove_identities would): the Qs read the conv's output.
  Graph original = loaded;
  for (Node& node : original.nodes) {
    for (std::string& input : node.inputs) {
      if (input == "act") input = "c";
    }
  }
  original.nodes.erase(std::remove_if(original.nodes.begin(), original.nodes.end(),
                                      [](const Node& node) { return node.op_type == "Identity"; }),
                       original.nodes.end());
  optimizer::PassContext context;
  Graph fused = fuse(original, context);
  EXPECT_EQ(count_ops(fused, layers::kQConv), 1);
  EXPECT_EQ(count_ops(fused, layers::kQRequantize), 1);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 1);
  TensorMap inputs = random_inputs(original, rng);
  expect_same_outputs(original, fused, inputs, 0.05f * 1.001f);
}

TEST(FuseQdqFanOut, MixedTypesAndZeroPoints) {
  std::mt19937 rng(72);
  // int8 zp 0 scale 0.08: [-10.24, 10.16] covers uint8 zp 128 scale 0.05: [-6.4, 6.35].
  Graph original = load_text(fan_out_model({"uint8", 0.05f, 128}, {"int8", 0.08f, 0}, false, rng));
  optimizer::PassContext context;
  Graph fused = fuse(original, context);
  EXPECT_EQ(count_ops(fused, layers::kQRequantize), 1);
  EXPECT_EQ(producer_op(fused, first_input_of(fused, "out_b")), layers::kQConv);
  EXPECT_EQ(producer_op(fused, first_input_of(fused, "out_a")), layers::kQRequantize);
  for (int trial = 0; trial < 3; ++trial) {
    TensorMap inputs = random_inputs(original, rng);
    expect_same_outputs(original, fused, inputs, 0.05f * 1.001f);
  }
}

TEST(FuseQdqFanOut, EqualParametersShareTheInt8Output) {
  std::mt19937 rng(73);
  Graph original = load_text(fan_out_model({"int8", 0.06f, 0}, {"int8", 0.06f, 0}, false, rng));
  optimizer::PassContext context;
  Graph fused = fuse(original, context);
  EXPECT_EQ(count_ops(fused, layers::kQConv), 1);
  EXPECT_EQ(count_ops(fused, layers::kQRequantize), 0);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 1);
  const Node* conv = find_op(fused, layers::kQConv);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(first_input_of(fused, "out_a"), conv->outputs[0]);
  EXPECT_EQ(first_input_of(fused, "out_b"), conv->outputs[0]);
  // No requantization: bit-exact.
  TensorMap inputs = random_inputs(original, rng);
  expect_same_outputs(original, fused, inputs, 0.0f);
}

TEST(FuseQdqFanOut, MustNotFireWithAFloatReader) {
  std::mt19937 rng(74);
  Graph original = load_text(fan_out_model({"int8", 0.08f, 0}, {"int8", 0.05f, 0}, true, rng));
  optimizer::PassContext context;
  Graph fused = fuse(original, context);
  EXPECT_EQ(count_ops(fused, layers::kQConv), 1);
  EXPECT_EQ(count_ops(fused, layers::kQRequantize), 0);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 3);  // the layer writes float for all three readers
  TensorMap inputs = random_inputs(original, rng);
  expect_same_outputs(original, fused, inputs, 1e-5f);
}

TEST(FuseQdqFanOut, MustNotFireWhenNoRangeCoversTheOther) {
  std::mt19937 rng(75);
  // uint8 zp 0: [0, 12.75] lacks b's negatives; int8 zp 0: [-6.4, 6.35] lacks a's top.
  Graph original = load_text(fan_out_model({"uint8", 0.05f, 0}, {"int8", 0.05f, 0}, false, rng));
  optimizer::PassContext context;
  Graph fused = fuse(original, context);
  EXPECT_EQ(count_ops(fused, layers::kQRequantize), 0);
  EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 3);
  bool noted = false;
  for (const auto& reason : context.float_reasons) {
    noted = noted || reason.reason.find("no one's range covers") != std::string::npos;
  }
  EXPECT_TRUE(noted);
  TensorMap inputs = random_inputs(original, rng);
  expect_same_outputs(original, fused, inputs, 1e-5f);
}

}  // namespace
}  // namespace qdqrt::testing
