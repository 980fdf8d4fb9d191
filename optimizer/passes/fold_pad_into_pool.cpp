#include "optimizer/passes/fold_pad_into_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/attribute_values.h"
#include "core/ops/pool.h"
#include "core/ops/tensor.h"
#include "core/ops/window.h"

namespace qdqrt::optimizer {

namespace {

// The Pad's pads over every axis of a rank-`rank` input ([begin..., end...]), or a reason.
std::optional<std::vector<int64_t>> constant_pads(const Graph& graph, const Node& pad, size_t rank,
                                                  std::string& reason) {
  const auto& attributes = pad.attrs<PadAttributes>();
  std::vector<int64_t> given = attributes.pads;
  if (attributes.pads_from_input) {
    const Tensor* pads = find_constant(graph, pad.input(1));
    if (pads == nullptr) {
      reason = "its pads are computed at run time";
      return std::nullopt;
    }
    given = pads->to_int64_vector();
  }
  std::vector<int64_t> axes;
  if (attributes.pads_from_input && pad.has_input(3)) {
    const Tensor* axes_tensor = find_constant(graph, pad.input(3));
    if (axes_tensor == nullptr) {
      reason = "its axes are computed at run time";
      return std::nullopt;
    }
    for (int64_t axis : axes_tensor->to_int64_vector()) {
      axes.push_back(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
    }
  } else {
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  if (given.size() != 2 * axes.size()) {
    reason = fmt::format("its {} pads do not match {} axes", given.size(), axes.size());
    return std::nullopt;
  }
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(rank)) {
      reason = fmt::format("axis {} is out of range for rank {}", axes[i], rank);
      return std::nullopt;
    }
    pads[static_cast<size_t>(axes[i])] = given[i];
    pads[rank + static_cast<size_t>(axes[i])] = given[axes.size() + i];
  }
  return pads;
}

// The Pad writes zeros: constant mode with value 0 (absent, or a constant 0).
bool pads_with_zero(const Graph& graph, const Node& pad, std::string& reason) {
  const auto& attributes = pad.attrs<PadAttributes>();
  if (attributes.mode != PadMode::kConstant) {
    reason = "it is not a constant-mode Pad (reflect, edge and wrap repeat the input, which the pool's pads do not)";
    return false;
  }
  float value = attributes.constant_value;
  if (attributes.pads_from_input && pad.has_input(2)) {
    const Tensor* constant = find_constant(graph, pad.input(2));
    if (constant == nullptr || constant->numel() != 1) {
      reason = "its constant_value is not a constant scalar";
      return false;
    }
    value = static_cast<float>(constant->value_as_double(0));
  }
  if (value != 0.0f) {
    reason = fmt::format("it pads with {}, not 0 (the pool's pads count as zeros)", value);
    return false;
  }
  return true;
}

class FoldPadIntoPoolPass : public Pass {
 public:
  std::string name() const override { return "fold_pad_into_pool"; }
  // The pads come from Constant nodes fold_constants turns into initializers.
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    ValueIndex index(graph);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!graph.nodes[n].domain.empty() || graph.nodes[n].op_type != "AveragePool") continue;
      PadPoolSelection selection = select_pad_pool_fold(graph, index, static_cast<int>(n));
      if (!selection.fold) continue;
      Node& pool = graph.nodes[n];
      pool.inputs[0] = selection.fold->pad_input;
      pool.attributes["pads"] = ints_attribute(selection.fold->pads);
      pool.attributes.erase("auto_pad");  // NOTSET or VALID: explicit pads from now on
      if (selection.fold->count_include_pad) pool.attributes["count_include_pad"] = int_attribute(1);
      QDQRT_RETURN_IF_ERROR(parse_typed_attributes(pool));
      changed = true;
      index = ValueIndex(graph);
    }
    if (changed) remove_unused(graph);  // the Pads no other node reads
    return Status::ok();
  }
};

}  // namespace

