// The engine builder: optimized graph -> EnginePlan (layers with chosen kernels and packed
// weights, tensor layouts, one activation arena planned by tensor lifetime).
#pragma once

#include <span>
#include <string>

#include "engine/batch_tracking.h"
#include "engine/engine.h"
#include "engine/plan.h"
#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::engine {

// Lowers an already optimized graph whose values all have static shapes (at the maximum batch).
// `batched_inputs` names the inputs whose dim 0 is the batch; the dims' expressions (shape
// inference on `optimized`, with its `shapes` report) tell where the batch is in every value
// (engine/batch_tracking.h).
Result<EnginePlan> build_plan(const Graph& optimized, const BuildOptions& options,
                              const std::vector<std::string>& batched_inputs, const ShapeInferenceReport& shapes);

// The plan of an ONNX model (what Engine::build_from_file / build_from_bytes bind): for
// RangeEngine, which shares packed weights between the plans of its shapes before binding.
Result<EnginePlan> build_plan_from_onnx_file(const std::string& onnx_path, const BuildOptions& options);
Result<EnginePlan> build_plan_from_onnx_bytes(std::span<const uint8_t> onnx_bytes, const BuildOptions& options);

// Assigns arena offsets to the plan's activation tensors by lifetime (first producer to last
// consumer in layer order) and sets arena_bytes / scratch_bytes_per_thread. An alias
// (PlanTensor::alias_of) takes its root's offset plus its own, and its layers count in the
// root's lifetime.
Status plan_memory(EnginePlan& plan);

}  // namespace qdqrt::engine
