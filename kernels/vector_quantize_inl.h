// fp32 vectors to 8-bit codes, over kernels/vector_math_inl.h's lane type (include that first,
// with QDQRT_VECTOR_LANES 8 or 16, inside an AVX2 or AVX-512 source): the rounding and narrowing
// the fused row kernels (kernels/norm LayerNorm, kernels/softmax) share, each lane the same as the
// scalar clamp(nearbyint(v * inverse_scale) + zero_point, low, high) under the default rounding.
#ifndef QDQRT_KERNELS_VECTOR_QUANTIZE_INL_H
#define QDQRT_KERNELS_VECTOR_QUANTIZE_INL_H

#if !defined(QDQRT_KERNELS_VECTOR_MATH_INL_H) || QDQRT_VECTOR_LANES == 1
#error "include kernels/vector_math_inl.h with 8 or 16 lanes before vector_quantize_inl.h"
#endif

#include <immintrin.h>

#include <cstdint>

namespace qdqrt::kernels {
namespace {
namespace vmath {

// The codes of v as int32 lanes: clamp(round(v * inverse_scale) + zero_point, low, high), computed
// as round(clamp(v * inverse_scale, low - zero_point, high - zero_point)) + zero_point (the same
// integers for finite v: the bounds are integers) with vcvtps2dq's round half to even.
struct QuantizeBounds {
  vf low_minus_zero_point, high_minus_zero_point;
  vi zero_point;
  QuantizeBounds(int32_t zero, bool is_signed)
      : low_minus_zero_point(splat((is_signed ? -128.0f : 0.0f) - static_cast<float>(zero))),
        high_minus_zero_point(splat((is_signed ? 127.0f : 255.0f) - static_cast<float>(zero))),
        zero_point(vi{} + zero) {}
};
inline vi quantize_codes(vf v, vf inverse_scale, const QuantizeBounds& bounds) {
  const vf clamped = vmin(vmax(v * inverse_scale, bounds.low_minus_zero_point), bounds.high_minus_zero_point);
#if QDQRT_VECTOR_LANES == 16
  return (vi)_mm512_cvtps_epi32((__m512)clamped) + bounds.zero_point;
#else
  return (vi)_mm256_cvtps_epi32((__m256)clamped) + bounds.zero_point;
#endif
}

// The low byte of each lane (codes already in the output's range) to out[0, kLanes).
inline void store_low_bytes(vi codes, uint8_t* out) {
#if QDQRT_VECTOR_LANES == 16
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8((__m512i)codes));
#else
  const __m256i low_bytes = _mm256_shuffle_epi8(
      (__m256i)codes, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1,
                                       -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m256i packed = _mm256_permutevar8x32_epi32(low_bytes, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
#endif
}

}  // namespace vmath
}  // namespace
}  // namespace qdqrt::kernels

#endif  // QDQRT_KERNELS_VECTOR_QUANTIZE_INL_H
