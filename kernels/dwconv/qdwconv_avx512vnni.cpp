// AVX-512 depthwise convolution. Three kernels, best first: the vpdpbusd form (run_dot: 4 kernel
// rows per byte-interleaved lane, 3x3/5x5 with int8 weights); row tiles of 16-bit products
// (run_rows: vpdpwssd per tap and 16 channels, input widened to 32-bit lanes, weight in the low 16
// bits); and 2 output pixels x 64 channels per block for any other shape (run).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <cstring>

#include "kernels/dwconv/qdwconv_internal.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels::internal {
namespace {

inline __mmask16 lane_mask(int count) {
  return count >= 16 ? __mmask16(0xFFFF) : count <= 0 ? __mmask16(0) : __mmask16((1u << count) - 1);
}

template <bool kSigned>
inline __m512i widen(__m128i bytes) {
  if constexpr (kSigned) {
    return _mm512_cvtepi8_epi32(bytes);
  } else {
    return _mm512_cvtepu8_epi32(bytes);
  }
}

// Loads 16 channels and widens them to 32-bit lanes. Masked loads cost an extra ALU uop on the
// port the widening needs, so full blocks use plain loads.
template <bool kSigned, bool kFull>
inline __m512i load16(const uint8_t* x, __mmask16 mask) {
  if constexpr (kFull) {
    return widen<kSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  } else {
    return widen<kSigned>(_mm_maskz_loadu_epi8(mask, x));
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
  uint8_t* padding = thread_scratch(ScratchSlot::kPadding, channels + 64);
  std::memset(padding, static_cast<uint8_t>(packed.input_zero_point), channels + 64);
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
    const char* residual0 =
        epilogue.residual ? static_cast<const char*>(epilogue.residual) + p * epilogue.residual_row_stride : nullptr;
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

// Compile-time loop: calls body(std::integral_constant<int, I>) for I in [0, N), so accumulator
// indices are constants and the accumulators stay in registers.
template <int N, typename Body>
[[gnu::always_inline]] inline void static_for(Body&& body) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (body(std::integral_constant<int, I>{}), ...);
  }(
      std::make_integer_sequence<int, N>{});
}

// T output pixels x 16 channels over all kernel rows; columns[ky][q] point at input column q of
// kernel row ky (or the padding row).
template <bool kSigned, bool kFull, int KW, int SW, int T>
inline void accumulate_row_tile(const uint8_t* const* columns, int kernel_height, const int32_t* weights,
                                const int32_t* bias_row, int64_t stride, int c, __mmask16 mask, __m512i (&acc)[T]) {
  constexpr int kColumns = (T - 1) * SW + KW;
  // Start from the (zero-padded) bias: one addition fewer per output vector in the epilogue.
  const __m512i bias = _mm512_loadu_si512(bias_row + c);
  static_for<T>([&](auto j) { acc[j] = bias; });
  for (int ky = 0; ky < kernel_height; ++ky) {
    const int32_t* wrow = weights + static_cast<int64_t>(ky) * KW * stride + c;
    const uint8_t* const* row_columns = columns + ky * kColumns;
    __m512i w[KW];
    static_for<KW>([&](auto kx) {
      w[kx] = kFull ? _mm512_loadu_si512(wrow + kx * stride) : _mm512_maskz_loadu_epi32(mask, wrow + kx * stride);
    });
    static_for<kColumns>([&](auto q) {
      const uint8_t* x = row_columns[q] + c;
      const __m512i xw = kFull ? widen<kSigned>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)))
                               : widen<kSigned>(_mm_maskz_loadu_epi8(mask, x));
      static_for<KW>([&](auto kx) {
        constexpr int offset = static_cast<int>(q) - static_cast<int>(kx);
        if constexpr (offset >= 0 && offset % SW == 0 && offset / SW < T) {
          acc[offset / SW] = _mm512_dpwssd_epi32(acc[offset / SW], xw, w[kx]);
        }
      });
    });
  }
}

// Row-tiled kernel for the common shapes (kernel width KW, stride SW, no dilation): T output
// pixels of one output row x 16 channels. Each input column is widened once per kernel row and
// used by every tap that reads it (up to KW outputs for stride 1), so the widening (port 5) no
// longer limits the vpdpwssd rate; the KW weight vectors of a kernel row stay in registers.
template <bool kSigned, int KW, int SW, int T>
void row_tile(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* image, const uint8_t* padding,
              int out_y, int out_x0, char* out, int64_t out_pixel_bytes, const char* residual,
              int64_t residual_pixel_stride, const Epilogue& epilogue, __m512 clamp_min, __m512 clamp_max) {
  constexpr int kColumns = (T - 1) * SW + KW;
  const int channels = packed.channels;
  const int64_t stride = packed.channels_padded;
  const int output_size = output_element_size(epilogue.output_type);
  const int64_t row_bytes = static_cast<int64_t>(g.input_width) * g.input_pixel_stride;
  const int first_x = out_x0 * SW - g.pad_left;
  // The input column pointers do not depend on the channel: resolve padding once per tile.
  const uint8_t* columns[7 * kColumns];  // kernel height <= 7 (checked by the caller)
  for (int ky = 0; ky < packed.kernel_height; ++ky) {
    const int in_y = out_y * g.stride_height - g.pad_top + ky * g.dilation_height;
    const bool row_inside = in_y >= 0 && in_y < g.input_height;
    for (int q = 0; q < kColumns; ++q) {
      const int in_x = first_x + q;
      columns[ky * kColumns + q] = row_inside && in_x >= 0 && in_x < g.input_width
                                       ? image + in_y * row_bytes + static_cast<int64_t>(in_x) * g.input_pixel_stride
                                       : padding;
    }
  }
  TileArgs t;
  t.row_term = nullptr;
  t.c_row_bytes = out_pixel_bytes;
  t.residual_row_bytes = residual_pixel_stride;
  t.epilogue = &epilogue;
  for (int c = 0; c < channels; c += 16) {
    const int count = channels - c;
    const __mmask16 mask = lane_mask(count);
    __m512i acc[T];
    if (count >= 16) {
      accumulate_row_tile<kSigned, true, KW, SW, T>(columns, packed.kernel_height, packed.weights.data(),
                                                    packed.bias.data(), stride, c, mask, acc);
    } else {
      accumulate_row_tile<kSigned, false, KW, SW, T>(columns, packed.kernel_height, packed.weights.data(),
                                                     packed.bias.data(), stride, c, mask, acc);
    }
    t.bias = packed.bias.data() + c;
    t.multiplier = packed.multiplier.data() + c;
    t.float_bias = packed.float_bias.data() + c;
    t.column0 = c;
    t.c = out + static_cast<int64_t>(c) * output_size;
    t.residual = residual ? residual + c : nullptr;
    const ColumnConstants constants = load_column_constants(t, 0);
    if (plain_epilogue(t)) {
      const PlainStore store = plain_store(t);
      static_for<T>([&](auto j) { store_vector_plain<false>(acc[j], 0, count, j, constants, store); });
    } else if (const PointwiseOp op = single_op_epilogue(t); op != PointwiseOp::kCopy) {
      alignas(64) int32_t stored[T][16];
      static_for<T>([&](auto j) { _mm512_store_si512(stored[j], acc[j]); });
      t.n_valid = count;
      store_block_single_op<false>(op, &stored[0][0], T, 1, t);
    } else {
      static_for<T>([&](auto j) { store_vector<false>(acc[j], 0, count, t, j, constants, clamp_min, clamp_max); });
    }
  }
}

