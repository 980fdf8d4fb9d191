// AVX-512 resize row kernels: 16 (nearest) or 8 (bilinear, in double) output columns per step,
// the input taps gathered; the tail runs the scalar kernel (same results bit for bit). Channels-last
// bilinear: 8 channels of an output pixel per step.
#include <immintrin.h>

#include "kernels/resize/resize.h"

namespace qdqrt::kernels::avx512skx {

void resize_nearest_row(const float* in, const int32_t* x0, size_t begin, size_t end, float* out) {
  const __m512 zero = _mm512_setzero_ps();
  size_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const __m512i index = _mm512_loadu_si512(x0 + i);
    _mm512_storeu_ps(out + i, _mm512_add_ps(_mm512_i32gather_ps(index, in, 4), zero));
  }
  scalar::resize_nearest_row(in, x0, i, end, out);
}

namespace {

// (0.0 + (wy * wx0) * in[x0]) + (wy * wx1) * in[x1], the second term only where wx1 != 0.
inline __m512d row_sum(const float* in, __m256i i0, __m256i i1, __m512d wy, __m512d wx0, __m512d wx1, __mmask8 second) {
  const __m512d zero = _mm512_setzero_pd();
  const __m512d a0 = _mm512_cvtps_pd(_mm256_i32gather_ps(in, i0, 4));
  const __m512d a1 = _mm512_cvtps_pd(_mm256_i32gather_ps(in, i1, 4));
  const __m512d s = _mm512_add_pd(zero, _mm512_mul_pd(_mm512_mul_pd(wy, wx0), a0));
  return _mm512_mask_add_pd(s, second, s, _mm512_mul_pd(_mm512_mul_pd(wy, wx1), a1));
}

}  // namespace

void resize_linear_row(const ResizeLinearRow& row, size_t begin, size_t end, float* out) {
  const __m512d zero = _mm512_setzero_pd();
  const __m512d wy0 = _mm512_set1_pd(row.wy0);
  const __m512d wy1 = _mm512_set1_pd(row.wy1);
  const bool two_rows = row.wy1 != 0.0;
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.x0 + i));
    const __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.x1 + i));
    const __m512d wx0 = _mm512_loadu_pd(row.wx0 + i);
    const __m512d wx1 = _mm512_loadu_pd(row.wx1 + i);
    const __mmask8 second = _mm512_cmp_pd_mask(wx1, zero, _CMP_NEQ_UQ);
    __m512d sum = _mm512_add_pd(zero, row_sum(row.in0, i0, i1, wy0, wx0, wx1, second));
    if (two_rows) sum = _mm512_add_pd(sum, row_sum(row.in1, i0, i1, wy1, wx0, wx1, second));
    _mm256_storeu_ps(out + i, _mm512_cvtpd_ps(sum));
  }
  scalar::resize_linear_row(row, i, end, out);
}

void resize_linear_nhwc(const ResizeLinearRow& row, size_t channels, size_t begin, size_t end, float* out) {
  const __m512d zero = _mm512_setzero_pd();
  const bool two_rows = row.wy1 != 0.0;
  for (size_t i = begin; i < end; ++i) {
    const float* a = row.in0 + static_cast<size_t>(row.x0[i]) * channels;
    const float* b = row.in0 + static_cast<size_t>(row.x1[i]) * channels;
    const float* d = two_rows ? row.in1 + static_cast<size_t>(row.x0[i]) * channels : nullptr;
    const float* e = two_rows ? row.in1 + static_cast<size_t>(row.x1[i]) * channels : nullptr;
    const __m512d w00 = _mm512_set1_pd(row.wy0 * row.wx0[i]), w01 = _mm512_set1_pd(row.wy0 * row.wx1[i]);
    const __m512d w10 = _mm512_set1_pd(row.wy1 * row.wx0[i]), w11 = _mm512_set1_pd(row.wy1 * row.wx1[i]);
    const bool second_x = row.wx1[i] != 0.0;
    float* y = out + i * channels;
    size_t c = 0;
    for (; c + 8 <= channels; c += 8) {
      __m512d s0 = _mm512_add_pd(zero, _mm512_mul_pd(w00, _mm512_cvtps_pd(_mm256_loadu_ps(a + c))));
      if (second_x) s0 = _mm512_add_pd(s0, _mm512_mul_pd(w01, _mm512_cvtps_pd(_mm256_loadu_ps(b + c))));
      __m512d sum = _mm512_add_pd(zero, s0);
      if (two_rows) {
        __m512d s1 = _mm512_add_pd(zero, _mm512_mul_pd(w10, _mm512_cvtps_pd(_mm256_loadu_ps(d + c))));
        if (second_x) s1 = _mm512_add_pd(s1, _mm512_mul_pd(w11, _mm512_cvtps_pd(_mm256_loadu_ps(e + c))));
        sum = _mm512_add_pd(sum, s1);
      }
      _mm256_storeu_ps(y + c, _mm512_cvtpd_ps(sum));
    }
    scalar::resize_linear_nhwc_channels(row, channels, i, c, out);  // the channel tail
  }
}

}  // namespace qdqrt::kernels::avx512skx
