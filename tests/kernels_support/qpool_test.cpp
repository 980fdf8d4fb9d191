// NHWC max/average/global-average pools: every ISA bit-exact with the scalar kernels over kernel,
// stride, dilation, padding, channel tails, zero-points, pixel strides and split pixel ranges.
#include <cmath>

#include "kernels/pool/qpool.h"
#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

constexpr uint8_t kGapSentinel = 0x5A;

template <class T>
class PoolTester {
 public:
  PoolTester& input(size_t batch, size_t height, size_t width, size_t channels) {
    s_.batch = batch;
    s_.input_height = height;
    s_.input_width = width;
    s_.channels = channels;
    return *this;
  }
  PoolTester& kernel(size_t h, size_t w) { s_.kernel_height = h; s_.kernel_width = w; return *this; }
  PoolTester& stride(size_t h, size_t w) { s_.stride_height = h; s_.stride_width = w; return *this; }
  PoolTester& dilation(size_t h, size_t w) { s_.dilation_height = h; s_.dilation_width = w; return *this; }
  PoolTester& pads(size_t top, size_t left, size_t bottom, size_t right) {
    s_.pad_top = top;
    s_.pad_left = left;
    s_.pad_bottom = bottom;
    s_.pad_right = right;
    return *this;
  }
  PoolTester& ceil_mode(bool value) { ceil_mode_ = value; return *this; }
  PoolTester& count_include_pad(bool value) { count_include_pad_ = value; return *this; }
  PoolTester& pixel_strides(size_t input_extra, size_t output_extra) {
    input_extra_ = input_extra;
    output_extra_ = output_extra;
    return *this;
  }
  PoolTester& zero_points(int32_t input, int32_t output) {
    input_zero_point_ = input;
    output_zero_point_ = output;
    return *this;
  }
  PoolTester& relu(bool value) { relu_ = value; return *this; }
  PoolTester& seed(uint32_t value) { seed_ = value; return *this; }
  // The kernel runs as this many calls over consecutive pixel ranges (they must compose).
  PoolTester& calls(size_t value) { calls_ = value; return *this; }

  std::string describe(const char* kernel, Isa isa) const {
    char buffer[512];
    std::snprintf(buffer, sizeof buffer,
                  "%s isa=%s in=%zux%zux%zux%zu out=%zux%zu k=%zux%zu s=%zux%zu d=%zux%zu pads=%zu,%zu,%zu,%zu "
                  "ceil=%d include_pad=%d extra_strides=%zu/%zu zp=%d/%d relu=%d seed=%u",
                  kernel, isa_name(isa), s_.batch, s_.input_height, s_.input_width, s_.channels, s_.output_height,
                  s_.output_width, s_.kernel_height, s_.kernel_width, s_.stride_height, s_.stride_width,
                  s_.dilation_height, s_.dilation_width, s_.pad_top, s_.pad_left, s_.pad_bottom, s_.pad_right,
                  ceil_mode_, count_include_pad_, input_extra_, output_extra_, input_zero_point_,
                  output_zero_point_, relu_, seed_);
    return buffer;
  }

  void test(Isa isa, bool average) {
    s_.output_height = pool_output_size(s_.input_height, s_.kernel_height, s_.stride_height, s_.dilation_height,
                                        s_.pad_top, s_.pad_bottom, ceil_mode_);
    s_.output_width = pool_output_size(s_.input_width, s_.kernel_width, s_.stride_width, s_.dilation_width,
                                       s_.pad_left, s_.pad_right, ceil_mode_);
    s_.input_pixel_stride = s_.channels + input_extra_;
    s_.output_pixel_stride = s_.channels + output_extra_;
    std::mt19937 rng(seed_);
    const size_t input_count = s_.batch * s_.input_height * s_.input_width * s_.input_pixel_stride;
    const size_t output_count = s_.output_pixels() * s_.output_pixel_stride;
    const std::vector<T> input = random_bytes<T>(rng, input_count);
    const float input_scale = random_scale(rng);
    const float output_scale = seed_ % 3 == 0 ? input_scale : random_scale(rng);
    const AvgPoolParams params = make_avgpool_params<T>(input_scale, input_zero_point_, output_scale,
                                                        output_zero_point_, count_include_pad_, relu_);
    std::vector<T> expected(output_count, static_cast<T>(kGapSentinel));
    Guarded<T> guarded_input(input_count, placement_for(seed_));
    Guarded<T> output(output_count, placement_for(seed_ + 1));
    guarded_input.copy_from(input);
    std::fill(output.data(), output.data() + output_count, static_cast<T>(kGapSentinel));
    const auto kernels = qpool_kernels<T>(isa);
    const size_t pixels = s_.output_pixels();
    // Two calls by default, split a third of the way in; more at uneven points.
    std::vector<size_t> splits = {0, pixels / 3, pixels};
    if (calls_ > 2) {
      splits = {0};
      for (size_t i = 1; i < calls_; ++i) splits.push_back(std::max(splits.back(), pixels * i * i / (calls_ * calls_)));
      splits.push_back(pixels);
    }
    const char* name;
    if (average) {
      name = kernels.avgpool.name;
      scalar::avgpool<T>(s_, params, 0, pixels, input.data(), expected.data());
      for (size_t i = 0; i + 1 < splits.size(); ++i) {
        kernels.avgpool.fn(s_, params, splits[i], splits[i + 1], guarded_input.data(), output.data());
      }
    } else {
      name = kernels.maxpool.name;
      scalar::maxpool<T>(s_, 0, pixels, input.data(), expected.data());
      for (size_t i = 0; i + 1 < splits.size(); ++i) {
        kernels.maxpool.fn(s_, splits[i], splits[i + 1], guarded_input.data(), output.data());
      }
    }
    ASSERT_EQ(first_mismatch(expected.data(), output.data(), output_count), "") << describe(name, isa);
    ASSERT_EQ(output.check_canaries(), "") << describe(name, isa);
  }