template <bool kSigned, int KW, int SW>
void run_rows(const PackedDepthwise& packed, const DepthwiseGeometry& g, const DepthwiseArgs& args,
              const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  constexpr int kTile = 8;
  uint8_t* padding = thread_scratch(ScratchSlot::kPadding, packed.channels + 64);
  std::memset(padding, static_cast<uint8_t>(packed.input_zero_point), packed.channels + 64);
  const int output_size = output_element_size(epilogue.output_type);
  const int64_t out_pixel_bytes = args.output_pixel_stride * output_size;
  const __m512 clamp_min = _mm512_set1_ps(epilogue.clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(epilogue.clamp_max);
  const int64_t pixels_per_image = static_cast<int64_t>(g.output_height) * g.output_width;
  const int64_t image_bytes = static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
  int64_t p = pixel_begin;
  while (p < pixel_end) {
    const int64_t image_index = p / pixels_per_image;
    const int64_t in_image = p - image_index * pixels_per_image;
    const int out_y = static_cast<int>(in_image / g.output_width);
    int out_x = static_cast<int>(in_image - static_cast<int64_t>(out_y) * g.output_width);
    const int64_t row_end = std::min<int64_t>(pixel_end, p + (g.output_width - out_x));
    const uint8_t* image = static_cast<const uint8_t*>(args.input) + image_index * image_bytes;
    while (p < row_end) {
      const int n = static_cast<int>(std::min<int64_t>(kTile, row_end - p));
      char* out = static_cast<char*>(args.output) + p * out_pixel_bytes;
      const char* residual =
          epilogue.residual ? static_cast<const char*>(epilogue.residual) + p * epilogue.residual_row_stride : nullptr;
      switch (n) {
#define QDQRT_TILE(count)                                                                                           \
  case count:                                                                                                       \
    row_tile<kSigned, KW, SW, count>(packed, g, image, padding, out_y, out_x, out, out_pixel_bytes, residual,       \
                                     epilogue.residual_row_stride, epilogue, clamp_min, clamp_max);                 \
    break;
        QDQRT_TILE(1) QDQRT_TILE(2) QDQRT_TILE(3) QDQRT_TILE(4) QDQRT_TILE(5) QDQRT_TILE(6) QDQRT_TILE(7)
        QDQRT_TILE(8)
#undef QDQRT_TILE
      }
      p += n;
      out_x += n;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// vpdpbusd form (PackedDepthwise::dot_weights): T output pixels of one output row x 64 channels.
// Each input column is loaded once per group of 4 kernel rows, its 4 rows interleaved into bytes
// of 32-bit lanes by two levels of in-lane unpacks (the channels come out in unpack order, as the
// weights and epilogue constants are stored), and serves every kernel column that reads it.

// Lambdas of the hot loops are inlined before GCC decides where the accumulators live: otherwise
// it keeps them in memory.
#define QDQRT_INLINE_LAMBDA __attribute__((always_inline))

// The vector width of a channel block: zmm for 64 channels, ymm (AVX-512VL) for a last block of at
// most 32 channels, so a 32-channel layer does not compute 64.
template <bool kWide>
struct DotVectors;

template <>
struct DotVectors<true> {
  using V = __m512i;
  using F = __m512;
  using Mask = __mmask64;
  static constexpr int kChannels = 64;
  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static V load_masked(Mask m, const void* p) { return _mm512_maskz_loadu_epi8(m, p); }
  static void store(void* p, V v) { _mm512_storeu_si512(p, v); }
  static void store_masked(void* p, Mask m, V v) { _mm512_mask_storeu_epi8(p, m, v); }
  static V set1_epi8(char v) { return _mm512_set1_epi8(v); }
  static V set1_epi16(int16_t v) { return _mm512_set1_epi16(v); }
  static V bit_xor(V a, V b) { return _mm512_xor_si512(a, b); }
  static V unpacklo_epi8(V a, V b) { return _mm512_unpacklo_epi8(a, b); }
  static V unpackhi_epi8(V a, V b) { return _mm512_unpackhi_epi8(a, b); }
  static V unpacklo_epi16(V a, V b) { return _mm512_unpacklo_epi16(a, b); }
  static V unpackhi_epi16(V a, V b) { return _mm512_unpackhi_epi16(a, b); }
  static V dpbusd(V acc, V u, V s) { return _mm512_dpbusd_epi32(acc, u, s); }
  static F load_ps(const float* p) { return _mm512_loadu_ps(p); }
  static F set1_ps(float v) { return _mm512_set1_ps(v); }
  static F fmadd_cvt(V acc, F m, F b) { return _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), m, b); }
  static F clamp(F y, F low, F high) { return _mm512_min_ps(_mm512_max_ps(y, low), high); }
  static V cvtps(F y) { return _mm512_cvtps_epi32(y); }
  static V packs_epi32(V a, V b) { return _mm512_packs_epi32(a, b); }
  static V adds_epi16(V a, V b) { return _mm512_adds_epi16(a, b); }
  static V packus_epi16(V a, V b) { return _mm512_packus_epi16(a, b); }
  static V packs_epi16(V a, V b) { return _mm512_packs_epi16(a, b); }
  static V max_epu8(V a, V b) { return _mm512_max_epu8(a, b); }
  static V min_epu8(V a, V b) { return _mm512_min_epu8(a, b); }
  static V max_epi8(V a, V b) { return _mm512_max_epi8(a, b); }
  static V min_epi8(V a, V b) { return _mm512_min_epi8(a, b); }
  // Unpack order back to channel order (a 4x4 transpose of 128-bit lanes): 16 channels per zmm.
  static void natural_order(const V (&a)[4], __m512i (&n)[4]) {
    const __m512i t0 = _mm512_shuffle_i64x2(a[0], a[1], 0x44), t1 = _mm512_shuffle_i64x2(a[2], a[3], 0x44);
    const __m512i t2 = _mm512_shuffle_i64x2(a[0], a[1], 0xEE), t3 = _mm512_shuffle_i64x2(a[2], a[3], 0xEE);
    n[0] = _mm512_shuffle_i64x2(t0, t1, 0x88);
    n[1] = _mm512_shuffle_i64x2(t0, t1, 0xDD);
    n[2] = _mm512_shuffle_i64x2(t2, t3, 0x88);
    n[3] = _mm512_shuffle_i64x2(t2, t3, 0xDD);
  }
};

template <>
struct DotVectors<false> {
  using V = __m256i;
  using F = __m256;
  using Mask = __mmask32;
  static constexpr int kChannels = 32;
  static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static V load_masked(Mask m, const void* p) { return _mm256_maskz_loadu_epi8(m, p); }
  static void store(void* p, V v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
  static void store_masked(void* p, Mask m, V v) { _mm256_mask_storeu_epi8(p, m, v); }
  static V set1_epi8(char v) { return _mm256_set1_epi8(v); }
  static V set1_epi16(int16_t v) { return _mm256_set1_epi16(v); }
  static V bit_xor(V a, V b) { return _mm256_xor_si256(a, b); }
  static V unpacklo_epi8(V a, V b) { return _mm256_unpacklo_epi8(a, b); }
  static V unpackhi_epi8(V a, V b) { return _mm256_unpackhi_epi8(a, b); }
  static V unpacklo_epi16(V a, V b) { return _mm256_unpacklo_epi16(a, b); }
  static V unpackhi_epi16(V a, V b) { return _mm256_unpackhi_epi16(a, b); }
  static V dpbusd(V acc, V u, V s) { return _mm256_dpbusd_epi32(acc, u, s); }
  static F load_ps(const float* p) { return _mm256_loadu_ps(p); }
  static F set1_ps(float v) { return _mm256_set1_ps(v); }
  static F fmadd_cvt(V acc, F m, F b) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), m, b); }
  static F clamp(F y, F low, F high) { return _mm256_min_ps(_mm256_max_ps(y, low), high); }
  static V cvtps(F y) { return _mm256_cvtps_epi32(y); }
  static V packs_epi32(V a, V b) { return _mm256_packs_epi32(a, b); }
  static V adds_epi16(V a, V b) { return _mm256_adds_epi16(a, b); }
  static V packus_epi16(V a, V b) { return _mm256_packus_epi16(a, b); }
  static V packs_epi16(V a, V b) { return _mm256_packs_epi16(a, b); }
  static V max_epu8(V a, V b) { return _mm256_max_epu8(a, b); }
  static V min_epu8(V a, V b) { return _mm256_min_epu8(a, b); }
  static V max_epi8(V a, V b) { return _mm256_max_epi8(a, b); }
  static V min_epi8(V a, V b) { return _mm256_min_epi8(a, b); }
  // Vector i lane L holds channels 16 L + 4 i + j: channels 0..15 are the low lanes of all four.
  static void natural_order(const V (&a)[4], __m512i (&n)[4]) {
    auto join = [](__m256i low, __m256i high) {
      return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
    };
    n[0] = join(_mm256_permute2x128_si256(a[0], a[1], 0x20), _mm256_permute2x128_si256(a[2], a[3], 0x20));
    n[1] = join(_mm256_permute2x128_si256(a[0], a[1], 0x31), _mm256_permute2x128_si256(a[2], a[3], 0x31));
    n[2] = n[3] = _mm512_setzero_si512();
  }
};

