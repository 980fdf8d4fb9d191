// Resize row kernels (kernels/resize/resize.h): every ISA bit-exact with the plain formula of the
// reference executor (NaN results: any NaN) over row widths around the vector widths, split column ranges, random taps
// (second taps of weight 0, one-row vertical taps) and inputs with -0, infinities and NaN; the
// input sits against a guard page, so a gather past its end faults.
#include "kernels/resize/resize.h"

#include <cmath>
#include <limits>

#include "test_util.h"

namespace qdqrt::kernels::testing {
namespace {

std::vector<float> row_values(std::mt19937& rng, size_t n) {
  std::vector<float> values = random_floats(rng, n, -4.0f, 4.0f);
  for (size_t i = 0; i < n; ++i) {
    switch (rng() % 29) {
      case 0: values[i] = -0.0f; break;
      case 1: values[i] = std::numeric_limits<float>::infinity(); break;
      case 2: values[i] = -std::numeric_limits<float>::infinity(); break;
      case 3: values[i] = std::numeric_limits<float>::quiet_NaN(); break;
      default: break;
    }
  }
  return values;
}

// The reference executor's sum: 0.0 + each tap of nonzero weight, rows nested (resize.h).
float expected_linear(const ResizeLinearRow& row, size_t i) {
  auto row_sum = [&](const float* in, double wy) {
    double sum = 0.0;
    sum += (wy * row.wx0[i]) * static_cast<double>(in[row.x0[i]]);
    if (row.wx1[i] != 0.0) sum += (wy * row.wx1[i]) * static_cast<double>(in[row.x1[i]]);
    return sum;
  };
  double sum = 0.0;
  sum += row_sum(row.in0, row.wy0);
  if (row.wy1 != 0.0) sum += row_sum(row.in1, row.wy1);
  return static_cast<float>(sum);
}

std::string bits_mismatch(const std::vector<float>& expected, const float* actual) {
  for (size_t i = 0; i < expected.size(); ++i) {
    // NaN results compare as NaN: which NaN an addition of two propagates follows operand order,
    // which the compiler may swap (the reference's as well as these kernels').
    if (std::isnan(expected[i]) && std::isnan(actual[i])) continue;
    if (std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0) {
      return "column " + std::to_string(i) + ": expected " + std::to_string(expected[i]) + ", got " +
             std::to_string(actual[i]);
    }
  }
  return "";
}

TEST(ResizeKernels, BilinearMatchesTheReferenceFormula) {
  std::mt19937 rng(41);
  for (Isa isa : test_isas()) {
    const ResizeKernels kernels = resize_kernels(isa);
    SCOPED_TRACE(kernels.linear.name);
    for (size_t out_width : sweep_sizes()) {
      for (size_t in_width : {size_t{1}, size_t{5}, out_width / 2 + 1, out_width + 3}) {
        for (int variant = 0; variant < 3; ++variant) {
          SCOPED_TRACE("out " + std::to_string(out_width) + " in " + std::to_string(in_width) + " variant " +
                       std::to_string(variant));
          Guarded<float> rows(2 * in_width, placement_for(out_width + in_width));
          rows.copy_from(row_values(rng, 2 * in_width));
          std::vector<int32_t> x0(out_width), x1(out_width);
          std::vector<double> wx0(out_width), wx1(out_width);
          std::uniform_real_distribution<double> weight(0.0, 1.0);
          for (size_t i = 0; i < out_width; ++i) {
            x0[i] = static_cast<int32_t>(rng() % in_width);
            x1[i] = std::min<int32_t>(x0[i] + 1, static_cast<int32_t>(in_width) - 1);
            const double t = rng() % 4 == 0 ? 0.0 : weight(rng);
            wx0[i] = 1.0 - t;
            wx1[i] = t;
          }
          ResizeLinearRow row;
          row.in0 = rows.data();
          row.in1 = rows.data() + in_width;
          row.wy1 = variant == 0 ? 0.0 : weight(rng);
          row.wy0 = 1.0 - row.wy1;
          if (variant == 0 && rng() % 2 == 0) row.in1 = nullptr;  // one row: never read
          row.x0 = x0.data();
          row.x1 = x1.data();
          row.wx0 = wx0.data();
          row.wx1 = wx1.data();
          std::vector<float> expected(out_width);
          for (size_t i = 0; i < out_width; ++i) expected[i] = expected_linear(row, i);
          Guarded<float> out(out_width, placement_for(out_width));
          if (variant == 2 && out_width > 2) {
            // Split ranges: the second starts off the vector grid.
            const size_t split = out_width / 2 + 1;
            kernels.linear.fn(row, 0, split, out.data());
            kernels.linear.fn(row, split, out_width, out.data());
          } else {
            kernels.linear.fn(row, 0, out_width, out.data());
          }
          EXPECT_EQ(bits_mismatch(expected, out.data()), "");
          EXPECT_EQ(out.check_canaries(), "");
        }
      }
    }
  }
}

TEST(ResizeKernels, BilinearNhwcMatchesTheReferenceFormula) {
  std::mt19937 rng(47);
  for (Isa isa : test_isas()) {
    const ResizeKernels kernels = resize_kernels(isa);
    SCOPED_TRACE(kernels.linear_nhwc.name);
    for (size_t channels : {size_t{1}, size_t{3}, size_t{4}, size_t{7}, size_t{8}, size_t{9}, size_t{16}, size_t{21},
                            size_t{33}, size_t{64}}) {
      for (size_t in_width : {size_t{1}, size_t{6}}) {
        for (int variant = 0; variant < 2; ++variant) {
          SCOPED_TRACE("channels " + std::to_string(channels) + " in " + std::to_string(in_width) + " variant " +
                       std::to_string(variant));
          const size_t out_width = 2 * in_width + 1;
          Guarded<float> rows(2 * in_width * channels, placement_for(channels + in_width));
          rows.copy_from(row_values(rng, 2 * in_width * channels));
          std::vector<int32_t> x0(out_width), x1(out_width);
          std::vector<double> wx0(out_width), wx1(out_width);
          std::uniform_real_distribution<double> weight(0.0, 1.0);
          for (size_t i = 0; i < out_width; ++i) {
            x0[i] = static_cast<int32_t>(rng() % in_width);
            x1[i] = std::min<int32_t>(x0[i] + 1, static_cast<int32_t>(in_width) - 1);
            const double t = rng() % 3 == 0 ? 0.0 : weight(rng);
            wx0[i] = 1.0 - t;
            wx1[i] = t;
          }
          ResizeLinearRow row;
          row.in0 = rows.data();
          row.in1 = rows.data() + in_width * channels;
          row.wy1 = variant == 0 ? 0.0 : weight(rng);
          row.wy0 = 1.0 - row.wy1;
          row.x0 = x0.data();
          row.x1 = x1.data();
          row.wx0 = wx0.data();
          row.wx1 = wx1.data();
          // Per channel, the NCHW formula on that channel's values.
          std::vector<float> expected(out_width * channels);
          for (size_t c = 0; c < channels; ++c) {
            std::vector<float> plane0(in_width), plane1(in_width);
            for (size_t x = 0; x < in_width; ++x) {
              plane0[x] = rows[x * channels + c];
              plane1[x] = rows[(in_width + x) * channels + c];
            }
            ResizeLinearRow planar = row;
            planar.in0 = plane0.data();
            planar.in1 = plane1.data();
            for (size_t i = 0; i < out_width; ++i) expected[i * channels + c] = expected_linear(planar, i);
          }
          Guarded<float> out(out_width * channels, placement_for(out_width));
          const size_t split = out_width / 2;
          kernels.linear_nhwc.fn(row, channels, 0, split, out.data());
          kernels.linear_nhwc.fn(row, channels, split, out_width, out.data());
          EXPECT_EQ(bits_mismatch(expected, out.data()), "");
          EXPECT_EQ(out.check_canaries(), "");
        }
      }
    }
  }
}

TEST(ResizeKernels, NearestIsAGatherWithoutNegativeZero) {
  std::mt19937 rng(43);
  for (Isa isa : test_isas()) {
    const ResizeKernels kernels = resize_kernels(isa);
    SCOPED_TRACE(kernels.nearest.name);
    for (size_t out_width : sweep_sizes()) {
      for (size_t in_width : {size_t{1}, out_width / 2 + 1, out_width + 5}) {
        Guarded<float> in(in_width, placement_for(out_width));
        in.copy_from(row_values(rng, in_width));
        Guarded<int8_t> in8(in_width, placement_for(out_width + 1));
        in8.copy_from(random_bytes<int8_t>(rng, in_width));
        std::vector<int32_t> x0(out_width);
        for (int32_t& x : x0) x = static_cast<int32_t>(rng() % in_width);
        std::vector<float> expected(out_width);
        std::vector<int8_t> expected8(out_width);
        for (size_t i = 0; i < out_width; ++i) {
          // The reference's double sum: 0.0 + in.
          expected[i] = static_cast<float>(0.0 + static_cast<double>(in[static_cast<size_t>(x0[i])]));
          expected8[i] = in8[static_cast<size_t>(x0[i])];
        }
        Guarded<float> out(out_width, placement_for(out_width));
        const size_t split = out_width / 3;
        kernels.nearest.fn(in.data(), x0.data(), 0, split, out.data());
        kernels.nearest.fn(in.data(), x0.data(), split, out_width, out.data());
        EXPECT_EQ(bits_mismatch(expected, out.data()), "") << out_width;
        std::vector<int8_t> out8(out_width);
        kernels.nearest_s8.fn(in8.data(), x0.data(), 0, out_width, out8.data());
        EXPECT_EQ(first_mismatch(expected8.data(), out8.data(), out_width), "") << out_width;
        EXPECT_EQ(out.check_canaries(), "");
      }
    }
  }
}

TEST(ResizeKernels, NamesFollowTheIsa) {
  EXPECT_STREQ(resize_kernels(Isa::kScalar).linear.name, "f32-resize-bilinear-scalar");
  EXPECT_STREQ(resize_kernels(Isa::kAvx2).nearest.name, "f32-resize-nearest-avx2");
  EXPECT_STREQ(resize_kernels(Isa::kAvx512Vnni).linear.name, "f32-resize-bilinear-avx512");
  EXPECT_STREQ(resize_kernels(Isa::kAmxInt8).nearest_s8.name, "x8-resize-nearest-scalar");
  EXPECT_STREQ(resize_kernels(Isa::kAvx2).linear_nhwc.name, "f32-resize-bilinear-nhwc-avx2");
}

}  // namespace
}  // namespace qdqrt::kernels::testing
