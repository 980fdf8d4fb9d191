// Hand-computed checks of the elementwise family: broadcasting, integer semantics, opset
// differences (Clip, Softmax) and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference/ops/half_float.h"
#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using namespace testing;

TEST(ElementwiseTest, AddBroadcastsLikeNumpy) {
  Tensor a = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = tensor<float>({3}, {10, 20, 30});
  auto y = run_single("Add", 13, {&a, &b});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{11, 22, 33, 14, 25, 36}));

  // [2,1] x [1,3] -> [2,3]
  Tensor column = tensor<float>({2, 1}, {1, 2});
  Tensor row = tensor<float>({1, 3}, {1, 10, 100});
  auto product = run_single("Mul", 13, {&column, &row});
  ASSERT_TRUE(product.ok());
  EXPECT_EQ(values_of<float>(*product), (std::vector<float>{1, 10, 100, 2, 20, 200}));
}

TEST(ElementwiseTest, IncompatibleBroadcastNamesNodeAndShapes) {
  Tensor a = tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = tensor<float>({4}, {1, 2, 3, 4});
  auto y = run_single("Add", 13, {&a, &b});
  expect_error(y.status(), {"Add 'Add_test'", "[2, 3]", "[4]"});
}

TEST(ElementwiseTest, MixedDtypesAreRejected) {
  Tensor a = tensor<float>({1}, {1});
  Tensor b = tensor<int32_t>({1}, {1});
  expect_error(run_single("Sub", 13, {&a, &b}).status(), {"Sub 'Sub_test'", "float32", "int32"});
}

TEST(ElementwiseTest, IntegerArithmeticWrapsAndTruncates) {
  Tensor a = tensor<int8_t>({2}, {100, -100});
  Tensor b = tensor<int8_t>({2}, {100, -100});
  auto sum = run_single("Add", 14, {&a, &b});
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(values_of<int8_t>(*sum), (std::vector<int8_t>{-56, 56}));

  Tensor dividend = tensor<int32_t>({4}, {-7, 7, 7, -7});
  Tensor divisor = tensor<int32_t>({4}, {2, -2, 2, -2});
  auto quotient = run_single("Div", 14, {&dividend, &divisor});
  ASSERT_TRUE(quotient.ok());
  EXPECT_EQ(values_of<int32_t>(*quotient), (std::vector<int32_t>{-3, -3, 3, 3}));
}

TEST(ElementwiseTest, IntegerDivisionByZeroIsAnError) {
  Tensor a = tensor<int64_t>({2}, {1, 2});
  Tensor b = tensor<int64_t>({2}, {1, 0});
  expect_error(run_single("Div", 14, {&a, &b}).status(), {"Div 'Div_test'", "division by zero"});
}

TEST(ElementwiseTest, PowTakesExponentOfAnotherDtype) {
  Tensor base = tensor<float>({3}, {2, 3, 4});
  Tensor exponent = tensor<int64_t>({1}, {3});
  auto y = run_single("Pow", 15, {&base, &exponent});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dtype(), DataType::kFloat);
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{8, 27, 64}));

  Tensor int_base = tensor<int32_t>({2}, {2, -3});
  Tensor int_exponent = tensor<int32_t>({2}, {10, 3});
  auto z = run_single("Pow", 15, {&int_base, &int_exponent});
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(values_of<int32_t>(*z), (std::vector<int32_t>{1024, -27}));
}

TEST(ElementwiseTest, ModFollowsFmodAttribute) {
  Tensor a = tensor<int32_t>({4}, {-7, 7, -7, 7});
  Tensor b = tensor<int32_t>({4}, {3, -3, -3, 3});
  auto python_style = run_single("Mod", 13, {&a, &b});
  ASSERT_TRUE(python_style.ok());
  EXPECT_EQ(values_of<int32_t>(*python_style), (std::vector<int32_t>{2, -2, -1, 1}));
  auto c_style = run_single("Mod", 13, {&a, &b}, {{"fmod", int_attribute(1)}});
  ASSERT_TRUE(c_style.ok());
  EXPECT_EQ(values_of<int32_t>(*c_style), (std::vector<int32_t>{-1, 1, -1, 1}));

  Tensor f = tensor<float>({1}, {1.5f});
  expect_error(run_single("Mod", 13, {&f, &f}).status(), {"Mod 'Mod_test'", "fmod"});
}

