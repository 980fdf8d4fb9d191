// Portable fp32 GEMM (Isa::kScalar): plain loops, fp32 accumulation in k order (the vector variants use Eigen).
#include "kernels/fp32/fp32_kernels.h"

namespace qdqrt::kernels::scalar {

void fp32_gemm(const Fp32GemmParams& p, const float* a, size_t lda, const float* b, size_t ldb, const float* bias,
               float* c, size_t ldc) {
  for (size_t i = 0; i < p.m; ++i) {
    for (size_t j = 0; j < p.n; ++j) {
      float sum = 0.0f;
      for (size_t l = 0; l < p.k; ++l) {
        const float a_value = p.transpose_a ? a[l * lda + i] : a[i * lda + l];
        const float b_value = p.transpose_b ? b[j * ldb + l] : b[l * ldb + j];
        sum += a_value * b_value;
      }
      float value = p.alpha * sum;
      if (p.beta != 0.0f) value += p.beta * c[i * ldc + j];
      if (bias) value += bias[j];
      if (p.relu) value = value > 0.0f ? value : 0.0f;
      c[i * ldc + j] = value;
    }
  }
}

}  // namespace qdqrt::kernels::scalar
