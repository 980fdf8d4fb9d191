#include <algorithm>
#include <cstdlib>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// A QAT-style conv whose per-channel weight scales are computed in the graph from the float
// weight (Abs -> ReduceMax -> Div), with scalars as Constant nodes and Cast'ed zero-points.
std::string qat_weight_scale_conv() {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x) => (float[1,4,3,3] y)
    <float[4,2,3,3] w = )" + literal(72, 7, -1.0f, 1.0f) + R"(, int32[4] zp32 = {0, 0, 0, 0}>
    {
      c127 = Constant<value = float {127.0}>()
      absw = Abs(w)
      amax = ReduceMax<axes = [1, 2, 3], keepdims = 0>(absw)
      scale = Div(amax, c127)
      zp = Cast<to = 3>(zp32)
      wq = QuantizeLinear<axis = 0>(w, scale, zp)
      wd = DequantizeLinear<axis = 0>(wq, scale, zp)
      y = Conv(x, wd)
    })";
}

// Constants an op refuses (index 100 of 10) make the model invalid: `inspect` once printed its
// layers while `run` and the engine builder refused it. The pass now refuses it too.
TEST(FoldConstants, ConstantsTheOpRefusesFailThePass) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] x) => (float[1,4] y)
    <float[10] table = {0,1,2,3,4,5,6,7,8,9}, int64[4] index = {0, 1, 2, 100}>
    {
      picked = Gather(table, index)
      y = Add(x, picked)
    })");
  optimizer::OptimizeOptions options;
  options.only_passes = {"fold_constants"};
  auto report = optimizer::optimize(graph, options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidModel);
  EXPECT_NE(report.status().message().find("index 100 is out of range"), std::string::npos)
      << report.status().message();
}

TEST(FoldConstants, WeightScaleSubgraphAndWeightQuantizeBecomeInt8Initializer) {
  Graph graph = parse_graph(qat_weight_scale_conv());
  Graph rewritten = run_passes(graph, {"fold_constants"});
  EXPECT_EQ(op_sequence(rewritten), "DequantizeLinear,Conv");
  const Node& dq = rewritten.nodes[0];
  const Tensor* weight = rewritten.find_initializer(dq.inputs[0]);
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->dtype(), DataType::kInt8);
  EXPECT_EQ(weight->shape(), (Shape{4, 2, 3, 3}));
  const Tensor* scale = rewritten.find_initializer(dq.inputs[1]);
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->shape(), (Shape{4}));
  // Per channel, the largest |weight| maps to 127 exactly.
  for (int64_t c = 0; c < 4; ++c) {
    int max_abs = 0;
    for (int64_t i = 0; i < 18; ++i) max_abs = std::max(max_abs, std::abs(int{weight->data<int8_t>()[c * 18 + i]}));
    EXPECT_EQ(max_abs, 127) << "channel " << c;
  }
  expect_same_outputs(graph, rewritten, random_inputs(graph, 11), 0.0, 0.0);
}

TEST(FoldConstants, FoldsShapeOfStaticShapeAndKeepsGraphOutputName) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x, float[3,4] t) => (float[3,4] y, int64[2] s)
    {
      s = Shape(t)
      r = Reshape(x, s)
      y = Add(r, t)
    })");
  Graph rewritten = run_passes(graph, {"fold_constants"});
  EXPECT_EQ(count_ops(rewritten, "Shape"), 0);
  // The folded graph output `s` is still produced (by an Identity of its constant).
  EXPECT_EQ(count_ops(rewritten, "Identity"), 1);
  EXPECT_EQ(count_ops(rewritten, "Reshape"), 1);
  EXPECT_NE(rewritten.find_initializer(rewritten.nodes[0].op_type == "Identity" ? rewritten.nodes[0].inputs[0] : ""), nullptr);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 12), 0.0, 0.0);
}

// A shifted-window attention mask as Swin builds it: ScatterND on constants folds to one
// constant; a ScatterND on a runtime value stays (it runs at run time).
TEST(FoldConstants, FoldsScatterNDOfConstantsOnly) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 16]>
    g (float[4,4] x) => (float[4,4] y, float[4,4] z)
    <int64[2] size = {4, 4}, int64[2,1] rows = {1, 3}, float[2,4] minus = {-100, -100, -100, -100, -100, -100, -100, -100},
     int64[1,2] corner = {0, 0}, float[1] one = {1.0}>
    {
      zeros = ConstantOfShape<value = float[1] {0.0}>(size)
      mask = ScatterND<reduction = "add">(zeros, rows, minus)
      y = Add(x, mask)
      z = ScatterND(x, corner, one)
    })");
  Graph rewritten = run_passes(graph, {"fold_constants"});
  EXPECT_EQ(count_ops(rewritten, "ConstantOfShape"), 0);
  EXPECT_EQ(count_ops(rewritten, "ScatterND"), 1);  // the one reading x
  expect_same_outputs(graph, rewritten, random_inputs(graph, 13), 0.0, 0.0);
  const Node* add = nullptr;
  for (const Node& node : rewritten.nodes) add = node.op_type == "Add" ? &node : add;
  ASSERT_NE(add, nullptr);
  const Tensor* mask = rewritten.find_initializer(add->inputs[1]);
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->data<float>()[4], -100.0f);  // row 1
  EXPECT_EQ(mask->data<float>()[0], 0.0f);     // row 0
}

TEST(FoldConstants, ScatterNDOutOfRangeIndexFailsNamingTheNode) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 16]>
    g (float[4] x) => (float[4] y)
    <float[4] base = {0, 0, 0, 0}, int64[1,1] far = {4}, float[1] v = {1.0}>
    {
      mask = ScatterND(base, far, v)
      y = Add(x, mask)
    })");
  optimizer::OptimizeOptions options;
  options.only_passes = {"fold_constants"};
  auto report = optimizer::optimize(graph, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("ScatterND"), std::string::npos) << report.status().message();
  EXPECT_NE(report.status().message().find("index 4"), std::string::npos) << report.status().message();
}

TEST(FoldConstants, MustNotFire) {
  // DQ of a constant int8 weight stays (fusion needs the int8 weight); Q of a runtime value
  // stays; a ConstantOfShape blowing a 2-element shape up to 4 MB stays.
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y, float[1024,1024] big)
    <int8[2,3] wq = {1, -2, 3, -4, 5, -6}, float s = {0.5}, int8 zp = {0}, int64[2] big_shape = {1024, 1024}>
    {
      w = DequantizeLinear(wq, s, zp)
      xq = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(xq, s, zp)
      y = Add(xd, w)
      big = ConstantOfShape<value = float[1] {1.0}>(big_shape)
    })");
  Graph rewritten = run_passes(graph, {"fold_constants"});
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 2);
  EXPECT_EQ(count_ops(rewritten, "QuantizeLinear"), 1);
  EXPECT_EQ(count_ops(rewritten, "ConstantOfShape"), 1);
  EXPECT_EQ(rewritten.find_initializer("wq")->dtype(), DataType::kInt8);
}

}  // namespace
}  // namespace qdqrt::testing