// Lambdas of the hot loops are inlined before GCC decides where the accumulators live: otherwise
// it keeps them in memory.
#define QDQRT_INLINE_LAMBDA __attribute__((always_inline))

// The interleaved column: v[i] holds, in unpack order, channels 16 * lane + 4 * i + j with the
// `kRows` input rows in its bytes (bytes past kRows repeat a row: their weights are zero).
// load(r) returns input row r of the column as stored. always_inline and compile-time indices
// only: otherwise GCC keeps the vectors in memory.
template <typename D, bool kSigned, int kRows, typename Load>
[[gnu::always_inline]] inline void interleave_rows(const Load& load_row, typename D::V& v0, typename D::V& v1,
                                                   typename D::V& v2, typename D::V& v3) {
  using V = typename D::V;
  // x + 128 for signed input (vpdpbusd's first operand is unsigned), on the rows before they
  // are interleaved: kRows flips instead of 4.
  const V sign = D::set1_epi8(static_cast<char>(0x80));
  auto load = [&](int r) QDQRT_INLINE_LAMBDA {
    const V x = load_row(r);
    return kSigned ? D::bit_xor(x, sign) : x;
  };
  const V x0 = load(0);
  const V x1 = kRows > 1 ? load(1) : x0;
  const V x2 = kRows > 2 ? load(2) : x1;
  const V x3 = kRows > 3 ? load(3) : x2;
  const V low01 = D::unpacklo_epi8(x0, x1), high01 = D::unpackhi_epi8(x0, x1);
  const V low23 = D::unpacklo_epi8(x2, x3), high23 = D::unpackhi_epi8(x2, x3);
  v0 = D::unpacklo_epi16(low01, low23);
  v1 = D::unpackhi_epi16(low01, low23);
  v2 = D::unpacklo_epi16(high01, high23);
  v3 = D::unpackhi_epi16(high01, high23);
}

// Where a tile reads its input: at(q, ky) is input column q of the tile in kernel row ky.
// Border tiles: a table resolved per tile (the padding row outside the image).
template <int K>
struct ColumnTable {
  const uint8_t* const (*columns)[K];
  [[gnu::always_inline]] const uint8_t* at(int q, int ky) const { return columns[q][ky]; }
};

// Tiles wholly inside the image: K row pointers (at the tile's first column) and the pixel
// stride, set per output row; nothing resolved per tile.
template <int K>
struct RowBases {
  const uint8_t* rows[K];
  int64_t pixel_stride;
  [[gnu::always_inline]] const uint8_t* at(int q, int ky) const { return rows[ky] + q * pixel_stride; }
};

// T output pixels of one channel block: acc[4 * j + i] is pixel j's vector i (unpack order).
// load(q, ky) is input column q of the tile in kernel row ky, as stored; the weights of row group
// rg and kernel column kx start at weights + (rg * K + kx) * kx_bytes, vector i 4 * kLanes * i bytes on.
template <typename D, bool kSigned, int K, int SW, int T, typename Load>
[[gnu::always_inline]] inline void accumulate_dot_core(const Load& load, const int8_t* weights, int64_t kx_bytes,
                                                       const int32_t* bias, typename D::V (&acc)[4 * T]) {
  constexpr int kColumns = (T - 1) * SW + K;
  constexpr int kGroups = (K + 3) / 4;
  constexpr int kLanes = D::kChannels / 4;  // int32 lanes per vector
  static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { acc[a] = D::load(bias + kLanes * (a % 4)); });
  static_for<kGroups>([&](auto group) QDQRT_INLINE_LAMBDA {
    constexpr int kRows = K - 4 * group < 4 ? K - 4 * group : 4;
    const int8_t* group_weights = weights + group * K * kx_bytes;
    static_for<kColumns>([&](auto q) QDQRT_INLINE_LAMBDA {
      typename D::V v[4];
      auto rows = [&](int r) QDQRT_INLINE_LAMBDA { return load(q, 4 * group + r); };
      interleave_rows<D, kSigned, kRows>(rows, v[0], v[1], v[2], v[3]);
      static_for<K>([&](auto kx) QDQRT_INLINE_LAMBDA {
        constexpr int offset = static_cast<int>(q) - static_cast<int>(kx);
        if constexpr (offset >= 0 && offset % SW == 0 && offset / SW < T) {
          const int8_t* w = group_weights + kx * kx_bytes;
          static_for<4>([&](auto i) QDQRT_INLINE_LAMBDA {
            acc[4 * (offset / SW) + i] = D::dpbusd(acc[4 * (offset / SW) + i], v[i], D::load(w + 4 * kLanes * i));
          });
        }
      });
    });
  });
}

// T output pixels x one channel block from c (the blocks of dot_weights).
template <typename D, bool kSigned, bool kFull, int K, int SW, int T, typename Input>
[[gnu::always_inline]] inline void accumulate_dot(const PackedDepthwise& packed, const Input& input,
                                                  int c, typename D::Mask mask, typename D::V (&acc)[4 * T]) {
  const int64_t dot_channels = packed.dot_channels;
  auto load = [&](int q, int ky) QDQRT_INLINE_LAMBDA {
    return kFull ? D::load(input.at(q, ky) + c) : D::load_masked(mask, input.at(q, ky) + c);
  };
  accumulate_dot_core<D, kSigned, K, SW, T>(load, packed.dot_weights.data() + c * 4, dot_channels * 4,
                                            packed.dot_bias.data() + c, acc);
}

// The int8/uint8 plain epilogue in unpack order: the same float operations as store_vector_plain,
// then in-lane packs (which restore the channel order) instead of one narrowing per vector. The
// clamp keeps every value inside the output type, so the packs' saturation never changes one.
template <typename D>
struct DotPlainStore {
  typename D::F clamp_min, clamp_max;
  typename D::V zero_point16;
  typename D::V low_bytes, high_bytes;  // the clamp after rounding, output units (kIntegerClamp)
  bool unsigned_output;
};

// One block's multipliers and float biases, loaded once for every pixel of a tile.
template <typename D>
struct DotConstants {
  typename D::F multiplier[4], float_bias[4];
};

// The plain store's form (DotStores::mode): kStoreIntegerClamp (PackedDepthwise::dot_bounded, finite
// clamp) runs the activation clamp on the packed bytes, at most 2 instructions per block instead of
// 8 (rounding is monotonic, so clamping before or after it gives the same integers), and only its
// bounds that are not the output type's (kStoreLow, kStoreHigh); kStoreZeroPoint adds a nonzero
// output zero-point. 3 of about 20 instructions per pixel and 64 channels for the common
// ReLU / ReLU6 with zero-point 0.
constexpr int kStoreZeroPoint = 1, kStoreLow = 2, kStoreHigh = 4, kStoreIntegerClamp = 8;

// Calls f(std::integral_constant<int, mode>) for the stores' mode, one of 9.
template <typename F>
[[gnu::always_inline]] inline void with_store_mode(int mode, F&& f) {
  using std::integral_constant;
  switch (mode) {
    case 8: return f(integral_constant<int, 8>{});
    case 9: return f(integral_constant<int, 9>{});
    case 10: return f(integral_constant<int, 10>{});
    case 11: return f(integral_constant<int, 11>{});
    case 12: return f(integral_constant<int, 12>{});
    case 13: return f(integral_constant<int, 13>{});
    case 14: return f(integral_constant<int, 14>{});
    case 15: return f(integral_constant<int, 15>{});
    default: return f(integral_constant<int, kStoreZeroPoint>{});
  }
}

