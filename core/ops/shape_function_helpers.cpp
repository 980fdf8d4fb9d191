#include "core/ops/shape_function_helpers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>


#include "core/checked_math.h"
#include "core/ops/fused_op_table.h"
#include "core/ops/window.h"

namespace qdqrt {

Result<Dims> required_input_dims(const ShapeInferenceContext& context, size_t i) {
  if (!context.has_input(i)) return context.error("input {} is absent", i);
  const OptionalDims& dims = context.input_dims(i);
  if (!dims) return context.error("the rank of input {} ('{}') is not known", i, context.node().input(i));
  return *dims;
}

Result<Dims> required_input_dims(const ShapeInferenceContext& context, size_t i, const char* what) {
  if (!context.has_input(i)) return context.error("input {} ({}) is absent", i, what);
  const OptionalDims& dims = context.input_dims(i);
  if (!dims) return context.error("the rank of input {} ({} '{}') is not known", i, what, context.node().input(i));
  return *dims;
}

Result<size_t> resolve_axis(const ShapeInferenceContext& context, int64_t axis, size_t rank, const char* what) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return context.error("{} {} is out of range for rank {} (allowed [{}, {}])", what, axis, rank, -r, r - 1);
  }
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

Result<Dims> broadcast_inputs(const ShapeInferenceContext& context, const std::vector<size_t>& inputs) {
  OptionalDims result;
  for (size_t i : inputs) {
    QDQRT_ASSIGN_OR_RETURN(Dims dims, required_input_dims(context, i));
    if (!result) {
      result = std::move(dims);
      continue;
    }
    OptionalDims next = broadcast_dims(result, dims);
    if (!next) {
      return context.error("input {} {} does not broadcast with {}", i, dims_to_string(dims), dims_to_string(*result));
    }
    result = std::move(next);
  }
  if (!result) return context.error("it has no inputs");
  return *result;
}

bool is_integer_element_type(DataType dtype) {
  switch (dtype) {
    case DataType::kInt64:
    case DataType::kInt32:
    case DataType::kInt16:
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64: return true;
    default: return false;
  }
}

DimExpr window_output_expr(const DimExpr& input, int64_t extent, int64_t stride, int64_t pad_begin, int64_t pad_end,
                           AutoPad auto_pad, bool ceil_mode) {
  const DimExpr s = DimExpr::constant(stride);
  const DimExpr one = DimExpr::constant(1);
  switch (auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: return ceil_div(input, s);
    case AutoPad::kValid: return floor_div(input - DimExpr::constant(extent), s) + one;
    case AutoPad::kNotSet: break;
  }
  if (!ceil_mode) return floor_div(input + DimExpr::constant(pad_begin + pad_end - extent), s) + one;
  // ceil((in + pads - extent) / stride) + 1 windows, less the last when it would start past the
  // input and its begin padding: its start must be at most in + pad_begin - 1.
  return min(ceil_div(input + DimExpr::constant(pad_begin + pad_end - extent), s),
             floor_div(input + DimExpr::constant(pad_begin - 1), s)) +
         one;
}

