// fuse_qdq_conv: structure, numbers (reference on the original graph vs the fused reference
// kernels) and must-not-fire cases, for TensorRT-style symmetric s8 and ONNX Runtime-style
// asymmetric u8 models.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "optimizer/fusions/fusion.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

enum class Residual { kNone, kQuantized, kFloat };

struct ConvCase {
  bool asymmetric = false;  // u8 activations with zero-points != 0 (ORT quantizer style)
  bool per_channel = true;
  Residual residual = Residual::kNone;
  std::string activation = "Relu";  // "", Relu, Clip, LeakyRelu
  bool output_q = true;
  int64_t group = 1;
  int64_t in_channels = 4;
  int64_t out_channels = 8;
  bool nonconstant_scale = false;
  bool second_consumer = false;  // the conv output is also a graph output
  bool int32_bias = false;       // bias as DQ(int32)
};

// y_scale chosen so outputs span the int8 range; every value prints as text.
std::string conv_model(const ConvCase& c, std::mt19937& rng) {
  const std::string act_type = c.asymmetric ? "uint8" : "int8";
  const int zp_x = c.asymmetric ? 131 : 0, zp_y = c.asymmetric ? 120 : 0, zp_r = c.asymmetric ? 140 : 0;
  const int64_t cin_per_group = c.in_channels / c.group;
  const int64_t channels = c.per_channel ? c.out_channels : 1;
  std::vector<std::string> init = {
      fmt::format("{} xz = {{{}}}", act_type, zp_x),
      fmt::format("{} yz = {{{}}}", act_type, zp_y),
      fmt::format("{} rz = {{{}}}", act_type, zp_r),
      "float ys = {0.08}",
      "float rs = {0.03}",
      int_initializer("int8", "w", {c.out_channels, cin_per_group, 3, 3}, -127, 127, rng),
      float_initializer("ws", c.per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{}, 0.002f, 0.01f,
                        rng),
      // ONNX Runtime's quantizer keeps weight zero-points 0; a nonzero one must still be right.
      c.per_channel ? int_initializer("int8", "wz", {channels}, c.asymmetric ? -3 : 0, c.asymmetric ? 3 : 0, rng)
                    : std::string("int8 wz = {0}"),
  };
  if (c.int32_bias) {
    init.push_back(int_initializer("int32", "bq", {c.out_channels}, -500, 500, rng));
    init.push_back("float bqs = {0.0002}");
  } else {
    init.push_back(float_initializer("b", {c.out_channels}, -0.3f, 0.3f, rng));
  }
  if (!c.nonconstant_scale) init.push_back("float xs = {0.02}");
  std::string inputs = "float[1,4,6,6] x";
  if (c.residual != Residual::kNone) inputs += fmt::format(", float[1,{},6,6] r", c.out_channels);
  if (c.nonconstant_scale) inputs += ", float xs";
  std::string body;
  body += fmt::format("xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\n");
  body += c.per_channel ? "wd = DequantizeLinear <axis = 0> (w, ws, wz)\n" : "wd = DequantizeLinear(w, ws, wz)\n";
  if (c.int32_bias) body += "b = DequantizeLinear(bq, bqs)\n";
  body += fmt::format("c = Conv <pads = [1, 1, 1, 1], group = {}> (xd, wd, b)\n", c.group);
  std::string last = "c";
  if (c.residual == Residual::kQuantized) {
    body += "rq = QuantizeLinear(r, rs, rz)\nrd = DequantizeLinear(rq, rs, rz)\nsum = Add(c, rd)\n";
    last = "sum";
  } else if (c.residual == Residual::kFloat) {
    body += "sum = Add(r, c)\n";
    last = "sum";
  }
  if (c.activation == "Relu") body += fmt::format("act = Relu({})\n", last);
  if (c.activation == "LeakyRelu") body += fmt::format("act = LeakyRelu <alpha = 0.1> ({})\n", last);
  if (c.activation == "Clip") {
    init.push_back("float lo = {-0.5}");
    init.push_back("float hi = {3.0}");
    body += fmt::format("act = Clip({}, lo, hi)\n", last);
  }
  if (!c.activation.empty()) last = "act";
  if (c.output_q) {
    body += fmt::format("yq = QuantizeLinear({}, ys, yz)\ny = DequantizeLinear(yq, ys, yz)\n", last);
  } else {
    body += fmt::format("y = Identity({})\n", last);
  }
  std::string outputs = fmt::format("float[1,{},6,6] y", c.out_channels);
  if (c.second_consumer) outputs += fmt::format(", float[1,{},6,6] c", c.out_channels);
  std::string init_text;
  for (size_t i = 0; i < init.size(); ++i) {
    if (i > 0) init_text += ", ";
    init_text += init[i];
  }
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 13]>\ng ({}) => ({})\n<{}>\n{{\n{}}}\n", inputs, outputs,
                     init_text, body);
}

