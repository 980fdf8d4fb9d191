// lower_conv3d: each 3-D convolution form becomes the 2-D conv over frames computing what the
// reference Conv kernel computes; what the lowering cannot express stays a 3-D Conv (must not fire).
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// One Conv of [1, 3, T, 6, 5] with a random [4, 3, kt, kh, kw] weight and bias; `attributes` inside <>.
std::string conv3d_model(int frames, const std::string& kernel, const std::string& attributes, const std::string& y,
                         bool relu = false, int opset = 13) {
  const int kt = kernel[0] - '0', kh = kernel[2] - '0', kw = kernel[4] - '0';
  const int weights = 4 * 3 * kt * kh * kw;
  return "<ir_version: 8, opset_import: [\"\" : " + std::to_string(opset) + "]>\ng (float[1,3," +
         std::to_string(frames) + ",6,5] x) => (float" + y + " y)\n<float[4,3," + std::to_string(kt) + "," +
         std::to_string(kh) + "," + std::to_string(kw) + "] w = " + literal(weights, 5, -1.0f, 1.0f) +
         ", float[4] b = " + literal(4, 6, -0.5f, 0.5f) + ">\n{\n  c = Conv<kernel_shape = [" + kernel.substr(0, 1) +
         ", " + kernel.substr(2, 1) + ", " + kernel.substr(4, 1) + "]" + (attributes.empty() ? "" : ", " + attributes) +
         ">(x, w, b)\n" + (relu ? "  y = Relu(c)\n" : "  y = Identity(c)\n") + "}\n";
}

struct Form {
  const char* what;
  int frames;
  const char* kernel;  // "kt,kh,kw"
  const char* attributes;
  const char* y;
  const char* ops;  // the lowered graph's op sequence
};

TEST(LowerConv3d, EveryFormBecomesA2dConvAndMatchesTheReference) {
  const Form forms[] = {
      {"3x3x3, padded", 4, "3,3,3", "pads = [1, 1, 1, 1, 1, 1]", "[1,4,4,6,5]",
       "Transpose,Reshape,Pad,Slice,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose,Identity"},
      {"3x7x7 stem, spatial stride", 4, "3,7,7", "strides = [1, 2, 2], pads = [1, 3, 3, 1, 3, 3]", "[1,4,4,3,3]",
       "Transpose,Reshape,Pad,Slice,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose,Identity"},
      {"temporal 3x1x1: a 2-D conv over [T, H*W]", 4, "3,1,1", "pads = [1, 0, 0, 1, 0, 0]", "[1,4,4,6,5]",
       "Reshape,Conv,Reshape,Identity"},
      {"temporal, strided and dilated", 7, "2,1,1", "strides = [2, 1, 1], dilations = [3, 1, 1]", "[1,4,2,6,5]",
       "Reshape,Conv,Reshape,Identity"},
      {"spatial 1x3x3: frames as images", 4, "1,3,3", "pads = [0, 1, 1, 0, 1, 1]", "[1,4,4,6,5]",
       "Transpose,Reshape,Conv,Reshape,Transpose,Identity"},
      {"1x1x1 downsample, stride 2", 4, "1,1,1", "strides = [2, 2, 2]", "[1,4,2,3,3]",
       "Transpose,Slice,Reshape,Conv,Reshape,Transpose,Identity"},
      {"temporal stride, dilation and uneven padding", 7, "3,3,3",
       "strides = [2, 1, 1], dilations = [2, 1, 1], pads = [2, 1, 1, 1, 1, 1]", "[1,4,3,6,5]",
       "Transpose,Reshape,Pad,Slice,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose,Identity"},
      // One frame: the first and last temporal taps read only padding; the middle one is left.
      {"one frame, dead taps", 1, "3,3,3", "pads = [1, 1, 1, 1, 1, 1]", "[1,4,1,6,5]",
       "Transpose,Reshape,Conv,Reshape,Transpose,Identity"},
      {"two frames, stride 2: the first tap dead", 2, "3,3,3", "strides = [2, 1, 1], pads = [1, 1, 1, 1, 1, 1]",
       "[1,4,1,6,5]", "Transpose,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose,Identity"},
      {"auto_pad VALID", 4, "2,2,2", "auto_pad = \"VALID\"", "[1,4,3,5,4]",
       "Transpose,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose,Identity"},
  };
  for (const Form& form : forms) {
    SCOPED_TRACE(form.what);
    Graph graph = parse_graph(conv3d_model(form.frames, form.kernel, form.attributes, form.y));
    Graph rewritten = run_passes(graph, {"lower_conv3d"});
    EXPECT_EQ(op_sequence(rewritten), form.ops);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 21), 1e-5, 1e-5);
    const ValueInfo* y = rewritten.find_value("y");
    ASSERT_NE(y, nullptr);
    ASSERT_TRUE(y->static_shape().has_value());
    // The 2-D conv keeps the 3-D conv's name (profiles and inspect name the file's node).
    int named = 0;
    for (const Node& node : rewritten.nodes) named += node.op_type == "Conv" && node.name == graph.nodes[0].name;
    EXPECT_EQ(named, 1);
  }
}

