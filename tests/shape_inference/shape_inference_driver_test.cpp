// The shape inference driver (infer_shapes, core/shape_inference.h) and the coverage of shape
// functions: every ai.onnx op qdqrt accepts has one, every fused op's table row has its output
// shape.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/op_registry.h"
#include "core/ops/fused_op_table.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(InferShapes, AFileShapeThatDisagreesIsReportedAndKept) {
  Graph graph = load_keeping_shapes(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, int64[2] s = {3, 2}) => (float[6, 1] y, float[N, 2] z)
{
  y = Reshape(x, s)
  z = Identity(y)
}
)");
  ShapeInferenceReport report;
  ASSERT_TRUE(infer_shapes(graph, &report).is_ok());
  ASSERT_EQ(report.unfollowed.count("y"), 1u);
  EXPECT_NE(report.unfollowed["y"].find("Reshape '"), std::string::npos) << report.unfollowed["y"];
  EXPECT_NE(report.unfollowed["y"].find("is [3, 2] by qdqrt's shape function but [6, 1] in the model"),
            std::string::npos)
      << report.unfollowed["y"];
  const ValueInfo& y = graph.values.at("y");
  ASSERT_TRUE(y.shape);
  EXPECT_EQ(dims_to_string(*y.shape), "[6, 1]");
  for (const Dim& dim : *y.shape) EXPECT_FALSE(dim.expr.known());
  // Downstream of it, the file's dims are what the next op reads: [6, 1], while z says [N, 2].
  EXPECT_EQ(report.unfollowed.count("z"), 1u);
}

TEST(InferShapes, AnAgreeingFileShapeGetsExpressionsAndKeepsItsNames) {
  Graph graph = load_keeping_shapes(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 3, 4] x) => (float[batch, 12] y)
{
  y = Flatten(x)
}
)");
  ShapeInferenceReport report;
  ASSERT_TRUE(infer_shapes(graph, &report).is_ok());
  EXPECT_TRUE(report.unfollowed.empty());
  const ValueInfo& y = graph.values.at("y");
  ASSERT_TRUE(y.shape);
  EXPECT_EQ(dims_text(*y.shape), "[batch, 12]");
  EXPECT_EQ((*y.shape)[0].symbol, "batch");
  EXPECT_EQ((*y.shape)[1].value, 12);
}

TEST(InferShapes, AnOpWithoutAShapeFunctionLeavesItsOutputsWithoutExpressions) {
  Graph graph;
  graph.opsets[kOnnxDomain] = 13;
  const Dims dims = {symbolic_dim("N"), static_dim(3)};
  add_input(graph, "x", DataType::kFloat, dims);
  // The file's dims and elements of the output.
  set_dims(graph, "y", dims);
  set_elements(graph, "y", {static_dim(1)});
  graph.values["y"].dtype = DataType::kFloat;
  add_node(graph, "NotAnOnnxOp", "mystery", {"x"}, {"y"});
  graph.outputs = {"y"};
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "y", "NotAnOnnxOp 'mystery': qdqrt has no shape function");
  const ValueInfo& after = graph.values.at("y");
  ASSERT_TRUE(after.shape);
  ASSERT_EQ(after.shape->size(), 2u);
  for (const Dim& dim : *after.shape) EXPECT_FALSE(dim.expr.known());
  EXPECT_EQ((*after.shape)[0].symbol, "N");  // the file's dims stay
  EXPECT_EQ((*after.shape)[1].value, 3);
  EXPECT_FALSE(after.elements);
}

TEST(ShapeFunctionCoverage, EveryOnnxOpHasAShapeFunction) {
  std::vector<std::string> missing;
  int count = 0;
  for (const OpSchema* schema : OpRegistry::instance().all()) {
    if (schema->domain != kOnnxDomain) continue;
    ++count;
    if (schema->infer_shape == nullptr) missing.push_back(schema->op_type);
  }
  EXPECT_GT(count, 0);
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << count
                               << " ai.onnx ops have no shape function (OpSchema::infer_shape, set where their family "
                                  "registers them): "
                               << fmt::format("{}", fmt::join(missing, ", "));
}

TEST(ShapeFunctionCoverage, EveryFusedOpHasAnOutputShape) {
  std::vector<std::string> missing;
  for (const OpSchema* schema : OpRegistry::instance().all()) {
    if (schema->domain != kQdqrtDomain) continue;
    const FusedOpRow* row = find_fused_op(schema->op_type);
    if (row == nullptr || row->output_shape == nullptr) missing.push_back(schema->op_type);
  }
  EXPECT_TRUE(missing.empty()) << "qdqrt-domain ops without a fused-op table row with output_shape: "
                               << fmt::format("{}", fmt::join(missing, ", "));
}

}  // namespace
}  // namespace qdqrt::testing
