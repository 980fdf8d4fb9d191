// The 8-bit output of the LayerNorm kernels: one place for the rounding all of them share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/norm/layer_norm.h"

namespace qdqrt::kernels::layer_norm_detail {

// y / y_scale rounded half to even (the default rounding mode), plus the zero-point, saturated.
inline void store_quantized(const LayerNormParams& params, const float* values, size_t count, void* out) {
  const float inverse_scale = 1.0f / params.y_scale;
  const float low = params.y_signed ? -128.0f : 0.0f, high = params.y_signed ? 127.0f : 255.0f;
  for (size_t i = 0; i < count; ++i) {
    const float code = std::clamp(std::nearbyint(values[i] * inverse_scale) + static_cast<float>(params.y_zero_point),
                                  low, high);
    if (params.y_signed) {
      static_cast<int8_t*>(out)[i] = static_cast<int8_t>(code);
    } else {
      static_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(code);
    }
  }
}

}  // namespace qdqrt::kernels::layer_norm_detail
