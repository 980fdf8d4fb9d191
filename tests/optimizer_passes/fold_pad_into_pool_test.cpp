// fold_pad_into_pool: a constant-zero Pad of H and W before an AveragePool becomes the pool's pads
// (count_include_pad=1), bit-identical to the reference on the original graph; every case where
// the two differ keeps the Pad (must not fire), with the reason the selector gives.
#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ops/pool.h"
#include "optimizer/passes/fold_pad_into_pool.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

struct PadPool {
  std::string shape = "1,3,7,9";
  std::string pads = "0, 0, 1, 1, 0, 0, 1, 1";  // Pad's [begin..., end...]
  std::string pool = "kernel_shape = [3, 3]";   // AveragePool attributes
  std::string pad_attributes = "mode = \"constant\"";
  std::string extra_inputs;                     // ", value" / ", value, axes"
  std::string extra_initializers;
  int opset = 13;
};

std::string model(const PadPool& m) {
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : {}]>
    g (float[{}] x) => (float[o0,o1,o2,o3] y)
    <int64[{}] pads = {{{}}}{}>
    {{
      p = Pad<{}>(x, pads{})
      y = AveragePool<{}>(p)
    }})",
                     m.opset, m.shape, std::count(m.pads.begin(), m.pads.end(), ',') + 1, m.pads, m.extra_initializers,
                     m.pad_attributes, m.extra_inputs, m.pool);
}

const Node* find_op(const Graph& graph, const std::string& op_type) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == op_type) return &node;
  }
  return nullptr;
}

// Folds: only the pool is left, with `pads` and count_include_pad `count`; outputs bit-identical.
void expect_folds(const PadPool& m, const std::vector<int64_t>& pads, bool count) {
  SCOPED_TRACE(model(m));
  Graph graph = parse_graph(model(m));
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_pad_into_pool"});
  ASSERT_EQ(op_sequence(rewritten), "AveragePool");
  const auto& attributes = rewritten.nodes[0].attrs<AveragePoolAttributes>();
  EXPECT_EQ(attributes.pads, pads);
  EXPECT_EQ(attributes.count_include_pad, count);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 41), 0.0, 0.0);
}

// Keeps the Pad; the selector names why (`reason` is part of it).
void expect_kept(const PadPool& m, const std::string& reason) {
  SCOPED_TRACE(model(m));
  Graph graph = parse_graph(model(m));
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_pad_into_pool"});
  EXPECT_EQ(op_sequence(rewritten), "Pad,AveragePool");
  optimizer::ValueIndex index(rewritten);
  const optimizer::PadPoolSelection selection = optimizer::select_pad_pool_fold(rewritten, index, 1);
  EXPECT_FALSE(selection.fold.has_value());
  EXPECT_NE(selection.reason.find(reason), std::string::npos) << selection.reason;
}

TEST(FoldPadIntoPool, InceptionPoolBranchBecomesCountIncludePadPads) {
  // torch.onnx's avg_pool2d(x, 3, stride=1, padding=1): Pad 1 on H and W, then a pool without pads.
  expect_folds({}, {1, 1, 1, 1}, true);
}

TEST(FoldPadIntoPool, AllZeroPadIsDroppedAndThePoolKeepsItsCount) {
  // DenseNet's transition: an all-zero Pad before a 2x2 stride-2 pool (count_include_pad stays 0).
  PadPool m;
  m.shape = "1,4,9,7";
  m.pads = "0, 0, 0, 0, 0, 0, 0, 0";
  m.pool = "kernel_shape = [2, 2], strides = [2, 2]";
  expect_folds(m, {0, 0, 0, 0}, false);
}

TEST(FoldPadIntoPool, PoolPadsCountedAddToThePads) {
  PadPool m;
  m.pads = "0, 0, 2, 0, 0, 0, 1, 3";
  m.pool = "kernel_shape = [3, 2], pads = [1, 1, 0, 1], count_include_pad = 1, strides = [2, 1]";
  expect_folds(m, {3, 1, 1, 4}, true);
}

TEST(FoldPadIntoPool, RandomShapesStridesAndPadsMatchBitForBit) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 24; ++trial) {
    PadPool m;
    const int height = 1 + static_cast<int>(rng() % 13), width = 1 + static_cast<int>(rng() % 17);
    const int channels = 1 + static_cast<int>(rng() % 5);
    const int top = static_cast<int>(rng() % 3), left = static_cast<int>(rng() % 3);
    const int bottom = static_cast<int>(rng() % 3), right = static_cast<int>(rng() % 3);
    const int kernel_h = 1 + static_cast<int>(rng() % 3), kernel_w = 1 + static_cast<int>(rng() % 4);
    if (height + top + bottom < kernel_h || width + left + right < kernel_w) continue;
    const int stride_h = 1 + static_cast<int>(rng() % 3), stride_w = 1 + static_cast<int>(rng() % 2);
    m.shape = fmt::format("2,{},{},{}", channels, height, width);
    m.pads = fmt::format("0, 0, {}, {}, 0, 0, {}, {}", top, left, bottom, right);
    m.pool = fmt::format("kernel_shape = [{}, {}], strides = [{}, {}]", kernel_h, kernel_w, stride_h, stride_w);
    const bool any = top + left + bottom + right > 0;
    expect_folds(m, {top, left, bottom, right}, any);
  }
}

