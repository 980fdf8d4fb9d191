// Test helper: builds a Node with raw attributes, parses them with the op's registered parser
// (as the loader does) and runs it on the reference kernels.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/op_registry.h"
#include "reference/executor.h"

namespace qdqrt::testing {

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string op_type, int64_t opset = 21) {
    node_.op_type = std::move(op_type);
    node_.name = "test_" + node_.op_type;
    node_.opset = opset;
    node_.outputs = {"y"};
  }
  NodeBuilder& attr(const std::string& key, int64_t value) {
    Attribute& a = node_.attributes[key];
    a.kind = Attribute::Kind::kInt;
    a.i = value;
    return *this;
  }
  NodeBuilder& attr(const std::string& key, int value) { return attr(key, static_cast<int64_t>(value)); }
  NodeBuilder& attr(const std::string& key, float value) {
    Attribute& a = node_.attributes[key];
    a.kind = Attribute::Kind::kFloat;
    a.f = value;
    return *this;
  }
  NodeBuilder& attr(const std::string& key, const char* value) {
    Attribute& a = node_.attributes[key];
    a.kind = Attribute::Kind::kString;
    a.s = value;
    return *this;
  }
  NodeBuilder& attr(const std::string& key, std::vector<int64_t> values) {
    Attribute& a = node_.attributes[key];
    a.kind = Attribute::Kind::kInts;
    a.ints = std::move(values);
    return *this;
  }
  NodeBuilder& outputs(std::vector<std::string> names) {
    node_.outputs = std::move(names);
    return *this;
  }
  // The node with typed attributes, or the parser's error.
  Result<Node> build() const {
    Node node = node_;
    const OpSchema* schema = OpRegistry::instance().find("", node.op_type);
    if (schema == nullptr) return unsupported("{} not registered", node.op_type);
    if (schema->parse_attributes != nullptr) {
      QDQRT_ASSIGN_OR_RETURN(node.typed_attributes, schema->parse_attributes(node));
    }
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

template <class T>
std::vector<T> values_of(const Tensor& tensor) {
  if (!tensor.defined()) return {};
  auto span = tensor.values<T>();
  return std::vector<T>(span.begin(), span.end());
}

inline void expect_near_all(const std::vector<float>& expected, const Tensor& actual, double tolerance = 1e-5) {
  ASSERT_EQ(actual.dtype(), DataType::kFloat);
  ASSERT_EQ(static_cast<int64_t>(expected.size()), actual.numel());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual.data<float>()[i], expected[i], tolerance + tolerance * std::abs(expected[i])) << "element " << i;
  }
}

}  // namespace qdqrt::testing