// Takes the accumulators by value: with a reference to the tile's array, GCC keeps that array in
// memory for the whole accumulation.
template <typename D, int kMode>
[[gnu::always_inline]] inline typename D::V dot_plain_bytes(typename D::V a0, typename D::V a1, typename D::V a2,
                                                            typename D::V a3, const DotConstants<D>& k,
                                                            const DotPlainStore<D>& p) {
  using V = typename D::V;
  auto requantize = [&](V acc, auto i) QDQRT_INLINE_LAMBDA {
    const typename D::F y = D::fmadd_cvt(acc, k.multiplier[i], k.float_bias[i]);
    if constexpr ((kMode & kStoreIntegerClamp) != 0) return D::cvtps(y);
    return D::cvtps(D::clamp(y, p.clamp_min, p.clamp_max));
  };
  using std::integral_constant;
  auto zero_point = [&](V words) QDQRT_INLINE_LAMBDA {
    return (kMode & kStoreZeroPoint) != 0 ? D::adds_epi16(words, p.zero_point16) : words;
  };
  const V words01 = zero_point(
      D::packs_epi32(requantize(a0, integral_constant<int, 0>{}), requantize(a1, integral_constant<int, 1>{})));
  const V words23 = zero_point(
      D::packs_epi32(requantize(a2, integral_constant<int, 2>{}), requantize(a3, integral_constant<int, 3>{})));
  V bytes;
  if (p.unsigned_output) {
    bytes = D::packus_epi16(words01, words23);
    if constexpr ((kMode & kStoreLow) != 0) bytes = D::max_epu8(bytes, p.low_bytes);
    if constexpr ((kMode & kStoreHigh) != 0) bytes = D::min_epu8(bytes, p.high_bytes);
  } else {
    bytes = D::packs_epi16(words01, words23);
    if constexpr ((kMode & kStoreLow) != 0) bytes = D::max_epi8(bytes, p.low_bytes);
    if constexpr ((kMode & kStoreHigh) != 0) bytes = D::min_epi8(bytes, p.high_bytes);
  }
  return bytes;
}

template <typename D, bool kFull, int kMode>
[[gnu::always_inline]] inline void store_dot_plain(typename D::V a0, typename D::V a1, typename D::V a2,
                                                   typename D::V a3, const DotConstants<D>& k,
                                                   const DotPlainStore<D>& p, char* out, typename D::Mask mask) {
  const typename D::V bytes = dot_plain_bytes<D, kMode>(a0, a1, a2, a3, k, p);
  if constexpr (kFull) {
    D::store(out, bytes);
  } else {
    D::store_masked(out, mask, bytes);
  }
}

template <typename D, int T>
struct DotAccumulators {
  typename D::V v[4 * T];
};

// Residual, leaky, pointwise-program or fp32 epilogues: back to channel order, then store_vector
// (single-op programs, as EfficientNet's depthwise convolutions have, go to store_dot_op instead).
// Out of line: large.
template <typename D, int T>
[[gnu::noinline]] void store_dot_general(const DotAccumulators<D, T>& acc, const PackedDepthwise& packed, int c,
                                         int count, char* out, int64_t out_pixel_bytes, const char* residual,
                                         const Epilogue& epilogue, __m512 clamp_min, __m512 clamp_max) {
  TileArgs t;
  t.row_term = nullptr;
  t.c_row_bytes = out_pixel_bytes;
  t.residual_row_bytes = epilogue.residual_row_stride;
  t.epilogue = &epilogue;
  t.bias = packed.bias.data() + c;
  t.multiplier = packed.multiplier.data() + c;
  t.float_bias = packed.float_bias.data() + c;
  t.column0 = c;
  t.c = out + static_cast<int64_t>(c) * output_element_size(epilogue.output_type);
  t.residual = residual ? residual + c : nullptr;
  __m512i natural[T][4];
  for (int j = 0; j < T; ++j) {
    const typename D::V pixel[4] = {acc.v[4 * j], acc.v[4 * j + 1], acc.v[4 * j + 2], acc.v[4 * j + 3]};
    D::natural_order(pixel, natural[j]);
  }
  for (int i = 0; i < D::kChannels / 16 && 16 * i < count; ++i) {
    const ColumnConstants constants = load_column_constants(t, 16 * i);
    for (int j = 0; j < T; ++j) {
      store_vector<false>(natural[j][i], 16 * i, count - 16 * i, t, j, constants, clamp_min, clamp_max);
    }
  }
}

// Single-op epilogues (SiLU, sigmoid, ...: single_op_epilogue, as after EfficientNet's depthwise
// convolutions) on zmm accumulators in unpack order, T pixels of 64 channel slots: the op runs
// before the channels go back to their order, on the accumulators as they are (no spill through
// store_block_single_op's channel-order block, no per-row reloads of its column constants). int8/
// uint8 outputs are packed as dot_plain_bytes packs them (the packs' saturation is the saturation
// clamp's lower bound, as in store_rows_single_op_packed); float outputs go back to
// channel order (natural_order) after the op. The same operations per value as store_vector, so
// the same bytes. kGroups = 1: one block of 64 channels from out, `count` of them valid; kGroups = 2:
// the tail layout (dot_tail_block), a 32-channel group per 256-bit half, group g at
// out + g * group_out_bytes, `active` groups of `count` channels each.
template <PointwiseOp kOp, bool kClamp, OutputType kType, int kGroups, int T>
[[gnu::noinline]] void store_dot_op(const DotAccumulators<DotVectors<true>, T>& acc, const float* multiplier,
                                    const float* float_bias, int count, int active, char* out,
                                    int64_t out_pixel_bytes, int64_t group_out_bytes, const Epilogue& e) {
  __m512 m[4], b[4];
  for (int i = 0; i < 4; ++i) {
    m[i] = _mm512_loadu_ps(multiplier + 16 * i);
    b[i] = _mm512_loadu_ps(float_bias + 16 * i);
  }
  const __m512 clamp_min = _mm512_set1_ps(e.clamp_min), clamp_max = _mm512_set1_ps(e.clamp_max);
  const __m512 inverse_scale = _mm512_set1_ps(e.program_inverse_scale);
  const __m512 saturate_max = _mm512_set1_ps(e.saturate_max);
  const __m512i zero_point16 = _mm512_set1_epi16(static_cast<int16_t>(e.output_zero_point));
  for (int j = 0; j < T; ++j) {
    __m512 y[4];
    for (int i = 0; i < 4; ++i) {
      y[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc.v[4 * j + i]), m[i], b[i]);
      if constexpr (kClamp) y[i] = _mm512_min_ps(_mm512_max_ps(y[i], clamp_min), clamp_max);
      y[i] = apply_single_op<kOp>(y[i]);
    }
    char* pixel = out + j * out_pixel_bytes;
    if constexpr (kType == OutputType::kF32) {
      const __m512i unpacked[4] = {_mm512_castps_si512(y[0]), _mm512_castps_si512(y[1]), _mm512_castps_si512(y[2]),
                                   _mm512_castps_si512(y[3])};
      __m512i natural[4];  // 16 channels each: kGroups = 2 holds group k / 2's channels 16 (k % 2)..
      DotVectors<true>::natural_order(unpacked, natural);
      for (int k = 0; k < 4; ++k) {
        const int group = kGroups == 1 ? 0 : k / 2;
        const int first = kGroups == 1 ? 16 * k : 16 * (k % 2);
        if (group >= active) break;
        float* to = reinterpret_cast<float*>(pixel + group * group_out_bytes) + first;
        _mm512_mask_storeu_ps(to, lane_mask(count - first), _mm512_castsi512_ps(natural[k]));
      }
    } else {
      auto quantize = [&](int i) QDQRT_INLINE_LAMBDA {
        return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(y[i], inverse_scale), saturate_max));
      };
      const __m512i words01 = _mm512_adds_epi16(_mm512_packs_epi32(quantize(0), quantize(1)), zero_point16);
      const __m512i words23 = _mm512_adds_epi16(_mm512_packs_epi32(quantize(2), quantize(3)), zero_point16);
      const __m512i bytes = kType == OutputType::kU8 ? _mm512_packus_epi16(words01, words23)
                                                     : _mm512_packs_epi16(words01, words23);
      if constexpr (kGroups == 1) {
        const __mmask64 mask = count >= 64 ? ~__mmask64(0) : (__mmask64(1) << count) - 1;
        _mm512_mask_storeu_epi8(pixel, mask, bytes);
      } else {
        const __mmask32 mask = count >= 32 ? ~__mmask32(0) : (__mmask32(1) << count) - 1;
        _mm256_mask_storeu_epi8(pixel, mask, _mm512_castsi512_si256(bytes));
        if (active > 1) _mm256_mask_storeu_epi8(pixel + group_out_bytes, mask, _mm512_extracti64x4_epi64(bytes, 1));
      }
    }
  }
}

