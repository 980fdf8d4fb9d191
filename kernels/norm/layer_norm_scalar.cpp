// The plain LayerNorm kernel: the reference the vector kernels are tested against.
#include <cmath>

#include "kernels/norm/layer_norm_quantize_inl.h"

namespace qdqrt::kernels::scalar {

void layer_norm(const LayerNormParams& params, const float* x, void* y) {
  const size_t columns = params.columns;
  constexpr size_t kChunk = 64;  // quantized rows go out through a small buffer
  for (size_t row = 0; row < params.rows; ++row) {
    const float* in = x + row * columns;
    float sum = 0.0f;
    for (size_t c = 0; c < columns; ++c) sum += in[c];
    const float mean = sum / static_cast<float>(columns);
    float squares = 0.0f;
    for (size_t c = 0; c < columns; ++c) squares += (in[c] - mean) * (in[c] - mean);
    const float inverse = 1.0f / std::sqrt(squares / static_cast<float>(columns) + params.epsilon);
    if (params.y_scale == 0.0f) {
      float* out = static_cast<float*>(y) + row * columns;
      for (size_t c = 0; c < columns; ++c) out[c] = (in[c] - mean) * inverse * params.gamma[c] + params.beta[c];
      continue;
    }
    float values[kChunk];
    for (size_t start = 0; start < columns; start += kChunk) {
      const size_t count = std::min(kChunk, columns - start);
      for (size_t c = 0; c < count; ++c) {
        values[c] = (in[start + c] - mean) * inverse * params.gamma[start + c] + params.beta[start + c];
      }
      layer_norm_detail::store_quantized(params, values, count, static_cast<uint8_t*>(y) + row * columns + start);
    }
  }
}

}  // namespace qdqrt::kernels::scalar
