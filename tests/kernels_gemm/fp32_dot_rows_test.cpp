// fp32 row dots (kernels/fp32/fp32_dot_rows.h), run_sgemm's path for one output column: bit for bit
// the reference's lane order (dot_rows_reference with the ISA's lanes) plus the bias, residual and
// clamp, over random depths (tails), row strides and output strides, through run_dot_rows and
// through run_sgemm's dispatch; and where it applies.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "guarded_buffer.h"
#include "kernels/fp32/fp32_dot_rows.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

std::vector<Isa> dot_rows_isas() {
  std::vector<Isa> isas;
  for (Isa isa : supported_isas()) {
    if (dot_rows_implementation(isa).ukernel != nullptr) isas.push_back(isa);
  }
  return isas;
}

void check(Isa isa, int64_t m, int64_t k, int64_t a_extra, int64_t c_stride, bool residual, float low, float high,
           uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << isa_name(isa) << " m " << m << " k " << k << " lda +" << a_extra << " ldc "
                                    << c_stride << " residual " << residual << " clamp " << low << ".." << high);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t lda = k + a_extra;
  GuardedBuffer a_buffer(static_cast<size_t>((m - 1) * lda + k) * sizeof(float));  // the last row ends at the guard
  float* a = a_buffer.as<float>();
  for (size_t i = 0; i < a_buffer.size() / sizeof(float); ++i) a[i] = uniform(rng);
  if (m > 2) a[lda + k / 2] = std::numeric_limits<float>::quiet_NaN();  // row 1: NaN passes the clamp
  std::vector<float> b(static_cast<size_t>(k)), residual_values(static_cast<size_t>(m * 3));
  for (float& v : b) v = uniform(rng);
  for (float& v : residual_values) v = uniform(rng);
  const float bias = uniform(rng);
  SgemmWeightsDesc desc;
  desc.n = 1;
  desc.channels = static_cast<int>(k);
  desc.weights = b.data();
  desc.stride_n = k;
  desc.stride_channel = 1;
  desc.bias = &bias;
  const PackedSgemm packed = pack_sgemm(desc, isa);
  Fp32Epilogue epilogue;
  epilogue.min = low;
  epilogue.max = high;
  if (residual) {
    epilogue.residual = residual_values.data();
    epilogue.residual_row_stride = 3;
  }
  ASSERT_TRUE(dot_rows_applies(packed, epilogue));
  const float kSentinel = -999.0f;
  std::vector<float> expected(static_cast<size_t>(m * c_stride), kSentinel);
  const int lanes = dot_rows_implementation(isa).lanes;
  for (int64_t r = 0; r < m; ++r) {
    float value = dot_rows_reference(a + r * lda, b.data(), k, lanes) + bias;
    if (residual) value += residual_values[static_cast<size_t>(r * 3)];
    if (value < low) value = low;
    if (value > high) value = high;
    expected[static_cast<size_t>(r * c_stride)] = value;
  }
  std::vector<float> direct(expected.size(), kSentinel), dispatched(expected.size(), kSentinel);
  // In two ranges, as two threads split the rows.
  run_dot_rows(packed, a, lda, direct.data(), c_stride, epilogue, 0, m / 2);
  run_dot_rows(packed, a, lda, direct.data(), c_stride, epilogue, m / 2, m);
  run_sgemm(packed, a, lda, dispatched.data(), c_stride, epilogue, 0, m, 0, 1);
  ASSERT_EQ(std::memcmp(direct.data(), expected.data(), expected.size() * sizeof(float)), 0);
  ASSERT_EQ(std::memcmp(dispatched.data(), expected.data(), expected.size() * sizeof(float)), 0);
  EXPECT_TRUE(a_buffer.canary_intact());
}

TEST(Fp32DotRows, LaneOrderBiasResidualAndClamp) {
  const std::vector<Isa> isas = dot_rows_isas();
  if (isas.empty()) GTEST_SKIP() << "no vector ISA on this CPU";
  uint32_t seed = 0;
  for (Isa isa : isas) {
    for (int64_t k : {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1000}) {
      for (int64_t m : {1, 2, 5, 300, 601}) check(isa, m, k, 0, 1, false, -INFINITY, INFINITY, ++seed);
    }
    check(isa, 40, 32, 5, 3, true, -0.5f, 0.75f, ++seed);
    check(isa, 17, 77, 1, 2, true, 0.0f, INFINITY, ++seed);
  }
}

TEST(Fp32DotRows, ReferenceOrderIsTheHalvingTree) {
  // Four lanes: lane l sums k = l, l + 4, ...; then (l0 + l2) + (l1 + l3).
  const float a[] = {1e8f, 1.0f, -1e8f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 3.0f};
  const float b[] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  // Lanes: {1e8 + 1 + 3 = 1e8 (rounded), 1, -1e8, 1}: (1e8 + -1e8) + (1 + 1) = 2.
  EXPECT_EQ(dot_rows_reference(a, b, 9, 4), 2.0f);
  // One lane: k order, 1e8 + 1 + -1e8 + 1 + 1 + 3 = 5 (the first 1 lost to rounding).
  EXPECT_EQ(dot_rows_reference(a, b, 9, 1), 5.0f);
}

TEST(Fp32DotRows, AppliesToOneColumnWithoutActivation) {
  for (Isa isa : supported_isas()) {
    const std::vector<float> weights(64 * 2, 0.5f);
    SgemmWeightsDesc desc;
    desc.n = 1;
    desc.channels = 64;
    desc.weights = weights.data();
    desc.stride_n = 64;
    desc.stride_channel = 1;
    const PackedSgemm one = pack_sgemm(desc, isa);
    desc.n = 2;
    const PackedSgemm two = pack_sgemm(desc, isa);
    Fp32Epilogue plain, gelu;
    gelu.activation = Fp32EpilogueActivation::kGelu;
    const bool vector = dot_rows_implementation(isa).ukernel != nullptr;
    EXPECT_EQ(dot_rows_applies(one, plain), vector) << isa_name(isa);
    EXPECT_FALSE(dot_rows_applies(two, plain)) << isa_name(isa);
    EXPECT_FALSE(dot_rows_applies(one, gelu)) << isa_name(isa) << ": the activation stays in the tile";
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
