// The tensor family's shape functions (core/ops/tensor_shapes.h): dims with expressions of the
// dynamic dims through each op, the elements of shape computations (Shape -> Gather -> Concat ->
// Reshape), and the errors of models whose shapes cannot fit, each naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/attribute_values.h"
#include "tests/shape_inference/shape_test_util.h"

namespace qdqrt::testing {
namespace {

std::string model(const std::string& signature, const std::string& body, int opset = 13) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\n" + signature + "\n{\n" + body +
         "\n}\n";
}

// The dim expression of `value`'s axis evaluated at N = n.
std::optional<int64_t> dim_at(const Inferred& inferred, const std::string& value, size_t axis, int64_t n) {
  const ValueInfo* info = inferred.graph.find_value(value);
  if (info == nullptr || !info->shape || axis >= info->shape->size()) return std::nullopt;
  return (*info->shape)[axis].expr.evaluate({{"N", n}});
}

// Expects the value not followed, with a reason naming the node that writes it and holding `part`.
void expect_error(const Inferred& inferred, const std::string& value, const std::string& op_type,
                  const std::string& part) {
  const std::string why = why_unfollowed(inferred, value);
  const Node* writer = nullptr;
  for (const Node& node : inferred.graph.nodes) {
    if (std::find(node.outputs.begin(), node.outputs.end(), value) != node.outputs.end()) writer = &node;
  }
  ASSERT_NE(writer, nullptr) << value;
  EXPECT_NE(why.find(op_type + " '" + writer->name + "'"), std::string::npos) << why;
  expect_unfollowed(inferred.report, value, part);
  const ValueInfo* info = inferred.graph.find_value(value);
  if (info != nullptr && info->shape) {
    for (const Dim& dim : *info->shape) EXPECT_FALSE(dim.expr.known()) << value << " keeps an expression";
  }
}

TEST(TensorShapes, ReshapeMinusOneFollowsTheBatch) {
  Inferred inferred =
      infer(model("g (float[N, 49, 384] x, int64[2] s = {-1, 384}, int64[3] t = {-1, 49, 384}) => (float[?, 384] y)",
                  "y = Reshape(x, s)\n z = Reshape(x, t)\n w = Reshape(z, s)"));
  EXPECT_EQ(exprs(inferred, "y"), "[49*N, 384]");
  EXPECT_EQ(exprs(inferred, "z"), "[N, 49, 384]");
  EXPECT_EQ(exprs(inferred, "w"), "[49*N, 384]");
  EXPECT_TRUE(inferred.report.unfollowed.empty());
}

TEST(TensorShapes, ReshapeZeroCopiesTheInputDim) {
  Inferred inferred =
      infer(model("g (float[N, 6, 4] x, int64[3] s = {0, -1, 2}, int64[2] z = {0, 0}) => (float[?, ?, 2] y)",
                  "y = Reshape(x, s)", 14));
  EXPECT_EQ(exprs(inferred, "y"), "[N, 12, 2]");
  // allowzero: a 0 is a 0 (here it cannot hold the input's elements unless N is 0).
  Inferred zero = infer(
      model("g (float[0, 3] x, int64[2] s = {3, 0}) => (float[3, 0] y)", "y = Reshape <allowzero = 1> (x, s)", 14));
  EXPECT_EQ(exprs(zero, "y"), "[3, 0]");
  Inferred copies =
      infer(model("g (float[0, 3] x, int64[2] s = {3, 0}) => (float[3, 0] y)", "y = Reshape(x, s)", 14), false);
  expect_error(copies, "y", "Reshape", "has 0 elements, the target shape [3, 3] has 9");
  // A dim read by Shape cancels against the input's.
  Inferred read = infer(model("g (float[N, 6, 4] x, int64 zero = {0}, int64[1] minus = {-1}) => (float[N, 24] y)",
                              "s = Shape(x)\n n = Gather(s, zero)\n axes = Constant <value_ints = [0]> ()\n"
                              " n1 = Unsqueeze(n, axes)\n t = Concat <axis = 0> (n1, minus)\n y = Reshape(x, t)"));
  EXPECT_EQ(exprs(read, "y"), "[N, 24]");
}

TEST(TensorShapes, ShapeGatherConcatReshapeFollowsTheBatch) {
  Inferred ordered = infer(
      model("g (float[N, 18816] x, int64 zero = {0}, int64[2] tail = {49, 384}) => (float[?, 49, 384] y)",
            "axes = Constant <value_ints = [0]> ()\n s = Shape(x)\n n = Gather(s, zero)\n n1 = Unsqueeze(n, axes)\n"
            " t = Concat <axis = 0> (n1, tail)\n y = Reshape(x, t)"));
  EXPECT_EQ(elements(ordered, "s"), "[N, 18816]");
  EXPECT_EQ(exprs(ordered, "n"), "[]");
  EXPECT_EQ(elements(ordered, "n"), "[N]");
  EXPECT_EQ(elements(ordered, "n1"), "[N]");
  EXPECT_EQ(elements(ordered, "axes"), "[0]");
  EXPECT_EQ(elements(ordered, "t"), "[N, 49, 384]");
  EXPECT_EQ(exprs(ordered, "t"), "[3]");
  EXPECT_EQ(exprs(ordered, "y"), "[N, 49, 384]");
  EXPECT_TRUE(ordered.report.unfollowed.empty());
}

TEST(TensorShapes, ShapeStartEndAndSize) {
  Inferred inferred =
      infer(model("g (float[N, 3, H, 5] x) => (int64[2] s)",
                  "s = Shape <start = 1, end = -1> (x)\n all = Shape(x)\n tail = Shape <start = -10> (x)\n"
                  " none = Shape <start = 3, end = 1> (x)\n n = Size(x)",
                  15));
  EXPECT_EQ(exprs(inferred, "s"), "[2]");
  EXPECT_EQ(elements(inferred, "s"), "[3, H]");
  EXPECT_EQ(elements(inferred, "all"), "[N, 3, H, 5]");
  EXPECT_EQ(elements(inferred, "tail"), "[N, 3, H, 5]");
  EXPECT_EQ(exprs(inferred, "none"), "[0]");
  EXPECT_EQ(exprs(inferred, "n"), "[]");
  EXPECT_EQ(dim_at(inferred, "s", 0, 7), 2);
  const ValueInfo* size = inferred.graph.find_value("n");
  ASSERT_TRUE(size && size->elements && size->elements->size() == 1);
  EXPECT_EQ((*size->elements)[0].expr.evaluate({{"N", 2}, {"H", 7}}), 2 * 3 * 7 * 5);
}

TEST(TensorShapes, TransposeMovesTheBatch) {
  Inferred inferred = infer(
      model("g (float[N, 3, 8] x) => (float[8, N, 3] y)", "y = Transpose <perm = [2, 0, 1]> (x)\n r = Transpose(x)"));
  EXPECT_EQ(exprs(inferred, "y"), "[8, N, 3]");
  EXPECT_EQ(exprs(inferred, "r"), "[8, 3, N]");
}

TEST(TensorShapes, FlattenFoldsTheBatchWhereTheAxisSays) {
  Inferred inferred =
      infer(model("g (float[N, 3, 4] x) => (float[N, 12] y)",
                  "y = Flatten <axis = 1> (x)\n a2 = Flatten <axis = 2> (x)\n a0 = Flatten <axis = 0> (x)\n"
                  " neg = Flatten <axis = -1> (x)\n end = Flatten <axis = 3> (x)"));
  EXPECT_EQ(exprs(inferred, "y"), "[N, 12]");
  EXPECT_EQ(exprs(inferred, "a2"), "[3*N, 4]");
  EXPECT_EQ(exprs(inferred, "a0"), "[1, 12*N]");
  EXPECT_EQ(exprs(inferred, "neg"), "[3*N, 4]");
  EXPECT_EQ(exprs(inferred, "end"), "[12*N, 1]");
}

TEST(TensorShapes, SqueezeAndUnsqueezeWithAxesAttributeOrInput) {
  Inferred old =
      infer(model("g (float[N, 1, 4, 1] x) => (float[N, 4] y)",
                  "y = Squeeze <axes = [1, -1]> (x)\n u = Unsqueeze <axes = [0, -1]> (x)\n all = Squeeze(x)", 11),
            false);
  EXPECT_EQ(exprs(old, "y"), "[N, 4]");
  EXPECT_EQ(exprs(old, "u"), "[1, N, 1, 4, 1, 1]");
  // Without axes, whether N is 1 decides the rank: not followed.
  EXPECT_EQ(exprs(old, "all"), "unknown rank");
  expect_error(old, "all", "Squeeze", "whether dim 0 (N)");
  Inferred input = infer(model("g (float[2, 1, 4, 1] x, int64[2] a = {1, 3}, int64[1] b = {1}) => (float[2, 4] y)",
                               "y = Squeeze(x, a)\n u = Unsqueeze(x, b)\n all = Squeeze(x)"));
  EXPECT_EQ(exprs(input, "y"), "[2, 4]");
  EXPECT_EQ(exprs(input, "u"), "[2, 1, 1, 4, 1]");
  EXPECT_EQ(exprs(input, "all"), "[2, 4]");
}

TEST(TensorShapes, ConcatAddsTheAxis) {
  Inferred inferred = infer(model("g (float[N, 2] a, float[N, 3] b, float[M, 2] c) => (float[N, 5] y)",
                                  "y = Concat <axis = 1> (a, b)\n z = Concat <axis = -2> (a, c, a)"));
  EXPECT_EQ(exprs(inferred, "y"), "[N, 5]");
  EXPECT_EQ(dim_at(inferred, "z", 0, 3), std::nullopt);  // reads M too
  const ValueInfo* z = inferred.graph.find_value("z");
  ASSERT_TRUE(z && z->shape);
  EXPECT_EQ((*z->shape)[0].expr.evaluate({{"N", 3}, {"M", 4}}), 10);
}

TEST(TensorShapes, SplitPartsFollowTheBatch) {
  Inferred sizes = infer(model("g (float[N, 6] x, int64[2] s = {2, 4}) => (float[N, 2] a, float[N, 4] b)",
                               "a, b = Split <axis = 1> (x, s)\n c, d = Split <axis = 0> (x)"));
  EXPECT_EQ(exprs(sizes, "a"), "[N, 2]");
  EXPECT_EQ(exprs(sizes, "b"), "[N, 4]");
  EXPECT_EQ(dim_at(sizes, "c", 0, 8), 4);
  EXPECT_EQ(exprs(sizes, "d"), exprs(sizes, "c"));
  Inferred old =
      infer(model("g (float[3, 10] x) => (float[3, 3] a)", "a, b = Split <axis = 1, split = [3, 7]> (x)", 11));
  EXPECT_EQ(exprs(old, "b"), "[3, 7]");
  // num_outputs (opset 18): ceil(dim / n) per part, the last smaller.
  Inferred parts =
      infer(model("g (float[N, 4] x) => (float[?, 4] a)", "a, b, c = Split <axis = 0, num_outputs = 3> (x)", 18));
  for (int64_t n = 0; n <= 12; ++n) {
    const int64_t chunk = (n + 2) / 3;
    EXPECT_EQ(dim_at(parts, "a", 0, n), chunk) << n;
    EXPECT_EQ(dim_at(parts, "b", 0, n), std::clamp<int64_t>(n - chunk, 0, chunk)) << n;
    EXPECT_EQ(dim_at(parts, "c", 0, n), std::clamp<int64_t>(n - 2 * chunk, 0, chunk)) << n;
  }
  Inferred uneven =
      infer(model("g (float[2, 8] x) => (float[2, 3] a)", "a, b, c = Split <axis = 1, num_outputs = 3> (x)", 18));
  EXPECT_EQ(exprs(uneven, "a"), "[2, 3]");
  EXPECT_EQ(exprs(uneven, "c"), "[2, 2]");
}

// The length ONNX's Slice gives on an axis of size n, by walking the indices.
int64_t slice_length_by_walking(int64_t n, int64_t start, int64_t end, int64_t step) {
  auto adjust = [n](int64_t i) { return i < 0 ? i + n : i; };
  int64_t s = adjust(start), e = adjust(end);
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
  } else {
    s = std::clamp<int64_t>(s, 0, std::max<int64_t>(n - 1, 0));
    e = std::clamp<int64_t>(e, -1, std::max<int64_t>(n - 1, -1));
  }
  int64_t count = 0;
  for (int64_t i = s; step > 0 ? i < e : i > e; i += step) ++count;
  return n == 0 ? 0 : count;
}

TEST(TensorShapes, SliceLengthsAreExactExpressionsOfTheDim) {
  const int64_t big = INT64_MAX, small = INT64_MIN + 1;
  const std::vector<std::vector<int64_t>> cases = {
      {0, big, 1},      {1, big, 1}, {-1, big, 1}, {-3, big, 2},  {2, 5, 1},       {2, -1, 1},    {-4, -1, 2},
      {0, 3, 1},        {5, 2, 1},   {big, 0, 1},  {small, 3, 1}, {-1, small, -1}, {-1, -4, -1},  {4, 0, -2},
      {big, small, -3}, {0, -1, -1}, {3, 1, -1},   {-2, big, -1}, {1, 100, 3},     {-100, 100, 4}};
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "start " << c[0] << " end " << c[1] << " step " << c[2]);
    const std::string signature =
        "g (float[N, 3] x, int64[1] starts = {" + std::to_string(c[0]) + "}, int64[1] ends = {" + std::to_string(c[1]) +
        "}, int64[1] axes = {0}, int64[1] steps = {" + std::to_string(c[2]) + "}) => (float[?, 3] y)";
    Inferred inferred = infer(model(signature, "y = Slice(x, starts, ends, axes, steps)"));
    ASSERT_EQ(why_unfollowed(inferred, "y"), "");
    for (int64_t n = 0; n <= 9; ++n)
      EXPECT_EQ(dim_at(inferred, "y", 0, n), slice_length_by_walking(n, c[0], c[1], c[2])) << n;
  }
  Inferred common =
      infer(model("g (float[N, 10] x, int64[2] starts = {1, -1}, int64[2] ends = {9223372036854775807, -11},"
                  " int64[2] axes = {0, 1}, int64[2] steps = {1, -2}) => (float[?, 5] y)",
                  "y = Slice(x, starts, ends, axes, steps)"));
  EXPECT_EQ(exprs(common, "y"), "[max(N+-1, 0), 5]");
  EXPECT_EQ(dim_at(common, "y", 0, 4), 3);
}

