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

// g(a) = a Phi(-a) = a erfc(a/sqrt2)/2 for a >= 0 on 16 intervals centred on 0.375 i: row j holds
// the u^j coefficients of a degree-5 polynomial in u = a - 0.375 i per interval (interval 0 has no
// constant term, so GELU(0) = 0). Generated and checked by scripts/fit_gelu_table.py.
alignas(64) inline constexpr float kGeluTail[6][16] = {
    {0x0p+0f, 0x1.0fbddap-3f, 0x1.5c198p-3f, 0x1.2c32d6p-3f, 0x1.9a76a6p-4f, 0x1.d2e35cp-5f, 0x1.c2a496p-6f, 0x1.74a8e8p-7f, 0x1.096692p-8f, 0x1.468976p-10f, 0x1.5babdp-12f, 0x1.40b6dap-14f, 0x1.00846ep-16f, 0x1.63fa3ep-19f, 0x1.acb65cp-22f, 0x1.c03082p-25f},
    {0x1p-1f, 0x1.b70f46p-3f, 0x1.95f53cp-11f, -0x1.baa428p-4f, -0x1.050e94p-3f, -0x1.93c67p-4f, -0x1.e4e1e6p-5f, -0x1.dc423cp-6f, -0x1.876f52p-7f, -0x1.10722ep-8f, -0x1.437004p-10f, -0x1.48ee48p-12f, -0x1.1f6ed6p-14f, -0x1.b08f24p-17f, -0x1.18b4ep-19f, -0x1.3a94b6p-22f},
    {-0x1.9882d4p-2f, -0x1.62006cp-2f, -0x1.bb4728p-3f, -0x1.3eaee2p-4f, 0x1.09312cp-6f, 0x1.ab0564p-5f, 0x1.8e272ap-5f, 0x1.fdcd98p-6f, 0x1.fc4c8cp-7f, 0x1.9cae86p-8f, 0x1.16b8cp-9f, 0x1.3cfa38p-11f, 0x1.31c6aep-13f, 0x1.f6eadp-16f, 0x1.61d0b2p-18f, 0x1.aaff48p-21f},
    {0x1.244p-44f, 0x1.6f5fcep-4f, 0x1.08fdf4p-3f, 0x1.bcf046p-4f, 0x1.d035d6p-5f, 0x1.5540d6p-7f, -0x1.9e5f3ep-7f, -0x1.07a716p-6f, -0x1.6b136cp-7f, -0x1.6d6708p-8f, -0x1.22a7e2p-9f, -0x1.79d4a4p-11f, -0x1.987552p-13f, -0x1.73250ep-15f, -0x1.1d7042p-17f, -0x1.756b8ep-20f},
    {0x1.0e464ep-4f, 0x1.7eb2c4p-5f, 0x1.40329ep-8f, -0x1.d1249cp-6f, -0x1.257514p-5f, -0x1.82c906p-6f, -0x1.fdbd76p-8f, 0x1.aa11aap-10f, 0x1.077262p-8f, 0x1.8b1cb2p-9f, 0x1.901b8ap-10f, 0x1.368f5cp-11f, 0x1.83657ep-13f, 0x1.8d8e3p-15f, 0x1.5447a4p-17f, 0x1.ea2b3cp-20f},
    {-0x1.09402p-39f, -0x1.363148p-6f, -0x1.72b33cp-6f, -0x1.70d21cp-7f, 0x1.57df5ep-9f, 0x1.21587ep-7f, 0x1.d46328p-8f, 0x1.7b2fa8p-9f, 0x1.bd1e44p-16f, -0x1.b5896p-11f, -0x1.60069p-11f, -0x1.5f621cp-12f, -0x1.05576p-13f, -0x1.33c3a4p-15f, -0x1.274fa6p-17f, -0x1.d564e6p-20f},
};

// table[m mod 16] for the integers m held in `bits` = bits of (1.5 * 2^23 + m) (as
// exp2_sixteenths_shifted): one permute at 16 lanes.
inline vf table16_lookup(const float* table, vi bits) {
#if QDQRT_VECTOR_LANES == 16
  return (vf)_mm512_permutexvar_ps((__m512i)bits, _mm512_load_ps(table));
#elif QDQRT_VECTOR_LANES == 8
  const __m256 low = _mm256_permutevar8x32_ps(_mm256_load_ps(table), (__m256i)bits);
  const __m256 high = _mm256_permutevar8x32_ps(_mm256_load_ps(table + 8), (__m256i)bits);
  return (vf)_mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32((__m256i)bits, 28)));
#else
  return table[bits & 15];
#endif
}

// GELU(y) = 0.5 y (1 + erf(y/sqrt2)) = max(y, 0) - g(|y|) (kGeluTail), |y| clamped to 5.8 where
// g < 2e-8: the interval index and u from one fma with the 1.5 * 2^23 shifter, six table
// permutes and a Horner chain of five fmas. Worst |error| / max(1, |GELU|) 7.7e-8 (half an ulp
// of the final subtraction, mostly); about half the cycles of an erfc-and-exp form, on the
// pipes the GELU epilogue of an INT8 MLP layer shares with its vpdpbusd. NaN stays NaN (vmax
// returns y when unordered) and -0 gives -0.
inline vf vgelu(vf y) {
  const vf a = vmin(vabs(y), splat(5.8f));
  const vf shifter = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const vf z = vfma(a, splat(1.0f / 0.375f), shifter);
  const vf u = vfma(z - shifter, splat(-0.375f), a);  // exact: 0.375 m has few bits
  const vi index = float_to_bits(z);
  vf p = table16_lookup(kGeluTail[5], index);
  for (int j = 4; j >= 0; --j) p = vfma(p, u, table16_lookup(kGeluTail[j], index));
  return vmax(splat(0.0f), y) - p;
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
