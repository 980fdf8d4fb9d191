// The fp32 small-matrix MatMul tile (kernels/fp32/fp32_small_matmul.h), written once over the vector
// operations of fp32_sgemm_vector_ops.h and compiled per ISA: fp32_small_matmul_avx512skx.cpp and
// fp32_small_matmul_avx2.cpp define QDQRT_SGEMM_AVX512 or QDQRT_SGEMM_AVX2 and QDQRT_SGEMM_NAMESPACE,
// then include this file.
#include <type_traits>
#include <utility>

#include "kernels/fp32/fp32_small_matmul.h"
#include "kernels/fp32/fp32_sgemm_vector_ops.h"

namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE {
namespace {

#if defined(QDQRT_SGEMM_AVX512)
constexpr int kMaxAccumulators = kSmallMatmulMaxAccumulatorsAvx512;
constexpr int kMaxRows = kSmallMatmulMaxRowsAvx512;
#else
constexpr int kMaxAccumulators = kSmallMatmulMaxAccumulatorsAvx2;
constexpr int kMaxRows = kSmallMatmulMaxRowsAvx2;
#endif
constexpr int rows_for(int vectors) { return std::min(kMaxRows, kMaxAccumulators / vectors); }

// kRows rows x kVectors vectors (the last under `last`): each output from +0, one FMA per k in k
// order (the igemm tile's sums with a zero bias), then stored.
template <int kRows, int kVectors>
void tile(const internal::SmallMatmulArgs& args) {
  V acc[kRows][kVectors];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[r][v] = splat(0.0f);
  }
  const PartMask last = part_mask(args.n - (kVectors - 1) * kLanes);
  const float* a[kRows];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) a[r] = args.a + r * args.lda;
  const float* b = args.b;
  const int64_t ldb = args.ldb;
  for (int k = 0; k < args.k; ++k, b += ldb) {
    V w[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v + 1 < kVectors; ++v) w[v] = loadu(b + v * kLanes);
    w[kVectors - 1] = load_masked(b + (kVectors - 1) * kLanes, last);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const V x = broadcast(a[r] + k);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[r][v] = fmadd(x, w[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    float* row = args.c + r * args.ldc;
#pragma GCC unroll 4
    for (int v = 0; v + 1 < kVectors; ++v) store_part(row + v * kLanes, acc[r][v], kLanes);
    store_masked(row + (kVectors - 1) * kLanes, acc[r][kVectors - 1], last);
  }
}

// tile<rows, kVectors> for args.rows in 1 .. rows_for(kVectors).
template <int kVectors, int... kRows>
void with_rows(const internal::SmallMatmulArgs& args, std::integer_sequence<int, kRows...>) {
  using Fn = void (*)(const internal::SmallMatmulArgs&);
  static constexpr Fn kTiles[] = {&tile<kRows + 1, kVectors>...};
  kTiles[args.rows - 1](args);
}

template <int kVectors>
void vectors(const internal::SmallMatmulArgs& args) {
  with_rows<kVectors>(args, std::make_integer_sequence<int, rows_for(kVectors)>{});
}

}  // namespace

void small_matmul_ukernel(const internal::SmallMatmulArgs& args) {
  switch ((args.n + kLanes - 1) / kLanes) {
    case 1: return vectors<1>(args);
    case 2: return vectors<2>(args);
    case 3: return vectors<3>(args);
    default: return vectors<4>(args);
  }
}

}  // namespace qdqrt::kernels::QDQRT_SGEMM_NAMESPACE
