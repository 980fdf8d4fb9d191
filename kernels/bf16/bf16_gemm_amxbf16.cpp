// AMX-BF16 GEMM (tdpbf16ps): 32 x 32 per driver tile, four fp32 C tiles (two 16-row A tiles x two
// 16-column B tiles), k in blocks of 16 pairs. A B tile is 16 pairs of one panel's 16 columns,
// loaded in place with the panel's row stride (128 bytes): the packing of the AVX512_BF16 kernel
// serves both. A K whose pairs are not a multiple of 16 reads its last block from a zero-padded
// copy; A's rows are converted into scratch padded the same way, up to about 1 MiB of them at a
// time (rows_per_pass), each converted once per call: with the block of panels (512 KiB) they stay
// in the L2 cache while every row tile of the pass reads them.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the masked intrinsics).
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/bf16/bf16_gemm.h"

namespace qdqrt::kernels::internal::amxbf16 {

namespace {

constexpr int kTileRows = 16;
constexpr int kPairsPerBlock = 16;
constexpr int64_t kPanelRowBytes = kBf16GemmNr * 2 * 2;  // one pair of 32 columns
constexpr int64_t kPanelBlockBytes = 512 * 1024;
constexpr int64_t kRowsPassBytes = 1024 * 1024;

struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// GCC 12's tile loads and ldtilecfg do not tell the compiler they read memory: keep the stores
// that fill the buffers above them.
inline void memory_barrier() { __asm__ volatile("" ::: "memory"); }

void store_rows(const float* tile0, const float* tile1, int rows, int nc, const float* bias, float* c,
                int64_t c_row_stride, const Bf16GemmEpilogue& epilogue, const float* residual) {
  const __mmask16 mask0 = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
  const __mmask16 mask1 = nc <= 16 ? __mmask16(0) : nc >= 32 ? __mmask16(0xFFFF) : __mmask16((1u << (nc - 16)) - 1);
  const __m512 bias0 = _mm512_loadu_ps(bias), bias1 = _mm512_loadu_ps(bias + 16);
  const __m512 low = _mm512_set1_ps(epilogue.min), high = _mm512_set1_ps(epilogue.max);
  for (int r = 0; r < rows; ++r) {
    __m512 v0 = _mm512_add_ps(_mm512_load_ps(tile0 + r * 16), bias0);
    __m512 v1 = _mm512_add_ps(_mm512_load_ps(tile1 + r * 16), bias1);
    if (residual != nullptr) {
      const float* row = residual + r * epilogue.residual_row_stride;
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(mask0, row));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(mask1, row + 16));
    }
    v0 = _mm512_min_ps(_mm512_max_ps(v0, low), high);
    v1 = _mm512_min_ps(_mm512_max_ps(v1, low), high);
    _mm512_mask_storeu_ps(c + r * c_row_stride, mask0, v0);
    _mm512_mask_storeu_ps(c + r * c_row_stride + 16, mask1, v1);
  }
}

}  // namespace

int64_t padded_pairs(int64_t k_pairs) { return (k_pairs + kPairsPerBlock - 1) / kPairsPerBlock * kPairsPerBlock; }

int64_t rows_per_pass(int64_t k_pairs) {
  const int64_t rows = kRowsPassBytes / (padded_pairs(k_pairs) * 4) / (2 * kTileRows) * (2 * kTileRows);
  return std::max<int64_t>(2 * kTileRows, rows);
}

int64_t scratch_bytes(int64_t k_pairs) {
  return rows_per_pass(k_pairs) * padded_pairs(k_pairs) * 4 + kPairsPerBlock * kPanelRowBytes +
         4 * kTileRows * kTileRows * 4;
}

