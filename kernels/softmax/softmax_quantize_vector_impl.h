// The fused Softmax + QuantizeLinear kernel with GCC vector extensions, compiled per ISA file:
// softmax_quantize_avx2.cpp (8 lanes) and softmax_quantize_avx512skx.cpp (16 lanes) define
// QDQRT_SOFTMAX_LANES and QDQRT_SOFTMAX_NAMESPACE. Bit-exact with softmax_quantize_scalar.cpp:
// the same vexp, the 16 partial sums in column order (8 lanes: one accumulator for the even and
// one for the odd vectors) and their fixed halving, the same rounding (vcvtps2dq, half to even =
// nearbyint) and saturation (kernels/vector_quantize_inl.h).
#if !defined(QDQRT_SOFTMAX_LANES) || !defined(QDQRT_SOFTMAX_NAMESPACE)
#error "define QDQRT_SOFTMAX_LANES and QDQRT_SOFTMAX_NAMESPACE before including softmax_quantize_vector_impl.h"
#endif

#include <immintrin.h>

#include <cstring>

// GCC 12 reports the intrinsics' undefined pass-through operands (as layer_norm_vector_impl.h).
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/softmax/softmax_quantize.h"

#define QDQRT_VECTOR_LANES QDQRT_SOFTMAX_LANES
#include "kernels/vector_math_inl.h"
#include "kernels/vector_quantize_inl.h"
#undef QDQRT_VECTOR_LANES

namespace qdqrt::kernels {
namespace {
namespace softmaxvec {

constexpr size_t kLanes = QDQRT_SOFTMAX_LANES;
using vmath::load;
using vmath::splat;
using vmath::store;
using vmath::vf;
using vmath::vi;

// The 16 partial sums (softmax_quantize.h): one zmm, or two ymm (columns 16k..16k+7 and
// 16k+8..16k+15), halved to the total in the definition's order.
struct Partials {
  vf low = {};
#if QDQRT_SOFTMAX_LANES == 8
  vf high = {};
#endif
  // Adds vector number `index` of the row (kLanes columns from index * kLanes).
  void add(vf e, size_t index) {
#if QDQRT_SOFTMAX_LANES == 16
    (void)index;
    low += e;
#else
    if (index % 2 == 0) {
      low += e;
    } else {
      high += e;
    }
#endif
  }
  float total() const {
#if QDQRT_SOFTMAX_LANES == 16
    const __m256 q = _mm256_add_ps(_mm512_castps512_ps256((__m512)low), _mm512_extractf32x8_ps((__m512)low, 1));
#else
    const __m256 q = _mm256_add_ps((__m256)low, (__m256)high);
#endif
    const __m128 r = _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1));
    const __m128 s = _mm_add_ps(r, _mm_movehl_ps(r, r));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
  }
};

// The largest lane (max is exact in any order: every ISA finds the same value).
inline float horizontal_max(vf v) {
#if QDQRT_SOFTMAX_LANES == 16
  return _mm512_reduce_max_ps((__m512)v);
#else
  __m128 half = _mm_max_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  half = _mm_max_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_max_ss(half, _mm_shuffle_ps(half, half, 1)));
#endif
}

// Columns [c, c + valid) of a row, `fill` in the lanes past the row's end (masked loads: no
// store-to-load forwarding stall on the short rows of attention).
inline vf load_tail(const float* in, size_t valid, vf fill) {
#if QDQRT_SOFTMAX_LANES == 16
  const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
  return (vf)_mm512_mask_loadu_ps((__m512)fill, mask, in);
#else
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), lanes);
  return (vf)_mm256_blendv_ps((__m256)fill, _mm256_maskload_ps(in, mask), _mm256_castsi256_ps(mask));
#endif
}

// The first `valid` lanes of v, zeros after them.
inline vf zero_past(vf v, size_t valid) {
#if QDQRT_SOFTMAX_LANES == 16
  return (vf)_mm512_maskz_mov_ps(static_cast<__mmask16>((1u << valid) - 1u), (__m512)v);
#else
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return (vf)_mm256_and_ps((__m256)v, _mm256_castsi256_ps(mask));
#endif
}

// The low bytes of the first `valid` lanes to out[0, valid).
inline void store_low_bytes_tail(vi codes, size_t valid, uint8_t* out) {
#if QDQRT_SOFTMAX_LANES == 16
  _mm512_mask_cvtepi32_storeu_epi8(out, static_cast<__mmask16>((1u << valid) - 1u), (__m512i)codes);
#else
  int32_t lanes[kLanes];
  std::memcpy(lanes, &codes, sizeof lanes);
  for (size_t lane = 0; lane < valid; ++lane) out[lane] = static_cast<uint8_t>(lanes[lane]);
#endif
}

// exp(x[c] - max) of columns [c, c + kLanes) (the tail: `valid` lanes read, the others 0).
inline vf exponentials(const float* in, size_t valid, vf max_vector) {
  if (valid == kLanes) return vmath::vexp(load(in) - max_vector);
  return zero_past(vmath::vexp(load_tail(in, valid, max_vector) - max_vector), valid);
}

}  // namespace softmaxvec
}  // namespace

namespace QDQRT_SOFTMAX_NAMESPACE {

void softmax_quantize(const SoftmaxQuantizeParams& params, const float* x, void* y) {
  using namespace softmaxvec;
  const size_t columns = params.columns;
  const size_t vectors = (columns + kLanes - 1) / kLanes;
  const bool keep = columns <= kSoftmaxStackColumns;
  const float inverse_scale = 1.0f / params.y_scale;
  const vmath::QuantizeBounds bounds(params.y_zero_point, params.y_signed);
  alignas(64) float kept[kSoftmaxStackColumns + kLanes];
  for (size_t row = 0; row < params.rows; ++row) {
    const float* in = x + row * columns;
    uint8_t* out = static_cast<uint8_t*>(y) + row * columns;
    const size_t full = columns - columns % kLanes;
    vf max_vector = splat(in[0]);
    for (size_t c = 0; c < full; c += kLanes) max_vector = vmath::vmax(load(in + c), max_vector);
    if (full < columns) max_vector = vmath::vmax(load_tail(in + full, columns - full, max_vector), max_vector);
    max_vector = splat(horizontal_max(max_vector));

    Partials partials;
    for (size_t v = 0; v < vectors; ++v) {
      const size_t c = v * kLanes;
      const vf e = exponentials(in + c, columns - c < kLanes ? columns - c : kLanes, max_vector);
      if (keep) store(kept + c, e);
      partials.add(e, v);
    }
    const vf multiplier = splat((1.0f / partials.total()) * inverse_scale);

    for (size_t c = 0; c < full; c += kLanes) {
      const vf e = keep ? load(kept + c) : exponentials(in + c, kLanes, max_vector);
      vmath::store_low_bytes(vmath::quantize_codes(e, multiplier, bounds), out + c);
    }
    if (full < columns) {
      const size_t valid = columns - full;
      const vf e = keep ? load(kept + full) : exponentials(in + full, valid, max_vector);
      store_low_bytes_tail(vmath::quantize_codes(e, multiplier, bounds), valid, out + full);
    }
  }
}

}  // namespace QDQRT_SOFTMAX_NAMESPACE
}  // namespace qdqrt::kernels
