// The fp32 resize row kernels (kernels/resize/resize.h), written once over a small set of vector
// operations and compiled per ISA: resize_avx512skx.cpp (16 nearest / 8 bilinear columns per
// step) and resize_avx2.cpp (8 / 4) define QDQRT_RESIZE_AVX512 or QDQRT_RESIZE_AVX2 and
// QDQRT_RESIZE_NAMESPACE, then include this file. Bilinear sums run in double (as the reference
// does), half as many lanes as the float vector; the tails run the scalar kernel (same bits).
#if !defined(QDQRT_RESIZE_NAMESPACE) || (!defined(QDQRT_RESIZE_AVX512) && !defined(QDQRT_RESIZE_AVX2))
#error "define QDQRT_RESIZE_NAMESPACE and QDQRT_RESIZE_AVX512 or QDQRT_RESIZE_AVX2 before including this file"
#endif

#include <immintrin.h>

#include "kernels/resize/resize.h"

namespace qdqrt::kernels::QDQRT_RESIZE_NAMESPACE {
namespace {

#if defined(QDQRT_RESIZE_AVX512)
using Floats = __m512;        // nearest: kFloatLanes columns
using Doubles = __m512d;      // bilinear: kDoubleLanes columns (or channels)
using HalfFloats = __m256;    // kDoubleLanes floats
using HalfIndices = __m256i;  // kDoubleLanes int32 indices
using SecondTap = __mmask8;   // the lanes whose second horizontal tap has a weight
constexpr size_t kFloatLanes = 16;
inline Floats gather_floats(const float* in, const int32_t* indices) {
  return _mm512_i32gather_ps(_mm512_loadu_si512(indices), in, 4);
}
inline Floats add_floats(Floats a, Floats b) { return _mm512_add_ps(a, b); }
inline Floats zero_floats() { return _mm512_setzero_ps(); }
inline void store_floats(float* p, Floats v) { _mm512_storeu_ps(p, v); }
inline HalfIndices load_indices(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline HalfFloats gather_half(const float* in, HalfIndices indices) { return _mm256_i32gather_ps(in, indices, 4); }
inline HalfFloats load_half(const float* p) { return _mm256_loadu_ps(p); }
inline void store_half(float* p, HalfFloats v) { _mm256_storeu_ps(p, v); }
inline Doubles widen(HalfFloats v) { return _mm512_cvtps_pd(v); }
inline HalfFloats narrow(Doubles v) { return _mm512_cvtpd_ps(v); }
inline Doubles zero_doubles() { return _mm512_setzero_pd(); }
inline Doubles splat(double x) { return _mm512_set1_pd(x); }
inline Doubles load_doubles(const double* p) { return _mm512_loadu_pd(p); }
inline Doubles add(Doubles a, Doubles b) { return _mm512_add_pd(a, b); }
inline Doubles mul(Doubles a, Doubles b) { return _mm512_mul_pd(a, b); }
inline SecondTap nonzero(Doubles v) { return _mm512_cmp_pd_mask(v, zero_doubles(), _CMP_NEQ_UQ); }
// s + t in the lanes of `second`, s elsewhere.
inline Doubles add_where(Doubles s, SecondTap second, Doubles t) { return _mm512_mask_add_pd(s, second, s, t); }
#else
using Floats = __m256;
using Doubles = __m256d;
using HalfFloats = __m128;
using HalfIndices = __m128i;
using SecondTap = __m256d;  // all-ones lanes where the second tap has a weight
constexpr size_t kFloatLanes = 8;
inline Floats gather_floats(const float* in, const int32_t* indices) {
  return _mm256_i32gather_ps(in, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(indices)), 4);
}
inline Floats add_floats(Floats a, Floats b) { return _mm256_add_ps(a, b); }
inline Floats zero_floats() { return _mm256_setzero_ps(); }
inline void store_floats(float* p, Floats v) { _mm256_storeu_ps(p, v); }
inline HalfIndices load_indices(const int32_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline HalfFloats gather_half(const float* in, HalfIndices indices) { return _mm_i32gather_ps(in, indices, 4); }
inline HalfFloats load_half(const float* p) { return _mm_loadu_ps(p); }
inline void store_half(float* p, HalfFloats v) { _mm_storeu_ps(p, v); }
inline Doubles widen(HalfFloats v) { return _mm256_cvtps_pd(v); }
inline HalfFloats narrow(Doubles v) { return _mm256_cvtpd_ps(v); }
inline Doubles zero_doubles() { return _mm256_setzero_pd(); }
inline Doubles splat(double x) { return _mm256_set1_pd(x); }
inline Doubles load_doubles(const double* p) { return _mm256_loadu_pd(p); }
inline Doubles add(Doubles a, Doubles b) { return _mm256_add_pd(a, b); }
inline Doubles mul(Doubles a, Doubles b) { return _mm256_mul_pd(a, b); }
inline SecondTap nonzero(Doubles v) { return _mm256_cmp_pd(v, zero_doubles(), _CMP_NEQ_UQ); }
// s + t in the lanes of `second`, s + 0.0 elsewhere (s is never -0.0 here, so that is s).
inline Doubles add_where(Doubles s, SecondTap second, Doubles t) { return add(s, _mm256_and_pd(second, t)); }
#endif
constexpr size_t kDoubleLanes = kFloatLanes / 2;

// (0.0 + (wy * wx0) * in[x0]) + (wy * wx1) * in[x1], the second term only where wx1 != 0.
inline Doubles row_sum(const float* in, HalfIndices i0, HalfIndices i1, Doubles wy, Doubles wx0, Doubles wx1,
                       SecondTap second) {
  const Doubles s = add(zero_doubles(), mul(mul(wy, wx0), widen(gather_half(in, i0))));
  return add_where(s, second, mul(mul(wy, wx1), widen(gather_half(in, i1))));
}

}  // namespace

void resize_nearest_row(const float* in, const int32_t* x0, size_t begin, size_t end, float* out) {
  const Floats zero = zero_floats();
  size_t i = begin;
  for (; i + kFloatLanes <= end; i += kFloatLanes) store_floats(out + i, add_floats(gather_floats(in, x0 + i), zero));
  scalar::resize_nearest_row(in, x0, i, end, out);
}

void resize_linear_row(const ResizeLinearRow& row, size_t begin, size_t end, float* out) {
  const Doubles zero = zero_doubles();
  const Doubles wy0 = splat(row.wy0);
  const Doubles wy1 = splat(row.wy1);
  const bool two_rows = row.wy1 != 0.0;
  size_t i = begin;
  for (; i + kDoubleLanes <= end; i += kDoubleLanes) {
    const HalfIndices i0 = load_indices(row.x0 + i);
    const HalfIndices i1 = load_indices(row.x1 + i);
    const Doubles wx0 = load_doubles(row.wx0 + i);
    const Doubles wx1 = load_doubles(row.wx1 + i);
    const SecondTap second = nonzero(wx1);
    Doubles sum = add(zero, row_sum(row.in0, i0, i1, wy0, wx0, wx1, second));
    if (two_rows) sum = add(sum, row_sum(row.in1, i0, i1, wy1, wx0, wx1, second));
    store_half(out + i, narrow(sum));
  }
  scalar::resize_linear_row(row, i, end, out);
}

void resize_linear_nhwc(const ResizeLinearRow& row, size_t channels, size_t begin, size_t end, float* out) {
  const Doubles zero = zero_doubles();
  const bool two_rows = row.wy1 != 0.0;
  for (size_t i = begin; i < end; ++i) {
    const float* a = row.in0 + static_cast<size_t>(row.x0[i]) * channels;
    const float* b = row.in0 + static_cast<size_t>(row.x1[i]) * channels;
    const float* d = two_rows ? row.in1 + static_cast<size_t>(row.x0[i]) * channels : nullptr;
    const float* e = two_rows ? row.in1 + static_cast<size_t>(row.x1[i]) * channels : nullptr;
    const double weight0 = row.wx0[i], weight1 = row.wx1[i];
    const Doubles w00 = splat(row.wy0 * weight0), w01 = splat(row.wy0 * weight1);
    const Doubles w10 = splat(row.wy1 * weight0), w11 = splat(row.wy1 * weight1);
    const bool second_x = weight1 != 0.0;
    float* y = out + i * channels;
    size_t c = 0;
    for (; c + kDoubleLanes <= channels; c += kDoubleLanes) {
      Doubles s0 = add(zero, mul(w00, widen(load_half(a + c))));
      if (second_x) s0 = add(s0, mul(w01, widen(load_half(b + c))));
      Doubles sum = add(zero, s0);
      if (two_rows) {
        Doubles s1 = add(zero, mul(w10, widen(load_half(d + c))));
        if (second_x) s1 = add(s1, mul(w11, widen(load_half(e + c))));
        sum = add(sum, s1);
      }
      store_half(y + c, narrow(sum));
    }
    scalar::resize_linear_nhwc_channels(row, channels, i, c, out);  // the channel tail
  }
}

}  // namespace qdqrt::kernels::QDQRT_RESIZE_NAMESPACE
