// The BF16 GEMM reference: plain C++ that computes each output as vdpbf16ps and vcvtne2ps2bf16 do
// (kernels/bf16/bf16_gemm.h), bit for bit. Products of two bf16 values fit fp32's 24-bit
// significand, so each step is one correctly rounded fused multiply-add (std::fma).
#include <cmath>
#include <cstring>

#include "kernels/bf16/bf16_gemm.h"

namespace qdqrt::kernels::internal::scalar {

namespace {

// Denormals read as zero (the instruction's inputs), results flushed to a zero of their sign.
float flush_denormal(float value) { return std::fpclassify(value) == FP_SUBNORMAL ? std::copysign(0.0f, value) : value; }

float dot_step(float accumulator, uint16_t a, uint16_t w) {
  return flush_denormal(std::fma(flush_denormal(float_from_bf16(a)), flush_denormal(float_from_bf16(w)),
                                 flush_denormal(accumulator)));
}

// _mm512_max_ps / _mm512_min_ps: the second operand when either is NaN.
float vector_max(float value, float bound) { return value > bound ? value : bound; }
float vector_min(float value, float bound) { return value < bound ? value : bound; }

}  // namespace

void bf16_convert(const float* input, int64_t count, uint16_t* output) {
  for (int64_t i = 0; i < count; ++i) output[i] = bf16_from_float(input[i]);
}

void bf16_gemm_ukernel(const Bf16UkernelArgs& args) {
  for (int r = 0; r < args.mr; ++r) {
    const uint32_t* a_row = args.a + r * args.a_row_pairs;
    for (int j = 0; j < args.nc; ++j) {
      float accumulator = 0.0f;
      for (int64_t pair = 0; pair < args.k_pairs; ++pair) {
        const uint32_t a = a_row[pair];
        const uint16_t* w = args.w + (pair * kBf16GemmNr + j) * 2;
        // The pair's odd element first, then the even one (Intel SDM, VDPBF16PS).
        accumulator = dot_step(accumulator, static_cast<uint16_t>(a >> 16), w[1]);
        accumulator = dot_step(accumulator, static_cast<uint16_t>(a & 0xFFFFu), w[0]);
      }
      float value = accumulator + args.bias[j];
      if (args.residual != nullptr) value += args.residual[r * args.residual_row_stride + j];
      value = vector_min(vector_max(value, args.min), args.max);
      args.c[r * args.c_row_stride + j] = value;
    }
  }
}

}  // namespace qdqrt::kernels::internal::scalar
