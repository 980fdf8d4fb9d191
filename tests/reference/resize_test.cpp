#include <gtest/gtest.h>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using testing::expect_near_all;
using testing::NodeBuilder;

Tensor resize_1d(const char* transformation, const char* nearest_mode, float scale) {
  Tensor x = Tensor::from_vector<float>({4}, {10, 20, 30, 40});
  Tensor scales = Tensor::from_vector<float>({1}, {scale});
  return NodeBuilder("Resize", 13)
      .attr("coordinate_transformation_mode", transformation)
      .attr("nearest_mode", nearest_mode)
      .run_ok({&x, nullptr, &scales});
}

TEST(Resize, NearestModes) {
  // half_pixel x2: source coordinates -0.25, 0.25, 0.75, ... 3.25.
  expect_near_all({10, 10, 20, 20, 30, 30, 40, 40}, resize_1d("half_pixel", "round_prefer_floor", 2.0f));
  // asymmetric x2: source coordinates 0, 0.5, 1, ... 3.5: exact ties.
  expect_near_all({10, 10, 20, 20, 30, 30, 40, 40}, resize_1d("asymmetric", "round_prefer_floor", 2.0f));
  expect_near_all({10, 20, 20, 30, 30, 40, 40, 40}, resize_1d("asymmetric", "round_prefer_ceil", 2.0f));
  expect_near_all({10, 10, 20, 20, 30, 30, 40, 40}, resize_1d("asymmetric", "floor", 2.0f));
  expect_near_all({10, 20, 20, 30, 30, 40, 40, 40}, resize_1d("asymmetric", "ceil", 2.0f));
}

TEST(Resize, LinearAlignCornersWithSizes) {
  Tensor x = Tensor::from_vector<float>({3}, {0, 10, 20});
  Tensor sizes = Tensor::from_vector<int64_t>({1}, {5});
  Tensor y = NodeBuilder("Resize", 13)
                 .attr("mode", "linear")
                 .attr("coordinate_transformation_mode", "align_corners")
                 .run_ok({&x, nullptr, nullptr, &sizes});
  expect_near_all({0, 5, 10, 15, 20}, y);
}

TEST(Resize, LinearHalfPixelClampsAtEdges) {
  Tensor x = Tensor::from_vector<float>({2}, {0, 8});
  Tensor scales = Tensor::from_vector<float>({1}, {2.0f});
  // Source coordinates -0.25, 0.25, 0.75, 1.25 -> clamped to [0, 1].
  expect_near_all({0, 2, 6, 8}, NodeBuilder("Resize", 13).attr("mode", "linear").run_ok({&x, nullptr, &scales}));
}

TEST(Resize, AxesAttributeResizesOnlyListedAxes) {
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor sizes = Tensor::from_vector<int64_t>({1}, {4});
  Tensor y = NodeBuilder("Resize", 18)
                 .attr("axes", std::vector<int64_t>{-1})
                 .attr("coordinate_transformation_mode", "asymmetric")
                 .run_ok({&x, nullptr, nullptr, &sizes});
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  expect_near_all({1, 1, 2, 2, 3, 3, 4, 4}, y);
  EXPECT_FALSE(NodeBuilder("Resize", 17).attr("axes", std::vector<int64_t>{1}).build().ok());
}

TEST(Resize, KeepAspectRatioPolicy) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor sizes = Tensor::from_vector<int64_t>({2}, {4, 4});
  auto run = [&](const char* policy) {
    return NodeBuilder("Resize", 18)
        .attr("axes", std::vector<int64_t>{2, 3})
        .attr("keep_aspect_ratio_policy", policy)
        .run_ok({&x, nullptr, nullptr, &sizes});
  };
  EXPECT_EQ(run("stretch").shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(run("not_larger").shape(), (Shape{1, 1, 2, 4}));  // scale min(2, 1) = 1
  EXPECT_EQ(run("not_smaller").shape(), (Shape{1, 1, 4, 8}));  // scale max(2, 1) = 2
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  Tensor x = Tensor::from_vector<float>({4}, {0, 10, 20, 30});
  Tensor roi = Tensor::from_vector<float>({2}, {0.0f, 1.5f});
  Tensor sizes = Tensor::from_vector<int64_t>({1}, {3});
  Tensor y = NodeBuilder("Resize", 13)
                 .attr("mode", "linear")
                 .attr("coordinate_transformation_mode", "tf_crop_and_resize")
                 .attr("extrapolation_value", 99.0f)
                 .run_ok({&x, &roi, nullptr, &sizes});
  // Source coordinates 0, 2.25, 4.5 (outside [0, 3]).
  expect_near_all({0, 22.5f, 99}, y);
}

TEST(Resize, CubicKeepsConstants) {
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 7.0f));
  Tensor scales = Tensor::from_vector<float>({4}, {1, 1, 1.7f, 2.3f});
  Tensor y = NodeBuilder("Resize", 13).attr("mode", "cubic").run_ok({&x, nullptr, &scales});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 6}));
  expect_near_all(std::vector<float>(30, 7.0f), y);
}

TEST(Resize, Opset10ScalesAreInputOneWithFloorNearest) {
  Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  Tensor scales = Tensor::from_vector<float>({1}, {3.0f});
  expect_near_all({1, 1, 1, 2, 2, 2}, NodeBuilder("Resize", 10).run_ok({&x, &scales}));
  EXPECT_FALSE(NodeBuilder("Resize", 10).attr("mode", "cubic").build().ok());
}

TEST(Resize, Int8NearestOnly) {
  Tensor x = Tensor::from_vector<int8_t>({2}, {-5, 9});
  Tensor scales = Tensor::from_vector<float>({1}, {2.0f});
  Tensor y = NodeBuilder("Resize", 13).run_ok({&x, nullptr, &scales});
  EXPECT_EQ(testing::values_of<int8_t>(y), (std::vector<int8_t>{-5, -5, 9, 9}));
  auto linear = NodeBuilder("Resize", 13).attr("mode", "linear").run({&x, nullptr, &scales});
  ASSERT_FALSE(linear.ok());
  EXPECT_EQ(linear.status().code(), StatusCode::kUnsupported);
}

TEST(Resize, Errors) {
  auto antialias = NodeBuilder("Resize", 18).attr("antialias", 1).build();
  ASSERT_FALSE(antialias.ok());
  EXPECT_EQ(antialias.status().code(), StatusCode::kUnsupported);
  EXPECT_FALSE(NodeBuilder("Resize", 13).attr("mode", "bilinear").build().ok());
  Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  Tensor scales = Tensor::from_vector<float>({1}, {2.0f});
  Tensor sizes = Tensor::from_vector<int64_t>({1}, {4});
  auto both = NodeBuilder("Resize", 13).run({&x, nullptr, &scales, &sizes});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("Resize 'test_Resize'"), std::string::npos);
  Tensor wrong_length = Tensor::from_vector<float>({2}, {2.0f, 2.0f});
  EXPECT_FALSE(NodeBuilder("Resize", 13).run({&x, nullptr, &wrong_length}).ok());
  Tensor negative = Tensor::from_vector<float>({1}, {-1.0f});
  EXPECT_FALSE(NodeBuilder("Resize", 13).run({&x, nullptr, &negative}).ok());
}

}  // namespace
}  // namespace qdqrt
