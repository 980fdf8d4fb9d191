// Helpers for the graph-level pass tests: graphs from ONNX text syntax, op counts, and
// numeric comparison of a graph before and after passes with the reference executor.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "optimizer/pipeline.h"
#include "core/graph.h"
#include "reference/executor.h"

namespace qdqrt::testing {

// Parses ONNX text syntax (onnx::OnnxParser) and loads it; fails the test on error.
Graph parse_graph(const std::string& text);

// How many nodes have this op type.
int count_ops(const Graph& graph, const std::string& op_type);
// Op types in node order: "Conv,Relu,QuantizeLinear".
std::string op_sequence(const Graph& graph);

// Runs only the named passes (pipeline order) on a copy; fails the test on error. `float_only`:
// of the float pipeline (OptimizeOptions::float_only); an empty list then runs all of it.
Graph run_passes(const Graph& graph, const std::vector<std::string>& passes, bool float_only = false);

// Seeded uniform inputs in [-range, range] (float) or the full range (int8/uint8) for every
// graph input with a static shape.
TensorMap random_inputs(const Graph& graph, unsigned seed, float range = 2.0f);

// Runs both graphs on the same inputs; float outputs must agree within
// absolute_tolerance + relative_tolerance * |expected|, integer outputs within `lsb`.
void expect_same_outputs(const Graph& original, const Graph& rewritten, const TensorMap& inputs,
                         double absolute_tolerance = 1e-5, double relative_tolerance = 1e-5, int64_t lsb = 0);

}  // namespace qdqrt::testing

namespace qdqrt::testing {

// "{v0, v1, ...}" for ONNX text initializers: `count` seeded uniform values in [low, high]
// (rounded to integers when `integers`).
std::string literal(int count, unsigned seed, float low, float high, bool integers = false);

}  // namespace qdqrt::testing
