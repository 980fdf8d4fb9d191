// The grouped form's AVX-512 VNNI runner (kernels/conv/qconv_grouped.h): the tap pointers of four
// tiles of at most 12 output pixels (a range's pixels in tiles of equal size) at once, then per
// group and tile a 12 x 16 register tile whose vpdpbusd broadcasts come straight from the input
// (pointer + group offset + 4 j), the group's packed 16-column weights one vector per k-group, and
// the GEMM tiles' epilogue (store_vector_plain, the single-op and general stores of
// qgemm_epilogue_avx512_inl.h: the same operations, the same bytes).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/conv/qconv_grouped.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"

namespace qdqrt::kernels::internal {

namespace {

// MR rows x 16 columns of one group: `pointers` holds each row's taps (row r's at r * taps),
// `offset` the group's first channel, b the group's packed weights ([k-group][16][4]).
// kTapGroups: the k-groups of one tap (group_in / 4) when known at compile time (4: RegNet-X's
// groups of 16, 2: RegNet-Y's of 8), so each tap's loop unrolls; 0: tap_groups at run time.
template <int MR, int kTapGroups>
void grouped_tile(const uint8_t* const* pointers, int taps, int tap_groups, int64_t offset, const int8_t* b,
                  const TileArgs& t) {
  if constexpr (kTapGroups > 0) tap_groups = kTapGroups;
  __m512i acc[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_si512();
  for (int tap = 0; tap < taps; ++tap) {
    const uint8_t* a[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) a[r] = pointers[r * taps + tap];
#pragma GCC unroll 8
    for (int j = 0; j < tap_groups; ++j) {
      const __m512i w = _mm512_loadu_si512(b);
      b += 64;
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        int32_t word;
        std::memcpy(&word, a[r] + offset + 4 * j, 4);
        acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_set1_epi32(word), w);
      }
    }
  }
  const int count = t.n_valid;
  if (plain_epilogue(t)) {
    const PlainStore store = plain_store(t);
    const ColumnConstants constants = load_column_constants(t, 0);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) store_vector_plain(acc[r], 0, count, r, constants, store);
    return;
  }
  if (const PointwiseOp op = single_op_epilogue(t); op != PointwiseOp::kCopy) {
    alignas(64) int32_t stored[MR][16];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) _mm512_store_si512(stored[r], acc[r]);
    store_block_single_op(op, &stored[0][0], MR, 1, t);
    return;
  }
  const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
  const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
  const ColumnConstants constants = load_column_constants(t, 0);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) store_vector(acc[r], 0, count, t, r, constants, clamp_min, clamp_max);
}

template <int kTapGroups, int... Rows>
void dispatch_grouped_tile(std::integer_sequence<int, Rows...>, int rows, const uint8_t* const* pointers, int taps,
                           int tap_groups, int64_t offset, const int8_t* b, const TileArgs& t) {
  ((rows == Rows + 1 ? (grouped_tile<Rows + 1, kTapGroups>(pointers, taps, tap_groups, offset, b, t), 0) : 0), ...);
}

}  // namespace

