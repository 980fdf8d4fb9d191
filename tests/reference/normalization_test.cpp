#include <gtest/gtest.h>

#include <cmath>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using testing::expect_near_all;
using testing::NodeBuilder;

TEST(BatchNormalization, PerChannelInference) {
  Tensor x = Tensor::from_vector<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor scale = Tensor::from_vector<float>({2}, {2, 1});
  Tensor bias = Tensor::from_vector<float>({2}, {0, -1});
  Tensor mean = Tensor::from_vector<float>({2}, {1, 3});
  Tensor var = Tensor::from_vector<float>({2}, {4, 0.25f});
  Tensor y = NodeBuilder("BatchNormalization", 15).attr("epsilon", 0.0f).run_ok({&x, &scale, &bias, &mean, &var});
  // Channel 0: (x - 1) / 2 * 2 + 0; channel 1: (x - 3) / 0.5 - 1.
  expect_near_all({0, 1, -1, 1}, y);
}

TEST(BatchNormalization, TrainingModeIsUnsupported) {
  auto result = NodeBuilder("BatchNormalization", 15).attr("training_mode", 1).build();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnsupported);
  auto extra_outputs = NodeBuilder("BatchNormalization", 9).outputs({"y", "running_mean"}).build();
  EXPECT_FALSE(extra_outputs.ok());
}

TEST(BatchNormalization, ParameterShapeMismatchNamesNode) {
  Tensor x = Tensor::from_vector<float>({1, 2, 1, 1}, {1, 2});
  Tensor three = Tensor::from_vector<float>({3}, {1, 1, 1});
  Tensor two = Tensor::from_vector<float>({2}, {1, 1});
  auto result = NodeBuilder("BatchNormalization", 15).run({&x, &two, &two, &three, &two});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("input_mean"), std::string::npos);
}

TEST(LayerNormalization, LastAxisWithMeanAndInvStdDev) {
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 3, 5, 5});
  Tensor scale = Tensor::from_vector<float>({2}, {2, 1});
  Tensor bias = Tensor::from_vector<float>({2}, {0, 1});
  auto outputs = NodeBuilder("LayerNormalization", 17).outputs({"y", "mean", "inv_std"}).run({&x, &scale, &bias});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const float inv_std0 = 1.0f / std::sqrt(1.0f + 1e-5f);
  const float inv_std1 = 1.0f / std::sqrt(1e-5f);
  expect_near_all({-2 * inv_std0, inv_std0 + 1, 0, 1}, (*outputs)[0]);
  EXPECT_EQ((*outputs)[1].shape(), (Shape{2, 1}));
  expect_near_all({2, 5}, (*outputs)[1]);
  expect_near_all({inv_std0, inv_std1}, (*outputs)[2]);
}

TEST(LayerNormalization, AxisZeroNormalizesEverything) {
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor scale = Tensor::from_vector<float>({2, 2}, {1, 1, 1, 1});
  Tensor y = NodeBuilder("LayerNormalization", 17).attr("axis", 0).attr("epsilon", 0.0f).run_ok({&x, &scale});
  const float s = 1.0f / std::sqrt(1.25f);
  expect_near_all({-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s}, y);
  auto bad_axis = NodeBuilder("LayerNormalization", 17).attr("axis", 2).run({&x, &scale});
  ASSERT_FALSE(bad_axis.ok());
  EXPECT_NE(bad_axis.status().message().find("LayerNormalization 'test_LayerNormalization'"), std::string::npos);
}

}  // namespace
}  // namespace qdqrt
