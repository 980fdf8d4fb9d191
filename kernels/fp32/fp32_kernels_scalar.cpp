// Portable fp32 elementwise/softmax kernels (Isa::kScalar, <cmath>); the vector variants are
// checked against these.
#include <algorithm>
#include <cmath>

#include "kernels/fp32/fp32_kernels.h"

namespace qdqrt::kernels::scalar {

namespace {
// max/min written like vmaxps/vminps (second operand on NaN) so vector variants match exactly.
inline float max_like_simd(float a, float b) { return a > b ? a : b; }
inline float min_like_simd(float a, float b) { return a < b ? a : b; }

inline float binary_value(Fp32BinaryOp op, float a, float b) {
  switch (op) {
    case Fp32BinaryOp::kAdd: return a + b;
    case Fp32BinaryOp::kSub: return a - b;
    case Fp32BinaryOp::kMul: return a * b;
    case Fp32BinaryOp::kDiv: return a / b;
    case Fp32BinaryOp::kMax: return max_like_simd(a, b);
    case Fp32BinaryOp::kMin: return min_like_simd(a, b);
  }
  return 0.0f;
}
}  // namespace

void fp32_binary(Fp32BinaryOp op, size_t n, const float* a, const float* b, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = binary_value(op, a[i], b[i]);
}
void fp32_binary_vs(Fp32BinaryOp op, size_t n, const float* a, float b, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = binary_value(op, a[i], b);
}
void fp32_binary_sv(Fp32BinaryOp op, size_t n, float a, const float* b, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = binary_value(op, a, b[i]);
}

void fp32_unary(Fp32UnaryOp op, const Fp32UnaryParams& p, size_t n, const float* input, float* output) {
  for (size_t i = 0; i < n; ++i) {
    const float x = input[i];
    float y = 0.0f;
    switch (op) {
      case Fp32UnaryOp::kRelu: y = max_like_simd(x, 0.0f); break;
      case Fp32UnaryOp::kClip: y = min_like_simd(max_like_simd(x, p.alpha), p.beta); break;
      case Fp32UnaryOp::kLeakyRelu: y = x >= 0.0f ? x : p.alpha * x; break;
      case Fp32UnaryOp::kHardSigmoid:
        y = max_like_simd(min_like_simd(p.alpha * x + p.beta, 1.0f), 0.0f);
        break;
      case Fp32UnaryOp::kHardSwish:
        y = x * max_like_simd(min_like_simd(x * (1.0f / 6.0f) + 0.5f, 1.0f), 0.0f);
        break;
      case Fp32UnaryOp::kSigmoid: y = 1.0f / (1.0f + std::exp(-x)); break;
      case Fp32UnaryOp::kSilu: y = x / (1.0f + std::exp(-x)); break;
      case Fp32UnaryOp::kTanh: y = std::tanh(x); break;
      case Fp32UnaryOp::kGelu: y = 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); break;
      case Fp32UnaryOp::kExp: y = std::exp(x); break;
      case Fp32UnaryOp::kAbs: y = std::fabs(x); break;
      case Fp32UnaryOp::kNeg: y = -x; break;
      case Fp32UnaryOp::kSqrt: y = std::sqrt(x); break;
      case Fp32UnaryOp::kErf: y = std::erf(x); break;
    }
    output[i] = y;
  }
}

void fp32_softmax(size_t rows, size_t cols, const float* input, float* output) {
  for (size_t r = 0; r < rows; ++r) {
    const float* in = input + r * cols;
    float* out = output + r * cols;
    float max_value = -INFINITY;
    for (size_t c = 0; c < cols; ++c) max_value = std::max(max_value, in[c]);
    float sum = 0.0f;
    for (size_t c = 0; c < cols; ++c) {
      out[c] = std::exp(in[c] - max_value);
      sum += out[c];
    }
    for (size_t c = 0; c < cols; ++c) out[c] /= sum;
  }
}

void fp32_channel_sums(size_t rows, size_t channels, size_t row_stride, const float* input, double* sums) {
  for (size_t c = 0; c < channels; ++c) sums[c] = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < channels; ++c) sums[c] += static_cast<double>(input[r * row_stride + c]);
  }
}

void fp32_channel_sums_f32(size_t rows, size_t channels, size_t row_stride, const float* input, float* sums) {
  for (size_t c = 0; c < channels; ++c) sums[c] = 0.0f;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < channels; ++c) sums[c] += input[r * row_stride + c];
  }
}

}  // namespace qdqrt::kernels::scalar
