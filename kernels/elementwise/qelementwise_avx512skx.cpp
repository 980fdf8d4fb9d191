// AVX-512 QAdd/QMul: 16 lanes per step (int32 -> fp32), masked tails.
#include "kernels/elementwise/qelementwise.h"
#include "kernels/simd_avx512.h"

namespace qdqrt::kernels::avx512skx {

using namespace simd512;

namespace {

struct Constants {
  __m512 a_multiplier, b_multiplier, lo, hi;
  __m512i a_zero_point, b_zero_point, output_zero_point;
  explicit Constants(const QBinaryParams& p)
      : a_multiplier(_mm512_set1_ps(p.a_multiplier)),
        b_multiplier(_mm512_set1_ps(p.b_multiplier)),
        lo(_mm512_set1_ps(p.output_min)),
        hi(_mm512_set1_ps(p.output_max)),
        a_zero_point(_mm512_set1_epi32(p.a_zero_point)),
        b_zero_point(_mm512_set1_epi32(p.b_zero_point)),
        output_zero_point(_mm512_set1_epi32(p.output_zero_point)) {}
};

inline __m512 centered(__m512i q, __m512i zero_point) { return _mm512_cvtepi32_ps(_mm512_sub_epi32(q, zero_point)); }

// The a-side of add: float(a - a_zp) * a_multiplier, then + b_term, requantized.
inline __m512i add16(const Constants& k, __m512i a, __m512 b_term) {
  const __m512 a_term = _mm512_mul_ps(centered(a, k.a_zero_point), k.a_multiplier);
  return requantize16(_mm512_add_ps(a_term, b_term), k.lo, k.hi, k.output_zero_point);
}
inline __m512i mul16(const Constants& k, __m512i a, __m512 b_centered) {
  const __m512 product = _mm512_mul_ps(centered(a, k.a_zero_point), b_centered);  // exact integer product
  return requantize16(_mm512_mul_ps(product, k.a_multiplier), k.lo, k.hi, k.output_zero_point);
}

}  // namespace

template <class T>
void qadd(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 b_term = _mm512_mul_ps(centered(load16_epi32(b + i), k.b_zero_point), k.b_multiplier);
    store16(out + i, add16(k, load16_epi32(a + i), b_term));
  }
  if (i < n) {
    const __mmask16 mask = tail_mask16(n - i);
    const __m512 b_term = _mm512_mul_ps(centered(maskz_load16_epi32(mask, b + i), k.b_zero_point), k.b_multiplier);
    mask_store16(out + i, mask, add16(k, maskz_load16_epi32(mask, a + i), b_term));
  }
}

template <class T>
void qadd_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  const __m512 b_term =
      _mm512_set1_ps(static_cast<float>(static_cast<int32_t>(b) - params.b_zero_point) * params.b_multiplier);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) store16(out + i, add16(k, load16_epi32(a + i), b_term));
  if (i < n) {
    const __mmask16 mask = tail_mask16(n - i);
    mask_store16(out + i, mask, add16(k, maskz_load16_epi32(mask, a + i), b_term));
  }
}

template <class T>
void qmul(size_t n, const T* a, const T* b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    store16(out + i, mul16(k, load16_epi32(a + i), centered(load16_epi32(b + i), k.b_zero_point)));
  }
  if (i < n) {
    const __mmask16 mask = tail_mask16(n - i);
    const __m512 b_centered = centered(maskz_load16_epi32(mask, b + i), k.b_zero_point);
    mask_store16(out + i, mask, mul16(k, maskz_load16_epi32(mask, a + i), b_centered));
  }
}

template <class T>
void qmul_scalar(size_t n, const T* a, T b, T* out, const QBinaryParams& params) {
  const Constants k(params);
  const __m512 b_centered = _mm512_set1_ps(static_cast<float>(static_cast<int32_t>(b) - params.b_zero_point));
  size_t i = 0;
  for (; i + 16 <= n; i += 16) store16(out + i, mul16(k, load16_epi32(a + i), b_centered));
  if (i < n) {
    const __mmask16 mask = tail_mask16(n - i);
    mask_store16(out + i, mask, mul16(k, maskz_load16_epi32(mask, a + i), b_centered));
  }
}

#define QDQRT_INSTANTIATE(T)                                                       \
  template void qadd<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qadd_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);     \
  template void qmul<T>(size_t, const T*, const T*, T*, const QBinaryParams&);     \
  template void qmul_scalar<T>(size_t, const T*, T, T*, const QBinaryParams&);
QDQRT_INSTANTIATE(int8_t)
QDQRT_INSTANTIATE(uint8_t)
#undef QDQRT_INSTANTIATE

}  // namespace qdqrt::kernels::avx512skx
