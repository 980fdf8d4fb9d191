// AMX-INT8 GEMM: tdpbusd on tile registers (16 rows x 64 bytes), 32 rows x 64 (or 16) columns
// per driver tile. The packed weights are the avx512vnni layout of the same width (k groups of 4
// bytes, 16 columns x 4 k-values = 64 bytes per group): a B tile is 16 consecutive k groups of 16
// columns, loaded with the packed row stride (nr * 4 bytes), so nothing is repacked for AMX.
//
// The kernel is written once (qgemm_amx_inl.h) over a tile-operations layer with two
// implementations: the real instructions (qgemm_amxint8.cpp, compiled with -mamx-tile -mamx-int8)
// and an emulation in plain C++ (qgemm_amx_tiles_inl.h, compiled into qgemm_amx_emulated_avx512vnni.cpp)
// that the testers run on every AVX-512 machine, so the kernel is tested bit-exact without AMX.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/gemm/qgemm_internal.h"

namespace qdqrt::kernels::internal {

// Palette 1 tile configuration: the 64 bytes ldtilecfg reads.
struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row, per tile register
  uint8_t rows[16] = {};    // rows, per tile register
};
static_assert(sizeof(AmxTileConfig) == 64);

// The kernels' tile registers: C (int32 accumulators) 0..3 for row tile r and column block j at
// 2 * r + j, A (u8 activations) 4 and 5, B (s8 weights) 6 and 7; every one 16 rows x 64 bytes.
inline constexpr int kAmxTileRows = 16;
inline constexpr int kAmxTileBytes = 64;
AmxTileConfig amx_kernel_tile_config();
// "palette 1, tmm0 16x64 ..." for test failure messages.
std::string describe_tile_config(const AmxTileConfig& config);

enum class AmxTiles { kHardware, kEmulated };

// The AMX kernel itself, with the given tiles (packed.nr 16 or 64). kHardware needs
// amx_hardware_missing() == "" (kernels/cpu_features.h); the testers call this directly.
void gemm_run_amx(AmxTiles tiles, const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                  const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end);

// Dispatch entries (kernels/dispatch.cpp): the real tiles, or the emulated ones under amx_emulation().
void gemm_run_amxint8(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_amxint8_32x16(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);

// One run of the AMX kernel on a few small GEMMs (row, column and k tails, zero-points) against
// the oracle; "" when bit-exact, else the first mismatch. Called once with the real tiles before
// dispatch may choose AMX (kernels/cpu_features.cpp); the testers also run it emulated.
std::string amx_self_check(AmxTiles tiles = AmxTiles::kHardware);

// Per tile set and width, defined in the files compiled for them.
void gemm_run_amx_hardware_64(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_amx_hardware_16(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_amx_emulated_64(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);
void gemm_run_amx_emulated_16(const PackedGemm&, const ASource&, void*, int64_t, const Epilogue&, int, int, int, int);

}  // namespace qdqrt::kernels::internal
