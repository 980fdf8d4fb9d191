// Quantize / dequantize / requantize: every ISA variant bit-exact against the scalar kernels,
// and the scalar kernels against ONNX's formula computed independently.
#include <cmath>
#include <limits>

#include "kernels/quantize/quantize.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

// Fluent tester in the XNNPACK style: set a case up, then test(isa) compares that ISA's kernel with
// the scalar kernel on guarded buffers and reports the full configuration on failure.
template <class T>
class QuantizeTester {
 public:
  QuantizeTester& rows(size_t value) { rows_ = value; return *this; }
  QuantizeTester& channels(size_t value) { channels_ = value; return *this; }
  QuantizeTester& per_channel(bool value) { per_channel_ = value; return *this; }
  QuantizeTester& zero_point(int32_t value) { zero_point_ = value; return *this; }
  QuantizeTester& seed(uint32_t value) { seed_ = value; return *this; }

  std::string describe(Isa isa, const char* kernel) const {
    return std::string(kernel) + " isa=" + isa_name(isa) + " dtype=" + dtype_name<T>() + " rows=" +
           std::to_string(rows_) + " channels=" + std::to_string(channels_) +
           " per_channel=" + std::to_string(per_channel_) + " zero_point=" + std::to_string(zero_point_) +
           " seed=" + std::to_string(seed_);
  }

