// slice_gathered_parts: Gathers of a constant index that take the parts of a packed value after a
// Reshape and Transpose (timm's and Swin's q/k/v head split) become a Slice of the packed value's
// last axis, the Reshape without the parts' axis and the Transpose without the gathered axis,
// computing the same values; then split_sliced_projection splits the projection. Other readers,
// indices, axes and reshapes leave the graph as it is (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 5, 8] times W [8, 24] plus b, reshaped to `shape` (an int64 constant named `shape`),
// transposed by `perm`, then `gathers` (ONNX text lines reading `t`); `outputs` the graph outputs.
std::string head_split_model(const std::string& shape, const std::string& perm, const std::string& gathers,
                             const std::string& outputs, const std::string& extra_lines = "") {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,5,8] x) => (" + outputs + ")\n<float[8,24] w = " +
         literal(192, 1, -1.0f, 1.0f) + ", float[24] b = " + literal(24, 2, -1.0f, 1.0f) + ", " + shape +
         ", int64 i0 = {0}, int64 i1 = {1}, int64 i2 = {2}, int64 minus1 = {-1}, int64[1] v0 = {0}>\n{\n"
         "  mm = MatMul(x, w)\n  packed = Add(b, mm)\n  r = Reshape(packed, shape)\n  t = Transpose<perm = " +
         perm + ">(r)\n" + gathers + extra_lines + "}\n";
}

const std::string kShape = "int64[5] shape = {2, 5, 3, 2, 4}";
const std::string kPerm = "[2, 0, 3, 1, 4]";
const std::string kQkv =
    "  q = Gather<axis = 0>(t, i0)\n  k = Gather<axis = 0>(t, i1)\n  v = Gather<axis = 0>(t, i2)\n";
const std::string kQkvOutputs = "float[2,2,5,4] q, float[2,2,5,4] k, float[2,2,5,4] v";

TEST(SliceGatheredParts, HeadSplitBecomesSlicesOfThePackedValue) {
  struct Case {
    const char* what;
    std::string shape, perm, gathers, outputs;
    const char* ops;
  };
  const Case cases[] = {
      {"timm / Swin: [B, T, 3, H, D] -> [3, B, H, T, D]", kShape, kPerm, kQkv, kQkvOutputs,
       "MatMul,Add,Slice,Reshape,Transpose,Slice,Reshape,Transpose,Slice,Reshape,Transpose"},
      {"a negative index and axis, two of the three parts", kShape, kPerm,
       "  q = Gather<axis = -5>(t, minus1)\n  k = Gather<axis = 0>(t, i0)\n", "float[2,2,5,4] q, float[2,2,5,4] k",
       "MatMul,Add,Slice,Reshape,Transpose,Slice,Reshape,Transpose"},
      {"the parts already in order: no Transpose left", "int64[4] shape = {2, 5, 3, 8}", "[2, 0, 1, 3]",
       "  q = Gather<axis = 0>(t, i0)\n  k = Gather<axis = 0>(t, i1)\n", "float[2,5,8] q, float[2,5,8] k",
       "MatMul,Add,Slice,Reshape,Slice,Reshape"},
      {"-1 in the shape, the gathered axis in the middle", "int64[5] shape = {2, -1, 3, 2, 4}", "[0, 2, 3, 1, 4]",
       "  q = Gather<axis = 1>(t, i1)\n", "float[2,2,5,4] q", "MatMul,Add,Slice,Reshape,Transpose"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(head_split_model(c.shape, c.perm, c.gathers, c.outputs));
    Graph rewritten = run_passes(graph, {"slice_gathered_parts"});
    EXPECT_EQ(op_sequence(rewritten), c.ops);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 41), 0.0, 0.0);
    // Then one projection per part: no Slice left.
    Graph split = run_passes(graph, {"slice_gathered_parts", "split_sliced_projection"});
    EXPECT_EQ(count_ops(split, "Slice"), 0) << op_sequence(split);
    EXPECT_EQ(count_ops(split, "Gather"), 0) << op_sequence(split);
    expect_same_outputs(graph, split, random_inputs(graph, 42), 1e-6, 1e-6);
  }
}

TEST(SliceGatheredParts, OtherReadersIndicesAxesAndReshapesMustNotFire) {
  struct Case {
    const char* what;
    std::string text;
  };
  const Case cases[] = {
      {"another reader of the Transpose",
       head_split_model(kShape, kPerm, "  q = Gather<axis = 0>(t, i0)\n  z = Relu(t)\n",
                        "float[2,2,5,4] q, float[3,2,2,5,4] z")},
      {"the Transpose is a graph output",
       head_split_model(kShape, kPerm, "  q = Gather<axis = 0>(t, i0)\n", "float[2,2,5,4] q, float[3,2,2,5,4] t")},
      {"a 1-D index (keeps the axis)",
       head_split_model(kShape, kPerm, "  q = Gather<axis = 0>(t, v0)\n", "float[1,2,2,5,4] q")},
      {"the gathered axis is the heads, not the parts",
       head_split_model(kShape, "[3, 0, 2, 1, 4]", "  q = Gather<axis = 0>(t, i0)\n", "float[2,3,5,4] q")},
      {"Gathers on two axes",
       head_split_model(kShape, kPerm, "  q = Gather<axis = 0>(t, i0)\n  k = Gather<axis = 1>(t, i0)\n",
                        "float[2,2,5,4] q, float[3,2,5,4] k")},
      {"the Reshape merges the leading dims",
       head_split_model("int64[4] shape = {10, 3, 2, 4}", "[1, 0, 2, 3]", "  q = Gather<axis = 0>(t, i0)\n",
                        "float[10,2,4] q")},
      {"the packed value read by another node",
       head_split_model(kShape, kPerm, kQkv, kQkvOutputs + ", float[2,5,24] p", "  p = Relu(packed)\n")},
      {"the Reshape read by another node",
       head_split_model(kShape, kPerm, kQkv, kQkvOutputs + ", float[2,5,3,2,4] p", "  p = Relu(r)\n")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(c.text);
    const std::string before = op_sequence(graph);
    Graph rewritten = run_passes(graph, {"slice_gathered_parts"});
    EXPECT_EQ(op_sequence(rewritten), before);
  }
}

// In the float pipeline (the Reshape's shape computed from Shape as torch exports it): no Gather
// and no Slice left, one MatMul per part.
TEST(SliceGatheredParts, ShapeComputedInTheGraphSplitsInThePipeline) {
  // Replace the constant shape by one computed from x's Shape.
  std::string text = head_split_model("int64[3] rest = {3, 2, 4}", kPerm, kQkv, kQkvOutputs);
  const std::string reshape_line = "  r = Reshape(packed, shape)\n";
  text.replace(text.find(reshape_line), reshape_line.size(),
               "  s = Shape(x)\n  lead = Slice(s, v0, two)\n  shape = Concat<axis = 0>(lead, rest)\n" + reshape_line);
  text.replace(text.find("int64[1] v0 = {0}"), 17, "int64[1] v0 = {0}, int64[1] two = {2}");
  Graph computed = parse_graph(text);
  Graph optimized = run_passes(computed, {}, /*float_only=*/true);
  EXPECT_EQ(count_ops(optimized, "Gather"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "Slice"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "MatMul") + count_ops(optimized, "FusedMatMul"), 3) << op_sequence(optimized);
  expect_same_outputs(computed, optimized, random_inputs(computed, 43), 1e-6, 1e-6);
}

}  // namespace
}  // namespace qdqrt::testing
