// The LayerNorm kernel with GCC vector extensions, compiled per ISA file: layer_norm_avx2.cpp
// (8 lanes) and layer_norm_avx512skx.cpp (16 lanes) define QDQRT_NORM_LANES and QDQRT_NORM_NAMESPACE.
#if !defined(QDQRT_NORM_LANES) || !defined(QDQRT_NORM_NAMESPACE)
#error "define QDQRT_NORM_LANES and QDQRT_NORM_NAMESPACE before including layer_norm_vector_impl.h"
#endif

#include <immintrin.h>

#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstring>

#include "kernels/norm/layer_norm_quantize_inl.h"

#define QDQRT_VECTOR_LANES QDQRT_NORM_LANES
#include "kernels/vector_math_inl.h"
#include "kernels/vector_quantize_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels {
namespace {
namespace normvec {

constexpr size_t kLanes = QDQRT_NORM_LANES;
using vmath::load;
using vmath::splat;
using vmath::store;
using vmath::vf;

// Short rows (a small ViT's 64 columns) make the two reductions per row count.
inline float horizontal_sum(vf v) {
#if QDQRT_NORM_LANES == 16
  return _mm512_reduce_add_ps((__m512)v);
#else
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  sum = _mm_hadd_ps(sum, sum);
  return _mm_cvtss_f32(_mm_hadd_ps(sum, sum));
#endif
}

}  // namespace normvec
}  // namespace

namespace QDQRT_NORM_NAMESPACE {

void layer_norm(const LayerNormParams& params, const float* x, void* y) {
  using namespace normvec;
  const size_t columns = params.columns, full = columns - columns % kLanes;
  const bool quantized = params.y_scale != 0.0f;
  const vf inverse_scale = splat(quantized ? 1.0f / params.y_scale : 0.0f);
  const vmath::QuantizeBounds bounds(params.y_zero_point, params.y_signed);
  for (size_t row = 0; row < params.rows; ++row) {
    const float* in = x + row * columns;
    vf sum_vector = splat(0.0f);
    for (size_t c = 0; c < full; c += kLanes) sum_vector += load(in + c);
    float sum = horizontal_sum(sum_vector);
    for (size_t c = full; c < columns; ++c) sum += in[c];
    const float mean = sum / static_cast<float>(columns);
    const vf mean_vector = splat(mean);
    vf squares_vector = splat(0.0f);
    for (size_t c = 0; c < full; c += kLanes) {
      const vf centred = load(in + c) - mean_vector;
      squares_vector += centred * centred;
    }
    float squares = horizontal_sum(squares_vector);
    for (size_t c = full; c < columns; ++c) squares += (in[c] - mean) * (in[c] - mean);
    const float inverse = 1.0f / std::sqrt(squares / static_cast<float>(columns) + params.epsilon);
    const vf inverse_vector = splat(inverse);
    float* float_out = quantized ? nullptr : static_cast<float*>(y) + row * columns;
    uint8_t* code_out = quantized ? static_cast<uint8_t*>(y) + row * columns : nullptr;
    for (size_t c = 0; c < full; c += kLanes) {
      const vf value = (load(in + c) - mean_vector) * inverse_vector * load(params.gamma + c) + load(params.beta + c);
      if (quantized) {
        // Lane for lane layer_norm_detail::store_quantized's rounding, vectorized.
        vmath::store_low_bytes(vmath::quantize_codes(value, inverse_scale, bounds), code_out + c);
      } else {
        store(float_out + c, value);
      }
    }
    for (size_t c = full; c < columns; ++c) {
      const float value = (in[c] - mean) * inverse * params.gamma[c] + params.beta[c];
      if (quantized) {
        layer_norm_detail::store_quantized(params, &value, 1, code_out + c);
      } else {
        float_out[c] = value;
      }
    }
  }
}

}  // namespace QDQRT_NORM_NAMESPACE
}  // namespace qdqrt::kernels
