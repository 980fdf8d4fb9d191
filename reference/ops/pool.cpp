// Reference MaxPool (float32, int8, uint8; optional Indices), AveragePool (float32),
// GlobalAveragePool and GlobalMaxPool.
#include <algorithm>
#include <limits>

#include "core/ops/pool.h"
#include "core/ops/window.h"
#include "reference/kernel_registry.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt {

namespace {

using namespace reference;

struct PoolPlan {
  int64_t batch = 0, channels = 0;
  WindowGeometry geometry;
  Shape output_shape;
};

Result<PoolPlan> plan_pool(const Node& node, const Tensor& x, const PoolAttributes& attributes) {
  QDQRT_RETURN_IF_ERROR(expect_rank_at_least(node, x, "input X", 3));
  if (static_cast<int64_t>(attributes.kernel_shape.size()) != x.rank() - 2) {
    return invalid_argument("{}: kernel_shape has {} axes, input X {} has {} spatial axes", node.describe(),
                            attributes.kernel_shape.size(), shape_to_string(x.shape()), x.rank() - 2);
  }
  PoolPlan plan;
  plan.batch = x.dim(0);
  plan.channels = x.dim(1);
  Shape input_spatial(x.shape().begin() + 2, x.shape().end());
  WindowAttributes window{.auto_pad = attributes.auto_pad,
                          .strides = &attributes.strides,
                          .dilations = &attributes.dilations,
                          .pads = &attributes.pads,
                          .ceil_mode = attributes.ceil_mode};
  QDQRT_ASSIGN_OR_RETURN(plan.geometry, resolve_window(node, input_spatial, attributes.kernel_shape, window));
  plan.output_shape = {plan.batch, plan.channels};
  for (int64_t dim : plan.geometry.output_spatial()) plan.output_shape.push_back(dim);
  return plan;
}

// Calls visit(output_offset, input_plane, output_position[3]) for every (n, c, output position).
template <class Visit>
void for_each_window(const PoolPlan& plan, Visit visit) {
  const WindowGeometry& g = plan.geometry;
  int64_t out_index = 0;
  for (int64_t plane = 0; plane < plan.batch * plan.channels; ++plane) {
    for (int64_t od = 0; od < g.output[0]; ++od) {
      for (int64_t oh = 0; oh < g.output[1]; ++oh) {
        for (int64_t ow = 0; ow < g.output[2]; ++ow) {
          const int64_t position[3] = {od, oh, ow};
          visit(out_index++, plane, position);
        }
      }
    }
  }
}

// Calls visit(offset, id, ih, iw) for every tap of the window at output `position` that lands on
// an input element (not on padding); offset is the element's index within its plane.
template <class Visit>
void for_each_tap(const WindowGeometry& g, const int64_t* position, Visit visit) {
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t id = position[0] * g.strides[0] - g.pads_begin[0] + kd * g.dilations[0];
    if (id < 0 || id >= g.input[0]) continue;
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t ih = position[1] * g.strides[1] - g.pads_begin[1] + kh * g.dilations[1];
      if (ih < 0 || ih >= g.input[1]) continue;
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const int64_t iw = position[2] * g.strides[2] - g.pads_begin[2] + kw * g.dilations[2];
        if (iw < 0 || iw >= g.input[2]) continue;
        visit((id * g.input[1] + ih) * g.input[2] + iw, id, ih, iw);
      }
    }
  }
}

template <class T>
void max_pool(const Tensor& x, const PoolPlan& plan, int64_t storage_order, Tensor& y, Tensor* indices) {
  const WindowGeometry& g = plan.geometry;
  const int64_t plane_size = g.input[0] * g.input[1] * g.input[2];
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for_each_window(plan, [&](int64_t out_index, int64_t plane, const int64_t* position) {
    T best = std::numeric_limits<T>::lowest();
    int64_t best_index = -1;
    for_each_tap(g, position, [&](int64_t offset, int64_t id, int64_t ih, int64_t iw) {
      const T value = in[plane * plane_size + offset];
      if (best_index < 0 || value > best) {
        best = value;
        // storage_order 1 numbers the spatial elements column-major (W fastest-varying last).
        best_index = storage_order == 0 ? offset : (iw * g.input[1] + ih) * g.input[0] + id;
      }
    });
    out[out_index] = best;
    if (indices != nullptr) indices->data<int64_t>()[out_index] = plane * plane_size + std::max<int64_t>(best_index, 0);
  });
}

