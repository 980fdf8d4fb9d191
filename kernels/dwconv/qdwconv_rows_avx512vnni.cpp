// AVX-512 VNNI depthwise convolution in row tiles, for 3x3 and 5x5 kernels at stride 1 or 2
// without horizontal dilation (kernel height <= 7): up to 8 output pixels of one row x 16 channels,
// vpdpwssd per tap (input widened to 32-bit lanes, weight in the low 16 bits). Kernel name:
// qs8-qc8w-dwconv-<KH>x<KW>p16c-fp32-avx512vnni.
#include <algorithm>
#include <cstring>

#include "kernels/dwconv/qdwconv_avx512vnni_inl.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels::internal {
namespace {

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
      using V = Avx512Vectors;
      const __m512i xw = kFull ? V::widen<InputByte<kSigned>>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)))
                               : V::widen<InputByte<kSigned>>(_mm_maskz_loadu_epi8(mask, x));
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
  const uint8_t* padding = padding_row(packed, packed.channels);
  const int output_size = output_element_size(epilogue.output_type);
  const int64_t out_pixel_bytes = args.output_pixel_stride * output_size;
  const __m512 clamp_min = _mm512_set1_ps(epilogue.clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(epilogue.clamp_max);
  int64_t p = pixel_begin;
  while (p < pixel_end) {
    DepthwiseRowSpan span = depthwise_row_span(g, args, p, pixel_end);
    while (p < span.row_end) {
      const int n = static_cast<int>(std::min<int64_t>(kTile, span.row_end - p));
      char* out = static_cast<char*>(args.output) + p * out_pixel_bytes;
      const char* residual = residual_pixel(epilogue, p);
      switch (n) {
#define QDQRT_TILE(count)                                                                                          \
  case count:                                                                                                      \
    row_tile<kSigned, KW, SW, count>(packed, g, span.image, padding, span.out_y, span.out_x, out, out_pixel_bytes, \
                                     residual, epilogue.residual_row_stride, epilogue, clamp_min, clamp_max);      \
    break;
        QDQRT_TILE(1) QDQRT_TILE(2) QDQRT_TILE(3) QDQRT_TILE(4) QDQRT_TILE(5) QDQRT_TILE(6) QDQRT_TILE(7) QDQRT_TILE(8)
#undef QDQRT_TILE
      }
      p += n;
      span.out_x += n;
    }
  }
}

template <bool kSigned>
void run_rows_of_shape(const PackedDepthwise& packed, const DepthwiseGeometry& g, const DepthwiseArgs& args,
                       const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  const int kw = packed.kernel_width, sw = g.stride_width;
  if (kw == 3 && sw == 1) return run_rows<kSigned, 3, 1>(packed, g, args, epilogue, pixel_begin, pixel_end);
  if (kw == 3 && sw == 2) return run_rows<kSigned, 3, 2>(packed, g, args, epilogue, pixel_begin, pixel_end);
  if (kw == 5 && sw == 1) return run_rows<kSigned, 5, 1>(packed, g, args, epilogue, pixel_begin, pixel_end);
  if (kw == 5 && sw == 2) return run_rows<kSigned, 5, 2>(packed, g, args, epilogue, pixel_begin, pixel_end);
}

}  // namespace

void depthwise_rows_avx512vnni(const PackedDepthwise& packed, const DepthwiseGeometry& geometry,
                               const DepthwiseArgs& args, const Epilogue& epilogue, int pixel_begin, int pixel_end) {
  if (packed.input_signed) {
    run_rows_of_shape<true>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  } else {
    run_rows_of_shape<false>(packed, geometry, args, epilogue, pixel_begin, pixel_end);
  }
}

}  // namespace qdqrt::kernels::internal
