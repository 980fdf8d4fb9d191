// lower_reduce_l2: ReduceL2 over the last axis with keepdims (F.normalize's norm) becomes
// Mul -> MatMul by ones -> Sqrt computing what the reference ReduceL2 computes; other axes,
// keepdims = 0, axes given at run time and integer inputs stay ReduceL2 (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

std::string reduce_model(const std::string& x, const std::string& y, const std::string& reduce, int opset = 13,
                         const std::string& dtype = "float") {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (" + dtype + x + " x) => (" + dtype +
         y + " y)\n<int64[1] last = {-1}, int64[1] first = {0}>\n{\n  y = " + reduce + "\n}\n";
}

TEST(LowerReduceL2, LastAxisWithKeepdimsBecomesSumOfSquaresAndSqrt) {
  struct Case {
    const char* what;
    std::string text;
  };
  const Case cases[] = {
      {"axes attribute -1 (Swin-V2's F.normalize)",
       reduce_model("[2,4,10,8]", "[2,4,10,1]", "ReduceL2<axes = [-1], keepdims = 1>(x)")},
      {"axes attribute rank - 1, keepdims by default", reduce_model("[3,5]", "[3,1]", "ReduceL2<axes = [1]>(x)")},
      {"axes as a constant input (opset 18)", reduce_model("[2,6,7]", "[2,6,1]", "ReduceL2(x, last)", 18)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(c.text);
    Graph rewritten = run_passes(graph, {"lower_reduce_l2"});
    EXPECT_EQ(op_sequence(rewritten), "Mul,MatMul,Sqrt");
    expect_same_outputs(graph, rewritten, random_inputs(graph, 41), 1e-6, 1e-6);
    const ValueInfo* y = rewritten.find_value("y");
    ASSERT_NE(y, nullptr);
    EXPECT_TRUE(y->static_shape().has_value());
  }
}

TEST(LowerReduceL2, OtherAxesKeepdimsZeroRuntimeAxesAndIntegersMustNotFire) {
  const std::string texts[] = {
      reduce_model("[3,5]", "[1,5]", "ReduceL2<axes = [0]>(x)"),
      reduce_model("[3,5]", "[3]", "ReduceL2<axes = [-1], keepdims = 0>(x)"),
      reduce_model("[3,5]", "[1,1]", "ReduceL2(x)"),  // every axis
      reduce_model("[2,3,5]", "[2,1,1]", "ReduceL2<axes = [1, 2]>(x)"),
      reduce_model("[3,5]", "[1,5]", "ReduceL2(x, first)", 18),
      reduce_model("[3,5]", "[3,1]", "ReduceL2<axes = [-1]>(x)", 13, "int32"),
  };
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    Graph graph = parse_graph(text);
    EXPECT_EQ(op_sequence(run_passes(graph, {"lower_reduce_l2"})), "ReduceL2");
  }
  // Axes computed at run time.
  Graph runtime = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[3,5] x, int64[1] axes) => (float[3,1] y)
    {
      y = ReduceL2(x, axes)
    })");
  EXPECT_EQ(op_sequence(run_passes(runtime, {"lower_reduce_l2"})), "ReduceL2");
}

// Through the float pipeline: F.normalize as torch exports it leaves no ReduceL2.
TEST(LowerReduceL2, NormalizeInTheFloatPipeline) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,10,8] x) => (float[2,10,8] y)
    <float eps = {1e-12}>
    {
      norm = ReduceL2<axes = [-1], keepdims = 1>(x)
      clipped = Clip(norm, eps)
      s = Shape(x)
      wide = Expand(clipped, s)
      y = Div(x, wide)
    })");
  Graph optimized = run_passes(graph, {}, /*float_only=*/true);
  EXPECT_EQ(count_ops(optimized, "ReduceL2"), 0) << op_sequence(optimized);
  expect_same_outputs(graph, optimized, random_inputs(graph, 42), 1e-6, 1e-5);
}

}  // namespace
}  // namespace qdqrt::testing
