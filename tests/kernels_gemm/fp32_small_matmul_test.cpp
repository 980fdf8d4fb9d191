// fp32 small-matrix MatMul (kernels/fp32/fp32_small_matmul.h): against a scalar reference that sums
// each output from +0 with one fused multiply-add per k in k order (bitwise), and against run_sgemm
// on the same matrices with a zero bias (bitwise: the layer's outputs must not depend on the path).
// Row, column and depth tails, padded strides, tiles run one at a time, and A and B ending at a
// guard page (an over-read of B's last row faults).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "guarded_buffer.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/fp32/fp32_small_matmul.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

struct SmallCase {
  int m, n, k;
  int lda_extra = 0, ldb_extra = 0, ldc_extra = 0;
};

std::vector<Isa> small_matmul_isas() {
  std::vector<Isa> isas;
  for (Isa isa : supported_isas()) {
    if (small_matmul_implementation(isa).ukernel != nullptr) isas.push_back(isa);
  }
  return isas;
}

void check_case(Isa isa, const SmallCase& t, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << isa_name(isa) << " m " << t.m << " n " << t.n << " k " << t.k << " strides +"
                                    << t.lda_extra << " +" << t.ldb_extra << " +" << t.ldc_extra);
  ASSERT_TRUE(small_matmul_applies(isa, t.n, t.k));
  const int64_t lda = t.k + t.lda_extra, ldb = t.n + t.ldb_extra, ldc = t.n + t.ldc_extra;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  // A and B end at a guard page: B's last row ends exactly there.
  GuardedBuffer a_buffer(static_cast<size_t>(std::max<int64_t>((t.m - 1) * lda + t.k, 1)) * sizeof(float));
  GuardedBuffer b_buffer(static_cast<size_t>(std::max<int64_t>((t.k - 1) * ldb + t.n, 1)) * sizeof(float));
  float* a = a_buffer.as<float>();
  float* b = b_buffer.as<float>();
  for (size_t i = 0; i < a_buffer.size() / sizeof(float); ++i) a[i] = uniform(rng);
  for (size_t i = 0; i < b_buffer.size() / sizeof(float); ++i) b[i] = uniform(rng);
  // Some exact zeros times negatives: a sum that starts at -0 instead of +0 shows here.
  if (t.k > 0) {
    for (int r = 0; r < t.m; r += 3) {
      for (int kk = 0; kk < t.k; ++kk) a[r * lda + kk] = 0.0f;
    }
  }
  const float kSentinel = -777.0f;
  std::vector<float> c(static_cast<size_t>(t.m * ldc), kSentinel), reference(c.size(), kSentinel);
  for (int r = 0; r < t.m; ++r) {
    for (int j = 0; j < t.n; ++j) {
      float sum = 0.0f;
      for (int kk = 0; kk < t.k; ++kk) sum = std::fma(a[r * lda + kk], b[kk * ldb + j], sum);
      reference[r * ldc + j] = sum;
    }
  }
  const int64_t tiles = small_matmul_tiles(isa, t.m, t.n);
  run_small_matmul(isa, a, lda, b, ldb, c.data(), ldc, t.m, t.n, t.k, 0, tiles);
  ASSERT_EQ(std::memcmp(c.data(), reference.data(), c.size() * sizeof(float)), 0) << "whole matrix";
  // One tile at a time, in reverse: the same bits.
  std::vector<float> tiled(c.size(), kSentinel);
  for (int64_t tile = tiles - 1; tile >= 0; --tile) {
    run_small_matmul(isa, a, lda, b, ldb, tiled.data(), ldc, t.m, t.n, t.k, tile, tile + 1);
  }
  ASSERT_EQ(std::memcmp(tiled.data(), reference.data(), c.size() * sizeof(float)), 0) << "tile by tile";
  // The igemm's tile with B packed and a zero bias: the same bits (with k >= 1, it packs no empty
  // depth; and more than one column: run_sgemm sums one column in lanes, fp32_dot_rows.h).
  if (t.k >= 1 && t.n > 1) {
    SgemmWeightsDesc desc;
    desc.n = t.n;
    desc.channels = t.k;
    desc.weights = b;
    desc.stride_n = 1;
    desc.stride_channel = ldb;
    const PackedSgemm packed = pack_sgemm(desc, isa);
    std::vector<float> igemm(c.size(), kSentinel);
    run_sgemm(packed, a, lda, igemm.data(), ldc, Fp32Epilogue{}, 0, t.m, 0, t.n);
    ASSERT_EQ(std::memcmp(igemm.data(), c.data(), c.size() * sizeof(float)), 0) << "run_sgemm";
  }
  EXPECT_TRUE(a_buffer.canary_intact());
  EXPECT_TRUE(b_buffer.canary_intact());
}

