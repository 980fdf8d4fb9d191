// fp32 small-matrix MatMul driver (portable): splits a matrix's rows into near-equal tiles and calls
// the ISA's tile (fp32_small_matmul_vector_impl.h, chosen by small_matmul_implementation()).
#include "kernels/fp32/fp32_small_matmul.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

namespace qdqrt::kernels {

namespace internal {
int small_matmul_max_rows(const SmallMatmulImplementation& impl, int64_t n) {
  const int vectors = static_cast<int>(std::max<int64_t>((n + impl.lanes - 1) / impl.lanes, 1));
  return std::min(impl.max_rows, impl.max_accumulators / vectors);
}
}  // namespace internal

bool small_matmul_applies(Isa isa, int64_t n, int64_t k) {
  const internal::SmallMatmulImplementation& impl = small_matmul_implementation(isa);
  return impl.ukernel != nullptr && n >= 1 && n <= static_cast<int64_t>(kSmallMatmulMaxVectors) * impl.lanes &&
         k >= 0 && k * n * static_cast<int64_t>(sizeof(float)) <= kSmallMatmulMaxBBytes;
}

int64_t small_matmul_tiles(Isa isa, int64_t m, int64_t n) {
  const int rows = internal::small_matmul_max_rows(small_matmul_implementation(isa), n);
  return (m + rows - 1) / rows;
}

std::string small_matmul_kernel_name(Isa isa, int64_t n) {
  const internal::SmallMatmulImplementation& impl = small_matmul_implementation(isa);
  const int64_t columns = std::max<int64_t>((n + impl.lanes - 1) / impl.lanes, 1) * impl.lanes;
  return fmt::format("f32-smallgemm-{}x{}-{}", internal::small_matmul_max_rows(impl, n), columns, impl.isa_suffix);
}

void run_small_matmul(Isa isa, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                      int64_t m, int n, int k, int64_t tile_begin, int64_t tile_end) {
  assert(small_matmul_applies(isa, n, k));
  const internal::SmallMatmulImplementation& impl = small_matmul_implementation(isa);
  const int64_t tiles = small_matmul_tiles(isa, m, n);
  internal::SmallMatmulArgs args;
  args.lda = lda;
  args.b = b;
  args.ldb = ldb;
  args.ldc = ldc;
  args.n = n;
  args.k = k;
  for (int64_t tile = tile_begin; tile < std::min(tile_end, tiles); ++tile) {
    // Near-equal tiles: 49 rows of at most 14 run as 12 + 12 + 12 + 13, not 14 + 14 + 14 + 7.
    const int64_t row_begin = tile * m / tiles, row_end = (tile + 1) * m / tiles;
    args.a = a + row_begin * lda;
    args.c = c + row_begin * ldc;
    args.rows = static_cast<int>(row_end - row_begin);
    impl.ukernel(args);
  }
}

}  // namespace qdqrt::kernels