TEST(TensorShapes, SliceAndGatherPickElements) {
  Inferred inferred = infer(model(
      "g (float[N, C, H, W] x, int64[1] starts = {-2}, int64[1] ends = {9223372036854775807}, int64[1] axes = {0},"
      " int64[1] back = {-1}, int64[1] rend = {-9223372036854775807}, int64[2] pick = {3, -3}) => (int64[2] hw)",
      "s = Shape(x)\n hw = Slice(s, starts, ends, axes)\n rev = Slice(s, back, rend, axes, back)\n g = Gather(s, "
      "pick)"));
  EXPECT_EQ(elements(inferred, "hw"), "[H, W]");
  EXPECT_EQ(elements(inferred, "rev"), "[W, H, C, N]");
  EXPECT_EQ(elements(inferred, "g"), "[W, C]");
  EXPECT_EQ(exprs(inferred, "g"), "[2]");
}

// torch.onnx's computed F.pad (Swin's window padding): pads from Shape -> Mod/Sub, reversed
// pairwise through a [4, 2] table (Reshape, Slice with step -1, Transpose, Reshape), then the
// shifted windows' roll (two Slices and a Concat) and the crop back to the input's H with an end
// read by Shape. The table's elements follow through the 2-D Slice and Transpose.
std::string padded_window_model(const std::string& input_dims) {
  return model("g (float[" + input_dims +
                   "] x, int64 one = {1}, int64 two = {2}, int64 seven = {7}, int64 eight = {8},"
                   " int64[1] zero1 = {0}, int64[1] one1 = {1}, int64[1] three1 = {3}, int64[1] back = {-1},"
                   " int64[1] rend = {-9223372036854775807}, int64[1] big = {9223372036854775807},"
                   " int64[2] pairs = {-1, 2}) => (float[N, ?, ?, 8] crop)",
               "axes = Constant <value_ints = [0]> ()\n"
               " s = Shape(x)\n h = Gather(s, one)\n w = Gather(s, two)\n"
               " hm = Mod(h, seven)\n hs = Sub(seven, hm)\n hp = Mod(hs, seven)\n"
               " wm = Mod(w, seven)\n ws = Sub(seven, wm)\n wp = Mod(ws, seven)\n"
               " hu = Unsqueeze(hp, axes)\n wu = Unsqueeze(wp, axes)\n"
               " listed = Concat <axis = 0> (zero1, zero1, zero1, wu, zero1, hu)\n"
               " cast = Cast <to = 7> (listed)\n n_listed = Shape(cast)\n count = Gather(n_listed, zero1)\n"
               " rest = Sub(eight, count)\n zeros = ConstantOfShape <value = int64[1] {0}> (rest)\n"
               " full = Concat <axis = 0> (cast, zeros)\n table = Reshape(full, pairs)\n"
               " reversed = Slice(table, back, rend, zero1, back)\n by_side = Transpose <perm = [1, 0]> (reversed)\n"
               " flat_shape = Constant <value_ints = [-1]> ()\n flat = Reshape(by_side, flat_shape)\n"
               " pads = Cast <to = 7> (flat)\n padded = Pad(x, pads)\n"
               " tail = Slice(padded, three1, big, one1)\n head = Slice(padded, zero1, three1, one1)\n"
               " rolled = Concat <axis = 1> (tail, head)\n h_end = Unsqueeze(h, axes)\n"
               " crop = Slice(rolled, zero1, h_end, one1)");
}

