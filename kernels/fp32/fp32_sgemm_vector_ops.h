// The vector operations, the activation and the tile store the fp32 vector kernels share
// (fp32_sgemm_vector_impl.h: the igemm, depthwise, Winograd and direct NCHW kernels;
// fp32_gemv_vector_impl.h: the small-M GEMV), compiled per ISA: the including file defines
// QDQRT_SGEMM_AVX512 or QDQRT_SGEMM_AVX2 and QDQRT_SGEMM_NAMESPACE. One include per
// translation unit.
#if !defined(QDQRT_SGEMM_NAMESPACE) || (!defined(QDQRT_SGEMM_AVX512) && !defined(QDQRT_SGEMM_AVX2))
#error "define QDQRT_SGEMM_NAMESPACE and QDQRT_SGEMM_AVX512 or QDQRT_SGEMM_AVX2 before including this file"
#endif
#ifndef QDQRT_KERNELS_FP32_SGEMM_VECTOR_OPS_H
#define QDQRT_KERNELS_FP32_SGEMM_VECTOR_OPS_H

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/fp32/fp32_sgemm.h"

#if defined(QDQRT_SGEMM_AVX512)
#define QDQRT_VECTOR_LANES 16
#else
#define QDQRT_VECTOR_LANES 8
#endif
#include "kernels/vector_math_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE {
namespace {

#if defined(QDQRT_SGEMM_AVX512)
using V = __m512;
constexpr int kLanes = 16;
constexpr int kMr = 14;
inline V load(const float* p) { return _mm512_load_ps(p); }
inline V loadu(const float* p) { return _mm512_loadu_ps(p); }
inline V broadcast(const float* p) { return _mm512_set1_ps(*p); }
inline V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
inline V splat(float x) { return _mm512_set1_ps(x); }
// `count` (1..kLanes) leading lanes.
inline V load_part(const float* p, int count) {
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1u), p);
}
inline void store_part(float* p, V v, int count) {
  if (count == kLanes) {
    _mm512_storeu_ps(p, v);
  } else {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << count) - 1u), v);
  }
}
// The same with the mask of `count` lanes made once (part_mask).
using PartMask = __mmask16;
inline PartMask part_mask(int count) { return static_cast<__mmask16>((1u << count) - 1u); }
inline V load_masked(const float* p, PartMask mask) { return _mm512_maskz_loadu_ps(mask, p); }
inline void store_masked(float* p, V v, PartMask mask) { _mm512_mask_storeu_ps(p, mask, v); }
#else
using V = __m256;
constexpr int kLanes = 8;
constexpr int kMr = 6;
inline V load(const float* p) { return _mm256_load_ps(p); }
inline V loadu(const float* p) { return _mm256_loadu_ps(p); }
inline V broadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V add(V a, V b) { return _mm256_add_ps(a, b); }
inline V sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V splat(float x) { return _mm256_set1_ps(x); }
inline __m256i lane_mask(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V load_part(const float* p, int count) { return _mm256_maskload_ps(p, lane_mask(count)); }
inline void store_part(float* p, V v, int count) {
  if (count == kLanes) {
    _mm256_storeu_ps(p, v);
  } else {
    _mm256_maskstore_ps(p, lane_mask(count), v);
  }
}
using PartMask = __m256i;
inline PartMask part_mask(int count) { return lane_mask(count); }
inline V load_masked(const float* p, PartMask mask) { return _mm256_maskload_ps(p, mask); }
inline void store_masked(float* p, V v, PartMask mask) { _mm256_maskstore_ps(p, mask, v); }
#endif

constexpr int kNr = 2 * kLanes;

inline V activate(Fp32EpilogueActivation activation, V value) {
  using vmath::vf;
  switch (activation) {
    case Fp32EpilogueActivation::kNone: return value;
    case Fp32EpilogueActivation::kSigmoid: return (V)vmath::vsigmoid((vf)value);
    case Fp32EpilogueActivation::kSilu: return (V)vmath::vsilu((vf)value);
    case Fp32EpilogueActivation::kHardSwish: return (V)vmath::vhardswish((vf)value);
    case Fp32EpilogueActivation::kGelu: return (V)vmath::vgelu((vf)value);
  }
  return value;
}

// One output vector of an epilogue without activation: `residual`'s values added (kResidual),
// clamped to [low, high] (`clamp`), stored whole or under `mask`. Shared by store_tile and the
// depthwise kernels' store_pixels.
template <bool kResidual>
[[gnu::always_inline]] inline void clamp_store(V value, const float* residual, float* to, V low, V high, bool clamp,
                                               bool whole, PartMask mask) {
  if constexpr (kResidual) value = add(value, whole ? loadu(residual) : load_masked(residual, mask));
  if (clamp) value = vmin(high, vmax(low, value));  // NaN passes, as in the scalar kernel
  if (whole) {
    store_part(to, value, kLanes);
  } else {
    store_masked(to, value, mask);
  }
}

// Calls f(std::bool_constant<residual>{}, std::bool_constant<whole>{}): an epilogue's tests made
// once, its vectors then stored without them.
template <typename F>
[[gnu::always_inline]] inline void with_residual_and_whole(bool residual, bool whole, F&& f) {
  if (whole) {
    residual ? f(std::true_type{}, std::true_type{}) : f(std::false_type{}, std::true_type{});
  } else {
    residual ? f(std::true_type{}, std::false_type{}) : f(std::false_type{}, std::false_type{});
  }
}

// Stores a tile's accumulators to args.c (args.nc columns); with `finish` (the last k block) the
// epilogue first: residual Add, clamp, activation. Args: the igemm's, the direct NCHW tile's or a
// GEMV panel's (fp32_gemv_vector_impl.h). The fields are read into locals once (the stores go
// through float pointers, which may alias `args`: read per vector, the 14 x 32 tile's epilogue
// reloaded them, tested the residual, the activation and the column count and built a mask for
// each of its 28 vectors, ~200 cycles per call, as long as the k loop of a 1x1 conv over 16
// channels); tiles without an activation store straight, the last vector under a mask made once.
template <int kRows, int kVectors, typename Args>
[[gnu::always_inline]] inline void store_tile(const V (&acc)[kRows][kVectors], const Args& args, bool finish) {
  float* const c = args.c;
  const int64_t c_row_stride = args.c_row_stride;
  const int nc = args.nc;
  const float* const residual = finish ? args.residual : nullptr;
  const int64_t residual_row_stride = args.residual_row_stride;
  const Fp32EpilogueActivation activation = finish ? args.activation : Fp32EpilogueActivation::kNone;
  const V low = splat(args.min), high = splat(args.max);
  if (nc > (kVectors - 1) * kLanes && activation == Fp32EpilogueActivation::kNone) {
    // Every vector but the last whole; the last whole or under a mask made once.
    const int last_count = std::min(kLanes, nc - (kVectors - 1) * kLanes);
    const PartMask last_mask = part_mask(last_count);
    auto rows = [&](auto with_residual, auto last_whole) __attribute__((always_inline)) {
      constexpr bool kResidual = decltype(with_residual)::value;
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 2
        for (int v = 0; v < kVectors; ++v) {
          clamp_store<kResidual>(acc[r][v], kResidual ? residual + r * residual_row_stride + v * kLanes : nullptr,
                                 c + r * c_row_stride + v * kLanes, low, high, finish,
                                 decltype(last_whole)::value || v + 1 < kVectors, last_mask);
        }
      }
    };
    with_residual_and_whole(residual != nullptr, last_count == kLanes, rows);
    return;
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    float* const row = c + r * c_row_stride;
    const float* const residual_row = residual ? residual + r * residual_row_stride : nullptr;
#pragma GCC unroll 2
    for (int v = 0; v < kVectors; ++v) {
      const int count = std::min(kLanes, nc - v * kLanes);
      if (count <= 0) break;
      V value = acc[r][v];
      if (finish) {
        if (residual_row) value = add(value, load_part(residual_row + v * kLanes, count));
        value = vmin(high, vmax(low, value));  // NaN passes, as in the scalar kernel
        value = activate(activation, value);
      }
      store_part(row + v * kLanes, value, count);
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE

#endif  // QDQRT_KERNELS_FP32_SGEMM_VECTOR_OPS_H
