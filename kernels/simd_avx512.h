// Small AVX-512 helpers for the supporting kernels. Include ONLY from *_avx512*.cpp files.
// Everything has internal linkage (anonymous namespace), so no AVX-512-compiled inline function
// can be picked by the linker for a portable or AVX2 object file.
#pragma once

#include <immintrin.h>

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the _mm512_undefined_*
// idiom, GCC bug 105593, fixed in GCC 13) wherever they are inlined; silence it for this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace qdqrt::kernels {
namespace {
namespace simd512 {

inline __mmask16 tail_mask16(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline __mmask64 tail_mask64(size_t n) { return n >= 64 ? ~__mmask64{0} : ((__mmask64{1} << n) - 1u); }

// 16 bytes -> 16 int32 lanes, sign- or zero-extended by T.
template <class T>
inline __m512i widen16(__m128i bytes) {
  if constexpr (std::is_signed_v<T>) {
    return _mm512_cvtepi8_epi32(bytes);
  } else {
    return _mm512_cvtepu8_epi32(bytes);
  }
}
template <class T>
inline __m512i load16_epi32(const T* p) {
  return widen16<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
template <class T>
inline __m512i maskz_load16_epi32(__mmask16 mask, const T* p) {
  return widen16<T>(_mm_maskz_loadu_epi8(mask, p));
}

// Stores 16 int32 lanes already inside T's range as 16 bytes (vpmovdb truncation is exact then).
template <class T>
inline void store16(T* p, __m512i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
}
template <class T>
inline void mask_store16(T* p, __mmask16 mask, __m512i v) {
  _mm512_mask_cvtepi32_storeu_epi8(p, mask, v);
}

// clamp(v, lo, hi) with NaN -> lo, round half to even, + zero point.
inline __m512i requantize16(__m512 v, __m512 lo, __m512 hi, __m512i zero_point) {
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), zero_point);
}

}  // namespace simd512
}  // namespace
}  // namespace qdqrt::kernels
