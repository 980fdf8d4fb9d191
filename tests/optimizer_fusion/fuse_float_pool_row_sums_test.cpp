// fuse_float_pool_row_sums: a GlobalAveragePool of a depthwise float conv's output becomes a
// RowSumsGlobalAveragePool reading the row sums the conv (now a FusedConv with a second output)
// writes; structure, numbers (the sums run in a different order: within 1e-6) and must-not-fire
// cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/ops/fused_conv.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// x [2, 8, 6, 5] -> d = Conv (`conv` attributes, weight `w`) -> `body`.
std::string pool_model(const std::string& conv, const std::string& body, const std::string& outputs) {
  std::mt19937 rng(11);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,8,6,5] x) => ({})
<{}, {}, {}, {}>
{{
  d = Conv <{}> (x, dw)
{}
}})",
                     outputs, float_initializer("dw", {8, 1, 3, 3}, -0.5f, 0.5f, rng),
                     float_initializer("wide", {8, 1, 13, 13}, -0.5f, 0.5f, rng),
                     float_initializer("full", {8, 8, 3, 3}, -0.5f, 0.5f, rng),
                     float_initializer("bias", {8}, -0.5f, 0.5f, rng), conv, body);
}

const std::string kDepthwise = "group = 8, pads = [1, 1, 1, 1]";
const std::string kOutputs = "float[2,8,6,5] y";

Graph fuse(const std::string& text, optimizer::PassContext& context, bool epilogue_first = false) {
  Graph original = load_text(text);
  Graph graph = original;
  if (epilogue_first) {
    optimizer::FusionPass epilogue("fuse_float_conv_epilogue");
    graph = run_pass(graph, epilogue, context);
  }
  optimizer::FusionPass row_sums("fuse_float_pool_row_sums");
  Graph fused = run_pass(graph, row_sums, context);
  std::mt19937 rng(3);
  expect_same_outputs(original, fused, random_inputs(original, rng, -2.0f, 2.0f), 1e-6f);
  return fused;
}

TEST(FuseFloatPoolRowSums, PoolOfADepthwiseConvReadsItsRowSums) {
  optimizer::PassContext context;
  Graph fused = fuse(pool_model(kDepthwise, "  p = GlobalAveragePool(d)\n  y = Mul(d, p)", kOutputs), context);
  const Node* pool = find_op(fused, layers::kRowSumsGlobalAveragePool);
  const Node* conv = find_op(fused, layers::kFusedConv);
  ASSERT_NE(pool, nullptr);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(count_ops(fused, "GlobalAveragePool") + count_ops(fused, "Conv"), 0);
  EXPECT_EQ(conv->outputs, (std::vector<std::string>{"d", "d/row_sums"}));
  EXPECT_EQ(pool->inputs, (std::vector<std::string>{"d", "d/row_sums"}));
  EXPECT_EQ(pool->outputs, std::vector<std::string>{"p"});
  const ValueInfo* sums = fused.find_value("d/row_sums");
  ASSERT_NE(sums, nullptr);
  EXPECT_EQ(sums->static_shape(), (Shape{2, 6, 8}));  // [N, OH, C]
  EXPECT_EQ(conv->find_attribute("fused_nodes")->strings, std::vector<std::string>{conv->name});
}

// The conv's SiLU epilogue stays; the pool reads the sums of the activated output.
TEST(FuseFloatPoolRowSums, AFusedConvKeepsItsEpilogue) {
  optimizer::PassContext context;
  Graph fused =
      fuse(pool_model(kDepthwise, "  s = Sigmoid(d)\n  ds = Mul(d, s)\n  p = GlobalAveragePool(ds)\n  y = Mul(ds, p)",
                      kOutputs),
           context, /*epilogue_first=*/true);
  const Node* conv = find_op(fused, layers::kFusedConv);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->attrs<FusedConvAttributes>().function, ConvEpilogueFunction::kSiLU);
  EXPECT_EQ(conv->outputs, (std::vector<std::string>{"ds", "ds/row_sums"}));
  ASSERT_NE(find_op(fused, layers::kRowSumsGlobalAveragePool), nullptr);
}

TEST(FuseFloatPoolRowSums, MustNotFire) {
  {
    SCOPED_TRACE("a group-1 conv runs on the igemm, which writes no row sums");
    optimizer::PassContext context;
    std::string text = pool_model("pads = [1, 1, 1, 1]", "  p = GlobalAveragePool(d)\n  y = Mul(d, p)", kOutputs);
    text.replace(text.find("(x, dw)"), 7, "(x, full)");
    Graph fused = fuse(text, context);
    EXPECT_EQ(find_op(fused, layers::kRowSumsGlobalAveragePool), nullptr);
    EXPECT_EQ(count_ops(fused, "GlobalAveragePool"), 1);
  }
  {
    SCOPED_TRACE("13x13 taps: the NCHW depthwise loops run it");
    optimizer::PassContext context;
    std::string text = pool_model("group = 8, pads = [6, 6, 6, 6]", "  p = GlobalAveragePool(d)\n  y = Mul(d, p)",
                                  kOutputs);
    text.replace(text.find("(x, dw)"), 7, "(x, wide)");
    Graph fused = fuse(text, context);
    EXPECT_EQ(find_op(fused, layers::kRowSumsGlobalAveragePool), nullptr);
    EXPECT_EQ(count_ops(fused, "GlobalAveragePool"), 1);
  }
  {
    SCOPED_TRACE("the pool reads the graph's input");
    optimizer::PassContext context;
    Graph fused = fuse(pool_model(kDepthwise, "  p = GlobalAveragePool(x)\n  y = Mul(d, p)", kOutputs), context);
    EXPECT_EQ(find_op(fused, layers::kRowSumsGlobalAveragePool), nullptr);
  }
  {
    SCOPED_TRACE("two pools of one conv: the first takes the sums");
    optimizer::PassContext context;
    Graph fused = fuse(pool_model(kDepthwise,
                                  "  p = GlobalAveragePool(d)\n  q = GlobalAveragePool(d)\n  a = Add(p, q)\n"
                                  "  y = Mul(d, a)",
                                  kOutputs),
                       context);
    EXPECT_EQ(count_ops(fused, layers::kRowSumsGlobalAveragePool), 1);
    EXPECT_EQ(count_ops(fused, "GlobalAveragePool"), 1);
    EXPECT_EQ(find_op(fused, layers::kRowSumsGlobalAveragePool)->outputs[0], "p");
  }
}

}  // namespace
}  // namespace qdqrt::testing
