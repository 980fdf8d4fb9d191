// densify_grouped_conv: a QConv whose groups have 8-16 channels becomes one of fewer, wider groups
// with block-diagonal weights when the engine builds for AMX-INT8; its outputs are bit-identical
// to the reference on the original graph. Must not fire on other ISAs, depthwise or wide/narrow
// groups, or group counts no divisor merges within 64 channels (the selector names why); groups
// of uint8 activations that the grouped form takes merge only within its 16 columns.
#include <fmt/format.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/graph_utils.h"
#include "optimizer/layer_info.h"
#include "optimizer/passes/densify_grouped_conv.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

struct GroupedConv {
  int64_t channels = 48;  // in = out
  int64_t groups = 6;
  int64_t size = 6;
  bool asymmetric = false;  // uint8 activations with zero-points
};

std::string model(const GroupedConv& c) {
  const std::string type = c.asymmetric ? "uint8" : "int8";
  const int64_t group_in = c.channels / c.groups;
  const int weight_count = static_cast<int>(c.channels * group_in * 9);
  const int channels = static_cast<int>(c.channels);
  return fmt::format(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,{0},{1},{1}] x) => (float[1,{0},{1},{1}] y)
    <float xs = {{0.02}}, {2} xz = {{{3}}}, float ys = {{0.05}}, {2} yz = {{{4}}},
     int8[{0},{5},3,3] w = {6}, float[{0}] ws = {7}, int8[{0}] wz = {8}, float[{0}] b = {9}>
    {{
      xq = QuantizeLinear(x, xs, xz)
      xd = DequantizeLinear(xq, xs, xz)
      wd = DequantizeLinear <axis = 0> (w, ws, wz)
      c = Conv <pads = [1, 1, 1, 1], group = {10}> (xd, wd, b)
      r = Relu(c)
      yq = QuantizeLinear(r, ys, yz)
      y = DequantizeLinear(yq, ys, yz)
    }})",
                     c.channels, c.size, type, c.asymmetric ? 131 : 0, c.asymmetric ? 120 : 0, group_in,
                     literal(weight_count, 3, -127, 127, true), literal(channels, 5, 0.002f, 0.01f),
                     literal(channels, 7, 0, 0, true), literal(channels, 9, -0.3f, 0.3f), c.groups);
}

Graph rewrite(const Graph& graph, kernels::Isa isa) {
  Graph copy = graph;
  optimizer::OptimizeOptions options;
  options.only_passes = {"fold_constants", "fuse_qdq_conv", "densify_grouped_conv"};
  options.target_isa = isa;
  Result<optimizer::OptimizeReport> report = optimizer::optimize(copy, options);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return copy;
}

// The AMX level is a target here whether or not this CPU has it: the pass only reads the ISA
// (PassContext::isa() keeps kAmxInt8 where it is usable, so the emulated tiles stand in).
class DensifyGroupedConv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::isa_supported(kernels::Isa::kAvx512Vnni)) GTEST_SKIP() << "needs AVX-512 VNNI (AMX emulation)";
    emulation_ = kernels::amx_emulation();
    if (!kernels::amx_hardware_missing().empty()) kernels::set_amx_emulation(true);
  }
  void TearDown() override { kernels::set_amx_emulation(emulation_); }
  bool emulation_ = false;
};

const Node& only_qconv(const Graph& graph) {
  const Node* found = nullptr;
  for (const Node& node : graph.nodes) {
    if (node.op_type == layers::kQConv) {
      EXPECT_EQ(found, nullptr) << "more than one QConv";
      found = &node;
    }
  }
  EXPECT_NE(found, nullptr);
  return *found;
}

int qconv_index(const Graph& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (graph.nodes[n].op_type == layers::kQConv) return static_cast<int>(n);
  }
  return -1;
}

