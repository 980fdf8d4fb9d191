#include <gtest/gtest.h>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using testing::expect_near_all;
using testing::NodeBuilder;
using testing::values_of;

Tensor iota_5x5() {
  std::vector<float> values(25);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i + 1);
  return Tensor::from_vector<float>({1, 1, 5, 5}, values);
}

TEST(MaxPool, CeilModeAddsPartialWindows) {
  Tensor x = iota_5x5();
  Tensor floor_mode = NodeBuilder("MaxPool").attr("kernel_shape", std::vector<int64_t>{2, 2}).attr("strides", std::vector<int64_t>{2, 2}).run_ok({&x});
  EXPECT_EQ(floor_mode.shape(), (Shape{1, 1, 2, 2}));
  Tensor ceil_mode = NodeBuilder("MaxPool")
                         .attr("kernel_shape", std::vector<int64_t>{2, 2})
                         .attr("strides", std::vector<int64_t>{2, 2})
                         .attr("ceil_mode", 1)
                         .run_ok({&x});
  ASSERT_EQ(ceil_mode.shape(), (Shape{1, 1, 3, 3}));
  expect_near_all({7, 9, 10, 17, 19, 20, 22, 24, 25}, ceil_mode);
}

TEST(MaxPool, CeilModeDropsWindowStartingInEndPadding) {
  // Input 4, kernel 2, stride 2, pad end 1: ceil((4 + 1 - 2) / 2) + 1 = 3, but the third window
  // would start at 4 (inside the end padding), so it is dropped.
  Tensor x = Tensor::from_vector<float>({1, 1, 4}, {1, 2, 3, 4});
  Tensor y = NodeBuilder("MaxPool")
                 .attr("kernel_shape", std::vector<int64_t>{2})
                 .attr("strides", std::vector<int64_t>{2})
                 .attr("pads", std::vector<int64_t>{0, 1})
                 .attr("ceil_mode", 1)
                 .run_ok({&x});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
}

TEST(MaxPool, ValidAutoPadIgnoresCeilMode) {
  // ONNX's VALID size is ceil((5 - 2 + 1) / 2) = 2 whatever ceil_mode says.
  Tensor x = Tensor::from_vector<float>({1, 1, 5}, {1, 2, 3, 4, 5});
  Tensor y = NodeBuilder("MaxPool")
                 .attr("kernel_shape", std::vector<int64_t>{2})
                 .attr("strides", std::vector<int64_t>{2})
                 .attr("auto_pad", "VALID")
                 .attr("ceil_mode", 1)
                 .run_ok({&x});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  expect_near_all({2, 4}, y);
}

TEST(MaxPool, DilationsPadsAndInt8) {
  Tensor x = Tensor::from_vector<int8_t>({1, 1, 1, 5}, {-5, 3, -128, 7, 1});
  Tensor y = NodeBuilder("MaxPool")
                 .attr("kernel_shape", std::vector<int64_t>{1, 2})
                 .attr("dilations", std::vector<int64_t>{1, 2})
                 .attr("pads", std::vector<int64_t>{0, 1, 0, 1})
                 .run_ok({&x});
  ASSERT_EQ(y.dtype(), DataType::kInt8);
  // Padded positions never win, even against -128: windows {pad,3} {-5,-128} {3,7} {-128,1} {7,pad}.
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{3, -5, 7, 1, 7}));
}

TEST(MaxPool, IndicesRowAndColumnMajor) {
  Tensor x = Tensor::from_vector<float>({1, 2, 2, 3}, {1, 9, 2, 3, 4, 5, 0, 0, 0, 0, 8, 0});
  auto row_major = NodeBuilder("MaxPool").attr("kernel_shape", std::vector<int64_t>{2, 3}).outputs({"y", "indices"}).run({&x});
  ASSERT_TRUE(row_major.ok()) << row_major.status().to_string();
  expect_near_all({9, 8}, (*row_major)[0]);
  EXPECT_EQ(values_of<int64_t>((*row_major)[1]), (std::vector<int64_t>{1, 6 + 4}));
  auto column_major = NodeBuilder("MaxPool")
                          .attr("kernel_shape", std::vector<int64_t>{2, 3})
                          .attr("storage_order", 1)
                          .outputs({"y", "indices"})
                          .run({&x});
  ASSERT_TRUE(column_major.ok());
  // (h=0, w=1) -> w * H + h = 2; (h=1, w=1) -> 3, plus the channel offset 6.
  EXPECT_EQ(values_of<int64_t>((*column_major)[1]), (std::vector<int64_t>{2, 6 + 3}));
}

