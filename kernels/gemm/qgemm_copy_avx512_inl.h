// The A-panel copy of the AVX-512 GEMM drivers (avx512vnni, amxint8): bytes with the int8 -> uint8
// shift (xor 0x80) applied; the tail uses masked loads so nothing past `count` is read. Included
// inside the including file's compile flags (AVX-512 BW), in an anonymous namespace.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qdqrt::kernels::internal {
namespace {

inline void copy_flip_avx512(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
  const __m512i f = _mm512_set1_epi8(static_cast<char>(flip));
  int i = 0;
  for (; i + 64 <= count; i += 64) {
    _mm512_storeu_si512(dst + i, _mm512_xor_si512(_mm512_loadu_si512(src + i), f));
  }
  if (i < count) {
    const __mmask64 mask = (~0ull) >> (64 - (count - i));
    _mm512_mask_storeu_epi8(dst + i, mask, _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, src + i), f));
  }
}

}  // namespace
}  // namespace qdqrt::kernels::internal
