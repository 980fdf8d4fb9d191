// Test helpers of the reference kernels: build one node by hand, parse its attributes with the
// op's registered schema (as the loader does) and run it with run_reference_node. Two ways to
// build: NodeBuilder (chained attributes, opset 21 unless given) and make_node / run_op /
// run_single (an AttributeMap, the schema's opset range checked).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/attribute_values.h"
#include "core/op_registry.h"
#include "reference/executor.h"

namespace qdqrt::testing {

// Parses the node's attributes with its schema; with check_opset, an opset outside the schema's
// range is an error too.
inline Status parse_node_attributes(Node& node, bool check_opset) {
  const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
  if (schema == nullptr) return unsupported("{} not registered", node.op_type);
  if (check_opset && (node.opset < schema->min_opset || node.opset > schema->max_opset)) {
    return unsupported("{} not registered at opset {}", node.op_type, node.opset);
  }
  if (schema->parse_attributes != nullptr) {
    QDQRT_ASSIGN_OR_RETURN(node.typed_attributes, schema->parse_attributes(node));
  }
  return Status::ok();
}

// ---- NodeBuilder: a node named "test_<op>" with output "y" ----

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string op_type, int64_t opset = 21) {
    node_.op_type = std::move(op_type);
    node_.name = "test_" + node_.op_type;
    node_.opset = opset;
    node_.outputs = {"y"};
  }
  NodeBuilder& attr(const std::string& key, int64_t value) {
    node_.attributes[key] = int_attribute(value);
    return *this;
  }
  NodeBuilder& attr(const std::string& key, int value) { return attr(key, static_cast<int64_t>(value)); }
  NodeBuilder& attr(const std::string& key, float value) {
    node_.attributes[key] = float_attribute(value);
    return *this;
  }
  NodeBuilder& attr(const std::string& key, const char* value) {
    node_.attributes[key] = string_attribute(value);
    return *this;
  }
  NodeBuilder& attr(const std::string& key, std::vector<int64_t> values) {
    node_.attributes[key] = ints_attribute(std::move(values));
    return *this;
  }
  NodeBuilder& outputs(std::vector<std::string> names) {
    node_.outputs = std::move(names);
    return *this;
  }
  // The node with typed attributes, or the parser's error.
  Result<Node> build() const {
    Node node = node_;
    QDQRT_RETURN_IF_ERROR(parse_node_attributes(node, false));
    return node;
  }
  // Parses and runs on `inputs` (nullptr = absent optional input).
  Result<std::vector<Tensor>> run(const std::vector<const Tensor*>& inputs) const {
    QDQRT_ASSIGN_OR_RETURN(Node node, build());
    node.inputs.clear();
    for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(inputs[i] ? "in" + std::to_string(i) : "");
    return run_reference_node(node, inputs);
  }
  // run() that must succeed; returns output 0.
  Tensor run_ok(const std::vector<const Tensor*>& inputs) const {
    Result<std::vector<Tensor>> outputs = run(inputs);
    EXPECT_TRUE(outputs.ok()) << outputs.status().to_string();
    return outputs.ok() ? (*outputs)[0] : Tensor();
  }

 private:
  Node node_;
};

// ---- make_node / run_op / run_single: a node named "<op>_test" ----

inline Attribute tensor_attribute(Tensor value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kTensor;
  attribute.t = std::move(value);
  return attribute;
}

// A node with input_count inputs and output_count outputs, attributes parsed.
inline Result<Node> make_node(const std::string& op_type, int64_t opset, size_t input_count,
                              AttributeMap attributes = {}, size_t output_count = 1) {
  Node node;
  node.name = op_type + "_test";
  node.op_type = op_type;
  node.opset = opset;
  for (size_t i = 0; i < input_count; ++i) node.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < output_count; ++i) node.outputs.push_back("out" + std::to_string(i));
  node.attributes = std::move(attributes);
  QDQRT_RETURN_IF_ERROR(parse_node_attributes(node, true));
  return node;
}

// Runs op on the inputs (nullptr marks an absent optional input); every output or the error.
inline Result<std::vector<Tensor>> run_op(const std::string& op_type, int64_t opset, std::vector<const Tensor*> inputs,
                                          AttributeMap attributes = {}, size_t output_count = 1) {
  QDQRT_ASSIGN_OR_RETURN(Node node, make_node(op_type, opset, inputs.size(), std::move(attributes), output_count));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) node.inputs[i] = "";
  }
  return run_reference_node(node, inputs);
}

// run_op's first output.
inline Result<Tensor> run_single(const std::string& op_type, int64_t opset, std::vector<const Tensor*> inputs,
                                 AttributeMap attributes = {}) {
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_op(op_type, opset, std::move(inputs), std::move(attributes)));
  return outputs[0];
}

// ---- tensors and expectations ----

template <class T>
Tensor tensor(Shape shape, std::vector<T> values) {
  return Tensor::from_vector<T>(std::move(shape), values);
}

template <class T>
std::vector<T> values_of(const Tensor& tensor) {
  if (!tensor.defined()) return {};
  auto span = tensor.values<T>();
  return std::vector<T>(span.begin(), span.end());
}

// Absolute tolerance.
inline void expect_near_vector(const std::vector<float>& actual, const std::vector<float>& expected,
                               float tolerance = 1e-5f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
}

// Relative and absolute tolerance; `actual` must be float32.
inline void expect_near_all(const std::vector<float>& expected, const Tensor& actual, double tolerance = 1e-5) {
  ASSERT_EQ(actual.dtype(), DataType::kFloat);
  ASSERT_EQ(static_cast<int64_t>(expected.size()), actual.numel());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.data<float>()[i], expected[i], tolerance + tolerance * std::abs(expected[i])) << "element " << i;
  }
}

// The error's message contains every fragment (node name, offending value ...).
inline void expect_error(const Status& status, std::vector<std::string> fragments) {
  ASSERT_FALSE(status.is_ok());
  for (const std::string& fragment : fragments) {
    EXPECT_NE(status.message().find(fragment), std::string::npos)
        << "'" << fragment << "' not in: " << status.message();
  }
}

}  // namespace qdqrt::testing
