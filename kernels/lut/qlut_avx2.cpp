// AVX2 256-entry byte table lookup with 16 vpshufb per 32 bytes.
//
// vpshufb returns t[idx & 15] when idx's bit 7 is clear and 0 otherwise. Walking the index down by
// 16 per step (wrapping for steps 1..8, signed-saturating for steps 9..15) makes step k contribute
// for high nibbles j in S(j) = {max(0, j-7) .. j} (j < 8: {0..j}). XOR-ing all steps therefore needs
// pre-mixed tables u[k] with  table_j = XOR_{k in S(j)} u[k], i.e.
//   u[j] = t[j] ^ t[j-1]             (1 <= j <= 7, u[0] = t[0])
//   u[j] = t[j] ^ t[j-1] ^ u[j-8]    (8 <= j <= 15)
#include <cstring>

#include "kernels/lut/qlut.h"
#include "kernels/simd_avx2.h"

namespace qdqrt::kernels::avx2 {

namespace {

inline void mix_tables(const uint8_t* table, __m128i mixed[16]) {
  __m128i t[16];
  for (int j = 0; j < 16; ++j) t[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * j));
  mixed[0] = t[0];
  for (int j = 1; j < 8; ++j) mixed[j] = _mm_xor_si128(t[j], t[j - 1]);
  for (int j = 8; j < 16; ++j) mixed[j] = _mm_xor_si128(_mm_xor_si128(t[j], t[j - 1]), mixed[j - 8]);
}

}  // namespace

void lut(size_t n, const uint8_t* input, uint8_t* output, const uint8_t* table) {
  __m128i mixed128[16];
  mix_tables(table, mixed128);
  __m256i mixed[16];
  for (int j = 0; j < 16; ++j) mixed[j] = _mm256_broadcastsi128_si256(mixed128[j]);
  const __m256i step = _mm256_set1_epi8(16);
  auto lookup = [&](__m256i x) {
    __m256i y = _mm256_shuffle_epi8(mixed[0], x);
    for (int k = 1; k <= 8; ++k) {
      x = _mm256_sub_epi8(x, step);
      y = _mm256_xor_si256(y, _mm256_shuffle_epi8(mixed[k], x));
    }
    for (int k = 9; k < 16; ++k) {
      x = _mm256_subs_epi8(x, step);
      y = _mm256_xor_si256(y, _mm256_shuffle_epi8(mixed[k], x));
    }
    return y;
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(input + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(output + i), lookup(x));
  }
  if (i < n) {
    alignas(32) uint8_t block[32] = {};
    std::memcpy(block, input + i, n - i);
    _mm256_store_si256(reinterpret_cast<__m256i*>(block), lookup(_mm256_load_si256(reinterpret_cast<const __m256i*>(block))));
    std::memcpy(output + i, block, n - i);
  }
}

}  // namespace qdqrt::kernels::avx2
