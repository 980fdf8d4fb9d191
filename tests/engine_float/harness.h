// A minimal builder + runtime for testing layer families before/independently of engine/builder.cpp:
// lowers every node of a graph in order through LayerRegistry (fallback lower_with_reference),
// every tensor plain and in its own buffer, binds each layer, and runs the items of every layer
// split into `chunks` ranges (to exercise the splits) on the calling thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/layer.h"
#include "engine/plan.h"
#include "core/graph.h"
#include "reference/executor.h"

namespace qdqrt::testing {

// Loads ONNX text (checker + shape inference) with graph inputs at max batch `max_batch`.
Result<Graph> load_text_graph(const std::string& text, int64_t max_batch);
Result<Graph> load_file_graph(const std::string& path, int64_t max_batch);

struct HarnessPlan {
  engine::EnginePlan plan;
  std::vector<std::unique_ptr<engine::Layer>> layers;
};

// Graph inputs are batched (dim 0); a node's outputs are batched when one of its runtime inputs is.
// all_reference: every node through lower_with_reference (not the registered lowerings).
Result<HarnessPlan> harness_build(const Graph& graph, int64_t max_batch, bool all_reference = false);
Result<std::unique_ptr<engine::Layer>> harness_bind(const engine::EnginePlan& plan, size_t layer);
Result<TensorMap> harness_run(const HarnessPlan& built, const TensorMap& inputs, int64_t chunks);

// Random inputs at `batch` for every graph input (shape from the graph, dim 0 replaced).
TensorMap random_inputs(const Graph& graph, int64_t batch, uint32_t seed);

// max |a - b| / max(max |b|, 1e-6) over the tensors (1e9 on shape/dtype mismatch).
double relative_error(const Tensor& actual, const Tensor& expected);

// "float[2,3] w = {...}" (ONNX text initializer) with values uniform in [low, high].
std::string weights(const std::string& name, const std::vector<int64_t>& shape, float low = -1.0f, float high = 1.0f,
                    uint32_t seed = 7);

std::vector<std::string> layer_kinds(const engine::EnginePlan& plan);

}  // namespace qdqrt::testing
