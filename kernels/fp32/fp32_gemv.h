// FP32 GEMV and small-M GEMM on the igemm's packed weights (kernels/fp32/fp32_sgemm.h): a batch-1
// fully connected layer (M = 1, or a few rows) runs here instead of the register-tiled microkernel.
// One row of the 14 x 32 tile gives two FMA chains per k step, so the tile waits on FMA latency
// and reads B at a fraction of the cache's bandwidth; this kernel walks several panels at once
// (AVX-512, one row: 4 panels x 2 zmm = 8 independent chains per k step) and streams B.
//
// Results are bit-identical to the microkernel's: each output is summed from its bias in k order
// with one fused multiply-add per k (no split-k accumulators), then the same epilogue (residual,
// clamp, activation; the shared store of fp32_sgemm_vector_ops.h). So a row's bits do not depend
// on how many rows run with it or on the thread split.
//
// run_sgemm takes this path by itself when its row range is small enough (sgemv_applies()).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

// Whether run_sgemm computes a range of `rows` rows of `packed` with the small-M kernel (a vector
// ISA, and rows up to its limit).
bool sgemv_applies(const PackedSgemm& packed, int64_t rows);
// "f32-gemv-2x32-avx512": up to 2 rows, panels of 32 columns.
std::string sgemv_kernel_name(const PackedSgemm& packed);
// run_sgemm's small-M path (same arguments and results); m_end - m_begin must pass sgemv_applies().
void run_sgemv(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
               const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end, int n_begin, int n_end);

// Rows per call the small-M kernels take (more: the microkernel's tiles).
inline constexpr int kSgemvMaxRowsAvx512 = 2;
inline constexpr int kSgemvMaxRowsAvx2 = 2;

namespace internal {
// Rows [0, rows) x panels [0, panels): row r's k inputs at a + r * a_row_stride; panel p's weights
// at w + p * panel_stride ([k][NR]), its NR bias values at bias + p * NR, its outputs at
// c + r * c_row_stride + p * NR (the residual's likewise). Every panel writes NR columns but the
// last, last_nc.
struct SgemvArgs {
  int rows = 0, panels = 0, last_nc = 0;
  int64_t k = 0;
  const float* a = nullptr;
  int64_t a_row_stride = 0;
  const float* w = nullptr;
  int64_t panel_stride = 0;
  const float* bias = nullptr;
  float* c = nullptr;
  int64_t c_row_stride = 0;
  const float* residual = nullptr;
  int64_t residual_row_stride = 0;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
};
using SgemvUkernelFn = void (*)(const SgemvArgs& args);
struct SgemvImplementation {
  SgemvUkernelFn ukernel = nullptr;  // null: none (the scalar ISA runs the microkernel)
  int max_rows = 0;
};
}  // namespace internal

// The small-M kernel of an ISA (dispatch.cpp).
const internal::SgemvImplementation& sgemv_implementation(Isa isa);

namespace avx2 {
void sgemv_ukernel(const internal::SgemvArgs& args);
}
namespace avx512skx {
void sgemv_ukernel(const internal::SgemvArgs& args);
}

}  // namespace qdqrt::kernels
