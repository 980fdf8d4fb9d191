#include "kernels/elementwise/fp32_pow.h"

#include <cmath>

namespace qdqrt::kernels {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void f32_square(size_t n, const float* __restrict x, float* __restrict y) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
}

void f32_pow_double(size_t n, const float* x, double exponent, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(std::pow(static_cast<double>(x[i]), exponent));
}

}  // namespace qdqrt::kernels
