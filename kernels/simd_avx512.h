// The AVX-512 vector traits: what quantize/, elementwise/, pool/ and lut/ implement once (their
// *_vector_impl.h templates) and run at 16 int32/fp32 lanes or 64 bytes (Avx512Vectors), and the
// byte operations the vpdpbusd depthwise kernel runs on zmm and on ymm (Avx512VectorsOfWidth<256>).
// Needs AVX-512 F/BW/VL/DQ: include ONLY from *_avx512skx.cpp / *_avx512vbmi.cpp / *_avx512vnni.cpp
// files (dot_bytes also needs VNNI: *_avx512vnni.cpp only).
// Everything has internal linkage (anonymous namespace), so no AVX-512-compiled inline function
// can be picked by the linker for a portable or AVX2 object file. Partial vectors are masked.
#pragma once

#include <immintrin.h>

// GCC 12 reports -W(maybe-)uninitialized inside its own AVX-512 intrinsics (the _mm512_undefined_*
// idiom, GCC bug 105593, fixed in GCC 13) wherever they are inlined; silence it for this file.
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/simd_common.h"

namespace qdqrt::kernels {
namespace {

// The register types of a width (typedefs: as template arguments the vector types would lose their
// may_alias attribute).
template <int kBits>
struct Avx512Registers {
  using Floats = __m512;
  using Ints = __m512i;
};
template <>
struct Avx512Registers<256> {
  using Floats = __m256;
  using Ints = __m256i;
};

// kBits = 512: zmm, 16 int32/fp32 lanes, 64 bytes. kBits = 256: ymm with the AVX-512VL masked
// forms (the same operations on 8 lanes / 32 bytes: a depthwise block of at most 32 channels).
template <int kBits>
struct Avx512VectorsOfWidth {
  static_assert(kBits == 512 || kBits == 256);
  static constexpr bool kWide = kBits == 512;
  static constexpr size_t kLanes = kBits / 32;  // int32 or fp32 lanes per vector
  static constexpr size_t kBytes = kBits / 8;   // bytes per byte vector
  using Floats = typename Avx512Registers<kBits>::Floats;
  using Ints = typename Avx512Registers<kBits>::Ints;
  using Bytes = Ints;
  using LaneMask = std::conditional_t<kWide, __mmask16, __mmask8>;
  using ByteMask = std::conditional_t<kWide, __mmask64, __mmask32>;

  // The first `count` lanes (count <= kLanes) / bytes (count may exceed kBytes: all of them).
  static LaneMask lane_mask(size_t count) { return static_cast<LaneMask>((1u << count) - 1u); }
  static ByteMask byte_mask(size_t count) {
    return count >= kBytes ? static_cast<ByteMask>(~ByteMask{0}) : static_cast<ByteMask>((ByteMask{1} << count) - 1u);
  }

  // ---- fp32 and int32 lanes
  static Floats splat(float value) {
    if constexpr (kWide) return _mm512_set1_ps(value);
    else return _mm256_set1_ps(value);
  }
  static Ints splat_int(int32_t value) requires kWide { return _mm512_set1_epi32(value); }
  static Ints zero_ints() requires kWide { return _mm512_setzero_si512(); }
  static Ints add(Ints a, Ints b) requires kWide { return _mm512_add_epi32(a, b); }
  static Ints sub(Ints a, Ints b) requires kWide { return _mm512_sub_epi32(a, b); }
  static Floats add(Floats a, Floats b) requires kWide { return _mm512_add_ps(a, b); }
  static Floats sub(Floats a, Floats b) requires kWide { return _mm512_sub_ps(a, b); }
  static Floats mul(Floats a, Floats b) requires kWide { return _mm512_mul_ps(a, b); }
  static Floats div(Floats a, Floats b) requires kWide { return _mm512_div_ps(a, b); }
  // a * b + c, rounded once.
  static Floats mul_add(Floats a, Floats b, Floats c) {
    if constexpr (kWide) return _mm512_fmadd_ps(a, b, c);
    else return _mm256_fmadd_ps(a, b, c);
  }
  static Floats to_float(Ints v) {
    if constexpr (kWide) return _mm512_cvtepi32_ps(v);
    else return _mm256_cvtepi32_ps(v);
  }
  // min(max(v, lo), hi): NaN -> lo (vmaxps returns its second operand when unordered).
  static Floats clamp(Floats v, Floats lo, Floats hi) {
    if constexpr (kWide) return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    else return _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  }
  // Round half to even (vcvtps2dq under the default MXCSR).
  static Ints round_to_ints(Floats v) {
    if constexpr (kWide) return _mm512_cvtps_epi32(v);
    else return _mm256_cvtps_epi32(v);
  }
  // clamp(v, lo, hi) with NaN -> lo, round half to even, + zero point.
  static Ints requantize(Floats v, Floats lo, Floats hi, Ints zero_point) requires kWide {
    return _mm512_add_epi32(round_to_ints(clamp(v, lo, hi)), zero_point);
  }

