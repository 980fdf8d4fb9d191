// fp32 igemm: weight packing and the driver that walks tiles and builds the per-tap row pointers
// (portable; the microkernels are per ISA, chosen by sgemm_implementation()). The depthwise and
// direct NCHW convolutions have their own drivers (fp32_dwconv.cpp, fp32_direct_nchw.cpp).
#include "kernels/fp32/fp32_sgemm.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include <fmt/format.h>

#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_conv_internal.h"
#include "kernels/fp32/fp32_dot_rows.h"
#include "kernels/fp32/fp32_gemv.h"
#include "kernels/fp32/fp32_sgemm_blocking.h"
#include "kernels/fp32/fp32_sgemm_prefetch.h"

namespace qdqrt::kernels {

namespace {

// The blocking shared with the live-taps driver (fp32_sgemm_blocking.h).
constexpr int kOneBlockDepth = internal::kSgemmOneBlockDepth;
constexpr int kMaxMr = internal::kSgemmMaxMr;
constexpr int kCopyAPanels = internal::kSgemmCopyAPanels;
constexpr int64_t kRowsOuterBytes = internal::kSgemmRowsOuterBytes;
constexpr int64_t kRowBlockBytes = internal::kSgemmRowBlockBytes;
constexpr int kPackAMinDepth = 256;
constexpr int kPackAMinPanels = 8;
constexpr int kShortTileRows = 4;

// Walks k blocks x row tiles x panels of [m_begin, m_end) x [n_begin, n_end); fill(m, mr, pointers)
// writes the pointers of rows m..m+mr-1 for every tap (pointers[tap * MR + r]). may_pack_a: a
// range that walks panels inside row blocks packs each row block's A once per depth block
// (internal::pack_sgemm_a, taps 1 only) and runs the packed-A microkernel.
template <class Fill>
void drive(const PackedSgemm& packed, const Fill& fill, int64_t a_row_bytes, float* c, int64_t c_row_stride,
           const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end,
           bool may_pack_a = false) {
  const internal::SgemmImplementation& impl = sgemm_implementation(packed.isa);
  const internal::SgemmPrefetchUkernelFn prefetch_ukernel = sgemm_prefetch_ukernel(packed.isa);
  assert(impl.mr == packed.mr && impl.nr == packed.nr && n_begin % packed.nr == 0);
  // Row pointers of every tile of a row block, filled once per block: [tile][tap][MR].
  constexpr int64_t kPointerCapacity = 4096;
  static_assert(kPointerCapacity >= kSgemmMaxTaps * 16);
  const float* pointers[kPointerCapacity];
  const int64_t tile_pointers = static_cast<int64_t>(packed.taps) * packed.mr;
  internal::SgemmUkernelArgs args;
  args.c_row_stride = c_row_stride;
  args.residual_row_stride = epilogue.residual_row_stride;
  args.min = epilogue.min;
  args.max = epilogue.max;
  args.activation = epilogue.activation;
  args.w_tap_stride = static_cast<int64_t>(packed.channels) * packed.nr;
  const int64_t panel_floats = packed.k() * packed.nr;
  const internal::SgemmDepthBlocking blocking = internal::sgemm_depth_blocking(packed.taps, packed.channels);
  // The depth block starting at (tap, channel): its extent and whether it starts or ends the sum.
  auto set_block = [&](int tap, int channel) {
    args.taps = std::min(blocking.taps_per_block, packed.taps - tap);
    args.channel_begin = channel;
    args.channels = std::min(blocking.channel_chunk, packed.channels - channel);
    args.first = tap == 0 && channel == 0;
    args.last = tap + args.taps == packed.taps && channel + args.channels == packed.channels;
  };
  const int64_t block_depth = static_cast<int64_t>(blocking.channel_chunk) * blocking.taps_per_block;
  // B of the whole range small enough to stay in L2: each row tile runs to the end (its A in L1,
  // its rows of C and the residual written and read once, in order). Otherwise each depth block's
  // panel stays in L1 while the block's row tiles pass, and fetches the next panel's block.
  const bool rows_outer = packed.k() * (n_end - n_begin) * static_cast<int64_t>(sizeof(float)) <= kRowsOuterBytes;
  // Rows a multiple of 4 KiB apart (1024 channels, or 512 at stride 2) share one L1 set and evict
  // each other: such rows' A block is copied once for all the panels (rows outer: per row tile;
  // else the row block's tiles together), to rows kCopyPad floats off that stride (a vector copy:
  // transposing A into [k][MR] cost more than it saved). Other rows are read in place.
  constexpr int kCopyPad = 16;
  constexpr int64_t kCopyCapacity = 64 * 1024;  // floats (256 KiB, the row block's A)
  const int64_t tile_copy_floats =
      static_cast<int64_t>(blocking.taps_per_block) * packed.mr * (blocking.channel_chunk + kCopyPad);
  const int64_t tile_packed_floats = internal::sgemm_packed_a_floats(packed.mr, blocking.channel_chunk);
  const bool pack_a = may_pack_a && !rows_outer && packed.taps == 1 && tile_packed_floats <= kCopyCapacity;
  const internal::SgemmPrefetchUkernelFn packed_a_ukernel = pack_a ? sgemm_packed_a_ukernel(packed.isa) : nullptr;
  const bool copy_a = !pack_a && a_row_bytes % 4096 == 0 &&
                      (n_end - n_begin + packed.nr - 1) / packed.nr >= kCopyAPanels && tile_copy_floats <= kCopyCapacity;
  int64_t block_tiles = std::clamp<int64_t>(kRowBlockBytes / std::max<int64_t>(block_depth * 4, 1) / packed.mr, 1,
                                            kPointerCapacity / tile_pointers);
  if (copy_a && !rows_outer) block_tiles = std::clamp<int64_t>(kCopyCapacity / tile_copy_floats, 1, block_tiles);
  if (pack_a) block_tiles = std::clamp<int64_t>(kCopyCapacity / tile_packed_floats, 1, block_tiles);
  const int64_t block = block_tiles * packed.mr;
  alignas(64) float copied_a[kCopyCapacity];
  const float* copied_rows[kPointerCapacity];  // [tile][tap of the block][MR]
  // Rows of the packed-A tile starting at m: MR, except that a short last tile (a few rows run at
  // the multiply-add latency, not its throughput: 197 = 14 x 14 + 1) shares the rows of the tile
  // before it. As many tiles as MR-row ones.
  auto packed_rows = [&](int64_t m, int64_t block_end) {
    const int64_t left = block_end - m;
    if (left <= packed.mr) return static_cast<int>(left);
    return static_cast<int>(left < packed.mr + kShortTileRows ? (left + 1) / 2 : packed.mr);
  };
  // The weights of a depth block of panel n (whose rows are packed.nr floats).
  auto block_weights = [&](int n, int tap, int channel) {
    return packed.data.data() + n / packed.nr * panel_floats +
           (static_cast<int64_t>(tap) * packed.channels + channel) * packed.nr;
  };
  // One row tile's depth block across every panel (A copied first when copy_a). Out of line: inlined
  // into its one caller it slowed small GEMMs (the attention's 128x128x64) by 10-15%.
  auto tile_panels = [&](const float* const* tile_rows, int64_t m, int rows, int tap, int channel)
      __attribute__((noinline)) {
    set_block(tap, channel);
    args.mr = rows;
    args.a = tile_rows + tap * packed.mr;
    if (copy_a) {
      const int64_t copy_stride = args.channels + kCopyPad;
      assert(args.taps * packed.mr * copy_stride <= kCopyCapacity);
      for (int t = 0; t < args.taps; ++t) {
        for (int r = 0; r < rows; ++r) {
          float* out = copied_a + (t * packed.mr + r) * copy_stride;
          std::memcpy(out, args.a[t * packed.mr + r] + channel, static_cast<size_t>(args.channels) * sizeof(float));
          copied_rows[t * packed.mr + r] = out;
        }
      }
      args.a = copied_rows;
      args.channel_begin = 0;
    }
    for (int n = n_begin; n < n_end; n += packed.nr) {
      args.nc = std::min(packed.nr, n_end - n);
      args.w = block_weights(n, tap, channel);
      args.bias = packed.bias.data() + n;
      args.c = c + m * c_row_stride + n;
      args.residual = epilogue.residual ? epilogue.residual + m * epilogue.residual_row_stride + n : nullptr;
      // The next call: this tile's next panel, or the next tile's first. With a residual (two
      // streams of lines per tile, the output's and the residual's), prefetching them during the
      // previous call's k loop instead of all at once at the tile's start; only with a residual,
      // where it pays (docs/decisions.md).
      const bool next_panel = n + packed.nr < n_end;
      const int64_t next_m = next_panel ? m : m + rows;
      const int next_n = next_panel ? n + packed.nr : n_begin;
      const bool has_next = args.last && epilogue.residual && next_m < m_end;
      args.next_c = has_next ? c + next_m * c_row_stride + next_n : nullptr;
      args.next_residual = has_next && epilogue.residual
                               ? epilogue.residual + next_m * epilogue.residual_row_stride + next_n
                               : nullptr;
      impl.ukernel(args);
      args.prefetched = has_next;
    }
  };
  for (int64_t block_begin = m_begin; block_begin < m_end; block_begin += block) {
    const int64_t block_end = std::min(m_end, block_begin + block);
    for (int64_t m = block_begin; m < block_end; m += packed.mr) {
      fill(m, static_cast<int>(std::min<int64_t>(packed.mr, block_end - m)),
           pointers + (m - block_begin) / packed.mr * tile_pointers);
    }
    auto tile_rows = [&](int64_t m) { return pointers + (m - block_begin) / packed.mr * tile_pointers; };
    auto rows = [&](int64_t m) { return static_cast<int>(std::min<int64_t>(packed.mr, block_end - m)); };
    if (rows_outer) {
      for (int64_t m = block_begin; m < block_end; m += packed.mr) {
        for (int tap = 0; tap < packed.taps; tap += blocking.taps_per_block) {
          for (int channel = 0; channel < packed.channels; channel += blocking.channel_chunk) {
            tile_panels(tile_rows(m), m, rows(m), tap, channel);
          }
        }
      }
      continue;
    }
    for (int tap = 0; tap < packed.taps; tap += blocking.taps_per_block) {
      for (int channel = 0; channel < packed.channels; channel += blocking.channel_chunk) {
        set_block(tap, channel);
        // Tile i's rows for this block: block_a + i * tile_pointers + a_tap * MR.
        const float* const* block_a = pointers;
        int a_tap = tap;
        if (copy_a) {
          const int64_t copy_stride = args.channels + kCopyPad;
          for (int64_t m = block_begin; m < block_end; m += packed.mr) {
            const int64_t tile = (m - block_begin) / packed.mr;
            for (int t = 0; t < args.taps; ++t) {
              for (int r = 0; r < rows(m); ++r) {
                float* out = copied_a + ((tile * args.taps + t) * packed.mr + r) * copy_stride;
                assert(out + copy_stride <= copied_a + kCopyCapacity);
                std::memcpy(out, tile_rows(m)[(tap + t) * packed.mr + r] + channel,
                            static_cast<size_t>(args.channels) * sizeof(float));
                copied_rows[tile * tile_pointers + t * packed.mr + r] = out;
              }
            }
          }
          block_a = copied_rows;
          a_tap = 0;
          args.channel_begin = 0;
        } else if (pack_a) {
          // Taps 1: the fill wrote one pointer per row, in row order.
          for (int64_t m = block_begin, tile = 0; m < block_end; m += packed_rows(m, block_end), ++tile) {
            float* out = copied_a + tile * tile_packed_floats;
            internal::pack_sgemm_a(pointers + (m - block_begin), packed_rows(m, block_end), packed.mr, channel,
                                   args.channels, out);
            copied_rows[tile * tile_pointers] = out;
          }
          block_a = copied_rows;
          args.channel_begin = 0;
        }
        for (int n = n_begin; n < n_end; n += packed.nr) {
          args.nc = std::min(packed.nr, n_end - n);
          args.w = block_weights(n, tap, channel);
          args.bias = packed.bias.data() + n;
          // The weights of the next (depth block, panel) of this loop, or of the next row block's
          // first: the row tiles of this panel share fetching them.
          const float* next = nullptr;
          int64_t next_rows = 0;
          if (n + packed.nr < n_end) {
            next = block_weights(n + packed.nr, tap, channel);
            next_rows = static_cast<int64_t>(args.taps) * args.channels;
          } else {
            int next_tap = tap, next_channel = channel + blocking.channel_chunk;
            if (next_channel >= packed.channels) next_tap += blocking.taps_per_block, next_channel = 0;
            if (next_tap >= packed.taps && block_end < m_end) next_tap = 0;
            if (next_tap < packed.taps) {
              next = block_weights(n_begin, next_tap, next_channel);
              next_rows = static_cast<int64_t>(std::min(blocking.taps_per_block, packed.taps - next_tap)) *
                          std::min(blocking.channel_chunk, packed.channels - next_channel);
            }
          }
          const int64_t next_lines = (next_rows * packed.nr * static_cast<int64_t>(sizeof(float)) + 63) / 64;
          const int64_t tiles = (block_end - block_begin + packed.mr - 1) / packed.mr;
          const int64_t tile_lines = (next_lines + tiles - 1) / tiles;
          internal::SgemmPrefetch prefetch;
          prefetch.begin = next;
          for (int64_t m = block_begin, tile = 0; m < block_end; m += args.mr, ++tile) {
            args.mr = pack_a ? packed_rows(m, block_end) : rows(m);
            args.a = block_a + tile * tile_pointers + a_tap * packed.mr;
            args.c = c + m * c_row_stride + n;
            args.residual = epilogue.residual ? epilogue.residual + m * epilogue.residual_row_stride + n : nullptr;
            // (The packed-A microkernel does not prefetch the next tile's output.)
            const bool has_next = !pack_a && args.last && epilogue.residual && m + packed.mr < block_end;
            args.next_c = has_next ? args.c + packed.mr * c_row_stride : nullptr;
            args.next_residual =
                has_next && args.residual ? args.residual + packed.mr * epilogue.residual_row_stride : nullptr;
            prefetch.lines = std::clamp<int64_t>(next_lines - tile * tile_lines, 0, tile_lines);
            if (pack_a) {
              packed_a_ukernel(args, prefetch);
              prefetch.begin += prefetch.lines * (64 / sizeof(float));
            } else if (prefetch_ukernel != nullptr && prefetch.lines > 0) {
              prefetch_ukernel(args, prefetch);
              prefetch.begin += prefetch.lines * (64 / sizeof(float));
            } else {
              impl.ukernel(args);
            }
            args.prefetched = has_next;
          }
          args.prefetched = false;
        }
      }
    }
  }
}

// Kernel rows as taps: with dilation_width 1 and the pixels' channels contiguous, the
// kernel_width taps of one kernel row read kernel_width * C consecutive floats, and the packed
// weights hold k in (ky, kx, c) order already: the microkernel runs kernel_height taps of
// kernel_width * C channels (same sums, same order). Pixels whose row of taps crosses the left or
// right border read a copy with zeros outside; rows above or below read a zero run. Row tiles
// outer, every panel inner. For kernels of 25 taps and more (ResNet's 7x7 stem, C = 3: 49 taps of
// 3 channels, +5%; MobileNet's 3x3 stem lost 9% and ResNet's 3x3 of 64 channels 1%), k in one
// depth block, and when a tile's border copies fit kRowTapCopyFloats.
constexpr int kMaxRowTapChannels = 1280;
constexpr int64_t kRowTapCopyFloats = 24 * 1024;
bool row_taps_apply(const PackedSgemm& packed, const SconvGeometry& g) {
  if (!(g.kernel_width > 1 && packed.taps >= 25 && g.dilation_width == 1 && g.input_pixel_stride == packed.channels &&
        packed.k() <= kOneBlockDepth && static_cast<int64_t>(g.kernel_width) * packed.channels <= kMaxRowTapChannels)) {
    return false;
  }
  // Output columns whose row of taps is inside the input, and so the pixels of a tile (at most
  // two output rows when a row holds MR pixels or more) that need copies.
  const int interior_begin = std::min(g.output_width, (g.pad_left + g.stride_width - 1) / g.stride_width);
  const int last_x = g.input_width - g.kernel_width + g.pad_left;
  const int interior_end = std::clamp(last_x < 0 ? 0 : last_x / g.stride_width + 1, interior_begin, g.output_width);
  const int64_t border_per_row = g.output_width - (interior_end - interior_begin);
  const int64_t rows_spanned = (packed.mr - 1) / g.output_width + 2;
  const int64_t copies = std::min<int64_t>(packed.mr, border_per_row * rows_spanned) * g.kernel_height;
  return copies * g.kernel_width * packed.channels <= kRowTapCopyFloats;
}

void run_row_taps(const PackedSgemm& packed, const SconvGeometry& g, const SconvArgs& args, const Fp32Epilogue& epilogue,
                  int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  const internal::SgemmImplementation& impl = sgemm_implementation(packed.isa);
  const int run = g.kernel_width * packed.channels;  // floats per kernel row
  alignas(64) float zeros[kMaxRowTapChannels] = {};
  // The border pixels' rows of taps, `run` floats each (row_taps_apply() bounds their number).
  alignas(64) float copies[kRowTapCopyFloats];
  const float* pointers[kMaxMr * kSgemmMaxTaps];
  internal::SgemmUkernelArgs args_;
  args_.taps = g.kernel_height;
  args_.channel_begin = 0;
  args_.channels = run;
  args_.first = args_.last = true;
  args_.a = pointers;
  args_.w_tap_stride = static_cast<int64_t>(run) * packed.nr;
  args_.c_row_stride = args.output_row_stride;
  args_.residual_row_stride = epilogue.residual_row_stride;
  args_.min = epilogue.min;
  args_.max = epilogue.max;
  args_.activation = epilogue.activation;
  const int64_t image_pixels = g.output_pixels_per_image();
  const int64_t panel_floats = packed.k() * packed.nr;
  for (int64_t m = m_begin; m < m_end; m += packed.mr) {
    const int rows = static_cast<int>(std::min<int64_t>(packed.mr, m_end - m));
    int copied = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t image = (m + r) / image_pixels, pixel = (m + r) % image_pixels;
      const int oy = static_cast<int>(pixel / g.output_width), ox = static_cast<int>(pixel % g.output_width);
      const int y0 = oy * g.stride_height - g.pad_top, x0 = ox * g.stride_width - g.pad_left;
      const float* image_input = args.input + image * g.input_image_stride;
      const bool inside = x0 >= 0 && x0 + g.kernel_width <= g.input_width;
      for (int ky = 0; ky < g.kernel_height; ++ky) {
        const int y = y0 + ky * g.dilation_height;
        const float*& pointer = pointers[ky * packed.mr + r];
        if (y < 0 || y >= g.input_height) {
          pointer = zeros;
          continue;
        }
        const float* row = image_input + static_cast<int64_t>(y) * g.input_width * packed.channels;
        if (inside) {
          pointer = row + static_cast<int64_t>(x0) * packed.channels;
          continue;
        }
        // Partly outside: a copy with zeros outside.
        float* copy = copies + static_cast<int64_t>(copied++) * run;
        assert(static_cast<int64_t>(copied) * run <= kRowTapCopyFloats);
        for (int kx = 0; kx < g.kernel_width; ++kx) {
          const int x = x0 + kx;
          float* out = copy + kx * packed.channels;
          if (x < 0 || x >= g.input_width) {
            std::fill_n(out, packed.channels, 0.0f);
          } else {
            std::memcpy(out, row + static_cast<int64_t>(x) * packed.channels, packed.channels * sizeof(float));
          }
        }
        pointer = copy;
      }
    }
    args_.mr = rows;
    for (int n = n_begin; n < n_end; n += packed.nr) {
      args_.nc = std::min(packed.nr, n_end - n);
      args_.w = packed.data.data() + n / packed.nr * panel_floats;
      args_.bias = packed.bias.data() + n;
      args_.c = args.output + m * args.output_row_stride + n;
      args_.residual = epilogue.residual ? epilogue.residual + m * epilogue.residual_row_stride + n : nullptr;
      impl.ukernel(args_);
    }
  }
}

// The GEMMs that pack A (SgemmALayout::kAuto): a deep k (a transformer's projections: 768 and
// up) and columns enough to spread the packing over.
bool sgemm_packs_a(const PackedSgemm& packed, int64_t columns) {
  return packed.channels >= kPackAMinDepth && columns >= kPackAMinPanels * packed.nr;
}

}  // namespace

