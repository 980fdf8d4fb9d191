// AVX-512 VBMI 256-entry byte table lookup: two vpermi2b (128-entry halves) + a blend on bit 7.
#include "kernels/lut/qlut.h"
#include "kernels/simd_avx512.h"

namespace qdqrt::kernels::avx512vbmi {

void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table) {
  const __m512i t0 = _mm512_loadu_si512(table);
  const __m512i t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128);
  const __m512i t3 = _mm512_loadu_si512(table + 192);
  auto lookup = [&](__m512i x) {
    const __m512i low = _mm512_permutex2var_epi8(t0, x, t1);   // table[x & 127]
    const __m512i high = _mm512_permutex2var_epi8(t2, x, t3);  // table[128 + (x & 127)]
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), low, high);
  };
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m512i x0 = _mm512_loadu_si512(input + i);
    const __m512i x1 = _mm512_loadu_si512(input + i + 64);
    _mm512_storeu_si512(output + i, lookup(x0));
    _mm512_storeu_si512(output + i + 64, lookup(x1));
  }
  for (; i < n; i += 64) {
    const __mmask64 mask = Avx512Vectors::byte_mask(n - i);
    _mm512_mask_storeu_epi8(output + i, mask, lookup(_mm512_maskz_loadu_epi8(mask, input + i)));
  }
}

}  // namespace qdqrt::kernels::avx512vbmi
