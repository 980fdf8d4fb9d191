// FP32 kernels for what stays float between INT8 regions: GEMM (Eigen; MatMul, Gemm, 1x1 conv on
// NHWC), elementwise binary ops with the broadcast.h row plan, unary activations, row softmax.
//
// Accuracy: the scalar kernels use <cmath>; vector variants use polynomial exp/erf (documented in
// docs/kernels_support.md). Tested bounds versus the scalar kernels:
//   binary ops, Relu/Clip/LeakyRelu/HardSwish/HardSigmoid/Abs/Neg/Sqrt: exact (same IEEE op)
//   Exp/Sigmoid/Silu/Tanh/Gelu/Erf/Softmax: |d| <= 2e-6 + 1e-5 * |scalar|
//   GEMM: |d| <= 1e-4 * sqrt(K) * max|a| * max|b| (summation order differs)
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/qtypes.h"

namespace qdqrt::kernels {

enum class Fp32BinaryOp { kAdd, kSub, kMul, kDiv, kMax, kMin };
const char* fp32_binary_op_name(Fp32BinaryOp op);

enum class Fp32UnaryOp {
  kRelu,
  kClip,         // min(max(x, alpha), beta)
  kLeakyRelu,    // x >= 0 ? x : alpha * x
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 0.5))
  kSigmoid,
  kSilu,
  kTanh,
  kGelu,  // erf form
  kExp,
  kAbs,
  kNeg,
  kSqrt,
  kErf,
};
const char* fp32_unary_op_name(Fp32UnaryOp op);
struct Fp32UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
};

// out[i] = op(a[i], b[i]); the _vs form uses one b value, the _sv form one a value.
using Fp32BinaryFn = void (*)(Fp32BinaryOp op, size_t n, const float* a, const float* b, float* out);
using Fp32BinaryVsFn = void (*)(Fp32BinaryOp op, size_t n, const float* a, float b, float* out);
using Fp32BinarySvFn = void (*)(Fp32BinaryOp op, size_t n, float a, const float* b, float* out);
using Fp32UnaryFn = void (*)(Fp32UnaryOp op, const Fp32UnaryParams& params, size_t n, const float* input,
                             float* output);
// Softmax over each row of `cols` contiguous values (ONNX Softmax-13 with axis = last).
using Fp32SoftmaxFn = void (*)(size_t rows, size_t cols, const float* input, float* output);

// Per-channel sums of rows x channels (channels innermost: NHWC pixels, row r at input + r *
// row_stride), accumulated in double in row order, so every width gives the scalar kernel's sums
// exactly: sums[c] = sum_r input[r * row_stride + c].
using Fp32ChannelSumsFn = void (*)(size_t rows, size_t channels, size_t row_stride, const float* input, double* sums);
// The same accumulated in float, in row order (so again exact across widths): the per-row sums of
// a depthwise conv's output rows (a few hundred pixels at most) that a global average pool reads;
// the double form's conversions made it cost as much as a separate pass over the output.
using Fp32ChannelSumsF32Fn = void (*)(size_t rows, size_t channels, size_t row_stride, const float* input,
                                      float* sums);

// Row-major C[m x n] = alpha * op(A) * op(B) + beta * C + bias[n] (bias may be null), then optional
// ReLU. op(A) is m x k (A stored k x m when transpose_a), op(B) is k x n (B stored n x k when
// transpose_b, e.g. OIHW 1x1 conv weights). beta == 0 ignores C's old contents (even NaN).
// Split across threads by rows: offset A and C by the first row and pass that row count as m.
struct Fp32GemmParams {
  size_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  float alpha = 1.0f, beta = 0.0f;
  bool relu = false;
};
using Fp32GemmFn = void (*)(const Fp32GemmParams& params, const float* a, size_t lda, const float* b, size_t ldb,
                            const float* bias, float* c, size_t ldc);

struct Fp32Kernels {
  NamedKernel<Fp32BinaryFn> binary;
  NamedKernel<Fp32BinaryVsFn> binary_vs;
  NamedKernel<Fp32BinarySvFn> binary_sv;
  NamedKernel<Fp32UnaryFn> unary;
  NamedKernel<Fp32SoftmaxFn> softmax;
  NamedKernel<Fp32GemmFn> gemm;
  NamedKernel<Fp32ChannelSumsFn> channel_sums;
  NamedKernel<Fp32ChannelSumsF32Fn> channel_sums_f32;
};

#define QDQRT_DECLARE_FP32_KERNELS(isa)                                                                      \
  namespace isa {                                                                                            \
  void fp32_binary(Fp32BinaryOp op, size_t n, const float* a, const float* b, float* out);                   \
  void fp32_binary_vs(Fp32BinaryOp op, size_t n, const float* a, float b, float* out);                       \
  void fp32_binary_sv(Fp32BinaryOp op, size_t n, float a, const float* b, float* out);                       \
  void fp32_unary(Fp32UnaryOp op, const Fp32UnaryParams& params, size_t n, const float* input, float* output); \
  void fp32_softmax(size_t rows, size_t cols, const float* input, float* output);                            \
  void fp32_channel_sums(size_t rows, size_t channels, size_t row_stride, const float* input, double* sums); \
  void fp32_channel_sums_f32(size_t rows, size_t channels, size_t row_stride, const float* input, float* sums); \
  void fp32_gemm(const Fp32GemmParams& params, const float* a, size_t lda, const float* b, size_t ldb,       \
                 const float* bias, float* c, size_t ldc);                                                   \
  }
QDQRT_DECLARE_FP32_KERNELS(scalar)
QDQRT_DECLARE_FP32_KERNELS(avx2)
QDQRT_DECLARE_FP32_KERNELS(avx512skx)
#undef QDQRT_DECLARE_FP32_KERNELS

}  // namespace qdqrt::kernels
