// AVX-512 quantize/dequantize/requantize: 16 lanes per step, masked tails (no scalar tail code).
#include "kernels/quantize/quantize.h"
#include "kernels/simd_avx512.h"

namespace qdqrt::kernels::avx512skx {

using namespace simd512;

template <class T>
void quantize(size_t n, const float* input, T* output, float scale, int32_t zero_point) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(QTraits<T>::min - zero_point));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(QTraits<T>::max - zero_point));
  const __m512i vzero_point = _mm512_set1_epi32(zero_point);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 x0 = _mm512_div_ps(_mm512_loadu_ps(input + i), vscale);
    const __m512 x1 = _mm512_div_ps(_mm512_loadu_ps(input + i + 16), vscale);
    store16(output + i, requantize16(x0, lo, hi, vzero_point));
    store16(output + i + 16, requantize16(x1, lo, hi, vzero_point));
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xffff) : tail_mask16(n - i);
    const __m512 x = _mm512_div_ps(_mm512_maskz_loadu_ps(mask, input + i), vscale);
    mask_store16(output + i, mask, requantize16(x, lo, hi, vzero_point));
  }
}

template <class T>
void dequantize(size_t n, const T* input, float* output, float scale, int32_t zero_point) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512i vzero_point = _mm512_set1_epi32(zero_point);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i q0 = _mm512_sub_epi32(load16_epi32(input + i), vzero_point);
    const __m512i q1 = _mm512_sub_epi32(load16_epi32(input + i + 16), vzero_point);
    _mm512_storeu_ps(output + i, _mm512_mul_ps(_mm512_cvtepi32_ps(q0), vscale));
    _mm512_storeu_ps(output + i + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(q1), vscale));
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xffff) : tail_mask16(n - i);
    const __m512i q = _mm512_sub_epi32(maskz_load16_epi32(mask, input + i), vzero_point);
    _mm512_mask_storeu_ps(output + i, mask, _mm512_mul_ps(_mm512_cvtepi32_ps(q), vscale));
  }
}

template <class T>
void quantize_channels(size_t rows, size_t channels, const float* input, T* output, const float* scales,
                       const int32_t* zero_points) {
  const __m512 qmin = _mm512_set1_ps(static_cast<float>(QTraits<T>::min));
  const __m512 qmax = _mm512_set1_ps(static_cast<float>(QTraits<T>::max));
  for (size_t r = 0; r < rows; ++r) {
    const float* row_in = input + r * channels;
    T* row_out = output + r * channels;
    for (size_t c = 0; c < channels; c += 16) {
      const __mmask16 mask = channels - c >= 16 ? __mmask16(0xffff) : tail_mask16(channels - c);
      const __m512i vzero_point = _mm512_maskz_loadu_epi32(mask, zero_points + c);
      const __m512 zero_point_f = _mm512_cvtepi32_ps(vzero_point);
      // Masked-off lanes divide 0 by 1 (no spurious FP exceptions matter, lanes are not stored).
      const __m512 vscale = _mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), mask, scales + c);
      const __m512 x = _mm512_div_ps(_mm512_maskz_loadu_ps(mask, row_in + c), vscale);
      const __m512 lo = _mm512_sub_ps(qmin, zero_point_f);  // exact: small integers
      const __m512 hi = _mm512_sub_ps(qmax, zero_point_f);
      mask_store16(row_out + c, mask, requantize16(x, lo, hi, vzero_point));
    }
  }
}

template <class T>
void dequantize_channels(size_t rows, size_t channels, const T* input, float* output, const float* scales,
                         const int32_t* zero_points) {
  for (size_t r = 0; r < rows; ++r) {
    const T* row_in = input + r * channels;
    float* row_out = output + r * channels;
    for (size_t c = 0; c < channels; c += 16) {
      const __mmask16 mask = channels - c >= 16 ? __mmask16(0xffff) : tail_mask16(channels - c);
      const __m512i q = _mm512_sub_epi32(maskz_load16_epi32(mask, row_in + c),
                                         _mm512_maskz_loadu_epi32(mask, zero_points + c));
      const __m512 vscale = _mm512_maskz_loadu_ps(mask, scales + c);
      _mm512_mask_storeu_ps(row_out + c, mask, _mm512_mul_ps(_mm512_cvtepi32_ps(q), vscale));
    }
  }
}

