// Helpers for the fusion pass tests: tiny QDQ models in ONNX text syntax with random constants,
// run before and after a pass with the reference executor.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "optimizer/pass.h"
#include "core/graph.h"
#include "reference/executor.h"

namespace qdqrt::testing {

// "int8[2,3] w = {1, -2, ...}" with values uniform in [low, high].
std::string int_initializer(const std::string& type, const std::string& name, const std::vector<int64_t>& shape,
                            int low, int high, std::mt19937& rng);
std::string float_initializer(const std::string& name, const std::vector<int64_t>& shape, float low, float high,
                              std::mt19937& rng);
std::string float_values(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values);

// Parses + loads (checker and shape inference on); fails the test on error.
Graph load_text(const std::string& text);

// Random float inputs in [low, high] for every graph input.
TensorMap random_inputs(const Graph& graph, std::mt19937& rng, float low = -2.0f, float high = 2.0f);

// Runs the pass on a copy; returns the optimized graph and the context.
Graph run_pass(const Graph& graph, optimizer::Pass& pass, optimizer::PassContext& context);

int count_ops(const Graph& graph, const std::string& op_type);
const Node* find_op(const Graph& graph, const std::string& op_type);
std::string float_reason(const optimizer::PassContext& context, const std::string& node);
// The reason recorded for the node of `graph` that writes `value` (the loader names nodes itself).
std::string float_reason_for(const Graph& graph, const optimizer::PassContext& context, const std::string& value);

// Runs both graphs on the same inputs; every output element within `tolerance`.
void expect_same_outputs(const Graph& original, const Graph& optimized, const TensorMap& inputs, float tolerance);

}  // namespace qdqrt::testing