TEST(AveragePool, CountIncludePadAndCeilMode) {
  Tensor x = Tensor::from_vector<float>({1, 1, 1, 4}, {1, 2, 3, 4});
  auto pool = [&](int include_pad, int ceil) {
    return NodeBuilder("AveragePool")
        .attr("kernel_shape", std::vector<int64_t>{1, 3})
        .attr("strides", std::vector<int64_t>{1, 2})
        .attr("pads", std::vector<int64_t>{0, 1, 0, 0})
        .attr("count_include_pad", include_pad)
        .attr("ceil_mode", ceil)
        .run_ok({&x});
  };
  // Windows over [pad, 1, 2, 3, 4]: {pad,1,2} {2,3,4}.
  expect_near_all({1.5f, 3.0f}, pool(0, 0));
  expect_near_all({1.0f, 3.0f}, pool(1, 0));
  // ceil_mode adds the window {4, past-end, past-end}: past-end positions are never counted.
  Tensor ceil_excluded = pool(0, 1);
  ASSERT_EQ(ceil_excluded.shape(), (Shape{1, 1, 1, 2}));
  Tensor x5 = Tensor::from_vector<float>({1, 1, 1, 5}, {1, 2, 3, 4, 5});
  Tensor partial = NodeBuilder("AveragePool")
                       .attr("kernel_shape", std::vector<int64_t>{1, 2})
                       .attr("strides", std::vector<int64_t>{1, 2})
                       .attr("ceil_mode", 1)
                       .attr("count_include_pad", 1)
                       .run_ok({&x5});
  expect_near_all({1.5f, 3.5f, 5.0f}, partial);
}

TEST(AveragePool, DilationsOnlyFromOpset19) {
  EXPECT_FALSE(NodeBuilder("AveragePool", 18).attr("kernel_shape", std::vector<int64_t>{2}).attr("dilations", std::vector<int64_t>{2}).build().ok());
  Tensor x = Tensor::from_vector<float>({1, 1, 4}, {1, 2, 3, 4});
  Tensor y = NodeBuilder("AveragePool", 19).attr("kernel_shape", std::vector<int64_t>{2}).attr("dilations", std::vector<int64_t>{2}).run_ok({&x});
  expect_near_all({2, 3}, y);
}

TEST(GlobalPool, AverageAndMaxKeepRank) {
  Tensor x = Tensor::from_vector<float>({2, 1, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -4});
  Tensor avg = NodeBuilder("GlobalAveragePool").run_ok({&x});
  EXPECT_EQ(avg.shape(), (Shape{2, 1, 1, 1}));
  expect_near_all({2.5f, -2.5f}, avg);
  Tensor max = NodeBuilder("GlobalMaxPool").run_ok({&x});
  expect_near_all({4, -1}, max);
}

TEST(Pool, ErrorsNameTheNode) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto too_big = NodeBuilder("MaxPool").attr("kernel_shape", std::vector<int64_t>{3, 3}).run({&x});
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("MaxPool 'test_MaxPool'"), std::string::npos);
  EXPECT_FALSE(NodeBuilder("MaxPool").build().ok());  // kernel_shape is required
  auto wrong_rank = NodeBuilder("AveragePool").attr("kernel_shape", std::vector<int64_t>{2}).run({&x});
  EXPECT_FALSE(wrong_rank.ok());
  Tensor ints = Tensor::from_vector<int32_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_FALSE(NodeBuilder("AveragePool").attr("kernel_shape", std::vector<int64_t>{2, 2}).run({&ints}).ok());
}

}  // namespace
}  // namespace qdqrt