TEST(TensorShapes, ComputedPadTableFollowsThroughSliceAndTranspose) {
  Inferred inferred = infer(padded_window_model("N, 16, 16, 8"));
  EXPECT_EQ(elements(inferred, "full"), "[0, 0, 0, 5, 0, 5, 0, 0]");
  EXPECT_EQ(elements(inferred, "table"), "[0, 0, 0, 5, 0, 5, 0, 0]");
  EXPECT_EQ(elements(inferred, "reversed"), "[0, 0, 0, 5, 0, 5, 0, 0]");
  EXPECT_EQ(elements(inferred, "by_side"), "[0, 0, 0, 0, 0, 5, 5, 0]");
  EXPECT_EQ(elements(inferred, "pads"), "[0, 0, 0, 0, 0, 5, 5, 0]");
  EXPECT_EQ(exprs(inferred, "padded"), "[N, 21, 21, 8]");
  EXPECT_EQ(exprs(inferred, "rolled"), "[N, 21, 21, 8]");
  EXPECT_EQ(exprs(inferred, "crop"), "[N, 16, 21, 8]");
  for (const auto& [value, why] : inferred.report.unfollowed) ADD_FAILURE() << value << ": " << why;
  // With H and W dynamic the padding is an expression of them.
  Inferred dynamic = infer(padded_window_model("N, H, W, 8"));
  ASSERT_EQ(why_unfollowed(dynamic, "rolled"), "");
  for (int64_t h : {7, 9, 16}) {
    const SymbolValues at = {{"N", 2}, {"H", h}, {"W", 10}};
    EXPECT_EQ(evaluate(dynamic.graph, "padded", 1, at), (h + 6) / 7 * 7) << h;
    EXPECT_EQ(evaluate(dynamic.graph, "padded", 2, at), 14) << h;
    EXPECT_EQ(evaluate(dynamic.graph, "rolled", 1, at), (h + 6) / 7 * 7) << h;
  }
}