// store_dot_op for a last block of at most 32 channels (DotVectors<false>, four ymm per pixel):
// pixel j's vectors 0/2 and 1/3 joined into two zmm (vector i's lane L holds channels
// 16 L + 4 i + 0..3), so the op runs on full zmm; int8 packs of the joined vectors leave
// dot_plain_bytes's two ymm word vectors in the zmm's halves.
template <PointwiseOp kOp, bool kClamp, OutputType kType, int kGroups, int T>
[[gnu::noinline]] void store_dot_op(const DotAccumulators<DotVectors<false>, T>& acc, const float* multiplier,
                                    const float* float_bias, int count, int /*active*/, char* out,
                                    int64_t out_pixel_bytes, int64_t /*group_out_bytes*/, const Epilogue& e) {
  static_assert(kGroups == 1);
  auto join = [](__m256i low, __m256i high) { return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1); };
  auto join_ps = [](const float* p) {  // floats p[0..7] and p[16..23]
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p)), _mm256_loadu_ps(p + 16), 1);
  };
  const __m512 m02 = join_ps(multiplier), m13 = join_ps(multiplier + 8);
  const __m512 b02 = join_ps(float_bias), b13 = join_ps(float_bias + 8);
  const __m512 clamp_min = _mm512_set1_ps(e.clamp_min), clamp_max = _mm512_set1_ps(e.clamp_max);
  const __m512 inverse_scale = _mm512_set1_ps(e.program_inverse_scale);
  const __m512 saturate_max = _mm512_set1_ps(e.saturate_max);
  const __m512i zero_point16 = _mm512_set1_epi16(static_cast<int16_t>(e.output_zero_point));
  // Channels 0..15 are lanes 0 of vectors 0, 1, 2, 3, i.e. lanes 0, 4 (second operand), 2, 6 of
  // the joined pair; channels 16..31 the lanes 1.
  const __m512i low_order = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i high_order = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int j = 0; j < T; ++j) {
    auto value = [&](__m512i sum, __m512 m, __m512 b) QDQRT_INLINE_LAMBDA {
      __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), m, b);
      if constexpr (kClamp) y = _mm512_min_ps(_mm512_max_ps(y, clamp_min), clamp_max);
      return apply_single_op<kOp>(y);
    };
    const __m512 y02 = value(join(acc.v[4 * j], acc.v[4 * j + 2]), m02, b02);
    const __m512 y13 = value(join(acc.v[4 * j + 1], acc.v[4 * j + 3]), m13, b13);
    char* pixel = out + j * out_pixel_bytes;
    if constexpr (kType == OutputType::kF32) {
      float* to = reinterpret_cast<float*>(pixel);
      const __m512i low02 = _mm512_castps_si512(y02), low13 = _mm512_castps_si512(y13);
      _mm512_mask_storeu_ps(to, lane_mask(count),
                            _mm512_castsi512_ps(_mm512_permutex2var_epi64(low02, low_order, low13)));
      _mm512_mask_storeu_ps(to + 16, lane_mask(count - 16),
                            _mm512_castsi512_ps(_mm512_permutex2var_epi64(low02, high_order, low13)));
    } else {
      auto quantize = [&](__m512 y) QDQRT_INLINE_LAMBDA {
        return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_mul_ps(y, inverse_scale), saturate_max));
      };
      const __m512i words = _mm512_adds_epi16(_mm512_packs_epi32(quantize(y02), quantize(y13)), zero_point16);
      const __m256i low = _mm512_castsi512_si256(words), high = _mm512_extracti64x4_epi64(words, 1);
      const __m256i bytes = kType == OutputType::kU8 ? _mm256_packus_epi16(low, high) : _mm256_packs_epi16(low, high);
      const __mmask32 mask = count >= 32 ? ~__mmask32(0) : (__mmask32(1) << count) - 1;
      _mm256_mask_storeu_epi8(pixel, mask, bytes);
    }
  }
}

// store_dot_op for the epilogue's op (op from single_op_epilogue, not kCopy), activation clamp
// and output type; out is the first pixel's channel 0, c the block's first channel.
template <int kGroups, typename D, int T>
void store_dot_op(PointwiseOp op, const DotAccumulators<D, T>& acc, const float* multiplier,
                  const float* float_bias, int c, int count, int active, char* out, int64_t out_pixel_bytes,
                  int64_t group_out_bytes, const Epilogue& e) {
  const bool clamped =
      e.clamp_min > -std::numeric_limits<float>::max() || e.clamp_max < std::numeric_limits<float>::max();
  out += static_cast<int64_t>(c) * output_element_size(e.output_type);
  auto run = [&](auto kind, auto clamp, auto type) {
    store_dot_op<decltype(kind)::value, decltype(clamp)::value, decltype(type)::value, kGroups, T>(
        acc, multiplier, float_bias, count, active, out, out_pixel_bytes, group_out_bytes, e);
  };
  auto with_type = [&](auto kind, auto clamp) {
    using Type = OutputType;
    switch (e.output_type) {
      case Type::kF32: return run(kind, clamp, std::integral_constant<Type, Type::kF32>{});
      case Type::kU8: return run(kind, clamp, std::integral_constant<Type, Type::kU8>{});
      default: return run(kind, clamp, std::integral_constant<Type, Type::kS8>{});
    }
  };
  auto with_clamp = [&](auto kind) {
    clamped ? with_type(kind, std::true_type{}) : with_type(kind, std::false_type{});
  };
  using Op = PointwiseOp;
  switch (op) {
    case Op::kSilu: return with_clamp(std::integral_constant<Op, Op::kSilu>{});
    case Op::kSigmoid: return with_clamp(std::integral_constant<Op, Op::kSigmoid>{});
    case Op::kHardSwish: return with_clamp(std::integral_constant<Op, Op::kHardSwish>{});
    case Op::kGelu: return with_clamp(std::integral_constant<Op, Op::kGelu>{});
    default: return with_clamp(std::integral_constant<Op, Op::kTanh>{});
  }
}

// One channel block (from c, `count` channels left) of a tile.
template <typename D, bool kSigned, int K, int SW, int T, typename Input>
[[gnu::always_inline]] inline void dot_block(const PackedDepthwise& packed, const Input& input, int c,
                                             int count, bool plain, int mode, PointwiseOp op,
                                             const DotPlainStore<D>& store, char* out, int64_t out_pixel_bytes,
                                             const char* residual, const Epilogue& epilogue, __m512 clamp_min,
                                             __m512 clamp_max) {
  using Mask = typename D::Mask;
  const bool full = count >= D::kChannels;
  const Mask mask = full ? Mask(~Mask(0)) : Mask((Mask(1) << count) - 1);
  typename D::V acc[4 * T];
  if (full) {
    accumulate_dot<D, kSigned, true, K, SW, T>(packed, input, c, mask, acc);
  } else {
    accumulate_dot<D, kSigned, false, K, SW, T>(packed, input, c, mask, acc);
  }
  if (plain) {
    constexpr int kLanes = D::kChannels / 4;
    DotConstants<D> k;
    static_for<4>([&](auto i) QDQRT_INLINE_LAMBDA {
      k.multiplier[i] = D::load_ps(packed.dot_multiplier.data() + c + kLanes * i);
      k.float_bias[i] = D::load_ps(packed.dot_float_bias.data() + c + kLanes * i);
    });
    auto store_all = [&]<bool kFull>(auto store_mode) QDQRT_INLINE_LAMBDA {
      constexpr int kMode = decltype(store_mode)::value;
      static_for<T>([&](auto j) QDQRT_INLINE_LAMBDA {
        store_dot_plain<D, kFull, kMode>(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3], k, store,
                                         out + j * out_pixel_bytes + c, mask);
      });
    };
    if (full) {
      with_store_mode(mode, [&](auto m) QDQRT_INLINE_LAMBDA { store_all.template operator()<true>(m); });
    } else {
      with_store_mode(mode, [&](auto m) QDQRT_INLINE_LAMBDA { store_all.template operator()<false>(m); });
    }
    return;
  }
  DotAccumulators<D, T> copy;  // a copy: the accumulators themselves never escape (else GCC keeps them in memory)
  static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { copy.v[a] = acc[a]; });
  if (op != PointwiseOp::kCopy) {
    store_dot_op<1>(op, copy, packed.dot_multiplier.data() + c, packed.dot_float_bias.data() + c, c, count, 1, out,
                    out_pixel_bytes, 0, epilogue);
    return;
  }
  store_dot_general<D, T>(copy, packed, c, count, out, out_pixel_bytes, residual, epilogue, clamp_min, clamp_max);
}

