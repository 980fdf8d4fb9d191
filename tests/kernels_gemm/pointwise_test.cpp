// Pointwise programs in the INT8 epilogue: every ISA's GEMM, conv and depthwise kernels bit-equal
// to the scalar oracle (kernels/oracle.h, which runs the scalar program definition), over column
// tails, per-channel and scalar constants, every output type; the program math against <cmath>;
// and validation of malformed programs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "conv_tester.h"
#include "gemm_tester.h"
#include "kernels/pointwise/pointwise_program.h"

namespace qdqrt::kernels::testing {
namespace {

// A program with its constant storage ([slots][stride]).
struct TestProgram {
  PointwiseProgram program;
  std::vector<float> constants;

  TestProgram(std::vector<PointwiseInstruction> code, int slots, int64_t channels, uint32_t seed) {
    program.size = static_cast<int>(code.size());
    std::copy(code.begin(), code.end(), program.code.begin());
    program.constant_slots = slots;
    program.constant_stride = channels > 0 ? (channels + 15) / 16 * 16 : 0;
    const int64_t row = channels > 0 ? program.constant_stride : 1;
    constants.resize(static_cast<size_t>(std::max<int64_t>(slots * row, 1)));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(0.25f, 2.0f);
    for (float& c : constants) c = value(rng);
    program.constants = constants.data();
  }
};

constexpr uint8_t kC0 = kFirstConstantOperand, kC1 = kFirstConstantOperand + 1;

std::vector<TestProgram> programs(int64_t channels) {
  std::vector<TestProgram> list;
  for (PointwiseOp op : {PointwiseOp::kSilu, PointwiseOp::kSigmoid, PointwiseOp::kGelu, PointwiseOp::kGeluTanh,
                         PointwiseOp::kHardSwish, PointwiseOp::kTanh}) {
    list.emplace_back(std::vector<PointwiseInstruction>{{op, 0, 0, 0}}, 0, 0, 1);
  }
  // Decomposed GELU: x * 0.5 * (1 + erf(x / c0)) with scalar constants.
  list.emplace_back(std::vector<PointwiseInstruction>{{PointwiseOp::kDiv, 1, 0, kC0},
                                                      {PointwiseOp::kErf, 1, 1, 0},
                                                      {PointwiseOp::kAdd, 1, 1, kC1},
                                                      {PointwiseOp::kMul, 0, 0, 1},
                                                      {PointwiseOp::kMul, 0, 0, kC1}},
                    2, 0, 2);
  // Per-channel scale and shift around a sigmoid, a LeakyRelu, a clamp and a copy into r0.
  list.emplace_back(std::vector<PointwiseInstruction>{{PointwiseOp::kMul, 2, 0, kC0},
                                                      {PointwiseOp::kSigmoid, 3, 2, 0},
                                                      {PointwiseOp::kSub, 3, 3, kC1},
                                                      {PointwiseOp::kLeakyRelu, 4, 3, kC0},
                                                      {PointwiseOp::kMax, 4, 4, 0},
                                                      {PointwiseOp::kMin, 5, 4, kC1},
                                                      {PointwiseOp::kCopy, 0, 5, 0}},
                    2, channels, 3);
  list.emplace_back(std::vector<PointwiseInstruction>{{PointwiseOp::kExp, 1, 0, 0},
                                                      {PointwiseOp::kAbs, 2, 0, 0},
                                                      {PointwiseOp::kSqrt, 2, 2, 0},
                                                      {PointwiseOp::kNeg, 2, 2, 0},
                                                      {PointwiseOp::kRelu, 3, 0, 0},
                                                      {PointwiseOp::kMin, 1, 1, kC0},
                                                      {PointwiseOp::kAdd, 0, 1, 2},
                                                      {PointwiseOp::kAdd, 0, 0, 3}},
                    1, channels, 4);
  for (const TestProgram& p : list) EXPECT_EQ(validate_pointwise_program(p.program), "");
  return list;
}

TEST(PointwiseEpilogue, GemmAllIsasMatchTheScalarProgram) {
  const int n = 81;  // 5 vectors + a tail of 1
  std::vector<TestProgram> list = programs(n);
  int seed = 0;
  for (const TestProgram& p : list) {
    for (OutputType type : {OutputType::kS8, OutputType::kU8, OutputType::kF32}) {
      QuantSettings q;
      q.output_type = type;
      q.output_zero_point = type == OutputType::kU8 ? 100 : type == OutputType::kS8 ? -7 : 0;
      q.bias_float = seed % 2 == 0;
      q.residual = seed % 3 == 0;
      q.activation = seed % 4 == 1 ? Activation{ActivationKind::kRelu} : Activation{};
      q.program = &p.program;
      GemmTester().m(9).n(n).k(30).c_stride(90).quant(q).seed(++seed).split(2).test_all_isas();
    }
  }
}

TEST(PointwiseEpilogue, ConvAndDepthwiseAllIsasMatchTheScalarProgram) {
  const int channels = 40;
  std::vector<TestProgram> list = programs(channels);
  int seed = 0;
  for (const TestProgram& p : list) {
    for (int depthwise = 0; depthwise < 3; ++depthwise) {  // dense, depthwise, 4 groups
      QuantSettings q;
      q.output_type = seed % 3 == 2 ? OutputType::kF32 : OutputType::kS8;
      q.output_zero_point = q.output_type == OutputType::kS8 ? 5 : 0;
      q.program = &p.program;
      ConvTester tester;
      tester.batch(2).input_size(7, 9).kernel(3, 3).padding(1, 1, 1, 1).quant(q).seed(++seed).split(3);
      if (depthwise == 2) {
        tester.channels(32, channels).groups(4);
      } else if (depthwise) {
        tester.channels(channels, channels).groups(channels);
      } else {
        tester.channels(24, channels);
      }
      tester.test_all_isas();
    }
  }
}

// The grouped form (uint8 inputs, groups of 10 output channels): each group's program constants
// start at its first channel, also when threads take ranges of groups.
TEST(PointwiseEpilogue, GroupedFormMatchesTheScalarProgram) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "no AVX-512 VNNI";
  const int channels = 40;
  std::vector<TestProgram> list = programs(channels);
  int seed = 0;
  for (const TestProgram& p : list) {
    QuantSettings q;
    q.input_signed = false;
    q.input_zero_point = 17;
    q.output_type = seed % 3 == 2 ? OutputType::kF32 : OutputType::kU8;
    q.output_zero_point = q.output_type == OutputType::kU8 ? 100 : 0;
    q.program = &p.program;
    ConvTester tester;
    tester.batch(2).input_size(7, 9).channels(32, channels).groups(4).kernel(3, 3).padding(1, 1, 1, 1).quant(q)
        .seed(++seed).split(2).channel_split(3);
    tester.expect_kernel("gconv-12x16c4", Isa::kAvx512Vnni).test(Isa::kAvx512Vnni, 16);
    tester.expect_kernel("", Isa::kScalar).grouped_reference(true).test(Isa::kAvx512Vnni, 16);
  }
}

// The depthwise single-op stores (SiLU/sigmoid applied in unpack order): 17..32 channels (the
// two-tiles-per-zmm tail), one and several 64-channel blocks with a ymm or masked last block,
// every output type, with and without a ReLU before the op, zero-points, pixel strides, tails.
TEST(PointwiseEpilogue, DepthwiseSingleOpStoresMatchTheScalarProgram) {
  int seed = 100;
  for (PointwiseOp op : {PointwiseOp::kSilu, PointwiseOp::kSigmoid}) {
    const TestProgram program(std::vector<PointwiseInstruction>{{op, 0, 0, 0}}, 0, 0, 1);
    for (int channels : {24, 32, 64, 72, 96, 144}) {
      for (OutputType type : {OutputType::kS8, OutputType::kU8, OutputType::kF32}) {
        QuantSettings q;
        q.output_type = type;
        q.output_zero_point = type == OutputType::kU8 ? 120 : type == OutputType::kS8 ? -3 : 0;
        q.activation = seed % 3 == 0 ? Activation{ActivationKind::kRelu} : Activation{};
        q.input_signed = seed % 2 == 1;
        q.program = &program.program;
        const int kernel = seed % 2 == 0 ? 3 : 5;
        const int stride = seed % 4 < 2 ? 1 : 2;
        const int input_extra = seed % 5 == 0 ? 8 : 0, output_extra = seed % 7 == 0 ? 16 : 0;
        ++seed;
        ConvTester()
            .batch(1)
            .input_size(9, 13)
            .channels(channels, channels)
            .groups(channels)
            .kernel(kernel, kernel)
            .stride(stride, stride)
            .padding(kernel / 2, kernel / 2, kernel / 2, kernel / 2)
            .pixel_stride_extra(input_extra, output_extra)
            .quant(q)
            .seed(seed)
            .split(2)
            .test_all_isas();
      }
    }
  }
}

TEST(PointwiseProgramMath, CloseToCmath) {
  // One-op programs run through the scalar definition against double <cmath>.
  struct Case {
    PointwiseOp op;
    double (*exact)(double);
    double tolerance;
  };
  const Case cases[] = {
      // vexp_signed<-1>'s quadratic: sigmoid within 1.7e-7, SiLU 1.9e-7 (vector_math_inl.h).
      {PointwiseOp::kSigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 2e-7},
      {PointwiseOp::kSilu, [](double x) { return x / (1.0 + std::exp(-x)); }, 2e-7},
      {PointwiseOp::kTanh, [](double x) { return std::tanh(x); }, 6e-7},
      {PointwiseOp::kErf, [](double x) { return std::erf(x); }, 6e-7},
      // vgelu's table: 7.7e-8 (scripts/fit_gelu_table.py).
      {PointwiseOp::kGelu, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }, 1e-7},
      {PointwiseOp::kExp, [](double x) { return std::exp(x); }, 6e-7},
      {PointwiseOp::kHardSwish, [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }, 2e-7},
  };
  for (const Case& c : cases) {
    PointwiseProgram program;
    program.size = 1;
    program.code[0] = {c.op, 0, 0, 0};
    double worst = 0;
    for (float x = -12.0f; x <= 12.0f; x += 0.003f) {
      const double exact = c.exact(x);
      const double got = run_pointwise_scalar(program, x, 0);
      worst = std::max(worst, std::abs(got - exact) / std::max(1.0, std::abs(exact)));
    }
    EXPECT_LE(worst, c.tolerance) << pointwise_op_name(c.op);
  }
}

