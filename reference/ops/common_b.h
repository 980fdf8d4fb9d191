// Helpers for the elementwise, reduce and tensor reference kernels: numpy broadcasting, axis
// normalization, dtype dispatch, float16/bfloat16 conversion and input checks. Plain and
// readable over fast: these kernels are the oracle, not the engine.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt::refb {

using Inputs = std::span<const Tensor* const>;

// "<Op> 'name': message" as an invalid-argument Status.
template <class... Args>
Status node_error(const Node& node, fmt::format_string<Args...> format, Args&&... args) {
  return invalid_argument("{}: {}", node.describe(), fmt::format(format, std::forward<Args>(args)...));
}

inline Status unsupported_dtype(const Node& node, const char* what, DataType dtype) {
  return unsupported("{}: {} has unsupported dtype {}", node.describe(), what, dtype_name(dtype));
}

// Input i, or nullptr when absent (beyond the list or an empty name).
inline const Tensor* optional_input(Inputs inputs, size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

inline Result<const Tensor*> required_input(const Node& node, Inputs inputs, size_t i) {
  const Tensor* tensor = optional_input(inputs, i);
  if (tensor == nullptr || !tensor->defined()) return node_error(node, "required input {} is missing", i);
  return tensor;
}

inline Status check_input_count(const Node& node, Inputs inputs, size_t min_count, size_t max_count) {
  if (inputs.size() < min_count || inputs.size() > max_count) {
    return node_error(node, "expected {} to {} inputs, got {}", min_count, max_count, inputs.size());
  }
  for (size_t i = 0; i < min_count; ++i) {
    if (inputs[i] == nullptr || !inputs[i]->defined()) return node_error(node, "required input {} is missing", i);
  }
  return Status::ok();
}

// An int32/int64 input read as int64 values (shapes, axes, indices given as tensors).
inline Result<std::vector<int64_t>> int64_values(const Node& node, const Tensor& tensor, const char* what) {
  if (tensor.dtype() != DataType::kInt64 && tensor.dtype() != DataType::kInt32) {
    return node_error(node, "{} must be int32 or int64, got {}", what, dtype_name(tensor.dtype()));
  }
  return tensor.to_int64_vector();
}

// ---- axes ----

// Maps axis in [-rank, rank-1] to [0, rank-1].
inline Result<int64_t> normalize_axis(const Node& node, const char* what, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return node_error(node, "{} {} is out of range for rank {}", what, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// Normalizes every axis; duplicates are an error.
inline Result<std::vector<int64_t>> normalize_axes(const Node& node, const char* what, const std::vector<int64_t>& axes,
                                                   int64_t rank) {
  std::vector<int64_t> result;
  for (int64_t axis : axes) {
    QDQRT_ASSIGN_OR_RETURN(int64_t normalized, normalize_axis(node, what, axis, rank));
    for (int64_t seen : result) {
      if (seen == normalized) return node_error(node, "{} {} is repeated", what, axis);
    }
    result.push_back(normalized);
  }
  return result;
}

// ---- shapes and broadcasting ----

inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// numpy broadcasting of several shapes.
inline Result<Shape> broadcast_shapes(const Node& node, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
  Shape out(rank, 1);
  for (const Shape& shape : shapes) {
    size_t offset = rank - shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t dim = shape[d];
      int64_t& out_dim = out[offset + d];
      if (dim == out_dim || dim == 1) continue;
      if (out_dim == 1) {
        out_dim = dim;
        continue;
      }
      std::string all;
      for (const Shape& s : shapes) all += (all.empty() ? "" : ", ") + shape_to_string(s);
      return node_error(node, "shapes {} cannot be broadcast together", all);
    }
  }
  return out;
}

// Strides that read a tensor of in_shape as if broadcast to out_shape (0 on broadcast dims).
inline std::vector<int64_t> broadcast_strides(const Shape& in_shape, const Shape& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  std::vector<int64_t> in_strides = contiguous_strides(in_shape);
  size_t offset = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) {
    strides[offset + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  }
  return strides;
}

// Calls visit(out_index, offsets) for each element of out_shape in row-major order, where
// offsets[i] is the element offset into operand i given its strides (one stride per out dim).
template <size_t N, class Visit>
void for_each_index(const Shape& out_shape, const std::array<std::vector<int64_t>, N>& strides, Visit&& visit) {
  const int64_t total = shape_numel(out_shape);
  const size_t rank = out_shape.size();
  std::vector<int64_t> counter(rank, 0);
  std::array<int64_t, N> offsets{};
  for (int64_t index = 0; index < total; ++index) {
    visit(index, offsets);
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      for (size_t i = 0; i < N; ++i) offsets[i] += strides[i][d];
      if (counter[d] < out_shape[d]) break;
      for (size_t i = 0; i < N; ++i) offsets[i] -= strides[i][d] * out_shape[d];
      counter[d] = 0;
    }
  }
}

// Output = op(a[i], b[j]) with numpy broadcasting; Out may differ from In (comparisons -> bool).
template <class Out, class InA, class InB, class Op>
Result<Tensor> broadcast_binary(const Node& node, const Tensor& a, const Tensor& b, Op op) {
  QDQRT_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(node, {a.shape(), b.shape()}));
  Tensor out(dtype_of<Out>(), out_shape);
  const InA* a_data = a.data<InA>();
  const InB* b_data = b.data<InB>();
  Out* out_data = out.data<Out>();
  std::array<std::vector<int64_t>, 2> strides = {broadcast_strides(a.shape(), out_shape),
                                                 broadcast_strides(b.shape(), out_shape)};
  for_each_index<2>(out_shape, strides, [&](int64_t index, const std::array<int64_t, 2>& offsets) {
    out_data[index] = static_cast<Out>(op(a_data[offsets[0]], b_data[offsets[1]]));
  });
  return out;
}