template <typename D>
[[gnu::always_inline]] inline DotPlainStore<D> dot_plain_store(const Epilogue& epilogue, bool integer_clamp) {
  DotPlainStore<D> store;
  store.clamp_min = D::set1_ps(epilogue.clamp_min);
  store.clamp_max = D::set1_ps(epilogue.clamp_max);
  store.zero_point16 = D::set1_epi16(static_cast<int16_t>(epilogue.output_zero_point));
  store.low_bytes = store.high_bytes = D::set1_epi8(0);
  store.unsigned_output = epilogue.output_type == OutputType::kU8;
  if (integer_clamp) {
    const int low = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_min)) + epilogue.output_zero_point;
    const int high = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_max)) + epilogue.output_zero_point;
    store.low_bytes = D::set1_epi8(static_cast<char>(low));
    store.high_bytes = D::set1_epi8(static_cast<char>(high));
  }
  return store;
}

// The epilogue's form and constants, set once per call.
struct DotStores {
  bool plain = false;  // int8/uint8 output without residual, leaky slope or program
  int mode = kStoreZeroPoint;  // the plain store's form (kStore*)
  PointwiseOp op = PointwiseOp::kCopy;  // not kCopy: a single-op epilogue for store_dot_op
  DotPlainStore<DotVectors<true>> wide;
  DotPlainStore<DotVectors<false>> narrow;

  DotStores(const PackedDepthwise& packed, const Epilogue& epilogue) {
    plain = epilogue.residual == nullptr && !epilogue.leaky && epilogue.program == nullptr &&
            epilogue.output_type != OutputType::kF32;
    const bool integer_clamp = plain && packed.dot_bounded && std::fabs(epilogue.clamp_min) <= 0x1p20f &&
                               std::fabs(epilogue.clamp_max) <= 0x1p20f;
    wide = dot_plain_store<DotVectors<true>>(epilogue, integer_clamp);
    narrow = dot_plain_store<DotVectors<false>>(epilogue, integer_clamp);
    TileArgs t;  // single_op_epilogue reads the epilogue, the row term and the residual
    t.epilogue = &epilogue;
    t.row_term = nullptr;
    t.residual = static_cast<const char*>(epilogue.residual);
    op = single_op_epilogue(t);
    if (integer_clamp) {
      // The clamp bounds (in [type min, type max]: clamp_min/max include the saturation) that cut.
      const bool u8 = epilogue.output_type == OutputType::kU8;
      const int low = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_min)) + epilogue.output_zero_point;
      const int high = _mm_cvtss_si32(_mm_set_ss(epilogue.clamp_max)) + epilogue.output_zero_point;
      mode = kStoreIntegerClamp | (epilogue.output_zero_point != 0 ? kStoreZeroPoint : 0) |
             (low > (u8 ? 0 : -128) ? kStoreLow : 0) | (high < (u8 ? 255 : 127) ? kStoreHigh : 0);
    }
  }
};

// Every channel block of one tile.
template <bool kSigned, int K, int SW, int T, typename Input>
[[gnu::always_inline]] inline void dot_tile_blocks(const PackedDepthwise& packed, const Input& input, char* out,
                                                   int64_t out_pixel_bytes, const char* residual,
                                                   const Epilogue& epilogue, const DotStores& stores,
                                                   __m512 clamp_min, __m512 clamp_max) {
  const int channels = packed.channels;
  int c = 0;
  for (; channels - c > 32; c += 64) {
    dot_block<DotVectors<true>, kSigned, K, SW, T>(packed, input, c, channels - c, stores.plain, stores.mode,
                                                   stores.op, stores.wide, out, out_pixel_bytes, residual, epilogue, clamp_min,
                                                   clamp_max);
  }
  if (c < channels) {  // a last block of at most 32 channels
    dot_block<DotVectors<false>, kSigned, K, SW, T>(packed, input, c, channels - c, stores.plain, stores.mode,
                                                    stores.op, stores.narrow, out, out_pixel_bytes, residual, epilogue,
                                                    clamp_min, clamp_max);
  }
}

// ---------------------------------------------------------------------------------------------
// Layers of 17..32 channels (PackedDepthwise::dot_tail_groups): G = 2 tiles of one output row per
// zmm, a 256-bit half each in the 32-channel layout. On ymm, one tile at a time, such a layer ran
// at 0.7 of the time of a 64-channel one (MobileNetV2's 112x112x32: 20% of peak); this way at 0.6.
// As the tail of wider layers it measured slower than the ymm block (its loads leave L1 between
// the passes, and border groups resolve G column tables), so those keep the ymm block.

// Inside the image, the G tiles T pixels apart: K row pointers at group 0's first column.
template <int K>
struct GroupedRows {
  const uint8_t* rows[K];
  int64_t pixel_stride, group_step;
  [[gnu::always_inline]] const uint8_t* at(int q, int ky, int g) const {
    return rows[ky] + q * pixel_stride + g * group_step;
  }
};

// Border tiles, or fewer than G tiles (the missing ones repeat tile 0): columns[g * kColumns + q][ky].
template <int K, int kColumns>
struct GroupedTable {
  const uint8_t* const (*columns)[K];
  [[gnu::always_inline]] const uint8_t* at(int q, int ky, int g) const { return columns[g * kColumns + q][ky]; }
};

// One zmm of 2 halves of 32 channels from channel c.
template <bool kFull>
[[gnu::always_inline]] inline __m512i load_grouped(const uint8_t* p0, const uint8_t* p1, int c, uint32_t mask) {
  auto half = [&](const uint8_t* p) QDQRT_INLINE_LAMBDA {
    return kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + c))
                 : _mm256_maskz_loadu_epi8(__mmask32(mask), p + c);
  };
  return _mm512_inserti64x4(_mm512_castsi256_si512(half(p0)), half(p1), 1);
}

// Group g's 32 bytes of a zmm, stored at p.
template <int g, bool kFull>
[[gnu::always_inline]] inline void store_grouped(char* p, __m512i bytes, uint32_t mask) {
  const __m256i half = _mm512_extracti64x4_epi64(bytes, g);
  kFull ? _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), half) : _mm256_mask_storeu_epi8(p, __mmask32(mask), half);
}

// `active` (1..G) tiles of T pixels, tile g's output at out + g * group_out_bytes.
template <bool kSigned, bool kFull, int K, int SW, int T, int G, typename Input>
[[gnu::always_inline]] inline void dot_tail_block(const PackedDepthwise& packed, const Input& input, int active,
                                                  char* out, int64_t group_out_bytes, int64_t out_pixel_bytes,
                                                  const char* residual, int64_t group_residual_bytes,
                                                  const Epilogue& epilogue, const DotStores& stores,
                                                  __m512 clamp_min, __m512 clamp_max) {
  using D = DotVectors<true>;
  const int c = packed.dot_channels - 32;
  const int count = packed.channels - c;
  const uint32_t mask = kFull ? ~0u : (1u << count) - 1;  // count < 32 when not full
  auto load = [&](int q, int ky) QDQRT_INLINE_LAMBDA {
    return load_grouped<kFull>(input.at(q, ky, 0), input.at(q, ky, 1), c, mask);
  };
  D::V acc[4 * T];
  accumulate_dot_core<D, kSigned, K, SW, T>(load, packed.dot_tail_weights.data(), 4 * 64, packed.dot_tail_bias.data(),
                                            acc);
  if (stores.plain) {
    DotConstants<D> k;
    static_for<4>([&](auto i) QDQRT_INLINE_LAMBDA {
      k.multiplier[i] = D::load_ps(packed.dot_tail_multiplier.data() + 16 * i);
      k.float_bias[i] = D::load_ps(packed.dot_tail_float_bias.data() + 16 * i);
    });
    with_store_mode(stores.mode, [&](auto store_mode) QDQRT_INLINE_LAMBDA {
      constexpr int kMode = decltype(store_mode)::value;
      static_for<T>([&](auto j) QDQRT_INLINE_LAMBDA {
        const __m512i bytes = dot_plain_bytes<D, kMode>(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3],
                                                        k, stores.wide);
        char* pixel = out + j * out_pixel_bytes + c;
        static_for<G>([&](auto g) QDQRT_INLINE_LAMBDA {
          if (g < active) store_grouped<g, kFull>(pixel + g * group_out_bytes, bytes, mask);
        });
      });
    });
    return;
  }
  if constexpr (G == 2) {
    if (stores.op != PointwiseOp::kCopy) {
      DotAccumulators<D, T> copy;
      static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { copy.v[a] = acc[a]; });
      store_dot_op<2>(stores.op, copy, packed.dot_tail_multiplier.data(), packed.dot_tail_float_bias.data(), c,
                      count, active, out, out_pixel_bytes, group_out_bytes, epilogue);
      return;
    }
  }
  static_for<G>([&](auto g) QDQRT_INLINE_LAMBDA {
    if (g >= active) return;
    DotAccumulators<DotVectors<false>, T> copy;
    static_for<4 * T>([&](auto a) QDQRT_INLINE_LAMBDA { copy.v[a] = _mm512_extracti64x4_epi64(acc[a], g); });
    store_dot_general<DotVectors<false>, T>(copy, packed, c, count, out + g * group_out_bytes, out_pixel_bytes,
                                            residual ? residual + g * group_residual_bytes : nullptr, epilogue,
                                            clamp_min, clamp_max);
  });
}