PadPoolSelection select_pad_pool_fold(const Graph& graph, const ValueIndex& index, int pool_index) {
  PadPoolSelection result;
  const Node& pool = graph.nodes[static_cast<size_t>(pool_index)];
  if (!pool.domain.empty() || pool.op_type != "AveragePool" || !pool.has_input(0)) return result;
  const int producer = index.producer(pool.input(0));
  if (producer < 0) return result;
  const Node& pad = graph.nodes[static_cast<size_t>(producer)];
  if (!pad.domain.empty() || pad.op_type != "Pad" || !pad.has_input(0)) return result;
  std::string& reason = result.reason;
  const auto& attributes = pool.attrs<AveragePoolAttributes>();
  const size_t spatial = attributes.kernel_shape.size();
  const size_t rank = spatial + 2;
  if (!pads_with_zero(graph, pad, reason)) return result;
  std::optional<std::vector<int64_t>> pads = constant_pads(graph, pad, rank, reason);
  if (!pads) return result;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[rank] != 0 || (*pads)[rank + 1] != 0) {
    reason = "it pads the batch or channel axis, which the pool does not window";
    return result;
  }
  if (std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p < 0; })) {
    reason = "a negative pad crops the input";
    return result;
  }
  if (attributes.auto_pad == AutoPad::kSameUpper || attributes.auto_pad == AutoPad::kSameLower) {
    reason = "the pool's pads are auto_pad SAME_*, computed from the padded size";
    return result;
  }
  std::vector<int64_t> pool_pads = attributes.pads;
  if (attributes.auto_pad == AutoPad::kValid || pool_pads.empty()) pool_pads.assign(2 * spatial, 0);
  if (pool_pads.size() != 2 * spatial) {
    reason = fmt::format("the pool has {} pads for {} spatial axes", pool_pads.size(), spatial);
    return result;
  }
  const bool pad_adds = std::any_of(pads->begin(), pads->end(), [](int64_t p) { return p != 0; });
  const bool pool_pads_any = std::any_of(pool_pads.begin(), pool_pads.end(), [](int64_t p) { return p != 0; });
  if (pad_adds && pool_pads_any && !attributes.count_include_pad) {
    reason = "the pool excludes its own pads from the count (count_include_pad=0) but the Pad's zeros count";
    return result;
  }
  if (pad_adds && pool.opset < 7) {
    reason = fmt::format("AveragePool opset {} has no count_include_pad", pool.opset);
    return result;
  }
  PadPoolFold fold;
  fold.pad_input = pad.input(0);
  fold.count_include_pad = pad_adds;
  for (size_t axis = 0; axis < spatial; ++axis) {
    fold.pads.push_back(pool_pads[axis] + (*pads)[2 + axis]);
  }
  for (size_t axis = 0; axis < spatial; ++axis) {
    fold.pads.push_back(pool_pads[spatial + axis] + (*pads)[rank + 2 + axis]);
  }
  // With ceil_mode the last window must start inside the input or its begin pad: the Pad's end
  // zeros are input before the fold, pads after. Folded only where the window count is the same.
  if (attributes.ceil_mode && pad_adds) {
    const ValueInfo* info = graph.find_value(pad.input(0));
    const std::optional<Shape> shape = info == nullptr ? std::nullopt : info->static_shape();
    if (!shape || shape->size() != rank) {
      reason = "ceil_mode with an input whose spatial size is not known at build";
      return result;
    }
    for (size_t axis = 0; axis < spatial; ++axis) {
      const int64_t input = (*shape)[2 + axis];
      const int64_t kernel = attributes.kernel_shape[axis];
      const int64_t stride = attributes.strides.empty() ? 1 : attributes.strides[axis];
      const int64_t dilation = attributes.dilations.empty() ? 1 : attributes.dilations[axis];
      const int64_t padded = input + (*pads)[2 + axis] + (*pads)[rank + 2 + axis];
      const int64_t before = window_output_size(padded, kernel, stride, dilation, pool_pads[axis],
                                                pool_pads[spatial + axis], true);
      const int64_t after =
          window_output_size(input, kernel, stride, dilation, fold.pads[axis], fold.pads[spatial + axis], true);
      if (before != after) {
        reason = fmt::format("ceil_mode places {} windows on axis {} with the Pad, {} with the pads folded", before,
                             2 + axis, after);
        return result;
      }
    }
  }
  result.fold = std::move(fold);
  return result;
}

std::unique_ptr<Pass> make_fold_pad_into_pool_pass() { return std::make_unique<FoldPadIntoPoolPass>(); }

}  // namespace qdqrt::optimizer
