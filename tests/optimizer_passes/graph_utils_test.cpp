// optimizer/graph_utils: the helpers passes build new nodes and values with (make_onnx_node,
// parse_typed_attributes, add_value), including the errors on an unknown op or a bad attribute.
#include "optimizer/graph_utils.h"

#include <gtest/gtest.h>

#include "core/attribute_values.h"
#include "core/ops/tensor.h"

namespace qdqrt::optimizer {
namespace {

Node model_node(int64_t opset) {
  Node like;
  like.name = "like";
  like.op_type = "Einsum";
  like.opset = opset;
  return like;
}

TEST(GraphUtils, MakeOnnxNodeTakesTheOpsetOfItsModelNodeAndParsesTheAttributes) {
  Result<Node> node = make_onnx_node(model_node(17), "Transpose", "t", {"x"}, "y", {{"perm", ints_attribute({1, 0})}});
  ASSERT_TRUE(node.ok()) << node.status().to_string();
  EXPECT_EQ(node->name, "t");
  EXPECT_EQ(node->op_type, "Transpose");
  EXPECT_TRUE(node->domain.empty());
  EXPECT_EQ(node->opset, 17);
  EXPECT_EQ(node->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(node->outputs, std::vector<std::string>{"y"});
  ASSERT_NE(node->typed_attributes, nullptr);
  EXPECT_EQ(node->attrs<TransposeAttributes>().perm, (std::vector<int64_t>{1, 0}));
}

TEST(GraphUtils, MakeOnnxNodeRefusesAnUnknownOpAndABadAttribute) {
  Result<Node> unknown = make_onnx_node(model_node(13), "NoSuchOp", "n", {"x"}, "y");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().to_string().find("NoSuchOp"), std::string::npos) << unknown.status().to_string();

  Result<Node> bad = make_onnx_node(model_node(13), "Flatten", "f", {"x"}, "y", {{"axis", string_attribute("one")}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("axis"), std::string::npos) << bad.status().to_string();
}

TEST(GraphUtils, ParseTypedAttributesReplacesTheParsedStructAfterAnEdit) {
  Result<Node> flatten = make_onnx_node(model_node(13), "Flatten", "f", {"x"}, "y", {{"axis", int_attribute(2)}});
  ASSERT_TRUE(flatten.ok()) << flatten.status().to_string();
  EXPECT_EQ(flatten->attrs<FlattenAttributes>().axis, 2);
  flatten->attributes.clear();  // the default axis from now on
  ASSERT_TRUE(parse_typed_attributes(*flatten).is_ok());
  EXPECT_EQ(flatten->attrs<FlattenAttributes>().axis, 1);
}

TEST(GraphUtils, AddValueTakesAFreshNameAndRecordsTheType) {
  Graph graph;
  graph.inputs = {"x"};
  const std::string first = add_value(graph, "x", DataType::kUint8);
  const std::string second = add_value(graph, "x", DataType::kFloat);
  EXPECT_EQ(first, "x_1");
  EXPECT_EQ(second, "x_2");
  ASSERT_NE(graph.find_value(first), nullptr);
  EXPECT_EQ(graph.find_value(first)->name, first);
  EXPECT_EQ(graph.find_value(first)->dtype, DataType::kUint8);
  EXPECT_FALSE(graph.find_value(first)->shape.has_value());
  EXPECT_EQ(graph.find_value(second)->dtype, DataType::kFloat);
}

}  // namespace
}  // namespace qdqrt::optimizer