// vgelu's table form at its edges: GELU(+-0) keeps the sign of zero, NaN stays NaN, +inf stays +inf
// and -inf gives a negative value below 2e-8 in magnitude (the tail past the clamp at 5.8).
TEST(PointwiseProgramMath, GeluEdges) {
  PointwiseProgram program;
  program.size = 1;
  program.code[0] = {PointwiseOp::kGelu, 0, 0, 0};
  const float zero = run_pointwise_scalar(program, 0.0f, 0), negative_zero = run_pointwise_scalar(program, -0.0f, 0);
  EXPECT_EQ(zero, 0.0f);
  EXPECT_FALSE(std::signbit(zero));
  EXPECT_EQ(negative_zero, 0.0f);
  EXPECT_TRUE(std::signbit(negative_zero));
  EXPECT_TRUE(std::isnan(run_pointwise_scalar(program, std::nanf(""), 0)));
  EXPECT_EQ(run_pointwise_scalar(program, INFINITY, 0), INFINITY);
  const float negative_infinity = run_pointwise_scalar(program, -INFINITY, 0);
  EXPECT_LE(negative_infinity, 0.0f);
  EXPECT_GT(negative_infinity, -2e-8f);
  EXPECT_EQ(run_pointwise_scalar(program, 1e30f, 0), 1e30f);
}

