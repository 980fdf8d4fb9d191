// AVX-512 VNNI depthwise convolution of any shape: 2 output pixels x 64 channels per block,
// vpdpwssd per tap and 16 channels (input widened to 32-bit lanes, weight in the low 16 bits).
// Kernel name: qs8-qc8w-dwconv-<KH>x<KW>p64c-fp32-avx512vnni.
#include <cstring>

#include "kernels/dwconv/qdwconv_avx512vnni_inl.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels::internal {
namespace {

// Loads 16 channels and widens them to 32-bit lanes. Masked loads cost an extra ALU uop on the
// port the widening needs, so full blocks use plain loads.
template <bool kSigned, bool kFull>
inline __m512i load16(const uint8_t* x, __mmask16 mask) {
  if constexpr (kFull) {
    return Avx512Vectors::widen<InputByte<kSigned>>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  } else {
    return Avx512Vectors::widen<InputByte<kSigned>>(_mm_maskz_loadu_epi8(mask, x));
  }
}

template <bool kFull>
inline __m512i load_weights(const int32_t* w, __mmask16 mask) {
  if constexpr (kFull) {
    return _mm512_loadu_si512(w);
  } else {
    return _mm512_maskz_loadu_epi32(mask, w);
  }
}

// Accumulates 2 pixels x 64 channels over all taps.
template <bool kSigned, bool kFull>
inline void accumulate_block(const uint8_t* const* taps0, const uint8_t* const* taps1, int taps, int c,
                             const int32_t* w, int64_t stride, int remaining, __m512i (&a)[4], __m512i (&b)[4]) {
  const __mmask16 m0 = lane_mask(remaining), m1 = lane_mask(remaining - 16);
  const __mmask16 m2 = lane_mask(remaining - 32), m3 = lane_mask(remaining - 48);
  __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512(), a2 = _mm512_setzero_si512();
  __m512i a3 = _mm512_setzero_si512(), b0 = _mm512_setzero_si512(), b1 = _mm512_setzero_si512();
  __m512i b2 = _mm512_setzero_si512(), b3 = _mm512_setzero_si512();
  for (int tap = 0; tap < taps; ++tap) {
    const uint8_t* x = taps0[tap] + c;
    const uint8_t* y = taps1[tap] + c;
    const int32_t* wt = w + tap * stride;
    const __m512i w0 = load_weights<kFull>(wt, m0);
    const __m512i w1 = load_weights<kFull>(wt + 16, m1);
    const __m512i w2 = load_weights<kFull>(wt + 32, m2);
    const __m512i w3 = load_weights<kFull>(wt + 48, m3);
    a0 = _mm512_dpwssd_epi32(a0, load16<kSigned, kFull>(x, m0), w0);
    b0 = _mm512_dpwssd_epi32(b0, load16<kSigned, kFull>(y, m0), w0);
    a1 = _mm512_dpwssd_epi32(a1, load16<kSigned, kFull>(x + 16, m1), w1);
    b1 = _mm512_dpwssd_epi32(b1, load16<kSigned, kFull>(y + 16, m1), w1);
    a2 = _mm512_dpwssd_epi32(a2, load16<kSigned, kFull>(x + 32, m2), w2);
    b2 = _mm512_dpwssd_epi32(b2, load16<kSigned, kFull>(y + 32, m2), w2);
    a3 = _mm512_dpwssd_epi32(a3, load16<kSigned, kFull>(x + 48, m3), w3);
    b3 = _mm512_dpwssd_epi32(b3, load16<kSigned, kFull>(y + 48, m3), w3);
  }
  a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
  b[0] = b0; b[1] = b1; b[2] = b2; b[3] = b3;
}


// Two output pixels x 64 channels: 8 independent vpdpwssd chains (one chain per pixel would be
// bound by the instruction's latency).
template <bool kSigned>
void run(const PackedDepthwise& packed, const DepthwiseGeometry& geometry, const DepthwiseArgs& args,
         const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const int taps = packed.kernel_height * packed.kernel_width;
  const int channels = packed.channels;
  const int64_t stride = packed.channels_padded;
  // Per-thread scratch: the tap pointers of two pixels and one padding row.
  const uint8_t** taps0 = reinterpret_cast<const uint8_t**>(
      thread_scratch(ScratchSlot::kTapPointers, 2 * taps * sizeof(const uint8_t*)));
  const uint8_t* padding = padding_row(packed, channels);
  const uint8_t** taps1 = taps0 + taps;
  DepthwisePixelWalker walker(packed, geometry, static_cast<const uint8_t*>(args.input), padding, pixel_begin);
  const int output_size = output_element_size(epilogue.output_type);
  const __m512 clamp_min = _mm512_set1_ps(epilogue.clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(epilogue.clamp_max);
  TileArgs t0, t1;
  t0.row_term = t1.row_term = nullptr;
  t0.c_row_bytes = t1.c_row_bytes = 0;
  t0.residual_row_bytes = t1.residual_row_bytes = 0;
  t0.epilogue = t1.epilogue = &epilogue;
  for (int64_t p = pixel_begin; p < pixel_end; p += 2) {
    const bool pair = p + 1 < pixel_end;
    walker.next(taps0);
    if (pair) {
      walker.next(taps1);
    } else {
      for (int tap = 0; tap < taps; ++tap) taps1[tap] = taps0[tap];  // computed, not stored
    }
    char* out0 = static_cast<char*>(args.output) + p * args.output_pixel_stride * output_size;
    char* out1 = out0 + args.output_pixel_stride * output_size;
    const char* residual0 = residual_pixel(epilogue, p);
    const char* residual1 = residual0 ? residual0 + epilogue.residual_row_stride : nullptr;
    for (int c = 0; c < channels; c += 64) {
      const int remaining = channels - c;
      const int32_t* w = packed.weights.data() + c;
      __m512i a[4], b[4];
      if (remaining >= 64) {
        accumulate_block<kSigned, true>(taps0, taps1, taps, c, w, stride, remaining, a, b);
      } else {
        accumulate_block<kSigned, false>(taps0, taps1, taps, c, w, stride, remaining, a, b);
      }
      t0.bias = t1.bias = packed.bias.data() + c;
      t0.multiplier = t1.multiplier = packed.multiplier.data() + c;
      t0.float_bias = t1.float_bias = packed.float_bias.data() + c;
      t0.column0 = t1.column0 = c;
      t0.c = out0 + static_cast<int64_t>(c) * output_size;
      t1.c = out1 + static_cast<int64_t>(c) * output_size;
      t0.residual = residual0 ? residual0 + c : nullptr;
      t1.residual = residual1 ? residual1 + c : nullptr;
      for (int v = 0; v < 4; ++v) store_vector(a[v], 16 * v, remaining - 16 * v, t0, 0, clamp_min, clamp_max);
      if (pair) {
        for (int v = 0; v < 4; ++v) store_vector(b[v], 16 * v, remaining - 16 * v, t1, 0, clamp_min, clamp_max);
      }
    }
  }
}

}  // namespace

void depthwise_pixels_avx512vnni(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                                 const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  if (packed.input_signed) {
    run<true>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  } else {
    run<false>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  }
}

}  // namespace qdqrt::kernels::internal
