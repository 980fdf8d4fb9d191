#include <gtest/gtest.h>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using testing::expect_near_all;
using testing::NodeBuilder;

TEST(Gemm, TransposesAlphaBetaAndBroadcastBias) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});  // used as A^T: [3, 2]
  Tensor b = Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1});        // used as B^T
  Tensor c_row = Tensor::from_vector<float>({2}, {10, 20});
  // A^T = [[1,4],[2,5],[3,6]]; times identity; alpha 2; + beta 0.5 * [10, 20] per row.
  Tensor y = NodeBuilder("Gemm")
                 .attr("transA", 1)
                 .attr("transB", 1)
                 .attr("alpha", 2.0f)
                 .attr("beta", 0.5f)
                 .run_ok({&a, &b, &c_row});
  ASSERT_EQ(y.shape(), (Shape{3, 2}));
  expect_near_all({7, 18, 9, 20, 11, 22}, y);
  Tensor c_column = Tensor::from_vector<float>({3, 1}, {1, 2, 3});
  expect_near_all({1, 4, 2, 5, 3, 6}, NodeBuilder("Gemm").attr("transA", 1).attr("beta", 0.0f).run_ok({&a, &b, &c_column}));
  expect_near_all({2, 5, 4, 7, 6, 9}, NodeBuilder("Gemm").attr("transA", 1).run_ok({&a, &b, &c_column}));
  Tensor scalar = Tensor::scalar<float>(100.0f);
  expect_near_all({101, 104, 102, 105, 103, 106}, NodeBuilder("Gemm").attr("transA", 1).run_ok({&a, &b, &scalar}));
  // C is optional (opset 11+).
  expect_near_all({1, 4, 2, 5, 3, 6}, NodeBuilder("Gemm").attr("transA", 1).run_ok({&a, &b, nullptr}));
}

TEST(Gemm, ShapeErrorsNameTheNode) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({2, 2}, {1, 0, 0, 1});
  auto result = NodeBuilder("Gemm").run({&a, &b});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("Gemm 'test_Gemm'"), std::string::npos);
  Tensor bad_c = Tensor::from_vector<float>({3}, {1, 2, 3});
  EXPECT_FALSE(NodeBuilder("Gemm").attr("transA", 1).run({&a, &b, &bad_c}).ok());
  EXPECT_FALSE(NodeBuilder("Gemm").attr("transA", 2).build().ok());
}

TEST(MatMul, VectorsFollowNumpy) {
  Tensor v = Tensor::from_vector<float>({2}, {1, 2});
  Tensor m = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = NodeBuilder("MatMul").run_ok({&v, &m});
  EXPECT_EQ(row.shape(), (Shape{3}));
  expect_near_all({9, 12, 15}, row);
  Tensor w = Tensor::from_vector<float>({3}, {1, 0, -1});
  Tensor column = NodeBuilder("MatMul").run_ok({&m, &w});
  EXPECT_EQ(column.shape(), (Shape{2}));
  expect_near_all({-2, -2}, column);
  Tensor dot = NodeBuilder("MatMul").run_ok({&v, &v});
  EXPECT_EQ(dot.shape(), Shape{});
  expect_near_all({5}, dot);
}

TEST(MatMul, BatchDimsBroadcast) {
  // [2, 1, 2, 3] x [3, 3, 1] -> [2, 3, 2, 1]
  std::vector<float> a_values(12), b_values(9);
  for (size_t i = 0; i < a_values.size(); ++i) a_values[i] = static_cast<float>(i);
  for (size_t i = 0; i < b_values.size(); ++i) b_values[i] = static_cast<float>(i % 3 == 0 ? 1 : 0) * static_cast<float>(i / 3 + 1);
  Tensor a = Tensor::from_vector<float>({2, 1, 2, 3}, a_values);
  Tensor b = Tensor::from_vector<float>({3, 3, 1}, b_values);  // batch j picks column 0 scaled by j + 1
  Tensor y = NodeBuilder("MatMul").run_ok({&a, &b});
  ASSERT_EQ(y.shape(), (Shape{2, 3, 2, 1}));
  std::vector<float> expected;
  for (int batch = 0; batch < 2; ++batch)
    for (int j = 0; j < 3; ++j)
      for (int row = 0; row < 2; ++row) expected.push_back(a_values[static_cast<size_t>(batch * 6 + row * 3)] * static_cast<float>(j + 1));
  expect_near_all(expected, y);
  Tensor bad = Tensor::from_vector<float>({2, 2, 1}, {1, 2, 3, 4});
  auto result = NodeBuilder("MatMul").run({&a, &bad});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("MatMul 'test_MatMul'"), std::string::npos);
}

}  // namespace
}  // namespace qdqrt
