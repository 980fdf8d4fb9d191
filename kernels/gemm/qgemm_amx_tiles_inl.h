// The emulated AMX tile layer: eight tile registers as byte arrays per thread, with palette 1's
// semantics (ldtilecfg zeroes every tile; loads fill rows x colsb bytes and zero the rest; tdpbusd
// multiplies u8 rows of A by s8 k-groups of B, four bytes at a time, into wrapping int32). The same
// interface as the real instructions (qgemm_amxint8.cpp), so the kernel of qgemm_amx_inl.h runs
// unchanged on either. A configuration the hardware would reject (#UD) aborts with a message.
// Tile numbers are template arguments because the real intrinsics need immediates. Everything is
// in an anonymous namespace: each including file (the AVX-512 compiled kernel, the portable
// tests) gets its own copy, and no AVX-512 compiled copy can be linked into portable code.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/gemm/qgemm_amx.h"

namespace qdqrt::kernels::internal {
namespace {

struct EmulatedTileState {
  AmxTileConfig config;
  bool configured = false;
  uint8_t data[8][kAmxTileRows][kAmxTileBytes];
};

inline EmulatedTileState& emulated_tile_state() {
  static thread_local EmulatedTileState state;
  return state;
}

[[noreturn]] inline void emulated_tile_fault(const char* what, int tile) {
  std::fprintf(stderr, "qdqrt: emulated AMX fault (the hardware raises #UD): %s (tile %d)\n", what, tile);
  std::abort();
}

struct EmulatedTiles {
  static void load_config(const AmxTileConfig& config) {
    if (config.palette_id != 1) emulated_tile_fault("palette is not 1", -1);
    for (int t = 0; t < 8; ++t) {
      if (config.rows[t] > kAmxTileRows || config.colsb[t] > kAmxTileBytes) emulated_tile_fault("tile too large", t);
    }
    EmulatedTileState& state = emulated_tile_state();
    state.config = config;
    state.configured = true;
    std::memset(state.data, 0, sizeof(state.data));
  }
  static void release() {
    EmulatedTileState& state = emulated_tile_state();
    state.configured = false;
    std::memset(state.data, 0, sizeof(state.data));
  }

  template <int kTile>
  static void zero() {
    std::memset(configured_tile(kTile), 0, sizeof(EmulatedTileState::data[0]));
  }

  template <int kTile>
  static void load(const void* base, int64_t stride) {
    uint8_t(*tile)[kAmxTileBytes] = configured_tile(kTile);
    const AmxTileConfig& config = emulated_tile_state().config;
    std::memset(tile, 0, sizeof(EmulatedTileState::data[0]));
    for (int r = 0; r < config.rows[kTile]; ++r) {
      std::memcpy(tile[r], static_cast<const uint8_t*>(base) + r * stride, config.colsb[kTile]);
    }
  }

  template <int kTile>
  static void store(void* base, int64_t stride) {
    uint8_t(*tile)[kAmxTileBytes] = configured_tile(kTile);
    const AmxTileConfig& config = emulated_tile_state().config;
    for (int r = 0; r < config.rows[kTile]; ++r) {
      std::memcpy(static_cast<uint8_t*>(base) + r * stride, tile[r], config.colsb[kTile]);
    }
  }

  // C[m][n] += sum over k-groups g of sum_{i<4} u8 A[m][4g + i] * s8 B[g][4n + i] (wrapping int32).
  template <int kC, int kA, int kB>
  static void dpbusd() {
    static_assert(kC != kA && kC != kB && kA != kB, "tdpbusd needs three different tiles");
    uint8_t(*c)[kAmxTileBytes] = configured_tile(kC);
    const uint8_t(*a)[kAmxTileBytes] = configured_tile(kA);
    const uint8_t(*b)[kAmxTileBytes] = configured_tile(kB);
    const AmxTileConfig& config = emulated_tile_state().config;
    const int rows = config.rows[kC], columns = config.colsb[kC] / 4, groups = config.colsb[kA] / 4;
    if (config.rows[kA] != rows) emulated_tile_fault("A rows differ from C rows", kA);
    if (config.colsb[kB] != config.colsb[kC]) emulated_tile_fault("B bytes per row differ from C's", kB);
    if (config.rows[kB] != groups) emulated_tile_fault("B rows differ from A's k groups", kB);
    if (config.colsb[kC] % 4 != 0 || config.colsb[kA] % 4 != 0) emulated_tile_fault("row bytes not dwords", kC);
    for (int m = 0; m < rows; ++m) {
      for (int n = 0; n < columns; ++n) {
        uint32_t sum;
        std::memcpy(&sum, &c[m][4 * n], 4);
        for (int g = 0; g < groups; ++g) {
          for (int i = 0; i < 4; ++i) {
            const int32_t product = static_cast<int32_t>(a[m][4 * g + i]) * static_cast<int8_t>(b[g][4 * n + i]);
            sum += static_cast<uint32_t>(product);
          }
        }
        std::memcpy(&c[m][4 * n], &sum, 4);
      }
      std::memset(&c[m][4 * columns], 0, kAmxTileBytes - 4 * columns);
    }
    for (int m = rows; m < kAmxTileRows; ++m) std::memset(c[m], 0, kAmxTileBytes);
  }

 private:
  static uint8_t (*configured_tile(int tile))[kAmxTileBytes] {
    EmulatedTileState& state = emulated_tile_state();
    if (!state.configured) emulated_tile_fault("tile used before ldtilecfg", tile);
    if (state.config.rows[tile] == 0 || state.config.colsb[tile] == 0) emulated_tile_fault("tile not configured", tile);
    return state.data[tile];
  }
};

}  // namespace
}  // namespace qdqrt::kernels::internal
