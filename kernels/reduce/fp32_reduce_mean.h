// fp32 ReduceMean over consecutive axes of a row-major tensor, viewed as [outer, reduced, inner]:
// y[o, i] = sum_r x[o, r, i] / reduced.
//
// The mean is the reference executor's bit for bit: each sum accumulated in double in r order,
// divided by the count in double and rounded to float. Independent sums run side by side (8 rows
// at a time, or a vector of inner columns), each keeping its own order, so no width or split
// changes a result.
#pragma once

#include <cstddef>

namespace qdqrt::kernels {

// inner == 1: the means of `rows` rows of `columns` contiguous values (row r at x + r * columns).
void f32_reduce_mean_rows(size_t rows, size_t columns, const float* x, float* y);

// inner > 1, one outer slice and `count` of its inner columns: y[i] = sum_r x[r * row_stride + i] /
// reduced for i < count (x points at the first column of row 0; row_stride is the inner size).
void f32_reduce_mean_columns(size_t reduced, size_t count, size_t row_stride, const float* x, float* y);

}  // namespace qdqrt::kernels