 private:
  Pool2dShape s_;
  bool ceil_mode_ = false;
  bool count_include_pad_ = false;
  size_t input_extra_ = 0, output_extra_ = 0;
  int32_t input_zero_point_ = 0, output_zero_point_ = 0;
  bool relu_ = false;
  uint32_t seed_ = 1;
  size_t calls_ = 2;
};

template <class T>
class QPoolTest : public ::testing::Test {};
using QTypes = ::testing::Types<int8_t, uint8_t>;
TYPED_TEST_SUITE(QPoolTest, QTypes);

struct WindowCase {
  size_t kernel, stride, dilation, pad_begin, pad_end;
  bool ceil_mode;
};
const WindowCase kWindows[] = {
    {1, 1, 1, 0, 0, false}, {2, 2, 1, 0, 0, false}, {3, 2, 1, 1, 1, false}, {3, 1, 1, 1, 1, false},
    {3, 2, 1, 0, 0, true},  {3, 2, 2, 2, 1, false}, {5, 3, 1, 2, 2, true},  {2, 1, 3, 0, 2, false},
    {9, 2, 1, 4, 4, false},  // 81 taps: more than kMaxListedTaps, walks the window directly
};

TYPED_TEST(QPoolTest, MaxAndAveragePoolMatchScalarOnEveryIsa) {
  uint32_t seed = 1;
  const auto zero_points = sweep_zero_points<TypeParam>();
  for (Isa isa : test_isas()) {
    for (const WindowCase& w : kWindows) {
      for (size_t channels : {1, 3, 8, 17, 24, 64, 67, 130}) {
        const size_t extra = seed % 4 == 0 ? 5 : 0;
        for (bool average : {false, true}) {
          PoolTester<TypeParam>()
              .input(seed % 5 == 0 ? 2 : 1, 7 + seed % 3, 6 + seed % 4, channels)
              .kernel(w.kernel, w.kernel == 1 ? 1 : w.kernel - (seed % 2))
              .stride(w.stride, w.stride)
              .dilation(w.dilation, 1 + (w.dilation > 1 ? seed % 2 : 0))
              .pads(w.pad_begin, w.pad_begin, w.pad_end, w.pad_end)
              .ceil_mode(w.ceil_mode)
              .count_include_pad(seed % 2 == 1)
              .pixel_strides(extra, extra ? 3 : 0)
              .zero_points(zero_points[seed % 4], zero_points[(seed + 1) % 4])
              .relu(seed % 3 == 2)
              .seed(seed)
              .test(isa, average);
          ++seed;
        }
      }
    }
  }
}

// Wide rows: the vector max pool walks a row's whole windows as one run; runs that start or end
// at a call's range, a row's padded border or a 9-tap window and others must give the same bytes.
TYPED_TEST(QPoolTest, MaxPoolRunsOfWholeWindowsMatchScalar) {
  uint32_t seed = 500;
  const auto zero_points = sweep_zero_points<TypeParam>();
  const WindowCase windows[] = {{3, 2, 1, 1, 1, false}, {3, 1, 1, 1, 1, false}, {3, 2, 1, 0, 0, true},
                                {2, 2, 1, 0, 0, false}, {3, 2, 2, 2, 2, false}};
  for (Isa isa : test_isas()) {
    for (const WindowCase& w : windows) {
      for (size_t channels : {3, 64, 80, 130}) {
        for (size_t width : {17, 31, 40}) {
          PoolTester<TypeParam>()
              .input(seed % 3 == 0 ? 2 : 1, 5 + seed % 4, width, channels)
              .kernel(w.kernel, seed % 4 == 3 ? w.kernel - 1 : w.kernel)
              .stride(w.stride, w.stride)
              .dilation(w.dilation, w.dilation)
              .pads(w.pad_begin, w.pad_begin, w.pad_end, w.pad_end)
              .ceil_mode(w.ceil_mode)
              .pixel_strides(seed % 2 == 0 ? 5 : 0, seed % 2 == 0 ? 3 : 0)
              .zero_points(zero_points[seed % 4], zero_points[(seed + 1) % 4])
              .calls(1 + seed % 7)
              .seed(seed)
              .test(isa, false);
          ++seed;
        }
      }
    }
  }
}

