// AVX-512BW 256-entry byte table lookup: the AVX2 algorithm (see qlut_avx2.cpp) on 64 bytes,
// for AVX-512 CPUs without VBMI (Skylake-X, Cascade Lake).
#include "kernels/lut/qlut.h"
#include "kernels/simd_avx512.h"

namespace qdqrt::kernels::avx512skx {

void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table) {
  __m128i t[16];
  for (int j = 0; j < 16; ++j) t[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j));
  __m512i mixed[16];
  __m128i mixed128[16];
  mixed128[0] = t[0];
  for (int j = 1; j < 8; ++j) mixed128[j] = _mm_xor_si128(t[j], t[j - 1]);
  for (int j = 8; j < 16; ++j) mixed128[j] = _mm_xor_si128(_mm_xor_si128(t[j], t[j - 1]), mixed128[j - 8]);
  for (int j = 0; j < 16; ++j) mixed[j] = _mm512_broadcast_i32x4(mixed128[j]);
  const __m512i step = _mm512_set1_epi8(16);
  auto lookup = [&](__m512i x) {
    __m512i y = _mm512_shuffle_epi8(mixed[0], x);
    for (int k = 1; k <= 8; ++k) {
      x = _mm512_sub_epi8(x, step);
      y = _mm512_xor_si512(y, _mm512_shuffle_epi8(mixed[k], x));
    }
    for (int k = 9; k < 16; ++k) {
      x = _mm512_subs_epi8(x, step);
      y = _mm512_xor_si512(y, _mm512_shuffle_epi8(mixed[k], x));
    }
    return y;
  };
  size_t i = 0;
  for (; i + 64 <= n; i += 64) _mm512_storeu_si512(output + i, lookup(_mm512_loadu_si512(input + i)));
  if (i < n) {
    const __mmask64 mask = simd512::tail_mask64(n - i);
    _mm512_mask_storeu_epi8(output + i, mask, lookup(_mm512_maskz_loadu_epi8(mask, input + i)));
  }
}

}  // namespace qdqrt::kernels::avx512skx
