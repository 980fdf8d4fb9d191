// Reference kernels of the tensor family. Data movement is dtype-independent: elements are
// copied as bytes of dtype_size, so each op has one implementation for every dtype. Output
// shapes come from the actual inputs, so any batch size works.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/ops/tensor.h"
#include "reference/kernel_registry.h"
#include "reference/ops/broadcast.h"
#include "reference/ops/dtype_helpers.h"
#include "reference/ops/half_float.h"
#include "reference/ops/op_helpers.h"
#include "reference/ops/family_kernels.h"

namespace qdqrt {

namespace {

using namespace reference;

Status check_copyable(const Node& node, const char* what, const Tensor& tensor) {
  if (dtype_size(tensor.dtype()) == 0) return unsupported_dtype(node, what, tensor.dtype());
  return Status::ok();
}

// out[k] = in[base + sum(coordinate_d(k) * in_strides[d])] for every element of out_shape.
Tensor strided_copy(const Tensor& in, const Shape& out_shape, const std::vector<int64_t>& in_strides, int64_t base) {
  Tensor out(in.dtype(), out_shape);
  const size_t size = dtype_size(in.dtype());
  std::array<std::vector<int64_t>, 1> strides = {in_strides};
  for_each_index<1>(out_shape, strides, [&](int64_t index, const std::array<int64_t, 1>& offsets) {
    copy_element(bytes_of(out), index, bytes_of(in), base + offsets[0], size);
  });
  return out;
}

// ---- reshaping ops: same elements, new shape ----

Status identity_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  outputs[0] = inputs[0]->clone();
  return Status::ok();
}

Status flatten_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const FlattenAttributes* attributes, typed_attributes<FlattenAttributes>(node));
  const Tensor& x = *inputs[0];
  int64_t axis = attributes->axis;
  if (axis < -x.rank() || axis > x.rank()) return node_error(node, "axis {} is out of range for rank {}", axis, x.rank());
  if (axis < 0) axis += x.rank();
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  int64_t inner = 1;
  for (int64_t d = axis; d < x.rank(); ++d) inner *= x.dim(d);
  outputs[0] = x.clone().reshaped({outer, inner});
  return Status::ok();
}

Status reshape_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  QDQRT_ASSIGN_OR_RETURN(const ReshapeAttributes* attributes, typed_attributes<ReshapeAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> requested, int64_values(node, *inputs[1], "shape"));
  Shape shape(requested.size());
  int64_t inferred_axis = -1;
  int64_t known = 1;
  for (size_t d = 0; d < requested.size(); ++d) {
    int64_t dim = requested[d];
    if (dim == -1) {
      if (inferred_axis >= 0) return node_error(node, "shape {} has more than one -1", shape_to_string(requested));
      inferred_axis = static_cast<int64_t>(d);
      continue;
    }
    if (dim == 0 && !attributes->allowzero) {
      if (static_cast<int64_t>(d) >= x.rank()) {
        return node_error(node, "shape {} copies dim {} (0) but the input {} has rank {}", shape_to_string(requested), d,
                          shape_to_string(x.shape()), x.rank());
      }
      dim = x.dim(static_cast<int64_t>(d));
    }
    if (dim < 0) return node_error(node, "shape {} has invalid dim {}", shape_to_string(requested), dim);
    if (dim > 0 && known > std::numeric_limits<int64_t>::max() / dim) {
      return node_error(node, "shape {} is too large", shape_to_string(requested));
    }
    shape[d] = dim;
    known *= dim;
  }
  if (inferred_axis >= 0) {
    if (known == 0 || x.numel() % known != 0) {
      return node_error(node, "cannot reshape input of shape {} to {}", shape_to_string(x.shape()), shape_to_string(requested));
    }
    shape[static_cast<size_t>(inferred_axis)] = x.numel() / known;
  } else if (known != x.numel()) {
    return node_error(node, "cannot reshape input of shape {} ({} elements) to {} ({} elements)",
                      shape_to_string(x.shape()), x.numel(), shape_to_string(shape), known);
  }
  outputs[0] = x.clone().reshaped(shape);
  return Status::ok();
}

// Axes from the attribute or (opset >= 13) the optional int64 input 1.
Result<std::vector<int64_t>> axes_argument(const Node& node, Inputs inputs, const std::vector<int64_t>& attribute,
                                           bool from_input) {
  if (!from_input) return attribute;
  const Tensor* axes = optional_input(inputs, 1);
  if (axes == nullptr) return std::vector<int64_t>{};
  return int64_values(node, *axes, "axes");
}

