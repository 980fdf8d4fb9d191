// AVX2 quantize/dequantize/requantize: 8 lanes per step; tails go through a zero-padded stack
// block so they run the very same vector instructions (no separate scalar formula).
#include <cstring>

#include "kernels/quantize/quantize.h"
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

template <class T>
void quantize_nchw_to_nhwc(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end,
                           const float* input, T* output, const float* scales, const int32_t* zero_points) {
  // 8 pixels per plane through the vector quantizer into a tile, then scattered to NHWC.
  const __m256 qmin = _mm256_set1_ps(static_cast<float>(QTraits<T>::min));
  const __m256 qmax = _mm256_set1_ps(static_cast<float>(QTraits<T>::max));
  auto quantize_plane8 = [&](size_t c, size_t p, size_t count) {
    const float* plane = input + c * pixels + p;
    float block[8] = {};
    if (count < 8) std::memcpy(block, plane, count * sizeof(float));
    const __m256 zero_point_f = _mm256_set1_ps(static_cast<float>(zero_points[c]));
    const __m256 x = _mm256_div_ps(_mm256_loadu_ps(count < 8 ? block : plane), _mm256_set1_ps(scales[c]));
    return narrow8<T>(requantize8(x, _mm256_sub_ps(qmin, zero_point_f), _mm256_sub_ps(qmax, zero_point_f),
                                  _mm256_set1_epi32(zero_points[c])));
  };
  if (channels == 3) {
    // RGB model input: rg = [r0..r7 g0..g7], b = [b0..b7]; two vpshufb pairs interleave 24 bytes
    // (index bit 7 set = zero byte).
    alignas(16) int8_t rg_index[32], b_index[32];
    for (int k = 0; k < 32; ++k) {
      const int pixel = k / 3, channel = k % 3;
      const bool valid = k < 24;
      rg_index[k] = static_cast<int8_t>(valid && channel < 2 ? channel * 8 + pixel : -1);
      b_index[k] = static_cast<int8_t>(valid && channel == 2 ? pixel : -1);
    }
    const __m128i rg_low = _mm_load_si128(reinterpret_cast<const __m128i*>(rg_index));
    const __m128i rg_high = _mm_load_si128(reinterpret_cast<const __m128i*>(rg_index + 16));
    const __m128i b_low = _mm_load_si128(reinterpret_cast<const __m128i*>(b_index));
    const __m128i b_high = _mm_load_si128(reinterpret_cast<const __m128i*>(b_index + 16));
    for (size_t p = pixel_begin; p < pixel_end; p += 8) {
      const size_t count = pixel_end - p >= 8 ? 8 : pixel_end - p;
      const __m128i rg = _mm_unpacklo_epi64(quantize_plane8(0, p, count), quantize_plane8(1, p, count));
      const __m128i b = quantize_plane8(2, p, count);
      const __m128i low = _mm_or_si128(_mm_shuffle_epi8(rg, rg_low), _mm_shuffle_epi8(b, b_low));
      const __m128i high = _mm_or_si128(_mm_shuffle_epi8(rg, rg_high), _mm_shuffle_epi8(b, b_high));
      T* out = output + 3 * p;
      if (count == 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), low);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 16), high);
      } else {
        alignas(16) T block[32];
        _mm_store_si128(reinterpret_cast<__m128i*>(block), low);
        _mm_store_si128(reinterpret_cast<__m128i*>(block + 16), high);
        std::memcpy(out, block, 3 * count);
      }
    }
    return;
  }
  // Any channel count: 8 pixels per plane into a tile, scattered to NHWC.
  alignas(16) T tile[16];
  for (size_t p = pixel_begin; p < pixel_end; p += 8) {
    const size_t count = pixel_end - p >= 8 ? 8 : pixel_end - p;
    for (size_t c = 0; c < channels; ++c) {
      _mm_store_si128(reinterpret_cast<__m128i*>(tile), quantize_plane8(c, p, count));
      for (size_t i = 0; i < count; ++i) output[(p + i) * channels + c] = tile[i];
    }
  }
}

#define QDQRT_INSTANTIATE(T)                                                                             \
  template void quantize<T>(size_t, const float*, T*, float, int32_t);                                   \
  template void dequantize<T>(size_t, const T*, float*, float, int32_t);                                 \
  template void quantize_channels<T>(size_t, size_t, const float*, T*, const float*, const int32_t*);     \
  template void dequantize_channels<T>(size_t, size_t, const T*, float*, const float*, const int32_t*);   \
  template void requantize<T>(size_t, const T*, T*, const RequantizeParams&);                             \
  template void quantize_nchw_to_nhwc<T>(size_t, size_t, size_t, size_t, const float*, T*, const float*,  \
                                         const int32_t*);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace qdqrt::kernels::avx2