// One grouped Conv of [1, channels, T, 6, 5] to `out` channels in `groups` groups, random weight
// [out, channels/groups, kt, kh, kw], no bias (MViT's attention pooling has none).
std::string grouped_conv3d_model(int channels, int out, int groups, int frames, const std::string& kernel,
                                 const std::string& attributes, const std::string& y) {
  const int kt = kernel[0] - '0', kh = kernel[2] - '0', kw = kernel[4] - '0';
  const int per_group = channels / groups;
  return "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1," + std::to_string(channels) + "," +
         std::to_string(frames) + ",6,5] x) => (float" + y + " y)\n<float[" + std::to_string(out) + "," +
         std::to_string(per_group) + "," + std::to_string(kt) + "," + std::to_string(kh) + "," + std::to_string(kw) +
         "] w = " + literal(out * per_group * kt * kh * kw, 8, -1.0f, 1.0f) + ">\n{\n  y = Conv<kernel_shape = [" +
         kernel.substr(0, 1) + ", " + kernel.substr(2, 1) + ", " + kernel.substr(4, 1) +
         "], group = " + std::to_string(groups) + (attributes.empty() ? "" : ", " + attributes) + ">(x, w)\n}\n";
}

// Grouped and depthwise 3-D convs: each group's taps stacked on its own channels, the 2-D conv
// keeps the group count.
TEST(LowerConv3d, GroupedAndDepthwiseConvsKeepTheirGroups) {
  struct Grouped {
    const char* what;
    int channels, out, groups, frames;
    const char* kernel;
    const char* attributes;
    const char* y;
    const char* ops;
  };
  const Grouped forms[] = {
      // Depthwise: channels-last frames, the taps' rows interleaved, one depthwise conv of 3*3 x 3 rows.
      {"depthwise 3x3x3, spatial stride 2 (MViT's query pooling)", 6, 6, 6, 4, "3,3,3",
       "strides = [1, 2, 2], pads = [1, 1, 1, 1, 1, 1]", "[1,6,4,3,3]",
       "Transpose,Reshape,Pad,Reshape,Slice,Slice,Slice,Concat,Reshape,Transpose,Conv,Transpose,Reshape,Transpose"},
      {"depthwise 3x3x3, spatial stride 4 (key/value pooling)", 4, 4, 4, 4, "3,3,3",
       "strides = [1, 4, 4], pads = [1, 1, 1, 1, 1, 1]", "[1,4,4,2,2]",
       "Transpose,Reshape,Pad,Reshape,Slice,Slice,Slice,Concat,Reshape,Transpose,Conv,Transpose,Reshape,Transpose"},
      {"depthwise 2x3x2, temporal stride 2, uneven pads", 4, 4, 4, 3, "2,3,2",
       "strides = [2, 2, 1], pads = [1, 1, 0, 0, 2, 1]", "[1,4,2,4,5]",
       "Transpose,Reshape,Pad,Reshape,Slice,Slice,Concat,Reshape,Transpose,Conv,Transpose,Reshape,Transpose"},
      {"depthwise with a height dilation: taps stacked on the channels", 4, 4, 4, 4, "3,3,3",
       "dilations = [1, 2, 1], pads = [1, 2, 1, 1, 2, 1]", "[1,4,4,6,5]",
       "Transpose,Reshape,Pad,Reshape,Slice,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose"},
      {"2 groups of 3 channels to 2 x 2, temporal stride 2", 6, 4, 2, 5, "3,3,3",
       "strides = [2, 1, 1], pads = [1, 1, 1, 1, 1, 1]", "[1,4,3,6,5]",
       "Transpose,Reshape,Pad,Reshape,Slice,Slice,Slice,Concat,Reshape,Conv,Reshape,Transpose"},
      {"2 groups, temporal 3x1x1", 4, 6, 2, 4, "3,1,1", "pads = [1, 0, 0, 1, 0, 0]", "[1,6,4,6,5]",
       "Reshape,Conv,Reshape"},
      {"depthwise 1x3x3: frames as images, nothing stacked", 4, 4, 4, 3, "1,3,3", "pads = [0, 1, 1, 0, 1, 1]",
       "[1,4,3,6,5]", "Transpose,Reshape,Conv,Reshape,Transpose"},
  };
  for (const Grouped& form : forms) {
    SCOPED_TRACE(form.what);
    Graph graph = parse_graph(
        grouped_conv3d_model(form.channels, form.out, form.groups, form.frames, form.kernel, form.attributes, form.y));
    Graph rewritten = run_passes(graph, {"lower_conv3d"});
    EXPECT_EQ(op_sequence(rewritten), form.ops);
    expect_same_outputs(graph, rewritten, random_inputs(graph, 24), 1e-5, 1e-5);
    for (const Node& node : rewritten.nodes) {
      if (node.op_type == "Conv") EXPECT_EQ(node.attributes.at("group").i, form.groups);
    }
  }
}

