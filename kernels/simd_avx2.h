// The 256-bit vector traits of the supporting kernels: what quantize/, elementwise/, pool/ and lut/
// implement once (their *_vector_impl.h templates) and run at 8 int32/fp32 lanes or 32 bytes.
// Include ONLY from *_avx2.cpp files. Internal linkage throughout (see simd_avx512.h for why).
// Partial vectors go through a zero-padded stack block, so tails run the very same instructions.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/simd_common.h"

namespace qdqrt::kernels {
namespace {

struct Avx2Vectors {
  static constexpr size_t kLanes = 8;   // int32 or fp32 lanes per vector
  static constexpr size_t kBytes = 32;  // bytes per byte vector
  using Floats = __m256;
  using Ints = __m256i;
  using Bytes = __m256i;

  // ---- fp32 and int32 lanes
  static Floats splat(float value) { return _mm256_set1_ps(value); }
  static Ints splat_int(int32_t value) { return _mm256_set1_epi32(value); }
  static Ints zero_ints() { return _mm256_setzero_si256(); }
  static Ints add(Ints a, Ints b) { return _mm256_add_epi32(a, b); }
  static Ints sub(Ints a, Ints b) { return _mm256_sub_epi32(a, b); }
  static Floats add(Floats a, Floats b) { return _mm256_add_ps(a, b); }
  static Floats sub(Floats a, Floats b) { return _mm256_sub_ps(a, b); }
  static Floats mul(Floats a, Floats b) { return _mm256_mul_ps(a, b); }
  static Floats div(Floats a, Floats b) { return _mm256_div_ps(a, b); }
  static Floats to_float(Ints v) { return _mm256_cvtepi32_ps(v); }
  // min(max(v, lo), hi): NaN -> lo (vmaxps returns its second operand when unordered).
  static Floats clamp(Floats v, Floats lo, Floats hi) { return _mm256_min_ps(_mm256_max_ps(v, lo), hi); }
  // clamp(v, lo, hi) with NaN -> lo (vmaxps returns its second operand when unordered), round half
  // to even (cvtps2dq under the default MXCSR), + zero point.
  static Ints requantize(Floats v, Floats lo, Floats hi, Ints zero_point) {
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(v), zero_point);
  }

  static Floats load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Floats v) { _mm256_storeu_ps(p, v); }
  static Ints load_ints(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  // The first `count` (< kLanes) values; the other lanes hold `fill`.
  static Floats load_partial(const float* p, size_t count, float fill = 0.0f) {
    float block[kLanes];
    for (float& value : block) value = fill;
    std::memcpy(block, p, count * sizeof(float));
    return load(block);
  }
  static Ints load_ints_partial(const int32_t* p, size_t count) {
    int32_t block[kLanes] = {};
    std::memcpy(block, p, count * sizeof(int32_t));
    return load_ints(block);
  }
  static void store_partial(float* p, Floats v, size_t count) {
    float block[kLanes];
    store(block, v);
    std::memcpy(p, block, count * sizeof(float));
  }

  // ---- 8-bit values as int32 lanes (sign- or zero-extended by T)
  template <class T>
  static Ints load_widen(const T* p) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_signed_v<T>) {
      return _mm256_cvtepi8_epi32(bytes);
    } else {
      return _mm256_cvtepu8_epi32(bytes);
    }
  }
  template <class T>
  static Ints load_widen_partial(const T* p, size_t count) {
    T block[kLanes] = {};
    std::memcpy(block, p, count);
    return load_widen(block);
  }
  // Lanes already inside T's range -> kLanes bytes.
  template <class T>
  static __m128i narrow(Ints v) {
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    if constexpr (std::is_signed_v<T>) {
      return _mm_packs_epi16(words, words);
    } else {
      return _mm_packus_epi16(words, words);
    }
  }
  template <class T>
  static void store_narrow(T* p, Ints v) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), narrow<T>(v));
  }
  template <class T>
  static void store_narrow_partial(T* p, Ints v, size_t count) {
    T block[kLanes];
    store_narrow(block, v);
    std::memcpy(p, block, count);
  }
  // 4 * kLanes lanes (a, b, c, d in order) -> one 32-byte store.
  template <class T>
  static void store_narrow4(T* p, Ints a, Ints b, Ints c, Ints d) {
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
  // Three planes of `count` (<= kLanes) pixels -> 3 * count interleaved bytes (RGB pixels): the
  // planes narrowed to bytes, rg = [r0..r7 g0..g7], then two vpshufb pairs place the 24 bytes.
  template <class T>
  static void store_interleaved3(T* p, Ints first, Ints second, Ints third, size_t count) {
    static constexpr InterleaveIndex<int8_t, 32, 8> kIndex{};
    const __m128i rg = _mm_unpacklo_epi64(narrow<T>(first), narrow<T>(second));
    const __m128i b = narrow<T>(third);
    const auto index = [](const int8_t* bytes) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)); };
    const __m128i low =
        _mm_or_si128(_mm_shuffle_epi8(rg, index(kIndex.first_two)), _mm_shuffle_epi8(b, index(kIndex.third)));
    const __m128i high =
        _mm_or_si128(_mm_shuffle_epi8(rg, index(kIndex.first_two + 16)), _mm_shuffle_epi8(b, index(kIndex.third + 16)));
    if (count == kLanes) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), low);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(p + 16), high);
    } else {
      alignas(16) T block[32];
      _mm_store_si128(reinterpret_cast<__m128i*>(block), low);
      _mm_store_si128(reinterpret_cast<__m128i*>(block + 16), high);
      std::memcpy(p, block, 3 * count);
    }
  }

  // ---- raw bytes
  static Bytes splat_bytes(int8_t value) { return _mm256_set1_epi8(value); }
  static Bytes load_bytes(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static void store_bytes(void* p, Bytes v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static Bytes load_bytes_partial(const void* p, size_t count) {
    alignas(32) uint8_t block[kBytes] = {};
    std::memcpy(block, p, count);
    return load_bytes(block);
  }
  static void store_bytes_partial(void* p, Bytes v, size_t count) {
    alignas(32) uint8_t block[kBytes];
    store_bytes(block, v);
    std::memcpy(p, block, count);
  }
  template <class T>
  static Bytes max_bytes(Bytes a, Bytes b) {
    if constexpr (std::is_signed_v<T>) {
      return _mm256_max_epi8(a, b);
    } else {
      return _mm256_max_epu8(a, b);
    }
  }
  // vpshufb within each 128-bit lane, and the byte arithmetic the LUT network needs.
  static Bytes broadcast_128(__m128i v) { return _mm256_broadcastsi128_si256(v); }
  static Bytes shuffle_bytes(Bytes table, Bytes index) { return _mm256_shuffle_epi8(table, index); }
  static Bytes sub_bytes(Bytes a, Bytes b) { return _mm256_sub_epi8(a, b); }
  static Bytes sub_bytes_saturated(Bytes a, Bytes b) { return _mm256_subs_epi8(a, b); }
  static Bytes xor_bytes(Bytes a, Bytes b) { return _mm256_xor_si256(a, b); }
};

}  // namespace
}  // namespace qdqrt::kernels
