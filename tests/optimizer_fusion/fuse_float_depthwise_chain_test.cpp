// fuse_float_depthwise_chain: a depthwise float conv with its 1x1 expansion and/or projection
// becomes one FusedDepthwiseConv when the intermediates are at least 64 KiB per image in rows of at
// least 14 pixels (under 28, only a whole block whose depthwise writes an even number of rows);
// structure, numbers (bit-equal: the reference runs the parts as the FusedConvs they were, in
// order) and must-not-fire cases with the reasons inspect shows.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused_conv.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, `channels`, size, size]; weights: ex (channels -> 16, 1x1), dw (16, 3x3), pw (16 -> channels, 1x1).
std::string chain_model(const std::string& body, int64_t channels, int64_t size, const std::string& outputs) {
  std::mt19937 rng(17);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,{},{},{}] x) => ({})
<{}, {}, {}, {}, {}, {}>
{{
{}
}})",
                     channels, size, size, outputs, float_initializer("ex", {16, channels, 1, 1}, -0.5f, 0.5f, rng),
                     float_initializer("eb", {16}, -0.5f, 0.5f, rng), float_initializer("dw", {16, 1, 3, 3}, -0.5f, 0.5f, rng),
                     float_initializer("db", {16}, -0.5f, 0.5f, rng),
                     float_initializer("pw", {channels, 16, 1, 1}, -0.5f, 0.5f, rng),
                     float_initializer("pb", {channels}, -0.5f, 0.5f, rng), body);
}

const std::string kExpand = "  e = Conv(x, ex, eb)\n  er = Relu(e)\n";
const std::string kDepthwise = "  d = Conv <group = 16, pads = [1, 1, 1, 1]> (er, dw, db)\n  dr = Relu(d)\n";

// The float conv fusions in pipeline order, up to the depthwise chain.
Graph fuse(const std::string& text, optimizer::PassContext& context, float tolerance = 0.0f) {
  Graph original = load_text(text);
  Graph graph = original;
  for (const char* name : {"fuse_float_conv_epilogue", "fuse_float_conv_gate", "fuse_float_pool_row_sums",
                           "fuse_float_depthwise_chain"}) {
    optimizer::FusionPass pass(name);
    graph = run_pass(graph, pass, context);
  }
  std::mt19937 rng(3);
  expect_same_outputs(original, graph, random_inputs(original, rng, -2.0f, 2.0f), tolerance);
  return graph;
}

const Node* chain(const Graph& graph) { return find_op(graph, layers::kFusedDepthwiseConv); }

std::vector<int64_t> part_nodes(const Node& node) { return node.find_attribute("part_nodes")->ints; }

// 16 channels x 32 x 32 floats = 64 KiB per image, rows of 32 pixels.
TEST(FuseFloatDepthwiseChain, ExpansionDepthwiseAndProjectionWithItsResidualBecomeOneLayer) {
  optimizer::PassContext context;
  Graph fused = fuse(chain_model(kExpand + kDepthwise + "  p = Conv(dr, pw, pb)\n  y = Add(p, x)", 8, 32,
                                 "float[2,8,32,32] y"),
                     context);
  const Node* layer = chain(fused);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(part_nodes(*layer), (std::vector<int64_t>{2, 2, 2}));  // Conv + Relu, Conv + Relu, Conv + Add
  EXPECT_EQ(layer->inputs, (std::vector<std::string>{"x", "ex", "eb", "dw", "db", "pw", "pb", "x"}));
  EXPECT_EQ(layer->outputs, std::vector<std::string>{"y"});
  const auto& attributes = layer->attrs<FusedDepthwiseConvAttributes>();
  EXPECT_EQ(attributes.expand.activation.kind, ActivationKind::kRelu);
  EXPECT_EQ(attributes.fused.activation.kind, ActivationKind::kRelu);
  EXPECT_EQ(attributes.project.activation.kind, ActivationKind::kNone);
  EXPECT_EQ(attributes.group, 16);
}

// The depthwise's output feeds a pool's row sums and a Mul: only the expansion joins, and the
// layer writes the row sums.
TEST(FuseFloatDepthwiseChain, ADepthwiseWithRowSumsTakesOnlyItsExpansion) {
  optimizer::PassContext context;
  Graph fused = fuse(chain_model(kExpand + kDepthwise + "  g = GlobalAveragePool(dr)\n  y = Mul(dr, g)", 8, 32,
                                 "float[2,16,32,32] y"),
                     context, 1e-6f);
  const Node* layer = chain(fused);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(part_nodes(*layer), (std::vector<int64_t>{2, 2, 0}));
  EXPECT_EQ(layer->outputs, (std::vector<std::string>{"dr", "dr/row_sums"}));
  EXPECT_FALSE(layer->has_input(layers::kFusedDepthwiseProjectW));
  ASSERT_NE(find_op(fused, layers::kRowSumsGlobalAveragePool), nullptr);
}

