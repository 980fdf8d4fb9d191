// The fused Softmax + QuantizeLinear kernel with GCC vector extensions, compiled per ISA file:
// softmax_quantize_avx2.cpp (8 lanes) and softmax_quantize_avx512skx.cpp (16 lanes) define
// QDQRT_SOFTMAX_LANES and QDQRT_SOFTMAX_NAMESPACE. Bit-exact with softmax_quantize_scalar.cpp:
// the same vexp, the 8 partial sums in column order (a 16-lane vector adds its low then its high
// half), the same rounding (vroundps to nearest even = nearbyint) and saturation.
#if !defined(QDQRT_SOFTMAX_LANES) || !defined(QDQRT_SOFTMAX_NAMESPACE)
#error "define QDQRT_SOFTMAX_LANES and QDQRT_SOFTMAX_NAMESPACE before including softmax_quantize_vector_impl.h"
#endif

#include <immintrin.h>

#include <cstring>

// GCC 12 reports the intrinsics' undefined pass-through operands (as layer_norm_vector_impl.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
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
typedef float v8f __attribute__((vector_size(8 * sizeof(float))));

// The vector's lanes added to the 8 partial sums in column order.
inline v8f add_to_partials(v8f partials, vf e) {
#if QDQRT_SOFTMAX_LANES == 16
  partials += (v8f)_mm512_castps512_ps256((__m512)e);
  return partials + (v8f)_mm512_extractf32x8_ps((__m512)e, 1);
#else
  return partials + e;
#endif
}

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
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return (vf)_mm256_and_ps((__m256)v, _mm256_castsi256_ps(mask));
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
  const vf inverse_scale = splat(1.0f / params.y_scale);
  const vf zero_point = splat(static_cast<float>(params.y_zero_point));
  const vf low = splat(params.y_signed ? -128.0f : 0.0f), high = splat(params.y_signed ? 127.0f : 255.0f);
  alignas(64) float kept[kSoftmaxStackColumns + kLanes];
  for (size_t row = 0; row < params.rows; ++row) {
    const float* in = x + row * columns;
    uint8_t* out = static_cast<uint8_t*>(y) + row * columns;
    const size_t full = columns - columns % kLanes;
    vf max_vector = splat(in[0]);
    for (size_t c = 0; c < full; c += kLanes) max_vector = vmath::vmax(load(in + c), max_vector);
    if (full < columns) max_vector = vmath::vmax(load_tail(in + full, columns - full, max_vector), max_vector);
    max_vector = splat(horizontal_max(max_vector));

    v8f partials = {};
    for (size_t v = 0; v < vectors; ++v) {
      const size_t c = v * kLanes;
      const vf e = exponentials(in + c, columns - c < kLanes ? columns - c : kLanes, max_vector);
      if (keep) store(kept + c, e);
      partials = add_to_partials(partials, e);
    }
    const float sum = ((partials[0] + partials[4]) + (partials[2] + partials[6])) +
                      ((partials[1] + partials[5]) + (partials[3] + partials[7]));
    const vf inverse_sum = splat(1.0f / sum);

    for (size_t v = 0; v < vectors; ++v) {
      const size_t c = v * kLanes, valid = columns - c < kLanes ? columns - c : kLanes;
      const vf e = keep ? load(kept + c) : exponentials(in + c, valid, max_vector);
      const vi codes = vmath::quantize_codes(e * inverse_sum, inverse_scale, zero_point, low, high);
      if (valid == kLanes) {
        vmath::store_low_bytes(codes, out + c);
      } else {
        for (size_t lane = 0; lane < valid; ++lane) out[c + lane] = static_cast<uint8_t>(codes[lane]);
      }
    }
  }
}

}  // namespace QDQRT_SOFTMAX_NAMESPACE
}  // namespace qdqrt::kernels