// A quantized depthwise 3-D conv (per-channel int8 weight) becomes one INT8 grouped conv.
TEST(LowerConv3d, QuantizedDepthwiseConvBecomesAnInt8Conv) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,4,6,5] x) => (float[1,4,4,3,3] y)
    <float s = {0.02}, int8 z = {0}, int8[4,1,3,3,3] wq = )" +
                            literal(108, 9, -127, 127, true) + R"(, float[4] ws = {0.01, 0.02, 0.015, 0.005},
     int8[4] wz = {0, 0, 0, 0}, float so = {0.05}>
    {
      xq = QuantizeLinear(x, s, z)
      xd = DequantizeLinear(xq, s, z)
      w = DequantizeLinear<axis = 0>(wq, ws, wz)
      c = Conv<kernel_shape = [3, 3, 3], strides = [1, 2, 2], pads = [1, 1, 1, 1, 1, 1], group = 4>(xd, w)
      cq = QuantizeLinear(c, so, z)
      y = DequantizeLinear(cq, so, z)
    })");
  Graph optimized = graph;
  ASSERT_TRUE(optimizer::optimize(optimized).ok());
  EXPECT_EQ(count_ops(optimized, "Conv"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "DequantizeLinear"), 1) << op_sequence(optimized);
  expect_same_outputs(graph, optimized, random_inputs(graph, 25), 0.05 + 1e-6, 0.0);
}

