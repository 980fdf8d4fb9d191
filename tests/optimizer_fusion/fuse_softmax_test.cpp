// fuse_softmax: Softmax over the last axis followed by a QuantizeLinear (attention probabilities
// before the INT8 P.V MatMul) becomes one Softmax layer writing int8; structure, numbers (against
// the unfused graph by the reference executor: bit-equal codes) and must-not-fire cases (a second
// reader of the probabilities, another axis, no Q).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

constexpr const char* kConstants = "<float ps = {0.007874}, int8 pz = {0}, float us = {0.0039215}, uint8 uz = {0}>";

// x [2, 4, 5, 5] (batch, heads, queries, keys) -> `body` (ONNX text reading x, writing y and `extra`).
std::string model(const std::string& body, int opset = 13, const std::string& extra_outputs = "") {
  return fmt::format(
      "<ir_version: 8, opset_import: [\"\" : {}]>\ng (float[2,4,5,5] x) => (float[2,4,5,5] y{})\n{}\n"
      "{{\n{}}}\n",
      opset, extra_outputs, kConstants, body);
}

Graph fuse(const std::string& text, Graph& original) {
  original = load_text(text);
  optimizer::PassContext context;
  optimizer::FusionPass pass("fuse_softmax");
  Graph fused = run_pass(original, pass, context);
  std::mt19937 rng(9);
  // The layer's reference quantizes the same probabilities (computed in double): equal codes.
  expect_same_outputs(original, fused, random_inputs(original, rng, -4.0f, 4.0f), 0.0f);
  return fused;
}

TEST(FuseSoftmax, SoftmaxThenQuantizeBecomesOneLayer) {
  for (const char* axis : {"-1", "3"}) {
    SCOPED_TRACE(axis);
    Graph original;
    Graph fused = fuse(model(fmt::format("p = Softmax<axis = {}>(x)\npq = QuantizeLinear(p, ps, pz)\n"
                                         "y = DequantizeLinear(pq, ps, pz)\n",
                                         axis)),
                       original);
    EXPECT_EQ(count_ops(fused, "Softmax"), 1);
    EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 0);
    const Node* layer = find_op(fused, layers::kSoftmax);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer->domain, layers::kDomain);
    EXPECT_EQ(layer->outputs[0], "pq");  // writes the int8 value the Q wrote
    EXPECT_EQ(layer->input(layers::kSoftmaxX), "x");
    EXPECT_TRUE(layer->has_input(layers::kSoftmaxYZeroPoint));
    EXPECT_EQ(fused_layer_info(*layer)->fused_nodes.size(), 2u);  // Softmax + Q
  }
}

TEST(FuseSoftmax, Uint8OutputAndOpset11LastAxis) {
  Graph original;
  Graph fused =
      fuse(model("p = Softmax<axis = 3>(x)\npq = QuantizeLinear(p, us, uz)\ny = DequantizeLinear(pq, us, uz)\n", 11),
           original);
  const Node* layer = find_op(fused, layers::kSoftmax);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->domain, layers::kDomain);
}

TEST(FuseSoftmax, MustNotFireOnASecondReaderAnotherAxisOrNoQuantize) {
  {
    SCOPED_TRACE("the probabilities are also a graph output");
    Graph original;
    Graph fused = fuse(model("p = Softmax<axis = -1>(x)\npq = QuantizeLinear(p, ps, pz)\n"
                             "y = DequantizeLinear(pq, ps, pz)\n",
                             13, ", float[2,4,5,5] p"),
                       original);
    EXPECT_EQ(find_op(fused, layers::kSoftmax)->domain, "");
    EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 1);
  }
  {
    SCOPED_TRACE("a second consumer besides the Q");
    Graph original;
    Graph fused = fuse(model("p = Softmax<axis = -1>(x)\npq = QuantizeLinear(p, ps, pz)\n"
                             "d = DequantizeLinear(pq, ps, pz)\ny = Add(d, p)\n"),
                       original);
    EXPECT_EQ(find_op(fused, layers::kSoftmax)->domain, "");
    EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 1);
  }
  {
    SCOPED_TRACE("softmax over a non-last axis");
    Graph original;
    Graph fused =
        fuse(model("p = Softmax<axis = 2>(x)\npq = QuantizeLinear(p, ps, pz)\ny = DequantizeLinear(pq, ps, pz)\n"),
             original);
    EXPECT_EQ(find_op(fused, layers::kSoftmax)->domain, "");
    EXPECT_EQ(count_ops(fused, "QuantizeLinear"), 1);
  }
  {
    SCOPED_TRACE("opset 11 with axis 1: dims[1:] flattened, not the last axis");
    Graph original;
    Graph fused =
        fuse(model("p = Softmax<axis = 1>(x)\npq = QuantizeLinear(p, ps, pz)\ny = DequantizeLinear(pq, ps, pz)\n", 11),
             original);
    EXPECT_EQ(find_op(fused, layers::kSoftmax)->domain, "");
  }
  {
    SCOPED_TRACE("no QuantizeLinear after it");
    Graph original;
    Graph fused = fuse(model("y = Softmax<axis = -1>(x)\n"), original);
    EXPECT_EQ(find_op(fused, layers::kSoftmax)->domain, "");
  }
}

}  // namespace
}  // namespace qdqrt::testing
