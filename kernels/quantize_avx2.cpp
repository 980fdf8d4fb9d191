// AVX2 quantize/dequantize/requantize: 8 lanes per step; tails go through a zero-padded stack
// block so they run the very same vector instructions (no separate scalar formula).
#include <cstring>

#include "kernels/quantize.h"
#include "kernels/simd_avx2.h"

namespace qdqrt::kernels::avx2 {

using namespace simd256;

template <class T>
void quantize(size_t n, const float* input, T* output, float scale, int32_t zero_point) {
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(QTraits<T>::min - zero_point));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(QTraits<T>::max - zero_point));
  const __m256i vzero_point = _mm256_set1_epi32(zero_point);
  auto convert = [&](const float* x) {
    return requantize8(_mm256_div_ps(_mm256_loadu_ps(x), vscale), lo, hi, vzero_point);
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    store32(output + i, convert(input + i), convert(input + i + 8), convert(input + i + 16),
            convert(input + i + 24));
  }
  for (; i + 8 <= n; i += 8) store8(output + i, convert(input + i));
  if (i < n) {
    float block_in[8] = {};
    T block_out[8];
    std::memcpy(block_in, input + i, (n - i) * sizeof(float));
    store8(block_out, convert(block_in));
    std::memcpy(output + i, block_out, n - i);
  }
}

template <class T>
void dequantize(size_t n, const T* input, float* output, float scale, int32_t zero_point) {
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i vzero_point = _mm256_set1_epi32(zero_point);
  auto convert = [&](const T* q) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(load8_epi32(q), vzero_point)), vscale);
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(output + i, convert(input + i));
  if (i < n) {
    T block_in[8] = {};
    float block_out[8];
    std::memcpy(block_in, input + i, n - i);
    _mm256_storeu_ps(block_out, convert(block_in));
    std::memcpy(output + i, block_out, (n - i) * sizeof(float));
  }
}

template <class T>
void quantize_channels(size_t rows, size_t channels, const float* input, T* output, const float* scales,
                       const int32_t* zero_points) {
  const __m256 qmin = _mm256_set1_ps(static_cast<float>(QTraits<T>::min));
  const __m256 qmax = _mm256_set1_ps(static_cast<float>(QTraits<T>::max));
  // Padded copies of the per-channel parameters so the channel tail is a full vector too.
  auto convert = [&](const float* x, const float* scale, const int32_t* zero_point) {
    const __m256i vzero_point = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point));
    const __m256 zero_point_f = _mm256_cvtepi32_ps(vzero_point);
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(scale));
    return requantize8(v, _mm256_sub_ps(qmin, zero_point_f), _mm256_sub_ps(qmax, zero_point_f), vzero_point);
  };
  const size_t full = channels & ~size_t{7};
  float tail_scale[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  int32_t tail_zero_point[8] = {};
  std::memcpy(tail_scale, scales + full, (channels - full) * sizeof(float));
  std::memcpy(tail_zero_point, zero_points + full, (channels - full) * sizeof(int32_t));
  for (size_t r = 0; r < rows; ++r) {
    const float* row_in = input + r * channels;
    T* row_out = output + r * channels;
    for (size_t c = 0; c < full; c += 8) store8(row_out + c, convert(row_in + c, scales + c, zero_points + c));
    if (full < channels) {
      float block_in[8] = {};
      T block_out[8];
      std::memcpy(block_in, row_in + full, (channels - full) * sizeof(float));
      store8(block_out, convert(block_in, tail_scale, tail_zero_point));
      std::memcpy(row_out + full, block_out, channels - full);
    }
  }
}

template <class T>
void dequantize_channels(size_t rows, size_t channels, const T* input, float* output, const float* scales,
                         const int32_t* zero_points) {
  auto convert = [&](const T* q, const float* scale, const int32_t* zero_point) {
    const __m256i vzero_point = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(load8_epi32(q), vzero_point)),
                         _mm256_loadu_ps(scale));
  };
  const size_t full = channels & ~size_t{7};
  float tail_scale[8] = {};
  int32_t tail_zero_point[8] = {};
  std::memcpy(tail_scale, scales + full, (channels - full) * sizeof(float));
  std::memcpy(tail_zero_point, zero_points + full, (channels - full) * sizeof(int32_t));
  for (size_t r = 0; r < rows; ++r) {
    const T* row_in = input + r * channels;
    float* row_out = output + r * channels;
    for (size_t c = 0; c < full; c += 8) {
      _mm256_storeu_ps(row_out + c, convert(row_in + c, scales + c, zero_points + c));
    }
    if (full < channels) {
      T block_in[8] = {};
      float block_out[8];
      std::memcpy(block_in, row_in + full, channels - full);
      _mm256_storeu_ps(block_out, convert(block_in, tail_scale, tail_zero_point));
      std::memcpy(row_out + full, block_out, (channels - full) * sizeof(float));
    }
  }
}

template <class T>
void requantize(size_t n, const T* input, T* output, const RequantizeParams& params) {
  const __m256i input_zero_point = _mm256_set1_epi32(params.input_zero_point);
  const __m256i output_zero_point = _mm256_set1_epi32(params.output_zero_point);
  const __m256 multiplier = _mm256_set1_ps(params.multiplier);
  const __m256 lo = _mm256_set1_ps(params.output_min);
  const __m256 hi = _mm256_set1_ps(params.output_max);
  auto convert = [&](const T* q) {
    const __m256 v =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(load8_epi32(q), input_zero_point)), multiplier);
    return requantize8(v, lo, hi, output_zero_point);
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    store32(output + i, convert(input + i), convert(input + i + 8), convert(input + i + 16),
            convert(input + i + 24));
  }
  for (; i + 8 <= n; i += 8) store8(output + i, convert(input + i));
  if (i < n) {
    T block_in[8] = {};
    T block_out[8];
    std::memcpy(block_in, input + i, n - i);
    store8(block_out, convert(block_in));
    std::memcpy(output + i, block_out, n - i);
  }
}

#define QDQRT_INSTANTIATE(T)                                                                             \
  template void quantize<T>(size_t, const float*, T*, float, int32_t);                                   \
  template void dequantize<T>(size_t, const T*, float*, float, int32_t);                                 \
  template void quantize_channels<T>(size_t, size_t, const float*, T*, const float*, const int32_t*);     \
  template void dequantize_channels<T>(size_t, size_t, const T*, float*, const float*, const int32_t*);   \
  template void requantize<T>(size_t, const T*, T*, const RequantizeParams&);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace qdqrt::kernels::avx2
