// The fp32 row-dot kernel (kernels/fp32/fp32_dot_rows.h) over the vector operations of
// fp32_sgemm_vector_ops.h, compiled per ISA: fp32_dot_rows_avx512skx.cpp and fp32_dot_rows_avx2.cpp
// define QDQRT_SGEMM_AVX512 or QDQRT_SGEMM_AVX2 and QDQRT_SGEMM_NAMESPACE, then include this file.
#include "kernels/fp32/fp32_dot_rows.h"
#include "kernels/fp32/fp32_sgemm_vector_ops.h"

namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE {
namespace {

// Lanes l and l + L/2 added, halving down to lane 0 (dot_rows_reference's tree).
inline float halving_sum(V v) {
#if defined(QDQRT_SGEMM_AVX512)
  const __m256 eight = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
#else
  const __m256 eight = v;
#endif
  const __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
  const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
  return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
}

}  // namespace

void dot_rows_ukernel(const internal::DotRowsArgs& args) {
  const int64_t k = args.k, full = k - k % kLanes;
  const PartMask tail = part_mask(static_cast<int>(k % kLanes == 0 ? kLanes : k % kLanes));
  const float* b = args.b;
  for (int64_t r = 0; r < args.rows; ++r) {
    const float* a = args.a + r * args.a_row_stride;
    V acc = splat(0.0f);
    for (int64_t c = 0; c < full; c += kLanes) acc = fmadd(loadu(a + c), loadu(b + c), acc);
    if (full < k) acc = fmadd(load_masked(a + full, tail), load_masked(b + full, tail), acc);
    args.sums[r] = halving_sum(acc);
  }
}

}  // namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE
