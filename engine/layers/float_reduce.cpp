// "fp32_reduce_mean": ReduceMean of a plain fp32 tensor over consecutive axes, keepdims or not (the
// last axis of a decomposed LayerNorm that Q/DQ pairs keep the LayerNorm fusion from matching, the
// spatial axes of a global mean). The means are the reference executor's bit for bit
// (kernels/reduce/fp32_reduce_mean.h: double sums in the reference's order). Params: axes (the
// reduced axes, ascending and consecutive). Every dim is read at run time, so the batch may be on
// any axis outside the reduced ones (any_batch_layout). Items: blocks of rows when the last axes are
// reduced, else (outer slice, block of columns).
//
// Axes that are not consecutive, a reduced batch axis, a runtime axes input and an identity
// (noop_with_empty_axes without axes) stay on the reference layer, which says why.
#include <algorithm>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/ops/reduce.h"
#include "engine/layers/float_common.h"
#include "kernels/reduce/fp32_reduce_mean.h"

namespace qdqrt::engine::fp32 {

namespace {

constexpr const char* kReduceMeanKind = "fp32_reduce_mean";
constexpr const char* kReduceMeanKernel = "f32-rmean-multiversion";
// Elements summed per work item, and inner columns per item when the reduced axes are not last.
constexpr int64_t kElementsPerItem = 16384;
constexpr int64_t kColumnsPerItem = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class ReduceMeanLayer final : public Layer {
 public:
  ReduceMeanLayer(int32_t input, int32_t output, size_t rank, size_t first_axis, size_t end_axis)
      : input_(input), output_(output), rank_(rank), first_axis_(first_axis), end_axis_(end_axis) {}

  WorkShape work(const RunState& state) const override {
    const Dims d = dims(state);
    if (d.inner == 1) {
      const int64_t rows = rows_per_item(d);
      return {.items = ceil_div(d.outer, rows), .ops_per_item = static_cast<double>(rows * d.reduced)};
    }
    return {.items = d.outer * ceil_div(d.inner, kColumnsPerItem),
            .ops_per_item = static_cast<double>(d.reduced * std::min(d.inner, kColumnsPerItem))};
  }

  void run(const RunState& state, int64_t begin, int64_t end, std::span<uint8_t>) const override {
    const Dims d = dims(state);
    const float* x = state.data<const float>(input_);
    float* y = state.data<float>(output_);
    if (d.inner == 1) {
      const int64_t rows = rows_per_item(d);
      const int64_t first = begin * rows, last = std::min(d.outer, end * rows);
      if (last > first) {
        kernels::f32_reduce_mean_rows(static_cast<size_t>(last - first), static_cast<size_t>(d.reduced),
                                      x + first * d.reduced, y + first);
      }
      return;
    }
    const int64_t blocks = ceil_div(d.inner, kColumnsPerItem);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t outer = item / blocks, column = item % blocks * kColumnsPerItem;
      const int64_t count = std::min(kColumnsPerItem, d.inner - column);
      kernels::f32_reduce_mean_columns(static_cast<size_t>(d.reduced), static_cast<size_t>(count),
                                       static_cast<size_t>(d.inner), x + outer * d.reduced * d.inner + column,
                                       y + outer * d.inner + column);
    }
  }

 private:
  struct Dims {
    int64_t outer = 1, reduced = 1, inner = 1;
  };
  // The input as [outer, reduced, inner] at this run's batch.
  Dims dims(const RunState& state) const {
    Dims d;
    for (size_t axis = 0; axis < rank_; ++axis) {
      int64_t& group = axis < first_axis_ ? d.outer : axis < end_axis_ ? d.reduced : d.inner;
      group *= state.dim(input_, axis);
    }
    return d;
  }
  static int64_t rows_per_item(const Dims& d) { return std::max<int64_t>(1, kElementsPerItem / d.reduced); }

  int32_t input_, output_;
  size_t rank_, first_axis_, end_axis_;
};

// The output shape of reducing [first, end) of `shape`.
Shape reduced_shape(const Shape& shape, size_t first, size_t end, bool keepdims) {
  Shape result;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    const bool reduced = axis >= first && axis < end;
    if (!reduced) result.push_back(shape[axis]);
    else if (keepdims) result.push_back(1);
  }
  return result;
}