namespace internal {
void pack_sgemm_a(const float* const* rows_a, int rows, int mr, int channel_begin, int channels, float* out) {
  constexpr int kBlock = kSgemmPackChannels;
  for (int r = 0; r < rows; ++r) {
    const float* in = rows_a[r] + channel_begin;
    float* row_out = out + r * kBlock;
    int c = 0;
    for (; c + kBlock <= channels; c += kBlock, row_out += static_cast<int64_t>(mr) * kBlock) {
      std::memcpy(row_out, in + c, kBlock * sizeof(float));
    }
    if (c < channels) std::memcpy(row_out, in + c, static_cast<size_t>(channels - c) * sizeof(float));
  }
}
}  // namespace internal

const char* fp32_epilogue_activation_name(Fp32EpilogueActivation activation) {
  switch (activation) {
    case Fp32EpilogueActivation::kNone: return "none";
    case Fp32EpilogueActivation::kSigmoid: return "sigmoid";
    case Fp32EpilogueActivation::kSilu: return "silu";
    case Fp32EpilogueActivation::kHardSwish: return "hardswish";
    case Fp32EpilogueActivation::kGelu: return "gelu";
  }
  return "unknown";
}

SgemmTile sgemm_tile(Isa isa) {
  const internal::SgemmImplementation& impl = sgemm_implementation(usable_isa(isa));
  return {impl.mr, impl.nr};
}

