// Shape functions of the reductions, ArgMax/ArgMin, CumSum and Resize.
#include <gtest/gtest.h>

#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(ReduceShapes, AxesKeepdimsAndTheBatch) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4] x) => (float drop, float keep, float all, float sum, float noop, float arg, float last, float cum)
    <int64[1] axes = {-1}, int64 axis = {2}>
    {
      drop = ReduceMean <axes = [0], keepdims = 0> (x)
      keep = ReduceMax <axes = [0, -1]> (x)
      all = ReduceMin <keepdims = 0> (x)
      sum = ReduceSum <keepdims = 1> (x, axes)
      noop = ReduceSum <noop_with_empty_axes = 1> (x)
      arg = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x)
      last = ArgMin <axis = -1> (x)
      cum = CumSum (x, axis)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(3), static_dim(4)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "drop"), "");
  EXPECT_EQ(exprs(graph, "drop"), "[3, 4]");
  EXPECT_EQ(exprs(graph, "keep"), "[1, 3, 1]");
  EXPECT_EQ(exprs(graph, "all"), "[]");
  EXPECT_EQ(exprs(graph, "sum"), "[N, 3, 1]");
  EXPECT_EQ(values(graph, "sum"), "[2, 3, 1]");
  EXPECT_EQ(exprs(graph, "noop"), "[N, 3, 4]");
  EXPECT_EQ(exprs(graph, "arg"), "[N, 4]");
  EXPECT_EQ(exprs(graph, "last"), "[N, 3, 1]");
  EXPECT_EQ(exprs(graph, "cum"), "[N, 3, 4]");
}

TEST(ReduceShapes, AxesAsInputFromOpset18) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[N,3,4] x) => (float with_axes, float without)
    <int64[2] axes = {1, 2}>
    {
      with_axes = ReduceMean <keepdims = 0> (x, axes)
      without = ReduceMax (x)
    })");
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(exprs(graph, "with_axes"), "[N]");
  EXPECT_EQ(exprs(graph, "without"), "[1, 1, 1]");
}

TEST(ReduceShapes, BadAxesAreErrorsNamingTheNode) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4] x, int64[1] runtime_axes) => (float y, float z, float a, float c)
    <int64 axis = {5}>
    {
      y = ReduceMean <axes = [3]> (x)
      z = ReduceSum (x, runtime_axes)
      a = ArgMax <axis = -4> (x)
      c = CumSum (x, axis)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "y", "ReduceMean 'ReduceMean_0': axes value 3 is out of range for rank 3");
  expect_unfollowed(report, "z", "not a known constant");
  expect_unfollowed(report, "a", "ArgMax 'ArgMax_2'");
  expect_unfollowed(report, "c", "CumSum 'CumSum_3'");
}

TEST(ResizeShapes, ScalesFollowTheDims) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,H,W] x) => (float up, float down, float odd)
    <float[4] up_scales = {1, 1, 2, 3}, float[4] down_scales = {1, 1, 0.5, 0.25}, float[4] odd_scales = {1, 1, 1.5, 1}>
    {
      up = Resize <mode = "nearest"> (x, , up_scales)
      down = Resize <mode = "linear"> (x, , down_scales)
      odd = Resize (x, , odd_scales)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(3), symbolic_dim("H", 9), symbolic_dim("W", 10)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "up"), "");
  EXPECT_EQ(exprs(graph, "up"), "[N, 3, 2*H, 3*W]");
  EXPECT_EQ(values(graph, "up"), "[2, 3, 18, 30]");
  EXPECT_EQ(exprs(graph, "down"), "[N, 3, H//2, W//4]");
  EXPECT_EQ(values(graph, "down"), "[2, 3, 4, 2]");
  // 1.5 is neither an integer nor one over one: the value holds, the expression is not known.
  EXPECT_EQ(exprs(graph, "odd"), "[N, 3, ?, W]");
  EXPECT_EQ(values(graph, "odd"), "[2, 3, 13, 10]");
}