// ---- dtype dispatch ----
// visit(std::type_identity<T>{}) for the element type T of dtype; f returns Status.

template <class F>
Status visit_numeric(const Node& node, const char* what, DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat: return f(std::type_identity<float>{});
    case DataType::kDouble: return f(std::type_identity<double>{});
    case DataType::kInt8: return f(std::type_identity<int8_t>{});
    case DataType::kUint8: return f(std::type_identity<uint8_t>{});
    case DataType::kInt16: return f(std::type_identity<int16_t>{});
    case DataType::kUint16: return f(std::type_identity<uint16_t>{});
    case DataType::kInt32: return f(std::type_identity<int32_t>{});
    case DataType::kUint32: return f(std::type_identity<uint32_t>{});
    case DataType::kInt64: return f(std::type_identity<int64_t>{});
    case DataType::kUint64: return f(std::type_identity<uint64_t>{});
    default: return unsupported_dtype(node, what, dtype);
  }
}

template <class F>
Status visit_numeric_or_bool(const Node& node, const char* what, DataType dtype, F&& f) {
  if (dtype == DataType::kBool) return f(std::type_identity<bool>{});
  return visit_numeric(node, what, dtype, std::forward<F>(f));
}

template <class F>
Status visit_float(const Node& node, const char* what, DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat: return f(std::type_identity<float>{});
    case DataType::kDouble: return f(std::type_identity<double>{});
    default: return unsupported_dtype(node, what, dtype);
  }
}

// ---- float16 / bfloat16 ----

inline float half_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t result;
  if (exponent == 0x1f) {
    result = sign | 0x7f800000u | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    result = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    result = sign;
  } else {
    // Subnormal half: value = mantissa * 2^-24, exact in float.
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  float out;
  std::memcpy(&out, &result, sizeof(out));
  return out;
}

// Round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs_bits < 0x38800000u) {
    // Result is subnormal (or zero) in half: units of 2^-24, rounded half to even.
    float magnitude;
    std::memcpy(&magnitude, &abs_bits, sizeof(magnitude));
    float units = std::nearbyint(std::ldexp(magnitude, 24));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  uint32_t mantissa = abs_bits & 0x7fffffu;
  uint32_t exponent = (abs_bits >> 23) - 112;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float bfloat16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float out;
  std::memcpy(&out, &wide, sizeof(out));
  return out;
}

