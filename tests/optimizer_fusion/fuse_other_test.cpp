// fuse_qdq_binary, fuse_qdq_pool, fuse_qdq_resize, fuse_qdq_split, fuse_qdq_concat, fuse_qdq_lookup and the whole pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "optimizer/fusions/fusion.h"
#include "optimizer/pipeline.h"
#include "core/attribute_values.h"
#include "core/op_registry.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

struct Result {
  Graph original, fused;
  optimizer::PassContext context;
};

// tolerance <= 0: no numbers check.
Result fuse_text(optimizer::Pass& pass, const std::string& text, float tolerance, uint32_t seed = 5) {
  std::mt19937 rng(seed);
  Result r;
  r.original = load_text(text);
  r.fused = run_pass(r.original, pass, r.context);
  if (tolerance > 0) expect_same_outputs(r.original, r.fused, random_inputs(r.original, rng), tolerance);
  return r;
}

const char* const kHeader = R"(<ir_version: 8, opset_import: ["" : 13]>)";
const char* const kHeader17 = R"(<ir_version: 8, opset_import: ["" : 17]>)";  // HardSwish needs 14

// Q -> DQ of a graph input: "<name>q" int8/uint8 and "<name>d" its dequantized value.
std::string quantized(const std::string& name, const std::string& scale, const std::string& zp) {
  return fmt::format("{0}q = QuantizeLinear({0}, {1}, {2})\n{0}d = DequantizeLinear({0}q, {1}, {2})\n", name, scale, zp);
}

TEST(FuseQdqBinary, AddReluQAndMulBothStyles) {
  for (const char* op : {"Add", "Mul"}) {
    for (bool asymmetric : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}", op, asymmetric ? "u8" : "s8"));
      const std::string t = asymmetric ? "uint8" : "int8";
      std::string text = fmt::format(R"({0}
g (float[2,3,4] a, float[3,1] b) => (float[2,3,4] y)
<float as = {{0.02}}, {1} az = {{{2}}}, float bs = {{0.03}}, {1} bz = {{{3}}}, float ys = {{0.04}}, {1} yz = {{{4}}}>
{{
{5}{6}  s = {7}(ad, bd)
  act = Relu(s)
  yq = QuantizeLinear(act, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                     kHeader, t, asymmetric ? 130 : 0, asymmetric ? 110 : 0, asymmetric ? 5 : 0,
                                     quantized("a", "as", "az"), quantized("b", "bs", "bz"), op);
      optimizer::FusionPass pass("fuse_qdq_binary");
      Result r = fuse_text(pass, text, 0.04f * 1.001f);
      const std::string fused_op = std::string("Q") + op;
      EXPECT_EQ(count_ops(r.fused, fused_op), 1);
      EXPECT_EQ(count_ops(r.fused, "Relu"), 0);
      EXPECT_EQ(count_ops(r.fused, "DequantizeLinear"), 1);  // only the output's
      ASSERT_NE(find_op(r.fused, fused_op), nullptr);
      EXPECT_EQ(fused_layer_info(*find_op(r.fused, fused_op))->activation.kind, ActivationKind::kRelu);
    }
  }
}

TEST(FuseQdqBinary, FloatInputMustNotFire) {
  std::string text = fmt::format(R"({}
g (float[2,3] a, float[2,3] b) => (float[2,3] y)
<float as = {{0.02}}, int8 az = {{0}}>
{{
{}  y = Add(ad, b)
}})",
                                 kHeader, quantized("a", "as", "az"));
  optimizer::FusionPass pass("fuse_qdq_binary");
  Result r = fuse_text(pass, text, 0);
  EXPECT_EQ(count_ops(r.fused, "QAdd"), 0);
  EXPECT_EQ(float_reason_for(r.original, r.context, "y"), "input B is float (no DequantizeLinear)");
}

TEST(FuseQdqPool, GlobalAndAveragePoolAndInt8MaxPool) {
  std::string text = fmt::format(R"({}
g (float[1,3,6,6] x) => (float[1,3,1,1] g1, float[1,3,3,3] p1, float[1,3,3,3] m1)
<float xs = {{0.02}}, uint8 xz = {{128}}, float ys = {{0.01}}, uint8 yz = {{120}}>
{{
{}  g0 = GlobalAveragePool(xd)
  gq = QuantizeLinear(g0, ys, yz)
  g1 = DequantizeLinear(gq, ys, yz)
  p0 = AveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (xd)
  pq = QuantizeLinear(p0, ys, yz)
  p1 = DequantizeLinear(pq, ys, yz)
  m0 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (xd)
  mq = QuantizeLinear(m0, xs, xz)
  m1 = DequantizeLinear(mq, xs, xz)
}})",
                                 kHeader, quantized("x", "xs", "xz"));
  optimizer::FusionPass pass("fuse_qdq_pool");
  Result r = fuse_text(pass, text, 0.01f * 1.001f);
  EXPECT_EQ(count_ops(r.fused, "QGlobalAveragePool"), 1);
  EXPECT_EQ(count_ops(r.fused, "QAveragePool"), 1);
  ASSERT_EQ(count_ops(r.fused, "MaxPool"), 1);
  EXPECT_EQ(find_op(r.fused, "MaxPool")->inputs[0], "xq");  // reads int8 directly
  EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 1);       // the graph input's
}