void run(const Bf16GemmWeights& weights, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
         const Bf16GemmEpilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end, void* scratch) {
  const int64_t k = weights.k, k_pairs = bf16_gemm_k_pairs(k), k_even = k & ~int64_t{1};
  const int64_t a_pairs = padded_pairs(k_pairs);
  const int64_t panel_elements = k_pairs * kBf16GemmNr * 2;
  const int64_t panels_per_block = std::max<int64_t>(1, kPanelBlockBytes / (panel_elements * 2));
  // Scratch: A [rows_per_pass][a_pairs] pairs, the k tail of a panel [16][32][2], the C tiles
  // [4][16][16].
  const int64_t pass_rows = rows_per_pass(k_pairs);
  auto* a_scratch = static_cast<uint32_t*>(scratch);
  auto* b_tail = reinterpret_cast<uint16_t*>(a_scratch + pass_rows * a_pairs);
  auto* c_tiles = reinterpret_cast<float*>(b_tail + kPairsPerBlock * kBf16GemmNr * 2);
  const int64_t a_stride_bytes = a_pairs * 4;
  const int64_t full_blocks = k_pairs / kPairsPerBlock, tail_pairs = k_pairs % kPairsPerBlock;

  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) config.rows[tile] = kTileRows, config.colsb[tile] = 64;
  memory_barrier();
  _tile_loadconfig(&config);
  for (int64_t pass_begin = m_begin; pass_begin < m_end; pass_begin += pass_rows) {
    const int64_t pass_end = std::min(m_end, pass_begin + pass_rows);
    // The pass's rows in bf16, padded with zero rows to whole 16-row tiles.
    const int64_t padded_rows = (pass_end - pass_begin + kTileRows - 1) / kTileRows * kTileRows;
    for (int64_t r = 0; r < padded_rows; ++r) {
      auto* out = reinterpret_cast<uint16_t*>(a_scratch + r * a_pairs);
      if (pass_begin + r >= pass_end) {  // their sums are not stored
        std::memset(out, 0, static_cast<size_t>(a_stride_bytes));
        continue;
      }
      const float* row = a + (pass_begin + r) * a_row_stride;
      avx512bf16::bf16_convert(row, k_even, out);
      if (k_even != k) out[k_even] = bf16_from_float(row[k_even]), out[k_even + 1] = 0;
      std::memset(out + k_pairs * 2, 0, static_cast<size_t>((a_pairs - k_pairs) * 4));
    }
    for (int64_t block_begin = n_begin; block_begin < n_end; block_begin += panels_per_block * kBf16GemmNr) {
      const int block_end = static_cast<int>(std::min<int64_t>(n_end, block_begin + panels_per_block * kBf16GemmNr));
      for (int64_t m0 = pass_begin; m0 < pass_end; m0 += 2 * kTileRows) {
        const int mr = static_cast<int>(std::min<int64_t>(2 * kTileRows, pass_end - m0));
        const int row_tiles = mr > kTileRows ? 2 : 1;
        const uint32_t* a_tile = a_scratch + (m0 - pass_begin) * a_pairs;
        for (int column = static_cast<int>(block_begin); column < block_end; column += kBf16GemmNr) {
          const int nc = std::min(kBf16GemmNr, block_end - column);
          const uint16_t* panel = weights.data + static_cast<int64_t>(column / kBf16GemmNr) * panel_elements;
          _tile_zero(0);
          _tile_zero(1);
          _tile_zero(2);
          _tile_zero(3);
          for (int64_t block = 0; block <= full_blocks; ++block) {
            const uint16_t* b = panel + block * kPairsPerBlock * kBf16GemmNr * 2;
            if (block == full_blocks) {
              if (tail_pairs == 0) break;
              std::memcpy(b_tail, b, static_cast<size_t>(tail_pairs * kPanelRowBytes));
              std::memset(b_tail + tail_pairs * kBf16GemmNr * 2, 0,
                          static_cast<size_t>((kPairsPerBlock - tail_pairs) * kPanelRowBytes));
              b = b_tail;
            }
            const uint32_t* a_block = a_tile + block * kPairsPerBlock;
            memory_barrier();
            _tile_loadd(4, a_block, a_stride_bytes);
            _tile_loadd(6, b, kPanelRowBytes);
            _tile_loadd(7, b + 32, kPanelRowBytes);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            if (row_tiles == 2) {
              _tile_loadd(5, a_block + kTileRows * a_pairs, a_stride_bytes);
              _tile_dpbf16ps(2, 5, 6);
              _tile_dpbf16ps(3, 5, 7);
            }
          }
          _tile_stored(0, c_tiles, 64);
          _tile_stored(1, c_tiles + 256, 64);
          if (row_tiles == 2) {
            _tile_stored(2, c_tiles + 512, 64);
            _tile_stored(3, c_tiles + 768, 64);
          }
          memory_barrier();
          const float* residual =
              epilogue.residual != nullptr ? epilogue.residual + m0 * epilogue.residual_row_stride + column : nullptr;
          float* c_tile = c + m0 * c_row_stride + column;
          store_rows(c_tiles, c_tiles + 256, std::min(mr, kTileRows), nc, weights.bias + column, c_tile,
                     c_row_stride, epilogue, residual);
          if (row_tiles == 2) {
            store_rows(c_tiles + 512, c_tiles + 768, mr - kTileRows, nc, weights.bias + column,
                       c_tile + kTileRows * c_row_stride, c_row_stride, epilogue,
                       residual != nullptr ? residual + kTileRows * epilogue.residual_row_stride : nullptr);
          }
        }
      }
    }
  }
  _tile_release();
}

}  // namespace qdqrt::kernels::internal::amxbf16
