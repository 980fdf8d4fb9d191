// AVX2 GEMM without VNNI: activations widened to int16 in the panel, weights packed as int16
// pairs, vpmaddwd into int32. Exact (vpmaddubsw would saturate u8*s8 pair sums at 16 bits).
// 6 rows x 16 columns (2 ymm) per register tile.
#include <immintrin.h>

#include "kernels/gemm/qgemm_tile_avx2_inl.h"

namespace qdqrt::kernels::internal {
namespace {

struct Avx2Traits {
  static constexpr int kMr = 6;
  static constexpr int kNr = 16;
  static constexpr int kKGroup = 2;
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    PortableCopy::copy_flip(dst, src, count, flip);
  }
  using PanelElement = int16_t;

  // Two int16 pairs per lane: vpmaddwd, then add into the int32 accumulators.
  static __m256i accumulate(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }

  template <int MR>
  static void tile(const int16_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    tile_6x16<MR, kKGroup, Avx2Traits>(a, a_stride, b, k_groups, t);
  }
};

}  // namespace

void gemm_run_avx2(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                   const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<Avx2Traits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
