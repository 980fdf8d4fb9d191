// Builds single nodes by hand, parses their attributes with the op's schema and runs them
// with the reference kernels.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/op_registry.h"
#include "reference/executor.h"

namespace qdqrt::testing_b {

inline Attribute int_attribute(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}
inline Attribute float_attribute(float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloat;
  attribute.f = value;
  return attribute;
}
inline Attribute ints_attribute(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}
inline Attribute floats_attribute(std::vector<float> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloats;
  attribute.floats = std::move(values);
  return attribute;
}
inline Attribute string_attribute(std::string value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kString;
  attribute.s = std::move(value);
  return attribute;
}
inline Attribute tensor_attribute(Tensor value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kTensor;
  attribute.t = std::move(value);
  return attribute;
}

// A node named "<op>_test" with input_count inputs and output_count outputs, attributes parsed.
inline Result<Node> make_node(const std::string& op_type, int64_t opset, size_t input_count, AttributeMap attributes = {},
                              size_t output_count = 1) {
  Node node;
  node.name = op_type + "_test";
  node.op_type = op_type;
  node.opset = opset;
  for (size_t i = 0; i < input_count; ++i) node.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < output_count; ++i) node.outputs.push_back("out" + std::to_string(i));
  node.attributes = std::move(attributes);
  const OpSchema* schema = OpRegistry::instance().find("", op_type);
  if (schema == nullptr) return unsupported("no schema for {}", op_type);
  if (opset < schema->min_opset || opset > schema->max_opset) return unsupported("{} not registered at opset {}", op_type, opset);
  if (schema->parse_attributes != nullptr) {
    QDQRT_ASSIGN_OR_RETURN(node.typed_attributes, schema->parse_attributes(node));
  }
  return node;
}

// Runs op on the inputs (nullptr marks an absent optional input); first output or the error.
inline Result<std::vector<Tensor>> run_op(const std::string& op_type, int64_t opset, std::vector<const Tensor*> inputs,
                                          AttributeMap attributes = {}, size_t output_count = 1) {
  QDQRT_ASSIGN_OR_RETURN(Node node, make_node(op_type, opset, inputs.size(), std::move(attributes), output_count));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) node.inputs[i] = "";
  }
  return run_reference_node(node, inputs);
}

inline Result<Tensor> run_single(const std::string& op_type, int64_t opset, std::vector<const Tensor*> inputs,
                                 AttributeMap attributes = {}) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_op(op_type, opset, std::move(inputs), std::move(attributes)));
  return outputs[0];
}

template <class T>
std::vector<T> values_of(const Tensor& tensor) {
  auto span = tensor.values<T>();
  return std::vector<T>(span.begin(), span.end());
}

template <class T>
Tensor tensor(Shape shape, std::vector<T> values) {
  return Tensor::from_vector<T>(std::move(shape), values);
}

inline void expect_near_vector(const std::vector<float>& actual, const std::vector<float>& expected, float tolerance = 1e-5f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
}

// The error's message contains every fragment (node name, offending value ...).
inline void expect_error(const Status& status, std::vector<std::string> fragments) {
  ASSERT_FALSE(status.is_ok());
  for (const std::string& fragment : fragments) {
    EXPECT_NE(status.message().find(fragment), std::string::npos) << "'" << fragment << "' not in: " << status.message();
  }
}

}  // namespace qdqrt::testing_b