  void test_quantize(Isa isa) const {
    std::mt19937 rng(seed_);
    const size_t n = rows_ * channels_;
    std::vector<float> scales(channels_);
    std::vector<int32_t> zero_points(channels_);
    for (size_t c = 0; c < channels_; ++c) {
      scales[c] = random_scale(rng);
      zero_points[c] = per_channel_ ? sweep_zero_points<T>()[c % 4] : zero_point_;
    }
    if (!per_channel_) std::fill(scales.begin(), scales.end(), scales[0]);
    // Values spanning beyond the representable range, plus exact ties, NaN and infinities.
    std::vector<float> input = random_floats(rng, n, -300.0f, 300.0f);
    for (size_t i = 0; i < n; ++i) {
      const float scale = scales[i % channels_];
      if (i % 7 == 0) input[i] = (std::floor(input[i] / 10.0f) + 0.5f) * scale;  // k + 0.5 ties
      if (i % 11 == 3) input[i] *= scale;
    }
    if (n > 5) {
      input[1] = std::numeric_limits<float>::quiet_NaN();
      input[3] = std::numeric_limits<float>::infinity();
      input[5] = -std::numeric_limits<float>::infinity();
    }
    const auto kernels = quantize_kernels<T>(isa);
    Guarded<float> guarded_input(n, placement_for(seed_));
    Guarded<T> output(n, placement_for(seed_ + 1));
    guarded_input.copy_from(input);
    std::vector<T> expected(n);
    const char* name;
    if (per_channel_) {
      name = kernels.quantize_channels.name;
      scalar::quantize_channels<T>(rows_, channels_, input.data(), expected.data(), scales.data(),
                                      zero_points.data());
      kernels.quantize_channels.fn(rows_, channels_, guarded_input.data(), output.data(), scales.data(),
                                   zero_points.data());
    } else {
      name = kernels.quantize.name;
      scalar::quantize<T>(n, input.data(), expected.data(), scales[0], zero_point_);
      kernels.quantize.fn(n, guarded_input.data(), output.data(), scales[0], zero_point_);
    }
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), n), "") << describe(isa, name);
    ASSERT_EQ(output.check_canaries(), "") << describe(isa, name);
  }

  // Squeeze-excite's gate: x * gate[c] then quantize, channels innermost.
  void test_quantize_gated(Isa isa) const {
    std::mt19937 rng(seed_);
    const size_t n = rows_ * channels_;
    const float scale = random_scale(rng);
    std::vector<float> input = random_floats(rng, n, -300.0f, 300.0f);
    std::vector<float> gate = random_floats(rng, channels_, 0.0f, 1.0f);
    if (n > 5) input[1] = std::numeric_limits<float>::quiet_NaN();
    const auto kernels = quantize_kernels<T>(isa);
    Guarded<float> guarded_input(n, placement_for(seed_));
    Guarded<float> guarded_gate(channels_, placement_for(seed_ + 2));
    Guarded<T> output(n, placement_for(seed_ + 1));
    guarded_input.copy_from(input);
    guarded_gate.copy_from(gate);
    std::vector<T> expected(n);
    scalar::quantize_gated<T>(rows_, channels_, input.data(), gate.data(), expected.data(), scale, zero_point_);
    kernels.quantize_gated.fn(rows_, channels_, guarded_input.data(), guarded_gate.data(), output.data(), scale,
                              zero_point_);
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), n), "") << describe(isa, kernels.quantize_gated.name);
    ASSERT_EQ(output.check_canaries(), "") << describe(isa, kernels.quantize_gated.name);
    // The scalar kernel is the Mul then ONNX QuantizeLinear of the product.
    std::vector<float> product(n);
    for (size_t i = 0; i < n; ++i) product[i] = input[i] * gate[i % channels_];
    std::vector<T> two_steps(n);
    scalar::quantize<T>(n, product.data(), two_steps.data(), scale, zero_point_);
    ASSERT_EQ(first_mismatch(two_steps.data(), expected.data(), n), "") << "scalar gate vs Mul + quantize";
  }

  // A residual block's end: a + b [-> Relu], the float sum stored or not, then quantize.
  void test_add_quantize(Isa isa, bool relu, bool store_sum) const {
    std::mt19937 rng(seed_);
    const size_t n = rows_ * channels_;
    const float scale = random_scale(rng);
    std::vector<float> a = random_floats(rng, n, -300.0f, 300.0f);
    std::vector<float> b = random_floats(rng, n, -300.0f, 300.0f);
    for (size_t i = 0; i < n; ++i) {
      if (i % 7 == 0) b[i] = (std::floor(a[i] / 10.0f) + 0.5f) * scale - a[i];  // near k + 0.5 ties
      if (i % 13 == 4) b[i] = -a[i];                                           // exact zeros
    }
    if (n > 5) {
      a[1] = std::numeric_limits<float>::quiet_NaN();
      a[3] = std::numeric_limits<float>::infinity();
      b[5] = -std::numeric_limits<float>::infinity();
    }
    if (n > 6) a[6] = b[6] = -0.0f;
    const auto kernels = quantize_kernels<T>(isa);
    const std::string name = describe(isa, kernels.add_quantize.name) + " relu=" + std::to_string(relu) +
                             " sum=" + std::to_string(store_sum);
    Guarded<float> guarded_a(n, placement_for(seed_));
    Guarded<float> guarded_b(n, placement_for(seed_ + 2));
    Guarded<float> sum(n, placement_for(seed_ + 3));
    Guarded<T> output(n, placement_for(seed_ + 1));
    guarded_a.copy_from(a);
    guarded_b.copy_from(b);
    std::vector<T> expected(n);
    std::vector<float> expected_sum(n);
    scalar::add_quantize<T>(n, a.data(), b.data(), expected_sum.data(), expected.data(), scale, zero_point_, relu);
    kernels.add_quantize.fn(n, guarded_a.data(), guarded_b.data(), store_sum ? sum.data() : nullptr, output.data(),
                            scale, zero_point_, relu);
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), n), "") << name;
    ASSERT_EQ(output.check_canaries(), "") << name;
    if (store_sum) {
      ASSERT_EQ(first_mismatch(expected_sum.data(), sum.data(), n), "") << name;
      ASSERT_EQ(sum.check_canaries(), "") << name;
    }
    // The scalar kernel is the Add, the engine's Relu (max(v, 0): NaN and -0 give 0), then ONNX
    // QuantizeLinear of the result.
    std::vector<float> added(n);
    for (size_t i = 0; i < n; ++i) {
      added[i] = a[i] + b[i];
      if (relu) added[i] = added[i] > 0.0f ? added[i] : 0.0f;
    }
    std::vector<T> two_steps(n);
    scalar::quantize<T>(n, added.data(), two_steps.data(), scale, zero_point_);
    ASSERT_EQ(first_mismatch(two_steps.data(), expected.data(), n), "") << "scalar add_quantize vs Add + quantize";
    ASSERT_EQ(first_mismatch(added.data(), expected_sum.data(), n), "") << "scalar add_quantize's sum";
  }

  void test_dequantize(Isa isa) const {
    std::mt19937 rng(seed_);
    const size_t n = rows_ * channels_;
    std::vector<float> scales(channels_, random_scale(rng));
    std::vector<int32_t> zero_points(channels_, zero_point_);
    if (per_channel_) {
      for (size_t c = 0; c < channels_; ++c) {
        scales[c] = random_scale(rng);
        zero_points[c] = sweep_zero_points<T>()[c % 4];
      }
    }
    const std::vector<T> input = random_bytes<T>(rng, n);
    const auto kernels = quantize_kernels<T>(isa);
    Guarded<T> guarded_input(n, placement_for(seed_));
    Guarded<float> output(n, placement_for(seed_ + 1));
    guarded_input.copy_from(input);
    std::vector<float> expected(n);
    const char* name;
    if (per_channel_) {
      name = kernels.dequantize_channels.name;
      scalar::dequantize_channels<T>(rows_, channels_, input.data(), expected.data(), scales.data(),
                                        zero_points.data());
      kernels.dequantize_channels.fn(rows_, channels_, guarded_input.data(), output.data(), scales.data(),
                                     zero_points.data());
    } else {
      name = kernels.dequantize.name;
      scalar::dequantize<T>(n, input.data(), expected.data(), scales[0], zero_point_);
      kernels.dequantize.fn(n, guarded_input.data(), output.data(), scales[0], zero_point_);
    }
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), n), "") << describe(isa, name);
    ASSERT_EQ(output.check_canaries(), "") << describe(isa, name);
  }

  void test_requantize(Isa isa, bool relu) const {
    std::mt19937 rng(seed_);
    const size_t n = rows_ * channels_;
    const float input_scale = random_scale(rng);
    // Every third case uses a power-of-two ratio, which makes exact .5 ties frequent.
    const float output_scale = seed_ % 3 == 0 ? input_scale * 2.0f : random_scale(rng);
    const int32_t input_zero_point = sweep_zero_points<T>()[seed_ % 4];
    const RequantizeParams params =
        make_requantize_params<T>(input_scale, input_zero_point, output_scale, zero_point_, relu);
    const std::vector<T> input = random_bytes<T>(rng, n);
    const auto kernels = quantize_kernels<T>(isa);
    Guarded<T> guarded_input(n, placement_for(seed_));
    Guarded<T> output(n, placement_for(seed_ + 1));
    guarded_input.copy_from(input);
    std::vector<T> expected(n);
    scalar::requantize<T>(n, input.data(), expected.data(), params);
    kernels.requantize.fn(n, guarded_input.data(), output.data(), params);
    const std::string description = describe(isa, kernels.requantize.name) + " relu=" + std::to_string(relu);
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), n), "") << description;
    ASSERT_EQ(output.check_canaries(), "") << description;
  }

 private:
  size_t rows_ = 1;
  size_t channels_ = 1;
  bool per_channel_ = false;
  int32_t zero_point_ = 0;
  uint32_t seed_ = 1;
};

