// The igemm driver that skips each row tile's taps that read only padding (fp32_live_taps.h).
#include "kernels/fp32/fp32_live_taps.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_sgemm_blocking.h"

namespace qdqrt::kernels {

namespace {

// run_sconv's blocking (fp32_sgemm_blocking.h): depth blocks, row blocks whose A block fits
// kRowBlockBytes, row tiles outer when the range's weights fit kRowsOuterBytes, A copied per tile
// when rows are 4 KiB apart and the tile runs at least kCopyAPanels panels.
constexpr int kOneBlockDepth = internal::kSgemmOneBlockDepth;
constexpr int kMaxMr = internal::kSgemmMaxMr;
constexpr int kCopyAPanels = internal::kSgemmCopyAPanels;
constexpr int64_t kRowsOuterBytes = internal::kSgemmRowsOuterBytes;
constexpr int64_t kRowBlockBytes = internal::kSgemmRowBlockBytes;
constexpr int kCopyPad = 16;
constexpr int64_t kPointerCapacity = 4096;
static_assert(kPointerCapacity >= kSgemmMaxTaps * kMaxMr);

// Whether some output position o in [0, outputs) has its tap k read outside [0, size).
bool reaches_padding(int size, int outputs, int kernel, int stride, int dilation, int pad) {
  const int64_t first = -static_cast<int64_t>(pad);
  const int64_t last = static_cast<int64_t>(outputs - 1) * stride - pad + static_cast<int64_t>(kernel - 1) * dilation;
  return first < 0 || last >= size;
}

// The taps k of one dimension whose input position origin + k * dilation is inside [0, size): an
// interval [first, last] (empty: first > last, stored as 0, -1).
struct TapInterval {
  int first = 0, last = -1;
  bool operator==(const TapInterval& other) const { return first == other.first && last == other.last; }
};
TapInterval live_interval(int64_t origin, int size, int kernel, int dilation) {
  const int64_t first = origin >= 0 ? 0 : (-origin + dilation - 1) / dilation;
  const int64_t last = origin > size - 1 ? -1 : std::min<int64_t>(kernel - 1, (size - 1 - origin) / dilation);
  if (first > last) return {};
  return {static_cast<int>(first), static_cast<int>(last)};
}

// Output pixel p's live taps: rows x columns of the kernel.
struct LiveWindow {
  TapInterval rows, columns;
  bool operator==(const LiveWindow& other) const { return rows == other.rows && columns == other.columns; }
  bool has(int ky, int kx) const { return ky >= rows.first && ky <= rows.last && kx >= columns.first && kx <= columns.last; }
};
LiveWindow live_window(const SconvGeometry& g, int64_t p) {
  const int64_t pixel = p % g.output_pixels_per_image();
  const int64_t oy = pixel / g.output_width, ox = pixel % g.output_width;
  return {live_interval(oy * g.stride_height - g.pad_top, g.input_height, g.kernel_height, g.dilation_height),
          live_interval(ox * g.stride_width - g.pad_left, g.input_width, g.kernel_width, g.dilation_width)};
}

// Rows of the row tile starting at output pixel m (at most `mr`, ending at `end`): a tile ends
// early where the pixels' live taps change, once it holds mr / 2 rows (fewer would cost the
// microkernel more than the dead taps it skips), so that ASPP's bands of the output, whose
// pixels share their live taps, mostly fill their own tiles.
int row_tile_size(const SconvGeometry& g, int64_t m, int64_t end, int mr) {
  const int min_rows = std::max(1, mr / 2);
  LiveWindow previous = live_window(g, m);
  int rows = 1;
  while (rows < mr && m + rows < end) {
    const LiveWindow next = live_window(g, m + rows);
    if (!(next == previous) && rows >= min_rows) break;
    previous = next;
    ++rows;
  }
  return rows;
}

}  // namespace

double sconv_live_tap_fraction(const SconvGeometry& g, int mr) {
  if (!reaches_padding(g.input_height, g.output_height, g.kernel_height, g.stride_height, g.dilation_height,
                       g.pad_top) &&
      !reaches_padding(g.input_width, g.output_width, g.kernel_width, g.stride_width, g.dilation_width, g.pad_left)) {
    return 1.0;
  }
  // Multiply-adds of the tiles' live taps (rows x taps) over every row's every tap, one image.
  const int64_t pixels = g.output_pixels_per_image();
  const int taps = g.kernel_height * g.kernel_width;
  int64_t live = 0;
  mr = std::clamp(mr, 1, kMaxMr);
  LiveWindow windows[kMaxMr];
  for (int64_t m = 0; m < pixels;) {
    const int rows = row_tile_size(g, m, pixels, mr);
    for (int r = 0; r < rows; ++r) windows[r] = live_window(g, m + r);
    int tile_live = 0;
    for (int ky = 0; ky < g.kernel_height; ++ky) {
      for (int kx = 0; kx < g.kernel_width; ++kx) {
        bool inside = false;
        for (int r = 0; r < rows && !inside; ++r) inside = windows[r].has(ky, kx);
        tile_live += inside;
      }
    }
    live += static_cast<int64_t>(tile_live) * rows;
    m += rows;
  }
  return pixels > 0 ? static_cast<double>(live) / (static_cast<double>(pixels) * taps) : 1.0;
}

bool sconv_live_taps_apply(const PackedSgemm& packed, const SconvGeometry& g) {
  if (packed.taps <= 1 || packed.taps != g.kernel_height * g.kernel_width || g.output_height <= 0 ||
      g.output_width <= 0 || packed.mr <= 0) {
    return false;
  }
  const double fraction = sconv_live_tap_fraction(g, packed.mr);
  return fraction <= (g.output_width < packed.mr ? kLiveTapsNarrowMaxFraction : kLiveTapsMaxFraction);
}

void run_sconv_live_taps(const PackedSgemm& packed, const SconvGeometry& g, const SconvArgs& args,
                         const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  const internal::SgemmImplementation& impl = sgemm_implementation(packed.isa);
  assert(impl.mr == packed.mr && impl.nr == packed.nr && n_begin % packed.nr == 0);
  assert(packed.taps == g.kernel_height * g.kernel_width && packed.mr <= kMaxMr);
  const int taps = packed.taps, mr = packed.mr, nr = packed.nr, channels = packed.channels;
  const float* zeros = packed.zeros.data();
  const int64_t image_pixels = g.output_pixels_per_image();

  const internal::SgemmDepthBlocking depth_blocks = internal::sgemm_depth_blocking(taps, channels);
  const int channel_chunk = depth_blocks.channel_chunk, taps_per_block = depth_blocks.taps_per_block;

  // Per row block: every tile's tap pointers [tile][tap][MR] and live flags [tile][tap], and its
  // first and last live tap (tap 0 when none is: its zero rows give the bias and epilogue).
  const float* pointers[kPointerCapacity];
  uint8_t live[kPointerCapacity];
  const int64_t tile_pointers = static_cast<int64_t>(taps) * mr;
  const int64_t block_depth = static_cast<int64_t>(channel_chunk) * taps_per_block;
  constexpr int64_t kMaxTiles = kPointerCapacity / kMaxMr;
  const int64_t block_tiles = std::clamp<int64_t>(kRowBlockBytes / std::max<int64_t>(block_depth * 4, 1) / mr, 1,
                                                  std::min(kMaxTiles, kPointerCapacity / tile_pointers));
  int first_live[kMaxTiles], last_live[kMaxTiles];
  // The row block's tiles: first output pixel and rows (row_tile_size: they end where the live taps
  // change).
  int64_t tile_begin[kMaxTiles];
  int tile_size[kMaxTiles];

  auto fill = [&](int64_t m, int rows, int64_t tile) {
    const float** tile_rows = pointers + tile * tile_pointers;
    uint8_t* tile_live = live + tile * taps;
    std::fill_n(tile_live, taps, uint8_t{0});
    int64_t image = m / image_pixels, pixel = m % image_pixels;
    int oy = static_cast<int>(pixel / g.output_width), ox = static_cast<int>(pixel % g.output_width);
    for (int r = 0; r < rows; ++r) {
      const float* image_input = args.input + image * g.input_image_stride;
      const int y0 = oy * g.stride_height - g.pad_top, x0 = ox * g.stride_width - g.pad_left;
      for (int ky = 0, tap = 0; ky < g.kernel_height; ++ky) {
        const int y = y0 + ky * g.dilation_height;
        const bool row_inside = y >= 0 && y < g.input_height;
        for (int kx = 0; kx < g.kernel_width; ++kx, ++tap) {
          const int x = x0 + kx * g.dilation_width;
          const bool inside = row_inside && x >= 0 && x < g.input_width;
          tile_rows[tap * mr + r] =
              inside ? image_input + (static_cast<int64_t>(y) * g.input_width + x) * g.input_pixel_stride : zeros;
          tile_live[tap] |= static_cast<uint8_t>(inside);
        }
      }
      if (++ox == g.output_width) {
        ox = 0;
        if (++oy == g.output_height) oy = 0, ++image;
      }
    }
    int first = -1, last = -1;
    for (int tap = 0; tap < taps; ++tap) {
      if (tile_live[tap]) {
        if (first < 0) first = tap;
        last = tap;
      }
    }
    if (first < 0) {
      tile_live[0] = 1;
      first = last = 0;
    }
    first_live[tile] = first;
    last_live[tile] = last;
  };

  internal::SgemmUkernelArgs args_;
  args_.c_row_stride = args.output_row_stride;
  args_.residual_row_stride = epilogue.residual_row_stride;
  args_.min = epilogue.min;
  args_.max = epilogue.max;
  args_.activation = epilogue.activation;
  args_.w_tap_stride = static_cast<int64_t>(channels) * nr;
  const int64_t panel_floats = packed.k() * nr;
  const int64_t a_row_bytes = g.input_pixel_stride * g.stride_width * static_cast<int64_t>(sizeof(float));
  constexpr int64_t kCopyCapacity = kMaxMr * (kOneBlockDepth + kCopyPad);
  const bool copy_a = a_row_bytes % 4096 == 0 && (n_end - n_begin + nr - 1) / nr >= kCopyAPanels &&
                      static_cast<int64_t>(taps_per_block) * mr * (channel_chunk + kCopyPad) <= kCopyCapacity;
  alignas(64) float copied_a[kCopyCapacity];
  const float* copied_rows[kMaxMr * kSgemmMaxTaps];

  // The runs of live taps of `tile` in taps [tap_begin, tap_end): calls run(first_tap, count).
  auto for_each_run = [&](int64_t tile, int tap_begin, int tap_end, auto&& run) {
    const uint8_t* tile_live = live + tile * taps;
    for (int tap = tap_begin; tap < tap_end;) {
      if (!tile_live[tap]) {
        ++tap;
        continue;
      }
      int end = tap + 1;
      while (end < tap_end && tile_live[end]) ++end;
      run(tap, end - tap);
      tap = end;
    }
  };
  // The microkernel over the run (tap, count) of channels [channel, channel + chunk) of one tile;
  // args_.a, mr, c and the rest of the tile already set.
  auto set_run = [&](int64_t tile, int tap, int count, int channel, int chunk) {
    args_.taps = count;
    args_.channel_begin = channel;
    args_.channels = chunk;
    args_.first = tap == first_live[tile] && channel == 0;
    args_.last = tap + count - 1 == last_live[tile] && channel + chunk == channels;
  };
  auto weights = [&](int n, int tap, int channel) {
    return packed.data.data() + n / nr * panel_floats + (static_cast<int64_t>(tap) * channels + channel) * nr;
  };
  auto call = [&](int n, int64_t m, int rows) {
    args_.mr = rows;
    args_.nc = std::min(nr, n_end - n);
    args_.bias = packed.bias.data() + n;
    args_.c = args.output + m * args.output_row_stride + n;
    args_.residual = epilogue.residual ? epilogue.residual + m * epilogue.residual_row_stride + n : nullptr;
    impl.ukernel(args_);
  };
  // One tile's depth block across every panel of the range (its A copied first when copy_a).
  auto tile_panels = [&](int64_t tile, int64_t m, int rows, int tap_begin, int channel) {
    const int tap_end = std::min(taps, tap_begin + taps_per_block);
    const int chunk = std::min(channel_chunk, channels - channel);
    const float** tile_rows = pointers + tile * tile_pointers;
    for_each_run(tile, tap_begin, tap_end, [&](int tap, int count) {
      set_run(tile, tap, count, channel, chunk);
      args_.a = tile_rows + tap * mr;
      if (copy_a) {
        const int64_t copy_stride = chunk + kCopyPad;
        for (int t = 0; t < count; ++t) {
          for (int r = 0; r < rows; ++r) {
            float* out = copied_a + (t * mr + r) * copy_stride;
            std::memcpy(out, args_.a[t * mr + r] + channel, static_cast<size_t>(chunk) * sizeof(float));
            copied_rows[t * mr + r] = out;
          }
        }
        args_.a = copied_rows;
        args_.channel_begin = 0;
      }
      for (int n = n_begin; n < n_end; n += nr) {
        args_.w = weights(n, tap, channel);
        call(n, m, rows);
      }
    });
  };

  args_.next_c = args_.next_residual = nullptr;
  args_.prefetched = false;
  const bool rows_outer = packed.k() * (n_end - n_begin) * static_cast<int64_t>(sizeof(float)) <= kRowsOuterBytes;
  auto rows = [&](int64_t tile) { return tile_size[tile]; };
  for (int64_t block_begin = m_begin; block_begin < m_end;) {
    int64_t tiles = 0;
    while (tiles < block_tiles && block_begin < m_end) {
      tile_begin[tiles] = block_begin;
      tile_size[tiles] = row_tile_size(g, block_begin, m_end, mr);
      fill(block_begin, tile_size[tiles], tiles);
      block_begin += tile_size[tiles++];
    }
    if (rows_outer) {
      for (int64_t tile = 0; tile < tiles; ++tile) {
        for (int tap = 0; tap < taps; tap += taps_per_block) {
          for (int channel = 0; channel < channels; channel += channel_chunk) {
            tile_panels(tile, tile_begin[tile], rows(tile), tap, channel);
          }
        }
      }
      continue;
    }
    for (int tap_begin = 0; tap_begin < taps; tap_begin += taps_per_block) {
      const int tap_end = std::min(taps, tap_begin + taps_per_block);
      for (int channel = 0; channel < channels; channel += channel_chunk) {
        if (copy_a) {
          for (int64_t tile = 0; tile < tiles; ++tile) {
            tile_panels(tile, tile_begin[tile], rows(tile), tap_begin, channel);
          }
          continue;
        }
        const int chunk = std::min(channel_chunk, channels - channel);
        // Each panel's depth block stays in L1 while the tiles pass.
        for (int n = n_begin; n < n_end; n += nr) {
          for (int64_t tile = 0; tile < tiles; ++tile) {
            const float** tile_rows = pointers + tile * tile_pointers;
            for_each_run(tile, tap_begin, tap_end, [&](int tap, int count) {
              set_run(tile, tap, count, channel, chunk);
              args_.a = tile_rows + tap * mr;
              args_.w = weights(n, tap, channel);
              call(n, tile_begin[tile], rows(tile));
            });
          }
        }
      }
    }
  }
}

}  // namespace qdqrt::kernels