struct Fused {
  Graph original, fused;
  optimizer::PassContext context;
  TensorMap inputs;
};

Fused fuse(const ConvCase& c, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  Fused f;
  f.original = load_text(conv_model(c, rng));
  optimizer::FusionPass pass("fuse_qdq_conv");
  f.fused = run_pass(f.original, pass, f.context);
  f.inputs = random_inputs(f.original, rng);
  return f;
}

const char* const kStyles[] = {"s8_symmetric", "u8_asymmetric"};

class ConvStyles : public ::testing::TestWithParam<bool> {};

TEST_P(ConvStyles, ConvBiasReluQFusesIntoOneQConv) {
  ConvCase c;
  c.asymmetric = GetParam();
  Fused f = fuse(c);
  EXPECT_EQ(count_ops(f.fused, "QConv"), 1);
  EXPECT_EQ(count_ops(f.fused, "Conv"), 0);
  EXPECT_EQ(count_ops(f.fused, "Relu"), 0);
  // Left: the Q of the graph input and the DQ of the output (the region's borders).
  EXPECT_EQ(count_ops(f.fused, "QuantizeLinear"), 1);
  EXPECT_EQ(count_ops(f.fused, "DequantizeLinear"), 1);
  const Node* layer = find_op(f.fused, "QConv");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->domain, layers::kDomain);
  EXPECT_EQ(layer->inputs.size(), size_t{layers::kConvYZeroPoint + 1});
  const FusedLayerInfo* info = fused_layer_info(*layer);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->activation.kind, ActivationKind::kRelu);
  ASSERT_EQ(info->fused_nodes.size(), 3u);
  EXPECT_EQ(layer_kind(*layer, &f.fused), "Conv");
  expect_same_outputs(f.original, f.fused, f.inputs, 0.08f * 1.001f);  // 1 LSB of the output
}

TEST_P(ConvStyles, QuantizedResidualAddAndActivationGoIntoTheEpilogue) {
  for (std::string activation : {"Relu", "Clip", "LeakyRelu", ""}) {
    SCOPED_TRACE(activation);
    ConvCase c;
    c.asymmetric = GetParam();
    c.residual = Residual::kQuantized;
    c.activation = activation;
    Fused f = fuse(c);
    EXPECT_EQ(count_ops(f.fused, "Add"), 0);
    const Node* layer = find_op(f.fused, "QConv");
    ASSERT_NE(layer, nullptr);
    ASSERT_EQ(layer->inputs.size(), size_t{layers::kConvInputCount});
    EXPECT_EQ(layer->inputs[layers::kConvResidual], "rq");
    EXPECT_EQ(layer->inputs[layers::kConvResidualScale], "rs");
    EXPECT_EQ(layer->inputs[layers::kConvResidualZeroPoint], "rz");
    const auto& names = fused_layer_info(*layer)->fused_nodes;
    EXPECT_EQ(names.size(), activation.empty() ? 3u : 4u);
    // Only the border Qs of x and r, and the output DQ, remain.
    EXPECT_EQ(count_ops(f.fused, "QuantizeLinear"), 2);
    EXPECT_EQ(count_ops(f.fused, "DequantizeLinear"), 1);
    expect_same_outputs(f.original, f.fused, f.inputs, 0.08f * 1.001f);
  }
}

TEST_P(ConvStyles, FloatOutputWithoutQ) {
  ConvCase c;
  c.asymmetric = GetParam();
  c.output_q = false;
  c.per_channel = false;
  c.int32_bias = true;
  Fused f = fuse(c);
  const Node* layer = find_op(f.fused, "QConv");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->inputs.size(), size_t{layers::kConvBias + 1});  // no y_scale: float output
  EXPECT_EQ(count_ops(f.fused, "DequantizeLinear"), 0);
  // Float output: same float ops in the same order, so equal up to float rounding.
  expect_same_outputs(f.original, f.fused, f.inputs, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Styles, ConvStyles, ::testing::Bool(),
                         [](const auto& info) { return std::string(kStyles[info.param ? 1 : 0]); });