int sgemm_padded_n(int n, Isa isa) {
  const int nr = sgemm_tile(isa).nr;
  return (n + nr - 1) / nr * nr;
}

int64_t packed_sgemm_floats(int n, int64_t k, Isa isa) { return static_cast<int64_t>(sgemm_padded_n(n, isa)) * k; }

void pack_sgemm_into(const SgemmWeightsDesc& desc, Isa isa, float* out) {
  const SgemmTile tile = sgemm_tile(usable_isa(isa));
  const int64_t k = static_cast<int64_t>(desc.taps) * desc.channels;
  const int n_padded = sgemm_padded_n(desc.n, isa);
  for (int panel = 0; panel < n_padded / tile.nr; ++panel) {
    float* panel_out = out + panel * k * tile.nr;
    const int columns = std::min(tile.nr, desc.n - panel * tile.nr);
    for (int tap = 0; tap < desc.taps; ++tap) {
      for (int c = 0; c < desc.channels; ++c) {
        float* row = panel_out + (static_cast<int64_t>(tap) * desc.channels + c) * tile.nr;
        const float* in = desc.weights + tap * desc.stride_tap + c * desc.stride_channel + panel * tile.nr * desc.stride_n;
        if (desc.stride_n == 1) {
          std::memcpy(row, in, static_cast<size_t>(columns) * sizeof(float));
        } else {
          for (int column = 0; column < columns; ++column) row[column] = in[column * desc.stride_n];
        }
        std::fill(row + columns, row + tile.nr, 0.0f);  // padded columns stay 0
      }
    }
  }
}

