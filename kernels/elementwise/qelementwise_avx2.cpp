// AVX2 QAdd/QMul: 8 lanes per step; tails run the same vector code on a padded stack block.
#include <cstring>

#include "kernels/elementwise/qelementwise.h"
#include "kernels/simd_avx2.h"

namespace qdqrt::kernels::avx2 {

using namespace simd256;

namespace {

struct Constants {
  __m256 a_multiplier, b_multiplier, lo, hi;
  __m256i a_zero_point, b_zero_point, output_zero_point;
  explicit Constants(const QBinaryParams& p)
      : a_multiplier(_mm256_set1_ps(p.a_multiplier)),
        b_multiplier(_mm256_set1_ps(p.b_multiplier)),
        lo(_mm256_set1_ps(p.output_min)),
        hi(_mm256_set1_ps(p.output_max)),
        a_zero_point(_mm256_set1_epi32(p.a_zero_point)),
        b_zero_point(_mm256_set1_epi32(p.b_zero_point)),
        output_zero_point(_mm256_set1_epi32(p.output_zero_point)) {}
};

inline __m256 centered(__m256i q, __m256i zero_point) { return _mm256_cvtepi32_ps(_mm256_sub_epi32(q, zero_point)); }

template <class T>
inline __m256i add8(const Constants& k, const T* a, __m256 b_term) {
  const __m256 a_term = _mm256_mul_ps(centered(load8_epi32(a), k.a_zero_point), k.a_multiplier);
  return requantize8(_mm256_add_ps(a_term, b_term), k.lo, k.hi, k.output_zero_point);
}
template <class T>
inline __m256 b_term8(const Constants& k, const T* b) {
  return _mm256_mul_ps(centered(load8_epi32(b), k.b_zero_point), k.b_multiplier);
}
template <class T>
inline __m256i mul8(const Constants& k, const T* a, __m256 b_centered) {
  const __m256 product = _mm256_mul_ps(centered(load8_epi32(a), k.a_zero_point), b_centered);
  return requantize8(_mm256_mul_ps(product, k.a_multiplier), k.lo, k.hi, k.output_zero_point);
}

// Runs block(a8, b8, out8) on full 8-element blocks and once on a zero-padded tail.
template <class T, class Block>
inline void for_blocks(size_t n, const T* a, const T* b, T* out, Block block) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) block(a + i, b ? b + i : nullptr, out + i);
  if (i < n) {
    T a_tail[8] = {}, b_tail[8] = {}, out_tail[8];
    std::memcpy(a_tail, a + i, n - i);
    if (b) std::memcpy(b_tail, b + i, n - i);
    block(a_tail, b_tail, out_tail);
    std::memcpy(out + i, out_tail, n - i);
  }
}

}  // namespace

template <class T>
void qadd(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  for_blocks(n, a, b, out, [&](const T* a8, const T* b8, T* out8) { store8(out8, add8(k, a8, b_term8(k, b8))); });
}

template <class T>
void qadd_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  const __m256 b_term =
      _mm256_set1_ps(static_cast<float>(static_cast<int32_t>(b) - params.b_zero_point) * params.b_multiplier);
  for_blocks<T>(n, a, nullptr, out, [&](const T* a8, const T*, T* out8) { store8(out8, add8(k, a8, b_term)); });
}

template <class T>
void qmul(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  for_blocks(n, a, b, out, [&](const T* a8, const T* b8, T* out8) {
    store8(out8, mul8(k, a8, centered(load8_epi32(b8), k.b_zero_point)));
  });
}

template <class T>
void qmul_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  const __m256 b_centered = _mm256_set1_ps(static_cast<float>(static_cast<int32_t>(b) - params.b_zero_point));
  for_blocks<T>(n, a, nullptr, out, [&](const T* a8, const T*, T* out8) { store8(out8, mul8(k, a8, b_centered)); });
}

#define QDQRT_INSTANTIATE(T)                                                       \
  template void qadd<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qadd_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);     \
  template void qmul<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qmul_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace qdqrt::kernels::avx2