Status squeeze_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 2));
  QDQRT_ASSIGN_OR_RETURN(const SqueezeAttributes* attributes, typed_attributes<SqueezeAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                         axes_argument(node, inputs, attributes->axes, attributes->axes_from_input));
  QDQRT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, x.rank(), "axis"));
  Shape shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (listed && x.dim(d) != 1) {
      return node_error(node, "cannot squeeze axis {} of size {} (input shape {})", d, x.dim(d), shape_to_string(x.shape()));
    }
    bool squeezed = axes.empty() ? x.dim(d) == 1 : listed;
    if (!squeezed) shape.push_back(x.dim(d));
  }
  outputs[0] = x.clone().reshaped(shape);
  return Status::ok();
}

Status unsqueeze_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 2));
  QDQRT_ASSIGN_OR_RETURN(const UnsqueezeAttributes* attributes, typed_attributes<UnsqueezeAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                         axes_argument(node, inputs, attributes->axes, attributes->axes_from_input));
  if (axes.empty()) return node_error(node, "axes must not be empty");
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  QDQRT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, out_rank, "axis"));
  Shape shape;
  int64_t next_input_dim = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) shape.push_back(1);
    else shape.push_back(x.dim(next_input_dim++));
  }
  outputs[0] = x.clone().reshaped(shape);
  return Status::ok();
}

// ---- Transpose ----

Status transpose_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const TransposeAttributes* attributes, typed_attributes<TransposeAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input", x));
  std::vector<int64_t> perm = attributes->perm;
  if (perm.empty()) {
    for (int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != x.rank()) {
    return node_error(node, "perm {} has {} entries for input rank {}", shape_to_string(perm), perm.size(), x.rank());
  }
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[static_cast<size_t>(p)]) {
      return node_error(node, "perm {} is not a permutation of 0..{}", shape_to_string(perm), x.rank() - 1);
    }
    seen[static_cast<size_t>(p)] = true;
  }
  std::vector<int64_t> in_strides = row_major_strides(x.shape());
  Shape out_shape;
  std::vector<int64_t> strides;
  for (int64_t p : perm) {
    out_shape.push_back(x.dim(p));
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  outputs[0] = strided_copy(x, out_shape, strides, 0);
  return Status::ok();
}

// ---- Concat / Split ----

