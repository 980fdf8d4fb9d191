// A small stand-alone builder/runner for the INT8 layer family, independent of engine/builder.cpp:
// it lowers an optimized graph through the LayerRegistry (the same lowerings and bind functions
// the engine uses), inserts its own test reorders when a layer asks for another layout, runs
// every node without an accepted lowering through run_reference_node, then binds and runs the
// layers with real threads on disjoint item ranges. It exercises lowering + bind + run of each
// layer kind in isolation, at any batch up to the maximum, and lets tests tamper with plans.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/layer.h"
#include "engine/plan.h"
#include "kernels/cpu_features.h"
#include "core/graph.h"
#include "reference/executor.h"

namespace qdqrt::testing {

struct HarnessPlan {
  engine::EnginePlan plan;
  const Graph* graph = nullptr;
  // Layers the harness made itself (reorders, reference nodes) by layer index.
  std::vector<int> harness_node;  // -1: registry layer, -2: reorder, >= 0: reference node index
  int native_layers = 0;          // layers lowered by the registry
};

// Lowers `graph` (static shapes at the maximum batch `max_batch`; a value is batched when its
// dim 0 equals max_batch). The graph must outlive the plan.
Result<HarnessPlan> harness_lower(const Graph& graph, int64_t max_batch, kernels::Isa isa);

// Binds every layer (errors are the bind errors) ...
Result<std::vector<std::unique_ptr<engine::Layer>>> harness_bind(const HarnessPlan& plan);

// ... and runs it at `batch` (inputs' dim 0) with `threads` threads per layer.
Result<TensorMap> harness_run(const HarnessPlan& plan, const std::vector<std::unique_ptr<engine::Layer>>& layers,
                              const TensorMap& inputs, int threads);

// The kinds of the plan's registry layers, in order.
std::vector<std::string> native_kinds(const HarnessPlan& plan);

}  // namespace qdqrt::testing