// The optimizer turns HardSigmoid(alpha 1/6, beta 0.5) then Mul by x into kHardSwish: the two
// programs must give the same bits for every value (ties, clamps at -3 and 3, large, zeros, inf).
TEST(PointwiseProgramMath, HardSwishIsBitEqualToItsHardSigmoidMulForm) {
  const float constants[] = {1.0f / 6.0f, 0.5f, 1.0f, 0.0f};
  PointwiseProgram decomposed;
  const PointwiseInstruction code[] = {{PointwiseOp::kMul, 1, 0, kFirstConstantOperand},
                                       {PointwiseOp::kAdd, 1, 1, kFirstConstantOperand + 1},
                                       {PointwiseOp::kMin, 1, 1, kFirstConstantOperand + 2},
                                       {PointwiseOp::kMax, 1, 1, kFirstConstantOperand + 3},
                                       {PointwiseOp::kMul, 0, 0, 1}};
  std::copy(std::begin(code), std::end(code), decomposed.code.begin());
  decomposed.size = 5;
  decomposed.constant_slots = 4;
  decomposed.constants = constants;
  ASSERT_EQ(validate_pointwise_program(decomposed), "");
  PointwiseProgram fused;
  fused.size = 1;
  fused.code[0] = {PointwiseOp::kHardSwish, 0, 0, 0};
  std::vector<float> values = {0.0f, -0.0f, 3.0f, -3.0f, 1e30f, -1e30f, INFINITY, -INFINITY, 1e-40f};
  values.push_back(std::nextafter(3.0f, 0.0f));
  values.push_back(std::nextafter(-3.0f, 0.0f));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-8.0f, 8.0f);
  for (int i = 0; i < 200000; ++i) values.push_back(wide(rng));
  for (uint32_t bits = 0x40000000u; bits < 0x40500000u; bits += 7) {  // every 7th float in [2, 3.25)
    float x;
    std::memcpy(&x, &bits, sizeof x);
    values.push_back(x);
    values.push_back(-x);
  }
  for (float x : values) {
    const float a = run_pointwise_scalar(decomposed, x, 0), b = run_pointwise_scalar(fused, x, 0);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << x << ": " << a << " vs " << b;
  }
}

