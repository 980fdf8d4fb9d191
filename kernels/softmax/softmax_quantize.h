// Softmax over the rows of a row-major fp32 matrix, quantized to 8 bits in the same pass: the
// attention probabilities P = Softmax(Q.K^T / sqrt(d)) written directly as the int8 input of the
// INT8 P.V MatMul (no fp32 P in memory, no separate QuantizeLinear layer).
//
// The definition (softmax_quantize_scalar.cpp), for finite inputs:
//   m = max_c x[c];  e[c] = exp(x[c] - m) with kernels/vector_math_inl.h's vexp;
//   sum = 16 partial sums, p[j] = e[j] + e[j + 16] + e[j + 32] + ... in column order, halved
//         as q[j] = p[j] + p[j + 8], r[j] = q[j] + q[j + 4], s[j] = r[j] + r[j + 2], s[0] + s[1];
//   y[c] = saturate(nearbyint(e[c] * ((1 / sum) * (1 / y_scale))) + y_zero_point).
// The fixed summation order is what 8 and 16 lanes can both follow (AVX2 keeps two accumulators)
// with dependency chains of columns / 16 adds, so every ISA is bit-exact
// with the scalar definition (tests/kernels_support/softmax_quantize_test.cpp).
//
// Implementations: softmax_quantize_scalar.cpp, softmax_quantize_avx2.cpp and
// softmax_quantize_avx512skx.cpp (softmax_quantize_vector_impl.h at 8 and 16 lanes);
// kernels/dispatch.cpp picks one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdqrt::kernels {

struct SoftmaxQuantizeParams {
  size_t rows = 0, columns = 0;
  float y_scale = 1.0f;  // > 0
  int32_t y_zero_point = 0;
  bool y_signed = true;  // int8, else uint8
};

// Rows [0, params.rows) of x (row stride `columns`) into y (8-bit, same stride).
using SoftmaxQuantizeFn = void (*)(const SoftmaxQuantizeParams& params, const float* x, void* y);

// Rows up to this many columns keep their exponentials on the stack between the sum and the
// quantization; longer rows compute them twice (the same values).
inline constexpr size_t kSoftmaxStackColumns = 1024;

#define QDQRT_DECLARE_SOFTMAX_QUANTIZE(isa)                                            \
  namespace isa {                                                                      \
  void softmax_quantize(const SoftmaxQuantizeParams& params, const float* x, void* y); \
  }
QDQRT_DECLARE_SOFTMAX_QUANTIZE(scalar)
QDQRT_DECLARE_SOFTMAX_QUANTIZE(avx2)
QDQRT_DECLARE_SOFTMAX_QUANTIZE(avx512skx)
#undef QDQRT_DECLARE_SOFTMAX_QUANTIZE

}  // namespace qdqrt::kernels