Status concat_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  if (inputs.empty()) return node_error(node, "needs at least one input");
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, inputs.size(), inputs.size()));
  QDQRT_ASSIGN_OR_RETURN(const ConcatAttributes* attributes, typed_attributes<ConcatAttributes>(node));
  const Tensor& first = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input 0", first));
  if (first.rank() == 0) return node_error(node, "inputs must have rank >= 1");
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes->axis, first.rank(), "axis"));
  Shape out_shape = first.shape();
  out_shape[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = *inputs[i];
    if (input.dtype() != first.dtype()) {
      return node_error(node, "input {} has dtype {}, input 0 has {}", i, dtype_name(input.dtype()), dtype_name(first.dtype()));
    }
    bool compatible = input.rank() == first.rank();
    for (int64_t d = 0; compatible && d < first.rank(); ++d) compatible = d == axis || input.dim(d) == first.dim(d);
    if (!compatible) {
      return node_error(node, "input {} shape {} does not match input 0 shape {} outside axis {}", i,
                        shape_to_string(input.shape()), shape_to_string(first.shape()), axis);
    }
    out_shape[static_cast<size_t>(axis)] += input.dim(axis);
  }
  Tensor out(first.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= first.dim(d);
  for (int64_t d = axis + 1; d < first.rank(); ++d) inner *= first.dim(d);
  const size_t size = dtype_size(first.dtype());
  const int64_t out_row = out_shape[static_cast<size_t>(axis)] * inner;
  int64_t column = 0;
  for (const Tensor* input : inputs) {
    const int64_t row = input->dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(bytes_of(out) + (o * out_row + column) * static_cast<int64_t>(size),
                  bytes_of(*input) + o * row * static_cast<int64_t>(size), static_cast<size_t>(row) * size);
    }
    column += row;
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

Status split_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 2));
  QDQRT_ASSIGN_OR_RETURN(const SplitAttributes* attributes, typed_attributes<SplitAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input", x));
  if (x.rank() == 0) return node_error(node, "input must have rank >= 1");
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes->axis, x.rank(), "axis"));
  const int64_t dim = x.dim(axis);
  const int64_t output_count = static_cast<int64_t>(outputs.size());
  std::vector<int64_t> sizes = attributes->split;
  if (attributes->split_from_input && optional_input(inputs, 1) != nullptr) {
    if (attributes->num_outputs > 0) return node_error(node, "split input and num_outputs are both given");
    QDQRT_ASSIGN_OR_RETURN(sizes, int64_values(node, *inputs[1], "split"));
  }
  if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != output_count) {
      return node_error(node, "split has {} sizes for {} outputs", sizes.size(), output_count);
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) return node_error(node, "split sizes {} must be >= 0", shape_to_string(sizes));
      total += s;
    }
    if (total != dim) {
      return node_error(node, "split sizes {} sum to {}, axis {} has size {}", shape_to_string(sizes), total, axis, dim);
    }
  } else if (attributes->num_outputs > 0) {
    if (attributes->num_outputs != output_count) {
      return node_error(node, "num_outputs is {} but the node has {} outputs", attributes->num_outputs, output_count);
    }
    // ceil(dim / n) per part, the last one smaller.
    const int64_t chunk = (dim + output_count - 1) / output_count;
    for (int64_t i = 0; i < output_count; ++i) sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  } else {
    if (output_count == 0 || dim % output_count != 0) {
      return node_error(node, "axis {} of size {} cannot be split evenly into {} outputs", axis, dim, output_count);
    }
    sizes.assign(static_cast<size_t>(output_count), dim / output_count);
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const size_t size = dtype_size(x.dtype());
  const int64_t in_row = dim * inner;
  int64_t column = 0;
  for (int64_t i = 0; i < output_count; ++i) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(i)];
    Tensor out(x.dtype(), shape);
    const int64_t row = sizes[static_cast<size_t>(i)] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(bytes_of(out) + o * row * static_cast<int64_t>(size),
                  bytes_of(x) + (o * in_row + column) * static_cast<int64_t>(size), static_cast<size_t>(row) * size);
    }
    column += row;
    if (!node.outputs[static_cast<size_t>(i)].empty()) outputs[static_cast<size_t>(i)] = std::move(out);
  }
  return Status::ok();
}

// ---- Slice ----

Status slice_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 3, 5));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input", x));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> starts, int64_values(node, *inputs[1], "starts"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> ends, int64_values(node, *inputs[2], "ends"));
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (const Tensor* axes_input = optional_input(inputs, 3)) {
    QDQRT_ASSIGN_OR_RETURN(axes, int64_values(node, *axes_input, "axes"));
  }
  std::vector<int64_t> steps(starts.size(), 1);
  if (const Tensor* steps_input = optional_input(inputs, 4)) {
    QDQRT_ASSIGN_OR_RETURN(steps, int64_values(node, *steps_input, "steps"));
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return node_error(node, "starts, ends, axes and steps have different lengths ({}, {}, {}, {})", starts.size(),
                      ends.size(), axes.size(), steps.size());
  }
  QDQRT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, x.rank(), "axis"));

  Shape out_shape = x.shape();
  std::vector<int64_t> in_strides = row_major_strides(x.shape());
  std::vector<int64_t> strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t axis = static_cast<size_t>(axes[i]);
    const int64_t dim = x.shape()[axis];
    if (steps[i] == 0) return node_error(node, "step for axis {} is 0", axes[i]);
    // A step longer than the axis selects at most one element; clamping keeps the arithmetic
    // below free of overflow for extreme values.
    const int64_t step = std::clamp<int64_t>(steps[i], -(dim + 1), dim + 1);
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    // Clamp as ONNX specifies: [0, dim] going forward, [-1, dim-1] going backward.
    if (dim == 0) {
      start = end = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    int64_t length = 0;
    if (step > 0 && end > start) length = (end - start + step - 1) / step;
    if (step < 0 && start > end) length = (start - end + (-step) - 1) / (-step);
    out_shape[axis] = length;
    if (length > 0) base += start * in_strides[axis];
    strides[axis] = in_strides[axis] * step;
  }
  outputs[0] = strided_copy(x, out_shape, strides, base);
  return Status::ok();
}

// ---- Gather / GatherElements ----