TEST(FuseQdqConv, DepthwiseAndGroupedConvAreTheirOwnKinds) {
  for (int64_t group : {4, 2}) {
    ConvCase c;
    c.group = group;
    c.out_channels = group == 4 ? 4 : 8;
    c.asymmetric = group == 2;
    Fused f = fuse(c);
    const Node* layer = find_op(f.fused, "QConv");
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer_kind(*layer, &f.fused), group == 4 ? "DepthwiseConv" : "GroupConv");
    expect_same_outputs(f.original, f.fused, f.inputs, 0.08f * 1.001f);
  }
}

TEST(FuseQdqConv, FloatResidualStaysFloatWithReason) {
  ConvCase c;
  c.residual = Residual::kFloat;
  Fused f = fuse(c);
  // The conv fuses (float output); the Add, the Relu after it and the Q stay.
  EXPECT_EQ(count_ops(f.fused, "QConv"), 1);
  EXPECT_EQ(count_ops(f.fused, "Add"), 1);
  EXPECT_EQ(count_ops(f.fused, "Relu"), 1);
  EXPECT_EQ(find_op(f.fused, "QConv")->inputs.size(), size_t{layers::kConvBias + 1});
  EXPECT_EQ(float_reason_for(f.original, f.context, "sum"), "residual input is float");
  expect_same_outputs(f.original, f.fused, f.inputs, 0.08f * 1.001f);
}

TEST(FuseQdqConv, ConvOutputWithTwoConsumersKeepsTheAddOut) {
  ConvCase c;
  c.residual = Residual::kQuantized;
  c.second_consumer = true;
  Fused f = fuse(c);
  EXPECT_EQ(count_ops(f.fused, "QConv"), 1);
  EXPECT_EQ(count_ops(f.fused, "Add"), 1);
  EXPECT_EQ(find_op(f.fused, "QConv")->outputs[0], "c");
  EXPECT_NE(float_reason_for(f.original, f.context, "sum").find("other consumers"), std::string::npos);
  expect_same_outputs(f.original, f.fused, f.inputs, 0.08f * 1.001f);
}

TEST(FuseQdqConv, NonConstantScaleMustNotFire) {
  ConvCase c;
  c.nonconstant_scale = true;
  Fused f = fuse(c);
  EXPECT_EQ(count_ops(f.fused, "QConv"), 0);
  EXPECT_EQ(count_ops(f.fused, "Conv"), 1);
  EXPECT_NE(float_reason_for(f.original, f.context, "c").find("not a constant"), std::string::npos) << float_reason_for(f.original, f.context, "c");
}

TEST(FuseQdqConv, PerChannelActivationScaleMustNotFire) {
  std::mt19937 rng(3);
  std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,6,6] x) => (float[1,2,6,6] y)
<float[4] xs = {0.02, 0.03, 0.04, 0.05}, int8[4] xz = {0, 0, 0, 0}, float ws = {0.01}, int8 wz = {0}, )" +
                     int_initializer("int8", "w", {2, 4, 3, 3}, -127, 127, rng) + R"(>
{
  xq = QuantizeLinear <axis = 1> (x, xs, xz)
  xd = DequantizeLinear <axis = 1> (xq, xs, xz)
  wd = DequantizeLinear(w, ws, wz)
  y = Conv <pads = [1, 1, 1, 1]> (xd, wd)
})";
  Graph original = load_text(text);
  optimizer::PassContext context;
  optimizer::FusionPass pass("fuse_qdq_conv");
  Graph fused = run_pass(original, pass, context);
  EXPECT_EQ(count_ops(fused, "QConv"), 0);
  EXPECT_NE(float_reason_for(original, context, "y").find("per-channel"), std::string::npos) << float_reason_for(original, context, "y");
}

TEST(FuseQdqConv, FloatConvIsLeftAloneWithoutReason) {
  std::mt19937 rng(4);
  std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,6,6] x) => (float[1,2,4,4] y)
<)" + float_initializer("w", {2, 4, 3, 3}, -1, 1, rng) + R"(>
{
  y = Conv(x, w)
})";
  Graph original = load_text(text);
  optimizer::PassContext context;
  optimizer::FusionPass pass("fuse_qdq_conv");
  Graph fused = run_pass(original, pass, context);
  EXPECT_EQ(count_ops(fused, "Conv"), 1);
  EXPECT_TRUE(context.float_reasons.empty());
}

}  // namespace
}  // namespace qdqrt::testing
