// Helpers for the op families' shape-function tests: graphs from ONNX text loaded without ONNX's
// shape inference (so every derived dim is qdqrt's), dynamic dims set on the graph inputs, and
// the derived dims read back as values and expressions.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/graph.h"
#include "core/shape_inference.h"

namespace qdqrt::testing {

// Parses ONNX text syntax and loads it without ONNX's checker and shape inference, and forgets the
// graph outputs' declared dims; fails the test on error.
Graph load_without_inference(const std::string& text);

// Sets the dims (values and expressions) of a graph input or value.
void set_dims(Graph& graph, const std::string& name, const Dims& dims);
// Sets the followed elements of a graph input (a shape tensor computed before the graph).
void set_elements(Graph& graph, const std::string& name, const Dims& elements);

// Runs infer_shapes; fails the test if it fails.
ShapeInferenceReport infer(Graph& graph);

// A value's dims as expressions, "[N, 8, 2*H]" ("?" for a dim without one); "unknown" without a
// shape.
std::string exprs(const Graph& graph, const std::string& name);
// A value's dims as values, "[2, 8, -1]"; "unknown" without a shape.
std::string values(const Graph& graph, const std::string& name);
// A value's followed elements as expressions; "none" when not followed.
std::string elements(const Graph& graph, const std::string& name);
// Dim `axis` of a value's expression evaluated at `symbols`; -1 when it has none.
int64_t evaluate(const Graph& graph, const std::string& name, size_t axis, const SymbolValues& symbols);
// Whether the tensor ops (Shape, Slice, Gather, Concat, Reshape) have shape functions: the tests of
// shape computations through them need them.
bool tensor_shape_functions_registered();
// Why inference did not derive the value ("" when it did).
std::string why_unfollowed(const ShapeInferenceReport& report, const std::string& name);

}  // namespace qdqrt::testing
