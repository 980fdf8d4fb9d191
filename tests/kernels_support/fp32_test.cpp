// FP32 kernels: exact ops bit-equal to the scalar kernels, transcendental ones and GEMM within the
// tolerances stated in kernels/fp32/fp32_kernels.h.
#include <cmath>
#include <limits>

#include "kernels/fp32/fp32_kernels.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

bool is_exact(Fp32UnaryOp op) {
  switch (op) {
    case Fp32UnaryOp::kSigmoid:
    case Fp32UnaryOp::kSilu:
    case Fp32UnaryOp::kTanh:
    case Fp32UnaryOp::kGelu:
    case Fp32UnaryOp::kErf:
    case Fp32UnaryOp::kExp: return false;
    default: return true;
  }
}

std::string float_mismatch(const float* expected, const float* actual, size_t n, bool exact) {
  for (size_t i = 0; i < n; ++i) {
    const bool both_nan = std::isnan(expected[i]) && std::isnan(actual[i]);
    if (both_nan) continue;
    const bool ok = exact ? std::memcmp(&expected[i], &actual[i], sizeof(float)) == 0
                          : std::abs(expected[i] - actual[i]) <= 2e-6f + 1e-5f * std::abs(expected[i]);
    if (!ok) {
      return "index " + std::to_string(i) + ": expected " + std::to_string(expected[i]) + ", got " +
             std::to_string(actual[i]);
    }
  }
  return "";
}

TEST(Fp32Kernels, BinaryOpsAreExactOnEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    for (Fp32BinaryOp op : {Fp32BinaryOp::kAdd, Fp32BinaryOp::kSub, Fp32BinaryOp::kMul, Fp32BinaryOp::kDiv,
                            Fp32BinaryOp::kMax, Fp32BinaryOp::kMin}) {
      for (size_t n : sweep_sizes()) {
        std::mt19937 rng(seed++);
        const auto a = random_floats(rng, n, -10.0f, 10.0f), b = random_floats(rng, n, -10.0f, 10.0f);
        Guarded<float> ga(n, placement_for(seed)), gb(n, placement_for(seed + 1)), out(n, placement_for(seed + 2));
        ga.copy_from(a);
        gb.copy_from(b);
        std::vector<float> expected(n);
        const std::string description = std::string(fp32_binary_op_name(op)) + " isa=" + isa_name(isa) +
                                        " n=" + std::to_string(n);
        scalar::fp32_binary(op, n, a.data(), b.data(), expected.data());
        kernels.binary.fn(op, n, ga.data(), gb.data(), out.data());
        ASSERT_EQ(float_mismatch(expected.data(), out.data(), n, true), "") << kernels.binary.name << " " << description;
        scalar::fp32_binary_vs(op, n, a.data(), b[0], expected.data());
        kernels.binary_vs.fn(op, n, ga.data(), b[0], out.data());
        ASSERT_EQ(float_mismatch(expected.data(), out.data(), n, true), "") << kernels.binary_vs.name << " " << description;
        scalar::fp32_binary_sv(op, n, a[0], b.data(), expected.data());
        kernels.binary_sv.fn(op, n, a[0], gb.data(), out.data());
        ASSERT_EQ(float_mismatch(expected.data(), out.data(), n, true), "") << kernels.binary_sv.name << " " << description;
        ASSERT_EQ(out.check_canaries(), "") << description;
      }
    }
  }
}

TEST(Fp32Kernels, UnaryOpsMatchScalarOnEveryIsa) {
  const Fp32UnaryOp ops[] = {Fp32UnaryOp::kRelu,      Fp32UnaryOp::kClip,    Fp32UnaryOp::kLeakyRelu,
                             Fp32UnaryOp::kHardSigmoid, Fp32UnaryOp::kHardSwish, Fp32UnaryOp::kSigmoid,
                             Fp32UnaryOp::kSilu,      Fp32UnaryOp::kTanh,    Fp32UnaryOp::kGelu,
                             Fp32UnaryOp::kExp,       Fp32UnaryOp::kAbs,     Fp32UnaryOp::kNeg,
                             Fp32UnaryOp::kSqrt,      Fp32UnaryOp::kErf};
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    for (Fp32UnaryOp op : ops) {
      const Fp32UnaryParams params = op == Fp32UnaryOp::kClip ? Fp32UnaryParams{-1.5f, 2.5f}
                                     : op == Fp32UnaryOp::kHardSigmoid ? Fp32UnaryParams{0.2f, 0.5f}
                                                                       : Fp32UnaryParams{0.1f, 0.0f};
      for (size_t n : sweep_sizes()) {
        std::mt19937 rng(seed++);
        const float range = op == Fp32UnaryOp::kExp ? 80.0f : 12.0f;
        auto input = random_floats(rng, n, op == Fp32UnaryOp::kSqrt ? 0.0f : -range, range);
        if (n > 4 && op != Fp32UnaryOp::kExp && op != Fp32UnaryOp::kSqrt) {
          input[1] = 0.0f;
          input[2] = -0.0f;
          input[3] = 1e-6f;
        }
        Guarded<float> guarded_input(n, placement_for(seed)), output(n, placement_for(seed + 1));
        guarded_input.copy_from(input);
        std::vector<float> expected(n);
        scalar::fp32_unary(op, params, n, input.data(), expected.data());
        kernels.unary.fn(op, params, n, guarded_input.data(), output.data());
        ASSERT_EQ(float_mismatch(expected.data(), output.data(), n, is_exact(op)), "")
            << kernels.unary.name << " " << fp32_unary_op_name(op) << " isa=" << isa_name(isa) << " n=" << n;
        ASSERT_EQ(output.check_canaries(), "");
      }
    }
  }
}