TEST(Fp32SmallMatmul, ShapesTailsAndStrides) {
  const std::vector<Isa> isas = small_matmul_isas();
  if (isas.empty()) GTEST_SKIP() << "no vector ISA on this CPU";
  uint32_t seed = 0;
  for (Isa isa : isas) {
    const int max_n = kSmallMatmulMaxVectors * small_matmul_implementation(isa).lanes;
    for (int m : {1, 2, 5, 7, 13, 14, 15, 29, 49, 50, 97}) {
      for (int n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 49, 63, 64}) {
        if (n > max_n) continue;
        for (int k : {0, 1, 3, 17, 32, 49}) check_case(isa, {m, n, k}, ++seed);
      }
    }
    // Padded rows (strides past the row), as the engine never passes but the kernel takes.
    check_case(isa, {49, std::min(49, max_n), 32, 5, 3, 7}, ++seed);
    check_case(isa, {20, max_n, 100, 1, 16, 16}, ++seed);
  }
}

TEST(Fp32SmallMatmul, RandomShapes) {
  const std::vector<Isa> isas = small_matmul_isas();
  if (isas.empty()) GTEST_SKIP() << "no vector ISA on this CPU";
  std::mt19937 rng(2024);
  for (Isa isa : isas) {
    const int max_n = kSmallMatmulMaxVectors * small_matmul_implementation(isa).lanes;
    for (int i = 0; i < 60; ++i) {
      const int m = std::uniform_int_distribution<int>(1, 130)(rng);
      const int n = std::uniform_int_distribution<int>(1, max_n)(rng);
      const int k = std::uniform_int_distribution<int>(0, static_cast<int>(kSmallMatmulMaxBBytes / 4 / n))(rng);
      const int extra = std::uniform_int_distribution<int>(0, 3)(rng);
      check_case(isa, {m, n, k, extra, extra * 2, extra}, 5000 + i);
    }
  }
}

// Tiles: near-equal rows, at most the tile's rows; where it applies.
TEST(Fp32SmallMatmul, TilesAndLimits) {
  for (Isa isa : supported_isas()) {
    const internal::SmallMatmulImplementation& impl = small_matmul_implementation(isa);
    if (impl.ukernel == nullptr) {
      EXPECT_FALSE(small_matmul_applies(isa, 16, 16)) << isa_name(isa);
      continue;
    }
    const int max_n = kSmallMatmulMaxVectors * impl.lanes;
    EXPECT_TRUE(small_matmul_applies(isa, max_n, 1));
    EXPECT_FALSE(small_matmul_applies(isa, max_n + 1, 1)) << "more columns than the tile's vectors";
    EXPECT_FALSE(small_matmul_applies(isa, 0, 1));
    EXPECT_TRUE(small_matmul_applies(isa, 32, kSmallMatmulMaxBBytes / 4 / 32));
    EXPECT_FALSE(small_matmul_applies(isa, 32, kSmallMatmulMaxBBytes / 4 / 32 + 1)) << "B past the L1 budget";
    for (int n = 1; n <= max_n; ++n) {
      const int rows = internal::small_matmul_max_rows(impl, n);
      const int vectors = (n + impl.lanes - 1) / impl.lanes;
      EXPECT_LE(rows * vectors, impl.max_accumulators) << n;
      EXPECT_GE(rows, 1);
      for (int64_t m : {1, 48, 49, 197}) EXPECT_EQ(small_matmul_tiles(isa, m, n), (m + rows - 1) / rows);
    }
  }
  if (isa_supported(Isa::kAvx512Vnni)) {
    EXPECT_EQ(small_matmul_kernel_name(Isa::kAvx512Vnni, 49), "f32-smallgemm-7x64-avx512");
    EXPECT_EQ(small_matmul_kernel_name(Isa::kAvx512Vnni, 32), "f32-smallgemm-14x32-avx512");
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