TEST(TensorShapes, SliceAndTransposeOfAFollowedTable) {
  // A 2-D table of shape elements: a Slice of both axes and a Transpose with its own perm.
  Inferred inferred = infer(model(
      "g (float[N, C, H, W] x, int64[2] starts = {1, -1}, int64[2] ends = {3, -9223372036854775807},"
      " int64[2] axes = {0, 1}, int64[2] steps = {1, -1}, int64[2] six = {3, 2}) => (int64[2, 2] y)",
      "s = Shape(x)\n two = Shape <end = 2> (x)\n t = Concat <axis = 0> (s, two)\n table = Reshape(t, six)\n"
      " y = Slice(table, starts, ends, axes, steps)\n z = Transpose(table)",
      15));
  EXPECT_EQ(elements(inferred, "table"), "[N, C, H, W, N, C]");
  EXPECT_EQ(elements(inferred, "y"), "[W, H, C, N]");
  EXPECT_EQ(elements(inferred, "z"), "[N, H, N, C, W, C]");
  EXPECT_EQ(exprs(inferred, "z"), "[2, 3]");
}

TEST(TensorShapes, GatherAndGatherElementsDims) {
  Inferred inferred = infer(
      model("g (float[N, 5, 6] x, int64[2, 3] i = {0, 1, 2, 3, 4, -5}, int64[N, 2, 6] e) => (float[N, 2, 3, 6] y)",
            "y = Gather <axis = 1> (x, i)\n z = GatherElements <axis = 1> (x, e)"));
  EXPECT_EQ(exprs(inferred, "y"), "[N, 2, 3, 6]");
  EXPECT_EQ(exprs(inferred, "z"), "[N, 2, 6]");
}