// A float AveragePool whose only reader is a QuantizeLinear (Inception's branch pools after a
// float Concat): one QAveragePool of the float input, no x_scale; the same codes.
TEST(FuseQdqPool, FloatAveragePoolReadOnlyByAQuantizeLinearFuses) {
  std::string text = fmt::format(R"({}
g (float[1,5,7,7] x) => (float[1,5,7,7] p1, float[1,5,3,3] s1, float[1,5,3,3] s0)
<float ys = {{0.01}}, uint8 yz = {{120}}>
{{
  r = Relu(x)
  p0 = AveragePool <kernel_shape = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], count_include_pad = 1> (r)
  pq = QuantizeLinear(p0, ys, yz)
  p1 = DequantizeLinear(pq, ys, yz)
  s0 = AveragePool <kernel_shape = [3, 3], strides = [2, 2]> (r)
  sq = QuantizeLinear(s0, ys, yz)
  s1 = DequantizeLinear(sq, ys, yz)
}})",
                                 kHeader);
  optimizer::FusionPass pass("fuse_qdq_pool");
  Result r = fuse_text(pass, text, 1e-9f);
  // p0: fused. s0 is also a graph output (a second reader): the pool stays float (must not fire).
  ASSERT_EQ(count_ops(r.fused, "QAveragePool"), 1);
  EXPECT_EQ(count_ops(r.fused, "AveragePool"), 1);
  EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 1);  // s0's
  const Node* pool = find_op(r.fused, "QAveragePool");
  ASSERT_EQ(pool->inputs.size(), 5u);
  EXPECT_EQ(pool->inputs[0], "r");  // the float input, no x_scale or x_zero_point
  EXPECT_EQ(pool->inputs[1], "");
  EXPECT_EQ(pool->inputs[2], "");
  EXPECT_EQ(pool->inputs[3], "ys");
  EXPECT_EQ(pool->outputs[0], "pq");
}

TEST(FuseQdqPool, MaxPoolWithDifferentParametersMustNotFire) {
  std::string text = fmt::format(R"({}
g (float[1,3,6,6] x) => (float[1,3,3,3] m1)
<float xs = {{0.02}}, int8 xz = {{0}}, float ys = {{0.04}}>
{{
{}  m0 = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (xd)
  mq = QuantizeLinear(m0, ys, xz)
  m1 = DequantizeLinear(mq, ys, xz)
}})",
                                 kHeader, quantized("x", "xs", "xz"));
  optimizer::FusionPass pass("fuse_qdq_pool");
  Result r = fuse_text(pass, text, 0);
  EXPECT_EQ(find_op(r.fused, "MaxPool")->inputs[0], "xd");
  EXPECT_EQ(float_reason_for(r.original, r.context, "m0"), "input and output quantization parameters differ");
}

// Indices a graph output reads (not a node): the int8 max pool has no Indices, so it stays float.
TEST(FuseQdqPool, MaxPoolWhoseIndicesAreAGraphOutputMustNotFire) {
  std::string text = fmt::format(R"({}
g (float[1,3,6,6] x) => (float[1,3,3,3] m1, int64[1,3,3,3] i)
<float xs = {{0.02}}, int8 xz = {{0}}>
{{
{}  m0, i = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (xd)
  mq = QuantizeLinear(m0, xs, xz)
  m1 = DequantizeLinear(mq, xs, xz)
}})",
                                 kHeader, quantized("x", "xs", "xz"));
  optimizer::FusionPass pass("fuse_qdq_pool");
  Result r = fuse_text(pass, text, 0);
  EXPECT_EQ(find_op(r.fused, "MaxPool")->inputs[0], "xd");
  EXPECT_EQ(find_op(r.fused, "MaxPool")->outputs.size(), 2u);
  EXPECT_EQ(float_reason_for(r.original, r.context, "m0"), "Indices output is used");
}