Status gather_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  QDQRT_ASSIGN_OR_RETURN(const GatherAttributes* attributes, typed_attributes<GatherAttributes>(node));
  const Tensor& data = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "data", data));
  if (data.rank() == 0) return node_error(node, "data must have rank >= 1");
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes->axis, data.rank(), "axis"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> indices, int64_values(node, *inputs[1], "indices"));
  const int64_t dim = data.dim(axis);
  for (int64_t& index : indices) {
    if (index < -dim || index >= dim) {
      return node_error(node, "index {} is out of range for axis {} of size {}", index, axis, dim);
    }
    if (index < 0) index += dim;
  }
  Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
  out_shape.insert(out_shape.end(), inputs[1]->shape().begin(), inputs[1]->shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
  Tensor out(data.dtype(), out_shape);
  const size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype());
  const int64_t count = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      std::memcpy(bytes_of(out) + (o * count + k) * static_cast<int64_t>(block),
                  bytes_of(data) + (o * dim + indices[static_cast<size_t>(k)]) * static_cast<int64_t>(block), block);
    }
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

Status gather_elements_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  QDQRT_ASSIGN_OR_RETURN(const GatherElementsAttributes* attributes, typed_attributes<GatherElementsAttributes>(node));
  const Tensor& data = *inputs[0];
  const Tensor& indices_tensor = *inputs[1];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "data", data));
  if (data.rank() == 0) return node_error(node, "data must have rank >= 1");
  if (indices_tensor.rank() != data.rank()) {
    return node_error(node, "indices rank {} differs from data rank {}", indices_tensor.rank(), data.rank());
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, attributes->axis, data.rank(), "axis"));
  for (int64_t d = 0; d < data.rank(); ++d) {
    if (d != axis && indices_tensor.dim(d) > data.dim(d)) {
      return node_error(node, "indices shape {} exceeds data shape {} on axis {}", shape_to_string(indices_tensor.shape()),
                        shape_to_string(data.shape()), d);
    }
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> indices, int64_values(node, indices_tensor, "indices"));
  const int64_t dim = data.dim(axis);
  std::vector<int64_t> data_strides = row_major_strides(data.shape());
  std::array<std::vector<int64_t>, 1> strides = {data_strides};
  strides[0][static_cast<size_t>(axis)] = 0;  // the axis coordinate comes from the index value
  Tensor out(data.dtype(), indices_tensor.shape());
  const size_t size = dtype_size(data.dtype());
  Status status = Status::ok();
  for_each_index<1>(indices_tensor.shape(), strides, [&](int64_t k, const std::array<int64_t, 1>& offsets) {
    int64_t index = indices[static_cast<size_t>(k)];
    if (index < -dim || index >= dim) {
      if (status.is_ok()) status = node_error(node, "index {} is out of range for axis {} of size {}", index, axis, dim);
      return;
    }
    if (index < 0) index += dim;
    copy_element(bytes_of(out), k, bytes_of(data), offsets[0] + index * data_strides[static_cast<size_t>(axis)], size);
  });
  QDQRT_RETURN_IF_ERROR(status);
  outputs[0] = std::move(out);
  return Status::ok();
}

// ---- Shape / Size ----

Status shape_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const ShapeAttributes* attributes, typed_attributes<ShapeAttributes>(node));
  const int64_t rank = inputs[0]->rank();
  auto clamp = [rank](int64_t value) { return std::clamp<int64_t>(value < 0 ? value + rank : value, 0, rank); };
  const int64_t start = clamp(attributes->start);
  const int64_t end = clamp(attributes->end.value_or(rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(inputs[0]->dim(d));
  outputs[0] = Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
  return Status::ok();
}

Status size_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  outputs[0] = Tensor::scalar<int64_t>(inputs[0]->numel());
  return Status::ok();
}

// ---- Cast ----

// Tags for the 16-bit float types, stored as uint16_t.
struct Float16 {};
struct BFloat16 {};
template <class T> struct StorageOf { using type = T; };
template <> struct StorageOf<Float16> { using type = uint16_t; };
template <> struct StorageOf<BFloat16> { using type = uint16_t; };

template <class F>
Status visit_cast_type(const Node& node, const char* what, DataType dtype, F&& f) {
  if (dtype == DataType::kFloat16) return f(std::type_identity<Float16>{});
  if (dtype == DataType::kBFloat16) return f(std::type_identity<BFloat16>{});
  return visit_numeric_or_bool(node, what, dtype, std::forward<F>(f));
}

