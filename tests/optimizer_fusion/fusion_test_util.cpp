#include "tests/optimizer_fusion/fusion_test_util.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <sstream>

#include "parser/onnx_loader.h"

namespace qdqrt::testing {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "";
  std::ostringstream text;
  text << "[";
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? "," : "") << shape[i];
  text << "]";
  return text.str();
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

std::string int_initializer(const std::string& type, const std::string& name, const std::vector<int64_t>& shape,
                            int low, int high, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(low, high);
  std::ostringstream out;
  out << type << shape_text(shape) << " " << name << " = {";
  for (int64_t i = 0; i < count(shape); ++i) out << (i ? ", " : "") << dist(rng);
  out << "}";
  return out.str();
}

std::string float_values(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::ostringstream out;
  out.precision(9);
  out << "float" << shape_text(shape) << " " << name << " = {";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "}";
  return out.str();
}

std::string float_initializer(const std::string& name, const std::vector<int64_t>& shape, float low, float high,
                              std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> values;
  for (int64_t i = 0; i < count(shape); ++i) values.push_back(dist(rng));
  return float_values(name, shape, values);
}

Graph load_text(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage() << "\n" << text;
  auto graph = load_onnx_model(model);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string() << "\n" << text;
  return graph.ok() ? std::move(graph.value()) : Graph{};
}

TensorMap random_inputs(const Graph& graph, std::mt19937& rng, float low, float high) {
  std::uniform_real_distribution<float> dist(low, high);
  TensorMap inputs;
  for (const std::string& name : graph.inputs) {
    auto shape = graph.find_value(name)->static_shape();
    EXPECT_TRUE(shape.has_value()) << name;
    Tensor tensor(DataType::kFloat, *shape);
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = dist(rng);
    inputs[name] = tensor;
  }
  return inputs;
}

Graph run_pass(const Graph& graph, optimizer::Pass& pass, optimizer::PassContext& context) {
  Graph copy = graph;
  Status status = pass.run(copy, context);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return copy;
}

int count_ops(const Graph& graph, const std::string& op_type) {
  int n = 0;
  for (const Node& node : graph.nodes) n += node.op_type == op_type;
  return n;
}

const Node* find_op(const Graph& graph, const std::string& op_type) {
  for (const Node& node : graph.nodes) {
    if (node.op_type == op_type) return &node;
  }
  return nullptr;
}

std::string float_reason(const optimizer::PassContext& context, const std::string& node) {
  for (const auto& reason : context.float_reasons) {
    if (reason.node == node) return reason.reason;
  }
  return "";
}

std::string float_reason_for(const Graph& graph, const optimizer::PassContext& context, const std::string& value) {
  for (const Node& node : graph.nodes) {
    for (const std::string& output : node.outputs) {
      if (output == value) return float_reason(context, node.name);
    }
  }
  return "no node writes " + value;
}

void expect_same_outputs(const Graph& original, const Graph& optimized, const TensorMap& inputs, float tolerance) {
  auto expected = run_reference(original, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  auto actual = run_reference(optimized, inputs);
  ASSERT_TRUE(actual.ok()) << actual.status().to_string();
  for (const auto& [name, tensor] : expected.value()) {
    const Tensor& other = actual.value().at(name);
    ASSERT_EQ(tensor.shape(), other.shape()) << name;
    ASSERT_EQ(tensor.dtype(), other.dtype()) << name;
    int64_t mismatches = 0;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      double a = tensor.value_as_double(i), b = other.value_as_double(i);
      if (std::abs(a - b) > tolerance) {
        if (++mismatches <= 5) ADD_FAILURE() << name << "[" << i << "]: " << a << " vs " << b;
      }
    }
    EXPECT_EQ(mismatches, 0) << name << ": " << mismatches << " of " << tensor.numel() << " elements differ";
  }
}

}  // namespace qdqrt::testing