TEST(ResizeShapes, SizesComputedFromTheBatchFollowIt) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[N,3,8,8] x, int64[4] sizes, int64[2] spatial) => (float y, float z, float k)
    <int64[2] fixed = {16, 12}>
    {
      y = Resize (x, , , sizes)
      z = Resize <axes = [2, 3]> (x, , , spatial)
      k = Resize <axes = [2, 3], keep_aspect_ratio_policy = "not_larger"> (x, , , fixed)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(3), static_dim(8), static_dim(8)});
  // sizes = Concat(Shape(x)[0:2], [16, 16]): the elements a shape computation gives it.
  set_elements(graph, "sizes", {symbolic_dim("N", 2), static_dim(3), static_dim(16), static_dim(16)});
  set_elements(graph, "spatial", {static_dim(4), static_dim(6)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "y"), "");
  EXPECT_EQ(exprs(graph, "y"), "[N, 3, 16, 16]");
  EXPECT_EQ(values(graph, "y"), "[2, 3, 16, 16]");
  EXPECT_EQ(exprs(graph, "z"), "[N, 3, 4, 6]");
  // One scale, min(16/8, 12/8) = 1.5, for both axes.
  EXPECT_EQ(values(graph, "k"), "[2, 3, 12, 12]");
  EXPECT_EQ(exprs(graph, "k"), "[N, 3, 12, 12]");
}

TEST(ResizeShapes, SizesFromShapeThroughConcatFollowTheBatch) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,8,8] x) => (float y)
    <int64[1] zero = {0}, int64[1] two = {2}, int64[2] spatial = {16, 12}>
    {
      s = Shape (x)
      batch_and_channels = Slice (s, zero, two)
      sizes = Concat <axis = 0> (batch_and_channels, spatial)
      y = Resize (x, , , sizes)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 2), static_dim(3), static_dim(8), static_dim(8)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "y"), "");
  EXPECT_EQ(elements(graph, "sizes"), "[N, 3, 16, 12]");
  EXPECT_EQ(exprs(graph, "y"), "[N, 3, 16, 12]");
  EXPECT_EQ(values(graph, "y"), "[2, 3, 16, 12]");
}

TEST(ResizeShapes, TheScalesSlotAndAnEmptyScalesFollowTheOpset) {
  // Opset 10: scales is input 1.
  Graph v10 = load_without_inference(R"(
    <ir_version: 5, opset_import: ["" : 10]>
    g (float[N,3,4,4] x) => (float y)
    <float[4] scales = {1, 1, 2, 2}>
    {
      y = Resize (x, scales)
    })");
  infer(v10);
  EXPECT_EQ(exprs(v10, "y"), "[N, 3, 8, 8]");
  // Opset 11: sizes beside an empty scales, which is not given.
  Graph v11 = load_without_inference(R"(
    <ir_version: 6, opset_import: ["" : 11]>
    g (float[N,3,4,4] x, float[0] roi, float[0] no_scales, int64[4] sizes) => (float y)
    {
      y = Resize (x, roi, no_scales, sizes)
    })");
  set_elements(v11, "sizes", {symbolic_dim("N", 1), static_dim(3), static_dim(6), static_dim(6)});
  ShapeInferenceReport report = infer(v11);
  EXPECT_EQ(why_unfollowed(report, "y"), "");
  EXPECT_EQ(exprs(v11, "y"), "[N, 3, 6, 6]");
}

TEST(ResizeShapes, BadScalesAndSizesAreErrors) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,8,8] x, int64[4] sizes) => (float short, float neither, float unknown, float huge)
    <float[3] three = {1, 2, 2}, float[4] huge_scales = {1, 1, 1e30, 1}>
    {
      short = Resize (x, , three)
      huge = Resize (x, , huge_scales)
      neither = Resize (x)
      unknown = Resize (x, , , sizes)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "short", "Resize 'Resize_0': 'scales' has 3 values");
  expect_unfollowed(report, "neither", "exactly one of 'scales' and 'sizes'");
  expect_unfollowed(report, "unknown", "'sizes' (input 3, 'sizes') is not a known");
  expect_unfollowed(report, "huge", "resizes axis 2 (size 8) past");
}

}  // namespace
}  // namespace qdqrt::testing