// The element's value in a type C++ can compute with (float for the 16-bit floats).
template <class T>
auto load_value(typename StorageOf<T>::type stored) {
  if constexpr (std::is_same_v<T, Float16>) return half_to_float(stored);
  else if constexpr (std::is_same_v<T, BFloat16>) return bfloat16_to_float(stored);
  else return stored;
}

template <class Dst, class V>
typename StorageOf<Dst>::type store_value(V value) {
  if constexpr (std::is_same_v<Dst, Float16>) {
    return float_to_half(static_cast<float>(value));
  } else if constexpr (std::is_same_v<Dst, BFloat16>) {
    return float_to_bfloat16(static_cast<float>(value));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return value != V(0);
  } else if constexpr (std::is_floating_point_v<Dst> || !std::is_floating_point_v<V>) {
    return static_cast<Dst>(value);  // integer -> integer wraps modulo 2^bits, like numpy
  } else {
    return cast_from_double<Dst>(std::trunc(static_cast<double>(value)));  // toward zero, saturating
  }
}

Status cast_to(const Node& node, const Tensor& x, DataType to, std::vector<Tensor>& outputs) {
  return visit_cast_type(node, "input", x.dtype(), [&]<class Src>(std::type_identity<Src>) -> Status {
    return visit_cast_type(node, "target type", to, [&]<class Dst>(std::type_identity<Dst>) -> Status {
      Tensor y(to, x.shape());
      const auto* in = static_cast<const typename StorageOf<Src>::type*>(x.raw_data());
      auto* out = static_cast<typename StorageOf<Dst>::type*>(y.raw_data());
      for (int64_t i = 0; i < x.numel(); ++i) out[i] = store_value<Dst>(load_value<Src>(in[i]));
      outputs[0] = std::move(y);
      return Status::ok();
    });
  });
}

Status cast_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const CastAttributes* attributes, typed_attributes<CastAttributes>(node));
  return cast_to(node, *inputs[0], attributes->to, outputs);
}

Status cast_like_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  return cast_to(node, *inputs[0], inputs[1]->dtype(), outputs);
}

// ---- constants ----

Status constant_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 0, 0));
  QDQRT_ASSIGN_OR_RETURN(const ConstantAttributes* attributes, typed_attributes<ConstantAttributes>(node));
  outputs[0] = attributes->value.clone();
  return Status::ok();
}

Status constant_of_shape_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const ConstantOfShapeAttributes* attributes, typed_attributes<ConstantOfShapeAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(Shape shape, int64_values(node, *inputs[0], "shape"));
  QDQRT_RETURN_IF_ERROR(check_output_shape(node, shape));
  const Tensor& value = attributes->value;
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "value", value));
  Tensor out(value.dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) copy_element(bytes_of(out), i, bytes_of(value), 0, dtype_size(value.dtype()));
  outputs[0] = std::move(out);
  return Status::ok();
}

Status dropout_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 3));
  QDQRT_ASSIGN_OR_RETURN(const DropoutAttributes* attributes, typed_attributes<DropoutAttributes>(node));
  double ratio = attributes->ratio;
  if (attributes->ratio_from_input) {
    if (const Tensor* ratio_input = optional_input(inputs, 1)) {
      if (ratio_input->numel() != 1) return node_error(node, "ratio must be a scalar");
      ratio = is_half_dtype(ratio_input->dtype()) ? half_to_float_tensor(*ratio_input).data<float>()[0]
                                                  : ratio_input->value_as_double(0);
    }
  } else if (optional_input(inputs, 1) != nullptr) {
    return node_error(node, "ratio is an attribute before opset 12, not an input");
  }
  if (const Tensor* training_mode = optional_input(inputs, 2)) {
    if (training_mode->dtype() != DataType::kBool || training_mode->numel() != 1) {
      return node_error(node, "training_mode must be a bool scalar");
    }
    // Training-mode dropout with ratio 0 drops nothing; anything else is random.
    if (training_mode->data<bool>()[0] && ratio != 0.0) {
      return unsupported("{}: training-mode Dropout (ratio {}) is not supported", node.describe(), ratio);
    }
  }
  outputs[0] = inputs[0]->clone();
  if (outputs.size() > 1 && !node.outputs[1].empty()) {
    Tensor mask(DataType::kBool, inputs[0]->shape());
    std::fill(mask.data<bool>(), mask.data<bool>() + mask.numel(), true);
    outputs[1] = std::move(mask);
  }
  return Status::ok();
}