TEST(ElementwiseTest, ComparisonsAndWhere) {
  Tensor a = tensor<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor b = tensor<int64_t>({2}, {1, 4});
  auto equal = run_single("Equal", 13, {&a, &b});
  ASSERT_TRUE(equal.ok());
  EXPECT_EQ(equal->dtype(), DataType::kBool);
  EXPECT_EQ(values_of<bool>(*equal), (std::vector<bool>{true, false, false, true}));
  auto greater_equal = run_single("GreaterOrEqual", 16, {&a, &b});
  ASSERT_TRUE(greater_equal.ok());
  EXPECT_EQ(values_of<bool>(*greater_equal), (std::vector<bool>{true, false, true, true}));

  // Where broadcasts all three inputs: condition [2,1], x [2,2], y scalar.
  Tensor condition = tensor<bool>({2, 1}, {true, false});
  Tensor y = Tensor::scalar<int64_t>(-1);
  auto selected = run_single("Where", 16, {&condition, &a, &y});
  ASSERT_TRUE(selected.ok());
  EXPECT_EQ(values_of<int64_t>(*selected), (std::vector<int64_t>{1, 2, -1, -1}));
}

TEST(ElementwiseTest, LogicOps) {
  Tensor a = tensor<bool>({4}, {false, false, true, true});
  Tensor b = tensor<bool>({4}, {false, true, false, true});
  EXPECT_EQ(values_of<bool>(*run_single("And", 10, {&a, &b})), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(values_of<bool>(*run_single("Or", 10, {&a, &b})), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(values_of<bool>(*run_single("Xor", 10, {&a, &b})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values_of<bool>(*run_single("Not", 10, {&a})), (std::vector<bool>{true, true, false, false}));
  Tensor f = tensor<float>({1}, {1});
  expect_error(run_single("Not", 10, {&f}).status(), {"Not 'Not_test'", "float32"});
}

TEST(ElementwiseTest, ClipBoundsFromAttributesBeforeOpset11) {
  Tensor x = tensor<float>({4}, {-2, -0.5f, 0.5f, 2});
  auto y = run_single("Clip", 10, {&x}, {{"min", float_attribute(-1)}, {"max", float_attribute(1)}});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{-1, -0.5f, 0.5f, 1}));
}

TEST(ElementwiseTest, ClipBoundsFromOptionalInputsFromOpset11) {
  Tensor x = tensor<float>({4}, {-2, -0.5f, 0.5f, 2});
  Tensor max = Tensor::scalar<float>(0.0f);
  auto y = run_single("Clip", 13, {&x, nullptr, &max});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{-2, -0.5f, 0, 0}));

  Tensor ints = tensor<int8_t>({3}, {-128, 5, 127});
  Tensor low = Tensor::scalar<int8_t>(-3);
  Tensor high = Tensor::scalar<int8_t>(3);
  auto clipped = run_single("Clip", 13, {&ints, &low, &high});
  ASSERT_TRUE(clipped.ok());
  EXPECT_EQ(values_of<int8_t>(*clipped), (std::vector<int8_t>{-3, 3, 3}));

  Tensor wrong = Tensor::scalar<int32_t>(3);
  expect_error(run_single("Clip", 13, {&ints, &wrong}).status(), {"Clip 'Clip_test'", "min", "int32"});
}

TEST(ElementwiseTest, SoftmaxBeforeOpset13CoercesTo2D) {
  // Shape [1, 2, 2], axis 1: opset 11 normalizes over all 4 elements, opset 13 over dim 1 only.
  Tensor x = tensor<float>({1, 2, 2}, {0, 1, 2, 3});
  auto old_style = run_single("Softmax", 11, {&x}, {{"axis", int_attribute(1)}});
  ASSERT_TRUE(old_style.ok());
  const double total = 1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_near_vector(values_of<float>(*old_style), {static_cast<float>(1 / total), static_cast<float>(std::exp(1.0) / total),
                                                    static_cast<float>(std::exp(2.0) / total),
                                                    static_cast<float>(std::exp(3.0) / total)});
  auto new_style = run_single("Softmax", 13, {&x}, {{"axis", int_attribute(1)}});
  ASSERT_TRUE(new_style.ok());
  const float low = static_cast<float>(1 / (1 + std::exp(2.0)));
  expect_near_vector(values_of<float>(*new_style), {low, low, 1 - low, 1 - low});
}

