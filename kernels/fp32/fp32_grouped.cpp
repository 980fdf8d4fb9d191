// Grouped fp32 convolutions as blocks of dense igemm convolutions (fp32_grouped.h).
#include "kernels/fp32/fp32_grouped.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/fp32/fp32_conv_internal.h"
#include "kernels/fp32/fp32_nhwc_conv_rule.h"

namespace qdqrt::kernels {

GroupedSgemmLayout grouped_sgemm_layout(int out_channels, int in_per_group, int taps, int group, Isa isa) {
  const int out_per_group = out_channels / group;
  const int block_groups = static_cast<int>(fp32_group_block_groups(out_per_group, sgemm_tile(isa).nr));
  const int full_blocks = group / block_groups, tail_groups = group % block_groups;
  GroupedSgemmLayout layout;
  layout.block_in = block_groups * in_per_group;
  layout.block_out = block_groups * out_per_group;
  layout.full_out = full_blocks * layout.block_out;
  layout.tail_in = tail_groups * in_per_group;
  layout.tail_out = tail_groups * out_per_group;
  layout.full_floats =
      layout.full_out > 0 ? packed_sgemm_floats(layout.full_out, int64_t{taps} * layout.block_in, isa) : 0;
  layout.tail_floats =
      layout.tail_out > 0 ? packed_sgemm_floats(layout.tail_out, int64_t{taps} * layout.tail_in, isa) : 0;
  layout.full_bias = layout.full_out > 0 ? sgemm_padded_n(layout.full_out, isa) : 0;
  layout.tail_bias = layout.tail_out > 0 ? sgemm_padded_n(layout.tail_out, isa) : 0;
  layout.in_per_group = in_per_group;
  layout.out_per_group = out_per_group;
  layout.taps = taps;
  return layout;
}

namespace {

// Output channels [oc_begin, oc_begin + count) of blocks of `block_in` input channels: dense
// [count][block_in][taps] weights, each channel's at its group's place in its block, then packed.
PackedSgemm pack_part(const float* weights, const float* bias, int oc_begin, int count, int in_per_group,
                      int out_per_group, int block_in, int taps, Isa isa) {
  const int block_groups = block_in / in_per_group;
  std::vector<float> dense(static_cast<size_t>(count) * block_in * taps, 0.0f);
  for (int o = 0; o < count; ++o) {
    const int oc = oc_begin + o;
    const int slot = o / out_per_group % block_groups;  // the group's place in its block (parts start at a block)
    for (int c = 0; c < in_per_group; ++c) {
      for (int tap = 0; tap < taps; ++tap) {
        dense[(static_cast<size_t>(o) * block_in + slot * in_per_group + c) * taps + tap] =
            weights[(static_cast<size_t>(oc) * in_per_group + c) * taps + tap];
      }
    }
  }
  SgemmWeightsDesc desc;
  desc.n = count;
  desc.taps = taps;
  desc.channels = block_in;
  desc.weights = dense.data();
  desc.stride_n = static_cast<int64_t>(block_in) * taps;
  desc.stride_tap = 1;
  desc.stride_channel = taps;
  desc.bias = bias != nullptr ? bias + oc_begin : nullptr;
  return pack_sgemm(desc, isa);
}

}  // namespace

PackedGroupedSgemm pack_grouped_sgemm(const float* weights, const float* bias, int out_channels, int in_per_group,
                                      int taps, int group, Isa isa) {
  PackedGroupedSgemm packed;
  packed.layout = grouped_sgemm_layout(out_channels, in_per_group, taps, group, isa);
  const GroupedSgemmLayout& l = packed.layout;
  const int out_per_group = out_channels / group;
  if (l.full_out > 0) {
    packed.full = pack_part(weights, bias, 0, l.full_out, in_per_group, out_per_group, l.block_in, taps, isa);
  }
  if (l.tail_out > 0) {
    packed.tail = pack_part(weights, bias, l.full_out, l.tail_out, in_per_group, out_per_group, l.tail_in, taps, isa);
  }
  return packed;
}

PackedGroupedSgemm packed_grouped_sgemm_view(const GroupedSgemmLayout& layout, int taps, Isa isa, const float* data,
                                             const float* bias) {
  PackedGroupedSgemm packed;
  packed.layout = layout;
  if (layout.full_out > 0) packed.full = packed_sgemm_view(layout.full_out, taps, layout.block_in, isa, data, bias);
  if (layout.tail_out > 0) {
    packed.tail = packed_sgemm_view(layout.tail_out, taps, layout.tail_in, isa, data + layout.full_floats,
                                    bias + layout.full_bias);
  }
  return packed;
}

void run_grouped_sconv_blocks(const PackedGroupedSgemm& packed, const SconvGeometry& geometry, const SconvArgs& args,
                              const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  const GroupedSgemmLayout& l = packed.layout;
  for (int block = n_begin / std::max(l.block_out, 1); block * l.block_out < std::min(n_end, l.full_out); ++block) {
    assert(l.block_out % packed.full.nr == 0 && n_begin % packed.full.nr == 0);
    SconvArgs block_args = args;
    block_args.input = args.input + static_cast<int64_t>(block) * l.block_in;
    run_sconv(packed.full, geometry, block_args, epilogue, m_begin, m_end, std::max(n_begin, block * l.block_out),
              std::min(n_end, (block + 1) * l.block_out));
  }
  if (l.tail_out > 0 && n_end > l.full_out) {
    // The tail block: its own packing, columns counted from its first output channel.
    SconvArgs tail_args = args;
    tail_args.input = args.input + static_cast<int64_t>(l.full_out / l.block_out) * l.block_in;
    tail_args.output = args.output + l.full_out;
    Fp32Epilogue tail_epilogue = epilogue;
    if (epilogue.residual != nullptr) tail_epilogue.residual = epilogue.residual + l.full_out;
    run_sconv(packed.tail, geometry, tail_args, tail_epilogue, m_begin, m_end,
              std::max(n_begin, l.full_out) - l.full_out, n_end - l.full_out);
  }
}

namespace avx512skx {
void grouped_shift_ukernel(const internal::SgemmUkernelArgs& args, int group);  // fp32_grouped_avx512skx.cpp
}

namespace {

// Asks for the line at `address` in L2 (a hint; nothing where the compiler has no prefetch).
inline void prefetch_l2(const float* address) {
#if defined(__GNUC__)
  __builtin_prefetch(address, 0, 2);
#else
  (void)address;
#endif
}

// The weights of the shift tile: [taps][group][16], group 4 or 8.
constexpr int kShiftMaxTaps = 9;
constexpr int kShiftMaxGroup = 8;

// A half panel of one part (the full blocks or the tail block): `lanes` output channels from
// part-local column `column`, and the input channels [channel_begin, channel_begin + channels) of
// the groups they belong to (counted from the input's channel 0).
struct GroupedHalf {
  int channel_begin = 0, channels = 0, columns = 0;
  int64_t weight_offset = 0;  // floats from the part's packed data to the half's first weight row
};

GroupedHalf grouped_half(const GroupedSgemmLayout& l, bool tail, int column, int lanes, int nr) {
  const int block_out = tail ? l.tail_out : l.block_out;
  const int block_in = tail ? l.tail_in : l.block_in;
  const int part_out = tail ? l.tail_out : l.full_out;
  const int part_channel = tail ? l.full_out / std::max(l.block_out, 1) * l.block_in : 0;
  const int block = column / block_out, in_block = column % block_out;
  GroupedHalf half;
  half.columns = std::min({lanes, part_out - column, block_out - in_block});
  const int first_group = in_block / l.out_per_group;
  const int last_group = (in_block + half.columns - 1) / l.out_per_group;
  half.channels = (last_group - first_group + 1) * l.in_per_group;
  half.channel_begin = part_channel + block * block_in + first_group * l.in_per_group;
  const int64_t k = static_cast<int64_t>(l.taps) * block_in;
  half.weight_offset = column / nr * k * nr + static_cast<int64_t>(first_group) * l.in_per_group * nr + column % nr;
  return half;
}

// The shift tile's weights of one half panel, [taps][kGroup][16]: shift s, lane (q, m) holds the
// weight of output (m + s) mod kGroup of the half's group q on its input m (the panel row of
// channel q * kGroup + m); lanes past the half's `columns` are 0. w: the half's first weight row,
// rows `nr` floats apart, `channels` rows per tap. Unrolled over the lanes: it runs once per half
// per row block.
template <int kGroup>
void pack_shift_weights(const float* w, int taps, int channels, int nr, int columns, float* out) {
  for (int tap = 0; tap < taps; ++tap, w += static_cast<int64_t>(channels) * nr) {
    for (int s = 0; s < kGroup; ++s, out += 16) {
#pragma GCC unroll 16
      for (int lane = 0; lane < 16; ++lane) {
        const int q = lane / kGroup, m = lane % kGroup;
        out[lane] = lane < columns ? w[static_cast<int64_t>(lane) * nr + q * kGroup + (m + s) % kGroup] : 0.0f;
      }
    }
  }
}

}  // namespace

bool grouped_sgemm_runs_halves(const GroupedSgemmLayout& layout) {
  const int channels = layout.full_out / std::max(layout.block_out, 1) * layout.block_in + layout.tail_in;
  const int block_groups = layout.block_in / std::max(layout.in_per_group, 1);
  return block_groups > 1 && channels <= kGroupedHalvesMaxChannels;
}

bool grouped_sgemm_shift_applies(const GroupedSgemmLayout& layout, Isa isa) {
  return grouped_sgemm_runs_halves(layout) && (layout.in_per_group == 4 || layout.in_per_group == 8) &&
         layout.out_per_group == layout.in_per_group && layout.taps <= kShiftMaxTaps &&
         sgemm_implementation(usable_isa(isa)).ukernel == avx512skx::sgemm_ukernel;
}

double grouped_sgemm_depth(const GroupedSgemmLayout& l, Isa isa) {
  if (!grouped_sgemm_runs_halves(l)) return static_cast<double>(l.taps) * l.block_in;
  if (grouped_sgemm_shift_applies(l, isa)) return static_cast<double>(l.taps) * l.in_per_group;
  const int nr = sgemm_tile(isa).nr, lanes = nr / 2;
  double sum = 0.0;
  int outputs = 0;
  for (const bool tail : {false, true}) {
    const int part_out = tail ? l.tail_out : l.full_out;
    for (int column = 0; column < part_out; column += lanes) {
      const GroupedHalf half = grouped_half(l, tail, column, lanes, nr);
      sum += static_cast<double>(half.columns) * half.channels;
      outputs += half.columns;
    }
  }
  return outputs > 0 ? l.taps * sum / outputs : 0.0;
}

void run_grouped_sconv(const PackedGroupedSgemm& packed, const SconvGeometry& g, const SconvArgs& args,
                       const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end) {
  const GroupedSgemmLayout& l = packed.layout;
  if (!grouped_sgemm_runs_halves(l)) {
    run_grouped_sconv_blocks(packed, g, args, epilogue, m_begin, m_end, n_begin, n_end);
    return;
  }
  const PackedSgemm& any = packed.full.n > 0 ? packed.full : packed.tail;
  const internal::SgemmImplementation& impl = sgemm_implementation(any.isa);
  const int mr = any.mr, nr = any.nr, lanes = nr / 2;
  assert(impl.mr == mr && impl.nr == nr && n_begin % nr == 0);
  const int taps = l.taps;
  assert(taps == g.kernel_height * g.kernel_width && taps <= kSgemmMaxTaps);
  const bool shift = grouped_sgemm_shift_applies(l, any.isa);
  const int group_width = l.in_per_group;
  alignas(64) float shift_weights[kShiftMaxTaps * kShiftMaxGroup * 16];
  // Padded taps read this zero row at any channel of the input (the packings' own zero rows
  // cover one block's channels).
  const int channels = l.full_out / std::max(l.block_out, 1) * l.block_in + l.tail_in;
  alignas(64) float zeros[kGroupedHalvesMaxChannels];
  std::fill_n(zeros, channels, 0.0f);
  // Row pointers of every tile of a row block, filled once for all the half panels: [tile][tap][MR].
  constexpr int64_t kPointerCapacity = 4096;
  static_assert(kPointerCapacity >= kSgemmMaxTaps * 16);
  const float* pointers[kPointerCapacity];
  const int64_t tile_pointers = static_cast<int64_t>(taps) * mr;
  const int64_t block_rows = kPointerCapacity / tile_pointers * mr;
  // A pixel whose window is inside the input: tap t at the window's first pixel + tap_offsets[t].
  int64_t tap_offsets[kSgemmMaxTaps];
  for (int ky = 0; ky < g.kernel_height; ++ky) {
    for (int kx = 0; kx < g.kernel_width; ++kx) {
      tap_offsets[ky * g.kernel_width + kx] =
          (static_cast<int64_t>(ky) * g.dilation_height * g.input_width + kx * g.dilation_width) * g.input_pixel_stride;
    }
  }
  const int window_height = (g.kernel_height - 1) * g.dilation_height + 1;
  const int window_width = (g.kernel_width - 1) * g.dilation_width + 1;
  const int64_t image_pixels = g.output_pixels_per_image();
  auto fill = [&](int64_t m, int rows, const float** tile) {
    int64_t image = m / image_pixels;
    const int64_t pixel = m % image_pixels;
    int oy = static_cast<int>(pixel / g.output_width), ox = static_cast<int>(pixel % g.output_width);
    for (int r = 0; r < rows; ++r) {
      const int y0 = oy * g.stride_height - g.pad_top, x0 = ox * g.stride_width - g.pad_left;
      const float* image_input = args.input + image * g.input_image_stride;
      if (y0 >= 0 && x0 >= 0 && y0 + window_height <= g.input_height && x0 + window_width <= g.input_width) {
        const float* origin = image_input + (static_cast<int64_t>(y0) * g.input_width + x0) * g.input_pixel_stride;
        for (int tap = 0; tap < taps; ++tap) tile[tap * mr + r] = origin + tap_offsets[tap];
      } else {
        internal::tap_pointers(g, image_input, oy, ox, zeros, tile + r, mr);
      }
      if (++ox == g.output_width) {
        ox = 0;
        if (++oy == g.output_height) oy = 0, ++image;
      }
    }
  };
  internal::SgemmUkernelArgs ukernel_args;
  ukernel_args.taps = taps;
  ukernel_args.first = ukernel_args.last = true;
  ukernel_args.c_row_stride = args.output_row_stride;
  ukernel_args.residual_row_stride = epilogue.residual_row_stride;
  ukernel_args.min = epilogue.min;
  ukernel_args.max = epilogue.max;
  ukernel_args.activation = epilogue.activation;
  const int n_stop = std::min(n_end, l.full_out + l.tail_out);
  // The first column of the half panel after the one at column n (after the range's last, the
  // next row block's first), or n_stop when there is none.
  auto next_half_column = [&](int n, int columns, bool more_rows) {
    const int next = n + columns;
    return next < n_stop ? next : more_rows ? n_begin : n_stop;
  };
  for (int64_t block_begin = m_begin; block_begin < m_end; block_begin += block_rows) {
    const int64_t block_end = std::min(m_end, block_begin + block_rows);
    for (int64_t m = block_begin; m < block_end; m += mr) {
      fill(m, static_cast<int>(std::min<int64_t>(mr, block_end - m)), pointers + (m - block_begin) / mr * tile_pointers);
    }
    // Each half panel's weights (taps x its channels x one vector) stay in L1 while the block's row
    // tiles pass over them.
    for (int n = n_begin; n < n_stop;) {
      const bool tail = n >= l.full_out;
      const PackedSgemm& part = tail ? packed.tail : packed.full;
      const int column = tail ? n - l.full_out : n;
      const GroupedHalf half = grouped_half(l, tail, column, lanes, nr);
      ukernel_args.nc = std::min(half.columns, n_stop - n);
      ukernel_args.channel_begin = half.channel_begin;
      ukernel_args.channels = half.channels;
      ukernel_args.w = part.data.data() + half.weight_offset;
      ukernel_args.w_tap_stride = static_cast<int64_t>(part.channels) * nr;
      ukernel_args.bias = part.bias.data() + column;
      if (shift) {
        // Shift s, lane (q, m): the weight of output (m + s) mod G of the half's group q on its
        // input m, from the panel row of channel q * G + m; lanes past the half stay 0.
        if (group_width == 4) {
          pack_shift_weights<4>(ukernel_args.w, taps, part.channels, nr, half.columns, shift_weights);
        } else {
          pack_shift_weights<8>(ukernel_args.w, taps, part.channels, nr, half.columns, shift_weights);
        }
        ukernel_args.w = shift_weights;
      }
      // The next half panel's weight rows (one line each: taps x its channels, rows nr floats
      // apart) are fetched into L2 while this one's row tiles run, a share before each tile: a
      // model's layers evict the weights, and a half panel reads every other line of its panel,
      // which the hardware prefetchers did not follow (RegNet-X-400MF's 7x7 grouped convs ran 2.5x
      // slower with their weights cold than hot).
      const int next = next_half_column(n, half.columns, block_end < m_end);
      const float* prefetch_base = nullptr;
      int64_t prefetch_lines = 0, prefetch_channels = 1, prefetch_tap_stride = 0;
      if (next < n_stop) {
        const bool next_tail = next >= l.full_out;
        const PackedSgemm& next_part = next_tail ? packed.tail : packed.full;
        const GroupedHalf next_half = grouped_half(l, next_tail, next_tail ? next - l.full_out : next, lanes, nr);
        prefetch_base = next_part.data.data() + next_half.weight_offset;
        prefetch_channels = next_half.channels;
        prefetch_tap_stride = static_cast<int64_t>(next_part.channels) * nr;
        prefetch_lines = static_cast<int64_t>(taps) * next_half.channels;
      }
      const int64_t block_tiles = (block_end - block_begin + mr - 1) / mr;
      const int64_t lines_per_tile = (prefetch_lines + block_tiles - 1) / block_tiles;
      int64_t prefetched = 0;
      for (int64_t m = block_begin; m < block_end; m += mr) {
        const int64_t stop = std::min(prefetch_lines, prefetched + lines_per_tile);
        for (; prefetched < stop; ++prefetched) {
          prefetch_l2(prefetch_base + prefetched / prefetch_channels * prefetch_tap_stride +
                      prefetched % prefetch_channels * nr);
        }
        ukernel_args.mr = static_cast<int>(std::min<int64_t>(mr, block_end - m));
        ukernel_args.a = pointers + (m - block_begin) / mr * tile_pointers;
        ukernel_args.c = args.output + m * args.output_row_stride + n;
        ukernel_args.residual =
            epilogue.residual != nullptr ? epilogue.residual + m * epilogue.residual_row_stride + n : nullptr;
        if (shift) {
          avx512skx::grouped_shift_ukernel(ukernel_args, group_width);
        } else {
          impl.ukernel(ukernel_args);
        }
      }
      n += half.columns;
    }
  }
}

std::string grouped_sgemm_kernel_name(Isa isa) {
  return "f32-grouped-" + sgemm_kernel_name(isa, true).substr(4);  // "f32-igemm-..." -> "f32-grouped-igemm-..."
}

}  // namespace qdqrt::kernels