// ---- Pad ----

// Scalar tensor of dtype holding value (Pad's constant before opset 11 is a float attribute).
Result<Tensor> scalar_of_dtype(const Node& node, DataType dtype, double value) {
  Tensor scalar(dtype, {});
  if (is_half_dtype(dtype)) {
    scalar.data<uint16_t>()[0] = dtype == DataType::kFloat16 ? float_to_half(static_cast<float>(value))
                                                             : float_to_bfloat16(static_cast<float>(value));
    return scalar;
  }
  QDQRT_RETURN_IF_ERROR(visit_numeric_or_bool(node, "input", dtype, [&]<class T>(std::type_identity<T>) -> Status {
    scalar.data<T>()[0] = cast_from_double<T>(value);
    return Status::ok();
  }));
  return scalar;
}

// Source coordinate for out-of-range coordinate i of an axis of size n, or -1 (constant).
int64_t pad_source(PadMode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((i % n) + n) % n;
    case PadMode::kReflect:
      if (n == 1) return 0;
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
      return i;
  }
  return -1;
}

Status pad_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 4));
  QDQRT_ASSIGN_OR_RETURN(const PadAttributes* attributes, typed_attributes<PadAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input", x));
  const int64_t rank = x.rank();
  std::vector<int64_t> pads = attributes->pads;
  QDQRT_ASSIGN_OR_RETURN(Tensor constant, scalar_of_dtype(node, x.dtype(), attributes->constant_value));
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (attributes->pads_from_input) {
    QDQRT_ASSIGN_OR_RETURN(const Tensor* pads_input, required_input(node, inputs, 1, "pads"));
    QDQRT_ASSIGN_OR_RETURN(pads, int64_values(node, *pads_input, "pads"));
    if (const Tensor* value = optional_input(inputs, 2)) {
      if (value->dtype() != x.dtype() || value->numel() != 1) {
        return node_error(node, "constant_value must be a one-element {} tensor, got {} {}", dtype_name(x.dtype()),
                          dtype_name(value->dtype()), shape_to_string(value->shape()));
      }
      constant = value->reshaped({});
    }
    if (const Tensor* axes_input = optional_input(inputs, 3)) {
      QDQRT_ASSIGN_OR_RETURN(axes, int64_values(node, *axes_input, "axes"));
      QDQRT_ASSIGN_OR_RETURN(axes, normalize_axes(node, axes, rank, "axis"));
    }
  }
  const size_t axis_count = axes.size();
  if (pads.size() != 2 * axis_count) {
    return node_error(node, "pads has {} values, expected {} (2 per padded axis)", pads.size(), 2 * axis_count);
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axis_count; ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[i + axis_count];
  }
  Shape out_shape(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const size_t u = static_cast<size_t>(d);
    out_shape[u] = x.dim(d) + begin[u] + end[u];
    if (out_shape[u] < 0) {
      return node_error(node, "pads {} crop axis {} of size {} below zero", shape_to_string(pads), d, x.dim(d));
    }
    if (attributes->mode != PadMode::kConstant && x.dim(d) == 0 && out_shape[u] > 0) {
      return node_error(node, "cannot pad empty axis {} in a non-constant mode", d);
    }
  }
  QDQRT_RETURN_IF_ERROR(check_output_shape(node, out_shape));
  Tensor out(x.dtype(), out_shape);
  const size_t size = dtype_size(x.dtype());
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  std::vector<int64_t> counter(static_cast<size_t>(rank), 0);
  for (int64_t index = 0; index < out.numel(); ++index) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank && source >= 0; ++d) {
      const size_t u = static_cast<size_t>(d);
      int64_t coordinate = pad_source(attributes->mode, counter[u] - begin[u], x.dim(d));
      source = coordinate < 0 ? -1 : source + coordinate * in_strides[u];
    }
    if (source >= 0) copy_element(bytes_of(out), index, bytes_of(x), source, size);
    else copy_element(bytes_of(out), index, bytes_of(constant), 0, size);
    for (int64_t d = rank - 1; d >= 0; --d) {
      const size_t u = static_cast<size_t>(d);
      if (++counter[u] < out_shape[u]) break;
      counter[u] = 0;
    }
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

// ---- Expand / Tile ----