TEST(TensorShapes, ScatterNDKeepsTheDataDims) {
  Inferred inferred = infer(
      model("g (float[N, 4, 6] x, int64[3, 2] i, float[3, 6] u, int64[2, 4] far, float[2] v, float[3, 5] w) => "
            "(float[N, 4, 6] y)",
            "y = ScatterND(x, i, u)\n a = ScatterND(x, far, v)\n b = ScatterND(x, i, w)", 16),
      false);
  EXPECT_EQ(exprs(inferred, "y"), "[N, 4, 6]");
  expect_error(inferred, "a", "ScatterND", "index 4 dims of data");
  expect_error(inferred, "b", "ScatterND", "updates [3, 5] do not match");
}

TEST(TensorShapes, EinsumTakesEachLabelsDim) {
  Inferred inferred = infer(
      model("g (float[N, 2, 8, 4] q, float[N, 2, 6, 4] k, float[1, 8, 4] one, float[N, 3] bad) => (float[N, 2, 8, 6] y)",
            "y = Einsum <equation = \"bhid,bhjd->bhij\"> (q, k)\n"
            " e = Einsum <equation = \"...id,...jd->...ij\"> (one, k)\n"
            " t = Einsum <equation = \"bhid->db\"> (q)\n"
            " a = Einsum <equation = \"bhid,bhjd->bhij\"> (q, bad)\n"
            " c = Einsum <equation = \"bhid,bhjd->bhij\"> (q, one4)\n one4 = Transpose <perm = [0, 2, 1, 3]> (k)",
            13),
      false);
  EXPECT_EQ(exprs(inferred, "y"), "[N, 2, 8, 6]");
  EXPECT_EQ(exprs(inferred, "e"), "[N, 2, 8, 6]");  // the ellipsis [1] and [N, 2] broadcast
  EXPECT_EQ(exprs(inferred, "t"), "[4, N]");
  expect_error(inferred, "a", "Einsum", "rank 2");
  expect_error(inferred, "c", "Einsum", "label 'h' is 2 in one place and 6");
}

