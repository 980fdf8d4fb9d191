// Where the batch dimension is in every value of a model, from the dims' expressions.
//
// The engine is built at the maximum batch N. Before optimizing, the builder names dim 0 of every
// batched input the symbol kBatchSymbol; qdqrt's shape inference (core/shape_inference.h) then
// gives every dim of every value an expression of it, through the optimizer's folds too (a
// Reshape target computed by Shape -> Gather -> Concat keeps its elements as expressions). A value
// whose dims evaluate to the same sizes at N and at a probe batch P = N + 1 does not depend on the
// batch; one that differs in exactly one dim, k * N against k * P, has its batch on that dim with
// k slices per image (PlanTensor::batch_axis / batch_factor). Anything else (two dims change, a dim
// that is not a multiple of the batch, a dim without an expression because an op has no shape
// function or the file's shape disagrees) cannot be tracked, and the builder then makes the engine
// refuse every batch but N.
//
// Constants get the same test: a constant the optimizer computed from runtime shapes follows the
// batch unless its elements' expressions show it does not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/graph.h"
#include "core/shape_inference.h"
#include "core/status.h"
#include "engine/plan.h"

namespace qdqrt::engine {

// The name of the batch in dims' expressions.
inline constexpr const char* kBatchSymbol = "N";

// Names dim 0 of each of `batched_inputs` the batch (its value stays the maximum batch).
void mark_batch_dims(Graph& graph, const std::vector<std::string>& batched_inputs);

class BatchTracker {
 public:
  // `optimized` has the dims' expressions of shape inference run on it (with `report`); both must
  // outlive the tracker. `batched` is false when no input has a batch dim: nothing follows it.
  BatchTracker(const Graph& optimized, int64_t max_batch, bool batched, const ShapeInferenceReport& report);

  // Where the batch is in runtime value `value`, or an error saying why it cannot be tracked.
  Result<BatchLayout> layout_of(const std::string& value) const;
  // True when constant `value` of the optimized graph is different at another batch.
  bool constant_follows_batch(const std::string& value) const;

 private:
  const Graph& graph_;
  int64_t max_batch_;
  int64_t probe_batch_;  // 0: nothing is batched
  const ShapeInferenceReport& report_;
  // Outputs of reshaping nodes whose element count does not follow the batch although their input
  // does (a target shape constant at the maximum batch): value -> why.
  std::unordered_map<std::string, std::string> broken_at_probe_;
};

}  // namespace qdqrt::engine
