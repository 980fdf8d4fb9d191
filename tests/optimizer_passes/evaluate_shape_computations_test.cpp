#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// What torch.onnx.export makes of a ViT's `cat([class_token.expand(x.shape[0], -1, -1), x], 1)`
// followed by `reshape(x.shape[0], -1)`: the batch read from Shape, Expand's -1s replaced through
// ConstantOfShape/Equal/Where, every target computed. `batch` is the input's dim 0 ("N": symbolic).
std::string vit_shape_graph(const std::string& batch) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[)" + batch + R"(,3,4] x) => (float[)" + batch + R"(,16] y)
    <float[1,1,4] class_token = {0.5, -1, 2, 0.25}, int64 zero = {0}, int64[1] axes = {0},
     int64[1] minus_one = {-1}, int64[1] three = {3}>
    {
      s = Shape(x)
      b = Gather<axis = 0>(s, zero)
      b1 = Unsqueeze(b, axes)
      expand_request = Concat<axis = 0>(b1, minus_one, minus_one)
      ones = ConstantOfShape<value = int64[1] {1}>(three)
      minus_ones = Mul(ones, minus_one)
      is_minus_one = Equal(expand_request, minus_ones)
      expand_shape = Where(is_minus_one, ones, expand_request)
      tokens = Expand(class_token, expand_shape)
      c = Concat<axis = 1>(tokens, x)
      target = Concat<axis = 0>(b1, minus_one)
      y = Reshape(c, target)
    })";
}

TEST(EvaluateShapeComputations, FoldsTorchShapeSubgraphsAtTheLoadedBatch) {
  Graph graph = parse_graph(vit_shape_graph("2"));
  // ONNX's inference alone leaves the Expand and everything after it without a static shape.
  ASSERT_FALSE(graph.find_value("c")->static_shape().has_value());
  Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations"});
  EXPECT_EQ(op_sequence(rewritten), "Expand,Concat,Reshape");
  for (const Node& node : rewritten.nodes) {
    for (const std::string& output : node.outputs) {
      ASSERT_TRUE(rewritten.find_value(output)->static_shape().has_value()) << output;
    }
  }
  EXPECT_EQ(*rewritten.find_value("tokens")->static_shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(*rewritten.find_value("c")->static_shape(), (Shape{2, 4, 4}));
  // Expand's target was folded to [2, 1, 1] with the batch the graph was loaded at.
  const Tensor* expand_shape = rewritten.find_initializer(rewritten.nodes[0].inputs[1]);
  ASSERT_NE(expand_shape, nullptr);
  EXPECT_EQ(expand_shape->value_as_int64(0), 2);
  EXPECT_EQ(expand_shape->value_as_int64(1), 1);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 3), 0.0, 0.0);
}

TEST(EvaluateShapeComputations, ExpandSizedByTheBatchStaysARuntimeNode) {
  // fold_constants alone folds the shape subgraph but keeps the Expand: folded, it would hold
  // class tokens for 2 images only.
  Graph rewritten = run_passes(parse_graph(vit_shape_graph("2")), {"fold_constants"});
  EXPECT_EQ(count_ops(rewritten, "Expand"), 1);
  EXPECT_EQ(count_ops(rewritten, "Shape"), 0);
  // An Expand whose target is a plain constant still folds.
  Graph constant = run_passes(parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4] x) => (float[2,4] y)
    <float[1,4] row = {1, 2, 3, 4}, int64[2] shape = {2, 4}>
    {
      rows = Expand(row, shape)
      y = Add(x, rows)
    })"), {"fold_constants"});
  EXPECT_EQ(op_sequence(constant), "Add");
}

TEST(EvaluateShapeComputations, MustNotFire) {
  // A symbolic batch: nothing can be evaluated, the graph stays as it is.
  Graph symbolic = parse_graph(vit_shape_graph("N"));
  Graph rewritten = run_passes(symbolic, {"evaluate_shape_computations"});
  EXPECT_EQ(op_sequence(rewritten), op_sequence(symbolic));
  EXPECT_FALSE(rewritten.find_value("c")->static_shape().has_value());
  // Every shape static already: nothing to do.
  Graph static_graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x) => (float[3,4] y)
    <int64[2] target = {3, 4}>
    {
      y = Reshape(x, target)
    })");
  EXPECT_EQ(op_sequence(run_passes(static_graph, {"evaluate_shape_computations"})), "Reshape");
}

}  // namespace
}  // namespace qdqrt::testing
