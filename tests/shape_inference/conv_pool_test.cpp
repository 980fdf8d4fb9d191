// Shape functions of Conv, ConvTranspose, the pools and the quantized convolutions.
#include <gtest/gtest.h>

#include "core/ops/window.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(ConvShapes, BatchFollowsThroughStridedConv) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,8,8] x, float[16,3,3,3] w, float[16] b) => (float y) {
      y = Conv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(3), static_dim(8), static_dim(8)});
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(why_unfollowed(report, "y"), "");
  EXPECT_EQ(exprs(graph, "y"), "[N, 16, 4, 4]");
  EXPECT_EQ(values(graph, "y"), "[2, 16, 4, 4]");
}

TEST(ConvShapes, DynamicSpatialDimsGetTheWindowRule) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,H,W] x, float[8,3,3,3] w) => (float y, float z) {
      y = Conv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w)
      z = Conv <strides = [2, 3], auto_pad = "SAME_UPPER"> (x, w)
    })");
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "y"), "");
  for (int64_t h = 3; h <= 20; ++h) {
    const SymbolValues at = {{"N", 1}, {"H", h}, {"W", h + 1}};
    EXPECT_EQ(evaluate(graph, "y", 2, at), window_output_size(h, 3, 2, 1, 1, 1, false)) << h;
    EXPECT_EQ(evaluate(graph, "y", 3, at), window_output_size(h + 1, 3, 2, 1, 1, 1, false)) << h;
    EXPECT_EQ(evaluate(graph, "z", 2, at), (h + 1) / 2) << h;
    EXPECT_EQ(evaluate(graph, "z", 3, at), (h + 3) / 3) << h;
  }
  // No value at the shapes being built: the dims are dynamic.
  EXPECT_EQ(values(graph, "y"), "[-1, 8, -1, -1]");
}

TEST(ConvShapes, ConvTransposeOutputSizes) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4,H,5] x, float[4,3,3,3] w) => (float y, float same, float given) {
      y = ConvTranspose <strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 0], group = 1> (x, w)
      same = ConvTranspose <strides = [2, 2], auto_pad = "SAME_UPPER"> (x, w)
      given = ConvTranspose <strides = [2, 2], output_shape = [11, 12]> (x, w)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(4), symbolic_dim("H", 5), static_dim(5)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "y"), "");
  // stride * (in - 1) + output_padding + kernel - pads
  EXPECT_EQ(values(graph, "y"), "[2, 3, 10, 9]");
  EXPECT_EQ(evaluate(graph, "y", 2, {{"H", 7}}), 2 * 6 + 1 + 3 - 2);
  EXPECT_EQ(exprs(graph, "same"), "[N, 3, 2*H, 10]");
  EXPECT_EQ(exprs(graph, "given"), "[N, 3, 11, 12]");
}

TEST(ConvShapes, QuantizedConvolutions) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[N,3,8,8] x, float xs, uint8 xz, int8[4,3,3,3] w, float ws, int8 wz, float ys, uint8 yz)
      => (uint8 q, int32 i) {
      q = QLinearConv <strides = [2, 2]> (x, xs, xz, w, ws, wz, ys, yz)
      i = ConvInteger <pads = [1, 1, 1, 1]> (x, w, xz, wz)
    })");
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(why_unfollowed(report, "q"), "");
  EXPECT_EQ(exprs(graph, "q"), "[N, 4, 3, 3]");
  EXPECT_EQ(exprs(graph, "i"), "[N, 4, 8, 8]");
}

TEST(ConvShapes, MismatchedInputsAreErrorsNamingTheNode) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,8,8] x, float[16,3,3,3] w) => (float y, float t) {
      y = Conv (x, w)
      t = ConvTranspose (x, w)
    })");
  set_dims(graph, "w", static_dims({16, 3, 3}));  // rank 3 against X's rank 4
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "y", "Conv 'Conv_0'");
  expect_unfollowed(report, "y", "rank");
  expect_unfollowed(report, "t", "ConvTranspose 'ConvTranspose_1'");
  // Channels that do not match the weight.
  set_dims(graph, "w", static_dims({16, 4, 3, 3}));
  report = infer(graph);
  expect_unfollowed(report, "y", "channels");
  // Unknown rank.
  graph.values["x"].shape.reset();
  report = infer(graph);
  expect_unfollowed(report, "y", "rank of input 0");
}

TEST(PoolShapes, WindowsGlobalAndIndices) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8,H,7] x) => (float m, int64 indices, float a, float c, float g) {
      m, indices = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x)
      a = AveragePool <kernel_shape = [2, 2], strides = [2, 2], auto_pad = "SAME_UPPER"> (x)
      c = MaxPool <kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1> (x)
      g = GlobalAveragePool (x)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(8), symbolic_dim("H", 8), static_dim(7)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "m"), "");
  EXPECT_EQ(values(graph, "m"), "[2, 8, 4, 4]");
  EXPECT_EQ(exprs(graph, "indices"), exprs(graph, "m"));
  EXPECT_EQ(values(graph, "a"), "[2, 8, 4, 4]");
  EXPECT_EQ(values(graph, "c"), "[2, 8, 4, 3]");
  EXPECT_EQ(exprs(graph, "g"), "[N, 8, 1, 1]");
  // The ceil-mode rule, last window included only where it starts inside the input.
  for (int64_t h = 3; h <= 20; ++h) {
    const SymbolValues at = {{"N", 1}, {"H", h}};
    EXPECT_EQ(evaluate(graph, "m", 2, at), window_output_size(h, 3, 2, 1, 1, 1, false)) << h;
    EXPECT_EQ(evaluate(graph, "a", 2, at), (h + 1) / 2) << h;
    EXPECT_EQ(evaluate(graph, "c", 2, at), window_output_size(h, 3, 2, 1, 0, 0, true)) << h;
    EXPECT_EQ(evaluate(graph, "c", 0, at), 1);
  }
}

TEST(PoolShapes, BadWindowsAreErrors) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8,4,4] x) => (float m, float g) {
      m = MaxPool <kernel_shape = [5, 5]> (x)
      g = GlobalMaxPool (x)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "m", "MaxPool 'MaxPool_0'");
  expect_unfollowed(report, "m", "exceeds");
  set_dims(graph, "x", {symbolic_dim("N", 2)});
  report = infer(graph);
  expect_unfollowed(report, "m", "needs [N, C, spatial...]");
  expect_unfollowed(report, "g", "GlobalMaxPool 'GlobalMaxPool_1'");
}

TEST(PoolShapes, HugeWindowValuesAreErrorsNotOverflows) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8,4,4] x, float[8,2,3,3] w) => (float m, float t) {
      m = MaxPool <kernel_shape = [2, 2], pads = [9223372036854775807, 0, 9223372036854775807, 0]> (x)
      t = ConvTranspose <strides = [9223372036854775807, 1]> (x, w)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "m", "are not a window");
  expect_unfollowed(report, "t", "is too large");
}

}  // namespace
}  // namespace qdqrt::testing
