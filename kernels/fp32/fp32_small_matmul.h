// FP32 batched MatMul of small matrices with B read in place: attention's Q x K^T and P x V over
// windows or short sequences (Swin's 49 x 49 x 32 per window and head), where the igemm's path
// (B packed per matrix into panels of NR columns, tiles of MR rows) pays a pack and its driver's
// setup per matrix and computes padding: 49 columns run as two 32-column panels (64), 49 rows as
// 14 + 14 + 14 + 7. Here B ([K][N], row stride ldb, N <= kSmallMatmulMaxVectors vectors) is read
// straight from the activation, its last vector under a mask, and each matrix's rows are split into
// near-equal tiles of at most max_rows(N) rows (49 rows of 64 columns: 7 tiles of 7).
//
// Results are bit-identical to the igemm's tile on the same matrix with a zero bias: each output
// starts at +0 and takes one fused multiply-add per k in k order (the tester checks it bitwise
// against run_sgemm for more than one column), so the layer's outputs do not depend on which path
// runs.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/dispatch.h"

namespace qdqrt::kernels {

// Whether an ISA runs matrices of n columns and depth k here (a vector ISA, n within its vectors,
// B within the L1 budget).
bool small_matmul_applies(Isa isa, int64_t n, int64_t k);
// Row tiles of an m-row matrix (near-equal, at most the tile's rows each).
int64_t small_matmul_tiles(Isa isa, int64_t m, int64_t n);
// Largest tile, as "f32-smallgemm-7x64-avx512" (rows x columns computed per tile for n columns).
std::string small_matmul_kernel_name(Isa isa, int64_t n);
// Row tiles [tile_begin, tile_end) of C (m x n, row stride ldc) = A (m x k, lda) x B (k x n, ldb).
// small_matmul_applies(isa, n, k) must hold.
void run_small_matmul(Isa isa, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                      int64_t m, int n, int k, int64_t tile_begin, int64_t tile_end);

// Vectors of N one tile holds at most, and the L1 budget of B.
inline constexpr int kSmallMatmulMaxVectors = 4;
inline constexpr int64_t kSmallMatmulMaxBBytes = 32 * 1024;
// Accumulators of a tile (rows x vectors; the vectors of B and a broadcast take the other
// registers) and rows of a one-vector tile, per ISA.
inline constexpr int kSmallMatmulMaxAccumulatorsAvx512 = 28, kSmallMatmulMaxRowsAvx512 = 14;
inline constexpr int kSmallMatmulMaxAccumulatorsAvx2 = 12, kSmallMatmulMaxRowsAvx2 = 6;

namespace internal {
// One tile: rows [0, rows) of C at c (row stride ldc) from A at a (lda) and B at b (ldb), n
// columns, depth k.
struct SmallMatmulArgs {
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  int rows = 0, n = 0, k = 0;
};
using SmallMatmulUkernelFn = void (*)(const SmallMatmulArgs& args);
struct SmallMatmulImplementation {
  SmallMatmulUkernelFn ukernel = nullptr;  // null: none (the scalar ISA runs the igemm)
  int lanes = 0;
  int max_accumulators = 0;  // rows x vectors of a tile
  int max_rows = 0;          // of one-vector tiles
  const char* isa_suffix = "";
};
// Rows of the largest tile for n columns (vectors x rows <= max_accumulators).
int small_matmul_max_rows(const SmallMatmulImplementation& impl, int64_t n);
}  // namespace internal

// The small-matrix kernel of an ISA (dispatch.cpp).
const internal::SmallMatmulImplementation& small_matmul_implementation(Isa isa);

namespace avx2 {
void small_matmul_ukernel(const internal::SmallMatmulArgs& args);
}
namespace avx512skx {
void small_matmul_ukernel(const internal::SmallMatmulArgs& args);
}

}  // namespace qdqrt::kernels