void run_conv_grouped_avx512vnni(const PackedConv& packed, const ConvShape& shape, const ConvRunArgs& args,
                                 const Epilogue& epilogue, int pixel_begin, int pixel_end, int group_begin,
                                 int group_end) {
  if (pixel_begin >= pixel_end || group_begin >= group_end) return;
  const int taps = packed.kernel_height * packed.kernel_width;
  const int group_in = packed.input_channels / packed.groups;
  const int group_out = packed.output_channels / packed.groups;
  const int tap_groups = group_in / 4;
  const int output_size = output_element_size(epilogue.output_type);
  alignas(64) uint8_t padding[kGroupedMaxChannels];
  std::memset(padding, static_cast<uint8_t>(packed.group_weights[0].input_zero_point),
              static_cast<size_t>(packed.input_channels));
  // The tap pointers of up to kChunkTiles tiles at once, their groups the outer loop: a group's
  // weights then serve every tile of the chunk from L1 (25 groups of 16: 58 KB of weights).
  constexpr int kChunkTiles = 4;
  const uint8_t* pointers[kChunkTiles][kGroupedRows * kGroupedMaxTaps];
  const bool finite_clamp = std::fabs(epilogue.clamp_min) <= 0x1p20f && std::fabs(epilogue.clamp_max) <= 0x1p20f;
  const int64_t c_row_bytes = args.output_pixel_stride * output_size;
  char* output = static_cast<char*>(args.output);
  const char* residual = static_cast<const char*>(epilogue.residual);
  Epilogue program_epilogue;
  // The pixels in tiles of equal rows (49 = 10 + 10 + 10 + 10 + 9, not 4 x 12 + 1): a tile of few
  // rows waits on vpdpbusd's latency, so a one-row tail costs most of a full tile.
  const int64_t pixels = pixel_end - pixel_begin;
  const int tiles = static_cast<int>((pixels + kGroupedRows - 1) / kGroupedRows);
  auto tile_begin = [&](int tile) { return pixel_begin + static_cast<int>(pixels * tile / tiles); };
  for (int chunk = 0; chunk < tiles; chunk += kChunkTiles) {
    const int chunk_end = std::min(tiles, chunk + kChunkTiles);
    for (int tile = chunk; tile < chunk_end; ++tile) {
      conv_grouped_pointers(shape, packed.kernel_height, packed.kernel_width, static_cast<const uint8_t*>(args.input),
                            args.input_pixel_stride, padding, tile_begin(tile), tile_begin(tile + 1) - tile_begin(tile),
                            pointers[tile - chunk]);
    }
    for (int g = group_begin; g < group_end; ++g) {
      const PackedGemm& weights = packed.group_weights[static_cast<size_t>(g)];
      // Only a pointwise program reads the group's channel offset: the others share the epilogue.
      const Epilogue* group_epilogue = &epilogue;
      if (epilogue.program != nullptr) {
        program_epilogue = epilogue;
        program_epilogue.program_channel_offset = epilogue.program_channel_offset + static_cast<int64_t>(g) * group_out;
        group_epilogue = &program_epilogue;
      }
      const int64_t offset = static_cast<int64_t>(g) * group_in;
      for (int tile = chunk; tile < chunk_end; ++tile) {
        const int m = tile_begin(tile);
        const int rows = tile_begin(tile + 1) - m;
        TileArgs t;
        t.bias = weights.bias.data();
        t.multiplier = weights.multiplier.data();
        t.float_bias = weights.float_bias.data();
        t.row_term = nullptr;
        t.column0 = 0;
        t.c = output + static_cast<int64_t>(m) * c_row_bytes + static_cast<int64_t>(g) * group_out * output_size;
        t.c_row_bytes = c_row_bytes;
        t.residual_row_bytes = epilogue.residual_row_stride;
        t.residual = residual != nullptr ? residual + static_cast<int64_t>(m) * t.residual_row_bytes +
                                               static_cast<int64_t>(g) * group_out
                                         : nullptr;
        t.n_valid = group_out;
        t.epilogue = group_epilogue;
        t.integer_clamp = weights.bounded && finite_clamp;
        const auto sequence = std::make_integer_sequence<int, kGroupedRows>{};
        const uint8_t* const* tile_pointers = pointers[tile - chunk];
        if (tap_groups == 4) {
          dispatch_grouped_tile<4>(sequence, rows, tile_pointers, taps, tap_groups, offset, weights.data.data(), t);
        } else if (tap_groups == 2) {
          dispatch_grouped_tile<2>(sequence, rows, tile_pointers, taps, tap_groups, offset, weights.data.data(), t);
        } else {
          dispatch_grouped_tile<0>(sequence, rows, tile_pointers, taps, tap_groups, offset, weights.data.data(), t);
        }
      }
    }
  }
}

}  // namespace qdqrt::kernels::internal