TEST(FuseQdqResize, NearestWithEqualParametersReadsInt8) {
  std::string text = fmt::format(R"({}
g (float[1,3,5,6] x) => (float[1,3,10,12] n1, float[1,3,10,12] l1)
<float xs = {{0.02}}, uint8 xz = {{128}}, float[4] s = {{1.0, 1.0, 2.0, 2.0}}>
{{
{}  n0 = Resize <mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"> (xd, , s)
  nq = QuantizeLinear(n0, xs, xz)
  n1 = DequantizeLinear(nq, xs, xz)
  l0 = Resize <mode = "linear"> (xd, , s)
  lq = QuantizeLinear(l0, xs, xz)
  l1 = DequantizeLinear(lq, xs, xz)
}})",
                                 kHeader, quantized("x", "xs", "xz"));
  optimizer::FusionPass pass("fuse_qdq_resize");
  // Nearest: exact; linear stays float (same graph).
  Result r = fuse_text(pass, text, 1e-6f);
  ASSERT_EQ(count_ops(r.fused, "Resize"), 2);
  int int8_reads = 0;
  for (const Node& node : r.fused.nodes) {
    if (node.op_type == "Resize" && node.inputs[0] == "xq") ++int8_reads;
  }
  EXPECT_EQ(int8_reads, 1);
  EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 2);  // the graph input's and the linear one's
  EXPECT_NE(float_reason_for(r.original, r.context, "l0").find("mode 'linear' interpolates"), std::string::npos)
      << float_reason_for(r.original, r.context, "l0");
}

TEST(FuseQdqResize, DifferentParametersMustNotFire) {
  for (const char* out_params : {"ys, xz", "xs, yz"}) {
    SCOPED_TRACE(out_params);
    std::string text = fmt::format(R"({}
g (float[1,3,5,6] x) => (float[1,3,10,12] n1)
<float xs = {{0.02}}, int8 xz = {{0}}, float ys = {{0.04}}, int8 yz = {{3}}, float[4] s = {{1.0, 1.0, 2.0, 2.0}}>
{{
{}  n0 = Resize <mode = "nearest"> (xd, , s)
  nq = QuantizeLinear(n0, {})
  n1 = DequantizeLinear(nq, {})
}})",
                                   kHeader, quantized("x", "xs", "xz"), out_params, out_params);
    optimizer::FusionPass pass("fuse_qdq_resize");
    Result r = fuse_text(pass, text, 0);
    EXPECT_EQ(find_op(r.fused, "Resize")->inputs[0], "xd");
    EXPECT_EQ(float_reason_for(r.original, r.context, "n0"), "input and output quantization parameters differ");
  }
}

// torch.chunk exported as Split between Q/DQ: the Split reads the int8 tensor and writes the Qs'
// outputs; a Q with other parameters, or an output read by a float op, keeps it float.
TEST(FuseQdqSplit, EqualParametersReadInt8) {
  std::string text = fmt::format(R"({}
g (float[1,6,5] x) => (float[1,2,5] a1, float[1,4,5] b1)
<float xs = {{0.02}}, uint8 xz = {{128}}, int64[2] sz = {{2, 4}}>
{{
{}  a0, b0 = Split <axis = 1> (xd, sz)
  aq = QuantizeLinear(a0, xs, xz)
  a1 = DequantizeLinear(aq, xs, xz)
  bq = QuantizeLinear(b0, xs, xz)
  b1 = DequantizeLinear(bq, xs, xz)
}})",
                                 kHeader, quantized("x", "xs", "xz"));
  optimizer::FusionPass pass("fuse_qdq_split");
  Result r = fuse_text(pass, text, 1e-9f);
  const Node* split = find_op(r.fused, "Split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->inputs[0], "xq");
  EXPECT_EQ(split->outputs, (std::vector<std::string>{"aq", "bq"}));
  EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 1);  // the graph input's
}

TEST(FuseQdqSplit, OtherParametersOrAFloatReaderMustNotFire) {
  for (const char* b_reader : {"bq = QuantizeLinear(b0, ys, xz)\n  b1 = DequantizeLinear(bq, ys, xz)",
                               "b1 = Relu(b0)"}) {
    SCOPED_TRACE(b_reader);
    std::string text = fmt::format(R"({}
g (float[1,6,5] x) => (float[1,2,5] a1, float[1,4,5] b1)
<float xs = {{0.02}}, uint8 xz = {{128}}, float ys = {{0.04}}, int64[2] sz = {{2, 4}}>
{{
{}  a0, b0 = Split <axis = 1> (xd, sz)
  aq = QuantizeLinear(a0, xs, xz)
  a1 = DequantizeLinear(aq, xs, xz)
  {}
}})",
                                   kHeader, quantized("x", "xs", "xz"), b_reader);
    optimizer::FusionPass pass("fuse_qdq_split");
    Result r = fuse_text(pass, text, 0);
    EXPECT_EQ(find_op(r.fused, "Split")->inputs[0], "xd");
    EXPECT_FALSE(float_reason_for(r.original, r.context, "a0").empty() &&
                 float_reason_for(r.original, r.context, "b0").empty());
  }
}

