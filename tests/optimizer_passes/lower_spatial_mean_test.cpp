// lower_spatial_mean: ReduceMean over every spatial axis becomes GlobalAveragePool (+ Flatten for
// keepdims=0), bit-identical to the reference ReduceMean; other axes, runtime axes, rank < 4 and
// integer inputs stay ReduceMean (must not fire) with the reason.
#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "optimizer/passes/lower_spatial_mean.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// y's dims are symbolic: its rank is x's, or x's less the axes with keepdims=0.
std::string mean_model(const std::string& shape, const std::string& attributes, int opset = 13,
                       const std::string& dtype = "float") {
  int rank = static_cast<int>(std::count(shape.begin(), shape.end(), ',')) + 1;
  if (attributes.find("keepdims = 0") != std::string::npos) {
    const size_t open = attributes.find('['), close = attributes.find(']');
    rank -= static_cast<int>(std::count(attributes.begin() + open, attributes.begin() + close, ',')) + 1;
  }
  std::string dims;
  for (int d = 0; d < rank; ++d) dims += fmt::format("{}o{}", d ? "," : "", d);
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : {}]>
    g ({}[{}] x) => ({}[{}] y)
    {{
      y = ReduceMean{}(x)
    }})",
                     opset, dtype, shape, dtype, dims, attributes.empty() ? "" : "<" + attributes + ">");
}

void expect_lowered(const std::string& text, const std::string& ops) {
  SCOPED_TRACE(text);
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"fold_constants", "lower_spatial_mean"});
  EXPECT_EQ(op_sequence(rewritten), ops);
  const ValueInfo* y = rewritten.find_value("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->static_shape(), graph.find_value("y")->static_shape());
  // The pool's output: x's N and C, every spatial dim 1.
  const Shape x = *graph.find_value("x")->static_shape();
  Shape pooled = {x[0], x[1]};
  pooled.resize(x.size(), 1);
  ASSERT_NE(rewritten.find_value(rewritten.nodes[0].outputs[0]), nullptr);
  EXPECT_EQ(rewritten.find_value(rewritten.nodes[0].outputs[0])->static_shape(), pooled);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 51), 0.0, 0.0);
}

void expect_kept(const std::string& text, const std::string& reason) {
  SCOPED_TRACE(text);
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"fold_constants", "lower_spatial_mean"});
  EXPECT_EQ(count_ops(rewritten, "ReduceMean"), 1) << op_sequence(rewritten);
  EXPECT_EQ(count_ops(rewritten, "GlobalAveragePool"), 0);
  const Node* mean = nullptr;
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "ReduceMean") mean = &node;
  }
  ASSERT_NE(mean, nullptr);
  const std::string why = optimizer::spatial_mean_mismatch(rewritten, *mean);
  EXPECT_NE(why.find(reason), std::string::npos) << why;
}

TEST(LowerSpatialMean, MeanOverHAndWBecomesGlobalAveragePool) {
  // MNASNet's and ShuffleNetV2's x.mean([2, 3]): keepdims=0 -> GlobalAveragePool + Flatten.
  expect_lowered(mean_model("2,16,7,5", "axes = [2, 3], keepdims = 0"), "GlobalAveragePool,Flatten");
  expect_lowered(mean_model("2,16,7,5", "axes = [3, 2]"), "GlobalAveragePool");
  expect_lowered(mean_model("1,8,4,4", "axes = [-1, -2], keepdims = 1"), "GlobalAveragePool");
  // Rank 5: every axis after C.
  expect_lowered(mean_model("1,3,2,3,4", "axes = [2, 3, 4]"), "GlobalAveragePool");
}

TEST(LowerSpatialMean, RandomShapesMatchBitForBit) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 16; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 3), c = 1 + static_cast<int>(rng() % 33);
    const int h = 1 + static_cast<int>(rng() % 15), w = 1 + static_cast<int>(rng() % 17);
    const bool keepdims = rng() % 2 == 0;
    expect_lowered(mean_model(fmt::format("{},{},{},{}", n, c, h, w),
                              fmt::format("axes = [2, 3], keepdims = {}", keepdims ? 1 : 0)),
                   keepdims ? "GlobalAveragePool" : "GlobalAveragePool,Flatten");
  }
}

TEST(LowerSpatialMean, OpsetEighteenAxesInput) {
  expect_lowered(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,4,5,6] x) => (float[2,4] y)
    <int64[2] axes = {2, 3}>
    {
      y = ReduceMean<keepdims = 0>(x, axes)
    })",
                 "GlobalAveragePool,Flatten");
}

TEST(LowerSpatialMean, MustNotFire) {
  expect_kept(mean_model("2,16,7,5", "axes = [3]"), "are not the spatial axes");     // W only
  expect_kept(mean_model("2,16,7,5", "axes = [1, 2, 3]"), "are not the spatial axes");  // C too
  // LayerNorm's mean over the last axis of [B, T, D] (rank 3: axis 2 is not a pool's).
  expect_kept(mean_model("2,8,16", "axes = [-1]"), "rank 3");
  expect_kept(mean_model("4,16", "axes = [1]"), "rank 2");
  expect_kept(mean_model("2,16,7,5", ""), "every axis");
  expect_kept(mean_model("2,16,7,5", "axes = [2, 3]", 13, "int32"), "not float");
  expect_kept(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,4,5,6] x, int64[2] axes) => (float[o0,o1,o2,o3] y)
    {
      y = ReduceMean(x, axes)
    })",
              "run time");
}

// Between Q/DQ: the pool fusion takes the lowered mean as one INT8 global pool, and the int8
// output is the reference's on the original graph.
TEST(LowerSpatialMean, QuantizedMeanBecomesAnInt8GlobalPool) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,24,7,5] x) => (uint8[2,24,1,1] y)
    <float s = {0.04}, uint8 z = {128}, float so = {0.01}, uint8 zo = {125}>
    {
      xq = QuantizeLinear(x, s, z)
      xd = DequantizeLinear(xq, s, z)
      m = ReduceMean<axes = [2, 3]>(xd)
      y = QuantizeLinear(m, so, zo)
    })");
  Graph optimized = graph;
  ASSERT_TRUE(optimizer::optimize(optimized).ok());
  EXPECT_EQ(count_ops(optimized, "ReduceMean"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "QGlobalAveragePool"), 1) << op_sequence(optimized);
  expect_same_outputs(graph, optimized, random_inputs(graph, 52), 0.0, 0.0, 0);
}

}  // namespace
}  // namespace qdqrt::testing
