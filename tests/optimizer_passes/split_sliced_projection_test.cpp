// split_sliced_projection: a projection whose packed output only Slices of the last axis read
// (nn.MultiheadAttention's q/k/v in-projection) becomes one MatMul (and bias Add) per Slice,
// computing what the Slices computed; other readers, axes, steps or weights leave it (must not
// fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 5, 8] times W [8, 24] plus b, sliced by `slices` (ONNX text lines reading `packed`);
// `extra` adds inputs to the graph signature, `outputs` lists the graph outputs.
std::string projection_model(const std::string& bias_line, const std::string& slices,
                             const std::string& outputs = "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v",
                             const std::string& weight = "float[8,24] w = " + literal(192, 1, -1.0f, 1.0f),
                             const std::string& bias = "float[24] b = " + literal(24, 2, -1.0f, 1.0f)) {
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2,5,8] x) => (" + outputs + ")\n<" + weight + ", " +
         bias +
         ", int64[1] zero = {0}, int64[1] eight = {8}, int64[1] sixteen = {16}, int64[1] end = "
         "{9223372036854775807}, int64[1] last = {-1}, int64[1] one = {1}, int64[1] two = {2}, int64[1] axis1 = {1}>\n{\n"
         "  mm = MatMul(x, w)\n" +
         bias_line + slices + "}\n";
}

const std::string kQkv =
    "  q = Slice(packed, zero, eight, last)\n  k = Slice(packed, eight, sixteen, last)\n"
    "  v = Slice(packed, sixteen, end, last)\n";

TEST(SplitSlicedProjection, PackedInProjectionBecomesOneProjectionPerSlice) {
  struct Case {
    const char* what;
    std::string bias_line;
    std::string slices;
    std::string bias;
    const char* ops;
  };
  const std::string default_bias = "float[24] b = " + literal(24, 2, -1.0f, 1.0f);
  const Case cases[] = {
      {"bias first, as torch exports it", "  packed = Add(b, mm)\n", kQkv, default_bias,
       "MatMul,Add,MatMul,Add,MatMul,Add"},
      {"bias second, [1, 1, N]", "  packed = Add(mm, b)\n", kQkv, "float[1,1,24] b = " + literal(24, 3, -1.0f, 1.0f),
       "MatMul,Add,MatMul,Add,MatMul,Add"},
      {"scalar bias", "  packed = Add(mm, b)\n", kQkv, "float b = {0.5}", "MatMul,Add,MatMul,Add,MatMul,Add"},
      {"no bias", "  packed = Identity(mm)\n", kQkv, default_bias, "MatMul,MatMul,MatMul"},
      {"axis as rank - 1, step 1, a start from the end",
       "  packed = Add(b, mm)\n",
       "  two_axis = Constant<value_ints = [2]>()\n  q = Slice(packed, zero, eight, two_axis, one)\n"
       "  k = Slice(packed, eight, sixteen, two_axis)\n  minus8 = Constant<value_ints = [-8]>()\n"
       "  v = Slice(packed, minus8, end, last)\n",
       default_bias, "MatMul,Add,MatMul,Add,MatMul,Add"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(projection_model(c.bias_line, c.slices, "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v",
                                               "float[8,24] w = " + literal(192, 1, -1.0f, 1.0f), c.bias));
    // The Identity (no-bias case) and Constant nodes go first, as the pipeline would have them.
    Graph rewritten = run_passes(graph, {"remove_identities", "fold_constants", "split_sliced_projection"});
    EXPECT_EQ(op_sequence(rewritten), c.ops);
    EXPECT_EQ(count_ops(rewritten, "Slice"), 0);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 31), 1e-6, 1e-6);
    for (const char* output : {"q", "k", "v"}) {
      const ValueInfo* info = rewritten.find_value(output);
      ASSERT_NE(info, nullptr) << output;
      EXPECT_TRUE(info->static_shape().has_value()) << output;
    }
  }
}

