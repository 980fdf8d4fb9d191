#include "tests/shape_inference/shape_test_util.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <algorithm>

#include "parser/onnx_loader.h"

namespace qdqrt::testing {

namespace {

template <typename Text>
std::string list(const OptionalDims& dims, const char* none, Text text) {
  if (!dims) return none;
  std::string result = "[";
  for (size_t i = 0; i < dims->size(); ++i) result += (i ? ", " : "") + text((*dims)[i]);
  return result + "]";
}

std::string expr_text(const Dim& dim) { return dim.expr.to_string(); }  // "?" without one

}  // namespace

Graph load_keeping_shapes(const std::string& text, bool onnx_inference) {
  onnx::ModelProto model;
  onnx::Status parsed = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(parsed.IsOK()) << parsed.ErrorMessage() << "\n" << text;
  LoadOptions options;
  options.run_checker = onnx_inference;
  options.run_shape_inference = onnx_inference;
  Result<Graph> graph = load_onnx_model(model, options);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string() << "\n" << text;
  if (!graph.ok()) return Graph{};
  return std::move(*graph);
}

Graph load_without_inference(const std::string& text) {
  Graph graph = load_keeping_shapes(text, /*onnx_inference=*/false);
  // Only the graph inputs keep their declared dims: the outputs' come from the shape functions.
  for (const std::string& output : graph.outputs) graph.values[output].shape.reset();
  return graph;
}

void forget_shapes(Graph& graph) {
  for (auto& [name, info] : graph.values) {
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end()) continue;
    info.shape.reset();
    info.elements.reset();
  }
}

Graph load_forgetting_shapes(const std::string& text, bool onnx_inference) {
  Graph graph = load_keeping_shapes(text, onnx_inference);
  forget_shapes(graph);
  return graph;
}

void set_dims(Graph& graph, const std::string& name, const Dims& dims) {
  ValueInfo& info = graph.values[name];
  info.name = name;
  info.shape = dims;
}

void set_elements(Graph& graph, const std::string& name, const Dims& elements) {
  ValueInfo& info = graph.values[name];
  info.name = name;
  info.elements = elements;
}

ShapeInferenceReport infer(Graph& graph) {
  ShapeInferenceReport report;
  Status status = infer_shapes(graph, &report);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return report;
}

Inferred infer(const std::string& text, bool onnx_inference) {
  Inferred result{load_forgetting_shapes(text, onnx_inference), {}};
  result.report = infer(result.graph);
  return result;
}

std::string dims_text(const Dims& dims) { return list(dims, "", expr_text); }

std::string exprs(const Graph& graph, const std::string& name) {
  const ValueInfo* info = graph.find_value(name);
  return list(info ? info->shape : std::nullopt, "unknown rank", expr_text);
}

std::string values(const Graph& graph, const std::string& name) {
  const ValueInfo* info = graph.find_value(name);
  return list(info ? info->shape : std::nullopt, "unknown rank",
              [](const Dim& dim) { return std::to_string(dim.value); });
}

std::string elements(const Graph& graph, const std::string& name) {
  const ValueInfo* info = graph.find_value(name);
  return list(info ? info->elements : std::nullopt, "none", expr_text);
}

int64_t evaluate(const Graph& graph, const std::string& name, size_t axis, const SymbolValues& symbols) {
  const ValueInfo* info = graph.find_value(name);
  if (info == nullptr || !info->shape || axis >= info->shape->size()) return -1;
  return (*info->shape)[axis].expr.evaluate(symbols).value_or(-1);
}

std::string why_unfollowed(const ShapeInferenceReport& report, const std::string& name) {
  auto it = report.unfollowed.find(name);
  return it == report.unfollowed.end() ? "" : it->second;
}

void expect_unfollowed(const ShapeInferenceReport& report, const std::string& name, const std::string& part) {
  const std::string why = why_unfollowed(report, name);
  EXPECT_NE(why.find(part), std::string::npos) << name << ": lacks '" << part << "': " << why;
}

void add_input(Graph& graph, const std::string& name, DataType dtype, const OptionalDims& dims) {
  graph.inputs.push_back(name);
  ValueInfo& info = graph.values[name];
  info.name = name;
  info.dtype = dtype;
  info.shape = dims;
}

void add_node(Graph& graph, const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
              std::vector<std::string> outputs, AttributeMap attributes) {
  Node node;
  node.name = name;
  node.op_type = op_type;
  node.opset = graph.opsets.at(kOnnxDomain);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  graph.nodes.push_back(std::move(node));
}

}  // namespace qdqrt::testing
