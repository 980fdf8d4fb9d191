// The one place for fp32 vector math (exp, sigmoid, tanh, erf, GELU): written once over a lane
// type and included by every file that needs it, with QDQRT_VECTOR_LANES defined as 1 (plain
// float, the scalar definition), 8 (AVX2 ymm) or 16 (AVX-512 zmm) before the include. Every
// function performs the same IEEE operations in the same order at every width (fma only where
// written, the library builds with -ffp-contract=off), so all widths are bit-exact with lanes = 1.
// Users: kernels/fp32/fp32_vector_impl.h (float layers) and kernels/pointwise/ (fused pointwise
// programs). Accuracy against <cmath>: exp ~1-2 ulp; sigmoid |error| <= 1.7e-7, SiLU <= 1.9e-7
// relative to max(1, |SiLU|) (vexp_signed<-1>'s quadratic); erf |error| <= 1.5e-7 (tested in
// tests/kernels_support/fp32_test.cpp and tests/kernels_gemm/pointwise_test.cpp).
#if !defined(QDQRT_VECTOR_LANES)
#error "define QDQRT_VECTOR_LANES (1, 8 or 16) before including vector_math_inl.h"
#endif
// One width per translation unit.
#ifndef QDQRT_KERNELS_VECTOR_MATH_INL_H
#define QDQRT_KERNELS_VECTOR_MATH_INL_H

#include <bit>
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
// vmaxps/vminps semantics (the second operand when unordered or both zero): the instruction
// itself at 8 and 16 lanes (GCC turns the compare-select into a compare and a blend).
#if QDQRT_VECTOR_LANES == 16
inline vf vmax(vf a, vf b) { return (vf)_mm512_max_ps((__m512)a, (__m512)b); }
inline vf vmin(vf a, vf b) { return (vf)_mm512_min_ps((__m512)a, (__m512)b); }
#elif QDQRT_VECTOR_LANES == 8
inline vf vmax(vf a, vf b) { return (vf)_mm256_max_ps((__m256)a, (__m256)b); }
inline vf vmin(vf a, vf b) { return (vf)_mm256_min_ps((__m256)a, (__m256)b); }
#else
inline vf vmax(vf a, vf b) { return a > b ? a : b; }
inline vf vmin(vf a, vf b) { return a < b ? a : b; }
#endif
inline vf vabs(vf x) { return bits_to_float(float_to_bits(x) & 0x7fffffff); }

// 2^(j/16) for j = 0..15, rounded to float (vexp uses them through kExp2SixteenthsShifted).
alignas(64) inline constexpr float kExp2Sixteenths[16] = {
    0x1.000000p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f, 0x1.306fe0p+0f, 0x1.3dea64p+0f,
    0x1.4bfdaep+0f, 0x1.5ab07ep+0f, 0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,
    0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};

// The bit patterns of kExp2Sixteenths[j] with j << 19 subtracted (see exp2_sixteenths_scaled).
alignas(64) inline constexpr uint32_t kExp2SixteenthsShifted[16] = {
    0x3F800000u, 0x3F7DAAC3u, 0x3F7B95C2u, 0x3F79C3D3u, 0x3F7837F0u, 0x3F76F532u, 0x3F75FED7u, 0x3F75583Fu,
    0x3F7504F3u, 0x3F7508A4u, 0x3F75672Au, 0x3F76248Cu, 0x3F7744FDu, 0x3F78CCDFu, 0x3F7AC0C7u, 0x3F7D257Du};
static_assert([] {
  for (uint32_t j = 0; j < 16; ++j) {
    if (std::bit_cast<uint32_t>(kExp2Sixteenths[j]) - (j << 19) != kExp2SixteenthsShifted[j]) return false;
  }
  return true;
}());

// kExp2SixteenthsShifted[m mod 16] for the integers m held in `bits` = bits of (1.5 * 2^23 + m):
// the low 4 bits of the float's bit pattern are m mod 16 (a table permute at 16 lanes).
inline vi exp2_sixteenths_shifted(vi bits) {
#if QDQRT_VECTOR_LANES == 16
  return (vi)_mm512_permutexvar_epi32((__m512i)bits, _mm512_load_si512(kExp2SixteenthsShifted));
#elif QDQRT_VECTOR_LANES == 8
  const __m256 low = _mm256_castsi256_ps(
      _mm256_permutevar8x32_epi32(_mm256_load_si256((const __m256i*)kExp2SixteenthsShifted), (__m256i)bits));
  const __m256 high = _mm256_castsi256_ps(
      _mm256_permutevar8x32_epi32(_mm256_load_si256((const __m256i*)(kExp2SixteenthsShifted + 8)), (__m256i)bits));
  // Bit 3 of the index moved to the sign bit selects the upper half.
  return (vi)_mm256_castps_si256(
      _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32((__m256i)bits, 28))));
#else
  return static_cast<vi>(kExp2SixteenthsShifted[bits & 15]);
#endif
}

// 2^(m / 16) for the integer m held in `bits` (see exp2_sixteenths_shifted): the shifted table
// entry plus m << 19, which adds floor(m / 16) << 23 to the exponent field of 2^((m mod 16) / 16);
// exact while the result is normal (vexp's clamp keeps it so). bits << 19 equals m << 19 because
// 1.5 * 2^23's bit pattern has its low 22 bits zero. Two integer ops instead of a multiply and
// vscalefps on the FMA pipes, one fewer than masking the shifted index (the SiLU after every
// EfficientNet conv).
inline vf exp2_sixteenths_scaled(vi bits) {
#if QDQRT_VECTOR_LANES == 1
  const vi shifted = static_cast<vi>(static_cast<uint32_t>(bits) << 19);  // no signed overflow
#else
  const vi shifted = bits << 19;
#endif
  return bits_to_float(exp2_sixteenths_shifted(bits) + shifted);
}