void scale_packed_sgemm_channels(const PackedSgemm& packed, const float* scale, int n_begin, int n_end, float* out) {
  assert(n_begin % packed.nr == 0);
  const int64_t k = packed.k();
  const int nr = packed.nr;
  for (int panel = n_begin / nr; panel < (std::min(n_end, packed.n) + nr - 1) / nr; ++panel) {
    const float* __restrict in = packed.data.data() + panel * k * nr;
    float* __restrict panel_out = out + panel * k * nr;
    for (int64_t row = 0; row < k; ++row) {
      const float s = scale[row % packed.channels];
      for (int j = 0; j < nr; ++j) panel_out[row * nr + j] = in[row * nr + j] * s;
    }
  }
}

PackedSgemm pack_sgemm(const SgemmWeightsDesc& desc, Isa isa) {
  PackedSgemm packed;
  packed.isa = usable_isa(isa);
  const SgemmTile tile = sgemm_tile(packed.isa);
  packed.n = desc.n;
  packed.taps = desc.taps;
  packed.channels = desc.channels;
  packed.mr = tile.mr;
  packed.nr = tile.nr;
  packed.n_padded = sgemm_padded_n(desc.n, packed.isa);
  packed.data.resize(static_cast<size_t>(packed.n_padded * packed.k()));
  packed.bias.resize(static_cast<size_t>(packed.n_padded));
  packed.zeros.resize(static_cast<size_t>(std::max(desc.channels, 1)));
  pack_sgemm_into(desc, packed.isa, packed.data.data());
  if (desc.bias) std::copy(desc.bias, desc.bias + desc.n, packed.bias.data());
  return packed;
}

