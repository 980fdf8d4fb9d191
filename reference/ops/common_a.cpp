#include "reference/ops/common_a.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

namespace qdqrt::reference_a {

Result<const Tensor*> required_input(const Node& node, Inputs inputs, size_t index, const char* role) {
  if (index >= inputs.size() || inputs[index] == nullptr || !inputs[index]->defined()) {
    return invalid_model("{}: required input {} ({}) is missing", node.describe(), index, role);
  }
  return inputs[index];
}

const Tensor* optional_input(Inputs inputs, size_t index) {
  if (index >= inputs.size() || inputs[index] == nullptr || !inputs[index]->defined()) return nullptr;
  return inputs[index];
}

Status expect_dtype(const Node& node, const Tensor& tensor, const char* role, std::initializer_list<DataType> allowed) {
  for (DataType dtype : allowed) {
    if (tensor.dtype() == dtype) return Status::ok();
  }
  std::vector<std::string> names;
  for (DataType dtype : allowed) names.emplace_back(dtype_name(dtype));
  return unsupported("{}: {} has element type {}, expected {}", node.describe(), role, dtype_name(tensor.dtype()),
                     fmt::join(names, " or "));
}

Status expect_rank(const Node& node, const Tensor& tensor, const char* role, int64_t rank) {
  if (tensor.rank() == rank) return Status::ok();
  return invalid_argument("{}: {} must have rank {}, got shape {}", node.describe(), role, rank,
                          shape_to_string(tensor.shape()));
}

Status expect_rank_at_least(const Node& node, const Tensor& tensor, const char* role, int64_t rank) {
  if (tensor.rank() >= rank) return Status::ok();
  return invalid_argument("{}: {} must have rank >= {}, got shape {}", node.describe(), role, rank,
                          shape_to_string(tensor.shape()));
}

Result<int64_t> normalize_axis(const Node& node, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return invalid_argument("{}: {} {} is out of range for rank {}", node.describe(), what, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Result<Shape> broadcast_shapes(const Node& node, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return invalid_argument("{}: shapes {} and {} do not broadcast", node.describe(), shape_to_string(a),
                              shape_to_string(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcast_offsets(const Shape& input_shape, const Shape& output_shape) {
  size_t rank = output_shape.size();
  // Input strides aligned to the output's axes; 0 where the input is broadcast.
  std::vector<int64_t> input_strides = row_major_strides(input_shape);
  std::vector<int64_t> aligned(rank, 0);
  for (size_t i = 0; i < input_shape.size(); ++i) {
    size_t axis = rank - input_shape.size() + i;
    aligned[axis] = input_shape[i] == 1 ? 0 : input_strides[i];
  }
  int64_t count = shape_numel(output_shape);
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    offsets[static_cast<size_t>(flat)] = offset;
    // Increment the multi-index, updating the offset incrementally.
    for (size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < output_shape[axis]) {
        offset += aligned[axis];
        break;
      }
      offset -= aligned[axis] * (output_shape[axis] - 1);
      index[axis] = 0;
    }
  }
  return offsets;
}

std::vector<double> to_doubles(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  if (tensor.dtype() == DataType::kFloat) {
    const float* data = tensor.data<float>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i];
    return values;
  }
  for (size_t i = 0; i < values.size(); ++i) values[i] = tensor.value_as_double(static_cast<int64_t>(i));
  return values;
}

std::vector<int64_t> to_int64s(const Tensor& tensor) { return tensor.to_int64_vector(); }

std::pair<int64_t, int64_t> integer_range(DataType dtype) {
  switch (dtype) {
    case DataType::kInt8: return {-128, 127};
    case DataType::kUint8: return {0, 255};
    case DataType::kInt16: return {-32768, 32767};
    case DataType::kUint16: return {0, 65535};
    case DataType::kInt4: return {-8, 7};
    case DataType::kUint4: return {0, 15};
    case DataType::kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DataType::kUint32: return {0, std::numeric_limits<uint32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

void store_integer(Tensor& tensor, int64_t index, int64_t value) {
  switch (tensor.dtype()) {
    case DataType::kInt8: case DataType::kInt4: tensor.data<int8_t>()[index] = static_cast<int8_t>(value); break;
    case DataType::kUint8: case DataType::kUint4: tensor.data<uint8_t>()[index] = static_cast<uint8_t>(value); break;
    case DataType::kInt16: tensor.data<int16_t>()[index] = static_cast<int16_t>(value); break;
    case DataType::kUint16: tensor.data<uint16_t>()[index] = static_cast<uint16_t>(value); break;
    case DataType::kInt32: tensor.data<int32_t>()[index] = static_cast<int32_t>(value); break;
    case DataType::kUint32: tensor.data<uint32_t>()[index] = static_cast<uint32_t>(value); break;
    case DataType::kInt64: tensor.data<int64_t>()[index] = value; break;
    case DataType::kUint64: tensor.data<uint64_t>()[index] = static_cast<uint64_t>(value); break;
    default: assert(false && "store_integer on a non-integer tensor");
  }
}

Shape WindowGeometry::output_spatial() const {
  Shape shape;
  for (int64_t i = 3 - spatial_rank; i < 3; ++i) shape.push_back(output[i]);
  return shape;
}

Result<WindowGeometry> resolve_window(const Node& node, const Shape& input_spatial, const Shape& kernel,
                                      const WindowAttributes& attributes) {
  int64_t rank = static_cast<int64_t>(input_spatial.size());
  if (rank < 1 || rank > 3) {
    return unsupported("{}: {} spatial axes (input needs 1 to 3 spatial axes)", node.describe(), rank);
  }
  if (static_cast<int64_t>(kernel.size()) != rank) {
    return invalid_argument("{}: kernel has {} spatial axes, input has {}", node.describe(), kernel.size(), rank);
  }
  auto check_length = [&](const std::vector<int64_t>* values, int64_t expected, const char* key) -> Status {
    if (values == nullptr || values->empty() || static_cast<int64_t>(values->size()) == expected) return Status::ok();
    return invalid_argument("{}: attribute '{}' has {} values, the input needs {}", node.describe(), key,
                            values->size(), expected);
  };
  QDQRT_RETURN_IF_ERROR(check_length(attributes.strides, rank, "strides"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes.dilations, rank, "dilations"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes.pads, 2 * rank, "pads"));

  WindowGeometry g;
  g.spatial_rank = rank;
  int64_t offset = 3 - rank;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t axis = offset + i;
    size_t index = static_cast<size_t>(i);
    g.input[axis] = input_spatial[index];
    g.kernel[axis] = kernel[index];
    if (attributes.strides && !attributes.strides->empty()) g.strides[axis] = (*attributes.strides)[index];
    if (attributes.dilations && !attributes.dilations->empty()) g.dilations[axis] = (*attributes.dilations)[index];
    int64_t extent = g.dilations[axis] * (g.kernel[axis] - 1) + 1;  // the dilated kernel's size
    int64_t in = g.input[axis];
    int64_t stride = g.strides[axis];
    switch (attributes.auto_pad) {
      case AutoPad::kNotSet: {
        if (attributes.pads && !attributes.pads->empty()) {
          g.pads_begin[axis] = (*attributes.pads)[index];
          g.pads_end[axis] = (*attributes.pads)[index + static_cast<size_t>(rank)];
        }
        int64_t span = in + g.pads_begin[axis] + g.pads_end[axis] - extent;
        if (span < 0) {
          return invalid_argument("{}: kernel extent {} exceeds padded input size {} on spatial axis {}",
                                  node.describe(), extent, in + g.pads_begin[axis] + g.pads_end[axis], i);
        }
        g.output[axis] = attributes.ceil_mode ? (span + stride - 1) / stride + 1 : span / stride + 1;
        // With ceil_mode the last window must start inside the input or its begin padding.
        if (attributes.ceil_mode && (g.output[axis] - 1) * stride >= in + g.pads_begin[axis]) --g.output[axis];
        break;
      }
      case AutoPad::kValid: {
        int64_t span = in - extent;
        if (span < 0) {
          return invalid_argument("{}: kernel extent {} exceeds input size {} on spatial axis {}", node.describe(),
                                  extent, in, i);
        }
        // ONNX: ceil((in - extent + 1) / stride), which is the floor formula; ceil_mode does not apply.
        g.output[axis] = span / stride + 1;
        break;
      }
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        g.output[axis] = (in + stride - 1) / stride;
        int64_t total = std::max<int64_t>(0, (g.output[axis] - 1) * stride + extent - in);
        int64_t smaller = total / 2;
        g.pads_begin[axis] = attributes.auto_pad == AutoPad::kSameUpper ? smaller : total - smaller;
        g.pads_end[axis] = total - g.pads_begin[axis];
        break;
      }
    }
  }
  return g;
}

}  // namespace qdqrt::reference_a

namespace qdqrt::reference_a {

Result<ConvPlan> plan_conv(const Node& node, const Shape& x_shape, const Shape& w_shape,
                           const ConvAttributes& attributes) {
  if (x_shape.size() < 3) {
    return invalid_argument("{}: input X must have rank >= 3 ([N, C, spatial...]), got shape {}", node.describe(),
                            shape_to_string(x_shape));
  }
  if (w_shape.size() != x_shape.size()) {
    return invalid_argument("{}: weight W has shape {}, expected rank {} like X {}", node.describe(),
                            shape_to_string(w_shape), x_shape.size(), shape_to_string(x_shape));
  }
  ConvPlan plan;
  plan.batch = x_shape[0];
  plan.in_channels = x_shape[1];
  plan.out_channels = w_shape[0];
  plan.group = attributes.group;
  if (plan.in_channels % plan.group != 0 || plan.out_channels % plan.group != 0) {
    return invalid_argument("{}: group {} does not divide input channels {} and output channels {}", node.describe(),
                            plan.group, plan.in_channels, plan.out_channels);
  }
  if (w_shape[1] * plan.group != plan.in_channels) {
    return invalid_argument("{}: weight W {} expects {} input channels per group, X {} has {} channels in {} groups",
                            node.describe(), shape_to_string(w_shape), w_shape[1], shape_to_string(x_shape),
                            plan.in_channels, plan.group);
  }
  Shape input_spatial(x_shape.begin() + 2, x_shape.end());
  Shape kernel(w_shape.begin() + 2, w_shape.end());
  if (!attributes.kernel_shape.empty() && attributes.kernel_shape != kernel) {
    return invalid_argument("{}: attribute kernel_shape [{}] does not match weight W shape {}", node.describe(),
                            fmt::join(attributes.kernel_shape, ", "), shape_to_string(w_shape));
  }
  WindowAttributes window{.auto_pad = attributes.auto_pad,
                          .strides = &attributes.strides,
                          .dilations = &attributes.dilations,
                          .pads = &attributes.pads,
                          .ceil_mode = false};
  QDQRT_ASSIGN_OR_RETURN(plan.geometry, resolve_window(node, input_spatial, kernel, window));
  plan.output_shape = {plan.batch, plan.out_channels};
  for (int64_t dim : plan.geometry.output_spatial()) plan.output_shape.push_back(dim);
  return plan;
}

}  // namespace qdqrt::reference_a

namespace qdqrt::reference_a {

Result<MatMulPlan> plan_matmul(const Node& node, const Shape& a_shape, const Shape& b_shape) {
  if (a_shape.empty() || b_shape.empty()) {
    return invalid_argument("{}: MatMul inputs must have rank >= 1, got A {} and B {}", node.describe(),
                            shape_to_string(a_shape), shape_to_string(b_shape));
  }
  Shape a = a_shape, b = b_shape;
  const bool a_is_vector = a.size() == 1, b_is_vector = b.size() == 1;
  if (a_is_vector) a.insert(a.begin(), 1);
  if (b_is_vector) b.push_back(1);
  MatMulPlan plan;
  plan.m = a[a.size() - 2];
  plan.k = a[a.size() - 1];
  plan.n = b[b.size() - 1];
  if (b[b.size() - 2] != plan.k) {
    return invalid_argument("{}: inner dimensions differ: A {} and B {}", node.describe(), shape_to_string(a_shape),
                            shape_to_string(b_shape));
  }
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  QDQRT_ASSIGN_OR_RETURN(Shape batch_shape, broadcast_shapes(node, a_batch, b_batch));
  plan.a_offsets = broadcast_offsets(a_batch, batch_shape);
  plan.b_offsets = broadcast_offsets(b_batch, batch_shape);
  for (int64_t& offset : plan.a_offsets) offset *= plan.m * plan.k;
  for (int64_t& offset : plan.b_offsets) offset *= plan.k * plan.n;
  plan.output_shape = batch_shape;
  if (!a_is_vector) plan.output_shape.push_back(plan.m);
  if (!b_is_vector) plan.output_shape.push_back(plan.n);
  return plan;
}

}  // namespace qdqrt::reference_a