// Round to nearest even, NaN stays NaN.
inline uint16_t float_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline bool is_half_dtype(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

// float16/bfloat16 tensor -> float32 tensor of the same shape.
inline Tensor half_to_float_tensor(const Tensor& tensor) {
  Tensor out(DataType::kFloat, tensor.shape());
  const uint16_t* in = tensor.data<uint16_t>();
  float* out_data = out.data<float>();
  bool brain = tensor.dtype() == DataType::kBFloat16;
  for (int64_t i = 0; i < tensor.numel(); ++i) out_data[i] = brain ? bfloat16_to_float(in[i]) : half_to_float(in[i]);
  return out;
}

// float32 tensor -> float16/bfloat16 tensor of the same shape.
inline Tensor float_to_half_tensor(const Tensor& tensor, DataType half_dtype) {
  Tensor out(half_dtype, tensor.shape());
  const float* in = tensor.data<float>();
  uint16_t* out_data = out.data<uint16_t>();
  bool brain = half_dtype == DataType::kBFloat16;
  for (int64_t i = 0; i < tensor.numel(); ++i) out_data[i] = brain ? float_to_bfloat16(in[i]) : float_to_half(in[i]);
  return out;
}

// ---- element copies independent of dtype ----

inline void copy_element(std::byte* dst, int64_t dst_index, const std::byte* src, int64_t src_index, size_t size) {
  std::memcpy(dst + dst_index * static_cast<int64_t>(size), src + src_index * static_cast<int64_t>(size), size);
}

inline const std::byte* bytes_of(const Tensor& tensor) { return static_cast<const std::byte*>(tensor.raw_data()); }
inline std::byte* bytes_of(Tensor& tensor) { return static_cast<std::byte*>(tensor.raw_data()); }

// Checks dims are non-negative and the element count stays within a sane bound before allocating.
inline Status check_output_shape(const Node& node, const Shape& shape) {
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return node_error(node, "output shape {} has a negative dim", shape_to_string(shape));
    if (dim != 0 && numel > (int64_t{1} << 40) / dim) {
      return node_error(node, "output shape {} is too large", shape_to_string(shape));
    }
    numel *= dim;
  }
  return Status::ok();
}

}  // namespace qdqrt::refb

namespace qdqrt::refb {

// The node's typed attribute struct, or an error if the node was not parsed with its schema.
template <class T>
Result<const T*> typed_attributes(const Node& node) {
  const T* typed = dynamic_cast<const T*>(node.typed_attributes.get());
  if (typed == nullptr) return internal_error("{}: typed attributes were not parsed", node.describe());
  return typed;
}

// double -> T without undefined behaviour: NaN gives 0, out-of-range values clamp (integer T).
template <class T>
T cast_from_double(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    if (std::isnan(value)) return 0;
    if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  }
}

// Integer add/sub/mul wrap around like numpy: computed in an unsigned type at least as wide as
// unsigned int (so small types do not promote to signed int), where overflow is defined.
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
T wrapping_add(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <class T>
T wrapping_sub(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
}
template <class T>
T wrapping_mul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

// Runs `kernel` on float32 copies of float16/bfloat16 inputs so float-math kernels need one
// implementation. When input `data_input` (whose dtype the outputs follow) was 16-bit, float32
// outputs are converted back to that dtype.
template <Status (*kernel)(const Node&, Inputs, std::vector<Tensor>&), size_t data_input = 0>
Status half_via_float(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  bool any_half = false;
  std::vector<Tensor> converted;
  converted.reserve(inputs.size());
  std::vector<const Tensor*> float_inputs;
  for (const Tensor* input : inputs) {
    if (input != nullptr && input->defined() && is_half_dtype(input->dtype())) {
      any_half = true;
      converted.push_back(half_to_float_tensor(*input));
      float_inputs.push_back(&converted.back());
    } else {
      float_inputs.push_back(input);
    }
  }
  if (!any_half) return kernel(node, inputs, outputs);
  QDQRT_RETURN_IF_ERROR(kernel(node, float_inputs, outputs));
  const Tensor* data = optional_input(inputs, data_input);
  if (data == nullptr || !is_half_dtype(data->dtype())) return Status::ok();
  for (Tensor& output : outputs) {
    if (output.defined() && output.dtype() == DataType::kFloat) output = float_to_half_tensor(output, data->dtype());
  }
  return Status::ok();
}

}  // namespace qdqrt::refb