template <class T>
void test_global_avgpool(Isa isa, size_t pixels, size_t channels, size_t extra, int32_t input_zero_point,
                         int32_t output_zero_point, bool relu, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t stride = channels + extra;
  const std::vector<T> input = random_bytes<T>(rng, pixels * stride);
  const float input_scale = random_scale(rng);
  const float output_scale = seed % 3 == 0 ? input_scale : random_scale(rng) * 0.1f;
  const AvgPoolParams params =
      make_avgpool_params<T>(input_scale, input_zero_point, output_scale, output_zero_point, false, relu);
  std::vector<T> expected(channels);
  scalar::global_avgpool<T>(pixels, channels, stride, input.data(), expected.data(), params);
  Guarded<T> guarded_input(input.size(), placement_for(seed));
  Guarded<T> output(channels, placement_for(seed + 1));
  guarded_input.copy_from(input);
  const auto kernel = qpool_kernels<T>(isa).global_avgpool;
  kernel.fn(pixels, channels, stride, guarded_input.data(), output.data(), params);
  const std::string description = std::string(kernel.name) + " isa=" + isa_name(isa) + " pixels=" +
                                  std::to_string(pixels) + " channels=" + std::to_string(channels) +
                                  " stride=" + std::to_string(stride) + " seed=" + std::to_string(seed);
  ASSERT_EQ(first_mismatch(expected.data(), output.data(), channels), "") << description;
  ASSERT_EQ(output.check_canaries(), "") << description;
}

TYPED_TEST(QPoolTest, GlobalAveragePoolMatchesScalarOnEveryIsa) {
  uint32_t seed = 1;
  const auto zero_points = sweep_zero_points<TypeParam>();
  for (Isa isa : test_isas()) {
    for (size_t pixels : {1, 4, 7, 49, 196, 1000}) {
      for (size_t channels : {1, 5, 8, 16, 31, 32, 33, 64, 65, 100, 1280}) {
        test_global_avgpool<TypeParam>(isa, pixels, channels, seed % 3 == 0 ? 7 : 0, zero_points[seed % 4],
                                       zero_points[(seed + 2) % 4], seed % 4 == 1, seed);
        ++seed;
      }
    }
  }
}

TEST(QPoolScalar, OutputSizesFollowOnnx) {
  EXPECT_EQ(pool_output_size(112, 3, 2, 1, 1, 1, false), 56u);  // ResNet-50 max pool
  EXPECT_EQ(pool_output_size(7, 7, 1, 1, 0, 0, false), 1u);
  EXPECT_EQ(pool_output_size(6, 3, 2, 1, 0, 0, false), 2u);
  EXPECT_EQ(pool_output_size(6, 3, 2, 1, 0, 0, true), 3u);
  EXPECT_EQ(pool_output_size(5, 2, 2, 1, 0, 1, true), 3u);  // last window starts inside the input
  EXPECT_EQ(pool_output_size(4, 2, 2, 1, 0, 1, true), 2u);  // would start in the end padding: dropped
  EXPECT_EQ(pool_output_size(10, 3, 1, 2, 0, 0, false), 6u);
}

TEST(QPoolScalar, AverageCountsPaddingOnlyWhenAsked) {
  // 2x2 input, 3x3 window, stride 1, pad 1: corner output sees 4 valid taps of 9 padded taps.
  Pool2dShape s;
  s.input_height = s.input_width = 2;
  s.channels = 1;
  s.output_height = s.output_width = 2;
  s.kernel_height = s.kernel_width = 3;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  const uint8_t input[] = {10 + 100, 20 + 100, 30 + 100, 40 + 100};  // zero-point 100
  uint8_t output[4];
  scalar::avgpool<uint8_t>(s, make_avgpool_params<uint8_t>(1.0f, 100, 1.0f, 0, false), 0, 4, input, output);
  EXPECT_EQ(output[0], 25);  // (10+20+30+40)/4
  scalar::avgpool<uint8_t>(s, make_avgpool_params<uint8_t>(1.0f, 100, 1.0f, 0, true), 0, 4, input, output);
  EXPECT_EQ(output[0], 11);  // 100/9 = 11.1
  int8_t signed_input[] = {-5, 7, 3, -128};
  int8_t max_output[4];
  scalar::maxpool<int8_t>(s, 0, 4, signed_input, max_output);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(max_output[i], 7);  // padding never wins
}

}  // namespace
}  // namespace qdqrt::kernels::testing
