// Where the batch dimension is in every value of a model, found by building the model twice.
//
// The engine is built at the maximum batch N, where shape inference gives every value a static
// shape. The same model is also loaded and optimized at a probe batch P = N + 1 (engine.cpp). A
// value whose shapes at N and at P differ in exactly one dim, k * N against k * P, has its batch on
// that dim with k slices per image (PlanTensor::batch_axis / batch_factor); a value whose shapes
// are equal does not depend on the batch. Anything else (two dims change, a dim that is not a
// multiple of the batch, a value the probe graph lacks, a model that does not build at P) cannot
// be tracked, and the builder then makes the engine refuse every batch but N.
//
// Constants get the same test: an initializer of the optimized graph that differs at P (a shape
// computation folded at N, such as a Reshape target [N, 49, 384]) is only right at batch N.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "engine/plan.h"

namespace qdqrt::engine {

// The model optimized at a second batch, or why it could not be.
struct BatchProbe {
  int64_t batch = 0;           // 0: no input has a batch dim, nothing was probed
  std::optional<Graph> graph;  // optimized at `batch`
  std::string failure;         // set when graph is empty and batch > 0
};

class BatchTracker {
 public:
  // `at_max` is the optimized graph at `max_batch`; both graphs must outlive the tracker.
  BatchTracker(const Graph& at_max, int64_t max_batch, const BatchProbe& probe);

  // Where the batch is in runtime value `value`, or an error saying why it cannot be tracked.
  Result<BatchLayout> layout_of(const std::string& value) const;
  // True when constant `value` of the optimized graph is different at the probe batch.
  bool constant_follows_batch(const std::string& value) const { return batch_constants_.count(value) != 0; }

 private:
  const Graph& at_max_;
  int64_t max_batch_;
  const BatchProbe& probe_;
  std::unordered_set<std::string> batch_constants_;
  // Outputs of nodes that do not hold at the probe batch although shape inference let them pass
  // (ONNX's Reshape rule does not check the element count): value -> why.
  std::unordered_map<std::string, std::string> broken_at_probe_;
};

// `graph` (static shapes at the maximum batch, not yet optimized) again with dim 0 of
// `batched_inputs` set to `batch` and every other shape inferred anew. ONNX's shape inference does
// not know the qdqrt-domain fused layers of hand-written graphs: their output shapes come from the
// layer's rule (batch-transparent on dim 0, broadcasting, concatenation) and inference runs again.
Result<Graph> reload_at_batch(const Graph& graph, const std::vector<std::string>& batched_inputs, int64_t batch);

}  // namespace qdqrt::engine
