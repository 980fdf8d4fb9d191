// fuse_qdq_clamp: DQ -> Relu/Clip/Max/Min -> Q joins the QConv before it (equal parameters) or
// becomes a standalone QRequantize clamp; structure, numbers against the reference executor on
// the original graph, and must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

struct ClampCase {
  bool asymmetric = false;            // u8 with zero-points != 0, else s8 with zero-points 0
  std::string conv_activation;        // "" or "Relu": the activation the QConv already has
  std::string clamp = "Clip";         // Relu, Clip (0..6), Max (lower bound), Min (upper bound)
  std::string clamp_scale = "0.08";   // the clamp's DQ and Q scale (the conv writes 0.08)
  int clamp_zero_point_shift = 0;     // added to the clamp's Q zero-point
  bool second_consumer = false;       // the clamp's DQ also feeds a graph output
  bool runtime_bound = false;         // Clip's max is a graph input
};

// Conv -> Q(ys) -> DQ -> clamp -> Q -> DQ -> y, as ONNX Runtime's quantizer writes ReLU/ReLU6 with
// symmetric int8 activations.
std::string clamp_model(const ClampCase& c, std::mt19937& rng) {
  const std::string t = c.asymmetric ? "uint8" : "int8";
  const int zp_x = c.asymmetric ? 131 : 0, zp_y = c.asymmetric ? 120 : 0;
  std::vector<std::string> init = {
      fmt::format("{} xz = {{{}}}", t, zp_x),
      fmt::format("{} yz = {{{}}}", t, zp_y),
      fmt::format("{} cz = {{{}}}", t, zp_y + c.clamp_zero_point_shift),
      "float xs = {0.02}",
      "float ys = {0.08}",
      fmt::format("float cs = {{{}}}", c.clamp_scale),
      "float lo = {0.0}",
      "float six = {6.0}",
      "float bound = {-0.7}",
      int_initializer("int8", "w", {8, 4, 3, 3}, -127, 127, rng),
      float_initializer("ws", {8}, 0.002f, 0.01f, rng),
      "int8[8] wz = {0, 0, 0, 0, 0, 0, 0, 0}",
      float_initializer("b", {8}, -0.3f, 0.3f, rng),
  };
  std::string inputs = "float[1,4,6,6] x";
  if (c.runtime_bound) {
    // Keep the initializers the body reads (six becomes an input).
    init = {fmt::format("{} xz = {{{}}}", t, zp_x), fmt::format("{} yz = {{{}}}", t, zp_y),
            fmt::format("{} cz = {{{}}}", t, zp_y), "float xs = {0.02}", "float ys = {0.08}", "float cs = {0.08}",
            "float lo = {0.0}", int_initializer("int8", "w", {8, 4, 3, 3}, -127, 127, rng),
            float_initializer("ws", {8}, 0.002f, 0.01f, rng), "int8[8] wz = {0, 0, 0, 0, 0, 0, 0, 0}",
            float_initializer("b", {8}, -0.3f, 0.3f, rng)};
    inputs += ", float six";
  }
  std::string body =
      "xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\n"
      "wd = DequantizeLinear <axis = 0> (w, ws, wz)\nc = Conv <pads = [1, 1, 1, 1]> (xd, wd, b)\n";
  std::string conv_out = "c";
  if (c.conv_activation == "Relu") {
    body += "r = Relu(c)\n";
    conv_out = "r";
  }
  body += fmt::format("cq = QuantizeLinear({}, ys, yz)\ncd = DequantizeLinear(cq, cs, cz)\n", conv_out);
  if (c.clamp == "Relu") body += "f = Relu(cd)\n";
  if (c.clamp == "Clip") body += "f = Clip(cd, lo, six)\n";
  if (c.clamp == "Max") body += "f = Max(cd, bound)\n";
  if (c.clamp == "Min") body += "f = Min(six, cd)\n";
  body += "fq = QuantizeLinear(f, cs, cz)\ny = DequantizeLinear(fq, cs, cz)\n";
  std::string outputs = "float[1,8,6,6] y";
  if (c.second_consumer) outputs += ", float[1,8,6,6] cd";
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 13]>\ng ({}) => ({})\n<{}>\n{{\n{}}}\n", inputs, outputs,
                     fmt::join(init, ", "), body);
}

struct Fused {
  Graph original, fused;
  optimizer::PassContext context;
};

// fuse_qdq_conv then fuse_qdq_clamp; outputs within one step of the clamp's scale.
Fused fuse(const ClampCase& c, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  Fused r;
  r.original = load_text(clamp_model(c, rng));
  optimizer::FusionPass conv("fuse_qdq_conv");
  optimizer::FusionPass clamp("fuse_qdq_clamp");
  Graph with_conv = run_pass(r.original, conv, r.context);
  r.fused = run_pass(with_conv, clamp, r.context);
  TensorMap inputs = random_inputs(r.original, rng);
  if (c.runtime_bound) inputs["six"] = Tensor::scalar<float>(6.0f);
  expect_same_outputs(r.original, r.fused, inputs, 1e-6f);
  return r;
}