TEST(Fp32Kernels, SoftmaxMatchesScalarOnEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    // 49: Swin's 7x7 windows (three vectors and a one-lane tail); 8 and 7: the AVX2 width.
    for (size_t cols : {1, 3, 7, 8, 10, 16, 17, 49, 100, 1000}) {
      for (size_t rows : {1, 3, 5, 9}) {
        std::mt19937 rng(seed++);
        const auto input = random_floats(rng, rows * cols, -20.0f, 20.0f);
        Guarded<float> guarded_input(input.size(), placement_for(seed)), output(input.size(), placement_for(seed + 1));
        guarded_input.copy_from(input);
        std::vector<float> expected(input.size());
        scalar::fp32_softmax(rows, cols, input.data(), expected.data());
        kernels.softmax.fn(rows, cols, guarded_input.data(), output.data());
        ASSERT_EQ(float_mismatch(expected.data(), output.data(), input.size(), false), "")
            << kernels.softmax.name << " isa=" << isa_name(isa) << " rows=" << rows << " cols=" << cols;
        ASSERT_EQ(output.check_canaries(), "");
      }
    }
  }
}

// The vector softmax runs rows four at a time; each row must get the bits it gets alone (the
// engines' stored output digests depend on them), whatever its position in a pass.
TEST(Fp32Kernels, SoftmaxRowsInOnePassMatchRowsAloneExactly) {
  uint32_t seed = 7;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    for (size_t cols : {3, 16, 49, 100}) {
      const size_t rows = 11;
      std::mt19937 rng(seed++);
      const auto input = random_floats(rng, rows * cols, -20.0f, 20.0f);
      std::vector<float> together(input.size()), alone(input.size());
      kernels.softmax.fn(rows, cols, input.data(), together.data());
      for (size_t r = 0; r < rows; ++r) kernels.softmax.fn(1, cols, input.data() + r * cols, alone.data() + r * cols);
      ASSERT_EQ(float_mismatch(alone.data(), together.data(), input.size(), true), "")
          << kernels.softmax.name << " isa=" << isa_name(isa) << " cols=" << cols;
    }
  }
}

// Per-channel float sums (a depthwise conv's row sums for the GlobalAveragePool after it): bit-equal
// to the scalar kernel, the sums in row order; every vector pass width (1-8 vectors) and tails.
TEST(Fp32Kernels, ChannelSumsF32AreExactOnEveryIsa) {
  uint32_t seed = 11;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    for (size_t channels : {1, 7, 16, 20, 32, 48, 64, 96, 112, 128, 130, 144, 240, 255, 672}) {
      for (size_t rows : {1, 2, 7, 14, 112}) {
        for (size_t extra : {0, 5}) {
          const size_t stride = channels + extra;
          std::mt19937 rng(seed++);
          const auto input = random_floats(rng, rows * stride, -1000.0f, 1000.0f);
          Guarded<float> guarded_input(input.size(), placement_for(seed)), actual(channels, placement_for(seed + 1));
          guarded_input.copy_from(input);
          std::vector<float> expected(channels);
          scalar::fp32_channel_sums_f32(rows, channels, stride, input.data(), expected.data());
          kernels.channel_sums_f32.fn(rows, channels, stride, guarded_input.data(), actual.data());
          ASSERT_EQ(float_mismatch(expected.data(), actual.data(), channels, true), "")
              << kernels.channel_sums_f32.name << " isa=" << isa_name(isa) << " rows=" << rows
              << " channels=" << channels;
          ASSERT_EQ(actual.check_canaries(), "");
          float direct = 0.0f;
          for (size_t r = 0; r < rows; ++r) direct += input[r * stride + channels - 1];
          ASSERT_EQ(expected[channels - 1], direct) << "scalar: the sum in row order";
        }
      }
    }
  }
}