// A Relu that alone reads the conv's output runs on the 2-D conv's output, before the data moves.
TEST(LowerConv3d, AReluAfterTheConvGoesBeforeTheReshape) {
  Graph graph = parse_graph(conv3d_model(4, "3,3,3", "pads = [1, 1, 1, 1, 1, 1]", "[1,4,4,6,5]", true));
  Graph rewritten = run_passes(graph, {"lower_conv3d"});
  EXPECT_EQ(op_sequence(rewritten), "Transpose,Reshape,Pad,Slice,Slice,Slice,Concat,Reshape,Conv,Relu,Reshape,Transpose");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 22), 1e-5, 1e-5);
}

// Between Q/DQ (pytorch-quantization's placement: per-tensor input, per-channel int8 weight), the
// whole pipeline leaves one INT8 conv: no float Conv, and the added ops run on int8 values.
TEST(LowerConv3d, QuantizedConvBecomesAnInt8Conv) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,3,4,6,5] x) => (float[1,4,4,6,5] y)
    <float s = {0.02}, int8 z = {0}, int8[4,3,3,3,3] wq = )" +
                            literal(324, 7, -127, 127, true) + R"(, float[4] ws = {0.01, 0.02, 0.015, 0.005},
     int8[4] wz = {0, 0, 0, 0}, float[4] b = {0.1, -0.2, 0.05, 0.0}, float so = {0.05}>
    {
      xq = QuantizeLinear(x, s, z)
      xd = DequantizeLinear(xq, s, z)
      w = DequantizeLinear<axis = 0>(wq, ws, wz)
      c = Conv<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(xd, w, b)
      r = Relu(c)
      rq = QuantizeLinear(r, so, z)
      y = DequantizeLinear(rq, so, z)
    })");
  Graph optimized = graph;
  ASSERT_TRUE(optimizer::optimize(optimized).ok());
  EXPECT_EQ(count_ops(optimized, "Conv"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "Relu"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "DequantizeLinear"), 1) << op_sequence(optimized);
  // The int32 sums are exact either way; a tie of the output quantizer may round the other way.
  expect_same_outputs(graph, optimized, random_inputs(graph, 23), 0.05 + 1e-6, 0.0);
}

TEST(LowerConv3d, MustNotFire) {
  struct Kept {
    const char* what;
    std::string model;
  };
  const std::string weight4 = literal(4 * 3 * 27, 5, -1.0f, 1.0f);
  const Kept kept[] = {
      {"a 2-D conv",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,6,5] x) => (float[1,4,6,5] y)\n<float[4,3,3,3] w = " +
           literal(108, 5, -1.0f, 1.0f) + ">\n{\n  y = Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>(x, w)\n}\n"},
      {"a weight that is an input",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,4,6,5] x, float[4,3,3,3,3] w) => (float[1,4,4,6,5] y)\n"
       "{\n  y = Conv<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(x, w)\n}\n"},
      {"auto_pad SAME_UPPER",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,4,6,5] x) => (float[1,4,4,6,5] y)\n<float[4,3,3,3,3] w = " +
           weight4 + ">\n{\n  y = Conv<kernel_shape = [3, 3, 3], auto_pad = \"SAME_UPPER\">(x, w)\n}\n"},
      {"a dynamic frame count (the Reshapes would bake it)",
       "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[1,3,T,6,5] x) => (float[1,4,T,6,5] y)\n<float[4,3,3,3,3] w = " +
           weight4 + ">\n{\n  y = Conv<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(x, w)\n}\n"},
      {"opset 10 (Pad and Slice take attributes there)",
       "<ir_version: 5, opset_import: [\"\" : 10]>\ng (float[1,3,4,6,5] x) => (float[1,4,4,6,5] y)\n<float[4,3,3,3,3] w = " +
           weight4 + ">\n{\n  y = Conv<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(x, w)\n}\n"},
  };
  for (const Kept& form : kept) {
    SCOPED_TRACE(form.what);
    Graph rewritten = run_passes(parse_graph(form.model), {"lower_conv3d"});
    EXPECT_EQ(op_sequence(rewritten), "Conv");
  }
}

}  // namespace
}  // namespace qdqrt::testing