template <class T>
class QuantizeTest : public ::testing::Test {};
using QTypes = ::testing::Types<int8_t, uint8_t>;
TYPED_TEST_SUITE(QuantizeTest, QTypes);

TYPED_TEST(QuantizeTest, PerTensorMatchesScalarOnEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    for (size_t n : sweep_sizes()) {
      for (int32_t zero_point : sweep_zero_points<TypeParam>()) {
        QuantizeTester<TypeParam>().channels(n).zero_point(zero_point).seed(seed++).test_quantize(isa);
        QuantizeTester<TypeParam>().channels(n).zero_point(zero_point).seed(seed++).test_dequantize(isa);
      }
    }
  }
}

TYPED_TEST(QuantizeTest, PerChannelMatchesScalarOnEveryIsa) {
  uint32_t seed = 100;
  for (Isa isa : test_isas()) {
    for (size_t channels : {1, 3, 8, 13, 16, 24, 33, 64, 100}) {
      for (size_t rows : {1, 2, 5}) {
        QuantizeTester<TypeParam>().rows(rows).channels(channels).per_channel(true).seed(seed++).test_quantize(isa);
        QuantizeTester<TypeParam>().rows(rows).channels(channels).per_channel(true).seed(seed++).test_dequantize(
            isa);
      }
    }
  }
}

