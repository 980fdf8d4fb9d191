// The fp32 GEMV / small-M kernel (kernels/fp32/fp32_gemv.h), written once over the vector operations
// of fp32_sgemm_vector_ops.h and compiled per ISA: fp32_gemv_avx512skx.cpp (panels of 32 columns,
// 2 zmm) and fp32_gemv_avx2.cpp (16 columns, 2 ymm) define QDQRT_SGEMM_AVX512 or QDQRT_SGEMM_AVX2
// and QDQRT_SGEMM_NAMESPACE, then include this file.
#include "kernels/fp32/fp32_gemv.h"
#include "kernels/fp32/fp32_sgemm_vector_ops.h"

namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE {
namespace {

#if defined(QDQRT_SGEMM_AVX512)
constexpr int kMaxRows = kSgemvMaxRowsAvx512;
#else
constexpr int kMaxRows = kSgemvMaxRowsAvx2;
#endif
// Panels walked together: one row, 4 panels x 2 vectors = 8 independent accumulators per k step
// (4-cycle FMA latency x 2 FMA ports); two rows, 2 panels (8 again: more streams of B did not pay).
constexpr int panels_for(int rows) { return rows == 1 ? 4 : 2; }

// One panel's part of the output, as store_tile reads it.
struct PanelStore {
  float* c = nullptr;
  int64_t c_row_stride = 0;
  const float* residual = nullptr;
  int64_t residual_row_stride = 0;
  int nc = 0;
  float min = 0.0f, max = 0.0f;
  Fp32EpilogueActivation activation = Fp32EpilogueActivation::kNone;
};

// kRows rows x panels [first, first + kPanels): each output from its bias, one FMA per k in k
// order (the microkernel's sums), then the epilogue.
template <int kRows, int kPanels>
void panels(const internal::SgemvArgs& args, int first) {
  V acc[kRows][kPanels][2];
#pragma GCC unroll 8
  for (int p = 0; p < kPanels; ++p) {
    const V bias0 = load(args.bias + (first + p) * kNr), bias1 = load(args.bias + (first + p) * kNr + kLanes);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) acc[r][p][0] = bias0, acc[r][p][1] = bias1;
  }
  const float* a[kRows];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) a[r] = args.a + r * args.a_row_stride;
  const float* w = args.w + first * args.panel_stride;
  const int64_t panel_stride = args.panel_stride;
  for (int64_t k = 0; k < args.k; ++k, w += kNr) {
    V x[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) x[r] = broadcast(a[r] + k);
#pragma GCC unroll 8
    for (int p = 0; p < kPanels; ++p) {
      const V b0 = load(w + p * panel_stride), b1 = load(w + p * panel_stride + kLanes);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        acc[r][p][0] = fmadd(x[r], b0, acc[r][p][0]);
        acc[r][p][1] = fmadd(x[r], b1, acc[r][p][1]);
      }
    }
  }
  PanelStore store{.c_row_stride = args.c_row_stride,
                   .residual_row_stride = args.residual_row_stride,
                   .min = args.min,
                   .max = args.max,
                   .activation = args.activation};
#pragma GCC unroll 8
  for (int p = 0; p < kPanels; ++p) {
    const int panel = first + p;
    store.c = args.c + panel * kNr;
    store.residual = args.residual ? args.residual + panel * kNr : nullptr;
    store.nc = panel + 1 == args.panels ? args.last_nc : kNr;
    V tile[kRows][2];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) tile[r][0] = acc[r][p][0], tile[r][1] = acc[r][p][1];
    store_tile(tile, store, true);
  }
}

// The last `count` (< kPanels) panels of the range.
template <int kRows, int kPanels>
void last_panels(const internal::SgemvArgs& args, int first, int count) {
  if constexpr (kPanels > 1) {
    if (count < kPanels) return last_panels<kRows, kPanels - 1>(args, first, count);
  }
  panels<kRows, kPanels>(args, first);
}

template <int kRows>
void rows(const internal::SgemvArgs& args) {
  constexpr int kPanels = panels_for(kRows);
  int p = 0;
  for (; p + kPanels <= args.panels; p += kPanels) panels<kRows, kPanels>(args, p);
  if constexpr (kPanels > 1) {
    if (p < args.panels) last_panels<kRows, kPanels - 1>(args, p, args.panels - p);
  }
}

// rows<args.rows>.
template <int kRows = 1>
void with_rows(const internal::SgemvArgs& args) {
  if constexpr (kRows < kMaxRows) {
    if (args.rows > kRows) return with_rows<kRows + 1>(args);
  }
  rows<kRows>(args);
}

}  // namespace

void sgemv_ukernel(const internal::SgemvArgs& args) { with_rows(args); }

}  // namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE
