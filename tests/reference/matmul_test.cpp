#include <string>
#include <vector>

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

// ---- Einsum: any equation, computed plainly; checked against hand-computed values ----

Result<Tensor> einsum(const std::string& equation, std::vector<const Tensor*> inputs, int64_t opset = 13) {
  return testing::run_single("Einsum", opset, std::move(inputs), {{"equation", string_attribute(equation)}});
}

std::vector<float> floats_of(const Tensor& tensor) { return testing::values_of<float>(tensor); }

TEST(Einsum, MatrixProductsTransposesAndReductions) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({3, 2}, {1, 0, 0, 1, 1, 1});
  auto product = einsum("ij,jk->ik", {&a, &b});
  ASSERT_TRUE(product.ok()) << product.status().to_string();
  EXPECT_EQ(product->shape(), (Shape{2, 2}));
  EXPECT_EQ(floats_of(*product), (std::vector<float>{4, 5, 10, 11}));
  auto implicit = einsum("ij, jk", {&a, &b});  // spaces ignored; output "ik"
  EXPECT_EQ(floats_of(*implicit), (std::vector<float>{4, 5, 10, 11}));
  auto transposed = einsum("ij->ji", {&a});
  EXPECT_EQ(transposed->shape(), (Shape{3, 2}));
  EXPECT_EQ(floats_of(*transposed), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  auto implicit_transpose = einsum("ji", {&a});  // implicit output "ij": the letters sorted
  EXPECT_EQ(floats_of(*implicit_transpose), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  auto rows = einsum("ij->i", {&a});
  EXPECT_EQ(floats_of(*rows), (std::vector<float>{6, 15}));
  auto total = einsum("ij->", {&a});
  EXPECT_EQ(total->shape(), (Shape{}));
  EXPECT_EQ(floats_of(*total), (std::vector<float>{21}));
  Tensor v = Tensor::from_vector<float>({3}, {1, 2, 3});
  auto inner = einsum("i,i", {&v, &v});
  EXPECT_EQ(floats_of(*inner), (std::vector<float>{14}));
  auto outer = einsum("i,j->ij", {&v, &v});
  EXPECT_EQ(floats_of(*outer), (std::vector<float>{1, 2, 3, 2, 4, 6, 3, 6, 9}));
  // Three operands: a row vector, a matrix and a column vector.
  Tensor w = Tensor::from_vector<float>({2}, {1, -1});
  auto chain = einsum("i,ij,j->", {&w, &a, &v});
  EXPECT_EQ(floats_of(*chain), (std::vector<float>{(1 + 4 + 9) - (4 + 10 + 18)}));
}

TEST(Einsum, DiagonalsEllipsisAndBroadcasting) {
  Tensor square = Tensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto diagonals = einsum("...ii->...i", {&square});
  ASSERT_TRUE(diagonals.ok()) << diagonals.status().to_string();
  EXPECT_EQ(diagonals->shape(), (Shape{2, 2}));
  EXPECT_EQ(floats_of(*diagonals), (std::vector<float>{1, 4, 5, 8}));
  auto traces = einsum("bii->b", {&square});
  EXPECT_EQ(floats_of(*traces), (std::vector<float>{5, 13}));
  // Attention scores with the heads in an ellipsis, and a batch dim of 1 broadcast.
  Tensor q = Tensor::from_vector<float>({1, 2, 2}, {1, 0, 0, 1});
  Tensor k = Tensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto scores = einsum("...id,...jd->...ij", {&q, &k});
  ASSERT_TRUE(scores.ok()) << scores.status().to_string();
  EXPECT_EQ(scores->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(floats_of(*scores), (std::vector<float>{1, 3, 2, 4, 5, 7, 6, 8}));
  auto batched = einsum("bid,bjd->bij", {&q, &k});
  EXPECT_EQ(floats_of(*batched), (std::vector<float>{1, 3, 2, 4, 5, 7, 6, 8}));
  // Integers wrap as numpy's.
  Tensor big = Tensor::from_vector<int32_t>({2}, {65536, 65536});
  auto wrapped = einsum("i,i", {&big, &big});
  EXPECT_EQ(testing::values_of<int32_t>(*wrapped), (std::vector<int32_t>{0}));
}

TEST(Einsum, BadEquationsAndShapesNameTheNode) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  testing::expect_error(einsum("ij,jk->ik", {&a}).status(), {"Einsum 'Einsum_test'", "2 input term(s) for 1 input(s)"});
  testing::expect_error(einsum("ij->ik", {&a}).status(), {"output label 'k' is in no input"});
  testing::expect_error(einsum("ij->ii", {&a}).status(), {"output label 'i' is given twice"});
  testing::expect_error(einsum("i1->i", {&a}).status(), {"'1' is not a letter"});
  testing::expect_error(einsum("i..j->i", {&a}).status(), {"a '.' outside"});
  testing::expect_error(einsum("......->", {&a}).status(), {"\"...\" twice"});
  testing::expect_error(einsum("ij->...", {&a}).status(), {"the output has \"...\" and no input does"});
  testing::expect_error(einsum("ij->i->j", {&a}).status(), {"\"->\" twice"});
  testing::expect_error(einsum("ijk->i", {&a}).status(), {"Einsum 'Einsum_test'", "rank 2", "needs 3"});
  testing::expect_error(einsum("ij,jk->ik", {&a, &b}).status(), {"Einsum 'Einsum_test'", "label 'j' is 3", "2"});
  testing::expect_error(testing::run_single("Einsum", 13, {&a}).status(), {"attribute 'equation' is required"});
}

}  // namespace
}  // namespace qdqrt