Status expand_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input", x));
  QDQRT_ASSIGN_OR_RETURN(Shape shape, int64_values(node, *inputs[1], "shape"));
  QDQRT_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(node, {x.shape(), shape}));
  QDQRT_RETURN_IF_ERROR(check_output_shape(node, out_shape));
  outputs[0] = strided_copy(x, out_shape, broadcast_strides(x.shape(), out_shape), 0);
  return Status::ok();
}

Status tile_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_copyable(node, "input", x));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, int64_values(node, *inputs[1], "repeats"));
  if (static_cast<int64_t>(repeats.size()) != x.rank()) {
    return node_error(node, "repeats has {} values for input rank {}", repeats.size(), x.rank());
  }
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (repeats[static_cast<size_t>(d)] < 0) return node_error(node, "repeats {} has a negative value", shape_to_string(repeats));
    out_shape.push_back(x.dim(d) * repeats[static_cast<size_t>(d)]);
  }
  QDQRT_RETURN_IF_ERROR(check_output_shape(node, out_shape));
  Tensor out(x.dtype(), out_shape);
  const size_t size = dtype_size(x.dtype());
  const std::vector<int64_t> in_strides = row_major_strides(x.shape());
  std::vector<int64_t> counter(out_shape.size(), 0);
  for (int64_t index = 0; index < out.numel(); ++index) {
    int64_t source = 0;
    for (size_t d = 0; d < out_shape.size(); ++d) source += (counter[d] % x.shape()[d]) * in_strides[d];
    copy_element(bytes_of(out), index, bytes_of(x), source, size);
    for (size_t d = out_shape.size(); d-- > 0;) {
      if (++counter[d] < out_shape[d]) break;
      counter[d] = 0;
    }
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

// ---- Range / NonZero ----

Status range_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 3, 3));
  const DataType dtype = inputs[0]->dtype();
  for (size_t i = 0; i < 3; ++i) {
    if (inputs[i]->dtype() != dtype || inputs[i]->numel() != 1) {
      return node_error(node, "start, limit and delta must be one-element tensors of one dtype (input {} is {} {})", i,
                        dtype_name(inputs[i]->dtype()), shape_to_string(inputs[i]->shape()));
    }
  }
  return visit_numeric(node, "start", dtype, [&]<class T>(std::type_identity<T>) -> Status {
    const T start = inputs[0]->data<T>()[0];
    const T limit = inputs[1]->data<T>()[0];
    const T delta = inputs[2]->data<T>()[0];
    if (delta == T(0)) return node_error(node, "delta must not be 0");
    double count_value = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    if (!(count_value <= static_cast<double>(int64_t{1} << 40))) return node_error(node, "range is too large");
    const int64_t count = std::max<int64_t>(0, static_cast<int64_t>(count_value));
    Tensor out(dtype, {count});
    for (int64_t i = 0; i < count; ++i) {
      out.data<T>()[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
    outputs[0] = std::move(out);
    return Status::ok();
  });
}

Status non_zero_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  const Tensor& x = *inputs[0];
  if (dtype_size(x.dtype()) == 0) return unsupported_dtype(node, "input", x.dtype());
  // Floats compare by value (-0.0 is zero); other dtypes are non-zero when any byte is.
  std::vector<int64_t> nonzero;
  const size_t size = dtype_size(x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool is_nonzero = false;
    if (is_half_dtype(x.dtype())) {
      is_nonzero = (x.data<uint16_t>()[i] & 0x7fffu) != 0;
    } else if (x.dtype() == DataType::kFloat || x.dtype() == DataType::kDouble) {
      is_nonzero = x.value_as_double(i) != 0.0;
    } else {
      const std::byte* element = bytes_of(x) + i * static_cast<int64_t>(size);
      is_nonzero = std::any_of(element, element + size, [](std::byte b) { return b != std::byte{0}; });
    }
    if (is_nonzero) nonzero.push_back(i);
  }
  const int64_t count = static_cast<int64_t>(nonzero.size());
  Tensor out(DataType::kInt64, {x.rank(), count});
  std::vector<int64_t> strides = row_major_strides(x.shape());
  for (int64_t k = 0; k < count; ++k) {
    int64_t flat = nonzero[static_cast<size_t>(k)];
    for (int64_t d = 0; d < x.rank(); ++d) {
      out.data<int64_t>()[d * count + k] = flat / strides[static_cast<size_t>(d)];
      flat %= strides[static_cast<size_t>(d)];
    }
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

// ---- DepthToSpace / SpaceToDepth (NCHW) ----

Status check_nchw(const Node& node, const Tensor& x) {
  if (x.rank() != 4) return node_error(node, "input must be 4-D NCHW, got shape {}", shape_to_string(x.shape()));
  return check_copyable(node, "input", x);
}

Status depth_to_space_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const DepthToSpaceAttributes* attributes, typed_attributes<DepthToSpaceAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_nchw(node, x));
  const int64_t b = attributes->blocksize;
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (c % (b * b) != 0) return node_error(node, "channels {} are not divisible by blocksize^2 = {}", c, b * b);
  const int64_t out_c = c / (b * b);
  Tensor out(x.dtype(), {n, out_c, h * b, w * b});
  const size_t size = dtype_size(x.dtype());
  int64_t index = 0;
  for (int64_t ni = 0; ni < n; ++ni) {
    for (int64_t ci = 0; ci < out_c; ++ci) {
      for (int64_t y = 0; y < h * b; ++y) {
        for (int64_t xo = 0; xo < w * b; ++xo, ++index) {
          const int64_t i = y % b, j = xo % b;
          // DCR: depth is ordered (block row, block column, channel); CRD: (channel, row, column).
          const int64_t source_c = attributes->column_row_depth ? (ci * b + i) * b + j : (i * b + j) * out_c + ci;
          copy_element(bytes_of(out), index, bytes_of(x), ((ni * c + source_c) * h + y / b) * w + xo / b, size);
        }
      }
    }
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

Status space_to_depth_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  QDQRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, 1));
  QDQRT_ASSIGN_OR_RETURN(const SpaceToDepthAttributes* attributes, typed_attributes<SpaceToDepthAttributes>(node));
  const Tensor& x = *inputs[0];
  QDQRT_RETURN_IF_ERROR(check_nchw(node, x));
  const int64_t b = attributes->blocksize;
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0) {
    return node_error(node, "spatial dims {}x{} are not divisible by blocksize {}", h, w, b);
  }
  const int64_t out_h = h / b, out_w = w / b;
  Tensor out(x.dtype(), {n, c * b * b, out_h, out_w});
  const size_t size = dtype_size(x.dtype());
  int64_t index = 0;
  for (int64_t ni = 0; ni < n; ++ni) {
    for (int64_t co = 0; co < c * b * b; ++co) {
      const int64_t block = co / c, ci = co % c;  // depth is ordered (block row, block column, channel)
      const int64_t i = block / b, j = block % b;
      for (int64_t y = 0; y < out_h; ++y) {
        for (int64_t xo = 0; xo < out_w; ++xo, ++index) {
          copy_element(bytes_of(out), index, bytes_of(x), ((ni * c + ci) * h + y * b + i) * w + xo * b + j, size);
        }
      }
    }
  }
  outputs[0] = std::move(out);
  return Status::ok();
}

