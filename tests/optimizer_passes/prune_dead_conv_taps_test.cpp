// prune_dead_conv_taps: kernel rows and columns of a Conv that read only padding for every output
// pixel are sliced out of the weight, with the pads moved; outputs equal to the reference on the
// original graph (float and QDQ), and every case where the rewrite is not exact or not valid keeps
// the Conv as it was (must not fire), with the reason the selector gives.
#include <fmt/format.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ops/conv.h"
#include "optimizer/passes/prune_dead_conv_taps.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

struct FloatConv {
  std::string input = "1,3,6,6";
  std::string output = "o0,o1,o2,o3";
  std::string kernel = "3,3";   // weight spatial dims
  int out_channels = 4;
  int weight_channels = 3;      // C / group
  std::string attributes = "dilations = [6, 6], pads = [6, 6, 6, 6]";
};

int product(const std::string& dims) {
  int result = 1;
  for (size_t at = 0; at < dims.size();) {
    size_t end = dims.find(',', at);
    if (end == std::string::npos) end = dims.size();
    result *= std::stoi(dims.substr(at, end - at));
    at = end + 1;
  }
  return result;
}

std::string float_model(const FloatConv& m) {
  const int count = m.out_channels * m.weight_channels * product(m.kernel);
  const std::string values = literal(count, 5, -1.0f, 1.0f);
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[{}] x) => (float[{}] y)
    <float[{},{},{}] w = {}, float[{}] b = {}>
    {{
      y = Conv<{}>(x, w, b)
    }})",
                     m.input, m.output, m.out_channels, m.weight_channels, m.kernel, values, m.out_channels,
                     literal(m.out_channels, 6, -0.5f, 0.5f), m.attributes);
}

const Node& only_conv(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == "Conv") return node;
  }
  ADD_FAILURE() << "no Conv";
  return graph.nodes.front();
}

Shape weight_shape(const Graph& graph) {
  const Node& conv = only_conv(graph);
  std::string weight = conv.input(1);
  for (const Node& node : graph.nodes) {
    if (node.outputs[0] == weight && node.op_type == "DequantizeLinear") weight = node.input(0);
  }
  const Tensor* tensor = graph.find_initializer(weight);
  return tensor == nullptr ? Shape{} : tensor->shape();
}

// Prunes to `kernel` taps with `pads`; outputs equal to the original graph's.
void expect_pruned(const std::string& text, const Shape& kernel, const std::vector<int64_t>& pads) {
  SCOPED_TRACE(text);
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations", "prune_dead_conv_taps"});
  const Shape shape = weight_shape(rewritten);
  ASSERT_EQ(shape.size(), kernel.size() + 2);
  EXPECT_EQ(Shape(shape.begin() + 2, shape.end()), kernel);
  const auto& attributes = only_conv(rewritten).attrs<ConvAttributes>();
  EXPECT_EQ(attributes.kernel_shape, std::vector<int64_t>(kernel.begin(), kernel.end()));
  EXPECT_EQ(attributes.pads, pads);
  // Only zero products are left out: the sums are the same.
  expect_same_outputs(graph, rewritten, random_inputs(graph, 11), 0.0, 0.0);
}

// Keeps every tap; the selector names why (`reason` is part of it; empty: nothing to drop).
void expect_kept(const std::string& text, const std::string& reason) {
  SCOPED_TRACE(text);
  Graph graph = parse_graph(text);
  Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations", "prune_dead_conv_taps"});
  EXPECT_EQ(weight_shape(rewritten), weight_shape(graph));
  optimizer::ValueIndex index(rewritten);
  int conv = 0;
  while (rewritten.nodes[static_cast<size_t>(conv)].op_type != "Conv") ++conv;
  const optimizer::ConvTapSelection selection = optimizer::select_conv_tap_pruning(rewritten, index, conv);
  EXPECT_FALSE(selection.pruning.has_value());
  EXPECT_NE(selection.reason.find(reason), std::string::npos) << selection.reason;
  if (reason.empty()) {
    EXPECT_EQ(selection.reason, "");
  }
}

TEST(PruneDeadConvTaps, AsppDilationPastTheMapBecomesOneByOne) {
  // DeepLabV3's ASPP branch at dilation 24 on a 24x24 map, scaled down: dilation 6 on 6x6.
  expect_pruned(float_model({}), {1, 1}, {0, 0, 0, 0});
}

TEST(PruneDeadConvTaps, DilationThatReachesSomePixelsKeepsItsTaps) {
  FloatConv m;
  m.attributes = "dilations = [3, 3], pads = [3, 3, 3, 3]";  // y - 3 is inside for y >= 3
  expect_kept(float_model(m), "");
}

TEST(PruneDeadConvTaps, OneSideOfOneAxis) {
  // H: taps at -4.. -3 read padding only, taps 1 and 2 read rows; W: an ordinary 3x3 window.
  FloatConv m;
  m.attributes = "dilations = [4, 1], pads = [4, 1, 0, 1]";
  expect_pruned(float_model(m), {2, 3}, {0, 1, 0, 1});
}

TEST(PruneDeadConvTaps, StridedAndOneDimensional) {
  FloatConv strided;
  strided.input = "2,3,5,7";
  strided.attributes = "dilations = [5, 1], pads = [5, 1, 5, 1], strides = [2, 2]";
  expect_pruned(float_model(strided), {1, 3}, {0, 1, 0, 1});

  FloatConv conv1d;
  conv1d.input = "1,3,5";
  conv1d.output = "o0,o1,o2";
  conv1d.kernel = "3";
  conv1d.attributes = "dilations = [5], pads = [5, 5]";
  expect_pruned(float_model(conv1d), {1}, {0, 0});
}