template <bool kSigned, int K, int SW, int T, int G, typename Input>
[[gnu::noinline]] void dot_tail_tiles(const PackedDepthwise& packed, const Input& input, int active, char* out,
                                      int64_t group_out_bytes, int64_t out_pixel_bytes, const char* residual,
                                      int64_t group_residual_bytes, const Epilogue& epilogue, const DotStores& stores,
                                      __m512 clamp_min, __m512 clamp_max) {
  if (packed.channels - (packed.dot_channels - 32) == 64 / G) {
    dot_tail_block<kSigned, true, K, SW, T, G>(packed, input, active, out, group_out_bytes, out_pixel_bytes, residual,
                                               group_residual_bytes, epilogue, stores, clamp_min, clamp_max);
  } else {
    dot_tail_block<kSigned, false, K, SW, T, G>(packed, input, active, out, group_out_bytes, out_pixel_bytes, residual,
                                                group_residual_bytes, epilogue, stores, clamp_min, clamp_max);
  }
}

// The tile width run_dot uses with `left` pixels of a row left.
inline int dot_tile_width(int left, int tile = 4) {
  return left <= tile ? left : left < 2 * tile ? (left + 1) / 2 : tile;
}

// The tail block over `left` pixels of output row out_y from out_x: the same tiles as run_dot,
// up to G consecutive ones of equal width per call.
template <bool kSigned, int K, int SW, int G>
void dot_tail_row(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* image,
                  const uint8_t* padding, int out_y, int out_x, int left, char* out, int64_t out_pixel_bytes,
                  const char* residual, const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min,
                  __m512 clamp_max) {
  const int64_t row_bytes = static_cast<int64_t>(g.input_width) * g.input_pixel_stride;
  const int first_y = out_y * g.stride_height - g.pad_top;
  const bool rows_inside = first_y >= 0 && first_y + K <= g.input_height;
  while (left > 0) {
    const int n = dot_tile_width(left);
    int active = 1;
    while (active < G && left - active * n > 0 && dot_tile_width(left - active * n) == n) ++active;
    const int first_x = out_x * SW - g.pad_left;
    const int last_x = first_x + (active * n - 1) * SW + K;  // one past the last column read
    const int64_t group_out_bytes = n * out_pixel_bytes;
    const int64_t group_residual_bytes = n * epilogue.residual_row_stride;
    auto run = [&]<int T>() {
      constexpr int kColumns = (T - 1) * SW + K;
      if (active == G && rows_inside && first_x >= 0 && last_x <= g.input_width) {
        GroupedRows<K> rows;
        rows.pixel_stride = g.input_pixel_stride;
        rows.group_step = static_cast<int64_t>(T) * SW * g.input_pixel_stride;
        for (int ky = 0; ky < K; ++ky) rows.rows[ky] = image + (first_y + ky) * row_bytes + first_x * g.input_pixel_stride;
        dot_tail_tiles<kSigned, K, SW, T, G>(packed, rows, active, out, group_out_bytes, out_pixel_bytes, residual,
                                             group_residual_bytes, epilogue, stores, clamp_min, clamp_max);
        return;
      }
      const uint8_t* columns[G * kColumns][K];
      for (int group = 0; group < G; ++group) {
        const int x0 = first_x + (group < active ? group : 0) * T * SW;
        for (int ky = 0; ky < K; ++ky) {
          const int in_y = first_y + ky;
          const bool row_inside = in_y >= 0 && in_y < g.input_height;
          for (int q = 0; q < kColumns; ++q) {
            const int in_x = x0 + q;
            columns[group * kColumns + q][ky] =
                row_inside && in_x >= 0 && in_x < g.input_width
                    ? image + in_y * row_bytes + static_cast<int64_t>(in_x) * g.input_pixel_stride
                    : padding;
          }
        }
      }
      dot_tail_tiles<kSigned, K, SW, T, G>(packed, GroupedTable<K, kColumns>{columns}, active, out, group_out_bytes,
                                           out_pixel_bytes, residual, group_residual_bytes, epilogue, stores,
                                           clamp_min, clamp_max);
    };
    switch (n) {
      case 1: run.template operator()<1>(); break;
      case 2: run.template operator()<2>(); break;
      case 3: run.template operator()<3>(); break;
      default: run.template operator()<4>(); break;
    }
    left -= active * n;
    out_x += active * n;
    out += active * group_out_bytes;
    if (residual) residual += active * group_residual_bytes;
  }
}

// One tile wholly inside the image: `rows` point at its first input column in each kernel row.
// Stride 2 and single tiles run through this: through dot_tiles_inside (even with one tile per
// call) stride-2 tiles measured 1-3.7 points slower on the Zen 4, 14x14 stride-1 layers 1-2.
template <bool kSigned, int K, int SW, int T>
void dot_tile_inside(const PackedDepthwise& packed, const RowBases<K>& rows, char* out, int64_t out_pixel_bytes,
                     const char* residual, const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min,
                     __m512 clamp_max) {
  dot_tile_blocks<kSigned, K, SW, T>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores, clamp_min,
                                     clamp_max);
}

// `tiles` consecutive tiles of one output row wholly inside the image: `rows` point at the first
// tile's first input column in each kernel row. One call per run of tiles, not per tile.
template <bool kSigned, int K, int SW, int T>
void dot_tiles_inside(const PackedDepthwise& packed, RowBases<K> rows, int tiles, char* out, int64_t out_pixel_bytes,
                      const char* residual, const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min,
                      __m512 clamp_max) {
  const int64_t step = static_cast<int64_t>(T) * SW * rows.pixel_stride;
  for (int t = 0; t < tiles; ++t) {
    dot_tile_blocks<kSigned, K, SW, T>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores, clamp_min,
                                       clamp_max);
    for (int ky = 0; ky < K; ++ky) rows.rows[ky] += step;
    out += T * out_pixel_bytes;
    if (residual) residual += T * epilogue.residual_row_stride;
  }
}

// A tile that reads padding: its column pointers resolved here.
template <bool kSigned, int K, int SW, int T>
void dot_tile(const PackedDepthwise& packed, const DepthwiseGeometry& g, const uint8_t* image, const uint8_t* padding,
              int out_y, int out_x0, char* out, int64_t out_pixel_bytes, const char* residual,
              const Epilogue& epilogue, const DotStores& stores, __m512 clamp_min, __m512 clamp_max) {
  constexpr int kColumns = (T - 1) * SW + K;
  const int64_t row_bytes = static_cast<int64_t>(g.input_width) * g.input_pixel_stride;
  const int first_x = out_x0 * SW - g.pad_left;
  // columns[q][ky]: input column q of kernel row ky, or the padding row; resolved once per tile.
  const uint8_t* columns[kColumns][K];
  for (int ky = 0; ky < K; ++ky) {
    const int in_y = out_y * g.stride_height - g.pad_top + ky;
    const bool row_inside = in_y >= 0 && in_y < g.input_height;
    for (int q = 0; q < kColumns; ++q) {
      const int in_x = first_x + q;
      columns[q][ky] = row_inside && in_x >= 0 && in_x < g.input_width
                           ? image + in_y * row_bytes + static_cast<int64_t>(in_x) * g.input_pixel_stride
                           : padding;
    }
  }
  dot_tile_blocks<kSigned, K, SW, T>(packed, ColumnTable<K>{columns}, out, out_pixel_bytes, residual, epilogue, stores,
                                     clamp_min, clamp_max);
}