TEST(TensorShapes, ExpandAndConstantOfShapeFromShape) {
  Inferred inferred =
      infer(model("g (float[N, 3, 4] x, float[3, 1] ones) => (float[N, 3, 4] y)",
                  "s = Shape(x)\n y = Expand(ones, s)\n z = ConstantOfShape(s)\n"
                  " one = Constant <value = int64[1] {7}> ()\n k = ConstantOfShape <value = int64[1] {2}> (one)"));
  EXPECT_EQ(exprs(inferred, "y"), "[N, 3, 4]");
  EXPECT_EQ(exprs(inferred, "z"), "[N, 3, 4]");
  EXPECT_EQ(exprs(inferred, "k"), "[7]");
  EXPECT_EQ(elements(inferred, "k"), "[2, 2, 2, 2, 2, 2, 2]");
  EXPECT_EQ(elements(inferred, "z"), "none");  // float
}

TEST(TensorShapes, TileAndPadAndRange) {
  Inferred inferred =
      infer(model("g (float[N, 3] x, int64[2] r = {2, 3}, int64[4] p = {1, 0, 2, -1}, int64 zero = {0}, int64 one = "
                  "{1}) => (float[?, 9] y)",
                  "y = Tile(x, r)\n q = Pad(x, p)\n s = Shape(x)\n n = Gather(s, zero)\n k = Range(zero, n, one)\n"
                  " five = Constant <value = int64 {5}> ()\n small = Range(one, five, one)"));
  EXPECT_EQ(exprs(inferred, "y"), "[2*N, 9]");
  EXPECT_EQ(dim_at(inferred, "q", 0, 4), 7);
  EXPECT_EQ(dim_at(inferred, "q", 1, 4), 2);
  for (int64_t n : {0, 1, 5}) EXPECT_EQ(dim_at(inferred, "k", 0, n), n);
  EXPECT_EQ(elements(inferred, "small"), "[1, 2, 3, 4]");
  // Pad before opset 11: pads as an attribute.
  Inferred old = infer(model("g (float[N, 3] x) => (float[?, 9] y)", "y = Pad <pads = [0, 2, 0, 4]> (x)", 10));
  EXPECT_EQ(exprs(old, "y"), "[N, 9]");
  // Pad from opset 18 with axes.
  Inferred axes = infer(model("g (float[N, 3, 4] x, int64[2] p = {1, 2}, int64[1] a = {-1}) => (float[N, 3, 7] y)",
                              "y = Pad(x, p, , a)", 18));
  EXPECT_EQ(exprs(axes, "y"), "[N, 3, 7]");
}

TEST(TensorShapes, CastPassesIntegerElements) {
  Inferred inferred =
      infer(model("g (float[N, 300] x) => (int32[2] y)",
                  "s = Shape(x)\n y = Cast <to = 6> (s)\n f = Cast <to = 1> (s)\n b = Cast <to = 3> (s)\n"
                  " l = CastLike(s, y)",
                  15));
  EXPECT_EQ(elements(inferred, "y"), "[N, 300]");
  EXPECT_EQ(elements(inferred, "f"), "none");
  EXPECT_EQ(elements(inferred, "b"), "[?, 44]");  // int8: 300 wraps, N is not known
  EXPECT_EQ(elements(inferred, "l"), "[N, 300]");
  EXPECT_EQ(exprs(inferred, "f"), "[2]");
}

TEST(TensorShapes, ConstantsIdentityDropoutAndBlocks) {
  Inferred inferred = infer(
      model("g (float[N, 8, 4, 6] x) => (float[N, 2, 8, 12] y)",
            "y = DepthToSpace <blocksize = 2> (x)\n z = SpaceToDepth <blocksize = 2> (x)\n i = Identity(x)\n"
            " d, m = Dropout(x)\n c = Constant <value_ints = [4, 5, 6]> ()\n f = Constant <value_float = 1.5> ()\n"
            " fs = Constant <value_floats = [1.0, 2.0]> ()\n k = Constant <value_int = 3> ()"));
  EXPECT_EQ(exprs(inferred, "y"), "[N, 2, 8, 12]");
  EXPECT_EQ(exprs(inferred, "z"), "[N, 32, 2, 3]");
  EXPECT_EQ(exprs(inferred, "i"), "[N, 8, 4, 6]");
  EXPECT_EQ(exprs(inferred, "d"), "[N, 8, 4, 6]");
  EXPECT_EQ(exprs(inferred, "m"), "[N, 8, 4, 6]");
  EXPECT_EQ(elements(inferred, "c"), "[4, 5, 6]");
  EXPECT_EQ(exprs(inferred, "f"), "[]");
  EXPECT_EQ(exprs(inferred, "fs"), "[2]");
  EXPECT_EQ(elements(inferred, "k"), "[3]");
}