TEST(FuseFloatDepthwiseChain, ADepthwiseOnTheInputTakesItsProjection) {
  optimizer::PassContext context;
  Graph fused = fuse(chain_model("  d = Conv <group = 16, pads = [1, 1, 1, 1]> (x, dw, db)\n  y = Conv(d, pw, pb)", 16,
                                 32, "float[2,16,32,32] y"),
                     context);
  const Node* layer = chain(fused);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(part_nodes(*layer), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_FALSE(layer->has_input(layers::kFusedDepthwiseExpandW));
  EXPECT_EQ(layer->input(layers::kFusedDepthwiseX), "x");
}

TEST(FuseFloatDepthwiseChain, MustNotFire) {
  {
    SCOPED_TRACE("rows of 12 pixels: the intermediates stay in L2 anyway");
    optimizer::PassContext context;
    Graph fused =
        fuse(chain_model(kExpand + kDepthwise + "  y = Conv(dr, pw, pb)", 8, 12, "float[2,8,12,12] y"), context);
    EXPECT_EQ(chain(fused), nullptr);
    const std::string reason = float_reason_for(fused, context, "dr");
    EXPECT_NE(reason.find("rows of 12 pixels, fewer than 14"), std::string::npos) << reason;
  }
  {
    SCOPED_TRACE("16 channels x 28 x 28: an image of the intermediate is under 64 KiB");
    optimizer::PassContext context;
    Graph fused = fuse(chain_model("  d = Conv <group = 16, pads = [1, 1, 1, 1]> (x, dw, db)\n  y = Conv(d, pw, pb)",
                                   16, 28, "float[2,16,28,28] y"),
                       context);
    EXPECT_EQ(chain(fused), nullptr);
    const std::string reason = float_reason_for(fused, context, "d");
    EXPECT_NE(reason.find("under 64 KiB"), std::string::npos) << reason;
  }
  {
    SCOPED_TRACE("the intermediate has another reader");
    optimizer::PassContext context;
    Graph fused = fuse(chain_model("  d = Conv <group = 16, pads = [1, 1, 1, 1]> (x, dw, db)\n  p = Conv(d, pw, pb)\n"
                                   "  y = Add(p, d)",
                                   16, 32, "float[2,16,32,32] y"),
                       context);
    EXPECT_EQ(chain(fused), nullptr);
  }
  {
    SCOPED_TRACE("an expansion on a 4-channel input runs on the direct NCHW kernel");
    optimizer::PassContext context;
    Graph fused = fuse(chain_model(kExpand + kDepthwise + "  y = Identity(dr)", 4, 32, "float[2,16,32,32] y"), context);
    EXPECT_EQ(chain(fused), nullptr);
  }
  {
    SCOPED_TRACE("an expansion with a residual");
    optimizer::PassContext context;
    Graph fused = fuse(chain_model("  e = Conv(x, ex, eb)\n  er = Add(e, x)\n" + kDepthwise + "  y = Identity(dr)", 16,
                                   32, "float[2,16,32,32] y"),
                       context);
    EXPECT_EQ(chain(fused), nullptr);
  }
}

// x [1, 16, size, size] -> 96 channels (1x1) -> depthwise 3x3 of `stride` -> 16 channels (1x1; or
// the depthwise's output itself without `project`): a 14x14 intermediate of 96 channels is 73.5 KiB
// per image.
std::string wide_chain_model(int64_t size, int64_t stride, bool project = true) {
  std::mt19937 rng(29);
  const int64_t out = (size - 1) / stride + 1;
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[1,16,{0},{0}] x) => (float[1,{9},{1},{1}] y)
<{2}, {3}, {4}, {5}, {6}, {7}>
{{
  e = Conv(x, ex, eb)
  er = Relu(e)
  d = Conv <group = 96, pads = [1, 1, 1, 1], strides = [{8}, {8}]> (er, dw, db)
  dr = Relu(d)
  y = {10}
}})",
                     size, out, float_initializer("ex", {96, 16, 1, 1}, -0.5f, 0.5f, rng),
                     float_initializer("eb", {96}, -0.5f, 0.5f, rng), float_initializer("dw", {96, 1, 3, 3}, -0.5f, 0.5f, rng),
                     float_initializer("db", {96}, -0.5f, 0.5f, rng), float_initializer("pw", {16, 96, 1, 1}, -0.5f, 0.5f, rng),
                     float_initializer("pb", {16}, -0.5f, 0.5f, rng), stride, project ? 16 : 96,
                     project ? "Conv(dr, pw, pb)" : "Identity(dr)");
}

// MnasNet's 14x14 blocks: rows of 14 pixels, 14 depthwise rows (two units of 7 for two threads).
TEST(FuseFloatDepthwiseChain, RowsOf14PixelsFuseWhenTheDepthwiseWritesAnEvenRowCount) {
  optimizer::PassContext context;
  Graph fused = fuse(wide_chain_model(14, 1), context);
  const Node* layer = chain(fused);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(part_nodes(*layer), (std::vector<int64_t>{2, 2, 1}));
}

// Must not fire: rows under 28 pixels fuse only in a whole block (an expansion + depthwise whose
// output a squeeze-excite reads ran slower fused).
TEST(FuseFloatDepthwiseChain, RowsUnder28PixelsFuseOnlyInAWholeBlock) {
  optimizer::PassContext context;
  Graph fused = fuse(wide_chain_model(14, 1, /*project=*/false), context);
  EXPECT_EQ(chain(fused), nullptr);
  const std::string reason = float_reason_for(fused, context, "dr");
  EXPECT_NE(reason.find("'er' has rows of 14 pixels (fewer than 28): only a whole block fuses there"),
            std::string::npos)
      << reason;
}

// Must not fire: a stride-2 depthwise from 14x14 writes 7 rows (one band no two threads share):
// the expansion stays apart (and the projection: rows of 7 pixels).
TEST(FuseFloatDepthwiseChain, RowsUnder28PixelsWithAnOddDepthwiseRowCountStayApart) {
  optimizer::PassContext with_projection;
  EXPECT_EQ(chain(fuse(wide_chain_model(14, 2), with_projection)), nullptr);
  optimizer::PassContext context;
  Graph fused = fuse(wide_chain_model(14, 2, /*project=*/false), context);
  EXPECT_EQ(chain(fused), nullptr);
  const std::string reason = float_reason_for(fused, context, "dr");
  EXPECT_NE(reason.find("rows of 14 pixels (fewer than 28) and the depthwise writes 7 rows, an odd count"),
            std::string::npos)
      << reason;
}

}  // namespace
}  // namespace qdqrt::testing