PackedSgemm packed_sgemm_view(int n, int taps, int channels, Isa isa, const float* data, const float* bias,
                              bool with_zeros) {
  PackedSgemm packed;
  packed.isa = usable_isa(isa);
  const SgemmTile tile = sgemm_tile(packed.isa);
  packed.n = n;
  packed.taps = taps;
  packed.channels = channels;
  packed.mr = tile.mr;
  packed.nr = tile.nr;
  packed.n_padded = sgemm_padded_n(n, packed.isa);
  packed.data = AlignedBuffer<float>::view(data, static_cast<size_t>(packed_sgemm_floats(n, packed.k(), packed.isa)));
  packed.bias = AlignedBuffer<float>::view(bias, static_cast<size_t>(packed.n_padded));
  if (with_zeros) packed.zeros.resize(static_cast<size_t>(std::max(channels, 1)));
  return packed;
}

void run_sconv(const PackedSgemm& packed, const SconvGeometry& g, const SconvArgs& args, const Fp32Epilogue& epilogue,
               int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  // 1x1, stride 1, no padding, images back to back: output pixel m reads input pixel m, a plain
  // GEMM (the pointer of each row without the window arithmetic: MobileNet's 112x112 1x1 layers
  // have few channels per pixel and spent a third of their time on it).
  if (packed.taps == 1 && g.stride_height == 1 && g.stride_width == 1 && g.pad_top == 0 && g.pad_left == 0 &&
      g.output_height == g.input_height && g.output_width == g.input_width &&
      g.input_image_stride == static_cast<int64_t>(g.input_height) * g.input_width * g.input_pixel_stride) {
    run_sgemm(packed, args.input, g.input_pixel_stride, args.output, args.output_row_stride, epilogue, m_begin, m_end,
              n_begin, n_end);
    return;
  }
  if (row_taps_apply(packed, g)) {
    run_row_taps(packed, g, args, epilogue, m_begin, m_end, n_begin, n_end);
    return;
  }
  const int64_t image_pixels = g.output_pixels_per_image();
  const int mr = packed.mr;
  const float* zeros = packed.zeros.data();
  // A pixel whose window is inside the input: tap t at the window's first pixel + tap_offsets[t]
  // (the 7x7 stem spends a quarter of its time on the pointers otherwise).
  const int taps = g.kernel_height * g.kernel_width;
  assert(taps <= kSgemmMaxTaps);
  int64_t tap_offsets[kSgemmMaxTaps];
  for (int ky = 0; ky < g.kernel_height; ++ky) {
    for (int kx = 0; kx < g.kernel_width; ++kx) {
      tap_offsets[ky * g.kernel_width + kx] =
          (static_cast<int64_t>(ky) * g.dilation_height * g.input_width + kx * g.dilation_width) * g.input_pixel_stride;
    }
  }
  const int window_height = (g.kernel_height - 1) * g.dilation_height + 1;
  const int window_width = (g.kernel_width - 1) * g.dilation_width + 1;
  auto fill = [&](int64_t m, int rows, const float** pointers) {
    int64_t image = m / image_pixels;
    int64_t pixel = m % image_pixels;
    int oy = static_cast<int>(pixel / g.output_width), ox = static_cast<int>(pixel % g.output_width);
    for (int r = 0; r < rows; ++r) {
      const int y0 = oy * g.stride_height - g.pad_top, x0 = ox * g.stride_width - g.pad_left;
      if (y0 >= 0 && x0 >= 0 && y0 + window_height <= g.input_height && x0 + window_width <= g.input_width) {
        const float* origin =
            args.input + image * g.input_image_stride + (static_cast<int64_t>(y0) * g.input_width + x0) * g.input_pixel_stride;
        for (int tap = 0; tap < taps; ++tap) pointers[tap * mr + r] = origin + tap_offsets[tap];
      } else {
        internal::tap_pointers(g, args.input + image * g.input_image_stride, oy, ox, zeros, pointers + r, mr);
      }
      if (++ox == g.output_width) {
        ox = 0;
        if (++oy == g.output_height) oy = 0, ++image;
      }
    }
  };
  const int64_t row_bytes = g.input_pixel_stride * g.stride_width * static_cast<int64_t>(sizeof(float));
  drive(packed, fill, row_bytes, args.output, args.output_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

void run_sgemm(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
               const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  run_sgemm_with_layout(packed, a, a_row_stride, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end,
                        SgemmALayout::kRows);
}

void run_sgemm_with_layout(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c,
                           int64_t c_row_stride, const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end,
                           int n_begin, int n_end, SgemmALayout layout) {
  assert(packed.taps == 1);
  // One column (x^2 times a column of ones: F.normalize's norm): row dots (fp32_dot_rows.h).
  if (dot_rows_applies(packed, epilogue) && n_begin == 0 && n_end >= 1) {
    run_dot_rows(packed, a, a_row_stride, c, c_row_stride, epilogue, m_begin, m_end);
    return;
  }
  // A few rows (a batch-1 fully connected layer): the GEMV kernel, same sums (fp32_gemv.h).
  if (sgemv_applies(packed, m_end - m_begin)) {
    run_sgemv(packed, a, a_row_stride, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
    return;
  }
  auto fill = [&](int64_t m, int rows, const float** pointers) {
    for (int r = 0; r < rows; ++r) pointers[r] = a + (m + r) * a_row_stride;
  };
  const bool pack_a = layout == SgemmALayout::kPacked ||
                      (layout == SgemmALayout::kAuto && sgemm_packs_a(packed, n_end - n_begin));
  drive(packed, fill, a_row_stride * static_cast<int64_t>(sizeof(float)), c, c_row_stride, epilogue, m_begin, m_end,
        n_begin, n_end, pack_a);
}

std::string sgemm_kernel_name(const PackedSgemm& packed, bool convolution) {
  return sgemm_kernel_name(packed.isa, convolution);
}

std::string sgemm_kernel_name(Isa isa, bool convolution) {
  const internal::SgemmImplementation& impl = sgemm_implementation(usable_isa(isa));
  return fmt::format("f32-{}-{}x{}-{}", convolution ? "igemm" : "gemm", impl.mr, impl.nr, impl.isa_suffix);
}

}  // namespace qdqrt::kernels
