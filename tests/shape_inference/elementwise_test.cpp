// Shape functions of the elementwise ops, and the elements they compute on shape tensors.
#include <gtest/gtest.h>

#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

TEST(ElementwiseShapes, UnaryBinaryWhereAndVariadic) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,1,4] a, float[3,1] b, bool[N,1,1] c, float[1,3,1] x, float[1,1,4] y, float[4] slope)
      => (float relu, float add, float where, float sum, float prelu, float soft, float clip, bool less)
    <float lo = {0}, float hi = {6}>
    {
      relu = Relu (a)
      add = Add (a, b)
      where = Where (c, x, y)
      sum = Sum (a, b, x)
      prelu = PRelu (a, slope)
      soft = Softmax <axis = 1> (add)
      clip = Clip (a, lo, hi)
      less = Less (a, b)
    })");
  set_dims(graph, "a", {symbolic_dim("N", 2), static_dim(1), static_dim(4)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "add"), "");
  EXPECT_EQ(exprs(graph, "relu"), "[N, 1, 4]");
  EXPECT_EQ(exprs(graph, "add"), "[N, 3, 4]");
  EXPECT_EQ(values(graph, "add"), "[2, 3, 4]");
  EXPECT_EQ(exprs(graph, "where"), "[N, 3, 4]");
  EXPECT_EQ(exprs(graph, "sum"), "[N, 3, 4]");
  EXPECT_EQ(exprs(graph, "prelu"), "[N, 1, 4]");
  EXPECT_EQ(exprs(graph, "soft"), "[N, 3, 4]");
  EXPECT_EQ(exprs(graph, "clip"), "[N, 1, 4]");
  EXPECT_EQ(exprs(graph, "less"), "[N, 3, 4]");
}

TEST(ElementwiseShapes, MismatchesAreErrorsNamingTheNode) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3] a, float[4] b, float[N,3,4] c, float[5] slope) => (float add, float soft, float prelu, float max) {
      add = Add (a, b)
      soft = Softmax <axis = 3> (c)
      prelu = PRelu (c, slope)
      max = Max (c, a, b)
    })");
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "add", "Add 'Add_0': input 1 [4] does not broadcast with [N, 3]");
  expect_unfollowed(report, "soft", "Softmax 'Softmax_1': attribute 'axis' 3 is out of range for rank 3");
  expect_unfollowed(report, "prelu", "slope [5] does not broadcast to X");
  expect_unfollowed(report, "max", "Max 'Max_3'");
}

// The shape of a flattened image, computed from a shape tensor [N, C, H, W] the graph gets.
TEST(ElementwiseElements, IntegerArithmeticOnShapeTensors) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[2] batch_and_channels, int64 n, float[2] floats) => (int64 doubled, int64 halved, int64 plus, int64 minus,
                                                     int64 rem, int64 biggest, int64 smallest, int64 negated,
                                                     bool same, int64 chosen, float float_product, int64 total)
    <int64 two = {2}, int64 one = {1}, int64[1] three = {3}, bool[2] pick = {1, 0}>
    {
      doubled = Mul (batch_and_channels, two)
      halved = Div (doubled, two)
      plus = Add (n, batch_and_channels)
      minus = Sub (batch_and_channels, one)
      rem = Mod (batch_and_channels, two)
      biggest = Max (batch_and_channels, three, n)
      smallest = Min (batch_and_channels, three)
      negated = Neg (batch_and_channels)
      same = Equal (halved, batch_and_channels)
      chosen = Where (pick, batch_and_channels, minus)
      float_product = Mul (floats, floats)
      total = Sum (n, n, one)
    })");
  set_elements(graph, "batch_and_channels", {symbolic_dim("N", 2), static_dim(3)});
  set_elements(graph, "n", {symbolic_dim("N", 2)});
  set_elements(graph, "floats", {symbolic_dim("N", 2), static_dim(3)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "doubled"), "");
  EXPECT_EQ(elements(graph, "doubled"), "[2*N, 6]");
  EXPECT_EQ(elements(graph, "halved"), "[N, 3]");
  EXPECT_EQ(elements(graph, "plus"), "[N+N, N+3]");
  EXPECT_EQ(elements(graph, "minus"), "[N+-1, 2]");
  EXPECT_EQ(elements(graph, "rem"), "[N%2, 1]");
  EXPECT_EQ(elements(graph, "biggest"), "[max(max(N, 3), N), max(N, 3)]");
  EXPECT_EQ(elements(graph, "smallest"), "[min(N, 3), 3]");
  EXPECT_EQ(elements(graph, "negated"), "[-1*N, -3]");
  EXPECT_EQ(elements(graph, "same"), "[1, 1]");
  EXPECT_EQ(elements(graph, "chosen"), "[N, 2]");
  EXPECT_EQ(elements(graph, "total"), "[(N+N)+1]");
  // Elements only for integers.
  EXPECT_EQ(elements(graph, "float_product"), "none");
  // Values at the shapes being built, beside the expressions.
  const ValueInfo* doubled = graph.find_value("doubled");
  ASSERT_TRUE(doubled->elements.has_value());
  EXPECT_EQ((*doubled->elements)[0].value, 4);
  EXPECT_EQ((*doubled->elements)[1].value, 6);
}

