// fuse_pointwise: the elementwise float chain after a float-output QConv/QMatMul becomes the
// layer's pointwise program and a Q after it the layer's output quantization. Structure, numbers
// against the reference executor on the original graph (outputs within one quantum of the final Q:
// the program's exp/erf are polynomials, the reference's <cmath>), and must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "kernels/pointwise/pointwise_program.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x -> Q/DQ -> Conv(8 channels) -> `chain` (ONNX text; reads "c", writes "f") [-> Q -> DQ] -> y.
std::string chain_model(const std::string& chain, bool output_q, std::mt19937& rng,
                        const std::string& extra_outputs = "", const std::string& extra_inputs = "") {
  std::vector<std::string> init = {
      "int8 xz = {0}", "int8 yz = {0}", "float xs = {0.02}", "float ys = {0.05}",
      int_initializer("int8", "w", {8, 4, 3, 3}, -127, 127, rng),
      float_initializer("ws", {8}, 0.002f, 0.01f, rng), "int8[8] wz = {0, 0, 0, 0, 0, 0, 0, 0}",
      float_initializer("b", {8}, -0.3f, 0.3f, rng),
      float_initializer("scale8", {8, 1, 1}, 0.5f, 1.5f, rng),
      float_initializer("shift8", {1, 8, 1, 1}, -0.5f, 0.5f, rng),
      float_initializer("wrong", {6, 1}, 0.5f, 1.5f, rng),
      "float half = {0.5}", "float one = {1.0}", "float sqrt2 = {1.4142135}", "float inv_sqrt2 = {0.70710678}",
      "float six = {6.0}",
      "float zero = {0.0}",
  };
  std::string body =
      "xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\n"
      "wd = DequantizeLinear <axis = 0> (w, ws, wz)\nc = Conv <pads = [1, 1, 1, 1]> (xd, wd, b)\n" + chain;
  body += output_q ? "fq = QuantizeLinear(f, ys, yz)\ny = DequantizeLinear(fq, ys, yz)\n" : "y = Identity(f)\n";
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[1,4,6,6] x{}) => (float[1,8,6,6] y{})\n"
                     "<{}>\n{{\n{}}}\n",
                     extra_inputs, extra_outputs, fmt::join(init, ", "), body);
}

struct Fused {
  Graph original, fused;
  optimizer::PassContext context;
};

Fused fuse(const std::string& text, float tolerance, uint32_t seed = 11) {
  std::mt19937 rng(seed);
  Fused r;
  r.original = load_text(text);
  optimizer::FusionPass conv("fuse_qdq_conv");
  optimizer::FusionPass pointwise("fuse_pointwise");
  Graph with_conv = run_pass(r.original, conv, r.context);
  r.fused = run_pass(with_conv, pointwise, r.context);
  TensorMap inputs = random_inputs(r.original, rng, -3.0f, 3.0f);
  expect_same_outputs(r.original, r.fused, inputs, tolerance);
  return r;
}

const FusedLayerInfo& conv_info(const Graph& graph) { return find_op(graph, layers::kQConv)->attrs<QConvAttributes>().fused; }

std::string program_ops(const FusedLayerInfo& info) {
  std::string text;
  for (size_t i = 0; i < info.pointwise_code.size(); i += 4) {
    if (!text.empty()) text += ",";
    text += kernels::pointwise_op_name(static_cast<kernels::PointwiseOp>(info.pointwise_code[i]));
  }
  return text;
}

TEST(FusePointwise, SiluThenQBecomesOneInt8Layer) {
  std::mt19937 rng(1);
  Fused r = fuse(chain_model("s = Sigmoid(c)\nf = Mul(c, s)\n", true, rng), 0.05f + 1e-6f);
  EXPECT_EQ(count_ops(r.fused, "Sigmoid"), 0);
  EXPECT_EQ(count_ops(r.fused, "Mul"), 0);
  EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 1);  // the input's only
  const Node* conv = find_op(r.fused, layers::kQConv);
  ASSERT_NE(conv, nullptr);
  EXPECT_TRUE(conv->has_input(layers::kConvYScale)) << "the Q after the chain is the layer's output";
  EXPECT_EQ(program_ops(conv_info(r.fused)), "silu");
  EXPECT_EQ(conv_info(r.fused).fused_nodes.size(), 4u);  // Conv, Sigmoid, Mul, Q
}