  static Floats load(const float* p) {
    if constexpr (kWide) return _mm512_loadu_ps(p);
    else return _mm256_loadu_ps(p);
  }
  static void store(float* p, Floats v) requires kWide { _mm512_storeu_ps(p, v); }
  static Ints load_ints(const int32_t* p) requires kWide { return _mm512_loadu_si512(p); }
  // The first `count` (< kLanes) values; the other lanes hold `fill`.
  static Floats load_partial(const float* p, size_t count, float fill = 0.0f) requires kWide {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), lane_mask(count), p);
  }
  static Ints load_ints_partial(const int32_t* p, size_t count) requires kWide {
    return _mm512_maskz_loadu_epi32(lane_mask(count), p);
  }
  static void store_partial(float* p, Floats v, size_t count) requires kWide {
    _mm512_mask_storeu_ps(p, lane_mask(count), v);
  }

  // ---- 8-bit values as int32 lanes (sign- or zero-extended by T)
  template <class T>
  static Ints widen(__m128i bytes) requires kWide {
    if constexpr (std::is_signed_v<T>) {
      return _mm512_cvtepi8_epi32(bytes);
    } else {
      return _mm512_cvtepu8_epi32(bytes);
    }
  }
  template <class T>
  static Ints load_widen(const T* p) requires kWide {
    return widen<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  template <class T>
  static Ints load_widen_partial(const T* p, size_t count) requires kWide {
    return widen<T>(_mm_maskz_loadu_epi8(lane_mask(count), p));
  }
  // Lanes already inside T's range -> kLanes bytes (vpmovdb truncation is exact then).
  template <class T>
  static void store_narrow(T* p, Ints v) requires kWide {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
  }
  template <class T>
  static void store_narrow_partial(T* p, Ints v, size_t count) requires kWide {
    _mm512_mask_cvtepi32_storeu_epi8(p, lane_mask(count), v);
  }
  template <class T>
  static void store_narrow4(T* p, Ints a, Ints b, Ints c, Ints d) requires kWide {
    store_narrow(p, a);
    store_narrow(p + kLanes, b);
    store_narrow(p + 2 * kLanes, c);
    store_narrow(p + 3 * kLanes, d);
  }
  // Three planes of `count` (<= kLanes) pixels -> 3 * count interleaved bytes (RGB pixels): per
  // 16 output lanes, vpermt2d picks from the first two planes and a masked vpermd from the third,
  // then each is narrowed to 16 bytes (48 bytes per 16 pixels).
  template <class T>
  static void store_interleaved3(T* p, Ints first, Ints second, Ints third, size_t count) requires kWide {
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

  // ---- raw bytes and 16-bit words
  static Bytes splat_bytes(int8_t value) {
    if constexpr (kWide) return _mm512_set1_epi8(value);
    else return _mm256_set1_epi8(value);
  }
  static Bytes splat_words(int16_t value) {
    if constexpr (kWide) return _mm512_set1_epi16(value);
    else return _mm256_set1_epi16(value);
  }
  static Bytes load_bytes(const void* p) {
    if constexpr (kWide) return _mm512_loadu_si512(p);
    else return _mm256_loadu_si256(static_cast<const __m256i*>(p));
  }
  static void store_bytes(void* p, Bytes v) {
    if constexpr (kWide) _mm512_storeu_si512(p, v);
    else _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  }
  // The bytes `mask` selects (0 in the others) / only those stored.
  static Bytes load_bytes_masked(ByteMask mask, const void* p) {
    if constexpr (kWide) return _mm512_maskz_loadu_epi8(mask, p);
    else return _mm256_maskz_loadu_epi8(mask, p);
  }
  static void store_bytes_masked(void* p, ByteMask mask, Bytes v) {
    if constexpr (kWide) _mm512_mask_storeu_epi8(p, mask, v);
    else _mm256_mask_storeu_epi8(p, mask, v);
  }
  static Bytes load_bytes_partial(const void* p, size_t count) { return load_bytes_masked(byte_mask(count), p); }
  static void store_bytes_partial(void* p, Bytes v, size_t count) { store_bytes_masked(p, byte_mask(count), v); }
  template <class T>
  static Bytes max_bytes(Bytes a, Bytes b) {
    if constexpr (kWide) return std::is_signed_v<T> ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
    else return std::is_signed_v<T> ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
  }
  template <class T>
  static Bytes min_bytes(Bytes a, Bytes b) {
    if constexpr (kWide) return std::is_signed_v<T> ? _mm512_min_epi8(a, b) : _mm512_min_epu8(a, b);
    else return std::is_signed_v<T> ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
  }
  // Per 128-bit lane: int32 -> int16 with signed saturation (a's 4 lanes, then b's).
  static Bytes pack_words(Ints a, Ints b) {
    if constexpr (kWide) return _mm512_packs_epi32(a, b);
    else return _mm256_packs_epi32(a, b);
  }
  static Bytes add_words_saturated(Bytes a, Bytes b) {
    if constexpr (kWide) return _mm512_adds_epi16(a, b);
    else return _mm256_adds_epi16(a, b);
  }
  // Per 128-bit lane: int16 -> T (int8 or uint8) with saturation (a's 8 words, then b's).
  template <class T>
  static Bytes pack_bytes(Bytes a, Bytes b) {
    if constexpr (kWide) return std::is_signed_v<T> ? _mm512_packs_epi16(a, b) : _mm512_packus_epi16(a, b);
    else return std::is_signed_v<T> ? _mm256_packs_epi16(a, b) : _mm256_packus_epi16(a, b);
  }
  // Per 128-bit lane: the low and the high halves of a and b interleaved, in 8-bit or 16-bit
  // elements (kElementBits).
  template <int kElementBits>
  static void interleave(Bytes a, Bytes b, Bytes& low, Bytes& high) {
    static_assert(kElementBits == 8 || kElementBits == 16);
    if constexpr (kWide && kElementBits == 8) {
      low = _mm512_unpacklo_epi8(a, b), high = _mm512_unpackhi_epi8(a, b);
    } else if constexpr (kWide) {
      low = _mm512_unpacklo_epi16(a, b), high = _mm512_unpackhi_epi16(a, b);
    } else if constexpr (kElementBits == 8) {
      low = _mm256_unpacklo_epi8(a, b), high = _mm256_unpackhi_epi8(a, b);
    } else {
      low = _mm256_unpacklo_epi16(a, b), high = _mm256_unpackhi_epi16(a, b);
    }
  }
  // acc + the sums of 4 adjacent products of unsigned bytes of u and signed bytes of s per int32
  // lane (vpdpbusd: AVX-512 VNNI, only from *_avx512vnni.cpp files).
  static Ints dot_bytes(Ints acc, Bytes u, Bytes s) {
    if constexpr (kWide) return _mm512_dpbusd_epi32(acc, u, s);
    else return _mm256_dpbusd_epi32(acc, u, s);
  }
  // vpshufb within each 128-bit lane, and the byte arithmetic the LUT network needs (AVX-512BW).
  static Bytes broadcast_128(__m128i v) requires kWide { return _mm512_broadcast_i32x4(v); }
  static Bytes shuffle_bytes(Bytes table, Bytes index) requires kWide { return _mm512_shuffle_epi8(table, index); }
  static Bytes sub_bytes(Bytes a, Bytes b) requires kWide { return _mm512_sub_epi8(a, b); }
  static Bytes sub_bytes_saturated(Bytes a, Bytes b) requires kWide { return _mm512_subs_epi8(a, b); }
  static Bytes xor_bytes(Bytes a, Bytes b) {
    if constexpr (kWide) return _mm512_xor_si512(a, b);
    else return _mm256_xor_si256(a, b);
  }
};

using Avx512Vectors = Avx512VectorsOfWidth<512>;

}  // namespace
}  // namespace qdqrt::kernels
