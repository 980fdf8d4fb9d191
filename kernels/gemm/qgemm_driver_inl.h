// The ISA-independent half of a GEMM implementation: packs row blocks of A into a small
// contiguous panel (shifting int8 to uint8, gathering conv taps, padding with the zero-point) and
// walks cache-sized column chunks and register tiles. Included by each per-ISA source file inside
// an anonymous namespace, so every ISA gets its own copy compiled with its own flags.
//
// Traits provide: kMr, kNr, kKGroup, PanelElement (uint8_t or int16_t),
//   static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip);  and either
//   template <int MR> static void tile(const PanelElement* a, int64_t a_stride, const int8_t* b,
//                                      int k_groups, const TileArgs& args);
// or (RowBlockTraits: a whole row block of the column chunk at once, so one column tile's
// epilogue can run while the next tile's multiplies execute, across row blocks too)
//   struct RowBlockState;  (what one call leaves for the next: default-constructed once per run)
//   template <typename TileArgsAt> static void row_block(RowBlockState& state, const PanelElement* a,
//       int64_t a_stride, bool a_in_place, int rows, int k_groups, int n_begin, int n_end,
//       const TileArgsAt& tile_args);
//   where b = tile_args(n, args) fills the TileArgs of the column tile at n and returns its packed
//   weights, and
//   static void finish(RowBlockState& state);  after the last row block.
// Optional: kPanelRowAlignment (bytes; default 1): panel rows start at multiples of it, and a
// matrix is read in place only when its rows do. kTapTiles = true with
//   template <int MR> static void tap_tile(const uint8_t* const* taps, int tap_count, int tap_bytes,
//                                          const int8_t* b, const TileArgs& args);  for MR = kMr - 1, kMr:
//   the k-loop runs tap by tap, row r reading tap t's tap_bytes bytes just before
//   taps[t * kTapRowSlots + r] (fill_tap_pointers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "kernels/gemm/qgemm_internal.h"
#include "kernels/scratch.h"

namespace qdqrt::kernels::internal {
namespace {

struct TileArgs {
  const int32_t* bias;        // at the tile's first column
  const float* multiplier;
  const float* float_bias;
  const int32_t* row_term;    // per tile row, or nullptr
  int64_t column0;            // the tile's first output column (pointwise program constants)
  char* c;                    // the tile's first element
  int64_t c_row_bytes;
  const char* residual;       // the tile's first residual element, or nullptr
  int64_t residual_row_bytes;
  int n_valid;                // columns to store (<= nr)
  const Epilogue* epilogue;
  // PackedGemm::bounded and a finite activation clamp: plain epilogues may clamp the rounded
  // integers instead of the floats.
  bool integer_clamp = false;
  // Where the tile's k-loop prefetches weights into L2, one line per k-step (the next column
  // chunk's), or nullptr.
  const void* prefetch = nullptr;
};


// Portable byte copy with the int8 -> uint8 shift (xor 0x80) applied on the way.
struct PortableCopy {
  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    for (int i = 0; i < count; ++i) dst[i] = src[i] ^ flip;
  }
};

// Stands in for a copy policy when only prefetching the next row block's source bytes.
struct PrefetchOnly {
  static void copy_flip(uint8_t*, const uint8_t* src, int count, uint8_t) {
    for (int i = 0; i < count; i += 64) __builtin_prefetch(src + i, 0, 3);
    if (count > 0) __builtin_prefetch(src + count - 1, 0, 3);
  }
};

// The output pixel of a conv GEMM row, advanced row by row (no divisions per row).
struct ConvCursor {
  int64_t image = 0;
  int out_y = 0, out_x = 0;

