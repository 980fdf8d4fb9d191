// AVX2 resize row kernels: 8 (nearest) or 4 (bilinear, in double) output columns per step, the
// input taps gathered; the tail runs the scalar kernel (same results bit for bit). Channels-last
// bilinear: 4 channels of an output pixel per step.
#include <immintrin.h>

#include "kernels/resize/resize.h"

namespace qdqrt::kernels::avx2 {

void resize_nearest_row(const float* in, const int32_t* x0, size_t begin, size_t end, float* out) {
  const __m256 zero = _mm256_setzero_ps();
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + i));
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_i32gather_ps(in, index, 4), zero));
  }
  scalar::resize_nearest_row(in, x0, i, end, out);
}

namespace {

// (0.0 + (wy * wx0) * in[x0]) + (wy * wx1) * in[x1], the second term only where wx1 != 0 (masked
// to +0.0 elsewhere: the first sum is never -0.0, so adding +0.0 leaves it unchanged).
inline __m256d row_sum(const float* in, __m128i i0, __m128i i1, __m256d wy, __m256d wx0, __m256d wx1, __m256d second) {
  const __m256d zero = _mm256_setzero_pd();
  const __m256d a0 = _mm256_cvtps_pd(_mm_i32gather_ps(in, i0, 4));
  const __m256d a1 = _mm256_cvtps_pd(_mm_i32gather_ps(in, i1, 4));
  const __m256d s = _mm256_add_pd(zero, _mm256_mul_pd(_mm256_mul_pd(wy, wx0), a0));
  return _mm256_add_pd(s, _mm256_and_pd(second, _mm256_mul_pd(_mm256_mul_pd(wy, wx1), a1)));
}

}  // namespace

void resize_linear_row(const ResizeLinearRow& row, size_t begin, size_t end, float* out) {
  const __m256d zero = _mm256_setzero_pd();
  const __m256d wy0 = _mm256_set1_pd(row.wy0);
  const __m256d wy1 = _mm256_set1_pd(row.wy1);
  const bool two_rows = row.wy1 != 0.0;
  size_t i = begin;
  for (; i + 4 <= end; i += 4) {
    const __m128i i0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row.x0 + i));
    const __m128i i1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row.x1 + i));
    const __m256d wx0 = _mm256_loadu_pd(row.wx0 + i);
    const __m256d wx1 = _mm256_loadu_pd(row.wx1 + i);
    const __m256d second = _mm256_cmp_pd(wx1, zero, _CMP_NEQ_UQ);
    __m256d sum = _mm256_add_pd(zero, row_sum(row.in0, i0, i1, wy0, wx0, wx1, second));
    if (two_rows) sum = _mm256_add_pd(sum, row_sum(row.in1, i0, i1, wy1, wx0, wx1, second));
    _mm_storeu_ps(out + i, _mm256_cvtpd_ps(sum));
  }
  scalar::resize_linear_row(row, i, end, out);
}

void resize_linear_nhwc(const ResizeLinearRow& row, size_t channels, size_t begin, size_t end, float* out) {
  const __m256d zero = _mm256_setzero_pd();
  const bool two_rows = row.wy1 != 0.0;
  for (size_t i = begin; i < end; ++i) {
    const float* a = row.in0 + static_cast<size_t>(row.x0[i]) * channels;
    const float* b = row.in0 + static_cast<size_t>(row.x1[i]) * channels;
    const float* d = two_rows ? row.in1 + static_cast<size_t>(row.x0[i]) * channels : nullptr;
    const float* e = two_rows ? row.in1 + static_cast<size_t>(row.x1[i]) * channels : nullptr;
    const double weight0 = row.wx0[i], weight1 = row.wx1[i];
    const __m256d w00 = _mm256_set1_pd(row.wy0 * weight0), w01 = _mm256_set1_pd(row.wy0 * weight1);
    const __m256d w10 = _mm256_set1_pd(row.wy1 * weight0), w11 = _mm256_set1_pd(row.wy1 * weight1);
    const bool second_x = weight1 != 0.0;
    float* y = out + i * channels;
    size_t c = 0;
    for (; c + 4 <= channels; c += 4) {
      __m256d s0 = _mm256_add_pd(zero, _mm256_mul_pd(w00, _mm256_cvtps_pd(_mm_loadu_ps(a + c))));
      if (second_x) s0 = _mm256_add_pd(s0, _mm256_mul_pd(w01, _mm256_cvtps_pd(_mm_loadu_ps(b + c))));
      __m256d sum = _mm256_add_pd(zero, s0);
      if (two_rows) {
        __m256d s1 = _mm256_add_pd(zero, _mm256_mul_pd(w10, _mm256_cvtps_pd(_mm_loadu_ps(d + c))));
        if (second_x) s1 = _mm256_add_pd(s1, _mm256_mul_pd(w11, _mm256_cvtps_pd(_mm_loadu_ps(e + c))));
        sum = _mm256_add_pd(sum, s1);
      }
      _mm_storeu_ps(y + c, _mm256_cvtpd_ps(sum));
    }
    scalar::resize_linear_nhwc_channels(row, channels, i, c, out);
  }
}

}  // namespace qdqrt::kernels::avx2
