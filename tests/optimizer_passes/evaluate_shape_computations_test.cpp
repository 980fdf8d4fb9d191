#include <gtest/gtest.h>

#include "tests/common/vit_class_token_graph.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(EvaluateShapeComputations, FoldsTorchShapeSubgraphsAtTheLoadedBatch) {
  Graph graph = parse_graph(vit_class_token_text("2"));
  // ONNX's inference alone leaves the Expand and everything after it without a static shape.
  ASSERT_FALSE(graph.find_value("c")->static_shape().has_value());
  Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations"});
  EXPECT_EQ(op_sequence(rewritten), "Expand,Concat,Gather,Reshape");
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
  Graph rewritten = run_passes(parse_graph(vit_class_token_text("2")), {"fold_constants"});
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
  Graph symbolic = parse_graph(vit_class_token_text("N"));
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
