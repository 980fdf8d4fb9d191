#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using testing::NodeBuilder;

// Deterministic pseudo-random values in [-1, 1).
std::vector<float> seeded_values(int64_t count, uint32_t seed) {
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) {
    seed = seed * 1664525u + 1013904223u;
    value = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return values;
}

struct Conv2dCase {
  int64_t batch, channels, height, width, out_channels, kernel_h, kernel_w, group;
  std::vector<int64_t> strides, dilations, pads;  // pads [top, left, bottom, right]
};

// Independent oracle: one output element at a time, straight from the ONNX definition.
std::vector<float> naive_conv2d(const Conv2dCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>& bias, int64_t out_h, int64_t out_w) {
  std::vector<float> y;
  const int64_t cpg = c.channels / c.group, mpg = c.out_channels / c.group;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t m = 0; m < c.out_channels; ++m)
      for (int64_t oh = 0; oh < out_h; ++oh)
        for (int64_t ow = 0; ow < out_w; ++ow) {
          double sum = bias[static_cast<size_t>(m)];
          for (int64_t ci = 0; ci < cpg; ++ci)
            for (int64_t kh = 0; kh < c.kernel_h; ++kh)
              for (int64_t kw = 0; kw < c.kernel_w; ++kw) {
                int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                if (ih < 0 || iw < 0 || ih >= c.height || iw >= c.width) continue;
                int64_t channel = (m / mpg) * cpg + ci;
                sum += x[static_cast<size_t>(((n * c.channels + channel) * c.height + ih) * c.width + iw)] *
                       w[static_cast<size_t>(((m * cpg + ci) * c.kernel_h + kh) * c.kernel_w + kw)];
              }
          y.push_back(static_cast<float>(sum));
        }
  return y;
}

TEST(Conv, MatchesNaiveOracleAcrossGroupsStridesDilationsPads) {
  const std::vector<Conv2dCase> cases = {
      {1, 3, 7, 6, 4, 3, 3, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {2, 4, 9, 8, 6, 3, 2, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}},
      {1, 6, 8, 8, 6, 3, 3, 6, {2, 2}, {2, 2}, {2, 2, 2, 2}},  // depthwise
      {1, 2, 5, 5, 3, 1, 1, 1, {3, 2}, {1, 1}, {0, 1, 0, 1}},
  };
  uint32_t seed = 1;
  for (const Conv2dCase& c : cases) {
    std::vector<float> x = seeded_values(c.batch * c.channels * c.height * c.width, seed++);
    std::vector<float> w = seeded_values(c.out_channels * (c.channels / c.group) * c.kernel_h * c.kernel_w, seed++);
    std::vector<float> b = seeded_values(c.out_channels, seed++);
    Tensor xt = Tensor::from_vector<float>({c.batch, c.channels, c.height, c.width}, x);
    Tensor wt = Tensor::from_vector<float>({c.out_channels, c.channels / c.group, c.kernel_h, c.kernel_w}, w);
    Tensor bt = Tensor::from_vector<float>({c.out_channels}, b);
    Tensor y = NodeBuilder("Conv", 11)
                   .attr("group", c.group)
                   .attr("strides", c.strides)
                   .attr("dilations", c.dilations)
                   .attr("pads", c.pads)
                   .run_ok({&xt, &wt, &bt});
    int64_t out_h = (c.height + c.pads[0] + c.pads[2] - c.dilations[0] * (c.kernel_h - 1) - 1) / c.strides[0] + 1;
    int64_t out_w = (c.width + c.pads[1] + c.pads[3] - c.dilations[1] * (c.kernel_w - 1) - 1) / c.strides[1] + 1;
    ASSERT_EQ(y.shape(), (Shape{c.batch, c.out_channels, out_h, out_w}));
    testing::expect_near_all(naive_conv2d(c, x, w, b, out_h, out_w), y, 1e-5);
  }
}