Status max_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const MaxPoolAttributes* typed, typed_attributes<MaxPoolAttributes>(node));
  const MaxPoolAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat, DataType::kInt8, DataType::kUint8}));
  QDQRT_ASSIGN_OR_RETURN(PoolPlan plan, plan_pool(node, *x, attributes));
  Tensor y(x->dtype(), plan.output_shape);
  const bool want_indices = node.outputs.size() > 1 && !node.outputs[1].empty();
  Tensor indices;
  if (want_indices) indices = Tensor(DataType::kInt64, plan.output_shape);
  Tensor* indices_out = want_indices ? &indices : nullptr;
  switch (x->dtype()) {
    case DataType::kFloat: max_pool<float>(*x, plan, attributes.storage_order, y, indices_out); break;
    case DataType::kInt8: max_pool<int8_t>(*x, plan, attributes.storage_order, y, indices_out); break;
    default: max_pool<uint8_t>(*x, plan, attributes.storage_order, y, indices_out); break;
  }
  outputs[0] = std::move(y);
  if (want_indices) outputs[1] = std::move(indices);
  return Status::ok();
}

Status average_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const AveragePoolAttributes* typed, typed_attributes<AveragePoolAttributes>(node));
  const AveragePoolAttributes& attributes = *typed;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat}));
  QDQRT_ASSIGN_OR_RETURN(PoolPlan plan, plan_pool(node, *x, attributes));
  const WindowGeometry& g = plan.geometry;
  const int64_t plane_size = g.input[0] * g.input[1] * g.input[2];
  const float* in = x->data<float>();
  Tensor y(DataType::kFloat, plan.output_shape);
  float* out = y.data<float>();
  for_each_window(plan, [&](int64_t out_index, int64_t plane, const int64_t* position) {
    double sum = 0.0;
    int64_t inside = 0;  // taps on real input elements
    int64_t padded = 1;  // taps inside input + pads (never past the end pad, even with ceil_mode)
    int64_t taps[3];
    for (int axis = 0; axis < 3; ++axis) {
      taps[axis] = 0;
      for (int64_t k = 0; k < g.kernel[axis]; ++k) {
        const int64_t i = position[axis] * g.strides[axis] - g.pads_begin[axis] + k * g.dilations[axis];
        if (i < g.input[axis] + g.pads_end[axis]) ++taps[axis];
      }
      padded *= taps[axis];
    }
    for_each_tap(g, position, [&](int64_t offset, int64_t, int64_t, int64_t) {
      sum += in[plane * plane_size + offset];
      ++inside;
    });
    const int64_t count = attributes.count_include_pad ? padded : inside;
    out[out_index] = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
  });
  outputs[0] = std::move(y);
  return Status::ok();
}

// Shape [N, C, 1, ...] and the number of spatial elements per (n, c) plane.
Result<std::pair<Shape, int64_t>> global_pool_shape(const Node& node, const Tensor& x) {
  QDQRT_RETURN_IF_ERROR(expect_rank_at_least(node, x, "input X", 3));
  Shape shape = {x.dim(0), x.dim(1)};
  shape.resize(x.shape().size(), 1);
  int64_t plane_size = 1;
  for (int64_t axis = 2; axis < x.rank(); ++axis) plane_size *= x.dim(axis);
  if (plane_size == 0) return invalid_argument("{}: input X {} has no spatial elements", node.describe(), shape_to_string(x.shape()));
  return std::make_pair(shape, plane_size);
}

Status global_average_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat}));
  QDQRT_ASSIGN_OR_RETURN(auto shape_and_size, global_pool_shape(node, *x));
  auto [shape, plane_size] = shape_and_size;
  Tensor y(DataType::kFloat, shape);
  const float* in = x->data<float>();
  for (int64_t plane = 0; plane < y.numel(); ++plane) {
    double sum = 0.0;
    for (int64_t i = 0; i < plane_size; ++i) sum += in[plane * plane_size + i];
    y.data<float>()[plane] = static_cast<float>(sum / static_cast<double>(plane_size));
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

template <class T>
void global_max(const Tensor& x, int64_t plane_size, Tensor& y) {
  const T* in = x.data<T>();
  for (int64_t plane = 0; plane < y.numel(); ++plane) {
    T best = in[plane * plane_size];
    for (int64_t i = 1; i < plane_size; ++i) best = std::max(best, in[plane * plane_size + i]);
    y.data<T>()[plane] = best;
  }
}

Status global_max_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, 0, "X"));
  QDQRT_RETURN_IF_ERROR(expect_dtype(node, *x, "input X", {DataType::kFloat, DataType::kInt8, DataType::kUint8}));
  QDQRT_ASSIGN_OR_RETURN(auto shape_and_size, global_pool_shape(node, *x));
  auto [shape, plane_size] = shape_and_size;
  Tensor y(x->dtype(), shape);
  switch (x->dtype()) {
    case DataType::kFloat: global_max<float>(*x, plane_size, y); break;
    case DataType::kInt8: global_max<int8_t>(*x, plane_size, y); break;
    default: global_max<uint8_t>(*x, plane_size, y); break;
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

}  // namespace

void register_pool_kernels(KernelRegistry& registry) {
  registry.add("", "MaxPool", max_pool_kernel);
  registry.add("", "AveragePool", average_pool_kernel);
  registry.add("", "GlobalAveragePool", global_average_pool_kernel);
  registry.add("", "GlobalMaxPool", global_max_pool_kernel);
}

}  // namespace qdqrt
