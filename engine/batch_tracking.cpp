#include "engine/batch_tracking.h"

#include <fmt/format.h>

#include <algorithm>

namespace qdqrt::engine {

namespace {

// The dims of `value` evaluated with the batch at `batch`; nullopt when one has no expression.
std::optional<Shape> shape_at(const std::vector<Dim>& dims, int64_t batch) {
  const SymbolValues at{{kBatchSymbol, batch}};
  Shape shape;
  for (const Dim& dim : dims) {
    std::optional<int64_t> value = dim.expr.evaluate(at);
    if (!value || *value < 0) return std::nullopt;
    shape.push_back(*value);
  }
  return shape;
}

const std::vector<Dim>* dims_of(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.find_value(value);
  return info && info->shape ? &*info->shape : nullptr;
}

}  // namespace

void mark_batch_dims(Graph& graph, const std::vector<std::string>& batched_inputs) {
  for (const std::string& name : batched_inputs) {
    auto it = graph.values.find(name);
    if (it == graph.values.end() || !it->second.shape || it->second.shape->empty()) continue;
    Dim& dim = it->second.shape->front();
    dim.expr = DimExpr::symbol(kBatchSymbol);
  }
}

BatchTracker::BatchTracker(const Graph& optimized, int64_t max_batch, bool batched, const ShapeInferenceReport& report)
    : graph_(optimized), max_batch_(max_batch), probe_batch_(batched ? max_batch + 1 : 0), report_(report) {
  if (probe_batch_ == 0) return;
  // A Reshape to a constant shape with the batch in it ([4, 64, 64]) keeps its output shape at
  // the probe batch while its input grows: their element counts tell.
  for (const Node& node : graph_.nodes) {
    if (!node.domain.empty() || node.outputs.empty() ||
        (node.op_type != "Reshape" && node.op_type != "Flatten" && node.op_type != "Squeeze" &&
         node.op_type != "Unsqueeze")) {
      continue;
    }
    const std::vector<Dim>* input = dims_of(graph_, node.input(0));
    const std::vector<Dim>* output = dims_of(graph_, node.outputs[0]);
    if (!input || !output) continue;
    std::optional<Shape> input_at_probe = shape_at(*input, probe_batch_);
    std::optional<Shape> output_at_probe = shape_at(*output, probe_batch_);
    if (input_at_probe && output_at_probe && shape_numel(*input_at_probe) != shape_numel(*output_at_probe)) {
      broken_at_probe_[node.outputs[0]] =
          fmt::format("the model does not build at batch {}: {} cannot make {} into {} (a target shape that does "
                      "not follow the batch)",
                      probe_batch_, node.describe(), shape_to_string(*input_at_probe),
                      shape_to_string(*output_at_probe));
    }
  }
}

Result<BatchLayout> BatchTracker::layout_of(const std::string& value) const {
  if (probe_batch_ == 0) return BatchLayout{};
  if (auto broken = broken_at_probe_.find(value); broken != broken_at_probe_.end()) {
    return invalid_model("{}", broken->second);
  }
  const ValueInfo* info = graph_.find_value(value);
  std::optional<Shape> shape = info ? info->static_shape() : std::nullopt;
  if (!shape) return invalid_model("'{}' has no static shape at batch {}", value, max_batch_);
  std::optional<Shape> probed_shape = shape_at(*info->shape, probe_batch_);
  if (!probed_shape || shape_at(*info->shape, max_batch_) != shape) {
    auto why = report_.unfollowed.find(value);
    return invalid_model("the batch dim of '{}' {} cannot be tracked: {}", value, shape_to_string(*shape),
                         why != report_.unfollowed.end() ? why->second
                                                         : fmt::format("its dims {} are not all expressions of the "
                                                                       "batch", dims_to_string(*info->shape)));
  }
  auto mismatch = [&](const std::string& why) {
    return invalid_model("the batch dim of '{}' cannot be tracked: shape {} at batch {}, {} at batch {} ({})", value,
                         shape_to_string(*shape), max_batch_, shape_to_string(*probed_shape), probe_batch_, why);
  };
  BatchLayout layout;
  for (size_t axis = 0; axis < shape->size(); ++axis) {
    const int64_t at_max = (*shape)[axis], at_probe = (*probed_shape)[axis];
    if (at_max == at_probe) {
      // Equal at both batches yet an expression of the batch (N/3 of a split batch axis): it
      // changes at other batches, and not as a multiple of the batch.
      if ((*info->shape)[axis].expr.depends_on(kBatchSymbol)) {
        return mismatch(fmt::format("dim {} is {} of the batch, not a multiple of it", axis,
                                    (*info->shape)[axis].expr.to_string()));
      }
      continue;
    }
    if (layout.batched) return mismatch("two dims change with the batch");
    const int64_t factor = at_max / max_batch_;
    if (factor < 1 || at_max != factor * max_batch_ || at_probe != factor * probe_batch_) {
      return mismatch(fmt::format("dim {} is not a multiple of the batch", axis));
    }
    layout = {.batched = true, .axis = static_cast<int32_t>(axis), .factor = factor};
  }
  return layout;
}

bool BatchTracker::constant_follows_batch(const std::string& value) const {
  if (probe_batch_ == 0) return false;
  const ValueInfo* info = graph_.find_value(value);
  if (info == nullptr || !info->from_runtime_shapes) return false;
  if (!info->elements) return true;
  return std::any_of(info->elements->begin(), info->elements->end(),
                     [](const Dim& element) { return !element.expr.known() || element.expr.depends_on(kBatchSymbol); });
}

}  // namespace qdqrt::engine
