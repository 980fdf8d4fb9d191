// Small AVX2 helpers for the supporting kernels. Include ONLY from *_avx2.cpp files.
// Internal linkage throughout (see simd_avx512.h for why).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace qdqrt::kernels {
namespace {
namespace simd256 {

// 8 bytes -> 8 int32 lanes.
template <class T>
inline __m256i load8_epi32(const T* p) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_signed_v<T>) {
    return _mm256_cvtepi8_epi32(bytes);
  } else {
    return _mm256_cvtepu8_epi32(bytes);
  }
}

// 8 int32 lanes inside T's range -> 8 bytes.
template <class T>
inline __m128i narrow8(__m256i v) {
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  if constexpr (std::is_signed_v<T>) {
    return _mm_packs_epi16(words, words);
  } else {
    return _mm_packus_epi16(words, words);
  }
}
template <class T>
inline void store8(T* p, __m256i v) {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), narrow8<T>(v));
}

// 32 int32 lanes (a, b, c, d in order) inside T's range -> 32 bytes.
template <class T>
inline void store32(T* p, __m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // per 128-bit lane: a0-3 b0-3 | a4-7 b4-7
  const __m256i cd = _mm256_packs_epi32(c, d);
  __m256i bytes;
  if constexpr (std::is_signed_v<T>) {
    bytes = _mm256_packs_epi16(ab, cd);
  } else {
    bytes = _mm256_packus_epi16(ab, cd);
  }
  // lanes now hold a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7 (in 4-byte groups)
  bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bytes);
}

inline __m256i requantize8(__m256 v, __m256 lo, __m256 hi, __m256i zero_point) {
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), zero_point);
}

}  // namespace simd256
}  // namespace
}  // namespace qdqrt::kernels
