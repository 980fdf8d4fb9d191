// Helpers for the shape inference tests: models in ONNX's text syntax loaded without ONNX's own
// inference, so that every value's dims come from qdqrt's shape functions.
#pragma once

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>

#include <algorithm>
#include <string>

#include "core/graph.h"
#include "core/shape_inference.h"
#include "parser/onnx_loader.h"

namespace qdqrt::testing {

// Drops the dims and elements of every value that is not a graph input.
inline void forget_shapes(Graph& graph) {
  for (auto& [name, info] : graph.values) {
    if (std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end()) continue;
    info.shape.reset();
    info.elements.reset();
  }
}

// Parses and loads, then forgets every shape but the graph inputs'; fails the test on error.
// `onnx_inference`: run ONNX's checker and inference at load (the element types of the values
// come from it); off for models ONNX's inference would refuse.
inline Graph load_forgetting_shapes(const std::string& text, bool onnx_inference) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  EXPECT_TRUE(status.IsOK()) << status.ErrorMessage() << "\n" << text;
  LoadOptions options;
  options.run_checker = onnx_inference;
  options.run_shape_inference = onnx_inference;
  auto graph = load_onnx_model(model, options);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string() << "\n" << text;
  if (!graph.ok()) return Graph{};
  forget_shapes(*graph);
  return std::move(graph.value());
}

// A graph after qdqrt's inference, with what it reported.
struct Inferred {
  Graph graph;
  ShapeInferenceReport report;
};

inline Inferred infer(const std::string& text, bool onnx_inference = true) {
  Inferred result{load_forgetting_shapes(text, onnx_inference), {}};
  Status status = infer_shapes(result.graph, &result.report);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return result;
}

// "[N, 49*N, 384]": each dim's expression, "?" for one without.
inline std::string dims_text(const std::vector<Dim>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    text += dims[i].expr.known() ? dims[i].expr.to_string() : "?";
  }
  return text + "]";
}

inline std::string dims_of(const Inferred& inferred, const std::string& value) {
  const ValueInfo* info = inferred.graph.find_value(value);
  if (info == nullptr || !info->shape) return "unknown rank";
  return dims_text(*info->shape);
}

inline std::string elements_of(const Inferred& inferred, const std::string& value) {
  const ValueInfo* info = inferred.graph.find_value(value);
  if (info == nullptr || !info->elements) return "none";
  return dims_text(*info->elements);
}

// Why the value was not followed ("" when it was).
inline std::string why_unfollowed(const Inferred& inferred, const std::string& value) {
  auto it = inferred.report.unfollowed.find(value);
  return it == inferred.report.unfollowed.end() ? "" : it->second;
}

}  // namespace qdqrt::testing
