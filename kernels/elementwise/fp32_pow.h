// fp32 Pow by a constant exponent, the reference executor's values bit for bit (which computes
// pow in double and rounds to float):
//   f32_square:     y = x * x, exponent 2: the float product is the correctly rounded square, as is
//                   the exact double square rounded to float.
//   f32_pow_double: y = float(pow(double(x), exponent)), any other exponent: the reference's formula
//                   (one libm call per element: slow, for the exponents exporters rarely emit).
#pragma once

#include <cstddef>

namespace qdqrt::kernels {

void f32_square(size_t n, const float* x, float* y);
void f32_pow_double(size_t n, const float* x, double exponent, float* y);

}  // namespace qdqrt::kernels
