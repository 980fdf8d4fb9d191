// The 6 x 16 (2 ymm) register tile shared by the AVX2 and AVX-VNNI GEMM files (both compiled with
// AVX2+FMA). They differ only in the step over one k group, Step::accumulate(acc, a, b): 2 int16
// pairs (vpmaddwd + vpaddd) or 4 bytes (vpdpbusd). Included inside an anonymous namespace.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/gemm/qgemm_epilogue_avx2_inl.h"

namespace qdqrt::kernels::internal {
namespace {

// MR rows of the panel (kKGroup elements, 4 bytes, per k group) times 16 packed columns.
template <int MR, int kKGroup, class Step, class PanelElement>
inline void tile_6x16(const PanelElement* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
  __m256i acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int g = 0; g < k_groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32));
    b += 64;
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t group;
      std::memcpy(&group, a + r * a_stride + kKGroup * g, 4);
      const __m256i va = _mm256_set1_epi32(group);
      acc[r][0] = Step::accumulate(acc[r][0], va, b0);
      acc[r][1] = Step::accumulate(acc[r][1], va, b1);
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

}  // namespace
}  // namespace qdqrt::kernels::internal
