// Scalar building blocks that every portable kernel uses, written to match the vector
// instructions exactly: max_ps(v, lo) returns lo when v is NaN; min_ps(v, hi) likewise; cvtps2dq
// rounds half to even under the default MXCSR mode, like nearbyint.
// Only for portable (*_scalar.cpp, plain .cpp) sources: per-ISA files keep their own copies
// so no differently-compiled inline function is shared between object files.
#pragma once

#include <cmath>
#include <cstdint>

namespace qdqrt::kernels::scalar {

inline float clamp_like_simd(float value, float lo, float hi) {
  value = value > lo ? value : lo;  // NaN -> lo, as vmaxps(value, lo)
  value = value < hi ? value : hi;
  return value;
}

// value must already be clamped into int32 range.
inline int32_t round_half_even(float value) { return static_cast<int32_t>(std::nearbyint(value)); }

// The common tail of every requantizing kernel.
inline int32_t requantize_value(float value, float lo, float hi, int32_t zero_point) {
  return round_half_even(clamp_like_simd(value, lo, hi)) + zero_point;
}

}  // namespace qdqrt::kernels::scalar
