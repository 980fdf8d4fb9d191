// The stem form of the INT8 convolution (PackedConv::stem_weights): an image of at most 4
// channels, per output row the window rows interleaved column by column into a stack buffer that
// the GEMM's register tiles read in place. Portable: the buffer is built with 4-byte moves, the
// products run in the GEMM of the packed ISA (run_gemm on the buffer as a plain matrix).
//
// Why: the implicit GEMM gathers each output pixel's K = KH * KW * C bytes into a panel in
// KH copies of KW * C bytes (9 for a 3x3 over 3 channels). Those copies overlap (each is a 16-byte
// move), and a 4-byte lane of the tile that straddles two of them waits on store forwarding; the
// gather dominated the 3x3 stem's time (docs/kernels.md, "INT8 stems"). Interleaving the rows per column makes a
// window contiguous, so the pixel rows of the "matrix" are simply stride_width * KH * C bytes apart.
#include "kernels/conv/qconv_stem.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernels/conv/qconv.h"
#include "kernels/dispatch.h"

namespace qdqrt::kernels {

namespace {

// Stack bytes for one chunk of an output row's columns (3 x 7 rows x 780 columns of a 7x7 stem);
// longer rows run in chunks of output pixels.
constexpr int kStemBufferBytes = 16 * 1024;
// Bytes past the last column: what the builders may write there, and the k padding lanes of the
// last pixel's window (read, multiplied by zero weights; zeroed after each build).
constexpr int kStemSlackBytes = internal::kStemVectorBytes;
constexpr int kStemMaxRows = 64;  // kernel rows (row pointers on the stack)

inline uint32_t load_word(const uint8_t* p) {
  uint32_t word;
  std::memcpy(&word, p, 4);
  return word;
}
inline void store_word(uint8_t* p, uint32_t word) { std::memcpy(p, &word, 4); }

// Each C-byte piece is one 4-byte store in increasing address order, so the (4 - C) bytes it
// writes past its piece are overwritten by the next piece (or land in the slack).
template <int C>
void build_columns(const internal::StemColumnsArgs& a) {
  const int column_bytes = a.kernel_height * C;
  const uint32_t flip4 = 0x01010101u * a.flip;
  const uint32_t pad4 = 0x01010101u * a.pad;
  // Input columns below fast_end may be read as a whole word: x * stride + 4 stays inside the
  // row's last pixel (which may end the tensor).
  const int64_t last_word = static_cast<int64_t>(a.input_width - 1) * a.pixel_stride + C - 4;
  const int fast_end =
      last_word < 0 ? 0 : static_cast<int>(std::min<int64_t>(a.input_width, last_word / a.pixel_stride + 1));
  for (int j = 0; j < a.count; ++j) {
    uint8_t* column = a.out + static_cast<int64_t>(j) * column_bytes;
    const int x = a.p_begin + j - a.pad_left;
    if (x < 0 || x >= a.input_width) {
      std::memset(column, a.pad, column_bytes);
      continue;
    }
    const int64_t offset = static_cast<int64_t>(x) * a.pixel_stride;
    int ky = 0;
    for (; ky < a.ky_begin; ++ky) store_word(column + ky * C, pad4);
    if (x < fast_end) {
      for (; ky < a.ky_end; ++ky) store_word(column + ky * C, load_word(a.rows[ky] + offset) ^ flip4);
    } else {
      for (; ky < a.ky_end; ++ky) {
        for (int c = 0; c < C; ++c) column[ky * C + c] = a.rows[ky][offset + c] ^ a.flip;
      }
    }
    for (; ky < a.kernel_height; ++ky) store_word(column + ky * C, pad4);
  }
}

// The vector builder's shuffles for this geometry (chunk_columns 0 when a column or the input
// bytes of a chunk exceed one vector).
void plan_stem_columns(int channels, int kernel_height, int64_t pixel_stride, internal::StemColumnsPlan& plan) {
  const int column_bytes = kernel_height * channels;
  plan.chunk_columns = 0;
  if (column_bytes > internal::kStemVectorBytes || pixel_stride < channels) return;
  const int64_t by_input = (internal::kStemVectorBytes - channels) / pixel_stride + 1;
  const int chunk = static_cast<int>(std::min<int64_t>(internal::kStemVectorBytes / column_bytes, by_input));
  for (int ky = 0; ky < kernel_height; ++ky) {
    plan.mask[ky] = 0;
    std::memset(plan.index[ky], 0, sizeof(plan.index[ky]));
    for (int q = 0; q < chunk; ++q) {
      for (int c = 0; c < channels; ++c) {
        const int j = q * column_bytes + ky * channels + c;
        plan.index[ky][j] = static_cast<uint8_t>(q * pixel_stride + c);
        plan.mask[ky] |= uint64_t{1} << j;
      }
    }
  }
  plan.chunk_columns = chunk;
  // The bytes a chunk reads span (chunk - 1) * pixel_stride + channels from its first column's;
  // the next chunk's start chunk * pixel_stride later.
  const int64_t span = static_cast<int64_t>(chunk - 1) * pixel_stride + channels;
  const int64_t step = static_cast<int64_t>(chunk) * pixel_stride;
  plan.group_chunks = static_cast<int>(std::max<int64_t>(1, (internal::kStemVectorBytes - span) / step + 1));
}

}  // namespace

namespace scalar {
void conv_stem_columns(const internal::StemColumnsArgs& args) {
  switch (args.channels) {
    case 1: return build_columns<1>(args);
    case 2: return build_columns<2>(args);
    case 3: return build_columns<3>(args);
    default: return build_columns<4>(args);
  }
}
}  // namespace scalar

void derive_conv_stem(PackedConv& packed, Isa isa) {
  packed.stem_weights = PackedGemm{};
  if (packed.depthwise || packed.groups != 1 || packed.group_weights.size() != 1) return;
  if (packed.input_channels < 1 || packed.input_channels > kConvStemMaxChannels) return;
  if (packed.kernel_height * packed.kernel_width <= 1) return;
  const PackedGemm& source = packed.group_weights[0];
  const int channels = packed.input_channels, kh = packed.kernel_height, kw = packed.kernel_width;
  const int k = kh * kw * channels;
  if (source.weight_zero_point_s8 != 0 || source.k != k || source.k_group <= 0 ||
      source.k_padded % source.k_group != 0 || source.k_padded < k || source.nr <= 0 ||
      source.n_padded % source.nr != 0) {
    return;
  }
  // AMX-INT8 shares the avx512vnni layouts. Its tiles run a stem whose window fills most of a
  // whole number of 64-byte tile rows (conv_stem_fills_amx_tiles): k is padded to that, the tile
  // rows reading on into the next windows' bytes against zero weights, so no k tail is copied. The
  // others run the avx512vnni stem tiles there (docs/decisions.md).
  const bool amx = usable_isa(isa) == Isa::kAmxInt8 && source.k_group == 4 && conv_stem_fills_amx_tiles(k);
  const Isa stem_isa = amx ? Isa::kAmxInt8 : source.isa == Isa::kAmxInt8 ? Isa::kAvx512Vnni : source.isa;
  // The stem's own tile where it has one (dispatch: AVX-512 VNNI 12x32 for 17..32 channels), else
  // the conv's; AMX: 64 columns, or 16 for up to 16 channels.
  const internal::GemmImplementation* tile =
      amx ? gemm_implementation(stem_isa, source.n > 16 ? 64 : 16) : conv_stem_implementation(stem_isa, source.n);
  const int nr = tile != nullptr ? tile->nr : source.nr;
  PackedGemm stem;
  stem.isa = stem_isa;
  stem.n = source.n;
  stem.nr = nr;
  stem.k_group = source.k_group;
  stem.element_size = source.element_size;
  stem.k_padded = amx ? static_cast<int>(amx_padded_k(k)) : source.k_padded;
  stem.n_padded = (source.n + nr - 1) / nr * nr;
  stem.weight_zero_point_s8 = 0;
  stem.bounded = source.bounded;  // the padding lanes add nothing to any bound
  stem.bias.resize(stem.n_padded);
  stem.multiplier.resize(stem.n_padded);
  stem.float_bias.resize(stem.n_padded);
  for (int n = 0; n < source.n; ++n) {
    stem.bias[n] = source.bias[n];
    stem.multiplier[n] = source.multiplier[n];
    stem.float_bias[n] = source.float_bias[n];
  }
  const int64_t element = source.element_size;
  stem.data.resize(static_cast<size_t>(stem.n_padded) * stem.k_padded * element);  // zeroed: padding stays zero
  const int8_t* from = source.data.data();
  int8_t* to = stem.data.data();
  for (int n = 0; n < source.n; ++n) {
    for (int ky = 0; ky < kh; ++ky) {
      for (int kx = 0; kx < kw; ++kx) {
        for (int c = 0; c < channels; ++c) {
          const int gather_k = (ky * kw + kx) * channels + c;  // the implicit GEMM's (ky, kx, c)
          const int stem_k = (kx * kh + ky) * channels + c;    // a buffer column's (kx, ky, c)
          std::memcpy(to + packed_weight_index(stem.k_padded, nr, source.k_group, n, stem_k) * element,
                      from + packed_weight_index(source.k_padded, source.nr, source.k_group, n, gather_k) * element,
                      static_cast<size_t>(element));
        }
      }
    }
  }
  stem.k = stem.k_padded;
  // The buffer holds the unsigned-domain bytes (int8 inputs flipped while it is built).
  stem.input_zero_point = static_cast<uint8_t>(source.input_zero_point) ^ (source.input_signed ? 0x80 : 0x00);
  stem.input_signed = false;
  packed.stem_weights = std::move(stem);
}

// At least two tile rows, three quarters of them used: ResNet-50's 7x7 over 3 channels (147 of
// 192 bytes) ran 26% faster on the AMX tiles, MobileNetV2's 3x3 over 3 (27 of 64) 70% slower.
bool conv_stem_fills_amx_tiles(int k) {
  const int64_t tile_bytes = amx_padded_k(k);
  return tile_bytes >= 128 && 4 * k >= 3 * tile_bytes;
}

bool conv_stem_applies(const PackedConv& packed, const ConvShape& shape) {
  if (packed.stem_weights.n <= 0 || shape.dilation_width != 1 || packed.kernel_height > kStemMaxRows) return false;
  // The widest window and its k padding must fit the buffer.
  const int64_t window_bytes = static_cast<int64_t>(packed.kernel_width) * packed.kernel_height * packed.input_channels;
  return window_bytes + kStemSlackBytes <= kStemBufferBytes;
}

namespace internal {

void run_conv_stem(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args, const Epilogue& epilogue,
                   int pixel_begin, int pixel_end, int n_begin, int n_end) {
  assert(conv_stem_applies(packed, shape));
  const PackedGemm& weights = packed.stem_weights;
  const PackedGemm& source = packed.group_weights[0];
  const int channels = packed.input_channels, kh = packed.kernel_height, kw = packed.kernel_width;
  const int column_bytes = kh * channels;
  const int64_t row_stride = static_cast<int64_t>(shape.stride_width) * column_bytes;
  const uint8_t flip = source.input_signed ? 0x80 : 0x00;
  const uint8_t pad = static_cast<uint8_t>(weights.input_zero_point);
  // Output pixels per chunk: their columns (stride * (pixels - 1) + kw) fit the buffer.
  const int max_columns = (kStemBufferBytes - kStemSlackBytes) / column_bytes;
  const int chunk_pixels = std::max(1, (max_columns - kw) / shape.stride_width + 1);
  alignas(64) uint8_t buffer[kStemBufferBytes];
  StemColumnsPlan plan;
  StemColumnsFn build = conv_stem_columns_kernel(weights.isa);
  if (build != scalar::conv_stem_columns) {
    plan_stem_columns(channels, kh, args.input_pixel_stride, plan);
    if (plan.chunk_columns == 0) build = scalar::conv_stem_columns;
  }

  const int64_t image_pixels = static_cast<int64_t>(shape.output_height) * shape.output_width;
  const int64_t image_bytes = static_cast<int64_t>(shape.input_height) * shape.input_width * args.input_pixel_stride;
  const int output_size = output_element_size(epilogue.output_type);
  const uint8_t* input = static_cast<const uint8_t*>(args.input);
  char* output = static_cast<char*>(args.output);
  const uint8_t* rows[kStemMaxRows];
  StemColumnsArgs columns_args;
  columns_args.rows = rows;
  columns_args.input_end =
      input +
      (static_cast<int64_t>(shape.batch) * shape.input_height * shape.input_width - 1) * args.input_pixel_stride +
      channels;
  columns_args.kernel_height = kh;
  columns_args.channels = channels;
  columns_args.pixel_stride = args.input_pixel_stride;
  columns_args.input_width = shape.input_width;
  columns_args.pad_left = shape.pad_left;
  columns_args.pad = pad;
  columns_args.flip = flip;
  columns_args.out = buffer;
  columns_args.plan = &plan;
  int pixel = pixel_begin;
  while (pixel < pixel_end) {
    const int64_t image = pixel / image_pixels;
    const int64_t in_image = pixel - image * image_pixels;
    const int oy = static_cast<int>(in_image / shape.output_width);
    const int ox = static_cast<int>(in_image - static_cast<int64_t>(oy) * shape.output_width);
    const int count = std::min({pixel_end - pixel, shape.output_width - ox, chunk_pixels});
    // Kernel rows inside the image: a contiguous range (y grows with ky).
    int ky_begin = kh, ky_end = 0;
    for (int ky = 0; ky < kh; ++ky) {
      const int y = oy * shape.stride_height - shape.pad_top + ky * shape.dilation_height;
      if (y < 0 || y >= shape.input_height) continue;
      ky_begin = std::min(ky_begin, ky);
      ky_end = ky + 1;
      rows[ky] = input + image * image_bytes + static_cast<int64_t>(y) * shape.input_width * args.input_pixel_stride;
    }
    if (ky_begin >= ky_end) ky_begin = ky_end = 0;
    const int columns = (count - 1) * shape.stride_width + kw;
    columns_args.ky_begin = ky_begin;
    columns_args.ky_end = ky_end;
    columns_args.p_begin = ox * shape.stride_width;
    columns_args.count = columns;
    build(columns_args);
    std::memset(buffer + static_cast<int64_t>(columns) * column_bytes, 0, kStemSlackBytes);
    Epilogue chunk_epilogue = epilogue;
    if (epilogue.residual) {
      chunk_epilogue.residual =
          static_cast<const uint8_t*>(epilogue.residual) + static_cast<int64_t>(pixel) * epilogue.residual_row_stride;
    }
    GemmArgs a{buffer, row_stride, output + static_cast<int64_t>(pixel) * args.output_pixel_stride * output_size,
               args.output_pixel_stride};
    // This chunk's share of the warm range.
    const int64_t warm_bytes = args.warm.end - args.warm.begin;
    a.next.warm = args.warm;
    a.next.warm.begin = args.warm.begin + warm_bytes * (pixel - pixel_begin) / (pixel_end - pixel_begin);
    a.next.warm.end = args.warm.begin + warm_bytes * (pixel + count - pixel_begin) / (pixel_end - pixel_begin);
    run_gemm(weights, a, chunk_epilogue, 0, count, n_begin, n_end);
    pixel += count;
  }
}

}  // namespace internal

}  // namespace qdqrt::kernels