TEST(PruneDeadConvTaps, SymbolicBatch) {
  FloatConv m;
  m.input = "n,3,6,6";
  Graph graph = parse_graph(float_model(m));
  Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations", "prune_dead_conv_taps"});
  EXPECT_EQ(weight_shape(rewritten), (Shape{4, 3, 1, 1}));
}

TEST(PruneDeadConvTaps, GroupedAndDepthwise) {
  FloatConv depthwise;
  depthwise.out_channels = 3;
  depthwise.weight_channels = 1;
  depthwise.attributes = "dilations = [6, 6], pads = [6, 6, 6, 6], group = 3";
  expect_pruned(float_model(depthwise), {1, 1}, {0, 0, 0, 0});
}

TEST(PruneDeadConvTaps, RandomGeometriesMatchTheReference) {
  std::mt19937 rng(17);
  int pruned = 0;
  for (int trial = 0; trial < 40; ++trial) {
    FloatConv m;
    const int height = 1 + static_cast<int>(rng() % 9), width = 1 + static_cast<int>(rng() % 9);
    const int kh = 1 + static_cast<int>(rng() % 3), kw = 1 + static_cast<int>(rng() % 3);
    const int dh = 1 + static_cast<int>(rng() % 8), dw = 1 + static_cast<int>(rng() % 8);
    const int sh = 1 + static_cast<int>(rng() % 3), sw = 1 + static_cast<int>(rng() % 2);
    const int pt = static_cast<int>(rng() % 10), pl = static_cast<int>(rng() % 10);
    const int pb = static_cast<int>(rng() % 10), pr = static_cast<int>(rng() % 10);
    if (height + pt + pb < (kh - 1) * dh + 1 || width + pl + pr < (kw - 1) * dw + 1) continue;
    m.input = fmt::format("1,3,{},{}", height, width);
    m.kernel = fmt::format("{},{}", kh, kw);
    m.attributes = fmt::format("dilations = [{}, {}], pads = [{}, {}, {}, {}], strides = [{}, {}]", dh, dw, pt, pl,
                               pb, pr, sh, sw);
    const std::string text = float_model(m);
    SCOPED_TRACE(text);
    Graph graph = parse_graph(text);
    Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations", "prune_dead_conv_taps"});
    if (weight_shape(rewritten) != weight_shape(graph)) ++pruned;
    expect_same_outputs(graph, rewritten, random_inputs(graph, 12), 0.0, 0.0);
  }
  EXPECT_GT(pruned, 5);  // the trials reach the pass
}

std::string qdq_model(const std::string& weight_axis, int pad) {
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,6,6] x) => (float[1,3,6,6] y)
    <int8[3,2,3,3] wq = {}, float[3] ws = {{0.02, 0.03, 0.01}}, int8[3] wzp = {{0, 0, 0}},
     float xs = {{0.05}}, uint8 xzp = {{128}}, float ys = {{0.1}}, uint8 yzp = {{120}}, float[3] b = {{0.1, -0.2, 0.05}}>
    {{
      xq = QuantizeLinear(x, xs, xzp)
      xd = DequantizeLinear(xq, xs, xzp)
      w = DequantizeLinear<axis = {}>(wq, ws, wzp)
      c = Conv<dilations = [{}, {}], pads = [{}, {}, {}, {}]>(xd, w, b)
      yq = QuantizeLinear(c, ys, yzp)
      y = DequantizeLinear(yq, ys, yzp)
    }})",
                     literal(54, 8, -127.0f, 127.0f, true), weight_axis, pad, pad, pad, pad, pad, pad);
}

TEST(PruneDeadConvTaps, QuantizedWeightIsSlicedWithItsPerChannelScales) {
  expect_pruned(qdq_model("0", 6), {1, 1}, {0, 0, 0, 0});
}

TEST(PruneDeadConvTaps, MustNotFire) {
  // A weight quantized per index of a spatial axis (its scales would need slicing too).
  expect_kept(qdq_model("2", 6), "spatial axis 2");
  // SAME_UPPER pads follow the input size.
  {
    FloatConv m;
    m.attributes = "dilations = [6, 6], auto_pad = \"SAME_UPPER\"";
    expect_kept(float_model(m), "auto_pad SAME_*");
  }
  // A dropped weight that is not finite: inf times a padding zero is NaN in the original.
  {
    Graph graph = parse_graph(float_model({}));
    graph.initializers.at("w").data<float>()[0] = std::numeric_limits<float>::infinity();  // tap (0, 0)
    Graph rewritten = run_passes(graph, {"fold_constants", "evaluate_shape_computations", "prune_dead_conv_taps"});
    EXPECT_EQ(weight_shape(rewritten), weight_shape(graph));
    optimizer::ValueIndex index(rewritten);
    const optimizer::ConvTapSelection selection = optimizer::select_conv_tap_pruning(rewritten, index, 0);
    EXPECT_FALSE(selection.pruning.has_value());
    EXPECT_NE(selection.reason.find("not finite"), std::string::npos) << selection.reason;
  }
  // The spatial size is not known at build.
  {
    FloatConv m;
    m.input = "1,3,h,w";
    expect_kept(float_model(m), "not known at build");
  }
  // A weight two Convs read.
  {
    const std::string text = R"(
      <ir_version: 8, opset_import: ["" : 13]>
      g (float[1,3,6,6] x) => (float[1,4,6,6] y, float[1,4,6,6] z)
      <float[4,3,3,3] w = )" + literal(108, 5, -1.0f, 1.0f) + R"(>
      {
        y = Conv<dilations = [6, 6], pads = [6, 6, 6, 6]>(x, w)
        z = Conv<pads = [1, 1, 1, 1]>(x, w)
      })";
    expect_kept(text, "read by other nodes");
  }
}

}  // namespace
}  // namespace qdqrt::testing