// A Reshape target computed from the batch: [N * 4, 6] follows N through Gather, Mul and Concat.
TEST(ElementwiseElements, ReshapeTargetComputedFromTheBatch) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,4,6] x) => (float y)
    <int64[1] first = {0}, int64 four = {4}, int64[1] six = {6}>
    {
      s = Shape (x)
      batch = Gather (s, first)
      rows = Mul (batch, four)
      target = Concat <axis = 0> (rows, six)
      y = Reshape (x, target)
    })");
  set_dims(graph, "x", {symbolic_dim("N", 3), static_dim(4), static_dim(6)});
  ShapeInferenceReport report = infer(graph);
  ASSERT_EQ(why_unfollowed(report, "y"), "");
  EXPECT_EQ(elements(graph, "rows"), "[4*N]");
  EXPECT_EQ(exprs(graph, "y"), "[4*N, 6]");
  EXPECT_EQ(values(graph, "y"), "[12, 6]");
}

// torch's Expand target: Where(Equal(shape, -1), 1, shape), where the shape holds the batch.
TEST(ElementwiseElements, TorchExpandTargetFollowsTheBatch) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[3] target, int64[2] dims) => (bool is_minus, int64 expand_to, bool unknown)
    <int64[3] ones = {1, 1, 1}, int64[3] minus = {-1, -1, -1}, int64[2] three = {3, 3}>
    {
      is_minus = Equal (target, minus)
      expand_to = Where (is_minus, ones, target)
      unknown = Equal (dims, three)
    })");
  set_elements(graph, "target", {symbolic_dim("N", 2), static_dim(-1), static_dim(-1)});
  set_elements(graph, "dims", {symbolic_dim("N", 2), static_dim(3)});
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(elements(graph, "is_minus"), "[0, 1, 1]");
  EXPECT_EQ(elements(graph, "expand_to"), "[N, 1, 1]");
  // N may be 3 at another batch: not known.
  EXPECT_EQ(elements(graph, "unknown"), "none");
}

TEST(ElementwiseElements, DivisionTruncatesAndRefusesWhatItCannotFollow) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[2] dims) => (int64 truncated, int64 by_zero, int64 by_dim, int64 fmod)
    <int64[2] negative = {-7, 7}, int64 two = {2}, int64 zero = {0}>
    {
      truncated = Div (negative, two)
      by_zero = Div (dims, zero)
      by_dim = Div (two, dims)
      fmod = Mod <fmod = 1> (negative, two)
    })");
  set_elements(graph, "dims", {symbolic_dim("N", 2), static_dim(3)});
  ShapeInferenceReport report = infer(graph);
  // ONNX's integer Div truncates toward zero: -7 / 2 is -3 (floor would be -4).
  EXPECT_EQ(elements(graph, "truncated"), "[-3, 3]");
  EXPECT_EQ(elements(graph, "fmod"), "[-1, 1]");
  EXPECT_EQ(elements(graph, "by_zero"), "none");
  EXPECT_EQ(elements(graph, "by_dim"), "none");
  // The dims are still derived.
  EXPECT_EQ(exprs(graph, "by_zero"), "[2]");
}

// Without a value at the shapes being built, a dividend that counts something (4*N) still divides;
// one that may be negative (-N) does not, as truncation and floor differ there.
TEST(ElementwiseElements, DividendsWithoutAValue) {
  Graph graph = load_without_inference(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int64[1] n) => (int64 quarter, int64 negative_half, bool is_minus)
    <int64 four = {4}, int64 two = {2}, int64 minus_one = {-1}>
    {
      rows = Mul (n, four)
      quarter = Div (rows, four)
      negated = Neg (n)
      negative_half = Div (negated, two)
      is_minus = Equal (rows, minus_one)
    })");
  set_elements(graph, "n", {symbolic_dim("N")});
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(elements(graph, "quarter"), "[N]");
  EXPECT_EQ(elements(graph, "negative_half"), "none");
  EXPECT_EQ(elements(graph, "is_minus"), "[0]");
}

// Nodes built in memory (no loader to check them): a wrong input count and extreme elements are
// errors or unknown elements, never a crash or an overflow.
TEST(ElementwiseElements, WrongInputCountsAndExtremeElements) {
  Graph graph;
  graph.opsets[kOnnxDomain] = 13;
  add_input(graph, "a", DataType::kInt64, static_dims({1}));
  set_elements(graph, "a", {static_dim(INT64_MIN)});
  add_input(graph, "big", DataType::kInt64, Dims{static_dim(INT64_MAX), static_dim(2)});
  add_node(graph, "Div", "one_input", {"a"}, {"one_input"});
  add_node(graph, "Where", "two_inputs", {"a", "a"}, {"two_inputs"});
  add_node(graph, "Neg", "negated", {"a"}, {"negated"});
  add_node(graph, "Mul", "squared", {"a", "a"}, {"squared"});
  add_node(graph, "Add", "huge", {"big", "a"}, {"huge"});
  ShapeInferenceReport report = infer(graph);
  expect_unfollowed(report, "one_input", "Div 'one_input': has 1 inputs, expected 2");
  expect_unfollowed(report, "two_inputs", "has 2 inputs, expected 3");
  // -INT64_MIN and INT64_MIN squared do not fit: the dims hold, the elements are not known.
  EXPECT_EQ(exprs(graph, "negated"), "[1]");
  EXPECT_EQ(elements(graph, "negated"), "none");
  EXPECT_EQ(elements(graph, "squared"), "none");
  EXPECT_EQ(values(graph, "huge"), "[9223372036854775807, 2]");
  EXPECT_EQ(elements(graph, "huge"), "none");
}

}  // namespace
}  // namespace qdqrt::testing