// x clamped to [-bound, bound] (bound > 0) with x's sign kept and NaN passed through: at 16 lanes
// one vrangeps (the smaller magnitude, the sign of x) where vmaxps + vminps take two.
inline vf vclamp_symmetric(vf x, float bound) {
#if QDQRT_VECTOR_LANES == 16
  return (vf)_mm512_range_ps((__m512)x, _mm512_set1_ps(bound), 0x02);
#else
  // vmin returns its second operand, |x|, when unordered: NaN stays NaN.
  const vf magnitude = vmin(splat(bound), vabs(x));
  return bits_to_float(float_to_bits(magnitude) | (float_to_bits(x) & static_cast<int32_t>(0x80000000u)));
#endif
}

// exp(sign * x) = 2^(m/16) * exp(r) with m = round(16 sign x / ln2) and |r| <= ln2/32: 2^(m/16)
// from a 16-entry table and the exponent field (exp2_sixteenths_scaled); r = sign x - m fl(ln2/16)
// in one fma (fl(ln2/16) is 1.2e-10 from ln2/16, so |error of r| <= 2.5e-7 at the clamp and 3e-8
// for |x| <= 12); exp(r) - 1 by r + r^2/2 + r^3/6 (error ~r^4/24 < 1e-8): ~1-2 ulp for |x| <= 12
// (sign = -1: a quadratic, ~3.5 ulp, for sigmoid and SiLU only, see below).
// The clamp keeps the results normal: sign x in [-87.34, 88.38] for sign = 1; for sign = -1
// (sigmoid, SiLU) x in [-87.34, 87.34], one vclamp_symmetric instead of two ops, so exp(-x) for
// x < -87.34 is exp(87.34) (1/(1 + e) and x/(1 + e) are then below 1.1e-36 in magnitude, where
// the exact values are smaller still). sign = -1 also folds the negation into the constants: the
// same values as exp of the negated input, one op fewer.
template <int kSign>
inline vf vexp_signed(vf x) {
  static_assert(kSign == 1 || kSign == -1);
  constexpr float sign = static_cast<float>(kSign);
  if constexpr (kSign > 0) {
    x = vmin(vmax(x, splat(-87.336544f)), splat(88.376262f));
  } else {
    x = vclamp_symmetric(x, 87.336544f);
  }
  const vf shifter = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const vf z = vfma(x, splat(sign * 23.08312f), shifter);
  const vf m = z - shifter;
  // sign x - m c as one fma with both products negated when sign < 0: -(m c) - x (vfnmsub).
  const vf r = kSign > 0 ? vfma(m, splat(-0.0433216987849966f), x) : vfma(-m, splat(0.0433216987849966f), -x);
  const vf t = exp2_sixteenths_scaled(float_to_bits(z));
  if constexpr (kSign < 0) {
    // exp(r) - 1 by the minimax quadratic a0 + a1 r + a2 r^2 on |r| <= ln2/32 (relative error of
    // exp(r) 4.3e-7, ~3.5 ulp; one op fewer than the cubic). 1/(1 + e) damps it by e/(1 + e)^2 <= 1/4:
    // sigmoid within 1.1e-7 of the rounded cubic's result plus its rounding, SiLU within |x| times that.
    const vf p = vfma(vfma(r, splat(0x1.fffc28p-2f), splat(0x1.0003d8p+0f)), r, splat(0x1.d8e85cp-28f));
    return vfma(t, p, t);
  } else {
    vf p = vfma(r, splat(0x1.555556p-3f), splat(0.5f));
    p = vfma(p, r * r, r);
    return vfma(t, p, t);
  }
}
inline vf vexp(vf x) { return vexp_signed<1>(x); }

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

inline vf vsigmoid(vf x) { return splat(1.0f) / (splat(1.0f) + vexp_signed<-1>(x)); }
inline vf vsilu(vf x) { return x / (splat(1.0f) + vexp_signed<-1>(x)); }

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

// 0.5 x (1 + erf(x/sqrt2)) = x >= 0 ? h (2 - e) : h e, h = 0.5 x, e = erfc(|x|/sqrt2): no
// cancellation. erfc as verfc_nonnegative computes it, with 1/sqrt2 folded into the constant of
// t = 1/(1 + p z) and exp(-z^2) = exp(-h x): two multiplies fewer than computing z, on the pipes
// the GELU epilogue of an INT8 MLP layer is bound by.
inline vf vgelu(vf x) {
  const vf h = splat(0.5f) * x;
  const vf t = splat(1.0f) / vfma(vabs(x), splat(0.3275911f * 0.70710678118654752f), splat(1.0f));
  vf p = splat(1.061405429f);
  p = vfma(p, t, splat(-1.453152027f));
  p = vfma(p, t, splat(1.421413741f));
  p = vfma(p, t, splat(-0.284496736f));
  p = vfma(p, t, splat(0.254829592f));
  const vf e = p * t * vexp(-(h * x));
  return x >= splat(0.0f) ? h * (splat(2.0f) - e) : h * e;
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