  ConvCursor(const ConvGeometry& g, int64_t m) {
    const int64_t pixels_per_image = static_cast<int64_t>(g.output_height) * g.output_width;
    image = m / pixels_per_image;
    const int64_t pixel = m - image * pixels_per_image;
    out_y = static_cast<int>(pixel / g.output_width);
    out_x = static_cast<int>(pixel - static_cast<int64_t>(out_y) * g.output_width);
  }
  void advance(const ConvGeometry& g) {
    if (++out_x < g.output_width) return;
    out_x = 0;
    if (++out_y < g.output_height) return;
    out_y = 0;
    ++image;
  }
};

// Copies `count` (<= kWidth) bytes with the shift as one kWidth-byte move (a single vector load,
// xor and store under AVX-512 for kWidth = 64): the caller guarantees kWidth bytes may be read at
// src and written at dst. A masked or byte-exact copy of a 3x3 conv's 48-byte kernel row cost
// more than the tile's multiply-adds on it (docs/decisions.md, "INT8 GEMM and convolution").
template <int kWidth>
inline void copy_flip_block(uint8_t* dst, const uint8_t* src, uint8_t flip) {
  uint8_t bytes[kWidth];
  std::memcpy(bytes, src, kWidth);
  for (int i = 0; i < kWidth; ++i) bytes[i] ^= flip;
  std::memcpy(dst, bytes, kWidth);
}

// Copies count bytes as one 16-, 32- or 64-byte move when `readable` bytes may be read at src;
// false when count or the readable bytes do not allow it (the caller copies exactly).
inline bool copy_flip_over(uint8_t* dst, const uint8_t* src, int count, int64_t readable, uint8_t flip) {
  if (count <= 16 && readable >= 16) {
    copy_flip_block<16>(dst, src, flip);
  } else if (count <= 32 && readable >= 32) {
    copy_flip_block<32>(dst, src, flip);
  } else if (count <= 64 && readable >= 64) {
    copy_flip_block<64>(dst, src, flip);
  } else {
    return false;
  }
  return true;
}

// Gathers the K bytes of the conv row at `at` into `row`, already shifted to the kernel's
// unsigned domain. With Copy = PrefetchOnly nothing is written (row may be null): the source
// lines are prefetched. Returns true when the row's k padding (k..k_padded) was zeroed too.
template <typename Copy>
[[gnu::always_inline]] inline bool gather_conv_row(const ConvGeometry& g, const void* data, const PackedGemm& packed,
                                                   const ConvCursor& at, uint8_t* row, uint8_t flip) {
  constexpr bool kWrite = !std::is_same_v<Copy, PrefetchOnly>;
  const int64_t image_bytes = static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
  const uint8_t* base = static_cast<const uint8_t*>(data) + at.image * image_bytes;
  // Bytes past `base` that a wide copy may read: up to the batch's last pixel, which is left out
  // (a group's channels may end before its pixel stride does).
  const int64_t batch_bytes = (g.batch - at.image) * image_bytes - g.input_pixel_stride;
  const uint8_t pad_value = static_cast<uint8_t>(packed.input_zero_point) ^ flip;
  const int channels = g.group_channels;
  const int row_bytes = g.kernel_width * channels;
  const bool dense = g.input_pixel_stride == channels && g.dilation_width == 1;
  if constexpr (kWrite) {
    // An interior pixel (every tap inside the image, the widest read inside the batch): each
    // kernel row in 16/32/64-byte moves, no per-tap bounds checks.
    const int first_y = at.out_y * g.stride_height - g.pad_top;
    const int first_x = at.out_x * g.stride_width - g.pad_left;
    if (dense && first_y >= 0 && first_y + (g.kernel_height - 1) * g.dilation_height < g.input_height &&
        first_x >= 0 && first_x + g.kernel_width <= g.input_width) {
      const int64_t line_step = static_cast<int64_t>(g.dilation_height) * g.input_width * channels;
      const int64_t offset = (static_cast<int64_t>(first_y) * g.input_width + first_x) * channels;
      const int64_t last_read = offset + (g.kernel_height - 1) * line_step;
      // A 1-channel 3x3 (a grayscale stem): its 9 taps and the zeros up to k_padded assembled in a
      // register and stored once, so each of the tile's 4-byte reads of the row comes from one
      // store (reads spanning the overlapping 16-byte moves stalled on store forwarding).
      if (row_bytes == 3 && g.kernel_height == 3 && packed.k_padded <= 16 && batch_bytes - last_read >= 16) {
        using Bytes16 = uint8_t __attribute__((vector_size(16)));
        Bytes16 top, middle, bottom;
        std::memcpy(&top, base + offset, 16);
        std::memcpy(&middle, base + offset + line_step, 16);
        std::memcpy(&bottom, base + offset + 2 * line_step, 16);
        const Bytes16 two = __builtin_shufflevector(top, middle, 0, 1, 2, 16, 17, 18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        const Bytes16 nine = __builtin_shufflevector(two, bottom, 0, 1, 2, 3, 4, 5, 16, 17, 18, 0, 0, 0, 0, 0, 0, 0);
        const Bytes16 taps = {255, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0};
        const Bytes16 packed_row = (nine ^ flip) & taps;
        std::memcpy(row, &packed_row, 16);
        return true;
      }
      const auto rows_of = [&](auto width) {
        const uint8_t* src = base + offset;
        for (int ky = 0; ky < g.kernel_height; ++ky, src += line_step, row += row_bytes) {
          copy_flip_block<decltype(width)::value>(row, src, flip);
        }
      };
      if (row_bytes <= 16 && batch_bytes - last_read >= 16) {
        rows_of(std::integral_constant<int, 16>{});
        return false;
      }
      if (row_bytes <= 32 && batch_bytes - last_read >= 32) {
        rows_of(std::integral_constant<int, 32>{});
        return false;
      }
      if (row_bytes <= 64 && batch_bytes - last_read >= 64) {
        rows_of(std::integral_constant<int, 64>{});
        return false;
      }
      // Longer rows (32 or 64 channels x 3 taps) in whole 64-byte moves.
      const int chunks = (row_bytes + 63) / 64;
      if (row_bytes > 64 && batch_bytes - last_read >= 64 * chunks) {
        const uint8_t* src = base + offset;
        for (int ky = 0; ky < g.kernel_height; ++ky, src += line_step, row += row_bytes) {
          for (int chunk = 0; chunk < chunks; ++chunk) copy_flip_block<64>(row + 64 * chunk, src + 64 * chunk, flip);
        }
        return false;
      }
    }
  }
  for (int ky = 0; ky < g.kernel_height; ++ky) {
    const int in_y = at.out_y * g.stride_height - g.pad_top + ky * g.dilation_height;
    if (in_y < 0 || in_y >= g.input_height) {
      if constexpr (kWrite) std::memset(row, pad_value, row_bytes);
      if constexpr (kWrite) row += row_bytes;
      continue;
    }
    const int64_t line_offset = static_cast<int64_t>(in_y) * g.input_width * g.input_pixel_stride;
    const int first_x = at.out_x * g.stride_width - g.pad_left;
    // A whole kernel row of contiguous pixels (dense channels, no dilation, inside the image)
    // is one copy.
    if (dense && first_x >= 0 && first_x + g.kernel_width <= g.input_width) {
      const int64_t offset = line_offset + static_cast<int64_t>(first_x) * channels;
      // Rows up to 64 bytes (a 3x3 stem's 9, a 16-channel 3x3's 48) as one 16/32/64-byte move
      // when the read stays inside the batch: a masked copy costs more than the tile's work on
      // them. The bytes past row_bytes land in the panel row's padding (64 bytes past k_padded)
      // or are overwritten by the next tap row.
      if constexpr (kWrite) {
        if (copy_flip_over(row, base + offset, row_bytes, batch_bytes - offset, flip)) {
          row += row_bytes;
          continue;
        }
      }
      Copy::copy_flip(row, base + offset, row_bytes, flip);
      if constexpr (kWrite) row += row_bytes;
      continue;
    }
    for (int kx = 0; kx < g.kernel_width; ++kx) {
      const int in_x = first_x + kx * g.dilation_width;
      if (in_x >= 0 && in_x < g.input_width) {
        const int64_t offset = line_offset + static_cast<int64_t>(in_x) * g.input_pixel_stride;
        bool copied = false;
        if constexpr (kWrite) copied = copy_flip_over(row, base + offset, channels, batch_bytes - offset, flip);
        if (!copied) Copy::copy_flip(row, base + offset, channels, flip);
      } else {
        if constexpr (kWrite) std::memset(row, pad_value, channels);
      }
      if constexpr (kWrite) row += channels;
    }
  }
  return false;
}

// Tiles that read a convolution's taps in place (Traits::kTapTiles): rows per block slot and
// the narrowest tap (in channels) worth a segment of its own in the k-loop (each segment reloads
// the row pointers; 8 k-groups hide it).
constexpr int kTapRowSlots = 6;
constexpr int kMinTapChannels = 32;
constexpr int kMaxInPlaceTaps = 64;

template <typename Traits>
constexpr bool kTapTiles = requires { requires Traits::kTapTiles; };

// The in-place form of gather_conv_row for a block of rows: for tap t and row r,
// taps[t * kTapRowSlots + r] is the address just past the tap's channels in the input, or past
// `padding` (channels bytes of the zero-point) where the tap falls outside the image. Slots past
// `rows` point at the padding. `tap_offsets` holds each tap's offset from its row's first tap.
inline void fill_tap_pointers(const ConvGeometry& g, const uint8_t* data, int64_t m_begin, int rows,
                              const uint8_t* padding, const int64_t* tap_offsets, const uint8_t** taps) {
  const int channels = g.group_channels;
  const int tap_count = g.kernel_height * g.kernel_width;
  const int64_t image_bytes = static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride;
  const uint8_t* const pad = padding + channels;
  ConvCursor at(g, m_begin);
  for (int r = 0; r < kTapRowSlots; ++r) {
    if (r >= rows) {
      for (int tap = 0; tap < tap_count; ++tap) taps[tap * kTapRowSlots + r] = pad;
      continue;
    }
    const uint8_t* image = data + at.image * image_bytes;
    const int first_y = at.out_y * g.stride_height - g.pad_top;
    const int first_x = at.out_x * g.stride_width - g.pad_left;
    at.advance(g);
    const int last_y = first_y + (g.kernel_height - 1) * g.dilation_height;
    const int last_x = first_x + (g.kernel_width - 1) * g.dilation_width;
    if (first_y >= 0 && last_y < g.input_height && first_x >= 0 && last_x < g.input_width) {
      const uint8_t* first =
          image + (static_cast<int64_t>(first_y) * g.input_width + first_x) * g.input_pixel_stride + channels;
      for (int tap = 0; tap < tap_count; ++tap) taps[tap * kTapRowSlots + r] = first + tap_offsets[tap];
      continue;
    }
    for (int ky = 0, tap = 0; ky < g.kernel_height; ++ky) {
      const int y = first_y + ky * g.dilation_height;
      const bool inside = y >= 0 && y < g.input_height;
      for (int kx = 0; kx < g.kernel_width; ++kx, ++tap) {
        const int x = first_x + kx * g.dilation_width;
        taps[tap * kTapRowSlots + r] =
            inside && x >= 0 && x < g.input_width
                ? image + (static_cast<int64_t>(y) * g.input_width + x) * g.input_pixel_stride + channels
                : pad;
      }
    }
  }
}

// Row m of A into `row` (see gather_conv_row), for plain matrices and conv sources alike.
template <typename Copy>
inline void gather_row(const ASource& source, const PackedGemm& packed, int64_t m, uint8_t* row, uint8_t flip) {
  if (!source.conv) {
    Copy::copy_flip(row, static_cast<const uint8_t*>(source.data) + m * source.row_stride, packed.k, flip);
    return;
  }
  gather_conv_row<Copy>(*source.conv, source.data, packed, ConvCursor(*source.conv, m), row, flip);
}

// Prefetches the source lines of rows [begin, end) (one cursor walks a conv source's pixels).
inline void prefetch_rows(const ASource& source, const PackedGemm& packed, int64_t begin, int64_t end) {
  if (begin >= end) return;
  if (!source.conv) {
    for (int64_t m = begin; m < end; ++m) gather_row<PrefetchOnly>(source, packed, m, nullptr, 0);
    return;
  }
  ConvCursor cursor(*source.conv, begin);
  for (int64_t m = begin; m < end; ++m, cursor.advance(*source.conv)) {
    gather_conv_row<PrefetchOnly>(*source.conv, source.data, packed, cursor, nullptr, 0);
  }
}

template <typename Traits, typename PanelElement>
void pack_panel(const ASource& source, const PackedGemm& packed, int64_t m_begin, int rows, PanelElement* panel,
                int64_t panel_stride, uint8_t* scratch, int32_t* row_term) {
  const int k = packed.k;
  const uint8_t flip = packed.input_signed ? 0x80 : 0x00;
  std::optional<ConvCursor> cursor;
  if (source.conv) cursor.emplace(*source.conv, m_begin);
  for (int r = 0; r < rows; ++r) {
    PanelElement* out = panel + r * panel_stride;
    uint8_t* bytes = std::is_same_v<PanelElement, uint8_t> ? reinterpret_cast<uint8_t*>(out) : scratch;
    bool padded = false;  // the gather already zeroed k..k_padded
    if (cursor) {
      padded = gather_conv_row<Traits>(*source.conv, source.data, packed, *cursor, bytes, flip);
      cursor->advance(*source.conv);
    } else {
      gather_row<Traits>(source, packed, m_begin + r, bytes, flip);
    }
    if constexpr (!std::is_same_v<PanelElement, uint8_t>) {
      for (int i = 0; i < k; ++i) out[i] = bytes[i];
    }
    if (!padded || !std::is_same_v<PanelElement, uint8_t>) {
      for (int i = k; i < packed.k_padded; ++i) out[i] = 0;
    }
    if (row_term) {
      int32_t sum = 0;
      for (int i = 0; i < k; ++i) sum += bytes[i];
      row_term[r] = static_cast<int32_t>(static_cast<uint32_t>(-packed.weight_zero_point_s8) * static_cast<uint32_t>(sum));
    }
  }
}

template <typename Traits, int MR>
inline void run_tile(const typename Traits::PanelElement* a, int64_t a_stride, const int8_t* b, int k_groups,
                     const TileArgs& args) {
  Traits::template tile<MR>(a, a_stride, b, k_groups, args);
}

template <typename Traits, int... Rows>
inline void dispatch_tile(std::integer_sequence<int, Rows...>, int rows, const typename Traits::PanelElement* a,
                          int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& args) {
  ((rows == Rows + 1 ? (run_tile<Traits, Rows + 1>(a, a_stride, b, k_groups, args), 0) : 0), ...);
}

template <typename Traits>
concept RowBlockTraits = requires { Traits::kRowBlocks; };

// Traits whose tiles one row short of kMr run as fast per row (Avx512VnniTraits' 5-row tile).
template <typename Traits>
constexpr bool kBalancedRows = requires { requires Traits::kBalancedRows; };

struct NoRowBlockState {};

template <typename Traits>
struct RowBlockStateOf {
  using type = NoRowBlockState;
};
template <RowBlockTraits Traits>
struct RowBlockStateOf<Traits> {
  using type = typename Traits::RowBlockState;
};

template <typename Traits>
constexpr int64_t panel_row_alignment() {
  if constexpr (requires { Traits::kPanelRowAlignment; }) {
    return Traits::kPanelRowAlignment;
  } else {
    return 1;
  }
}

template <typename Traits>
void run_driver(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  using PanelElement = typename Traits::PanelElement;
  constexpr int kMr = Traits::kMr;
  constexpr int kNr = Traits::kNr;
  if (m_begin >= m_end || n_begin >= n_end) return;
  const int output_size = output_element_size(epilogue.output_type);
  const int residual_size = 1;
  const int k_groups = packed.k_padded / Traits::kKGroup;
  // +64 elements so the rows of a panel do not alias the same cache sets.
  constexpr int64_t kRowAlignment = panel_row_alignment<Traits>();
  const int64_t panel_stride = (packed.k_padded + kRowAlignment - 1) / kRowAlignment * kRowAlignment + 64;
  PanelElement* panel = reinterpret_cast<PanelElement*>(
      thread_scratch(ScratchSlot::kPanel, sizeof(PanelElement) * kMr * panel_stride));
  uint8_t* row_bytes = thread_scratch(ScratchSlot::kRowBytes, packed.k_padded + 64);
  int32_t row_term[kMr];
  const bool need_row_term = packed.weight_zero_point_s8 != 0;
  const int64_t tile_bytes = static_cast<int64_t>(packed.k_padded) * kNr * packed.element_size;
  const int chunk_tiles = static_cast<int>(std::max<int64_t>(1, gemm_column_chunk_bytes() / tile_bytes));
  const int chunk_columns = chunk_tiles * kNr;
  // Unsigned rows of a plain matrix already hold what a panel would (no shift, no gather, K a
  // whole number of k-groups, no row term): the tiles read them in place. Rows off the tiles'
  // alignment too when they serve a single column tile: each byte is then loaded at most twice,
  // and copying them to an aligned panel cost more than the slower loads (the AMX 7x7 stem,
  // whose rows lie 42 bytes apart: 365 -> 315 us).
  const bool aligned = reinterpret_cast<uintptr_t>(source.data) % kRowAlignment == 0 &&
                       source.row_stride % kRowAlignment == 0;
  const bool direct = std::is_same_v<PanelElement, uint8_t> && !source.conv && !packed.input_signed &&
                      packed.k == packed.k_padded && !need_row_term && (aligned || n_end - n_begin <= kNr);
  const bool integer_clamp = packed.bounded && std::fabs(epilogue.clamp_min) <= 0x1p20f &&
                             std::fabs(epilogue.clamp_max) <= 0x1p20f;
  char* c_bytes = static_cast<char*>(c);
  const char* residual_bytes = static_cast<const char*>(epilogue.residual);
  [[maybe_unused]] typename RowBlockStateOf<Traits>::type row_block_state;
  // Convolutions of unsigned inputs whose taps are whole k-groups of at least kMinTapChannels:
  // blocks of kMr - 1 or kMr rows read each tap in place through row pointers (no panel gather;
  // a deep kernel's panel was gathered again for every column chunk).
  const ConvGeometry* conv = source.conv;
  const int tap_count = conv ? conv->kernel_height * conv->kernel_width : 0;
  bool in_place_taps = false;
  const uint8_t** tap_pointers = nullptr;
  const uint8_t* tap_padding = nullptr;
  int64_t tap_offsets[kMaxInPlaceTaps];
  if constexpr (kTapTiles<Traits>) {
    in_place_taps = conv && !packed.input_signed && !need_row_term && packed.k == packed.k_padded &&
                    conv->group_channels % Traits::kKGroup == 0 && conv->group_channels >= kMinTapChannels &&
                    tap_count <= kMaxInPlaceTaps;
    if (in_place_taps) {
      tap_pointers = reinterpret_cast<const uint8_t**>(
          thread_scratch(ScratchSlot::kTapPointers, sizeof(const uint8_t*) * kTapRowSlots * tap_count));
      uint8_t* padding = thread_scratch(ScratchSlot::kPadding, conv->group_channels);
      std::memset(padding, static_cast<uint8_t>(packed.input_zero_point), conv->group_channels);
      tap_padding = padding;
      for (int ky = 0, tap = 0; ky < conv->kernel_height; ++ky) {
        for (int kx = 0; kx < conv->kernel_width; ++kx, ++tap) {
          tap_offsets[tap] = (static_cast<int64_t>(ky) * conv->dilation_height * conv->input_width +
                              static_cast<int64_t>(kx) * conv->dilation_width) *
                             conv->input_pixel_stride;
        }
      }
    }
  }

  WarmCursor warm(source.next.warm);
  for (int chunk_begin = n_begin; chunk_begin < n_end; chunk_begin += chunk_columns) {
    const int chunk_end = std::min(n_end, chunk_begin + chunk_columns);
    // Balanced row blocks where the traits ask for them: 49 rows run as 4 x 6 + 5 x 5 instead of
    // 8 x 6 + 1 (a one-row block streams the chunk's weights once more for a sixth of the work).
    const int row_blocks = (m_end - m_begin + kMr - 1) / kMr;
    const int short_blocks = row_blocks * kMr - (m_end - m_begin);  // blocks of kMr - 1 rows
    const bool balanced = kBalancedRows<Traits> && short_blocks <= row_blocks;
    // The next chunk's weights, one line per k-step of this chunk's tiles, where this chunk and the
    // next fit in three quarters of the L2 together (deep kernels: a chunk of one or two tiles):
    // weights larger than the caches come from memory once per run, and a chunk's first row block
    // would otherwise wait on every line (kernel bench --int8_cold_mb: ResNet-50's layer4 3x3s
    // 95% of the peak with cached weights, 71-73% from memory, 83-84% so). Where two chunks fill
    // the L2 the prefetch evicted the chunk in use (layer4's 1x1s lost up to 11 us).
    const int8_t* prefetch_next = nullptr;
    const int8_t* prefetch_end = nullptr;
    int64_t prefetch_from_block = 0;
    if (chunk_end < n_end && 8 * chunk_tiles * tile_bytes <= 3 * l2_cache_bytes()) {
      const int next_end = std::min(n_end, chunk_end + chunk_columns);
      prefetch_next = packed.data.data() + (chunk_end / kNr) * tile_bytes;
      prefetch_end = packed.data.data() + ((next_end + kNr - 1) / kNr) * tile_bytes;
    } else if (chunk_end == n_end) {
      // After the last chunk the caller runs its next columns (a later channel block of a
      // 49-pixel layer: PrefetchHint::n_end) or the next layer (its weights): as much of their
      // first chunk as fits beside this chunk in three quarters of the L2, fetched during the last
      // row blocks (earlier, the lines would age out of the L2 before their use). Without it the
      // next call's first row block waits on every line of its weights.
      const int64_t chunk_bytes = (chunk_end - chunk_begin + kNr - 1) / kNr * tile_bytes;
      const int64_t budget = std::min(3 * l2_cache_bytes() / 4 - chunk_bytes, gemm_column_chunk_bytes());
      const int8_t* target = nullptr;
      int64_t target_bytes = 0;
      if (source.next.n_end > n_end) {
        const int next_end = std::min(source.next.n_end, chunk_end + chunk_columns);
        target = packed.data.data() + (chunk_end / kNr) * tile_bytes;
        target_bytes = (next_end - chunk_end + kNr - 1) / kNr * tile_bytes;
      } else if (!source.next.weights.empty()) {
        target = source.next.weights.data();
        target_bytes = static_cast<int64_t>(source.next.weights.size());
      }
      target_bytes = std::min(target_bytes, budget);
      if (target != nullptr && target_bytes > 0) {
        prefetch_next = target;
        prefetch_end = target + target_bytes;
        const int64_t per_block = static_cast<int64_t>((chunk_end - chunk_begin + kNr - 1) / kNr) * k_groups * 64;
        prefetch_from_block = std::max<int64_t>(0, row_blocks - (target_bytes + per_block - 1) / per_block);
      }
    }
    for (int m = m_begin, block = 0, rows = 0; m < m_end; m += rows, ++block) {
      rows = balanced ? kMr - (block < short_blocks ? 1 : 0) : std::min(kMr, m_end - m);
      const PanelElement* tile_a = panel;
      int64_t tile_a_stride = panel_stride;
      const bool taps_in_place = in_place_taps && rows >= kMr - 1;
      if (taps_in_place) {
        fill_tap_pointers(*conv, static_cast<const uint8_t*>(source.data), m, rows, tap_padding, tap_offsets,
                          tap_pointers);
      } else if (direct) {
        tile_a = reinterpret_cast<const PanelElement*>(static_cast<const uint8_t*>(source.data) + m * source.row_stride);
        tile_a_stride = source.row_stride;
      } else {
        pack_panel<Traits>(source, packed, m, rows, panel, panel_stride, row_bytes, need_row_term ? row_term : nullptr);
      }
      // Start loading the next row block's source lines while this block computes.
      prefetch_rows(source, packed, m + rows, std::min(m_end, m + rows + kMr));
      // Fills `args` for the column tile at n and returns its packed weights.
      auto tile_args = [&](int n, TileArgs& args) {
        args.bias = packed.bias.data() + n;
        args.multiplier = packed.multiplier.data() + n;
        args.float_bias = packed.float_bias.data() + n;
        args.column0 = n;
        args.row_term = need_row_term ? row_term : nullptr;
        args.c_row_bytes = c_row_stride * output_size;
        args.c = c_bytes + m * args.c_row_bytes + static_cast<int64_t>(n) * output_size;
        args.residual_row_bytes = epilogue.residual_row_stride * residual_size;
        args.residual = residual_bytes ? residual_bytes + m * args.residual_row_bytes + n * residual_size : nullptr;
        args.n_valid = std::min(kNr, chunk_end - n);
        args.epilogue = &epilogue;
        args.integer_clamp = integer_clamp;
        const int8_t* b = packed.data.data() + (n / kNr) * tile_bytes;
        args.prefetch = nullptr;
        if (prefetch_next < prefetch_end && block >= prefetch_from_block) {
          args.prefetch = prefetch_next;
          prefetch_next += static_cast<int64_t>(k_groups) * 64;
        } else {
          // Tiles with nothing nearer to fetch warm the caches for later layers (a prefetch past a
          // span's end touches nothing that matters: a prefetch never faults).
          args.prefetch = warm.take(static_cast<int64_t>(k_groups) * 64);
        }
        return b;
      };
      if constexpr (kTapTiles<Traits>) {
        if (taps_in_place) {
          for (int n = chunk_begin; n < chunk_end; n += kNr) {
            TileArgs args;
            const int8_t* b = tile_args(n, args);
            if (rows == kMr) {
              Traits::template tap_tile<kMr>(tap_pointers, tap_count, conv->group_channels, b, args);
            } else {
              Traits::template tap_tile<kMr - 1>(tap_pointers, tap_count, conv->group_channels, b, args);
            }
          }
          continue;
        }
      }
      if constexpr (RowBlockTraits<Traits>) {
        Traits::row_block(row_block_state, tile_a, tile_a_stride, direct, rows, k_groups, chunk_begin, chunk_end,
                          tile_args);
      } else {
        for (int n = chunk_begin; n < chunk_end; n += kNr) {
          TileArgs args;
          const int8_t* b = tile_args(n, args);
          dispatch_tile<Traits>(std::make_integer_sequence<int, kMr>{}, rows, tile_a, tile_a_stride, b, k_groups, args);
        }
      }
    }
  }
  if constexpr (RowBlockTraits<Traits>) Traits::finish(row_block_state);
}

}  // namespace
}  // namespace qdqrt::kernels::internal
