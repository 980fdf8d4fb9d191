// AVX-VNNI GEMM (256-bit vpdpbusd): 6 rows x 16 columns (2 ymm) per register tile.
#include <immintrin.h>

#include "kernels/gemm/qgemm_tile_avx2_inl.h"

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

  // Four u8 x s8 products per lane (256-bit vpdpbusd).
  static __m256i accumulate(__m256i acc, __m256i a, __m256i b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    tile_6x16<MR, kKGroup, AvxVnniTraits>(a, a_stride, b, k_groups, t);
  }
};

}  // namespace

void gemm_run_avxvnni(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                      const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<AvxVnniTraits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
