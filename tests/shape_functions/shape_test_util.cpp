#include "tests/shape_functions/shape_test_util.h"

#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include "core/op_registry.h"
#include "parser/onnx_loader.h"

namespace qdqrt::testing {

Graph load_without_inference(const std::string& text) {
  onnx::ModelProto model;
  onnx::Status parsed = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(parsed.IsOK()) << parsed.ErrorMessage() << "\n" << text;
  LoadOptions options;
  options.run_checker = false;
  options.run_shape_inference = false;
  Result<Graph> graph = load_onnx_model(model, options);
  EXPECT_TRUE(graph.ok()) << graph.status().message() << "\n" << text;
  if (!graph.ok()) return Graph{};
  // Only the graph inputs keep their declared dims: the outputs' come from the shape functions.
  for (const std::string& output : graph->outputs) graph->values[output].shape.reset();
  return std::move(*graph);
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
  EXPECT_TRUE(status.is_ok()) << status.message();
  return report;
}

namespace {

template <typename Text>
std::string list(const std::optional<std::vector<Dim>>& dims, const char* none, Text text) {
  if (!dims) return none;
  std::string result = "[";
  for (size_t i = 0; i < dims->size(); ++i) result += (i ? ", " : "") + text((*dims)[i]);
  return result + "]";
}

}  // namespace

std::string exprs(const Graph& graph, const std::string& name) {
  const ValueInfo* info = graph.find_value(name);
  return list(info ? info->shape : std::nullopt, "unknown", [](const Dim& dim) { return dim.expr.to_string(); });
}

std::string values(const Graph& graph, const std::string& name) {
  const ValueInfo* info = graph.find_value(name);
  return list(info ? info->shape : std::nullopt, "unknown", [](const Dim& dim) { return std::to_string(dim.value); });
}

std::string elements(const Graph& graph, const std::string& name) {
  const ValueInfo* info = graph.find_value(name);
  return list(info ? info->elements : std::nullopt, "none", [](const Dim& dim) { return dim.expr.to_string(); });
}

int64_t evaluate(const Graph& graph, const std::string& name, size_t axis, const SymbolValues& symbols) {
  const ValueInfo* info = graph.find_value(name);
  if (info == nullptr || !info->shape || axis >= info->shape->size()) return -1;
  return (*info->shape)[axis].expr.evaluate(symbols).value_or(-1);
}

bool tensor_shape_functions_registered() {
  for (const char* op_type : {"Shape", "Slice", "Gather", "Concat", "Reshape"}) {
    const OpSchema* schema = OpRegistry::instance().find(kOnnxDomain, op_type);
    if (schema == nullptr || schema->infer_shape == nullptr) return false;
  }
  return true;
}

std::string why_unfollowed(const ShapeInferenceReport& report, const std::string& name) {
  auto it = report.unfollowed.find(name);
  return it == report.unfollowed.end() ? "" : it->second;
}

}  // namespace qdqrt::testing
