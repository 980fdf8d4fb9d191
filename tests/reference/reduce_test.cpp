// Hand-computed checks of the reduce family: axes as attribute or input by opset,
// keepdims, noop_with_empty_axes, integer exactness, ArgMax/ArgMin ties and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using namespace testing;

// [2, 3]: rows {1, 2, 3} and {4, 5, 6}
Tensor matrix() { return tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(ReduceTest, AxesAttributeAndKeepdims) {
  Tensor x = matrix();
  auto kept = run_single("ReduceMean", 13, {&x}, {{"axes", ints_attribute({1})}});
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_EQ(kept->shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of<float>(*kept), (std::vector<float>{2, 5}));
  auto dropped = run_single("ReduceMax", 13, {&x}, {{"axes", ints_attribute({0})}, {"keepdims", int_attribute(0)}});
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(dropped->shape(), (Shape{3}));
  EXPECT_EQ(values_of<float>(*dropped), (std::vector<float>{4, 5, 6}));
  auto negative = run_single("ReduceMin", 13, {&x}, {{"axes", ints_attribute({-1})}, {"keepdims", int_attribute(0)}});
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(values_of<float>(*negative), (std::vector<float>{1, 4}));
}

TEST(ReduceTest, NoAxesReducesEverything) {
  Tensor x = matrix();
  auto all = run_single("ReduceSum", 11, {&x});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->shape(), (Shape{1, 1}));
  EXPECT_EQ(values_of<float>(*all), (std::vector<float>{21}));
  auto scalar = run_single("ReduceProd", 13, {&x}, {{"keepdims", int_attribute(0)}});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->shape(), (Shape{}));
  EXPECT_EQ(values_of<float>(*scalar), (std::vector<float>{720}));
}

TEST(ReduceTest, ReduceSumTakesAxesInputFromOpset13) {
  Tensor x = matrix();
  Tensor axes = tensor<int64_t>({1}, {0});
  auto y = run_single("ReduceSum", 13, {&x, &axes});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{5, 7, 9}));
  // The attribute form is invalid from 13 for ReduceSum, still valid for ReduceMean until 18.
  EXPECT_FALSE(make_node("ReduceSum", 13, 1, {{"axes", ints_attribute({0})}}).ok());
  EXPECT_TRUE(make_node("ReduceMean", 17, 1, {{"axes", ints_attribute({0})}}).ok());
  EXPECT_FALSE(make_node("ReduceMean", 18, 1, {{"axes", ints_attribute({0})}}).ok());
}

TEST(ReduceTest, OtherReductionsTakeAxesInputFromOpset18) {
  Tensor x = matrix();
  Tensor axes = tensor<int64_t>({1}, {1});
  auto y = run_single("ReduceMax", 18, {&x, &axes}, {{"keepdims", int_attribute(0)}});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{3, 6}));
  auto l2 = run_single("ReduceL2", 18, {&x, &axes}, {{"keepdims", int_attribute(0)}});
  ASSERT_TRUE(l2.ok());
  expect_near_vector(values_of<float>(*l2), {std::sqrt(14.0f), std::sqrt(77.0f)});
  // Before 18 an axes input is an error, not silently ignored.
  expect_error(run_single("ReduceMax", 13, {&x, &axes}).status(), {"ReduceMax 'ReduceMax_test'", "attribute"});
}

TEST(ReduceTest, EmptyAxesWithNoopIsIdentity) {
  Tensor x = matrix();
  Tensor empty_axes = tensor<int64_t>({0}, {});
  auto noop = run_single("ReduceSum", 13, {&x, &empty_axes}, {{"noop_with_empty_axes", int_attribute(1)}});
  ASSERT_TRUE(noop.ok());
  EXPECT_EQ(noop->shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(*noop), values_of<float>(x));
  auto all = run_single("ReduceSum", 13, {&x, &empty_axes});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(values_of<float>(*all), (std::vector<float>{21}));
}

TEST(ReduceTest, IntegerReductionsAreExact) {
  Tensor x = tensor<int64_t>({2, 2}, {(int64_t{1} << 60) + 1, 1, -7, 2});
  auto sum = run_single("ReduceSum", 11, {&x}, {{"axes", ints_attribute({1})}, {"keepdims", int_attribute(0)}});
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(values_of<int64_t>(*sum), (std::vector<int64_t>{(int64_t{1} << 60) + 2, -5}));
  Tensor small = tensor<int32_t>({3}, {1, 2, 4});
  auto mean = run_single("ReduceMean", 13, {&small});
  ASSERT_TRUE(mean.ok());
  EXPECT_EQ(values_of<int32_t>(*mean), (std::vector<int32_t>{2}));  // 7 / 3 truncated
}

TEST(ReduceTest, LogSumExpIsStableForLargeValues) {
  Tensor x = tensor<float>({2}, {1000, 1000});
  auto y = run_single("ReduceLogSumExp", 13, {&x});
  ASSERT_TRUE(y.ok());
  EXPECT_NEAR(values_of<float>(*y)[0], 1000 + std::log(2.0f), 1e-3f);
}

TEST(ReduceTest, BadAxesAreErrors) {
  Tensor x = matrix();
  expect_error(run_single("ReduceSum", 11, {&x}, {{"axes", ints_attribute({2})}}).status(),
               {"ReduceSum 'ReduceSum_test'", "axis 2", "rank 2"});
  expect_error(run_single("ReduceSum", 11, {&x}, {{"axes", ints_attribute({1, -1})}}).status(),
               {"ReduceSum 'ReduceSum_test'", "repeated"});
  Tensor float_axes = tensor<float>({1}, {0});
  expect_error(run_single("ReduceSum", 13, {&x, &float_axes}).status(), {"ReduceSum 'ReduceSum_test'", "axes", "float32"});
}

TEST(ReduceTest, ArgMaxArgMin) {
  Tensor x = tensor<float>({2, 3}, {1, 3, 3, 2, 0, 2});
  auto first = run_single("ArgMax", 13, {&x}, {{"axis", int_attribute(1)}});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->dtype(), DataType::kInt64);
  EXPECT_EQ(first->shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of<int64_t>(*first), (std::vector<int64_t>{1, 0}));
  auto last = run_single("ArgMax", 13, {&x},
                         {{"axis", int_attribute(-1)}, {"select_last_index", int_attribute(1)}, {"keepdims", int_attribute(0)}});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->shape(), (Shape{2}));
  EXPECT_EQ(values_of<int64_t>(*last), (std::vector<int64_t>{2, 2}));
  auto min_rows = run_single("ArgMin", 13, {&x}, {{"keepdims", int_attribute(0)}});
  ASSERT_TRUE(min_rows.ok());
  EXPECT_EQ(values_of<int64_t>(*min_rows), (std::vector<int64_t>{0, 1, 1}));
  expect_error(run_single("ArgMin", 13, {&x}, {{"axis", int_attribute(2)}}).status(), {"ArgMin 'ArgMin_test'", "axis 2"});
}

}  // namespace
}  // namespace qdqrt

namespace qdqrt {
namespace {

TEST(ReduceTest, AxisOnScalarIsAnError) {
  using namespace testing;
  Tensor scalar = Tensor::scalar<float>(3);
  expect_error(run_single("ReduceSum", 11, {&scalar}, {{"axes", ints_attribute({0})}}).status(),
               {"ReduceSum 'ReduceSum_test'", "axis 0", "rank 0"});
  auto all = run_single("ReduceSum", 11, {&scalar});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->shape(), (Shape{}));
}

}  // namespace
}  // namespace qdqrt