TEST(PointwiseProgram, ValidationNamesTheProblem) {
  PointwiseProgram program;
  EXPECT_NE(validate_pointwise_program(program).find("0 instructions"), std::string::npos);
  program.size = 1;
  program.code[0] = {PointwiseOp::kAdd, 0, 0, 3};  // r3 never written
  EXPECT_NE(validate_pointwise_program(program).find("r3 is read before it is written"), std::string::npos);
  program.code[0] = {PointwiseOp::kAdd, 0, 0, kFirstConstantOperand + 2};
  program.constant_slots = 1;
  float constant = 1.0f;
  program.constants = &constant;
  EXPECT_NE(validate_pointwise_program(program).find("constant slots"), std::string::npos);
  program.code[0] = {PointwiseOp::kMul, 0, 0, kGateOperand};
  EXPECT_NE(validate_pointwise_program(program).find("gate"), std::string::npos);
  program.code[0] = {static_cast<PointwiseOp>(200), 0, 0, 0};
  EXPECT_NE(validate_pointwise_program(program).find("unknown op"), std::string::npos);
  program.code[0] = {PointwiseOp::kRelu, 9, 0, 0};
  EXPECT_NE(validate_pointwise_program(program).find("destination"), std::string::npos);
  const int64_t bad_code[] = {1, 0, 0, 300};
  EXPECT_NE(decode_pointwise_code(bad_code, 4, program).find("not a byte"), std::string::npos);
  EXPECT_NE(decode_pointwise_code(bad_code, 3, program).find("4 per instruction"), std::string::npos);
}

}  // namespace
}  // namespace qdqrt::kernels::testing
