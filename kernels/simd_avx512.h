// The 512-bit vector traits of the supporting kernels: what quantize/, elementwise/, pool/ and lut/
// implement once (their *_vector_impl.h templates) and run at 16 int32/fp32 lanes or 64 bytes.
// Needs AVX-512 F/BW/VL/DQ: include ONLY from *_avx512skx.cpp / *_avx512vbmi.cpp files.
// Everything has internal linkage (anonymous namespace), so no AVX-512-compiled inline function
// can be picked by the linker for a portable or AVX2 object file. Partial vectors are masked.
#pragma once

#include <immintrin.h>

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the _mm512_undefined_*
// idiom, GCC bug 105593, fixed in GCC 13) wherever they are inlined; silence it for this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/simd_common.h"

namespace qdqrt::kernels {
namespace {

struct Avx512Vectors {
  static constexpr size_t kLanes = 16;  // int32 or fp32 lanes per vector
  static constexpr size_t kBytes = 64;  // bytes per byte vector
  using Floats = __m512;
  using Ints = __m512i;
  using Bytes = __m512i;

  // The first `count` lanes (count <= 16) / bytes (count may exceed 64: all of them).
  static __mmask16 lane_mask(size_t count) { return static_cast<__mmask16>((1u << count) - 1u); }
  static __mmask64 byte_mask(size_t count) { return count >= 64 ? ~__mmask64{0} : ((__mmask64{1} << count) - 1u); }

  // ---- fp32 and int32 lanes
  static Floats splat(float value) { return _mm512_set1_ps(value); }
  static Ints splat_int(int32_t value) { return _mm512_set1_epi32(value); }
  static Ints zero_ints() { return _mm512_setzero_si512(); }
  static Ints add(Ints a, Ints b) { return _mm512_add_epi32(a, b); }
  static Ints sub(Ints a, Ints b) { return _mm512_sub_epi32(a, b); }
  static Floats add(Floats a, Floats b) { return _mm512_add_ps(a, b); }
  static Floats sub(Floats a, Floats b) { return _mm512_sub_ps(a, b); }
  static Floats mul(Floats a, Floats b) { return _mm512_mul_ps(a, b); }
  static Floats div(Floats a, Floats b) { return _mm512_div_ps(a, b); }
  static Floats to_float(Ints v) { return _mm512_cvtepi32_ps(v); }
  // clamp(v, lo, hi) with NaN -> lo, round half to even, + zero point.
  static Ints requantize(Floats v, Floats lo, Floats hi, Ints zero_point) {
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    return _mm512_add_epi32(_mm512_cvtps_epi32(v), zero_point);
  }

  static Floats load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Floats v) { _mm512_storeu_ps(p, v); }
  static Ints load_ints(const int32_t* p) { return _mm512_loadu_si512(p); }
  // The first `count` (< kLanes) values; the other lanes hold `fill`.
  static Floats load_partial(const float* p, size_t count, float fill = 0.0f) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), lane_mask(count), p);
  }
  static Ints load_ints_partial(const int32_t* p, size_t count) {
    return _mm512_maskz_loadu_epi32(lane_mask(count), p);
  }
  static void store_partial(float* p, Floats v, size_t count) { _mm512_mask_storeu_ps(p, lane_mask(count), v); }

  // ---- 8-bit values as int32 lanes (sign- or zero-extended by T)
  template <class T>
  static Ints widen(__m128i bytes) {
    if constexpr (std::is_signed_v<T>) {
      return _mm512_cvtepi8_epi32(bytes);
    } else {
      return _mm512_cvtepu8_epi32(bytes);
    }
  }
  template <class T>
  static Ints load_widen(const T* p) {
    return widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  template <class T>
  static Ints load_widen_partial(const T* p, size_t count) {
    return widen<T>(_mm_maskz_loadu_epi8(lane_mask(count), p));
  }
  // Lanes already inside T's range -> kLanes bytes (vpmovdb truncation is exact then).
  template <class T>
  static void store_narrow(T* p, Ints v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
  }
  template <class T>
  static void store_narrow_partial(T* p, Ints v, size_t count) {
    _mm512_mask_cvtepi32_storeu_epi8(p, lane_mask(count), v);
  }
  template <class T>
  static void store_narrow4(T* p, Ints a, Ints b, Ints c, Ints d) {
    store_narrow(p, a);
    store_narrow(p + kLanes, b);
    store_narrow(p + 2 * kLanes, c);
    store_narrow(p + 3 * kLanes, d);
  }
  // Three planes of `count` (<= kLanes) pixels -> 3 * count interleaved bytes (RGB pixels): per
  // 16 output lanes, vpermt2d picks from the first two planes and a masked vpermd from the third,
  // then each is narrowed to 16 bytes (48 bytes per 16 pixels).
  template <class T>
  static void store_interleaved3(T* p, Ints first, Ints second, Ints third, size_t count) {
    static constexpr InterleaveIndex<int32_t, 48, 16> kIndex{};
    const auto interleave = [&](int part) {
      const __m512i first_two_index = _mm512_loadu_si512(kIndex.first_two + 16 * part);
      const __m512i third_index = _mm512_loadu_si512(kIndex.third + 16 * part);
      const __mmask16 from_third = _mm512_cmpge_epi32_mask(third_index, _mm512_setzero_si512());
      const __m512i interleaved = _mm512_permutex2var_epi32(first, first_two_index, second);
      return _mm512_cvtepi32_epi8(_mm512_mask_permutexvar_epi32(interleaved, from_third, third_index, third));
    };
    __m512i bytes = _mm512_castsi128_si512(interleave(0));
    bytes = _mm512_inserti32x4(bytes, interleave(1), 1);
    bytes = _mm512_inserti32x4(bytes, interleave(2), 2);
    _mm512_mask_storeu_epi8(p, byte_mask(3 * count), bytes);
  }

  // ---- raw bytes
  static Bytes splat_bytes(int8_t value) { return _mm512_set1_epi8(value); }
  static Bytes load_bytes(const void* p) { return _mm512_loadu_si512(p); }
  static void store_bytes(void* p, Bytes v) { _mm512_storeu_si512(p, v); }
  static Bytes load_bytes_partial(const void* p, size_t count) { return _mm512_maskz_loadu_epi8(byte_mask(count), p); }
  static void store_bytes_partial(void* p, Bytes v, size_t count) { _mm512_mask_storeu_epi8(p, byte_mask(count), v); }
  template <class T>
  static Bytes max_bytes(Bytes a, Bytes b) {
    if constexpr (std::is_signed_v<T>) {
      return _mm512_max_epi8(a, b);
    } else {
      return _mm512_max_epu8(a, b);
    }
  }
  // vpshufb within each 128-bit lane, and the byte arithmetic the LUT network needs (AVX-512BW).
  static Bytes broadcast_128(__m128i v) { return _mm512_broadcast_i32x4(v); }
  static Bytes shuffle_bytes(Bytes table, Bytes index) { return _mm512_shuffle_epi8(table, index); }
  static Bytes sub_bytes(Bytes a, Bytes b) { return _mm512_sub_epi8(a, b); }
  static Bytes sub_bytes_saturated(Bytes a, Bytes b) { return _mm512_subs_epi8(a, b); }
  static Bytes xor_bytes(Bytes a, Bytes b) { return _mm512_xor_si512(a, b); }
};

}  // namespace
}  // namespace qdqrt::kernels