TYPED_TEST(QuantizeTest, GatedMatchesScalarOnEveryIsa) {
  uint32_t seed = 500;
  for (Isa isa : test_isas()) {
    for (size_t channels : {1, 7, 16, 24, 40, 96, 100}) {
      for (size_t rows : {1, 3, 64}) {
        for (int32_t zero_point : sweep_zero_points<TypeParam>()) {
          QuantizeTester<TypeParam>().rows(rows).channels(channels).zero_point(zero_point).seed(seed++)
              .test_quantize_gated(isa);
        }
      }
    }
  }
}

TYPED_TEST(QuantizeTest, AddQuantizeMatchesScalarOnEveryIsa) {
  uint32_t seed = 700;
  for (Isa isa : test_isas()) {
    for (size_t n : sweep_sizes()) {
      for (int32_t zero_point : sweep_zero_points<TypeParam>()) {
        for (bool relu : {false, true}) {
          for (bool store_sum : {false, true}) {
            QuantizeTester<TypeParam>().channels(n).zero_point(zero_point).seed(seed++).test_add_quantize(isa, relu,
                                                                                                        store_sum);
          }
        }
      }
    }
  }
}

TYPED_TEST(QuantizeTest, RequantizeMatchesScalarOnEveryIsa) {
  uint32_t seed = 1000;
  for (Isa isa : test_isas()) {
    for (size_t n : sweep_sizes()) {
      for (int32_t zero_point : sweep_zero_points<TypeParam>()) {
        for (bool relu : {false, true}) {
          QuantizeTester<TypeParam>().channels(n).zero_point(zero_point).seed(seed++).test_requantize(isa, relu);
        }
      }
    }
  }
}

// The scalar kernels themselves against ONNX QuantizeLinear computed independently in double precision
// (x / scale is exact enough in double to decide ties the same way as fp32 division here).
TEST(QuantizeScalar, FollowsOnnxQuantizeLinear) {
  const float scale = 0.5f;
  const float input[] = {0.25f, 0.75f, -0.25f, -0.75f, 1.25f, 63.75f, 64.0f, -64.25f, -1000.0f, 1000.0f,
                         std::numeric_limits<float>::quiet_NaN()};
  // x/scale = 0.5 -> 0, 1.5 -> 2, -0.5 -> -0, -1.5 -> -2, 2.5 -> 2 (half to even), then + zp, saturate.
  const int8_t expected_int8[] = {0, 2, 0, -2, 2, 127, 127, -128, -128, 127, -128};
  int8_t output_int8[11];
  scalar::quantize<int8_t>(11, input, output_int8, scale, 0);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(output_int8[i], expected_int8[i]) << "index " << i;
  const uint8_t expected_uint8[] = {128, 130, 128, 126, 130, 255, 255, 0, 0, 255, 0};
  uint8_t output_uint8[11];
  scalar::quantize<uint8_t>(11, input, output_uint8, scale, 128);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(output_uint8[i], expected_uint8[i]) << "index " << i;
}

TEST(QuantizeScalar, DequantizeIsOnnxDequantizeLinear) {
  const uint8_t input[] = {0, 128, 255};
  float output[3];
  scalar::dequantize<uint8_t>(3, input, output, 0.25f, 128);
  EXPECT_EQ(output[0], -32.0f);
  EXPECT_EQ(output[1], 0.0f);
  EXPECT_EQ(output[2], 31.75f);
}