TEST(TensorShapes, NonZeroNeedsAConstant) {
  Inferred inferred = infer(model("g (float[N, 3] x, int64[2, 3] c = {0, 1, 0, 2, 0, 3}) => (int64[2, ?] y)",
                                  "y = NonZero(x)\n z = NonZero(c)"));
  expect_error(inferred, "y", "NonZero", "not constant");
  EXPECT_EQ(exprs(inferred, "z"), "[2, 3]");
}

// ---- models whose shapes cannot fit: errors naming the node and why ----

TEST(TensorShapes, ReshapeErrors) {
  Inferred inferred = infer(model("g (float[2, 3] x, int64[2] bad = {4, 2}, int64[2] odd = {-1, 4}, int64[2] two = "
                                  "{-1, -1}, int64[3] far = {0, 0, 0},"
                                  " int64[2] neg = {-2, 3}, int64[2] target) => (float[4, 2] a)",
                                  "a = Reshape(x, bad)\n b = Reshape(x, odd)\n c = Reshape(x, two)\n d = Reshape(x, "
                                  "far)\n e = Reshape(x, neg)\n"
                                  " f = Reshape(x, target)"),
                            false);
  expect_error(inferred, "a", "Reshape", "has 6 elements");
  expect_error(inferred, "b", "Reshape", "not a multiple of 4");
  expect_error(inferred, "c", "Reshape", "more than one -1");
  expect_error(inferred, "d", "Reshape", "copies dim 2");
  expect_error(inferred, "e", "Reshape", "invalid dim -2");
  expect_error(inferred, "f", "Reshape", "neither constant nor computed");
}

TEST(TensorShapes, AxisAndSizeErrors) {
  Inferred inferred = infer(
      model(
          "g (float[2, 3] x, float[2, 4] w, float[2, 3, 1] r3, int64[1] zero = {0}, int64[1] big = {5}, int64[1] ax = "
          "{2},"
          " int64[3] many = {1, 1, 1}, int64[1] idx = {3}, int64[3] p3 = {1, 1, 1}, int64[2] e2 = {3, 3}) => (float[3, "
          "2] a)",
          "a = Transpose <perm = [0, 0]> (x)\n b = Squeeze(x, ax)\n c = Squeeze(x, zero)\n d = Unsqueeze(x, axes2)\n"
          " axes2 = Constant <value_ints = [1, 1]> ()\n e = Concat <axis = 0> (x, r3)\n f = Concat <axis = 0> (x, w)\n"
          " s1, s2 = Split <axis = 1> (x, many)\n h = Slice(x, zero, big, ax)\n"
          " xi = Identity(x)\n i = Gather <axis = 1> (xi, idx)\n j = Tile(x, many)\n k = Pad(x, p3)\n l = Expand(x, "
          "e2)\n"
          " m = Flatten <axis = 3> (x)\n n = Concat <axis = 2> (x, x)\n o = DepthToSpace <blocksize = 2> (r4)\n"
          " r4 = Constant <value = float[1, 3, 1, 1] {1, 2, 3}> ()\n q = SpaceToDepth <blocksize = 2> (r4)"),
      false);
  expect_error(inferred, "a", "Transpose", "not a permutation");
  expect_error(inferred, "b", "Squeeze", "axis 2 is out of range for rank 2");
  expect_error(inferred, "c", "Squeeze", "cannot squeeze axis 0 of size 2");
  expect_error(inferred, "d", "Unsqueeze", "axis 1 is given twice");
  expect_error(inferred, "e", "Concat", "has rank 3");
  expect_error(inferred, "f", "Concat", "does not match");
  expect_error(inferred, "s1", "Split", "3 sizes for 2 outputs");
  expect_error(inferred, "h", "Slice", "axis 2 is out of range for rank 2");
  expect_error(inferred, "i", "Gather", "index 3");
  expect_error(inferred, "j", "Tile", "3 values");
  expect_error(inferred, "k", "Pad", "expected 4");
  expect_error(inferred, "l", "Expand", "does not broadcast");
  expect_error(inferred, "m", "Flatten", "axis 3 is out of range");
  expect_error(inferred, "n", "Concat", "axis 2 is out of range");
  expect_error(inferred, "o", "DepthToSpace", "not a multiple of blocksize^2");
  expect_error(inferred, "q", "SpaceToDepth", "not a multiple of blocksize 2");
}

