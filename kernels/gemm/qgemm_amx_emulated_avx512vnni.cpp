// The AMX GEMM over the emulated tile layer: the same kernel as qgemm_amxint8.cpp, run by the
// testers (and under amx_emulation()) on AVX-512 machines without AMX.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_* in the widening intrinsics).
#ifndef __clang__  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/gemm/qgemm_amx_inl.h"
#include "kernels/gemm/qgemm_amx_tiles_inl.h"

namespace qdqrt::kernels::internal {

void gemm_run_amx_emulated_64(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                              const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_amx<EmulatedTiles, 64>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

void gemm_run_amx_emulated_16(const PackedGemm& packed, const ASource& source, void* c, int64_t c_row_stride,
                              const Epilogue& epilogue, int m_begin, int m_end, int n_begin, int n_end) {
  run_amx<EmulatedTiles, 16>(packed, source, c, c_row_stride, epilogue, m_begin, m_end, n_begin, n_end);
}

}  // namespace qdqrt::kernels::internal