// Fires: the QConv has `groups` groups and weights [C][C / groups][3][3]; outputs bit-identical.
void expect_merged(const GroupedConv& c, int64_t groups) {
  SCOPED_TRACE(model(c));
  Graph graph = parse_graph(model(c));
  Graph rewritten = rewrite(graph, kernels::Isa::kAmxInt8);
  const Node& conv = only_qconv(rewritten);
  EXPECT_EQ(conv.attrs<QConvAttributes>().group, groups);
  const Tensor* weights = optimizer::find_constant(rewritten, conv.input(layers::kConvW));
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->shape(), (Shape{c.channels, c.channels / groups, 3, 3}));
  // inspect counts the model's MACs, not the zeros between the merged blocks.
  const int64_t model_macs = c.channels * c.size * c.size * (c.channels / c.groups) * 9;
  EXPECT_EQ(optimizer::compute_layer_info(rewritten, {}).summary.int8_macs, model_macs);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 41), 0.0, 0.0);
}

// Does not fire: the QConv keeps its groups; the selector's reason contains `reason`.
void expect_kept(const GroupedConv& c, kernels::Isa isa, const std::string& reason) {
  SCOPED_TRACE(model(c));
  Graph graph = parse_graph(model(c));
  Graph rewritten = rewrite(graph, isa);
  EXPECT_EQ(only_qconv(rewritten).attrs<QConvAttributes>().group, c.groups);
  const optimizer::GroupMerge merge = optimizer::select_group_merge(rewritten, qconv_index(rewritten), isa);
  EXPECT_EQ(merge.merged_groups, 0);
  EXPECT_NE(merge.reason.find(reason), std::string::npos) << merge.reason;
}

TEST_F(DensifyGroupedConv, RegNetYGroupsOfEightBecomeOneConvolution) {
  expect_merged({.channels = 48, .groups = 6}, 1);  // 6 x 8 = 48 <= 64 channels
}

TEST_F(DensifyGroupedConv, GroupsMergeIntoAtMost64Channels) {
  expect_merged({.channels = 160, .groups = 10, .size = 4}, 5);  // 16 channels per group: pairs
  expect_merged({.channels = 208, .groups = 26, .size = 4}, 13);  // 8 per group: 26 = 2 x 13
}

// uint8 activations: groups the grouped form takes merge only within its 16 columns.
TEST_F(DensifyGroupedConv, GroupsOfTheGroupedFormMergeWithin16Channels) {
  expect_merged({.channels = 48, .groups = 6, .asymmetric = true}, 3);   // 8 per group: pairs
  expect_merged({.channels = 208, .groups = 26, .size = 4, .asymmetric = true}, 13);
  expect_kept({.channels = 64, .groups = 4, .asymmetric = true}, kernels::Isa::kAmxInt8, "grouped form");
  expect_kept({.channels = 160, .groups = 10, .size = 4, .asymmetric = true}, kernels::Isa::kAmxInt8,
              "grouped form");
  expect_kept({.channels = 104, .groups = 13, .size = 4, .asymmetric = true}, kernels::Isa::kAmxInt8,
              "no divisor of its 13 groups merges them within 16");
}

TEST_F(DensifyGroupedConv, PrimeGroupCountUpTo128ChannelsBecomesOneConvolution) {
  expect_merged({.channels = 104, .groups = 13, .size = 4}, 1);  // RegNetY's 13 groups of 8
}

TEST_F(DensifyGroupedConv, MustNotFire) {
  expect_kept({.channels = 48, .groups = 6}, kernels::Isa::kAvx512Vnni, "not amxint8");
  expect_kept({.channels = 16, .groups = 16}, kernels::Isa::kAmxInt8, "1 input and 1 output channels");
  expect_kept({.channels = 64, .groups = 16}, kernels::Isa::kAmxInt8, "4 input and 4 output channels");
  expect_kept({.channels = 64, .groups = 2}, kernels::Isa::kAmxInt8, "32 input and 32 output channels");
  // 25 groups of 16: no divisor of 25 gives 32-64 channels, and 400 channels are too many for one.
  expect_kept({.channels = 400, .groups = 25, .size = 3}, kernels::Isa::kAmxInt8, "no divisor of its 25 groups");
  expect_kept({.channels = 48, .groups = 1}, kernels::Isa::kAmxInt8, "one group");
}

}  // namespace
}  // namespace qdqrt::testing
