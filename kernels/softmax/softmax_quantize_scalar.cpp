// The plain definition of the fused Softmax + QuantizeLinear (softmax_quantize.h): the reference
// the vector kernels are tested against, one column at a time.
#include <algorithm>
#include <cmath>

#include "kernels/softmax/softmax_quantize.h"

#define QDQRT_VECTOR_LANES 1
#include "kernels/vector_math_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels::scalar {

void softmax_quantize(const SoftmaxQuantizeParams& params, const float* x, void* y) {
  const size_t columns = params.columns;
  const float inverse_scale = 1.0f / params.y_scale;
  const float low = params.y_signed ? -128.0f : 0.0f, high = params.y_signed ? 127.0f : 255.0f;
  for (size_t row = 0; row < params.rows; ++row) {
    const float* in = x + row * columns;
    float max_value = in[0];
    for (size_t c = 1; c < columns; ++c) max_value = std::max(max_value, in[c]);
    float partial[16] = {};
    for (size_t c = 0; c < columns; ++c) partial[c % 16] += vmath::vexp(in[c] - max_value);
    for (size_t half = 8; half >= 1; half /= 2) {
      for (size_t j = 0; j < half; ++j) partial[j] += partial[j + half];
    }
    const float sum = partial[0];
    const float multiplier = (1.0f / sum) * inverse_scale;
    for (size_t c = 0; c < columns; ++c) {
      const float value = vmath::vexp(in[c] - max_value) * multiplier;
      const float code = std::clamp(std::nearbyint(value) + static_cast<float>(params.y_zero_point), low, high);
      if (params.y_signed) {
        static_cast<int8_t*>(y)[row * columns + c] = static_cast<int8_t>(code);
      } else {
        static_cast<uint8_t*>(y)[row * columns + c] = static_cast<uint8_t>(code);
      }
    }
  }
}

}  // namespace qdqrt::kernels::scalar
