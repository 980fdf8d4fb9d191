// AVX512_BF16 GEMM microkernel, 14 x 32: 28 zmm accumulators, the panel's two vectors of 16
// column pairs per k pair, each row's pair broadcast from memory (vdpbf16ps's m32bcst form).
// GCC 12's _mm512_max_ps/_mm512_min_ps pass an undefined vector as the unused mask operand, which
// -W(maybe-)uninitialized reports at every inlined call.
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include "kernels/bf16/bf16_gemm.h"

namespace qdqrt::kernels::internal::avx512bf16 {

namespace {

inline __m512 dot(__m512 accumulator, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(accumulator, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

template <int MR>
void tile(const Bf16UkernelArgs& args) {
  __m512 accumulators[MR][2];
  for (int r = 0; r < MR; ++r) accumulators[r][0] = accumulators[r][1] = _mm512_setzero_ps();
  const uint32_t* a = args.a;
  const int64_t a_stride = args.a_row_pairs;
  const uint16_t* w = args.w;
  for (int64_t pair = 0; pair < args.k_pairs; ++pair, w += kBf16GemmNr * 2) {
    const __m512i w0 = _mm512_load_si512(w);
    const __m512i w1 = _mm512_load_si512(w + kBf16GemmNr);
#pragma GCC unroll 14
    for (int r = 0; r < MR; ++r) {
      const __m512i broadcast = _mm512_set1_epi32(static_cast<int>(a[r * a_stride + pair]));
      accumulators[r][0] = dot(accumulators[r][0], broadcast, w0);
      accumulators[r][1] = dot(accumulators[r][1], broadcast, w1);
    }
  }
  const __mmask16 mask0 = args.nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << args.nc) - 1);
  const __mmask16 mask1 = args.nc <= 16 ? __mmask16(0) : args.nc >= 32 ? __mmask16(0xFFFF) : __mmask16((1u << (args.nc - 16)) - 1);
  const __m512 bias0 = _mm512_loadu_ps(args.bias), bias1 = _mm512_loadu_ps(args.bias + 16);
  const __m512 low = _mm512_set1_ps(args.min), high = _mm512_set1_ps(args.max);
  for (int r = 0; r < MR; ++r) {
    __m512 v0 = _mm512_add_ps(accumulators[r][0], bias0);
    __m512 v1 = _mm512_add_ps(accumulators[r][1], bias1);
    if (args.residual != nullptr) {
      const float* residual = args.residual + r * args.residual_row_stride;
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(mask0, residual));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(mask1, residual + 16));
    }
    v0 = _mm512_min_ps(_mm512_max_ps(v0, low), high);
    v1 = _mm512_min_ps(_mm512_max_ps(v1, low), high);
    float* c = args.c + r * args.c_row_stride;
    _mm512_mask_storeu_ps(c, mask0, v0);
    _mm512_mask_storeu_ps(c + 16, mask1, v1);
  }
}

}  // namespace

void bf16_convert(const float* input, int64_t count, uint16_t* output) {
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512 low = _mm512_loadu_ps(input + i), high = _mm512_loadu_ps(input + i + 16);
    __m512bh converted = _mm512_cvtne2ps_pbh(high, low);
    _mm512_storeu_si512(output + i, reinterpret_cast<__m512i&>(converted));
  }
  if (i < count) {
    const int rest = static_cast<int>(count - i);
    const __mmask16 mask0 = rest >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rest) - 1);
    const __mmask16 mask1 = rest <= 16 ? __mmask16(0) : __mmask16((1u << (rest - 16)) - 1);
    const __m512 low = _mm512_maskz_loadu_ps(mask0, input + i), high = _mm512_maskz_loadu_ps(mask1, input + i + 16);
    __m512bh converted = _mm512_cvtne2ps_pbh(high, low);
    _mm512_mask_storeu_epi16(output + i, (__mmask32(mask1) << 16) | mask0, reinterpret_cast<__m512i&>(converted));
  }
}

void bf16_gemm_ukernel(const Bf16UkernelArgs& args) {
  switch (args.mr) {
    case 1: tile<1>(args); break;
    case 2: tile<2>(args); break;
    case 3: tile<3>(args); break;
    case 4: tile<4>(args); break;
    case 5: tile<5>(args); break;
    case 6: tile<6>(args); break;
    case 7: tile<7>(args); break;
    case 8: tile<8>(args); break;
    case 9: tile<9>(args); break;
    case 10: tile<10>(args); break;
    case 11: tile<11>(args); break;
    case 12: tile<12>(args); break;
    case 13: tile<13>(args); break;
    default: tile<kBf16GemmMr>(args); break;
  }
}

}  // namespace qdqrt::kernels::internal::avx512bf16