// Per-channel double sums (the NHWC GlobalAveragePool): bit-equal to the scalar kernel.
TEST(Fp32Kernels, ChannelSumsAreExactOnEveryIsa) {
  uint32_t seed = 7;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    for (size_t channels : {1, 7, 16, 32, 48, 64, 65, 100, 112, 130, 144}) {
      for (size_t rows : {1, 5, 49, 100}) {  // 49, 100: several of the kernel's row blocks
        for (size_t extra : {0, 3}) {
          const size_t stride = channels + extra;
          std::mt19937 rng(seed++);
          const auto input = random_floats(rng, rows * stride, -1000.0f, 1000.0f);
          Guarded<float> guarded_input(input.size(), placement_for(seed));
          guarded_input.copy_from(input);
          std::vector<double> expected(channels), actual(channels, -1.0);
          scalar::fp32_channel_sums(rows, channels, stride, input.data(), expected.data());
          kernels.channel_sums.fn(rows, channels, stride, guarded_input.data(), actual.data());
          for (size_t c = 0; c < channels; ++c) {
            ASSERT_EQ(expected[c], actual[c]) << kernels.channel_sums.name << " isa=" << isa_name(isa)
                                              << " rows=" << rows << " channels=" << channels << " c=" << c;
          }
          double direct = 0.0;
          for (size_t r = 0; r < rows; ++r) direct += input[r * stride];
          ASSERT_EQ(expected[0], direct) << "scalar: the sum in row order";
        }
      }
    }
  }
}

TEST(Fp32Kernels, GemmMatchesScalarOnEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    const Fp32Kernels kernels = fp32_kernels(isa);
    for (size_t m : {1, 7, 33}) {
      for (size_t n : {1, 16, 37}) {
        for (size_t k : {1, 9, 64, 130}) {
          for (int variant = 0; variant < 4; ++variant) {
            std::mt19937 rng(seed++);
            Fp32GemmParams p;
            p.m = m;
            p.n = n;
            p.k = k;
            p.transpose_a = variant & 1;
            p.transpose_b = variant & 2;
            p.alpha = seed % 2 ? 1.0f : 0.5f;
            p.beta = seed % 3 == 0 ? 0.75f : 0.0f;
            p.relu = seed % 4 == 1;
            const size_t lda = (p.transpose_a ? m : k) + 3, ldb = (p.transpose_b ? k : n) + 1, ldc = n + 2;
            const auto a = random_floats(rng, (p.transpose_a ? k : m) * lda, -1.0f, 1.0f);
            const auto b = random_floats(rng, (p.transpose_b ? n : k) * ldb, -1.0f, 1.0f);
            const auto bias = random_floats(rng, n, -1.0f, 1.0f);
            auto c_initial = random_floats(rng, m * ldc, -1.0f, 1.0f);
            if (p.beta == 0.0f) c_initial[0] = std::numeric_limits<float>::quiet_NaN();  // must be ignored
            std::vector<float> expected = c_initial;
            Guarded<float> c(m * ldc, placement_for(seed));
            c.copy_from(c_initial);
            const float* bias_pointer = seed % 2 ? bias.data() : nullptr;
            scalar::fp32_gemm(p, a.data(), lda, b.data(), ldb, bias_pointer, expected.data(), ldc);
            kernels.gemm.fn(p, a.data(), lda, b.data(), ldb, bias_pointer, c.data(), ldc);
            const float tolerance = 1e-4f * std::sqrt(static_cast<float>(k)) + 1e-6f;
            for (size_t i = 0; i < m; ++i) {
              for (size_t j = 0; j < n; ++j) {
                ASSERT_NEAR(c[i * ldc + j], expected[i * ldc + j], tolerance)
                    << kernels.gemm.name << " isa=" << isa_name(isa) << " m=" << m << " n=" << n << " k=" << k
                    << " variant=" << variant << " at " << i << "," << j;
              }
              for (size_t j = n; j < ldc; ++j) {  // the padding columns of C are untouched
                ASSERT_EQ(std::memcmp(&c[i * ldc + j], &c_initial[i * ldc + j], 4), 0) << kernels.gemm.name;
              }
            }
            ASSERT_EQ(c.check_canaries(), "");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::kernels::testing
