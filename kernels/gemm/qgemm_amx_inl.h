// The AMX-INT8 GEMM kernel, written once over a tile layer (Tiles: the real instructions or the
// emulation of qgemm_amx_tiles_inl.h). Included by qgemm_amxint8.cpp and
// qgemm_amx_emulated_avx512vnni.cpp, each compiled with AVX-512 flags (the epilogue is the zmm one).
//
// Per driver tile (32 rows x kColumns): column blocks are taken two at a time (32 columns); C tiles
// 0..3 hold 2 row tiles x 2 column blocks, A tiles 4/5 the two 16-row slices of the panel, B tiles
// 6/7 16 k-groups of the two column blocks, read straight from the packed weights with their row
// stride (kColumns * 4 bytes). Every tile is 16 x 64 bytes, so one configuration serves all shapes:
// a k tail (fewer than 16 groups) is copied into zero-padded buffers, and so is a partial row tile
// (A may be the caller's matrix read in place, which has no rows past the last one).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/gemm/qgemm_amx.h"
#include "kernels/gemm/qgemm_copy_avx512_inl.h"
#include "kernels/gemm/qgemm_epilogue_avx512_inl.h"

namespace qdqrt::kernels::internal {
namespace {

constexpr int kAmxRowTiles = 2;
constexpr int kAmxMr = kAmxRowTiles * kAmxTileRows;
constexpr int kAmxGroupsPerTile = kAmxTileBytes / 4;  // k groups of 4 bytes in one A tile row / B tile

template <typename Tiles, int kColumns>
struct AmxTraits {
  static_assert(kColumns == 16 || kColumns == 64);
  static constexpr int kMr = kAmxMr;
  static constexpr int kNr = kColumns;
  static constexpr int kKGroup = 4;
  using PanelElement = uint8_t;
  static constexpr int kBlocks = kColumns / 16;
  static constexpr int64_t kBStride = kColumns * 4;  // bytes between packed k groups

  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    copy_flip_avx512(dst, src, count, flip);
  }

  template <int MR>
  static void tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t) {
    compute(a, a_stride, b, k_groups, t, MR);  // one body for every row count
  }

  // The two 16-row slices of A (row tile 1 only read with two row tiles).
  struct RowTiles {
    const uint8_t* a[2];
    int64_t stride[2];
    RowTiles offset(int64_t bytes) const { return {{a[0] + bytes, a[1] + bytes}, {stride[0], stride[1]}}; }
  };

  // One k step of 16 groups: A tiles (row tiles) times B tiles (column blocks) into the C tiles.
  template <bool kTwoRowTiles, bool kTwoBlocks>
  static void step(const RowTiles& a, const int8_t* b, int64_t b_stride) {
    Tiles::template load<4>(a.a[0], a.stride[0]);
    Tiles::template load<6>(b, b_stride);
    Tiles::template dpbusd<0, 4, 6>();
    if constexpr (kTwoBlocks) {
      Tiles::template load<7>(b + 64, b_stride);
      Tiles::template dpbusd<1, 4, 7>();
    }
    if constexpr (kTwoRowTiles) {
      Tiles::template load<5>(a.a[1], a.stride[1]);
      Tiles::template dpbusd<2, 5, 6>();
      if constexpr (kTwoBlocks) Tiles::template dpbusd<3, 5, 7>();
    }
  }

  // C tiles = A[32 or 16 rows][k] x B[k][blocks of 16 columns at b]; stored to acc (32 x 32 int32).
  template <bool kTwoRowTiles, bool kTwoBlocks>
  static void multiply(const RowTiles& a, const int8_t* b, int k_groups, int32_t* acc) {
    Tiles::template zero<0>();
    if constexpr (kTwoBlocks) Tiles::template zero<1>();
    if constexpr (kTwoRowTiles) Tiles::template zero<2>();
    if constexpr (kTwoRowTiles && kTwoBlocks) Tiles::template zero<3>();
    const int full_steps = k_groups / kAmxGroupsPerTile;
    for (int s = 0; s < full_steps; ++s) {
      step<kTwoRowTiles, kTwoBlocks>(a.offset(s * kAmxTileBytes), b + s * kAmxGroupsPerTile * kBStride, kBStride);
    }
    const int tail_groups = k_groups - full_steps * kAmxGroupsPerTile;
    if (tail_groups > 0) {
      // Zero-padded copies: the missing k groups multiply zeros, and nothing past the rows' k
      // bytes or the packed weights is read.
      alignas(64) uint8_t a_tail[kAmxMr][kAmxTileBytes];
      alignas(64) int8_t b_tail[kAmxGroupsPerTile][2 * kAmxTileBytes];
      const int a_rows = kTwoRowTiles ? kAmxMr : kAmxTileRows;
      const int tail_bytes = 4 * tail_groups;
      const int64_t k_offset = static_cast<int64_t>(full_steps) * kAmxTileBytes;
      for (int r = 0; r < a_rows; ++r) {
        const int tile = r / kAmxTileRows;
        std::memcpy(a_tail[r], a.a[tile] + (r % kAmxTileRows) * a.stride[tile] + k_offset, tail_bytes);
        std::memset(a_tail[r] + tail_bytes, 0, kAmxTileBytes - tail_bytes);
      }
      const int b_bytes = kTwoBlocks ? 2 * kAmxTileBytes : kAmxTileBytes;
      const int8_t* b_rows = b + static_cast<int64_t>(full_steps) * kAmxGroupsPerTile * kBStride;
      for (int g = 0; g < kAmxGroupsPerTile; ++g) {
        if (g < tail_groups) {
          std::memcpy(b_tail[g], b_rows + g * kBStride, b_bytes);
        } else {
          std::memset(b_tail[g], 0, b_bytes);
        }
      }
      const RowTiles tail{{a_tail[0], a_tail[kAmxTileRows]}, {kAmxTileBytes, kAmxTileBytes}};
      step<kTwoRowTiles, kTwoBlocks>(tail, &b_tail[0][0], 2 * kAmxTileBytes);
    }
    constexpr int64_t kAccStride = 32 * sizeof(int32_t);
    Tiles::template store<0>(acc, kAccStride);
    if constexpr (kTwoBlocks) Tiles::template store<1>(acc + 16, kAccStride);
    if constexpr (kTwoRowTiles) Tiles::template store<2>(acc + 16 * 32, kAccStride);
    if constexpr (kTwoRowTiles && kTwoBlocks) Tiles::template store<3>(acc + 16 * 32 + 16, kAccStride);
  }

