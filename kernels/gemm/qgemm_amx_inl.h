// The AMX-INT8 GEMM kernel, written once over a tile layer (Tiles: the real instructions or the
// emulation of qgemm_amx_tiles_inl.h). Included by qgemm_amxint8.cpp and
// qgemm_amx_emulated_avx512vnni.cpp, each compiled with AVX-512 flags (the epilogue is the zmm one).
//
// The driver hands over a whole row block (up to 32 rows) of a column chunk (row_block). Each
// column tile (kColumns = 64 or 16) is computed in blocks of 32 columns: C tiles 0..3 hold 2 row
// tiles x 2 column blocks and accumulate over the whole K, A tiles 4/5 hold the two 16-row slices
// of the panel, B tiles 6/7 16 k-groups of the two column blocks, read straight from the packed
// weights with their row stride (kColumns * 4 bytes), prefetched a few k steps ahead. The C tiles
// are stored into one of two int32 buffers; a column tile's epilogue runs after the first tdpbusd
// of the next tile (in this row block or the next) are issued, so the vector units requantize one
// tile while the tile unit multiplies the next. Every tile is
// 16 x 64 bytes, so one configuration serves all shapes. pack_gemm pads AMX weights to whole
// k steps; a k tail (fewer than 16 groups: weights of engine files packed before that) is copied
// into zero-padded buffers, and so is a partial row tile of a matrix read in place (which has no
// rows past the last one).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

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
  static constexpr bool kRowBlocks = true;
  // Tile rows that straddle cache lines load at about half speed.
  static constexpr int64_t kPanelRowAlignment = kAmxTileBytes;
  static constexpr int kBlocks = kColumns / 16;
  static constexpr int64_t kBStride = kColumns * 4;  // bytes between packed k groups
  // The int32 buffer a column tile's C tiles are stored to: kMr rows of kColumns.
  static constexpr int64_t kAccStride = kColumns * sizeof(int32_t);

  static void copy_flip(uint8_t* dst, const uint8_t* src, int count, uint8_t flip) {
    copy_flip_avx512(dst, src, count, flip);
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

  static constexpr int kPrefetchSteps = 2;

  // The 16 k groups of one or two column blocks at b (one 64-byte line per group and block).
  template <bool kTwoBlocks>
  static void prefetch_b(const int8_t* b) {
    for (int g = 0; g < kAmxGroupsPerTile; ++g) {
      __builtin_prefetch(b + g * kBStride, 0, 3);
      if constexpr (kTwoBlocks) __builtin_prefetch(b + g * kBStride + 64, 0, 3);
    }
  }

  // C tiles = A[32 or 16 rows][k] x B[k][blocks of 16 columns at b], accumulated over all of k.
  template <bool kTwoRowTiles, bool kTwoBlocks>
  static void multiply(const RowTiles& a, const int8_t* b, int k_groups) {
    Tiles::template zero<0>();
    if constexpr (kTwoBlocks) Tiles::template zero<1>();
    if constexpr (kTwoRowTiles) Tiles::template zero<2>();
    if constexpr (kTwoRowTiles && kTwoBlocks) Tiles::template zero<3>();
    const int full_steps = k_groups / kAmxGroupsPerTile;
    for (int s = 0; s < full_steps; ++s) {
      // The weights stream from memory on a row block's first pass (their 64-byte rows, a few KiB
      // apart, are not a stream the hardware prefetcher follows): ask for the B rows of a later step.
      if (s + kPrefetchSteps < full_steps) prefetch_b<kTwoBlocks>(b + (s + kPrefetchSteps) * kAmxGroupsPerTile * kBStride);
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
  }

  // The C tiles of the block multiply<kTwoRowTiles, kTwoBlocks> computed, into acc (kAccStride
  // bytes per row) at the block's first column.
  template <bool kTwoRowTiles, bool kTwoBlocks>
  static void store(int32_t* acc) {
    Tiles::template store<0>(acc, kAccStride);
    if constexpr (kTwoBlocks) Tiles::template store<1>(acc + 16, kAccStride);
    if constexpr (kTwoRowTiles) Tiles::template store<2>(acc + kAmxTileRows * kColumns, kAccStride);
    if constexpr (kTwoRowTiles && kTwoBlocks) Tiles::template store<3>(acc + kAmxTileRows * kColumns + 16, kAccStride);
  }

  // The column tile at b (its blocks of 16 columns holding t.n_valid columns) into acc; `before`
  // runs once the first block's tdpbusd are issued, before anything waits for them.
  template <bool kTwoRowTiles, typename Before>
  static void column_tile(const RowTiles& a, const int8_t* b, int k_groups, int n_valid, int32_t* acc,
                          const Before& before) {
    const int blocks = (n_valid + 15) / 16;
    for (int block = 0; block < blocks; block += 2) {
      const int8_t* b_block = b + 64 * block;
      if (block + 1 < blocks) {
        multiply<kTwoRowTiles, true>(a, b_block, k_groups);
        if (block == 0) before();
        store<kTwoRowTiles, true>(acc + 16 * block);
      } else {
        multiply<kTwoRowTiles, false>(a, b_block, k_groups);
        if (block == 0) before();
        store<kTwoRowTiles, false>(acc + 16 * block);
      }
    }
  }

  // What a row block leaves for the next: the last column tile's C tiles in one of two buffers,
  // its epilogue not yet run (it runs once the next row block's first tdpbusd are issued).
  struct RowBlockState {
    alignas(64) int32_t acc[2][kAmxMr * kColumns];
    int buffer = 0;  // the next tile's
    bool has_pending = false;
    TileArgs pending;
    int pending_rows = 0;
    int32_t pending_row_term[kAmxMr];  // the driver's row terms are the next row block's by then
  };

  static void finish_pending(RowBlockState& state) {
    if (!state.has_pending) return;
    state.has_pending = false;
    // A local copy: the output stores (char pointers) could alias the state's, which would make
    // the epilogue reload every field after each store.
    const TileArgs pending = state.pending;
    epilogue(state.acc[state.buffer ^ 1], state.pending_rows, pending);
  }

  static void finish(RowBlockState& state) { finish_pending(state); }

  static constexpr int kCarryGroups = 128;  // k of 512 bytes

  template <typename TileArgsAt>
  static void row_block(RowBlockState& state, const uint8_t* a, int64_t a_stride, bool a_in_place, int rows,
                        int k_groups, int n_begin, int n_end, const TileArgsAt& tile_args) {
    RowTiles row_tiles{{a, a + kAmxTileRows * a_stride}, {a_stride, a_stride}};
    // A partial row tile of a matrix read in place is copied, its missing rows zeroed: that matrix
    // ends at its last row. (A panel has all kMr rows; rows past `rows` give C rows never stored.)
    const int partial_rows = rows % kAmxTileRows;
    if (a_in_place && partial_rows != 0) {
      const int tile = rows / kAmxTileRows;
      const int64_t k_bytes = 4 * static_cast<int64_t>(k_groups);
      uint8_t* copy = thread_scratch(ScratchSlot::kAmxRows, kAmxTileRows * k_bytes);
      const uint8_t* source = a + tile * kAmxTileRows * a_stride;
      for (int r = 0; r < partial_rows; ++r) std::memcpy(copy + r * k_bytes, source + r * a_stride, k_bytes);
      std::memset(copy + partial_rows * k_bytes, 0, (kAmxTileRows - partial_rows) * k_bytes);
      row_tiles.a[tile] = copy;
      row_tiles.stride[tile] = k_bytes;
    }
    const auto run_pending = [&state] { finish_pending(state); };
    for (int n = n_begin; n < n_end; n += kColumns) {
      TileArgs args;
      const int8_t* b = tile_args(n, args);
      int32_t* acc = state.acc[state.buffer];
      if (rows > kAmxTileRows) {
        column_tile<true>(row_tiles, b, k_groups, args.n_valid, acc, run_pending);
      } else {
        column_tile<false>(row_tiles, b, k_groups, args.n_valid, acc, run_pending);
      }
      state.pending = args;
      state.pending_rows = rows;
      state.has_pending = true;
      state.buffer ^= 1;
    }
    // A row block of one deep column tile (a 3x3 convolution of 64 channels) leaves its epilogue
    // to run behind the next row block's tdpbusd. Elsewhere that measured slower (1x1
    // convolutions, whose few tdpbusd hide little) or equal (several tiles, where only the last
    // tile's epilogue is not hidden): it runs now.
    if (n_end - n_begin > kColumns || k_groups < kCarryGroups) {
      finish_pending(state);
    } else if (state.pending.row_term != nullptr) {
      std::memcpy(state.pending_row_term, state.pending.row_term, sizeof(int32_t) * rows);
      state.pending.row_term = state.pending_row_term;
    }
  }

  // store_tile_packed (qgemm_epilogue_avx512_inl.h) for a run-time row count.
  static void store_rows_packed(const int32_t* acc, int rows, const TileArgs& t) {
    const PackedRowStore p = packed_row_store(t);
    const Epilogue& e = *t.epilogue;
    const bool integer_clamp =
        t.integer_clamp && (t.residual == nullptr || 255.0f * std::fabs(e.residual_multiplier) <= 0x1p29f);
    const int residual = t.residual == nullptr ? 0 : e.residual_signed ? 2 : 1;
    auto store_rows = [&](auto is_unsigned, auto clamp, auto residual_kind) {
      for (int r = 0; r < rows; ++r) {
        store_row_packed<decltype(is_unsigned)::value, decltype(clamp)::value, true, decltype(residual_kind)::value>(
            acc + 64 * r, r, p);
      }
    };
    auto with_output = [&](auto residual_kind) {
      using std::false_type, std::true_type;
      if (e.output_type == OutputType::kU8) {
        integer_clamp ? store_rows(true_type{}, true_type{}, residual_kind)
                      : store_rows(true_type{}, false_type{}, residual_kind);
      } else {
        integer_clamp ? store_rows(false_type{}, true_type{}, residual_kind)
                      : store_rows(false_type{}, false_type{}, residual_kind);
      }
    };
    if (residual == 0) {
      with_output(std::integral_constant<int, 0>{});
    } else if (residual == 1) {
      with_output(std::integral_constant<int, 1>{});
    } else {
      with_output(std::integral_constant<int, 2>{});
    }
  }

  // The epilogue of `rows` rows of the column tile in acc (kColumns int32 per row).
  static void epilogue(const int32_t* acc, int rows, const TileArgs& t) {
    if constexpr (kColumns == 64) {
      if (packed_row_epilogue(t)) {
        store_rows_packed(acc, rows, t);
        return;
      }
    } else {
      if (plain_epilogue(t)) {
        const PlainStore store = plain_store(t);
        const ColumnConstants constants = load_column_constants(t, 0);
        for (int r = 0; r < rows; ++r) {
          store_vector_plain(_mm512_load_si512(acc + r * kColumns), 0, t.n_valid, r, constants, store);
        }
        return;
      }
    }
    if (const PointwiseOp op = single_op_epilogue(t); op != PointwiseOp::kCopy) {
      store_block_single_op(op, acc, rows, kBlocks, t);
      return;
    }
    const __m512 clamp_min = _mm512_set1_ps(t.epilogue->clamp_min);
    const __m512 clamp_max = _mm512_set1_ps(t.epilogue->clamp_max);
    for (int j = 0; j < kBlocks; ++j) {
      const int count = t.n_valid - 16 * j;
      if (count <= 0) break;
      const ColumnConstants constants = load_column_constants(t, 16 * j);
      for (int r = 0; r < rows; ++r) {
        store_vector(_mm512_load_si512(acc + r * kColumns + 16 * j), 16 * j, count, t, r, constants, clamp_min,
                     clamp_max);
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