TEST(FoldPadIntoPool, OpsetEighteenAxesAndAnExplicitZeroValue) {
  PadPool m;
  m.opset = 18;
  m.pads = "1, 2, 0, 1";
  m.extra_initializers = ", float value = {0.0}, int64[2] axes = {2, 3}";
  m.extra_inputs = ", value, axes";
  m.pool = "kernel_shape = [2, 3]";
  expect_folds(m, {1, 2, 0, 1}, true);
}

TEST(FoldPadIntoPool, CeilModeFoldsOnlyWhereTheWindowsStayTheSame) {
  PadPool m;
  m.shape = "1,2,7,7";
  m.pool = "kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1";
  expect_folds(m, {1, 1, 1, 1}, true);  // 9 = 3 + 2 * 3: no partial window either way
  m.shape = "1,2,8,8";
  expect_folds(m, {1, 1, 1, 1}, true);  // a partial last window in both, over the same taps
  // A window that would start in the Pad's end zeros: input before the fold, so ceil_mode keeps
  // it; pads after, where the last window must start inside the input or its begin pad.
  m.shape = "1,2,6,6";
  m.pads = "0, 0, 0, 0, 0, 0, 3, 3";
  m.pool = "kernel_shape = [1, 1], strides = [4, 4], ceil_mode = 1";
  expect_kept(m, "ceil_mode places 3 windows");
}

TEST(FoldPadIntoPool, MustNotFire) {
  PadPool nonzero;
  nonzero.extra_initializers = ", float value = {1.5}";
  nonzero.extra_inputs = ", value";
  expect_kept(nonzero, "pads with 1.5");

  PadPool reflect;
  reflect.pad_attributes = "mode = \"reflect\"";
  expect_kept(reflect, "not a constant-mode Pad");

  PadPool channel;
  channel.pads = "0, 1, 1, 1, 0, 0, 1, 1";
  expect_kept(channel, "batch or channel");

  PadPool crop;
  crop.pads = "0, 0, -1, 0, 0, 0, 1, 1";
  expect_kept(crop, "negative pad");

  PadPool excluded;
  excluded.pool = "kernel_shape = [3, 3], pads = [1, 0, 1, 0]";  // count_include_pad = 0
  expect_kept(excluded, "count_include_pad=0");

  PadPool same;
  same.pool = "kernel_shape = [3, 3], auto_pad = \"SAME_UPPER\"";
  expect_kept(same, "SAME_");
}

TEST(FoldPadIntoPool, RuntimePadsStay) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x, int64[8] pads) => (float[o0,o1,o2,o3] y)
    {
      p = Pad(x, pads)
      y = AveragePool<kernel_shape = [3, 3]>(p)
    })");
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_pad_into_pool"});
  EXPECT_EQ(op_sequence(rewritten), "Pad,AveragePool");
  optimizer::ValueIndex index(rewritten);
  EXPECT_NE(optimizer::select_pad_pool_fold(rewritten, index, 1).reason.find("run time"), std::string::npos);
}

// A Pad another node also reads stays for it; the pool reads the Pad's input.
TEST(FoldPadIntoPool, PadWithAnotherReaderStaysForIt) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,5,5] x) => (float[1,2,5,5] y, float[1,2,7,7] z)
    <int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}>
    {
      p = Pad(x, pads)
      y = AveragePool<kernel_shape = [3, 3]>(p)
      z = Relu(p)
    })");
  Graph rewritten = run_passes(graph, {"fold_constants", "fold_pad_into_pool"});
  EXPECT_EQ(op_sequence(rewritten), "Pad,AveragePool,Relu");
  EXPECT_EQ(find_op(rewritten, "AveragePool")->inputs[0], "x");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 43), 0.0, 0.0);
}

// Between Q/DQ the folded pool is what the pool fusion takes: one QAveragePool, no Pad, and the
// int8 output equal to the reference on the original graph.
TEST(FoldPadIntoPool, QuantizedPoolBecomesOneInt8Layer) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,6,5] x) => (uint8[2,3,6,5] y)
    <float s = {0.03}, uint8 z = {128}, float so = {0.02}, uint8 zo = {120}, int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}>
    {
      xq = QuantizeLinear(x, s, z)
      xd = DequantizeLinear(xq, s, z)
      p = Pad(xd, pads)
      a = AveragePool<kernel_shape = [3, 3]>(p)
      y = QuantizeLinear(a, so, zo)
    })");
  Graph optimized = graph;
  ASSERT_TRUE(optimizer::optimize(optimized).ok());
  EXPECT_EQ(count_ops(optimized, "Pad"), 0) << op_sequence(optimized);
  EXPECT_EQ(count_ops(optimized, "QAveragePool"), 1) << op_sequence(optimized);
  expect_same_outputs(graph, optimized, random_inputs(graph, 44), 0.0, 0.0, 0);
}

}  // namespace
}  // namespace qdqrt::testing
