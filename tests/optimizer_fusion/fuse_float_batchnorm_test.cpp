// fuse_float_batchnorm: DenseNet's [Concat ->] BatchNormalization [-> Relu] on float values becomes
// one FusedBatchNorm; structure, numbers (the fused reference against the nodes: exact) and
// must-not-fire cases.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/attribute_values.h"
#include "core/ops/fused_batchnorm.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/fusion.h"
#include "reference/executor.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

// a [2, 3, 4, 5] and b [2, 4, 4, 5] (each an Add of an input, so they are computed values), the
// BatchNorm parameters of 7 channels (s7, ...) and of 3 (s3, ...), then `body`.
std::string batchnorm_model(const std::string& body, const std::string& outputs) {
  std::mt19937 rng(11);
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 14]>
g (float[2,3,4,5] xa, float[2,4,4,5] xb) => ({})
<{}, {}, {}, {}, {}, {}, {}, {}, {}>
{{
  a = Add(xa, one)
  b = Add(xb, one)
{}
}})",
                     outputs, float_initializer("s7", {7}, 0.5f, 2.0f, rng), float_initializer("b7", {7}, -1.0f, 1.0f, rng),
                     float_initializer("m7", {7}, -1.0f, 1.0f, rng), float_initializer("v7", {7}, 0.5f, 2.0f, rng),
                     float_initializer("s3", {3}, 0.5f, 2.0f, rng), float_initializer("b3", {3}, -1.0f, 1.0f, rng),
                     float_initializer("m3", {3}, -1.0f, 1.0f, rng), float_initializer("v3", {3}, 0.5f, 2.0f, rng),
                     float_values("one", {}, {1.0f}), body);
}

Graph fuse(const std::string& text, optimizer::PassContext& context) {
  Graph original = load_text(text);
  optimizer::FusionPass pass("fuse_float_batchnorm");
  Graph fused = run_pass(original, pass, context);
  std::mt19937 rng(3);
  expect_same_outputs(original, fused, random_inputs(original, rng, -3.0f, 3.0f), 0.0f);
  return fused;
}

TEST(FuseFloatBatchNorm, ConcatBatchNormReluBecomeOneLayer) {
  optimizer::PassContext context;
  Graph fused = fuse(batchnorm_model("  c = Concat<axis=1>(a, b)\n  n = BatchNormalization<epsilon=0.001>(c, s7, b7, m7, v7)\n"
                                     "  y = Relu(n)",
                                     "float[2,7,4,5] y"),
                     context);
  ASSERT_EQ(fused.nodes.size(), 3u);  // the two Adds and the layer
  const Node* layer = find_op(fused, layers::kFusedBatchNorm);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->domain, layers::kDomain);
  EXPECT_EQ(layer->inputs, (std::vector<std::string>{"s7", "b7", "m7", "v7", "a", "b"}));
  EXPECT_EQ(layer->outputs, std::vector<std::string>{"y"});
  const auto* attributes = dynamic_cast<const FusedBatchNormAttributes*>(layer->typed_attributes.get());
  ASSERT_NE(attributes, nullptr);
  EXPECT_FLOAT_EQ(attributes->epsilon, 0.001f);
  EXPECT_EQ(attributes->fused.activation.kind, ActivationKind::kRelu);
  EXPECT_EQ(attributes->fused.fused_nodes.size(), 3u);
  EXPECT_EQ(count_ops(fused, "Concat") + count_ops(fused, "BatchNormalization") + count_ops(fused, "Relu"), 0);
}

// A Concat with axis -3 (= 1 at rank 4) and no Relu; a BatchNorm + Relu without a Concat.
TEST(FuseFloatBatchNorm, EitherNeighbourAloneFuses) {
  {
    optimizer::PassContext context;
    Graph fused = fuse(batchnorm_model("  c = Concat<axis=-3>(b, a)\n  y = BatchNormalization(c, s7, b7, m7, v7)",
                                       "float[2,7,4,5] y"),
                       context);
    const Node* layer = find_op(fused, layers::kFusedBatchNorm);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer->inputs, (std::vector<std::string>{"s7", "b7", "m7", "v7", "b", "a"}));
    EXPECT_EQ(layer->attrs<FusedBatchNormAttributes>().fused.activation.kind, ActivationKind::kNone);
  }
  {
    optimizer::PassContext context;
    Graph fused = fuse(batchnorm_model("  n = BatchNormalization(a, s3, b3, m3, v3)\n  y = Relu(n)", "float[2,3,4,5] y"),
                       context);
    const Node* layer = find_op(fused, layers::kFusedBatchNorm);
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer->inputs, (std::vector<std::string>{"s3", "b3", "m3", "v3", "a"}));
    EXPECT_EQ(count_ops(fused, "Relu"), 0);
  }
}

