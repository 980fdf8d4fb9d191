// AVX-512 VNNI GEMM: 6 rows x 64 columns (4 zmm) per register tile, 24 int32 accumulators,
// vpdpbusd over k in groups of 4 (u8 activations x s8 weights).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/qepilogue_avx512_inl.h"

namespace qdqrt::kernels::internal {
namespace {

struct Avx512VnniTraits {
  static constexpr int kMr = 6;
  static constexpr int kNr = 64;
  static constexpr int kKGroup = 4;
  using PanelElement = uint8_t;

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    if constexpr (MR == 1) {
      tile_single_row(a, b, k_groups, t);
      return;
    } else {
      __m512i acc[MR][4];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_si512();
      }
      for (int g = 0; g < k_groups; ++g) {
        const __m512i b0 = _mm512_loadu_si512(b);
        const __m512i b1 = _mm512_loadu_si512(b + 64);
        const __m512i b2 = _mm512_loadu_si512(b + 128);
        const __m512i b3 = _mm512_loadu_si512(b + 192);
        b += 256;
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          int32_t word;
          std::memcpy(&word, a + r * a_stride + 4 * g, 4);
          const __m512i va = _mm512_set1_epi32(word);
          acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], va, b0);
          acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], va, b1);
          acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], va, b2);
          acc[r][3] = _mm512_dpbusd_epi32(acc[r][3], va, b3);
        }
      }
      const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
      const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) store_vector(acc[r][j], 16 * j, t.n_valid - 16 * j, t, r, clamp_min, clamp_max);
      }
    }
  }

  // M = 1 (GEMV): bound by streaming the weights, so two k-groups in flight (8 independent
  // accumulators) and a prefetch a few cache lines ahead.
  static void tile_single_row(const uint8_t* a, const int8_t* b, int k_groups, const TileArgs& t) {
    __m512i acc0[4], acc1[4];
    for (int j = 0; j < 4; ++j) acc0[j] = acc1[j] = _mm512_setzero_si512();
    int g = 0;
    for (; g + 2 <= k_groups; g += 2) {
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1024, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1088, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1152, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1216, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1280, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1344, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1408, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b) + 1472, _MM_HINT_T0);
      int32_t w0, w1;
      std::memcpy(&w0, a + 4 * g, 4);
      std::memcpy(&w1, a + 4 * g + 4, 4);
      const __m512i va0 = _mm512_set1_epi32(w0);
      const __m512i va1 = _mm512_set1_epi32(w1);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc0[j] = _mm512_dpbusd_epi32(acc0[j], va0, _mm512_loadu_si512(b + 64 * j));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc1[j] = _mm512_dpbusd_epi32(acc1[j], va1, _mm512_loadu_si512(b + 256 + 64 * j));
      b += 512;
    }
    if (g < k_groups) {
      int32_t w0;
      std::memcpy(&w0, a + 4 * g, 4);
      const __m512i va0 = _mm512_set1_epi32(w0);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc0[j] = _mm512_dpbusd_epi32(acc0[j], va0, _mm512_loadu_si512(b + 64 * j));
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      store_vector(_mm512_add_epi32(acc0[j], acc1[j]), 16 * j, t.n_valid - 16 * j, t, 0, clamp_min, clamp_max);
    }
  }
};

}  // namespace

void gemm_run_avx512vnni(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                         const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_driver<Avx512VnniTraits>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
