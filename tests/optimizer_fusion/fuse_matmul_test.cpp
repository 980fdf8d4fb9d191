// fuse_qdq_matmul: MatMul with a constant weight (per-column scales, bias Add, residual), Gemm
// (transB, alpha, beta, C folded), batched MatMul of two activations; must-not-fire on transA.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "optimizer/fusions/fusion.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

struct Result {
  Graph original, fused;
  optimizer::PassContext context;
};

Result fuse_text(const std::string& text, uint32_t seed, float tolerance) {
  std::mt19937 rng(seed);
  Result r;
  r.original = load_text(text);
  optimizer::FusionPass pass("fuse_qdq_matmul");
  r.fused = run_pass(r.original, pass, r.context);
  if (tolerance > 0) expect_same_outputs(r.original, r.fused, random_inputs(r.original, rng), tolerance);
  return r;
}

TEST(FuseQdqMatmul, LinearWithPerColumnScalesBiasResidualReluAndQ) {
  for (bool asymmetric : {false, true}) {
    SCOPED_TRACE(asymmetric ? "u8 asymmetric" : "s8 symmetric");
    std::mt19937 rng(11);
    const std::string t = asymmetric ? "uint8" : "int8";
    const int zp = asymmetric ? 128 : 0;
    std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[3,16] a, float[3,8] r) => (float[3,8] y)
<float as = {{0.02}}, {0} az = {{{1}}}, float rs = {{0.05}}, {0} rz = {{{2}}}, float ys = {{0.06}}, {0} yz = {{{3}}},
 int8 wz = {{0}}, {4}, {5}, {6}>
{{
  aq = QuantizeLinear(a, as, az)
  ad = DequantizeLinear(aq, as, az)
  wd = DequantizeLinear <axis = 1> (w, ws, wz8)
  m = MatMul(ad, wd)
  mb = Add(m, bias)
  rq = QuantizeLinear(r, rs, rz)
  rd = DequantizeLinear(rq, rs, rz)
  s = Add(rd, mb)
  act = Relu(s)
  yq = QuantizeLinear(act, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                   t, zp, asymmetric ? 100 : 0, asymmetric ? 90 : 0,
                                   int_initializer("int8", "w", {16, 8}, -127, 127, rng),
                                   float_initializer("ws", {8}, 0.004f, 0.01f, rng) + ", " +
                                       int_initializer("int8", "wz8", {8}, 0, 0, rng),
                                   float_initializer("bias", {8}, -0.5f, 0.5f, rng));
    Result r = fuse_text(text, 12, 0.06f * 1.001f);
    EXPECT_EQ(count_ops(r.fused, "QMatMul"), 1);
    EXPECT_EQ(count_ops(r.fused, "Add"), 0);
    EXPECT_EQ(count_ops(r.fused, "MatMul"), 0);
    const Node* layer = find_op(r.fused, "QMatMul");
    ASSERT_NE(layer, nullptr);
    ASSERT_EQ(layer->inputs.size(), size_t{layers::kMatMulInputCount});
    EXPECT_EQ(layer->inputs[layers::kMatMulBias], "bias");
    EXPECT_EQ(layer->inputs[layers::kMatMulResidual], "rq");
    EXPECT_EQ(fused_layer_info(*layer)->fused_nodes.size(), 5u);  // matmul, bias add, add, relu, q
    EXPECT_EQ(layer_kind(*layer), "MatMul");
  }
}

TEST(FuseQdqMatmul, GemmTransBAlphaBetaFolded) {
  std::mt19937 rng(21);
  std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,12] a) => (float[2,6] y)
<float as = {{0.02}}, int8 az = {{0}}, float ys = {{0.05}}, int8 yz = {{0}}, int8[6] wz = {{0,0,0,0,0,0}}, {0}, {1}, {2}>
{{
  aq = QuantizeLinear(a, as, az)
  ad = DequantizeLinear(aq, as, az)
  wd = DequantizeLinear <axis = 0> (w, ws, wz)
  g1 = Gemm <transB = 1, alpha = 0.5, beta = 2.0> (ad, wd, c)
  yq = QuantizeLinear(g1, ys, yz)
  y = DequantizeLinear(yq, ys, yz)
}})",
                                 int_initializer("int8", "w", {6, 12}, -127, 127, rng),
                                 float_initializer("ws", {6}, 0.004f, 0.01f, rng),
                                 float_initializer("c", {6}, -0.3f, 0.3f, rng));
  Result r = fuse_text(text, 22, 0.05f * 1.001f);
  EXPECT_EQ(count_ops(r.fused, "QMatMul"), 1);
  EXPECT_EQ(count_ops(r.fused, "Gemm"), 0);
  const Node* layer = find_op(r.fused, "QMatMul");
  ASSERT_NE(layer, nullptr);
  const Tensor* weight = r.fused.find_initializer(layer->inputs[layers::kMatMulB]);
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->shape(), (Shape{12, 6}));  // transposed to [K][N]
}

TEST(FuseQdqMatmul, BatchedMatMulOfTwoActivations) {
  std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4,5] a, float[2,3,5,4] b) => (float[2,3,4,4] y)
<float as = {0.02}, uint8 az = {128}, float bs = {0.03}, uint8 bz = {120}>
{
  aq = QuantizeLinear(a, as, az)
  ad = DequantizeLinear(aq, as, az)
  bq = QuantizeLinear(b, bs, bz)
  bd = DequantizeLinear(bq, bs, bz)
  y = MatMul(ad, bd)
})";
  Result r = fuse_text(text, 31, 1e-5f);  // float output
  EXPECT_EQ(count_ops(r.fused, "QMatMul"), 1);
  EXPECT_EQ(count_ops(r.fused, "DequantizeLinear"), 0);
}

TEST(FuseQdqMatmul, TransAMustNotFire) {
  std::mt19937 rng(41);
  std::string text = fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[12,2] a) => (float[2,6] y)
<float as = {{0.02}}, int8 az = {{0}}, float ws = {{0.01}}, int8 wz = {{0}}, {0}>
{{
  aq = QuantizeLinear(a, as, az)
  ad = DequantizeLinear(aq, as, az)
  wd = DequantizeLinear(w, ws, wz)
  y = Gemm <transA = 1> (ad, wd)
}})",
                                 int_initializer("int8", "w", {12, 6}, -127, 127, rng));
  Result r = fuse_text(text, 42, 0);
  EXPECT_EQ(count_ops(r.fused, "QMatMul"), 0);
  EXPECT_EQ(count_ops(r.fused, "Gemm"), 1);
  EXPECT_NE(float_reason_for(r.original, r.context, "y").find("transA"), std::string::npos);
}

}  // namespace
}  // namespace qdqrt::testing
