// Shape functions of MatMul, Gemm, the quantized matrix products, Q/DQ and the normalizations.
#include <gtest/gtest.h>

#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(MatMulShapes, BatchDimsBroadcastWithTheBatchOnBothSides) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4,5] a, float[N,3,5,6] b, float[1,7,5,6] c, float[5] v, float[N,1,4,5] d)
      => (float ab, float dc, float va, float av) {
      ab = MatMul (a, b)
      dc = MatMul (d, c)
      va = MatMul (v, b)
      av = MatMul (a, v)
    })");
  set_dims(graph, "a", {symbolic_dim("N", 2), static_dim(3), static_dim(4), static_dim(5)});
  set_dims(graph, "b", {symbolic_dim("N", 2), static_dim(3), static_dim(5), static_dim(6)});
  set_dims(graph, "d", {symbolic_dim("N", 2), static_dim(1), static_dim(4), static_dim(5)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "ab"), "");
  EXPECT_EQ(exprs(graph, "ab"), "[N, 3, 4, 6]");
  EXPECT_EQ(values(graph, "ab"), "[2, 3, 4, 6]");
  EXPECT_EQ(exprs(graph, "dc"), "[N, 7, 4, 6]");
  // 1-D operands: a 1 prepended (or appended) and removed again.
  EXPECT_EQ(exprs(graph, "va"), "[N, 3, 6]");
  EXPECT_EQ(exprs(graph, "av"), "[N, 3, 4]");
}

TEST(MatMulShapes, GemmTransposes) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,16] a, float[10,16] b, float[16,N] at, float[16,10] bt, float[10] c) => (float y, float z) {
      y = Gemm <transB = 1> (a, b, c)
      z = Gemm <transA = 1> (at, bt)
    })");
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "y"), "");
  EXPECT_EQ(exprs(graph, "y"), "[N, 10]");
  EXPECT_EQ(exprs(graph, "z"), "[N, 10]");
}

TEST(MatMulShapes, QuantizedMatrixProducts) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[N,4,5] a, float as, uint8 az, int8[5,6] b, float bs, int8 bz, float ys, uint8 yz) => (uint8 q, int32 i) {
      q = QLinearMatMul (a, as, az, b, bs, bz, ys, yz)
      i = MatMulInteger (a, b, az, bz)
    })");
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(why_unfollowed(report, "q"), "");
  EXPECT_EQ(exprs(graph, "q"), "[N, 4, 6]");
  EXPECT_EQ(exprs(graph, "i"), "[N, 4, 6]");
}

TEST(MatMulShapes, MismatchesAreErrorsNamingTheNode) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4,5] a, float[7,6] b, float[2,N,16] g3, float[10,16] w, float[3,10] c, float[4,16] a2)
      => (float y, float z, float u) {
      y = MatMul (a, b)
      z = Gemm <transB = 1> (g3, w)
      u = Gemm <transB = 1> (a2, w, c)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "y", "MatMul 'MatMul_0'");
  expect_unfollowed(report, "y", "inner dims 5 and 7");
  expect_unfollowed(report, "z", "Gemm 'Gemm_1'");
  expect_unfollowed(report, "z", "rank 2");
  expect_unfollowed(report, "u", "C [3, 10] does not broadcast");
}

TEST(QuantizeShapes, PerTensorPerAxisAndDynamic) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8,4] x, float s, uint8 z, float[8] axis_scale, int8[8] axis_zero) => (uint8 q, float d, int8 qa,
                                                                                  uint8 y, float ys, uint8 yz) {
      q = QuantizeLinear (x, s, z)
      d = DequantizeLinear (q, s, z)
      qa = QuantizeLinear <axis = 1> (x, axis_scale, axis_zero)
      y, ys, yz = DynamicQuantizeLinear (x)
    })");
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(why_unfollowed(report, "d"), "");
  EXPECT_EQ(exprs(graph, "q"), "[N, 8, 4]");
  EXPECT_EQ(exprs(graph, "d"), "[N, 8, 4]");
  EXPECT_EQ(exprs(graph, "qa"), "[N, 8, 4]");
  EXPECT_EQ(exprs(graph, "y"), "[N, 8, 4]");
  EXPECT_EQ(exprs(graph, "ys"), "[]");
  EXPECT_EQ(exprs(graph, "yz"), "[]");
}

TEST(QuantizeShapes, BlockedScales) {
  Graph graph = load_without_inference(R"(
    <ir_version: 10, opset_import: ["" : 21]>
    g (int8[8,6] w, float[8,3] s, int8[8,3] z) => (float d) {
      d = DequantizeLinear <axis = 1, block_size = 2> (w, s, z)
    })");
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(why_unfollowed(report, "d"), "");
  EXPECT_EQ(exprs(graph, "d"), "[8, 6]");
  // 2 blocks along the axis, where 6 / block_size 2 needs 3.
  set_dims(graph, "s", static_dims({8, 2}));
  set_dims(graph, "z", static_dims({8, 2}));
  report = infer(graph);
  expect_unfollowed(report, "d", "blocked scale [8, 2] (block_size 2, axis 1) does not fit input [8, 6]");
}

TEST(QuantizeShapes, ScaleThatDoesNotFitIsAnError) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8,4] x, float[5] s, uint8[5] z) => (uint8 q) {
      q = QuantizeLinear <axis = 1> (x, s, z)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "q", "QuantizeLinear 'QuantizeLinear_0'");
  expect_unfollowed(report, "q", "per-axis scale [5]");
}

TEST(NormalizationShapes, BatchAndLayerNormalization) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,8,4,4] x, float[8] s, float[8] b, float[8] m, float[8] v, float[N,5,6] t, float[6] ls, float[6] lb)
      => (float y, float l, float mean, float inv) {
      y = BatchNormalization (x, s, b, m, v)
      l, mean, inv = LayerNormalization <axis = -1> (t, ls, lb)
    })");
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(why_unfollowed(report, "l"), "");
  EXPECT_EQ(exprs(graph, "y"), "[N, 8, 4, 4]");
  EXPECT_EQ(exprs(graph, "l"), "[N, 5, 6]");
  EXPECT_EQ(exprs(graph, "mean"), "[N, 5, 1]");
  EXPECT_EQ(exprs(graph, "inv"), "[N, 5, 1]");
}

TEST(NormalizationShapes, AxisOutOfRangeIsAnError) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N,5,6] t, float[6] ls) => (float l) {
      l = LayerNormalization <axis = 3> (t, ls)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "l", "LayerNormalization 'LayerNormalization_0'");
  expect_unfollowed(report, "l", "attribute 'axis' 3 is out of range for rank 3");
}

}  // namespace
}  // namespace qdqrt::testing
