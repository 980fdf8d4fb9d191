// Helpers for the shape inference tests: models in ONNX's text syntax loaded without ONNX's own
// inference (so that every derived dim is qdqrt's), dynamic dims and elements set on the graph
// inputs, and the derived dims read back as expressions and values.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/shape_inference.h"

namespace qdqrt::testing {

// Parses ONNX text syntax and loads it, the shapes as the text writes them; `onnx_inference`: run
// ONNX's checker and inference at load. Fails the test on error.
Graph load_keeping_shapes(const std::string& text, bool onnx_inference = false);

// Parses ONNX text syntax and loads it without ONNX's checker and shape inference, and forgets the
// graph outputs' declared dims; fails the test on error.
Graph load_without_inference(const std::string& text);

// Drops the dims and elements of every value that is not a graph input.
void forget_shapes(Graph& graph);

// Parses and loads, then forgets every shape but the graph inputs'; fails the test on error.
// `onnx_inference` as above (the element types of the values come from it); off for models ONNX's
// inference would refuse.
Graph load_forgetting_shapes(const std::string& text, bool onnx_inference);

// Sets the dims (values and expressions) of a graph input or value.
void set_dims(Graph& graph, const std::string& name, const Dims& dims);
// Sets the followed elements of a graph input (a shape tensor computed before the graph).
void set_elements(Graph& graph, const std::string& name, const Dims& elements);

// Runs infer_shapes; fails the test if it fails.
ShapeInferenceReport infer(Graph& graph);

// A graph after qdqrt's inference, with what it reported.
struct Inferred {
  Graph graph;
  ShapeInferenceReport report;
};

// load_forgetting_shapes, then infer.
Inferred infer(const std::string& text, bool onnx_inference = true);

// "[N, 49*N, 384]": each dim's expression, "?" for one without.
std::string dims_text(const Dims& dims);

// A value's dims as expressions (dims_text); "unknown rank" without a shape.
std::string exprs(const Graph& graph, const std::string& name);
inline std::string exprs(const Inferred& inferred, const std::string& name) { return exprs(inferred.graph, name); }
// A value's dims as values, "[2, 8, -1]"; "unknown rank" without a shape.
std::string values(const Graph& graph, const std::string& name);
// A value's followed elements as expressions; "none" when not followed.
std::string elements(const Graph& graph, const std::string& name);
inline std::string elements(const Inferred& inferred, const std::string& name) {
  return elements(inferred.graph, name);
}
// Dim `axis` of a value's expression evaluated at `symbols`; -1 when it has none.
int64_t evaluate(const Graph& graph, const std::string& name, size_t axis, const SymbolValues& symbols);

// Why inference did not derive the value ("" when it did).
std::string why_unfollowed(const ShapeInferenceReport& report, const std::string& name);
inline std::string why_unfollowed(const Inferred& inferred, const std::string& name) {
  return why_unfollowed(inferred.report, name);
}
// Expects inference not to have derived the value, for a reason that holds `part` (an error names
// the node: "Add 'Add_0': ...").
void expect_unfollowed(const ShapeInferenceReport& report, const std::string& name, const std::string& part);

// Graphs built in memory (no loader to check them): a graph input, and a node at the graph's
// ai.onnx opset.
void add_input(Graph& graph, const std::string& name, DataType dtype, const OptionalDims& dims = std::nullopt);
void add_node(Graph& graph, const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
              std::vector<std::string> outputs, AttributeMap attributes = {});

}  // namespace qdqrt::testing