TEST(TensorShapes, MoreErrorsNamingTheValue) {
  Inferred inferred = infer(
      model("g (float[2, 3] x, int64[2] s = {3, 3}, int64[1] zero = {0}, int64[1] one = {1}, int64[1] step0 = {0},"
            " int64[1] dup = {0}) => (float[2, 3] a)",
            "a, b = Split <axis = 1> (x, s)\n c = Slice(x, zero, one, zero, step0)\n d = Slice(x, zero, one, twice)\n"
            " twice = Constant <value_ints = [0, 0]> ()\n u = Unsqueeze(x, twice2)\n twice2 = Constant <value_ints = "
            "[0, 0]> ()\n"
            " e, f = Split <axis = 1> (x)\n neg = Constant <value_ints = [-1, 2]> ()\n g = ConstantOfShape(neg)"),
      false);
  expect_error(inferred, "a", "Split", "sums to 6");
  expect_error(inferred, "c", "Slice", "step for axis 0 is 0");
  expect_error(inferred, "e", "Split", "cannot be split evenly into 2");
  expect_error(inferred, "g", "ConstantOfShape", "negative dim -1");
  expect_error(inferred, "d", "Slice", "different lengths (1, 1, 2, 1)");
  expect_error(inferred, "u", "Unsqueeze", "given twice");
}

TEST(TensorShapes, MoreBadInputsNamingTheNode) {
  Inferred inferred = infer(
      model("g (float[2, 3] x, int64[2] dims = {2, -1}, int64[2] neg = {-1, 2}, int64[2] crop = {0, -4}, int64 zero = "
            "{0},"
            " int64 one = {1}, int64[2] parts = {1, 2}, float[2] ratio, int64[2, 2, 1] idx, int64 limit) => (float[2, "
            "3] a)",
            "a = Expand(x, dims)\n b = Tile(x, neg)\n c = Pad(x, crop4)\n crop4 = Constant <value_ints = [0, 0, 0, "
            "-4]> ()\n"
            " d = Range(zero, one, zero)\n e = Range(zero, limit, one)\n f, g = Split <axis = 1, num_outputs = 3> (x)\n"
            " h, i = Split <axis = 1, num_outputs = 2> (x, parts)\n j, k = Dropout(x, ratio)\n l = GatherElements(x, "
            "idx)\n"
            " m = Identity(a)\n n = Shape(a)\n o = Gather(a, one)",
            18),
      false);
  expect_error(inferred, "a", "Expand", "negative dim -1");
  expect_error(inferred, "b", "Tile", "negative value -1");
  expect_error(inferred, "c", "Pad", "crop axis 1 of size 3 below zero");
  expect_error(inferred, "d", "Range", "delta 'zero' is 0");
  expect_error(inferred, "e", "Range", "not all constant");
  expect_error(inferred, "f", "Split", "num_outputs is 3 but the node has 2 outputs");
  expect_error(inferred, "h", "Split", "both given");
  expect_error(inferred, "j", "Dropout", "must be a scalar");
  expect_error(inferred, "l", "GatherElements", "different ranks");
  // Downstream of a value that was not followed: its rank is not known.
  expect_error(inferred, "m", "Identity", "the rank of input 0 ('a') is not known");
  expect_error(inferred, "n", "Shape", "the rank of input 0 ('a') is not known");
  expect_error(inferred, "o", "Gather", "the rank of input 0 (data 'a') is not known");
}

TEST(TensorShapes, RangeOfFloatConstantsAndSmallElementsOnly) {
  Inferred inferred = infer(model(
      "g (float start = {0.5}, float limit = {3.0}, float delta = {1.0}) => (float[3] r)",
      "r = Range(start, limit, delta)\n big = Constant <value = int64[65] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, "
      "13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, "
      "41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64}> ()\n"
      " small = Constant <value = int64[64] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, "
      "21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, "
      "49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63}> ()\n two = Concat <axis = 0> (small, small)"));
  EXPECT_EQ(exprs(inferred, "r"), "[3]");
  EXPECT_EQ(elements(inferred, "r"), "none");  // float
  EXPECT_EQ(exprs(inferred, "big"), "[65]");
  EXPECT_EQ(elements(inferred, "big"), "none");  // more than kMaxFollowedElements
  EXPECT_NE(elements(inferred, "small"), "none");
  EXPECT_EQ(exprs(inferred, "two"), "[128]");
  EXPECT_EQ(elements(inferred, "two"), "none");
}

TEST(TensorShapes, NodesBuiltInMemoryHaveTheirAttributesParsed) {
  Graph graph;
  graph.opsets[kOnnxDomain] = 13;
  add_input(graph, "x", DataType::kFloat, Dims{symbolic_dim("N"), static_dim(3)});
  add_node(graph, "Transpose", "t_node", {"x"}, {"t"}, {{"perm", ints_attribute({1, 0})}});
  add_node(graph, "Flatten", "f_node", {"x"}, {"f"}, {{"axis", string_attribute("one")}});
  ShapeInferenceReport report = infer(graph);
  EXPECT_EQ(exprs(graph, "t"), "[3, N]");
  expect_unfollowed(report, "f", "Flatten 'f_node': attribute 'axis'");
}

}  // namespace
}  // namespace qdqrt::testing
