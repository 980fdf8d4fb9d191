// lower_pool3d: each 3-D pool form becomes 2-D pools over reshaped views computing what the
// reference 3-D pool computes; what the lowering cannot express stays a 3-D pool (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// One pool of [1, 3, T, 6, 5]; `attributes` inside <>.
std::string pool3d_model(const std::string& op, int frames, const std::string& attributes, const std::string& y,
                         int opset = 13) {
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (float[1,3," +
         std::to_string(frames) + ",6,5] x) => (float" + y + " y)\n{\n  p = " + op + "<" + attributes +
         ">(x)\n  y = Identity(p)\n}\n";
}

struct Form {
  const char* what;
  const char* op;
  int frames;
  const char* attributes;
  const char* y;
  const char* ops;  // the lowered graph's op sequence
};

TEST(LowerPool3d, EveryFormBecomes2dPoolsAndMatchesTheReference) {
  const char* both = "Reshape,{op},Reshape,{op},Reshape,Identity";
  const char* spatial = "Reshape,{op},Reshape,Identity";
  const Form forms[] = {
      {"3x3x3, stride 1, padded (S3D's branch pool)", "MaxPool", 4,
       "kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]", "[1,3,4,6,5]", both},
      {"1x3x3, spatial stride 2 (S3D's stem pools)", "MaxPool", 4,
       "kernel_shape = [1, 3, 3], strides = [1, 2, 2], pads = [0, 1, 1, 0, 1, 1]", "[1,3,4,3,3]", spatial},
      {"2x2x2, stride 2", "MaxPool", 4, "kernel_shape = [2, 2, 2], strides = [2, 2, 2]", "[1,3,2,3,2]", both},
      {"3x3x3, stride 2, ceil_mode", "MaxPool", 4,
       "kernel_shape = [3, 3, 3], strides = [2, 2, 2], pads = [1, 1, 1, 1, 1, 1], ceil_mode = 1", "[1,3,3,4,3]", both},
      {"temporal only", "MaxPool", 5, "kernel_shape = [3, 1, 1], pads = [1, 0, 0, 1, 0, 0]", "[1,3,5,6,5]",
       "Reshape,{op},Reshape,Identity"},
      {"dilated", "MaxPool", 4, "kernel_shape = [2, 2, 2], dilations = [2, 1, 2]", "[1,3,2,5,3]", both},
      {"auto_pad VALID", "MaxPool", 4, "kernel_shape = [2, 2, 2], auto_pad = \"VALID\"", "[1,3,3,5,4]", both},
      {"average 2x3x3, no pads (S3D's head)", "AveragePool", 4, "kernel_shape = [2, 3, 3]", "[1,3,3,4,3]", both},
      {"average, pads not counted", "AveragePool", 4,
       "kernel_shape = [3, 3, 3], strides = [2, 2, 2], pads = [1, 1, 1, 1, 1, 1]", "[1,3,2,3,3]", both},
      {"average, pads counted", "AveragePool", 4,
       "kernel_shape = [3, 3, 3], strides = [2, 2, 2], pads = [1, 1, 1, 1, 1, 1], count_include_pad = 1",
       "[1,3,2,3,3]", both},
      {"average, ceil_mode, pads not counted", "AveragePool", 4,
       "kernel_shape = [3, 3, 3], strides = [2, 2, 2], pads = [1, 1, 1, 1, 1, 1], ceil_mode = 1", "[1,3,3,4,3]", both},
      {"average, ceil_mode, pads counted", "AveragePool", 4,
       "kernel_shape = [3, 3, 3], strides = [2, 2, 2], pads = [1, 1, 1, 1, 1, 1], ceil_mode = 1, count_include_pad = 1",
       "[1,3,3,4,3]", both},
      {"average, one tap everywhere", "AveragePool", 4, "kernel_shape = [1, 1, 1]", "[1,3,4,6,5]",
       "Reshape,Identity"},
  };
  for (const Form& form : forms) {
    SCOPED_TRACE(form.what);
    Graph graph = parse_graph(pool3d_model(form.op, form.frames, form.attributes, form.y));
    Graph rewritten = run_passes(graph, {"lower_pool3d"});
    std::string ops = form.ops;
    for (size_t at = ops.find("{op}"); at != std::string::npos; at = ops.find("{op}")) ops.replace(at, 4, form.op);
    EXPECT_EQ(op_sequence(rewritten), ops);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 31), 1e-6, 1e-6);
    const ValueInfo* y = rewritten.find_value("y");
    ASSERT_NE(y, nullptr);
    ASSERT_TRUE(y->static_shape().has_value());
    // One 2-D pool keeps the 3-D pool's name (profiles and inspect name the file's node).
    if (std::string(form.ops) != "Reshape,Identity") {
      int named = 0;
      for (const Node& node : rewritten.nodes) named += node.op_type == form.op && node.name == graph.nodes[0].name;
      EXPECT_EQ(named, 1);
    }
  }
}