  static void compute(const uint8_t* a, int64_t a_stride, const int8_t* b, int k_groups, const TileArgs& t, int rows) {
    alignas(64) int32_t acc[kAmxMr][32];
    const bool two_row_tiles = rows > kAmxTileRows;
    RowTiles row_tiles{{a, a + kAmxTileRows * a_stride}, {a_stride, a_stride}};
    // A partial row tile is copied, its missing rows zeroed: the driver may pass the caller's
    // matrix, which ends at its last row.
    const int partial_rows = rows % kAmxTileRows;
    if (partial_rows != 0) {
      const int tile = rows / kAmxTileRows;
      const int64_t k_bytes = 4 * static_cast<int64_t>(k_groups);
      uint8_t* copy = thread_scratch(ScratchSlot::kAmxRows, kAmxTileRows * k_bytes);
      const uint8_t* source = a + tile * kAmxTileRows * a_stride;
      for (int r = 0; r < partial_rows; ++r) std::memcpy(copy + r * k_bytes, source + r * a_stride, k_bytes);
      std::memset(copy + partial_rows * k_bytes, 0, (kAmxTileRows - partial_rows) * k_bytes);
      row_tiles.a[tile] = copy;
      row_tiles.stride[tile] = k_bytes;
    }
    for (int block = 0; block < kBlocks && 16 * block < t.n_valid; block += 2) {
      const bool two_blocks = block + 1 < kBlocks && 16 * (block + 1) < t.n_valid;
      const int8_t* b_block = b + 64 * block;
      if (two_row_tiles) {
        if (two_blocks) {
          multiply<true, true>(row_tiles, b_block, k_groups, &acc[0][0]);
        } else {
          multiply<true, false>(row_tiles, b_block, k_groups, &acc[0][0]);
        }
      } else if (two_blocks) {
        multiply<false, true>(row_tiles, b_block, k_groups, &acc[0][0]);
      } else {
        multiply<false, false>(row_tiles, b_block, k_groups, &acc[0][0]);
      }
      store_block(acc, rows, 16 * block, two_blocks ? 2 : 1, t);
    }
  }

  // The epilogue of `rows` rows of 16 * blocks columns starting at `column` of the driver tile.
  static void store_block(const int32_t (*acc)[32], int rows, int column, int blocks, const TileArgs& t) {
    if (plain_epilogue(t)) {
      const PlainStore store = plain_store(t);
      for (int j = 0; j < blocks; ++j) {
        const int count = t.n_valid - (column + 16 * j);
        const ColumnConstants constants = load_column_constants(t, column + 16 * j);
        for (int r = 0; r < rows; ++r) {
          store_vector_plain(_mm512_load_si512(&acc[r][16 * j]), column + 16 * j, count, r, constants, store);
        }
      }
      return;
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
    for (int j = 0; j < blocks; ++j) {
      const int count = t.n_valid - (column + 16 * j);
      const ColumnConstants constants = load_column_constants(t, column + 16 * j);
      for (int r = 0; r < rows; ++r) {
        store_vector(_mm512_load_si512(&acc[r][16 * j]), column + 16 * j, count, t, r, constants, clamp_min, clamp_max);
      }
    }
  }
};

// The tile configuration is loaded once per call (ldtilecfg also zeroes the tiles) and released at
// the end, so no tile state outlives the call.
template <typename Tiles, int kColumns>
void run_amx(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride, const Epilogue& epilogue,
             int m_begin, int m_end, int n_begin, int n_end) {
  if (m_begin >= m_end || n_begin >= n_end) return;
  const AmxTileConfig config = amx_kernel_tile_config();
  Tiles::load_config(config);
  run_driver<AmxTraits<Tiles, kColumns>>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
  Tiles::release();
}

}  // namespace
}  // namespace qdqrt::kernels::internal