TEST(FuseQdqConcat, DifferentInputScalesAreRequantized) {
  std::string text = fmt::format(R"({}
g (float[1,2,3] a, float[1,4,3] b) => (float[1,6,3] y)
<float as = {{0.02}}, int8 az = {{3}}, float bs = {{0.035}}, int8 bz = {{-4}}, float ys = {{0.03}}, int8 yz = {{1}}>
{{
{}{}  c = Concat <axis = 1> (ad, bd)
  yq = QuantizeLinear(c, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                 kHeader, quantized("a", "as", "az"), quantized("b", "bs", "bz"));
  optimizer::FusionPass pass("fuse_qdq_concat");
  Result r = fuse_text(pass, text, 0.03f * 1.001f);
  ASSERT_EQ(count_ops(r.fused, "QConcat"), 1);
  const Node* layer = find_op(r.fused, "QConcat");
  EXPECT_EQ(layer->inputs.size(), size_t{layers::kConcatFirstX + 6});
  EXPECT_EQ(layer->inputs[layers::kConcatYScale], "ys");
  EXPECT_EQ(count_ops(r.fused, "DequantizeLinear"), 1);
}

TEST(FuseQdqConcat, FloatOutputMustNotFire) {
  std::string text = fmt::format(R"({}
g (float[1,2,3] a, float[1,4,3] b) => (float[1,6,3] y)
<float as = {{0.02}}, int8 az = {{0}}, float bs = {{0.03}}, int8 bz = {{0}}>
{{
{}{}  y = Concat <axis = 1> (ad, bd)
}})",
                                 kHeader, quantized("a", "as", "az"), quantized("b", "bs", "bz"));
  optimizer::FusionPass pass("fuse_qdq_concat");
  Result r = fuse_text(pass, text, 0);
  EXPECT_EQ(count_ops(r.fused, "QConcat"), 0);
  EXPECT_NE(float_reason_for(r.original, r.context, "y").find("not quantized"), std::string::npos);
}

TEST(FuseQdqLookup, ActivationsBetweenDqAndQ) {
  for (std::string function : {"Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "SiLU"}) {
    for (bool asymmetric : {false, true}) {
      SCOPED_TRACE(function + (asymmetric ? " u8" : " s8"));
      const std::string t = asymmetric ? "uint8" : "int8";
      std::string op = function == "SiLU" ? "sg = Sigmoid(xd)\n  f = Mul(xd, sg)\n"
                                          : fmt::format("f = {}(xd)\n", function);
      std::string text = fmt::format(R"({0}
g (float[2,3,5] x) => (float[2,3,5] y)
<float xs = {{0.05}}, {1} xz = {{{2}}}, float ys = {{0.01}}, {1} yz = {{{3}}}>
{{
{4}  {5}  yq = QuantizeLinear(f, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                     kHeader17, t, asymmetric ? 128 : 0, asymmetric ? 64 : 0, quantized("x", "xs", "xz"),
                                     op);
      optimizer::FusionPass pass("fuse_qdq_lookup");
      Result r = fuse_text(pass, text, 0.01f * 1.001f, 17);
      ASSERT_EQ(count_ops(r.fused, "QLookup"), 1);
      const Node* layer = find_op(r.fused, "QLookup");
      EXPECT_EQ(layer->attrs<QLookupAttributes>().function == LookupFunction::kSiLU, function == "SiLU");
      EXPECT_EQ(lookup_function_name(layer->attrs<QLookupAttributes>().function), function);
      EXPECT_EQ(count_ops(r.fused, "Mul"), 0);
      EXPECT_EQ(count_ops(r.fused, "DequantizeLinear"), 1);
    }
  }
}

// Gelu is opset 20, which libonnx 1.12 cannot parse: the graph is loaded with a Tanh in its place
// and that node is turned into a Gelu (opset 20, typed attributes from the op registry).
TEST(FuseQdqLookup, Opset20GeluBuiltInCpp) {
  for (std::string approximate : {"none", "tanh"}) {
    for (bool asymmetric : {false, true}) {
      SCOPED_TRACE(approximate + (asymmetric ? " u8" : " s8"));
      const std::string t = asymmetric ? "uint8" : "int8";
      std::string text = fmt::format(R"({0}
g (float[2,3,5] x) => (float[2,3,5] y)
<float xs = {{0.04}}, {1} xz = {{{2}}}, float ys = {{0.02}}, {1} yz = {{{3}}}>
{{
{4}  f = Tanh(xd)
  yq = QuantizeLinear(f, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                     kHeader, t, asymmetric ? 128 : 0, asymmetric ? 20 : 0, quantized("x", "xs", "xz"));
      Graph original = load_text(text);
      Node* gelu = nullptr;
      for (Node& node : original.nodes) {
        if (node.op_type == "Tanh") gelu = &node;
      }
      ASSERT_NE(gelu, nullptr);
      gelu->op_type = "Gelu";
      gelu->opset = 20;
      gelu->attributes["approximate"] = string_attribute(approximate);
      const OpSchema* schema = OpRegistry::instance().find("", "Gelu");
      ASSERT_NE(schema, nullptr);
      auto typed = schema->parse_attributes(*gelu);
      ASSERT_TRUE(typed.ok()) << typed.status().to_string();
      gelu->typed_attributes = typed.value();

      optimizer::FusionPass pass("fuse_qdq_lookup");
      optimizer::PassContext context;
      Graph fused = run_pass(original, pass, context);
      ASSERT_EQ(count_ops(fused, "QLookup"), 1);
      EXPECT_EQ(count_ops(fused, "Gelu"), 0);
      const Node* layer = find_op(fused, "QLookup");
      EXPECT_EQ(layer->attrs<QLookupAttributes>().function, LookupFunction::kGelu);
      EXPECT_EQ(layer->attrs<QLookupAttributes>().tanh_approximation, approximate == "tanh");
      // x spans [-5.1, 5.1] (s8) / [-5.1, 5.1] (u8, zp 128): the whole curve, negative tail included.
      std::mt19937 rng(23);
      expect_same_outputs(original, fused, random_inputs(original, rng, -5.0f, 5.0f), 0.02f * 1.001f);
    }
  }
}

// The erf form opset < 20 exports write (torch 1.13: x * (Erf(x / sqrt 2) + 1) * 0.5), in its
// two multiplication orders, becomes one QLookup Gelu.
std::string erf_gelu_model(const std::string& type, int x_zero_point, int y_zero_point, const std::string& tail,
                           const std::string& one = "1.0") {
  return fmt::format(R"({0}
g (float[2,3,5] x) => (float[2,3,5] y)
<float xs = {{0.04}}, {1} xz = {{{2}}}, float ys = {{0.02}}, {1} yz = {{{3}}}, float sqrt2 = {{1.4142135}},
 float one = {{{5}}}, float half = {{0.5}}>
{{
{4}  d = Div(xd, sqrt2)
  e = Erf(d)
  a = Add(e, one)
{6}  yq = QuantizeLinear(f, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                     kHeader, type, x_zero_point, y_zero_point, quantized("x", "xs", "xz"), one, tail);
}

TEST(FuseQdqLookup, ErfFormGelu) {
  const std::string x_then_half = "  m = Mul(xd, a)\n  f = Mul(m, half)\n";
  const std::string half_then_x = "  m = Mul(a, half)\n  f = Mul(xd, m)\n";
  for (const std::string& tail : {x_then_half, half_then_x}) {
    for (bool asymmetric : {false, true}) {
      SCOPED_TRACE(tail + (asymmetric ? " u8" : " s8"));
      optimizer::FusionPass pass("fuse_qdq_lookup");
      const std::string text =
          erf_gelu_model(asymmetric ? "uint8" : "int8", asymmetric ? 128 : 0, asymmetric ? 20 : 0, tail);
      Result r = fuse_text(pass, text, 0.02f * 1.001f, 29);
      ASSERT_EQ(count_ops(r.fused, "QLookup"), 1);
      EXPECT_EQ(find_op(r.fused, "QLookup")->attrs<QLookupAttributes>().function, LookupFunction::kGelu);
      EXPECT_FALSE(find_op(r.fused, "QLookup")->attrs<QLookupAttributes>().tanh_approximation);
      for (const char* op : {"Div", "Erf", "Add", "Mul", "QuantizeLinear"}) {
        EXPECT_EQ(count_ops(r.fused, op), std::string(op) == "QuantizeLinear" ? 1 : 0) << op;
      }
      // The whole pipeline (fuse_qdq_binary sees the Muls first and must leave them).
      Graph optimized = r.original;
      auto report = optimizer::optimize(optimized);
      ASSERT_TRUE(report.ok()) << report.status().to_string();
      EXPECT_EQ(count_ops(optimized, "QLookup"), 1);
      EXPECT_TRUE(report->float_reasons.empty()) << report->float_reasons[0].reason;
    }
  }
}

TEST(FuseQdqLookup, ErfFormWithOtherConstantsMustNotFire) {
  // Add(2) instead of Add(1): not GELU.
  optimizer::FusionPass pass("fuse_qdq_lookup");
  Result r = fuse_text(pass, erf_gelu_model("int8", 0, 0, "  m = Mul(xd, a)\n  f = Mul(m, half)\n", "2.0"), 1e-6f);
  EXPECT_EQ(count_ops(r.fused, "QLookup"), 0);
  EXPECT_EQ(count_ops(r.fused, "Erf"), 1);
}

// ONNX Runtime's QDQ GELU quantizes the Erf: DQ -> Div(x, sqrt 2) (or Mul by 1/sqrt 2, either
// order) -> Erf -> Q becomes one QLookup "Erf" whose table is those float ops: bit-equal.
std::string scaled_erf_model(const std::string& type, int zero_point, const std::string& scale_line,
                             const std::string& tail = "") {
  return fmt::format(R"({0}
g (float[2,3,5] x) => (float[2,3,5] y)
<float xs = {{0.04}}, {1} xz = {{{2}}}, float ys = {{0.0078431}}, {1} yz = {{{2}}}, float sqrt2 = {{1.4142135}},
 float inv_sqrt2 = {{0.70710677}}>
{{
{3}{4}  e = Erf(d)
  yq = QuantizeLinear(e, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
{5}}})",
                     kHeader, type, zero_point, quantized("x", "xs", "xz"), scale_line, tail);
}

TEST(FuseQdqLookup, ScaledErfWithQuantizedOutput) {
  const std::string lines[] = {"  d = Div(xd, sqrt2)\n", "  d = Mul(xd, inv_sqrt2)\n", "  d = Mul(inv_sqrt2, xd)\n"};
  for (const std::string& line : lines) {
    for (bool asymmetric : {false, true}) {
      SCOPED_TRACE(line + (asymmetric ? " u8" : " s8"));
      optimizer::FusionPass pass("fuse_qdq_lookup");
      const std::string text = scaled_erf_model(asymmetric ? "uint8" : "int8", asymmetric ? 128 : 0, line);
      std::mt19937 rng(31);
      Result r;
      r.original = load_text(text);
      r.fused = run_pass(r.original, pass, r.context);
      // The same float ops on every code: exact.
      expect_same_outputs(r.original, r.fused, random_inputs(r.original, rng, -5.0f, 5.0f), 0.0f);
      ASSERT_EQ(count_ops(r.fused, "QLookup"), 1);
      const auto& attributes = find_op(r.fused, "QLookup")->attrs<QLookupAttributes>();
      EXPECT_EQ(attributes.function, LookupFunction::kErf);
      EXPECT_EQ(attributes.operand_divides, line.find("Div") != std::string::npos);
      EXPECT_FLOAT_EQ(attributes.operand, attributes.operand_divides ? 1.4142135f : 0.70710677f);
      for (const char* op : {"Div", "Mul", "Erf"}) EXPECT_EQ(count_ops(r.fused, op), 0) << op;
      EXPECT_EQ(count_ops(r.fused, "QuantizeLinear"), 1);  // the input's
      Graph optimized = r.original;
      auto report = optimizer::optimize(optimized);
      ASSERT_TRUE(report.ok()) << report.status().to_string();
      EXPECT_EQ(count_ops(optimized, "QLookup"), 1);
    }
  }
}

TEST(FuseQdqLookup, ScaledErfMustNotFire) {
  const std::pair<std::string, std::string> cases[] = {
      // the constant is the numerator; the divisor is not a constant
      {"  d = Div(sqrt2, xd)\n", ""},
      {"  s = Add(xd, xd)\n  d = Div(xd, s)\n", ""},
      // the scaled value is read by another node too
      {"  d = Div(xd, sqrt2)\n", "  z = Add(d, d)\n"},
  };
  for (const auto& [line, tail] : cases) {
    SCOPED_TRACE(line + tail);
    optimizer::FusionPass pass("fuse_qdq_lookup");
    std::string text = scaled_erf_model("int8", 0, line, tail);
    if (!tail.empty()) text.replace(text.find("(float[2,3,5] y)"), 16, "(float[2,3,5] y, float[2,3,5] z)");
    Result r = fuse_text(pass, text, 1e-6f);
    EXPECT_EQ(count_ops(r.fused, "QLookup"), 0);
    EXPECT_EQ(count_ops(r.fused, "Erf"), 1);
  }
  // The Erf's output stays float (no Q after it).
  const std::string float_erf = fmt::format(R"({}
g (float[2,3,5] x) => (float[2,3,5] y)
<float xs = {{0.04}}, int8 xz = {{0}}, float sqrt2 = {{1.4142135}}>
{{
{}  d = Div(xd, sqrt2)
  y = Erf(d)
}})",
                                            kHeader, quantized("x", "xs", "xz"));
  optimizer::FusionPass pass("fuse_qdq_lookup");
  Result r = fuse_text(pass, float_erf, 1e-6f);
  EXPECT_EQ(count_ops(r.fused, "QLookup"), 0);
}

TEST(FuseQdqLookup, PerChannelActivationScaleMustNotFire) {
  std::string text = fmt::format(R"({}
g (float[2,3,5] x) => (float[2,3,5] y)
<float[3] xs = {{0.05, 0.04, 0.03}}, int8[3] xz = {{0, 0, 0}}, float ys = {{0.01}}, int8 yz = {{0}}>
{{
  xq = QuantizeLinear <axis = 1> (x, xs, xz)
  xd = DequantizeLinear <axis = 1> (xq, xs, xz)
  f = Sigmoid(xd)
  yq = QuantizeLinear(f, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                 kHeader);
  optimizer::FusionPass pass("fuse_qdq_lookup");
  Result r = fuse_text(pass, text, 0);
  EXPECT_EQ(count_ops(r.fused, "QLookup"), 0);
  EXPECT_NE(float_reason_for(r.original, r.context, "f").find("per-channel"), std::string::npos);
}

// The pipeline: a small residual block, ORT-quantizer style (every tensor Q/DQ'd) ending in a
// Q/DQ'd Sigmoid; no Q/DQ may remain between INT8 layers.
TEST(FusionPipeline, ResidualBlockEndToEnd) {
  std::mt19937 rng(99);
  std::string text = fmt::format(R"({0}
g (float[1,4,6,6] x) => (float[1,4,1,1] y)
<float xs = {{0.02}}, uint8 xz = {{128}}, float cs = {{0.05}}, uint8 cz = {{100}}, float ss = {{0.01}}, uint8 sz = {{0}},
 int8[4] wz = {{0, 0, 0, 0}}, {1}, {2}, {3}>
{{
{4}  wd = DequantizeLinear <axis = 0> (w, ws, wz)
  c = Conv <pads = [1, 1, 1, 1]> (xd, wd, b)
  s = Add(c, xd)
  r = Relu(s)
  rq = QuantizeLinear(r, cs, cz)
  rd = DequantizeLinear(rq, cs, cz)
  p = GlobalAveragePool(rd)
  pq = QuantizeLinear(p, cs, cz)
  pd = DequantizeLinear(pq, cs, cz)
  sg = Sigmoid(pd)
  sq = QuantizeLinear(sg, ss, sz)
  y = DequantizeLinear(sq, ss, sz)
}})",
                                 kHeader, int_initializer("int8", "w", {4, 4, 3, 3}, -127, 127, rng),
                                 float_initializer("ws", {4}, 0.002f, 0.006f, rng),
                                 float_initializer("b", {4}, -0.2f, 0.2f, rng), quantized("x", "xs", "xz"));
  Graph original = load_text(text);
  Graph optimized = original;
  auto report = optimizer::optimize(optimized);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(count_ops(optimized, "QConv"), 1);
  EXPECT_EQ(count_ops(optimized, "QGlobalAveragePool"), 1);
  EXPECT_EQ(count_ops(optimized, "QLookup"), 1);
  EXPECT_EQ(count_ops(optimized, "QuantizeLinear"), 1);    // the graph input's
  EXPECT_EQ(count_ops(optimized, "DequantizeLinear"), 1);  // the graph output's
  ASSERT_NE(find_op(optimized, "QConv"), nullptr);
  EXPECT_EQ(find_op(optimized, "QConv")->inputs[layers::kConvResidual], "xq");
  expect_same_outputs(original, optimized, random_inputs(original, rng), 0.01f * 1.001f);
}

// A conv written in float (no Q after its Relu) -> GlobalAveragePool -> Q: the pool stays float,
// and inspect says why; with a Q/DQ before the pool it is INT8 (ResidualBlockEndToEnd above).
TEST(FuseQdqPool, FloatInputBeforeAQuantizedAverageStaysFloatWithReason) {
  std::mt19937 rng(98);
  for (bool quantized_output : {true, false}) {
    SCOPED_TRACE(quantized_output ? "pool -> Q" : "pool -> float output");
    std::string tail = quantized_output
                           ? "pq = QuantizeLinear(p, cs, cz)\n  y = DequantizeLinear(pq, cs, cz)\n"
                           : "y = Identity(p)\n";
    std::string text = fmt::format(R"({0}
g (float[1,4,6,6] x) => (float[1,4,1,1] y)
<float xs = {{0.02}}, int8 xz = {{0}}, float cs = {{0.01}}, int8 cz = {{0}}, {1}, {2}, {3}>
{{
{4}  wd = DequantizeLinear <axis = 0> (w, ws)
  c = Conv <pads = [1, 1, 1, 1]> (xd, wd, b)
  r = Relu(c)
  p = GlobalAveragePool(r)
  {5}}})",
                                   kHeader, int_initializer("int8", "w", {4, 4, 3, 3}, -127, 127, rng),
                                   float_initializer("ws", {4}, 0.002f, 0.006f, rng),
                                   float_initializer("b", {4}, -0.2f, 0.2f, rng), quantized("x", "xs", "xz"), tail);
    Graph original = load_text(text);
    Graph optimized = original;
    auto report = optimizer::optimize(optimized);
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    EXPECT_EQ(count_ops(optimized, "QConv"), 1);
    EXPECT_EQ(count_ops(optimized, "QGlobalAveragePool"), 0);
    EXPECT_EQ(count_ops(optimized, "GlobalAveragePool"), 1);
    std::string reason;
    for (const auto& entry : report->float_reasons) {
      if (entry.op_type == "GlobalAveragePool") reason = entry.reason;
    }
    if (quantized_output) {
      EXPECT_NE(reason.find("is float and the model has no QuantizeLinear before the pool"), std::string::npos)
          << reason;
      EXPECT_NE(reason.find("QConv"), std::string::npos) << reason;
    } else {
      EXPECT_EQ(reason, "");  // a float part of the model: nothing to explain
    }
    expect_same_outputs(original, optimized, random_inputs(original, rng), 0.01f * 1.001f);
  }
}

}  // namespace
}  // namespace qdqrt::testing

namespace qdqrt::testing {
namespace {

// Fused layers are ordinary ONNX nodes of domain "qdqrt": a dumped graph loads and runs.
TEST(FusedLayerSchemas, LoadAndRunFromOnnx) {
  std::string text = R"(<ir_version: 8, opset_import: ["" : 13, "qdqrt" : 1]>
g (int8[2,3] x) => (float[2,3] y)
<float xs = {0.5}, int8 xz = {0}, float ys = {0.25}, int8 yz = {-1}>
{
  y = qdqrt.QAdd <activation = "Relu", fused_nodes = ["add", "relu"]> (x, xs, xz, x, xs, xz)
})";
  Graph graph = load_text(text);
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(layer_kind(graph.nodes[0]), "Add");
  ASSERT_NE(fused_layer_info(graph.nodes[0]), nullptr);
  EXPECT_EQ(fused_layer_info(graph.nodes[0])->fused_nodes, (std::vector<std::string>{"add", "relu"}));
  Tensor x = Tensor::from_vector<int8_t>({2, 3}, {-3, -1, 0, 1, 2, 100});
  auto outputs = run_reference(graph, {{"x", x}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& y = outputs.value().at("y");
  EXPECT_EQ(y.dtype(), DataType::kFloat);  // no y_scale input given: float output
  std::vector<float> expected = {0, 0, 0, 1, 2, 100};
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], expected[static_cast<size_t>(i)]);
}

// QRequantize = QuantizeLinear(DequantizeLinear(x)): int8 scale 0.5 -> uint8 scale 0.2, zp 100,
// round half to even, saturating.
TEST(FusedLayerSchemas, QRequantizeRunsFromOnnx) {
  std::string text = R"(<ir_version: 8, opset_import: ["" : 13, "qdqrt" : 1]>
g (int8[6] x) => (uint8[6] y)
<float xs = {0.5}, int8 xz = {1}, float ys = {0.2}, uint8 yz = {100}>
{
  y = qdqrt.QRequantize <fused_nodes = ["q"]> (x, xs, xz, ys, yz)
})";
  Graph graph = load_text(text);
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(layer_kind(graph.nodes[0]), "Requantize");
  Tensor x = Tensor::from_vector<int8_t>({6}, {-128, -40, 0, 1, 2, 127});
  auto outputs = run_reference(graph, {{"x", x}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const Tensor& y = outputs.value().at("y");
  ASSERT_EQ(y.dtype(), DataType::kUint8);
  // (x - 1) * 0.5 / 0.2, rounded half to even (-2.5 -> -2, 2.5 -> 2), + 100, saturated to [0, 255].
  std::vector<int> expected;
  for (int v : {-128, -40, 0, 1, 2, 127}) {
    double real = (v - 1) * 0.5 / 0.2;
    double rounded = std::nearbyint(real);  // default rounding mode: half to even
    expected.push_back(static_cast<int>(std::clamp(rounded + 100, 0.0, 255.0)));
  }
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.data<uint8_t>()[i], expected[static_cast<size_t>(i)]) << i;
  EXPECT_EQ(expected, (std::vector<int>{0, 0, 98, 100, 102, 255}));
}

TEST(FusedLayerSchemas, BadAttributesAreErrors) {
  Node node;
  node.name = "l";
  node.op_type = "QConv";
  node.domain = "qdqrt";
  node.attributes["activation"] = string_attribute("Swish");
  auto parsed = parse_fused_layer_attributes(node);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().to_string().find("Swish"), std::string::npos);
  node.op_type = "QLookup";
  node.attributes.clear();
  EXPECT_FALSE(parse_fused_layer_attributes(node).ok());  // function is required
}

}  // namespace
}  // namespace qdqrt::testing