// A lone BatchNorm; a Concat or a BatchNorm output read elsewhere or written as a graph output; a
// Concat along another axis; a Relu reading something else: those nodes stay.
TEST(FuseFloatBatchNorm, MustNotFireWhereAValueIsSharedOrTheConcatIsNotOfChannels) {
  struct Case {
    std::string body, outputs;
    int batchnorms, fused;
  };
  const Case cases[] = {
      {"  y = BatchNormalization(a, s3, b3, m3, v3)", "float[2,3,4,5] y", 1, 0},
      // The Concat also a graph output: only the Relu joins.
      {"  c = Concat<axis=1>(a, b)\n  n = BatchNormalization(c, s7, b7, m7, v7)\n  y = Relu(n)",
       "float[2,7,4,5] y, float[2,7,4,5] c", 0, 1},
      // The BatchNorm's output read twice: only the Concat joins.
      {"  c = Concat<axis=1>(a, b)\n  n = BatchNormalization(c, s7, b7, m7, v7)\n  r = Relu(n)\n  y = Add(r, n)",
       "float[2,7,4,5] y", 0, 1},
      // A Concat along the width, read by nothing else, and a lone BatchNorm after it.
      {"  c = Concat<axis=3>(a, a)\n  y = BatchNormalization(c, s3, b3, m3, v3)", "float[2,3,4,10] y", 1, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    optimizer::PassContext context;
    Graph fused = fuse(batchnorm_model(c.body, c.outputs), context);
    EXPECT_EQ(count_ops(fused, "BatchNormalization"), c.batchnorms);
    EXPECT_EQ(count_ops(fused, layers::kFusedBatchNorm), c.fused);
  }
}

// Bad FusedBatchNorm nodes: attributes the parser refuses and inputs the reference kernel refuses,
// each an error naming the node and the value.
TEST(FuseFloatBatchNorm, BadNodesAreErrors) {
  Node node;
  node.name = "bn";
  node.op_type = layers::kFusedBatchNorm;
  node.domain = layers::kDomain;
  node.attributes["activation"] = string_attribute("LeakyRelu");
  auto parsed = parse_fused_layer_attributes(node);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().to_string().find("LeakyRelu"), std::string::npos) << parsed.status().to_string();
  node.attributes.clear();
  node.attributes["epsilon"] = float_attribute(-1.0f);
  parsed = parse_fused_layer_attributes(node);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().to_string().find("epsilon"), std::string::npos) << parsed.status().to_string();

  node.attributes.clear();
  auto typed = parse_fused_layer_attributes(node);
  ASSERT_TRUE(typed.ok()) << typed.status().to_string();
  node.typed_attributes = *typed;
  Tensor parameter(DataType::kFloat, {3});
  for (int64_t c = 0; c < 3; ++c) parameter.data<float>()[c] = 1.0f;
  Tensor a(DataType::kFloat, {1, 2, 2, 2}), b(DataType::kFloat, {1, 1, 2, 2}), wide(DataType::kFloat, {1, 1, 2, 3});
  // No x at all.
  node.inputs = {"s", "b", "m", "v"};
  node.outputs = {"y"};
  auto result = run_reference_node(node, {&parameter, &parameter, &parameter, &parameter});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().to_string().find("'bn'"), std::string::npos) << result.status().to_string();
  // Inputs that do not concatenate (another width), and channels that do not match the parameters.
  node.inputs = {"s", "b", "m", "v", "a", "w"};
  result = run_reference_node(node, {&parameter, &parameter, &parameter, &parameter, &a, &wide});
  EXPECT_FALSE(result.ok());
  node.inputs = {"s", "b", "m", "v", "a"};
  result = run_reference_node(node, {&parameter, &parameter, &parameter, &parameter, &a});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().to_string().find("[3]"), std::string::npos) << result.status().to_string();
  // The same inputs that fit: 2 + 1 channels.
  node.inputs = {"s", "b", "m", "v", "a", "c"};
  result = run_reference_node(node, {&parameter, &parameter, &parameter, &parameter, &a, &b});
  ASSERT_TRUE(result.ok()) << result.status().to_string();
  EXPECT_EQ((*result)[0].shape(), (Shape{1, 3, 2, 2}));
}

}  // namespace
}  // namespace qdqrt::testing