TEST(ElementwiseTest, SoftmaxDefaultAxisDependsOnOpset) {
  // [2, 2]: opset 11 default axis 1 (rows), opset 13 default -1 (also rows); for rank 3 they differ.
  Tensor x = tensor<float>({2, 1, 2}, {0, 0, 0, 1000});
  auto old_style = run_single("Softmax", 12, {&x});
  ASSERT_TRUE(old_style.ok());
  expect_near_vector(values_of<float>(*old_style), {0.5f, 0.5f, 0, 1});
  auto log_softmax = run_single("LogSoftmax", 13, {&x});
  ASSERT_TRUE(log_softmax.ok());
  expect_near_vector(values_of<float>(*log_softmax), {std::log(0.5f), std::log(0.5f), -1000, 0});
  expect_error(run_single("Softmax", 13, {&x}, {{"axis", int_attribute(3)}}).status(), {"Softmax 'Softmax_test'", "axis 3"});
}

TEST(ElementwiseTest, Activations) {
  Tensor x = tensor<float>({4}, {-2, -0.5f, 0.5f, 4});
  expect_near_vector(values_of<float>(*run_single("Relu", 14, {&x})), {0, 0, 0.5f, 4});
  expect_near_vector(values_of<float>(*run_single("LeakyRelu", 16, {&x})), {-0.02f, -0.005f, 0.5f, 4});
  expect_near_vector(values_of<float>(*run_single("HardSigmoid", 13, {&x})), {0.1f, 0.4f, 0.6f, 1});
  expect_near_vector(values_of<float>(*run_single("HardSwish", 14, {&x})),
                     {-2.0f / 6, -0.5f * (2.5f / 6), 0.5f * (3.5f / 6), 4});
  const float sqrt2 = std::sqrt(2.0f);
  expect_near_vector(values_of<float>(*run_single("Gelu", 20, {&x})),
                     {-2 * 0.5f * (1 + std::erf(-2 / sqrt2)), -0.25f * (1 + std::erf(-0.5f / sqrt2)),
                      0.25f * (1 + std::erf(0.5f / sqrt2)), 2 * (1 + std::erf(4 / sqrt2))});
  auto tanh_gelu = run_single("Gelu", 20, {&x}, {{"approximate", string_attribute("tanh")}});
  ASSERT_TRUE(tanh_gelu.ok());
  EXPECT_NEAR(values_of<float>(*tanh_gelu)[3], 3.99993f, 1e-4f);
  EXPECT_FALSE(make_node("Gelu", 19, 1).ok()) << "Gelu exists from opset 20";
  EXPECT_FALSE(make_node("Gelu", 20, 1, {{"approximate", string_attribute("fast")}}).ok());

  Tensor extreme = tensor<float>({2}, {-1000, 1000});
  expect_near_vector(values_of<float>(*run_single("Sigmoid", 13, {&extreme})), {0, 1});
}

TEST(ElementwiseTest, IntegerRelu) {
  Tensor x = tensor<int32_t>({3}, {-5, 0, 7});
  EXPECT_EQ(values_of<int32_t>(*run_single("Relu", 14, {&x})), (std::vector<int32_t>{0, 0, 7}));
  EXPECT_EQ(values_of<int32_t>(*run_single("Abs", 13, {&x})), (std::vector<int32_t>{5, 0, 7}));
  EXPECT_EQ(values_of<int32_t>(*run_single("Neg", 13, {&x})), (std::vector<int32_t>{5, 0, -7}));
  EXPECT_EQ(values_of<int32_t>(*run_single("Sign", 13, {&x})), (std::vector<int32_t>{-1, 0, 1}));
  expect_error(run_single("Sqrt", 13, {&x}).status(), {"Sqrt 'Sqrt_test'", "int32"});
}

TEST(ElementwiseTest, RoundIsHalfToEven) {
  Tensor x = tensor<float>({5}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f});
  EXPECT_EQ(values_of<float>(*run_single("Round", 11, {&x})), (std::vector<float>{0, 2, 2, -0.0f, -2}));
}

TEST(ElementwiseTest, VariadicOpsBroadcast) {
  Tensor a = tensor<float>({2}, {1, 5});
  Tensor b = tensor<float>({2, 1}, {3, 0});
  Tensor c = Tensor::scalar<float>(2);
  EXPECT_EQ(values_of<float>(*run_single("Max", 13, {&a, &b, &c})), (std::vector<float>{3, 5, 2, 5}));
  EXPECT_EQ(values_of<float>(*run_single("Min", 13, {&a, &b, &c})), (std::vector<float>{1, 2, 0, 0}));
  EXPECT_EQ(values_of<float>(*run_single("Sum", 13, {&a, &b, &c})), (std::vector<float>{6, 10, 3, 7}));
  EXPECT_EQ(values_of<float>(*run_single("Mean", 13, {&a, &b, &c})), (std::vector<float>{2, 10 / 3.0f, 1, 7 / 3.0f}));
  EXPECT_EQ(values_of<float>(*run_single("Sum", 13, {&a})), (std::vector<float>{1, 5}));
}

