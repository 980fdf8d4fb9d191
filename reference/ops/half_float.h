// float16 and bfloat16 in the reference kernels: bit conversions to and from float32 (round to
// nearest even), and half_via_float, which runs a float32 kernel on 16-bit inputs so float-math
// kernels need one implementation.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/ops/op_helpers.h"

namespace qdqrt::reference {

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
  return std::bit_cast<float>(result);
}

// Round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t float_to_half(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs_bits < 0x38800000u) {
    // Result is subnormal (or zero) in half: units of 2^-24, rounded half to even.
    float units = std::nearbyint(std::ldexp(std::bit_cast<float>(abs_bits), 24));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  uint32_t mantissa = abs_bits & 0x7fffffu;
  uint32_t exponent = (abs_bits >> 23) - 112;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// Round to nearest even, NaN stays NaN.
inline uint16_t float_to_bfloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline bool is_half_dtype(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

// Every element of `tensor` (element type From) converted into a new tensor of out_dtype.
template <class From, class To, class Convert>
Tensor convert_elements(const Tensor& tensor, DataType out_dtype, Convert convert) {
  Tensor out(out_dtype, tensor.shape());
  const From* in = tensor.data<From>();
  To* out_data = out.data<To>();
  for (int64_t i = 0; i < tensor.numel(); ++i) out_data[i] = convert(in[i]);
  return out;
}

// float16/bfloat16 tensor -> float32 tensor of the same shape.
inline Tensor half_to_float_tensor(const Tensor& tensor) {
  if (tensor.dtype() == DataType::kBFloat16) {
    return convert_elements<uint16_t, float>(tensor, DataType::kFloat, bfloat16_to_float);
  }
  return convert_elements<uint16_t, float>(tensor, DataType::kFloat, half_to_float);
}

// float32 tensor -> float16/bfloat16 tensor of the same shape.
inline Tensor float_to_half_tensor(const Tensor& tensor, DataType half_dtype) {
  if (half_dtype == DataType::kBFloat16) {
    return convert_elements<float, uint16_t>(tensor, half_dtype, float_to_bfloat16);
  }
  return convert_elements<float, uint16_t>(tensor, half_dtype, float_to_half);
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

}  // namespace qdqrt::reference