template <class T>
void requantize(size_t n, const T* input, T* output, const RequantizeParams& params) {
  const __m512i input_zero_point = _mm512_set1_epi32(params.input_zero_point);
  const __m512i output_zero_point = _mm512_set1_epi32(params.output_zero_point);
  const __m512 multiplier = _mm512_set1_ps(params.multiplier);
  const __m512 lo = _mm512_set1_ps(params.output_min);
  const __m512 hi = _mm512_set1_ps(params.output_max);
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xffff) : tail_mask16(n - i);
    const __m512i q = _mm512_sub_epi32(maskz_load16_epi32(mask, input + i), input_zero_point);
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(q), multiplier);
    mask_store16(output + i, mask, requantize16(v, lo, hi, output_zero_point));
  }
}

namespace {

// Quantizes 16 pixels (masked) of plane c: int32 lanes inside T's range.
inline __m512i quantize_plane16(const float* plane, __mmask16 mask, float scale, int32_t zero_point, __m512 qmin,
                                __m512 qmax) {
  const __m512 zero_point_f = _mm512_set1_ps(static_cast<float>(zero_point));
  const __m512 x = _mm512_div_ps(_mm512_maskz_loadu_ps(mask, plane), _mm512_set1_ps(scale));
  return requantize16(x, _mm512_sub_ps(qmin, zero_point_f), _mm512_sub_ps(qmax, zero_point_f),
                      _mm512_set1_epi32(zero_point));
}

}  // namespace

template <class T>
void quantize_nchw_to_nhwc(size_t channels, size_t pixels, size_t pixel_begin, size_t pixel_end,
                           const float* input, T* output, const float* scales, const int32_t* zero_points) {
  const __m512 qmin = _mm512_set1_ps(static_cast<float>(QTraits<T>::min));
  const __m512 qmax = _mm512_set1_ps(static_cast<float>(QTraits<T>::max));
  if (channels == 3) {
    // RGB model input: interleave three 16-pixel planes in int32 lanes with two permutes per
    // output vector, then narrow: 48 output bytes per 16 pixels.
    __m512i first_two[3], third[3];
    __mmask16 third_mask[3];
    for (int v = 0; v < 3; ++v) {
      alignas(64) int32_t first_two_index[16], third_index[16];
      uint32_t mask = 0;
      for (int lane = 0; lane < 16; ++lane) {
        const int k = 16 * v + lane;  // output element: pixel k / 3, channel k % 3
        const int pixel = k / 3, channel = k % 3;
        first_two_index[lane] = channel == 1 ? 16 + pixel : pixel;  // channel 0 from a, 1 from b
        third_index[lane] = pixel;
        if (channel == 2) mask |= 1u << lane;
      }
      first_two[v] = _mm512_load_si512(first_two_index);
      third[v] = _mm512_load_si512(third_index);
      third_mask[v] = static_cast<__mmask16>(mask);
    }
    for (size_t p = pixel_begin; p < pixel_end; p += 16) {
      const size_t count = pixel_end - p >= 16 ? 16 : pixel_end - p;
      const __mmask16 mask = count == 16 ? __mmask16(0xffff) : tail_mask16(count);
      const __m512i q0 = quantize_plane16(input + p, mask, scales[0], zero_points[0], qmin, qmax);
      const __m512i q1 = quantize_plane16(input + pixels + p, mask, scales[1], zero_points[1], qmin, qmax);
      const __m512i q2 = quantize_plane16(input + 2 * pixels + p, mask, scales[2], zero_points[2], qmin, qmax);
      __m512i bytes = _mm512_setzero_si512();
      for (int v = 0; v < 3; ++v) {
        __m512i interleaved = _mm512_permutex2var_epi32(q0, first_two[v], q1);
        interleaved = _mm512_mask_permutexvar_epi32(interleaved, third_mask[v], third[v], q2);
        const __m128i narrowed = _mm512_cvtepi32_epi8(interleaved);
        bytes = v == 0 ? _mm512_castsi128_si512(narrowed)
                       : (v == 1 ? _mm512_inserti32x4(bytes, narrowed, 1) : _mm512_inserti32x4(bytes, narrowed, 2));
      }
      _mm512_mask_storeu_epi8(output + 3 * p, tail_mask64(3 * count), bytes);
    }
    return;
  }
  // Any channel count: quantize 16 pixels per plane into a small tile, then scatter it.
  alignas(16) T tile[16];
  for (size_t p = pixel_begin; p < pixel_end; p += 16) {
    const size_t count = pixel_end - p >= 16 ? 16 : pixel_end - p;
    const __mmask16 mask = count == 16 ? __mmask16(0xffff) : tail_mask16(count);
    for (size_t c = 0; c < channels; ++c) {
      store16(tile, quantize_plane16(input + c * pixels + p, mask, scales[c], zero_points[c], qmin, qmax));
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

}  // namespace qdqrt::kernels::avx512skx
