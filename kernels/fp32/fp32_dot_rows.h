// FP32 GEMM of one output column (N = 1): each row of A dotted with B's column. The igemm's tile
// computes 14 rows x 32 columns per k step, so one valid column wastes 31 of every 32 lanes
// (Swin-V2's cosine attention: F.normalize's sum of squares, lowered to x^2 times a [K, 1] column
// of ones, took 0.37 ms per inference that way). Here each row's products run in vector lanes
// along k and are summed across lanes by a fixed halving tree, then the bias, residual and clamp.
//
// The order of the sums is defined (lane l sums k = l, l + L, ... in k order, the tail's elements
// in the lanes of their offset; then lanes l and l + L/2 are added, halving down to one): the
// scalar reference (dot_rows_reference) follows it with the ISA's lane count, and the tester
// compares bit for bit. It is not the igemm's order (which sums each output along k from its
// bias), so a layer's bits depend on which runs; the choice depends only on the packed weights,
// never on the batch or the thread split.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/fp32/fp32_sgemm.h"

namespace qdqrt::kernels {

// Depth at most this (B's column is gathered into a local buffer).
inline constexpr int64_t kDotRowsMaxK = 4096;

// Whether run_sgemm runs `packed` here: one column, one tap, depth up to kDotRowsMaxK, an
// epilogue without activation, on a vector ISA.
bool dot_rows_applies(const PackedSgemm& packed, const Fp32Epilogue& epilogue);
// "f32-dot-rows-avx512".
std::string dot_rows_kernel_name(Isa isa);
// Rows [m_begin, m_end) of C's one column: c[m * c_row_stride] = clamp(dot(a_m, b) + bias +
// residual). dot_rows_applies must hold.
void run_dot_rows(const PackedSgemm& packed, const float* a, int64_t a_row_stride, float* c, int64_t c_row_stride,
                  const Fp32Epilogue& epilogue, int64_t m_begin, int64_t m_end);
// The dot of a and b (k elements) in the order above for `lanes` lanes (1: plain k order).
float dot_rows_reference(const float* a, const float* b, int64_t k, int lanes);

namespace internal {
// sums[r] = dot(a + r * a_row_stride, b) for r in [0, rows), in the lane order above.
struct DotRowsArgs {
  const float* a = nullptr;
  int64_t a_row_stride = 0;
  const float* b = nullptr;
  int64_t k = 0;
  int64_t rows = 0;
  float* sums = nullptr;
};
using DotRowsUkernelFn = void (*)(const DotRowsArgs& args);
struct DotRowsImplementation {
  DotRowsUkernelFn ukernel = nullptr;  // null: none (the scalar ISA runs the igemm)
  int lanes = 0;
  const char* isa_suffix = "";
};
}  // namespace internal

const internal::DotRowsImplementation& dot_rows_implementation(Isa isa);

namespace avx2 {
void dot_rows_ukernel(const internal::DotRowsArgs& args);
}
namespace avx512skx {
void dot_rows_ukernel(const internal::DotRowsArgs& args);
}

}  // namespace qdqrt::kernels
