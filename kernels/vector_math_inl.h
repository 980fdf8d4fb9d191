// The one place for fp32 vector math (exp, sigmoid, tanh, erf, GELU): written once over a lane
// type and included by every file that needs it, with QDQRT_VECTOR_LANES defined as 1 (plain
// float, the scalar definition), 8 (AVX2 ymm) or 16 (AVX-512 zmm) before the include. Every
// function performs the same IEEE operations in the same order at every width (fma only where
// written, the library builds with -ffp-contract=off), so all widths are bit-exact with lanes = 1.
// Users: kernels/fp32/fp32_vector_impl.h (float layers) and kernels/pointwise/ (fused pointwise
// programs). Accuracy against <cmath>: exp ~2 ulp; erf |error| <= 1.5e-7 (tested in
// tests/kernels_fp32 and tests/kernels_pointwise).
#if !defined(QDQRT_VECTOR_LANES)
#error "define QDQRT_VECTOR_LANES (1, 8 or 16) before including vector_math_inl.h"
#endif
// One width per translation unit.
#ifndef QDQRT_KERNELS_VECTOR_MATH_INL_H
#define QDQRT_KERNELS_VECTOR_MATH_INL_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if QDQRT_VECTOR_LANES > 1
#include <immintrin.h>
#endif

namespace qdqrt::kernels {
namespace {
namespace vmath {

constexpr int kLanes = QDQRT_VECTOR_LANES;
#if QDQRT_VECTOR_LANES == 1
using vf = float;
using vi = int32_t;
inline vf splat(float x) { return x; }
inline vf vfma(vf a, vf b, vf c) { return std::fma(a, b, c); }
inline vf vsqrt(vf x) { return std::sqrt(x); }
inline vi to_int_truncate(vf x) { return static_cast<vi>(x); }
#else
typedef float vf __attribute__((vector_size(kLanes * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(kLanes * sizeof(float))));
inline vf splat(float x) { return vf{} + x; }
inline vi to_int_truncate(vf x) { return __builtin_convertvector(x, vi); }
#if QDQRT_VECTOR_LANES == 16
inline vf vfma(vf a, vf b, vf c) { return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
inline vf vsqrt(vf x) { return (vf)_mm512_sqrt_ps((__m512)x); }
#elif QDQRT_VECTOR_LANES == 8
inline vf vfma(vf a, vf b, vf c) { return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
inline vf vsqrt(vf x) { return (vf)_mm256_sqrt_ps((__m256)x); }
#else
#error "QDQRT_VECTOR_LANES must be 1, 8 or 16"
#endif
#endif

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
inline vf bits_to_float(vi bits) {
  vf v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
inline vi float_to_bits(vf v) {
  vi bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
// vmaxps/vminps semantics (the second operand when unordered).
inline vf vmax(vf a, vf b) { return a > b ? a : b; }
inline vf vmin(vf a, vf b) { return a < b ? a : b; }
inline vf vabs(vf x) { return bits_to_float(float_to_bits(x) & 0x7fffffff); }

// p * 2^n for integral n with a normal result (exact at every width): AVX-512 has vscalefps,
// the others build 2^n from its exponent bits (n integral, so truncation is exact).
inline vf times_power_of_two(vf p, vf n) {
#if QDQRT_VECTOR_LANES == 16
  return (vf)_mm512_scalef_ps((__m512)p, (__m512)n);
#else
  return p * bits_to_float((to_int_truncate(n) + 127) << 23);
#endif
}

// exp(x): Cody-Waite range reduction by ln2 and a degree-6 polynomial (Cephes expf coefficients)
// in FMA form; inputs clamped to [-87.34, 88.38] (results stay normal). ~2 ulp.
inline vf vexp(vf x) {
  x = vmin(vmax(x, splat(-87.336544f)), splat(88.376262f));
  const vf shifter = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const vf n = vfma(x, splat(1.44269504088896341f), shifter) - shifter;
  const vf r = vfma(n, splat(2.12194440e-4f), vfma(n, splat(-0.693359375f), x));
  vf p = splat(1.9875691500e-4f);
  p = vfma(p, r, splat(1.3981999507e-3f));
  p = vfma(p, r, splat(8.3334519073e-3f));
  p = vfma(p, r, splat(4.1665795894e-2f));
  p = vfma(p, r, splat(1.6666665459e-1f));
  p = vfma(p, r, splat(5.0000001201e-1f));
  p = vfma(p, r * r, r) + splat(1.0f);
  return times_power_of_two(p, n);
}

// erfc(z) for z >= 0: Abramowitz & Stegun 7.1.26 (|error of erf| <= 1.5e-7).
inline vf verfc_nonnegative(vf z) {
  const vf t = splat(1.0f) / (splat(1.0f) + splat(0.3275911f) * z);
  vf p = splat(1.061405429f);
  p = vfma(p, t, splat(-1.453152027f));
  p = vfma(p, t, splat(1.421413741f));
  p = vfma(p, t, splat(-0.284496736f));
  p = vfma(p, t, splat(0.254829592f));
  return p * t * vexp(-(z * z));
}

inline vf vsigmoid(vf x) { return splat(1.0f) / (splat(1.0f) + vexp(-x)); }
inline vf vsilu(vf x) { return x / (splat(1.0f) + vexp(-x)); }

// tanh|x| = 1 - 2 / (exp(2|x|) + 1), sign restored; saturates cleanly for large |x|.
inline vf vtanh(vf x) {
  const vf one = splat(1.0f);
  const vf t = one - splat(2.0f) / (vexp(splat(2.0f) * vabs(x)) + one);
  return x < splat(0.0f) ? -t : t;
}

inline vf verf(vf x) {
  const vf t = splat(1.0f) - verfc_nonnegative(vabs(x));
  return x < splat(0.0f) ? -t : t;
}

// 0.5 x (1 + erf(x/sqrt2)) = x >= 0 ? 0.5 x (2 - e) : 0.5 x e, e = erfc(|x|/sqrt2): no cancellation.
inline vf vgelu(vf x) {
  const vf e = verfc_nonnegative(vabs(x) * splat(0.70710678118654752f));
  return x >= splat(0.0f) ? splat(0.5f) * x * (splat(2.0f) - e) : splat(0.5f) * x * e;
}

// Gelu approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline vf vgelu_tanh(vf x) {
  const vf inner = splat(0.7978845608028654f) * (x + splat(0.044715f) * x * x * x);
  return splat(0.5f) * x * (splat(1.0f) + vtanh(inner));
}

// HardSwish: x * max(0, min(1, x / 6 + 0.5)).
inline vf vhardswish(vf x) {
  return x * vmax(vmin(x * splat(1.0f / 6.0f) + splat(0.5f), splat(1.0f)), splat(0.0f));
}

}  // namespace vmath
}  // namespace
}  // namespace qdqrt::kernels

#endif  // QDQRT_KERNELS_VECTOR_MATH_INL_H
