// The BF16 GEMM (kernels/bf16/bf16_gemm.h): the AVX512_BF16 kernel equals the scalar reference
// bit for bit over random shapes, K and N tails, splits and epilogues; the conversion equals
// vcvtne2ps2bf16's rounding.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "bf16_gemm_tester.h"
#include "kernels/bf16/bf16_gemm.h"

namespace qdqrt::kernels::testing {
namespace {

uint16_t bf16_of_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return bf16_from_float(value);
}

TEST(Bf16Convert, RoundsToNearestEvenAndFlushesDenormals) {
  EXPECT_EQ(bf16_of_bits(0x3F800000u), 0x3F80);  // 1.0
  EXPECT_EQ(bf16_of_bits(0x3F808000u), 0x3F80);  // a tie: to the even 0x3F80
  EXPECT_EQ(bf16_of_bits(0x3F818000u), 0x3F82);  // a tie: to the even 0x3F82
  EXPECT_EQ(bf16_of_bits(0x3F808001u), 0x3F81);  // above the tie
  EXPECT_EQ(bf16_of_bits(0x3F807FFFu), 0x3F80);  // below the tie
  EXPECT_EQ(bf16_of_bits(0x7F7FFFFFu), 0x7F80);  // the largest float rounds to infinity
  EXPECT_EQ(bf16_of_bits(0xFF800000u), 0xFF80);  // -infinity
  EXPECT_EQ(bf16_of_bits(0x00400000u), 0x0000);  // denormal: zero
  EXPECT_EQ(bf16_of_bits(0x80000001u), 0x8000);  // negative denormal: -0
  EXPECT_EQ(bf16_of_bits(0x7F800001u), 0x7FC0);  // signalling NaN: made quiet
  EXPECT_EQ(bf16_of_bits(0xFFC12345u), 0xFFC1);  // quiet NaN keeps its top bits
  EXPECT_EQ(float_from_bf16(0xC040), -3.0f);
}

TEST(Bf16Convert, VectorEqualsScalarOnRandomBits) {
  if (!cpu_has_avx512bf16()) GTEST_SKIP() << "this CPU lacks AVX512_BF16: only the scalar reference runs";
  std::mt19937 rng(7);
  for (int count : {0, 2, 14, 16, 18, 30, 32, 34, 64, 98}) {
    std::vector<uint32_t> bits(static_cast<size_t>(count) + 1);
    for (uint32_t& value : bits) value = rng();
    // Every class: denormals, zeros, infinities, NaNs and ties.
    const uint32_t specials[] = {0x00000001u, 0x80000000u, 0x7F800000u, 0x7FA00000u, 0x3F808000u, 0x3F818000u};
    for (size_t i = 0; i < bits.size(); i += 3) bits[i] = specials[i % 6] | (bits[i] & 0x80000000u);
    std::vector<float> input(bits.size());
    std::memcpy(input.data(), bits.data(), bits.size() * 4);
    std::vector<uint16_t> vector(bits.size(), 0xABCD), scalar(bits.size(), 0xABCD);
    internal::avx512bf16::bf16_convert(input.data(), count, vector.data());
    internal::scalar::bf16_convert(input.data(), count, scalar.data());
    EXPECT_EQ(vector, scalar) << "count " << count;
    EXPECT_EQ(vector[static_cast<size_t>(count)], 0xABCD) << "written past count " << count;
  }
}

class Bf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has_avx512bf16()) {
      // The reference still runs against the double sum; the exact comparison needs the CPU.
      Bf16GemmTester().m(5).k(9).n(7).test();
      GTEST_SKIP() << "this CPU lacks AVX512_BF16: the kernel is not compared with its reference here";
    }
  }
};

TEST_F(Bf16Gemm, RowTails) {
  for (int m = 1; m <= 2 * kBf16GemmMr + 1; ++m) Bf16GemmTester().m(m).k(24).n(32).seed(m).test();
}