void add(KernelRegistry& registry, const char* op_type, ReferenceKernel kernel) {
  registry.add(kOnnxDomain, op_type, kernel);
}

}  // namespace

void register_tensor_kernels(KernelRegistry& registry) {
  add(registry, "Identity", identity_kernel);
  add(registry, "Flatten", flatten_kernel);
  add(registry, "Reshape", reshape_kernel);
  add(registry, "Squeeze", squeeze_kernel);
  add(registry, "Unsqueeze", unsqueeze_kernel);
  add(registry, "Transpose", transpose_kernel);
  add(registry, "Concat", concat_kernel);
  add(registry, "Split", split_kernel);
  add(registry, "Slice", slice_kernel);
  add(registry, "Gather", gather_kernel);
  add(registry, "GatherElements", gather_elements_kernel);
  add(registry, "Shape", shape_kernel);
  add(registry, "Size", size_kernel);
  add(registry, "Cast", cast_kernel);
  add(registry, "CastLike", cast_like_kernel);
  add(registry, "Constant", constant_kernel);
  add(registry, "ConstantOfShape", constant_of_shape_kernel);
  add(registry, "Dropout", dropout_kernel);
  add(registry, "Pad", pad_kernel);
  add(registry, "Expand", expand_kernel);
  add(registry, "Tile", tile_kernel);
  add(registry, "Range", range_kernel);
  add(registry, "NonZero", non_zero_kernel);
  add(registry, "DepthToSpace", depth_to_space_kernel);
  add(registry, "SpaceToDepth", space_to_depth_kernel);
  register_scatter_kernels(registry);
}

}  // namespace qdqrt