TEST(QuantizeScalar, RequantizeWithReluClampsAtZeroPoint) {
  const int8_t input[] = {-100, -1, 0, 1, 100};
  int8_t output[5];
  const RequantizeParams params = make_requantize_params<int8_t>(1.0f, 0, 2.0f, 10, /*relu=*/true);
  scalar::requantize<int8_t>(5, input, output, params);
  // -100/2 + 10 -> relu -> 10; -0.5 -> -0 (half even) -> 10; 0.5 -> 0 -> 10; 50 + 10 = 60.
  const int8_t expected[] = {10, 10, 10, 10, 60};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(output[i], expected[i]) << "index " << i;
}

}  // namespace
}  // namespace qdqrt::kernels::testing

namespace qdqrt::kernels::testing {
namespace {

// Fused fp32 NCHW -> int8/uint8 NHWC border kernel, split into two pixel ranges.
template <class T>
void test_quantize_nchw_to_nhwc(Isa isa, size_t channels, size_t pixels, bool per_channel, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> scales(channels, random_scale(rng));
  std::vector<int32_t> zero_points(channels, sweep_zero_points<T>()[seed % 4]);
  if (per_channel) {
    for (size_t c = 0; c < channels; ++c) {
      scales[c] = random_scale(rng);
      zero_points[c] = sweep_zero_points<T>()[(seed + c) % 4];
    }
  }
  std::vector<float> input = random_floats(rng, channels * pixels, -2.0f, 2.0f);
  for (size_t i = 0; i < input.size(); i += 5) input[i] = (std::floor(input[i] * 100.0f) + 0.5f) * scales[i / pixels];
  Guarded<float> guarded_input(input.size(), placement_for(seed));
  Guarded<T> output(input.size(), placement_for(seed + 1));
  guarded_input.copy_from(input);
  std::vector<T> expected(input.size());
  scalar::quantize_nchw_to_nhwc<T>(channels, pixels, 0, pixels, input.data(), expected.data(), scales.data(),
                                      zero_points.data());
  const auto kernel = quantize_kernels<T>(isa).quantize_nchw_to_nhwc;
  const size_t split = pixels / 3;
  kernel.fn(channels, pixels, 0, split, guarded_input.data(), output.data(), scales.data(), zero_points.data());
  kernel.fn(channels, pixels, split, pixels, guarded_input.data(), output.data(), scales.data(), zero_points.data());
  const std::string description = std::string(kernel.name) + " channels=" + std::to_string(channels) +
                                  " pixels=" + std::to_string(pixels) + " per_channel=" + std::to_string(per_channel);
  ASSERT_EQ(first_mismatch(expected.data(), output.data(), input.size()), "") << description;
  ASSERT_EQ(output.check_canaries(), "") << description;
}

TEST(QuantizeNchwToNhwc, MatchesScalarOnEveryIsa) {
  uint32_t seed = 1;
  for (Isa isa : test_isas()) {
    // 16 channels and up: 64x64 tiles transposed (channel and pixel tails of a tile included).
    for (size_t channels : {1, 2, 3, 4, 5, 15, 16, 17, 64, 65, 130}) {
      for (size_t pixels : {1, 7, 15, 16, 17, 49, 100, 1000}) {
        test_quantize_nchw_to_nhwc<int8_t>(isa, channels, pixels, seed % 2 == 0, seed);
        ++seed;
        test_quantize_nchw_to_nhwc<uint8_t>(isa, channels, pixels, seed % 2 == 0, seed);
        ++seed;
      }
    }
  }
}

TEST(QuantizeNchwToNhwc, ScalarIsTransposeThenQuantize) {
  const float input[] = {0.5f, 1.5f, 2.5f, -1.0f, -2.0f, 100.0f};  // C=2, 3 pixels
  const float scales[] = {1.0f, 0.5f};
  const int32_t zero_points[] = {0, 10};
  int8_t output[6];
  scalar::quantize_nchw_to_nhwc<int8_t>(2, 3, 0, 3, input, output, scales, zero_points);
  const int8_t expected[] = {0, 8, 2, 6, 2, 127};  // (0.5->0, -2+10), (1.5->2, -4+10), (2.5->2, 200+10 sat)
  for (int i = 0; i < 6; ++i) EXPECT_EQ(output[i], expected[i]) << "index " << i;
}

}  // namespace
}  // namespace qdqrt::kernels::testing