TEST(SplitSlicedProjection, OtherReadersAxesStepsAndWeightsMustNotFire) {
  struct Case {
    const char* what;
    std::string text;
  };
  const Case cases[] = {
      {"a Slice of another axis",
       projection_model("  packed = Add(b, mm)\n",
                        "  q = Slice(packed, zero, two, axis1)\n  k = Slice(packed, eight, sixteen, last)\n",
                        "float[2,2,24] q, float[2,5,8] k")},
      {"another reader of the packed value",
       projection_model("  packed = Add(b, mm)\n", "  q = Slice(packed, zero, eight, last)\n  r = Relu(packed)\n",
                        "float[2,5,8] q, float[2,5,24] r")},
      {"the packed value is a graph output",
       projection_model("  packed = Add(b, mm)\n", "  q = Slice(packed, zero, eight, last)\n",
                        "float[2,5,8] q, float[2,5,24] packed")},
      {"a step of 2",
       projection_model("  packed = Add(b, mm)\n", "  q = Slice(packed, zero, sixteen, last, two)\n",
                        "float[2,5,8] q")},
      {"no axes (axis 0)", projection_model("  packed = Add(b, mm)\n", "  q = Slice(packed, zero, one)\n",
                                            "float[1,5,24] q")},
      {"a bias that varies along the rows",
       projection_model("  packed = Add(b, mm)\n", kQkv, "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v",
                        "float[8,24] w = " + literal(192, 1, -1.0f, 1.0f),
                        "float[5,24] b = " + literal(120, 4, -1.0f, 1.0f))},
      {"the matmul result read besides the Add",
       projection_model("  packed = Add(b, mm)\n  r = Relu(mm)\n", kQkv,
                        "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v, float[2,5,24] r")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph graph = parse_graph(c.text);
    const std::string before = op_sequence(graph);
    Graph rewritten = run_passes(graph, {"split_sliced_projection"});
    EXPECT_EQ(op_sequence(rewritten), before);
  }
  // A weight computed at run time.
  Graph runtime = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,5,8] x, float[8,24] w) => (float[2,5,8] q, float[2,5,8] k)
    <int64[1] zero = {0}, int64[1] eight = {8}, int64[1] sixteen = {16}, int64[1] last = {-1}>
    {
      packed = MatMul(x, w)
      q = Slice(packed, zero, eight, last)
      k = Slice(packed, eight, sixteen, last)
    })");
  EXPECT_EQ(op_sequence(run_passes(runtime, {"split_sliced_projection"})), "MatMul,Slice,Slice");
}

// A quantized weight: DequantizeLinear of an int8 [K, N] constant, per column (with zero-points)
// or per tensor; each part gets its own DequantizeLinear with its columns.
TEST(SplitSlicedProjection, QuantizedWeightSplitsWithItsScales) {
  const std::string per_column = "int8[8,24] wq = " + literal(192, 5, -127.0f, 127.0f, true) +
                                 ", float[24] ws = " + literal(24, 6, 0.001f, 0.01f) + ", int8[24] wz = " +
                                 literal(24, 7, -3.0f, 3.0f, true);
  const std::string per_tensor = "int8[8,24] wq = " + literal(192, 5, -127.0f, 127.0f, true) +
                                 ", float ws = {0.004}, int8 wz = {2}";
  for (const std::string& weight : {per_column, per_tensor}) {
    SCOPED_TRACE(weight.substr(weight.find("ws")));
    Graph graph = parse_graph(projection_model("  w = DequantizeLinear<axis = 1>(wq, ws, wz)\n  packed = Add(b, mm)\n",
                                               kQkv, "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v", weight));
    Graph rewritten = run_passes(graph, {"split_sliced_projection"});
    EXPECT_EQ(count_ops(rewritten, "Slice"), 0) << op_sequence(rewritten);
    EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 3) << op_sequence(rewritten);
    EXPECT_EQ(count_ops(rewritten, "MatMul"), 3) << op_sequence(rewritten);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 33), 1e-6, 1e-6);
  }
  // Must not fire: scales per row (axis 0), or the dequantized weight read by another node too.
  const std::string per_row = "int8[8,24] wq = " + literal(192, 5, -127.0f, 127.0f, true) + ", float[8] ws = " +
                              literal(8, 6, 0.001f, 0.01f) + ", int8[8] wz = " + literal(8, 7, -3.0f, 3.0f, true);
  Graph rows = parse_graph(projection_model("  w = DequantizeLinear<axis = 0>(wq, ws, wz)\n  packed = Add(b, mm)\n",
                                            kQkv, "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v", per_row));
  EXPECT_EQ(count_ops(run_passes(rows, {"split_sliced_projection"}), "Slice"), 3);
  Graph shared = parse_graph(projection_model(
      "  w = DequantizeLinear<axis = 1>(wq, ws, wz)\n  packed = Add(b, mm)\n  other = MatMul(x, w)\n", kQkv,
      "float[2,5,8] q, float[2,5,8] k, float[2,5,8] v, float[2,5,24] other", per_column));
  EXPECT_EQ(count_ops(run_passes(shared, {"split_sliced_projection"}), "Slice"), 3);
}

// As torch.onnx exports nn.MultiheadAttention: the Slice bounds computed from the packed value's
// Shape. The float pipeline evaluates them first, then splits; nothing is left to slice (and each
// MatMul takes its share of the bias: fuse_float_matmul_bias).
TEST(SplitSlicedProjection, BoundsComputedFromShapeSplitInThePipeline) {
  Graph graph = parse_graph(projection_model(
      "  packed = Add(b, mm)\n",
      "  s = Shape(packed)\n  n = Gather<axis = 0>(s, last)\n  three = Constant<value = int64[1] {3}>()\n"
      "  e = Div(n, three)\n  e2 = Mul(e, two)\n  e3 = Mul(e, three)\n"
      "  q = Slice(packed, zero, e, last)\n  k = Slice(packed, e, e2, last)\n  v = Slice(packed, e2, e3, last)\n"));
  Graph optimized = run_passes(graph, {}, /*float_only=*/true);
  EXPECT_EQ(count_ops(optimized, "Slice"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "FusedMatMul"), 3) << op_sequence(optimized);
  expect_same_outputs(graph, optimized, random_inputs(graph, 32), 1e-6, 1e-6);
}

}  // namespace
}  // namespace qdqrt::testing