TEST(FusePointwise, ChainsOfEveryKindMatchTheOriginal) {
  struct Case {
    std::string chain, ops;
    bool output_q;
  };
  const Case cases[] = {
      {"f = HardSwish(c)\n", "hardswish", true},
      // The erf GELU of opset < 20 exports becomes one kGelu (either scaling, either Mul order)...
      {"d = Div(c, sqrt2)\ne = Erf(d)\np = Add(e, one)\nm = Mul(c, p)\nf = Mul(m, half)\n", "gelu", true},
      {"d = Mul(inv_sqrt2, c)\ne = Erf(d)\np = Add(one, e)\nm = Mul(p, half)\nf = Mul(c, m)\n", "gelu", false},
      // ...but not when a constant is off (0.6 x instead of 0.5 x) or x is not the one multiplied.
      {"d = Div(c, sqrt2)\ne = Erf(d)\np = Add(e, one)\nm = Mul(c, p)\nf = Mul(m, six)\n", "div,erf,add,mul,mul", true},
      {"d = Div(c, sqrt2)\ne = Erf(d)\np = Add(e, one)\nm = Mul(d, p)\nf = Mul(m, half)\n", "div,erf,add,mul,mul", false},
      {"g = Div(c, sqrt2)\nd = Div(g, sqrt2)\ne = Erf(d)\np = Add(e, one)\nm = Mul(g, p)\nf = Mul(m, half)\n",
       "div,gelu", false},
      {"f = Gelu(c)\n", "gelu", false},
      {"f = Clip(c, zero, six)\n", "", true},  // the conv fusion takes it as its activation
      {"h = HardSigmoid <alpha = 0.25, beta = 0.4> (c)\nf = Mul(c, h)\n", "mul,add,min,max,mul", true},
      // HardSigmoid with alpha 1/6 and beta 0.5 times x is HardSwish (either Mul order)...
      {"h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (c)\nf = Mul(c, h)\n", "hardswish", true},
      {"h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (c)\nf = Mul(h, c)\n", "hardswish", false},
      // ...but not with another beta, another factor, or while the HardSigmoid is read again.
      {"h = HardSigmoid <alpha = 0.16666667, beta = 0.4> (c)\nf = Mul(c, h)\n", "mul,add,min,max,mul", false},
      {"a = Mul(c, scale8)\nh = HardSigmoid <alpha = 0.16666667, beta = 0.5> (c)\nf = Mul(a, h)\n",
       "mul,mul,add,min,max,mul", false},
      {"h = HardSigmoid <alpha = 0.16666667, beta = 0.5> (c)\nm = Mul(c, h)\nf = Add(m, h)\n",
       "mul,add,min,max,mul,add", false},
      {"a = Mul(c, scale8)\nt = Tanh(a)\nf = Add(t, shift8)\n", "mul,tanh,add", false},
      {"l = LeakyRelu <alpha = 0.1> (c)\nf = Sub(one, l)\n", "sub", true},  // LeakyRelu: the activation
      {"s = Sigmoid(c)\nl = LeakyRelu <alpha = 0.1> (s)\nf = Clip(l, zero, six)\n", "sigmoid,leakyrelu,max,min", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.chain);
    std::mt19937 rng(2);
    // Gelu is opset 20: give that case its own opset.
    std::string text = chain_model(c.chain, c.output_q, rng);
    if (c.chain.find("Gelu(") != std::string::npos) {
      text.replace(text.find("\"\" : 14"), 7, "\"\" : 20");
      text.replace(text.find("ir_version: 8"), 13, "ir_version: 9");
    }
    Fused r = fuse(text, c.output_q ? 0.05f + 1e-6f : 2e-5f);
    EXPECT_EQ(program_ops(conv_info(r.fused)), c.ops);
    EXPECT_EQ(r.fused.nodes.size(), c.output_q ? 3u : 3u);  // Q, QConv, DQ (or Identity)
    EXPECT_EQ(find_op(r.fused, layers::kQConv)->has_input(layers::kConvYScale), c.output_q);
    if (c.chain.find("scale8") != std::string::npos) {
      EXPECT_EQ(conv_info(r.fused).pointwise_channels, 8);
    }
  }
}

// A chain longer than a program holds (32 instructions; HardSigmoid compiles to 4) is cut where it
// still fits: the rest stays float after the layer.
TEST(FusePointwise, LongChainsAreCutToTheProgramLimit) {
  std::string chain = "h1 = HardSigmoid(c)\n";
  for (int i = 2; i <= 9; ++i) chain += fmt::format("h{} = HardSigmoid(h{})\n", i, i - 1);
  chain += "f = Identity(h9)\n";
  std::mt19937 rng(7);
  Fused r = fuse(chain_model(chain, true, rng), 0.05f + 1e-6f);
  EXPECT_EQ(count_ops(r.fused, "HardSigmoid"), 1);
  EXPECT_EQ(conv_info(r.fused).pointwise_code.size(), 4u * 32u);
}

// A second reader of an intermediate value stops the chain before that value; a runtime operand
// or a constant that does not broadcast per channel stops it at that node.
TEST(FusePointwise, MustNotFireOnASharedIntermediateARuntimeOperandOrAWrongShape) {
  {
    SCOPED_TRACE("sigmoid output also a graph output");
    std::mt19937 rng(3);
    Fused r = fuse(chain_model("s = Sigmoid(c)\nf = Mul(c, s)\n", true, rng, ", float[1,8,6,6] s"), 0.05f + 1e-6f);
    // Only the Sigmoid can join (its value leaves the chain); the Mul stays float after it.
    EXPECT_EQ(count_ops(r.fused, "Mul"), 1);
    EXPECT_FALSE(find_op(r.fused, layers::kQConv)->has_input(layers::kConvYScale));
  }
  {
    SCOPED_TRACE("conv output read outside the chain");
    std::mt19937 rng(4);
    Fused r = fuse(chain_model("s = Sigmoid(c)\nf = Mul(c, s)\n", true, rng, ", float[1,8,6,6] c"), 0.05f + 1e-6f);
    EXPECT_EQ(count_ops(r.fused, "Sigmoid"), 1);
    EXPECT_FALSE(conv_info(r.fused).has_pointwise());
  }
  {
    SCOPED_TRACE("runtime operand");
    std::mt19937 rng(5);
    Fused r = fuse(chain_model("f = Mul(c, g)\n", true, rng, "", ", float[1,8,6,6] g"), 0.05f + 1e-6f);
    EXPECT_EQ(count_ops(r.fused, "Mul"), 1);
    EXPECT_FALSE(conv_info(r.fused).has_pointwise());
  }
  {
    SCOPED_TRACE("constant of another shape");
    std::mt19937 rng(6);
    Fused r = fuse(chain_model("f = Add(c, wrong)\n", false, rng), 1e-5f);
    EXPECT_EQ(count_ops(r.fused, "Add"), 1);
    EXPECT_FALSE(conv_info(r.fused).has_pointwise());
  }
}

}  // namespace
}  // namespace qdqrt::testing