TEST_F(Bf16Gemm, ColumnTails) {
  for (int n : {1, 5, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100}) Bf16GemmTester().m(15).k(20).n(n).seed(n).test();
}

TEST_F(Bf16Gemm, KTailsOddAndEven) {
  for (int k = 1; k <= 40; ++k) Bf16GemmTester().m(14).k(k).n(40).seed(k).test();
  for (int k : {63, 64, 65, 127, 129, 768}) Bf16GemmTester().m(9).k(k).n(33).seed(k).test();
}

TEST_F(Bf16Gemm, TransposedWeightsStridesAndNoBias) {
  Bf16GemmTester().m(17).k(33).n(50).transposed_weights(true).row_padding(3, 5).test();
  Bf16GemmTester().m(3).k(16).n(70).bias(false).row_padding(1, 0).test();
}

TEST_F(Bf16Gemm, ResidualAndClamp) {
  Bf16GemmTester().m(20).k(45).n(47).residual(true).row_padding(0, 2).test();
  Bf16GemmTester().m(20).k(45).n(47).clamp(0.0f, 0.5f).test();
  Bf16GemmTester().m(6).k(10).n(90).residual(true).clamp(-0.25f, 6.0f).test();
}

TEST_F(Bf16Gemm, SplitsAsTheEngineThreads) {
  Bf16GemmTester().m(40).k(50).n(130).split(14, 64).test();
  Bf16GemmTester().m(29).k(19).n(96).split(13, 32).test();
  Bf16GemmTester().m(1).k(300).n(200).split(0, 96).test();
}

TEST_F(Bf16Gemm, DenormalInputsReadAsZero) { Bf16GemmTester().m(16).k(37).n(35).denormal_inputs(true).test(); }

// Enough panels that one call covers several blocks of columns (the L2 blocking of the weights).
TEST_F(Bf16Gemm, ManyPanelBlocks) { Bf16GemmTester().m(15).k(1100).n(260).split(0, 160).test(); }

TEST_F(Bf16Gemm, RandomShapes) {
  std::mt19937 rng(2024);
  for (int i = 0; i < 60; ++i) {
    const int m = 1 + static_cast<int>(rng() % 40), k = 1 + static_cast<int>(rng() % 200),
              n = 1 + static_cast<int>(rng() % 150);
    Bf16GemmTester()
        .m(m)
        .k(k)
        .n(n)
        .transposed_weights(rng() % 2)
        .residual(rng() % 3 == 0)
        .row_padding(static_cast<int>(rng() % 3), static_cast<int>(rng() % 3))
        .split(static_cast<int>(rng() % (m + 1)), static_cast<int>(rng() % (n + 1)))
        .seed(static_cast<uint32_t>(i))
        .test();
  }
}

// Rows past one AMX pass of converted rows (about 1 MiB of them: 682 rows at k 768).
TEST_F(Bf16Gemm, RowsBeyondOneAmxPass) {
  if (!bf16_amx_usable()) GTEST_SKIP() << "no AMX-BF16 here (" << bf16_amx_unavailable_reason() << ")";
  EXPECT_GT(800, internal::amxbf16::rows_per_pass(bf16_gemm_k_pairs(768)));
  Bf16GemmTester().m(800).k(768).n(40).split(700, 0).test();
}

TEST(Bf16GemmNames, KernelNamesSayDtypeTileAndIsa) {
  EXPECT_EQ(bf16_gemm_kernel_name(Bf16GemmVariant::kAvx512Bf16), "bf16-gemm-14x32-avx512bf16");
  EXPECT_EQ(bf16_gemm_kernel_name(Bf16GemmVariant::kAmxBf16), "bf16-gemm-32x32-amxbf16");
  EXPECT_EQ(bf16_gemm_kernel_name(Bf16GemmVariant::kScalar), "bf16-gemm-14x32-scalar");
}

}  // namespace
}  // namespace qdqrt::kernels::testing