Result<Dims> window_spatial_dims(const ShapeInferenceContext& context, const Dims& x,
                                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads,
                                 AutoPad auto_pad, bool ceil_mode) {
  if (x.size() < 3) return context.error("input 0 has rank {}; it needs [N, C, spatial...]", x.size());
  const size_t rank = x.size() - 2;
  auto check_length = [&](const std::vector<int64_t>& values, size_t expected, const char* key) -> Status {
    if (values.empty() || values.size() == expected) return Status::ok();
    return context.error("attribute '{}' has {} values, the input's {} spatial axes need {}", key, values.size(), rank,
                         expected);
  };
  if (kernel.size() != rank) {
    return context.error("the kernel has {} spatial axes, input 0 {} has {}", kernel.size(), dims_to_string(x), rank);
  }
  QDQRT_RETURN_IF_ERROR(check_length(strides, rank, "strides"));
  QDQRT_RETURN_IF_ERROR(check_length(dilations, rank, "dilations"));
  QDQRT_RETURN_IF_ERROR(check_length(pads, 2 * rank, "pads"));
  Dims spatial;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t k = kernel[i];
    const int64_t stride = strides.empty() ? 1 : strides[i];
    const int64_t dilation = dilations.empty() ? 1 : dilations[i];
    const int64_t pad_begin = pads.empty() || auto_pad != AutoPad::kNotSet ? 0 : pads[i];
    const int64_t pad_end = pads.empty() || auto_pad != AutoPad::kNotSet ? 0 : pads[i + rank];
    if (k < 1 || stride < 1 || dilation < 1 || pad_begin < 0 || pad_end < 0 || k > kMaxWindowValue ||
        stride > kMaxWindowValue || dilation > kMaxWindowValue || pad_begin > kMaxWindowValue ||
        pad_end > kMaxWindowValue) {
      return context.error("spatial axis {}: kernel {}, stride {}, dilation {}, pads {}/{} are not a window", i, k,
                           stride, dilation, pad_begin, pad_end);
    }
    if (x[i + 2].value > kMaxWindowInput) {
      return context.error("spatial axis {}: input size {} is too large", i, x[i + 2].value);
    }
    const int64_t extent = dilation * (k - 1) + 1;
    const auto rule = [&](const DimExpr& in) {
      return window_output_expr(in, extent, stride, pad_begin, pad_end, auto_pad, ceil_mode);
    };
    const Dim& in = x[i + 2];
    Dim out;
    if (in.is_static()) {
      int64_t size = 0;
      if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
        size = (in.value + stride - 1) / stride;
      } else {
        size = window_output_size(in.value, k, stride, dilation, pad_begin, pad_end, ceil_mode);
      }
      if (size < 1) {
        return context.error("spatial axis {}: the kernel's extent {} exceeds the padded input size {}", i, extent,
                             in.value + pad_begin + pad_end);
      }
      out.value = size;
      // The expression only where the rule gives the value at the input's value.
      if (in.expr.is_constant()) {
        out.expr = DimExpr::constant(size);
      } else if (in.expr.known() && rule(DimExpr::constant(in.value)).constant_value() == size) {
        out.expr = rule(in.expr);
      }
    } else {
      out.expr = rule(in.expr);
    }
    spatial.push_back(std::move(out));
  }
  return spatial;
}

Result<Dims> conv_output(const ShapeInferenceContext& context, const ConvAttributes& attributes, const Dims& x,
                         const Dims& weight) {
  if (x.size() < 3) return context.error("input X {} needs [N, C, spatial...]", dims_to_string(x));
  if (weight.size() != x.size()) {
    return context.error("weight {} has rank {}, input X {} has rank {}", dims_to_string(weight), weight.size(),
                         dims_to_string(x), x.size());
  }
  const Dim& channels = x[1];
  const Dim& per_group = weight[1];
  if (channels.is_static() && per_group.is_static()) {
    std::optional<int64_t> takes = checked_mul(per_group.value, attributes.group);
    if (takes != channels.value) {
      return context.error("input X has {} channels, weight {} with group {} takes {}", channels.value,
                           dims_to_string(weight), attributes.group, takes ? std::to_string(*takes) : "too many");
    }
  }
  std::vector<int64_t> kernel = attributes.kernel_shape;
  if (kernel.empty()) {
    for (size_t i = 2; i < weight.size(); ++i) {
      if (!weight[i].is_static())
        return context.error("the kernel size (weight {}) is not known", dims_to_string(weight));
      kernel.push_back(weight[i].value);
    }
  }
  QDQRT_ASSIGN_OR_RETURN(Dims spatial, window_spatial_dims(context, x, kernel, attributes.strides, attributes.dilations,
                                                           attributes.pads, attributes.auto_pad, /*ceil_mode=*/false));
  Dims y = {x[0], weight[0]};
  y.insert(y.end(), spatial.begin(), spatial.end());
  return y;
}

Result<Dims> matmul_output(const ShapeInferenceContext& context, const Dims& a, const Dims& b) {
  if (a.empty() || b.empty()) {
    return context.error("matrix product of {} and {}: scalars are not allowed", dims_to_string(a), dims_to_string(b));
  }
  Dims a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), static_dim(1));
  if (b2.size() == 1) b2.push_back(static_dim(1));
  const Dim& k_a = a2[a2.size() - 1];
  const Dim& k_b = b2[b2.size() - 2];
  if (k_a.is_static() && k_b.is_static() && k_a.value != k_b.value) {
    return context.error("matrix product of {} and {}: inner dims {} and {} differ", dims_to_string(a),
                         dims_to_string(b), k_a.value, k_b.value);
  }
  OptionalDims y = broadcast_dims(Dims(a2.begin(), a2.end() - 2), Dims(b2.begin(), b2.end() - 2));
  if (!y) {
    return context.error("matrix product of {} and {}: the batch dims do not broadcast", dims_to_string(a),
                         dims_to_string(b));
  }
  if (a.size() > 1) y->push_back(a2[a2.size() - 2]);
  if (b.size() > 1) y->push_back(b2[b2.size() - 1]);
  return *y;
}

}  // namespace qdqrt
