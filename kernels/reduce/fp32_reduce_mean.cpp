#include "kernels/reduce/fp32_reduce_mean.h"

#include <algorithm>

namespace qdqrt::kernels {

namespace {

// Sums of a block of 8 rows: eight independent chains, each in column order.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void sum_8_rows(size_t columns, const float* __restrict x, double* __restrict sums) {
  double s[8] = {};
  for (size_t c = 0; c < columns; ++c) {
    for (size_t j = 0; j < 8; ++j) s[j] += static_cast<double>(x[j * columns + c]);
  }
  for (size_t j = 0; j < 8; ++j) sums[j] = s[j];
}

// sums[i] += row[i]: the loop the compiler vectorizes (per column the adds stay in row order).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void accumulate(double* __restrict sums, const float* __restrict row, size_t count) {
  for (size_t i = 0; i < count; ++i) sums[i] += static_cast<double>(row[i]);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void divide(float* __restrict out, const double* __restrict sums, size_t count, double divisor) {
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(sums[i] / divisor);
}

}  // namespace

void f32_reduce_mean_rows(size_t rows, size_t columns, const float* x, float* y) {
  const double divisor = static_cast<double>(columns);
  size_t row = 0;
  for (; row + 8 <= rows; row += 8) {
    double sums[8];
    sum_8_rows(columns, x + row * columns, sums);
    divide(y + row, sums, 8, divisor);
  }
  for (; row < rows; ++row) {
    double sum = 0.0;
    const float* values = x + row * columns;
    for (size_t c = 0; c < columns; ++c) sum += static_cast<double>(values[c]);
    y[row] = static_cast<float>(sum / divisor);
  }
}

void f32_reduce_mean_columns(size_t reduced, size_t count, size_t row_stride, const float* x, float* y) {
  constexpr size_t kBlock = 256;  // doubles on the stack
  double sums[kBlock];
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t block = std::min(kBlock, count - first);
    std::fill_n(sums, block, 0.0);
    for (size_t r = 0; r < reduced; ++r) accumulate(sums, x + r * row_stride + first, block);
    divide(y + first, sums, block, static_cast<double>(reduced));
  }
}

}  // namespace qdqrt::kernels