const FusedActivation& conv_activation(const Graph& graph) {
  return find_op(graph, layers::kQConv)->attrs<QConvAttributes>().fused.activation;
}

TEST(FuseQdqClamp, Relu6AfterQConvBecomesItsClamp) {
  for (bool asymmetric : {false, true}) {
    SCOPED_TRACE(asymmetric ? "u8" : "s8");
    ClampCase c;
    c.asymmetric = asymmetric;
    Fused r = fuse(c);
    EXPECT_EQ(count_ops(r.fused, "QConv"), 1);
    EXPECT_EQ(count_ops(r.fused, "Clip"), 0);
    EXPECT_EQ(count_ops(r.fused, "QRequantize"), 0);
    EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 1);    // the input's
    EXPECT_EQ(count_ops(r.fused, "DequantizeLinear"), 1);  // the output's
    const FusedActivation& activation = conv_activation(r.fused);
    EXPECT_EQ(activation.kind, ActivationKind::kClip);
    EXPECT_EQ(activation.min, 0.0f);
    EXPECT_EQ(activation.max, 6.0f);
  }
}

TEST(FuseQdqClamp, ReluAndMaxMinJoinTheConvAndComposeWithItsActivation) {
  struct Expected {
    std::string clamp, conv_activation;
    ActivationKind kind;
    float min, max;
  };
  const float lowest = std::numeric_limits<float>::lowest(), highest = std::numeric_limits<float>::max();
  for (const Expected& e : {Expected{"Relu", "", ActivationKind::kRelu, lowest, highest},
                            Expected{"Relu", "Relu", ActivationKind::kRelu, lowest, highest},
                            Expected{"Clip", "Relu", ActivationKind::kClip, 0.0f, 6.0f},
                            Expected{"Max", "", ActivationKind::kClip, -0.7f, highest},
                            Expected{"Min", "Relu", ActivationKind::kClip, 0.0f, 6.0f}}) {
    SCOPED_TRACE(e.conv_activation + " then " + e.clamp);
    ClampCase c;
    c.asymmetric = true;  // Relu is not the Q's saturation with zero-point 120
    c.clamp = e.clamp;
    c.conv_activation = e.conv_activation;
    Fused r = fuse(c);
    EXPECT_EQ(r.fused.nodes.size(), 3u);  // Q, QConv, DQ
    const FusedActivation& activation = conv_activation(r.fused);
    EXPECT_EQ(activation.kind, e.kind);
    if (e.kind == ActivationKind::kClip) {
      EXPECT_EQ(activation.min, e.min);
      EXPECT_EQ(activation.max, e.max);
    }
  }
}

// Mismatched scale or zero-point, or a second reader of the conv's int8 output: the clamp must
// not join the conv (it would change the rounding); it runs as an int8 QRequantize table instead.
TEST(FuseQdqClamp, MustNotJoinTheConvWithOtherParametersOrASecondReader) {
  ClampCase scale;
  scale.clamp_scale = "0.05";
  ClampCase zero_point;
  zero_point.asymmetric = true;
  zero_point.clamp_zero_point_shift = 3;
  ClampCase shared;
  shared.second_consumer = true;
  for (const ClampCase& c : {scale, zero_point, shared}) {
    SCOPED_TRACE(c.clamp_scale + " " + std::to_string(c.clamp_zero_point_shift) + (c.second_consumer ? " shared" : ""));
    Fused r = fuse(c);
    EXPECT_EQ(conv_activation(r.fused).kind, ActivationKind::kNone);
    ASSERT_EQ(count_ops(r.fused, "QRequantize"), 1);
    EXPECT_EQ(count_ops(r.fused, "Clip"), 0);
    const Node* clamp = find_op(r.fused, layers::kQRequantize);
    EXPECT_EQ(clamp->attrs<QRequantizeAttributes>().fused.activation.kind, ActivationKind::kClip);
  }
}

TEST(FuseQdqClamp, RuntimeClipBoundMustNotFire) {
  ClampCase c;
  c.runtime_bound = true;
  Fused r = fuse(c);
  EXPECT_EQ(count_ops(r.fused, "Clip"), 1);
  EXPECT_EQ(count_ops(r.fused, "QRequantize"), 0);
  EXPECT_EQ(float_reason_for(r.fused, r.context, "f"), "Clip bound is not a constant");
}

}  // namespace
}  // namespace qdqrt::testing