TEST(Conv, AutoPadSameUpperLowerAndValid) {
  // 1x1x4x4 input of ones, 2x2 kernel of ones, stride 1: total padding 1 per axis.
  Tensor x = Tensor::from_vector<float>({1, 1, 4, 4}, std::vector<float>(16, 1.0f));
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, std::vector<float>(4, 1.0f));
  // SAME_UPPER pads at the end: the last row/column see fewer ones.
  Tensor upper = NodeBuilder("Conv").attr("auto_pad", "SAME_UPPER").run_ok({&x, &w});
  ASSERT_EQ(upper.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(upper.data<float>()[0], 4.0f);
  EXPECT_EQ(upper.data<float>()[3], 2.0f);
  EXPECT_EQ(upper.data<float>()[15], 1.0f);
  // SAME_LOWER pads at the beginning.
  Tensor lower = NodeBuilder("Conv").attr("auto_pad", "SAME_LOWER").run_ok({&x, &w});
  EXPECT_EQ(lower.data<float>()[0], 1.0f);
  EXPECT_EQ(lower.data<float>()[15], 4.0f);
  Tensor valid = NodeBuilder("Conv").attr("auto_pad", "VALID").attr("strides", std::vector<int64_t>{2, 2}).run_ok({&x, &w});
  EXPECT_EQ(valid.shape(), (Shape{1, 1, 2, 2}));
  // SAME with stride 2 on 5 wide: output ceil(5 / 2) = 3.
  Tensor x5 = Tensor::from_vector<float>({1, 1, 5, 5}, std::vector<float>(25, 1.0f));
  Tensor w3 = Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  Tensor strided = NodeBuilder("Conv").attr("auto_pad", "SAME_UPPER").attr("strides", std::vector<int64_t>{2, 2}).run_ok({&x5, &w3});
  EXPECT_EQ(strided.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(strided.data<float>()[0], 4.0f);  // total pad 2: one row/column on each side
}

TEST(Conv, OneAndThreeSpatialAxes) {
  Tensor x1 = Tensor::from_vector<float>({1, 1, 5}, {1, 2, 3, 4, 5});
  Tensor w1 = Tensor::from_vector<float>({1, 1, 2}, {1, -1});
  testing::expect_near_all({-1, -1, -1, -1}, NodeBuilder("Conv").run_ok({&x1, &w1}));
  Tensor x3 = Tensor::from_vector<float>({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor w3 = Tensor::from_vector<float>({2, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1});
  Tensor y3 = NodeBuilder("Conv").run_ok({&x3, &w3});
  ASSERT_EQ(y3.shape(), (Shape{1, 2, 1, 1, 1}));
  testing::expect_near_all({36, 8}, y3);
}

TEST(Conv, BadShapesAreErrorsNamingTheNode) {
  Tensor x = Tensor::from_vector<float>({1, 3, 4, 4}, std::vector<float>(48, 1.0f));
  Tensor w = Tensor::from_vector<float>({2, 2, 3, 3}, std::vector<float>(36, 1.0f));
  auto result = NodeBuilder("Conv").run({&x, &w});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("Conv 'test_Conv'"), std::string::npos) << result.status().message();
  Tensor big = Tensor::from_vector<float>({1, 3, 9, 9}, std::vector<float>(243, 1.0f));
  Tensor w3 = Tensor::from_vector<float>({2, 3, 9, 9}, std::vector<float>(486, 1.0f));
  auto too_small = NodeBuilder("Conv").run({&x, &w3});
  EXPECT_FALSE(too_small.ok());
  (void)big;
  EXPECT_FALSE(NodeBuilder("Conv").attr("auto_pad", "SAME").build().ok());
  EXPECT_FALSE(NodeBuilder("Conv").attr("group", 0).build().ok());
  EXPECT_FALSE(NodeBuilder("Conv").attr("pads", std::vector<int64_t>{1, 1, 1}).build().ok());
}

TEST(Conv, MissingTypedAttributesIsAnErrorNotACrash) {
  Node node;
  node.op_type = "Conv";
  node.name = "unparsed";
  node.opset = 13;
  node.inputs = {"x", "w"};
  node.outputs = {"y"};
  Tensor x = Tensor::from_vector<float>({1, 1, 1, 1}, {1});
  auto result = run_reference_node(node, {&x, &x});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("Conv 'unparsed'"), std::string::npos);
}

TEST(ConvTranspose, StridesOutputPaddingAndGroups) {
  // 1x1x2x2 input, 2x2 kernel of ones, stride 2: each input pixel fills its own 2x2 block.
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor y = NodeBuilder("ConvTranspose").attr("strides", std::vector<int64_t>{2, 2}).run_ok({&x, &w});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  testing::expect_near_all({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, y);
  // output_padding adds a row/column at the end (zeros + bias).
  Tensor bias = Tensor::from_vector<float>({1}, {0.5f});
  Tensor padded = NodeBuilder("ConvTranspose")
                      .attr("strides", std::vector<int64_t>{2, 2})
                      .attr("output_padding", std::vector<int64_t>{1, 0})
                      .run_ok({&x, &w, &bias});
  ASSERT_EQ(padded.shape(), (Shape{1, 1, 5, 4}));
  EXPECT_FLOAT_EQ(padded.data<float>()[16], 0.5f);
  // Groups: 2 input channels, each producing its own output channel with its own weight.
  Tensor x2 = Tensor::from_vector<float>({1, 2, 1, 1}, {1, 10});
  Tensor w2 = Tensor::from_vector<float>({2, 1, 1, 2}, {1, 2, 3, 4});
  Tensor y2 = NodeBuilder("ConvTranspose").attr("group", 2).run_ok({&x2, &w2});
  ASSERT_EQ(y2.shape(), (Shape{1, 2, 1, 2}));
  testing::expect_near_all({1, 2, 30, 40}, y2);
  // kernel_shape must match the weight.
  auto mismatch = NodeBuilder("ConvTranspose").attr("kernel_shape", std::vector<int64_t>{2}).run({&x, &w});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("ConvTranspose 'test_ConvTranspose'"), std::string::npos);
  // output_shape fixes the size and derives the pads.
  Tensor shaped = NodeBuilder("ConvTranspose")
                      .attr("strides", std::vector<int64_t>{2, 2})
                      .attr("output_shape", std::vector<int64_t>{3, 3})
                      .run_ok({&x, &w});
  ASSERT_EQ(shaped.shape(), (Shape{1, 1, 3, 3}));
  // Total padding 1 with NOTSET goes to the beginning: the first row/column is cropped.
  testing::expect_near_all({1, 2, 2, 3, 4, 4, 3, 4, 4}, shaped);
}

// ResNet-50's heaviest 3x3 conv at batch 1 must stay well under a second in Release builds.
TEST(Conv, ResNetSizedConvIsNotAbsurdlySlow) {
#ifndef NDEBUG
  GTEST_SKIP() << "timing is only meaningful in optimized builds";
#endif
  Tensor x = Tensor::from_vector<float>({1, 64, 56, 56}, seeded_values(64 * 56 * 56, 7));
  Tensor w = Tensor::from_vector<float>({64, 64, 3, 3}, seeded_values(64 * 64 * 9, 8));
  auto start = std::chrono::steady_clock::now();
  Tensor y = NodeBuilder("Conv").attr("pads", std::vector<int64_t>{1, 1, 1, 1}).run_ok({&x, &w});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(y.shape(), (Shape{1, 64, 56, 56}));
  RecordProperty("seconds", std::to_string(seconds));
  // Generous bound: the machine is shared; typical is a few hundred milliseconds.
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace qdqrt
