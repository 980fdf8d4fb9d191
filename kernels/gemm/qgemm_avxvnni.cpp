// AVX-VNNI GEMM (256-bit vpdpbusd): 6 rows x 16 columns (2 ymm) per register tile.
#include <immintrin.h>

#include "kernels/gemm/qgemm_epilogue_avx2_inl.h"

namespace qdqrt::kernels::internal {
namespace {

struct AvxVnniTraits {
  static constexpr int kMr = 6;
  static constexpr int kNr = 16;
  static constexpr int kKGroup = 4;
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    const __m256i f = _mm256_set1_epi8(static_cast<char>(flip));
    int i = 0;
    for (; i + 32 <= count; i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_xor_si256(v, f));
    }
    for (; i < count; ++i) dst[i] = src[i] ^ flip;
  }
  using PanelElement = uint8_t;

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    __m256i acc[MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int g = 0; g < k_groups; ++g) {
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
      b += 64;
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        int32_t word;
        std::memcpy(&word, a + r * a_stride + 4 * g, 4);
        const __m256i va = _mm256_set1_epi32(word);
        acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], va, b0);
        acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], va, b1);
      }
    }
    const __m256 clamp_min = _mm256_set1_ps(t.epilogue->clamp_min);
    const __m256 clamp_max = _mm256_set1_ps(t.epilogue->clamp_max);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      store_vector8(acc[r][0], 0, t.n_valid, t, r, clamp_min, clamp_max);
      store_vector8(acc[r][1], 8, t.n_valid - 8, t, r, clamp_min, clamp_max);
    }
  }
};

}  // namespace

void gemm_run_avxvnni(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                      const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<AvxVnniTraits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