// Splits each output row of [pixel_begin, pixel_end) into tiles of at most kTile pixels (a
// remainder between kTile and 2 * kTile in two near-equal tiles). The row pointers are set once
// per output row; only tiles that read padding resolve their columns one by one. Layers of 17..32
// channels (dot_tail_groups) run whole rows through dot_tail_row instead.
template <bool kSigned, int K, int SW>
void run_dot(const PackedDepthwise& packed, const DepthwiseGeometry& g, const DepthwiseArgs& args,
             const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  // 3x3 stride 2 reads 2 T + 1 columns per tile: 5 pixels share the per-tile work (bias,
  // constants, calls) over one more pixel than 4 (+0.5-0.8 points on the Zen 4). Not 5x5: its
  // 32-channel tail block then measured 2 points slower (56x56x144).
  constexpr int kTile = SW == 2 && K == 3 ? 5 : 4;
  uint8_t* padding = thread_scratch(ScratchSlot::kPadding, packed.dot_channels + 64);
  std::memset(padding, static_cast<uint8_t>(packed.input_zero_point), packed.dot_channels + 64);
  const int output_size = output_element_size(epilogue.output_type);
  const int64_t out_pixel_bytes = args.output_pixel_stride * output_size;
  const __m512 clamp_min = _mm512_set1_ps(epilogue.clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(epilogue.clamp_max);
  const DotStores stores(packed, epilogue);
  const int64_t pixels_per_image = static_cast<int64_t>(g.output_height) * g.output_width;
  const int64_t image_bytes = static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
  int64_t p = pixel_begin;
  while (p < pixel_end) {
    const int64_t image_index = p / pixels_per_image;
    const int64_t in_image = p - image_index * pixels_per_image;
    const int out_y = static_cast<int>(in_image / g.output_width);
    int out_x = static_cast<int>(in_image - static_cast<int64_t>(out_y) * g.output_width);
    const int64_t row_end = std::min<int64_t>(pixel_end, p + (g.output_width - out_x));
    const uint8_t* image = static_cast<const uint8_t*>(args.input) + image_index * image_bytes;
    if (packed.dot_tail_groups) {  // 17..32 channels: the whole row, 2 tiles per vector
      char* out = static_cast<char*>(args.output) + p * out_pixel_bytes;
      const char* residual =
          epilogue.residual ? static_cast<const char*>(epilogue.residual) + p * epilogue.residual_row_stride : nullptr;
      dot_tail_row<kSigned, K, SW, 2>(packed, g, image, padding, out_y, out_x, static_cast<int>(row_end - p), out,
                                      out_pixel_bytes, residual, epilogue, stores, clamp_min, clamp_max);
      p = row_end;
      continue;
    }
    const int first_y = out_y * g.stride_height - g.pad_top;
    const bool rows_inside = first_y >= 0 && first_y + K <= g.input_height;
    RowBases<K> rows;
    rows.pixel_stride = g.input_pixel_stride;
    while (p < row_end) {
      const int left = static_cast<int>(row_end - p);
      const int n = dot_tile_width(left, kTile);
      char* out = static_cast<char*>(args.output) + p * out_pixel_bytes;
      const char* residual =
          epilogue.residual ? static_cast<const char*>(epilogue.residual) + p * epilogue.residual_row_stride : nullptr;
      const int first_x = out_x * SW - g.pad_left;
      const bool inside = rows_inside && first_x >= 0 && first_x + (n - 1) * SW + K <= g.input_width;
      int tiles = 1;  // full tiles inside the image from here on (each n = kTile)
      if (inside) {
        for (int ky = 0; ky < K; ++ky) {
          rows.rows[ky] = image + (static_cast<int64_t>(first_y + ky) * g.input_width + first_x) * g.input_pixel_stride;
        }
        if (SW == 1 && n == kTile) {
          for (;;) {
            const int next_left = left - tiles * kTile;
            const int next_x = first_x + tiles * kTile * SW;
            if ((next_left >= 2 * kTile || next_left == kTile) && next_x + (kTile - 1) * SW + K <= g.input_width) {
              ++tiles;
            } else {
              break;
            }
          }
        }
      }
      switch (n) {
#define QDQRT_TILE(count)                                                                                           \
  case count:                                                                                                       \
    if (inside && (SW != 1 || tiles == 1)) {                                                                        \
      dot_tile_inside<kSigned, K, SW, count>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores,        \
                                             clamp_min, clamp_max);                                                 \
    } else if (inside) {                                                                                            \
      dot_tiles_inside<kSigned, K, SW, count>(packed, rows, tiles, out, out_pixel_bytes, residual, epilogue, stores, \
                                              clamp_min, clamp_max);                                                \
    } else {                                                                                                        \
      dot_tile<kSigned, K, SW, count>(packed, g, image, padding, out_y, out_x, out, out_pixel_bytes, residual,      \
                                      epilogue, stores, clamp_min, clamp_max);                                      \
    }                                                                                                               \
    break;
        QDQRT_TILE(1) QDQRT_TILE(2) QDQRT_TILE(3) QDQRT_TILE(4)
        case 5:
          if constexpr (kTile == 5) {
            if (inside) {
              dot_tile_inside<kSigned, K, SW, 5>(packed, rows, out, out_pixel_bytes, residual, epilogue, stores,
                                                 clamp_min, clamp_max);
            } else {
              dot_tile<kSigned, K, SW, 5>(packed, g, image, padding, out_y, out_x, out, out_pixel_bytes, residual,
                                          epilogue, stores, clamp_min, clamp_max);
            }
          }
          break;
#undef QDQRT_TILE
      }
      p += tiles * n;
      out_x += tiles * n;
    }
  }
}

// Picks the vpdpbusd form, else the row-tiled kernel when the shape has one, else the general
// per-pixel kernel.
template <bool kSigned>
void run_any(const PackedDepthwise& packed, const DepthwiseGeometry& g, const DepthwiseArgs& args,
             const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const bool plain = g.dilation_width == 1 && packed.kernel_height <= 7;
  const int kw = packed.kernel_width, sw = g.stride_width;
  if (packed.dot_channels > 0 && g.dilation_width == 1 && g.dilation_height == 1) {
    if (kw == 3 && sw == 1) return run_dot<kSigned, 3, 1>(packed, g, args, epilogue, pixel_begin, pixel_end);
    if (kw == 3 && sw == 2) return run_dot<kSigned, 3, 2>(packed, g, args, epilogue, pixel_begin, pixel_end);
    if (kw == 5 && sw == 1) return run_dot<kSigned, 5, 1>(packed, g, args, epilogue, pixel_begin, pixel_end);
    if (kw == 5 && sw == 2) return run_dot<kSigned, 5, 2>(packed, g, args, epilogue, pixel_begin, pixel_end);
  }
  if (plain && kw == 3 && sw == 1) return run_rows<kSigned, 3, 1>(packed, g, args, epilogue, pixel_begin, pixel_end);
  if (plain && kw == 3 && sw == 2) return run_rows<kSigned, 3, 2>(packed, g, args, epilogue, pixel_begin, pixel_end);
  if (plain && kw == 5 && sw == 1) return run_rows<kSigned, 5, 1>(packed, g, args, epilogue, pixel_begin, pixel_end);
  if (plain && kw == 5 && sw == 2) return run_rows<kSigned, 5, 2>(packed, g, args, epilogue, pixel_begin, pixel_end);
  run<kSigned>(packed, g, args, epilogue, pixel_begin, pixel_end);
}

}  // namespace

void depthwise_run_avx512vnni(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                              const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  if (packed.input_signed) {
    run_any<true>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  } else {
    run_any<false>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  }
}

}  // namespace qdqrt::kernels::internal
