// The real AMX tile layer (ldtilecfg, tilezero, tileloadd, tdpbusd, tilestored, tilerelease) and
// the AMX GEMM instantiated over it. Runs only where amx_hardware_missing() is "" (CPUID, XCR0
// and Linux's arch_prctl permission; kernels/cpu_features.cpp).
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/gemm/qgemm_amx_inl.h"

namespace qdqrt::kernels::internal {
namespace {

// GCC 12's tileloadd and ldtilecfg are asm statements that do not tell the compiler they read
// memory (no "memory" clobber; ldtilecfg names only 8 of its 64 bytes), so without this barrier the
// stores that fill the panel, the zero-padded k-tail buffers or the config could be dropped or sunk
// below the load. (clang's builtins need no barrier; it costs nothing there.)
inline void tile_memory_barrier() { __asm__ volatile("" ::: "memory"); }

// The intrinsics take tile numbers as immediates (GCC pastes them into the assembly text), hence
// one literal call per tile register.
struct HardwareTiles {
  static void load_config(const AmxTileConfig& config) {
    tile_memory_barrier();
    _tile_loadconfig(&config);
  }
  static void release() { _tile_release(); }

  template <int kTile>
  static void zero() {
    static_assert(kTile >= 0 && kTile < 4, "only the C tiles are zeroed");
    if constexpr (kTile == 0) _tile_zero(0);
    if constexpr (kTile == 1) _tile_zero(1);
    if constexpr (kTile == 2) _tile_zero(2);
    if constexpr (kTile == 3) _tile_zero(3);
  }

  template <int kTile>
  static void load(const void* base, int64_t stride) {
    static_assert(kTile >= 4 && kTile < 8, "only the A and B tiles are loaded");
    tile_memory_barrier();
    if constexpr (kTile == 4) _tile_loadd(4, base, stride);
    if constexpr (kTile == 5) _tile_loadd(5, base, stride);
    if constexpr (kTile == 6) _tile_loadd(6, base, stride);
    if constexpr (kTile == 7) _tile_loadd(7, base, stride);
  }

  template <int kTile>
  static void store(void* base, int64_t stride) {
    static_assert(kTile >= 0 && kTile < 4, "only the C tiles are stored");
    if constexpr (kTile == 0) _tile_stored(0, base, stride);
    if constexpr (kTile == 1) _tile_stored(1, base, stride);
    if constexpr (kTile == 2) _tile_stored(2, base, stride);
    if constexpr (kTile == 3) _tile_stored(3, base, stride);
  }

  // _tile_dpbusd(dst, a, b): a's bytes unsigned, b's signed.
  template <int kC, int kA, int kB>
  static void dpbusd() {
    if constexpr (kC == 0 && kA == 4 && kB == 6) {
      _tile_dpbusd(0, 4, 6);
    } else if constexpr (kC == 1 && kA == 4 && kB == 7) {
      _tile_dpbusd(1, 4, 7);
    } else if constexpr (kC == 2 && kA == 5 && kB == 6) {
      _tile_dpbusd(2, 5, 6);
    } else if constexpr (kC == 3 && kA == 5 && kB == 7) {
      _tile_dpbusd(3, 5, 7);
    } else {
      static_assert(kC < 0, "C tile 2 * row tile + column block, A 4 + row tile, B 6 + column block");
    }
  }
};

}  // namespace

void gemm_run_amx_hardware_64(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                              const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_amx<HardwareTiles, 64>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

void gemm_run_amx_hardware_16(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                              const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_amx<HardwareTiles, 16>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