// Between Q/DQ the whole pipeline runs both 2-D max pools on int8 values (max pooling of codes is
// exact).
TEST(LowerPool3d, QuantizedMaxPoolRunsOnInt8) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,6,5] x) => (float[1,3,4,6,5] y)
    <float s = {0.02}, int8 z = {0}>
    {
      xq = QuantizeLinear(x, s, z)
      xd = DequantizeLinear(xq, s, z)
      p = MaxPool<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(xd)
      pq = QuantizeLinear(p, s, z)
      y = DequantizeLinear(pq, s, z)
    })");
  Graph optimized = graph;
  ASSERT_TRUE(optimizer::optimize(optimized).ok());
  EXPECT_EQ(op_sequence(optimized), "QuantizeLinear,Reshape,MaxPool,Reshape,MaxPool,Reshape,DequantizeLinear");
  for (const Node& node : optimized.nodes) {
    if (node.op_type != "MaxPool") continue;
    const ValueInfo* input = optimized.find_value(node.input(0));
    ASSERT_NE(input, nullptr);
    EXPECT_EQ(input->dtype, DataType::kInt8) << node.name;
  }
  expect_same_outputs(graph, optimized, random_inputs(graph, 32), 0.0, 0.0);
}

TEST(LowerPool3d, MustNotFire) {
  struct Kept {
    const char* what;
    std::string model;
    const char* ops;
  };
  const Kept kept[] = {
      {"a 2-D pool",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,6,5] x) => (float[1,3,6,5] y)\n"
       "{\n  y = MaxPool<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x)\n}\n",
       "MaxPool"},
      {"the Indices output (flat offsets into the 3-D input)",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,4,6,5] x) => (float[1,3,4,6,5] y, int64[1,3,4,6,5] i)\n"
       "{\n  y, i = MaxPool<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(x)\n}\n",
       "MaxPool"},
      {"a dynamic frame count (the Reshapes would bake it)",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,T,6,5] x) => (float[1,3,T,6,5] y)\n"
       "{\n  y = MaxPool<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(x)\n}\n",
       "MaxPool"},
      {"auto_pad SAME_UPPER",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,4,6,5] x) => (float[1,3,4,6,5] y)\n"
       "{\n  y = AveragePool<kernel_shape = [3, 3, 3], auto_pad = \"SAME_UPPER\">(x)\n}\n",
       "AveragePool"},
      {"a global pool",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,4,6,5] x) => (float[1,3,1,1,1] y)\n"
       "{\n  y = GlobalAveragePool(x)\n}\n",
       "GlobalAveragePool"},
  };
  for (const Kept& form : kept) {
    SCOPED_TRACE(form.what);
    Graph rewritten = run_passes(parse_graph(form.model), {"lower_pool3d"});
    EXPECT_EQ(op_sequence(rewritten), form.ops);
  }
}

}  // namespace
}  // namespace qdqrt::testing