TEST(ElementwiseTest, PReluSlopeBroadcastsToInput) {
  Tensor x = tensor<float>({2, 2}, {-1, 1, -2, 2});
  Tensor slope = tensor<float>({2}, {0.5f, 0.25f});
  EXPECT_EQ(values_of<float>(*run_single("PRelu", 16, {&x, &slope})), (std::vector<float>{-0.5f, 1, -1, 2}));
  Tensor big_slope = tensor<float>({3, 2, 2}, std::vector<float>(12, 1));
  expect_error(run_single("PRelu", 16, {&x, &big_slope}).status(), {"PRelu 'PRelu_test'", "slope"});
}

TEST(ElementwiseTest, Float16ComputesThroughFloat32) {
  Tensor a(DataType::kFloat16, {2});
  Tensor b(DataType::kFloat16, {2});
  a.data<uint16_t>()[0] = reference::float_to_half(1.5f);
  a.data<uint16_t>()[1] = reference::float_to_half(-2.0f);
  b.data<uint16_t>()[0] = reference::float_to_half(2.25f);
  b.data<uint16_t>()[1] = reference::float_to_half(0.5f);
  auto y = run_single("Add", 14, {&a, &b});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->dtype(), DataType::kFloat16);
  EXPECT_EQ(reference::half_to_float(y->data<uint16_t>()[0]), 3.75f);
  EXPECT_EQ(reference::half_to_float(y->data<uint16_t>()[1]), -1.5f);
}

TEST(ElementwiseTest, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(reference::float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(reference::float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(reference::float_to_half(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(reference::float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie to even (down)
  EXPECT_EQ(reference::float_to_half(1.0f + 3.0f / 2048), 0x3c02);  // tie to even (up)
  EXPECT_EQ(reference::float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(reference::half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(reference::half_to_float(reference::float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(reference::float_to_bfloat16(1.00390625f), 0x3f80);  // tie to even
  EXPECT_EQ(reference::float_to_bfloat16(1.01171875f), 0x3f82);
  EXPECT_EQ(reference::bfloat16_to_float(0x3f80), 1.0f);
}

TEST(ElementwiseTest, UnparsedAttributesAreAnErrorNotACrash) {
  Node node;
  node.name = "raw";
  node.op_type = "LeakyRelu";
  node.opset = 13;
  node.inputs = {"x"};
  node.outputs = {"y"};
  Tensor x = tensor<float>({1}, {1});
  auto y = run_reference_node(node, {&x});
  expect_error(y.status(), {"LeakyRelu 'raw'", "attributes"});
}

TEST(ElementwiseTest, WrongInputCountIsAnError) {
  Tensor x = tensor<float>({1}, {1});
  expect_error(run_single("Add", 13, {&x}).status(), {"Add 'Add_test'", "inputs"});
}

}  // namespace
}  // namespace qdqrt

namespace qdqrt {
namespace {

TEST(ElementwiseTest, PowOutputFollowsBaseDtypeWithHalfExponent) {
  using namespace testing;
  Tensor base = tensor<float>({1}, {3});
  Tensor exponent(DataType::kFloat16, {1});
  exponent.data<uint16_t>()[0] = reference::float_to_half(2.0f);
  auto y = run_single("Pow", 15, {&base, &exponent});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->dtype(), DataType::kFloat);
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{9}));
}

}  // namespace
}  // namespace qdqrt

namespace qdqrt {
namespace {

TEST(ElementwiseTest, SmallUnsignedMultiplyWraps) {
  using namespace testing;
  Tensor a = tensor<uint16_t>({1}, {65535});
  EXPECT_EQ(values_of<uint16_t>(*run_single("Mul", 14, {&a, &a})), (std::vector<uint16_t>{1}));
  Tensor big = tensor<int64_t>({1}, {std::numeric_limits<int64_t>::max()});
  Tensor one = tensor<int64_t>({1}, {1});
  EXPECT_EQ(values_of<int64_t>(*run_single("Add", 14, {&big, &one})),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

}  // namespace
}  // namespace qdqrt