Result<std::unique_ptr<Layer>> bind_reduce_mean(const BindContext& context) {
  if (context.layer().inputs.size() != 1 || context.layer().outputs.size() != 1) {
    return context.error("expects one input and one output");
  }
  QDQRT_BIND_ASSIGN(const PlanTensor* x, context, context.input(0));
  QDQRT_BIND_ASSIGN(const PlanTensor* y, context, context.output(0));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *x, "input", DataType::kFloat, -1));
  QDQRT_RETURN_IF_ERROR(expect_tensor(context, *y, "output", DataType::kFloat, -1));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, params::kReduceAxes.read_any(context));
  const size_t rank = x->shape.size();
  if (axes.empty() || static_cast<size_t>(axes.back()) >= rank) {
    return context.error(fmt::format("axes [{}] do not fit the input's rank {}", fmt::join(axes, ", "), rank));
  }
  for (size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] != axes[i - 1] + 1) {
      return context.error(fmt::format("axes [{}] are not ascending and consecutive", fmt::join(axes, ", ")));
    }
  }
  const size_t first = static_cast<size_t>(axes.front()), end = static_cast<size_t>(axes.back()) + 1;
  if (x->batched && static_cast<size_t>(x->batch_axis) >= first && static_cast<size_t>(x->batch_axis) < end) {
    return context.error(fmt::format("the input's batch axis {} is reduced", x->batch_axis));
  }
  const bool keepdims = y->shape.size() == rank;
  if (y->shape != reduced_shape(x->shape, first, end, keepdims)) {
    return context.error(fmt::format("output {} is not input {} reduced over axes [{}]", shape_to_string(y->shape),
                                     shape_to_string(x->shape), fmt::join(axes, ", ")));
  }
  BatchLayout expected = batch_layout_of(*x);
  if (expected.batched && !keepdims && static_cast<size_t>(expected.axis) >= end) {
    expected.axis -= static_cast<int32_t>(end - first);
  }
  if (batch_layout_of(*y) != expected) {
    return context.error(fmt::format("the output's batch (dim {}) is not where the input's (dim {}) leads",
                                     y->batch_axis, x->batch_axis));
  }
  return std::unique_ptr<Layer>(
      std::make_unique<ReduceMeanLayer>(context.layer().inputs[0], context.layer().outputs[0], rank, first, end));
}

bool accepts_reduce_mean(const Node& node, const BuildContext& context) {
  return !node.inputs.empty() && node.has_input(0) && node.outputs.size() == 1 &&
         value_dtype(context, node.input(0)) == DataType::kFloat &&
         value_dtype(context, node.outputs[0]) == DataType::kFloat;
}

Status lower_reduce_mean(const Node& node, BuildContext& context) {
  const auto& attributes = node.attrs<ReduceAttributes>();
  std::vector<int64_t> axes = attributes.axes;
  if (attributes.axes_from_input && node.has_input(1)) {
    const Tensor* constant = context.constant(node.input(1));
    if (constant == nullptr) {
      return lower_with_reference(node, context,
                                  "its axes input is computed at run time; the native ReduceMean takes constant axes");
    }
    axes.clear();
    for (int64_t i = 0; i < constant->numel(); ++i) axes.push_back(constant->value_as_int64(i));
  }
  QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(node.input(0)));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axes.empty()) {
    if (attributes.noop_with_empty_axes) {
      return lower_with_reference(node, context, "an identity (noop_with_empty_axes without axes)");
    }
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) return lower_with_reference(node, context);  // the reference names the error
    if (axis < 0) axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] != axes[i - 1] + 1) {
      return lower_with_reference(
          node, context,
          fmt::format("axes [{}] are not consecutive; the native ReduceMean reduces one run of axes",
                      fmt::join(axes, ", ")));
    }
  }
  if (rank == 0) return lower_with_reference(node, context, "a scalar input");
  QDQRT_ASSIGN_OR_RETURN(int32_t input, context.input(node.input(0), Layout::kPlain));
  const PlanTensor x = context.tensor(input);
  if (x.batched && x.batch_axis >= axes.front() && x.batch_axis <= axes.back()) {
    return lower_with_reference(node, context,
                                fmt::format("it reduces the batch axis {}, which mixes the images", x.batch_axis));
  }
  // The output's batch follows the input's (moved left by the dims a keepdims=0 drops before it).
  BatchLayout expected = batch_layout_of(x);
  if (expected.batched && !attributes.keepdims && expected.axis > axes.back()) {
    expected.axis -= static_cast<int32_t>(axes.size());
  }
  if (const std::optional<BatchLayout> y_batch = context.batch_layout(node.outputs[0]); y_batch && *y_batch != expected) {
    return lower_with_reference(node, context, "its output's batch is not where its input's leads");
  }
  PlanLayer layer = make_layer(node, kReduceMeanKind, kReduceMeanKernel);
  params::kReduceAxes.write(layer, axes);
  QDQRT_ASSIGN_OR_RETURN(int32_t output, context.output(node.outputs[0], Layout::kPlain));
  layer.inputs = {input};
  layer.outputs = {output};
  context.add_layer(std::move(layer));
  return Status::ok();
}

}  // namespace

void register_reduce(LayerRegistry& registry) {
  registry.add_kind({.kind = kReduceMeanKind, .bind = bind_reduce_mean, .any_batch_layout = true});
  registry.add_lowering({.domain = "",
                         .op_type = "ReduceMean",
                         .lower = lower_reduce_mean,
                         .accepts = accepts_reduce_mean,
                         .any_batch_layout = true});
}

}  // namespace qdqrt::engine::fp32
