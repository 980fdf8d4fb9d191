#include <gtest/gtest.h>

#include <algorithm>

#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using testing::NodeBuilder;
using testing::values_of;

TEST(QuantizeLinear, RoundsHalfToEven) {
  Tensor x = Tensor::from_vector<float>({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.49f, -3.51f});
  Tensor scale = Tensor::scalar<float>(1.0f);
  Tensor zero = Tensor::scalar<int8_t>(0);
  Tensor y = NodeBuilder("QuantizeLinear").run_ok({&x, &scale, &zero});
  ASSERT_EQ(y.dtype(), DataType::kInt8);
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{0, 2, 2, 0, -2, -2, 3, -4}));
}

TEST(QuantizeLinear, SaturatesWithZeroPoint) {
  // uint8, zero-point 128, scale 0.5: x / 0.5 rounded, + 128, clamped to [0, 255].
  Tensor x = Tensor::from_vector<float>({5}, {-100.0f, 100.0f, 0.25f, 63.75f, -64.25f});
  Tensor scale = Tensor::scalar<float>(0.5f);
  Tensor zero = Tensor::scalar<uint8_t>(128);
  Tensor y = NodeBuilder("QuantizeLinear").run_ok({&x, &scale, &zero});
  ASSERT_EQ(y.dtype(), DataType::kUint8);
  // 0.5 -> 0 (even) + 128; 127.5 -> 128 (even) + 128 = 256 -> 255; -128.5 -> -128 + 128 = 0.
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{0, 255, 128, 255, 0}));

  Tensor int8_zero = Tensor::scalar<int8_t>(-3);
  Tensor y8 = NodeBuilder("QuantizeLinear").run_ok({&x, &scale, &int8_zero});
  EXPECT_EQ(values_of<int8_t>(y8), (std::vector<int8_t>{-128, 127, -3, 125, -128}));
}

TEST(QuantizeLinear, OutputTypeFromZeroPointOrOutputDtypeOrUint8) {
  Tensor x = Tensor::from_vector<float>({2}, {-1.0f, 1.0f});
  Tensor scale = Tensor::scalar<float>(1.0f);
  Tensor no_zero_point = NodeBuilder("QuantizeLinear").run_ok({&x, &scale, nullptr});
  ASSERT_EQ(no_zero_point.dtype(), DataType::kUint8);
  EXPECT_EQ(values_of<uint8_t>(no_zero_point), (std::vector<uint8_t>{0, 1}));
  Tensor int8_out = NodeBuilder("QuantizeLinear").attr("output_dtype", 3).run_ok({&x, &scale, nullptr});
  ASSERT_EQ(int8_out.dtype(), DataType::kInt8);
  EXPECT_EQ(values_of<int8_t>(int8_out), (std::vector<int8_t>{-1, 1}));
  // output_dtype must agree with the zero-point's type.
  Tensor zero = Tensor::scalar<uint8_t>(0);
  auto mismatch = NodeBuilder("QuantizeLinear").attr("output_dtype", 3).run({&x, &scale, &zero});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("test_QuantizeLinear"), std::string::npos);
}

TEST(QuantizeLinear, PerAxis) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 4, -1, -2, -4});
  Tensor scale = Tensor::from_vector<float>({3}, {1.0f, 2.0f, 4.0f});
  Tensor zero = Tensor::from_vector<int8_t>({3}, {0, 10, -10});
  Tensor y = NodeBuilder("QuantizeLinear", 13).run_ok({&x, &scale, &zero});
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{1, 11, -9, -1, 9, -11}));
  // axis=0: one scale per row.
  Tensor row_scale = Tensor::from_vector<float>({2}, {1.0f, 0.5f});
  Tensor row_zero = Tensor::from_vector<int8_t>({2}, {0, 0});
  Tensor rows = NodeBuilder("QuantizeLinear", 13).attr("axis", 0).run_ok({&x, &row_scale, &row_zero});
  EXPECT_EQ(values_of<int8_t>(rows), (std::vector<int8_t>{1, 2, 4, -2, -4, -8}));
  // Negative axis.
  Tensor last = NodeBuilder("QuantizeLinear", 13).attr("axis", -1).run_ok({&x, &scale, &zero});
  EXPECT_EQ(values_of<int8_t>(last), values_of<int8_t>(y));
}

TEST(QuantizeLinear, PerAxisNeedsOpset13) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 4, -1, -2, -4});
  Tensor scale = Tensor::from_vector<float>({3}, {1.0f, 2.0f, 4.0f});
  auto result = NodeBuilder("QuantizeLinear", 10).run({&x, &scale, nullptr});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("opset 13"), std::string::npos);
  // And the axis attribute itself does not exist at opset 10.
  EXPECT_FALSE(NodeBuilder("QuantizeLinear", 10).attr("axis", 0).build().ok());
}

TEST(QuantizeLinear, BlockedAlongAxis) {
  // x [2, 5], axis 1, block_size 2: scale [2, 3] (ceil(5 / 2) blocks; the last block has 1 element).
  Tensor x = Tensor::from_vector<float>({2, 5}, {2, 2, 2, 2, 2, 6, 6, 6, 6, 6});
  Tensor scale = Tensor::from_vector<float>({2, 3}, {1, 2, 0.5f, 3, 1, 2});
  Tensor zero = Tensor::from_vector<int8_t>({2, 3}, {0, 1, 0, 0, 0, -1});
  Tensor y = NodeBuilder("QuantizeLinear", 21).attr("axis", 1).attr("block_size", 2).run_ok({&x, &scale, &zero});
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{2, 2, 2, 2, 4, 2, 2, 6, 6, 2}));
  // A wrongly shaped blocked scale is an error naming the node.
  Tensor bad_scale = Tensor::from_vector<float>({2, 2}, {1, 1, 1, 1});
  auto bad = NodeBuilder("QuantizeLinear", 21).attr("axis", 1).attr("block_size", 2).run({&x, &bad_scale, nullptr});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("blocked scale"), std::string::npos);
  // block_size does not exist before opset 21.
  EXPECT_FALSE(NodeBuilder("QuantizeLinear", 19).attr("block_size", 2).build().ok());
}

TEST(QuantizeLinear, Int4Uint4Int16Ranges) {
  Tensor x = Tensor::from_vector<float>({4}, {-20.0f, -8.5f, 7.5f, 40000.0f});
  Tensor scale = Tensor::scalar<float>(1.0f);
  Tensor y4 = NodeBuilder("QuantizeLinear").attr("output_dtype", 22).run_ok({&x, &scale, nullptr});
  ASSERT_EQ(y4.dtype(), DataType::kInt4);
  EXPECT_EQ(values_of<int8_t>(y4), (std::vector<int8_t>{-8, -8, 7, 7}));
  Tensor yu4 = NodeBuilder("QuantizeLinear").attr("output_dtype", 21).run_ok({&x, &scale, nullptr});
  EXPECT_EQ(values_of<uint8_t>(yu4), (std::vector<uint8_t>{0, 0, 8, 15}));
  Tensor zero16 = Tensor::scalar<int16_t>(0);
  Tensor y16 = NodeBuilder("QuantizeLinear").run_ok({&x, &scale, &zero16});
  EXPECT_EQ(values_of<int16_t>(y16), (std::vector<int16_t>{-20, -8, 8, 32767}));
}

TEST(QuantizeLinear, SaturateAttributeIgnoredForIntegers) {
  Tensor x = Tensor::from_vector<float>({2}, {300.0f, -300.0f});
  Tensor scale = Tensor::scalar<float>(1.0f);
  Tensor zero = Tensor::scalar<int8_t>(0);
  Tensor y = NodeBuilder("QuantizeLinear", 19).attr("saturate", 0).run_ok({&x, &scale, &zero});
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{127, -128}));
}

TEST(DequantizeLinear, PerTensorAndPerAxis) {
  Tensor x = Tensor::from_vector<uint8_t>({2, 2}, {0, 128, 255, 130});
  Tensor scale = Tensor::scalar<float>(0.5f);
  Tensor zero = Tensor::scalar<uint8_t>(128);
  testing::expect_near_all({-64.0f, 0.0f, 63.5f, 1.0f}, NodeBuilder("DequantizeLinear").run_ok({&x, &scale, &zero}));
  // Per axis 1 (default): column scales [1, 2], zero-points [0, 128].
  Tensor axis_scale = Tensor::from_vector<float>({2}, {1.0f, 2.0f});
  Tensor axis_zero = Tensor::from_vector<uint8_t>({2}, {0, 128});
  testing::expect_near_all({0.0f, 0.0f, 255.0f, 4.0f},
                           NodeBuilder("DequantizeLinear", 13).run_ok({&x, &axis_scale, &axis_zero}));
  // Absent zero-point means 0.
  testing::expect_near_all({0.0f, 64.0f, 127.5f, 65.0f}, NodeBuilder("DequantizeLinear").run_ok({&x, &scale, nullptr}));
}

TEST(DequantizeLinear, Blocked) {
  // x [2, 4], axis 1, block_size 2: scale/zero-point [2, 2].
  Tensor x = Tensor::from_vector<int8_t>({2, 4}, {1, 2, 3, 4, -1, -2, -3, -4});
  Tensor scale = Tensor::from_vector<float>({2, 2}, {1.0f, 10.0f, 0.5f, 2.0f});
  Tensor zero = Tensor::from_vector<int8_t>({2, 2}, {0, 1, 1, 0});
  testing::expect_near_all({1, 2, 20, 30, -1, -1.5f, -6, -8},
                           NodeBuilder("DequantizeLinear", 21).attr("axis", 1).attr("block_size", 2).run_ok(
                               {&x, &scale, &zero}));
}

TEST(DequantizeLinear, Int4Int16Int32) {
  Tensor x4(DataType::kInt4, {3});
  x4.data<int8_t>()[0] = -8;
  x4.data<int8_t>()[1] = 7;
  x4.data<int8_t>()[2] = 0;
  Tensor scale = Tensor::scalar<float>(0.25f);
  testing::expect_near_all({-2.0f, 1.75f, 0.0f}, NodeBuilder("DequantizeLinear").run_ok({&x4, &scale, nullptr}));
  Tensor x16 = Tensor::from_vector<int16_t>({2}, {-32768, 32767});
  Tensor zero16 = Tensor::scalar<int16_t>(-1);
  testing::expect_near_all({-8191.75f, 8192.0f}, NodeBuilder("DequantizeLinear").run_ok({&x16, &scale, &zero16}));
  Tensor x32 = Tensor::from_vector<int32_t>({2}, {-1000000, 4});
  testing::expect_near_all({-250000.0f, 1.0f}, NodeBuilder("DequantizeLinear").run_ok({&x32, &scale, nullptr}));
}

TEST(DequantizeLinear, ZeroPointTypeMustMatch) {
  Tensor x = Tensor::from_vector<uint8_t>({2}, {1, 2});
  Tensor scale = Tensor::scalar<float>(1.0f);
  Tensor zero = Tensor::scalar<int8_t>(0);
  auto result = NodeBuilder("DequantizeLinear").run({&x, &scale, &zero});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("DequantizeLinear 'test_DequantizeLinear'"), std::string::npos);
  EXPECT_NE(result.status().message().find("int8"), std::string::npos);
}

TEST(QuantizeDequantize, RoundTripIsWithinHalfStep) {
  std::vector<float> values;
  for (int i = -50; i <= 50; ++i) values.push_back(static_cast<float>(i) * 0.037f);
  Tensor x = Tensor::from_vector<float>({static_cast<int64_t>(values.size())}, values);
  Tensor scale = Tensor::scalar<float>(0.02f);
  Tensor zero = Tensor::scalar<int8_t>(5);
  Tensor q = NodeBuilder("QuantizeLinear").run_ok({&x, &scale, &zero});
  Tensor dq = NodeBuilder("DequantizeLinear").run_ok({&q, &scale, &zero});
  for (size_t i = 0; i < values.size(); ++i) {
    float expected = std::clamp(values[i], (-128 - 5) * 0.02f, (127 - 5) * 0.02f);
    EXPECT_NEAR(dq.data<float>()[i], expected, 0.01f + 1e-6f) << values[i];
  }
}

TEST(DynamicQuantizeLinear, ScaleAndZeroPointFromRange) {
  Tensor x = Tensor::from_vector<float>({4}, {-1.0f, 0.0f, 2.0f, 3.0f});
  auto outputs = NodeBuilder("DynamicQuantizeLinear").outputs({"y", "scale", "zero"}).run({&x});
  ASSERT_TRUE(outputs.ok()) << outputs.status().to_string();
  const float scale = 4.0f / 255.0f;
  EXPECT_FLOAT_EQ((*outputs)[1].data<float>()[0], scale);
  EXPECT_EQ((*outputs)[2].data<uint8_t>()[0], 64);  // round(1 / scale) = round(63.75)
  // 2 / scale is 127.49999 in float32 (not 127.5), so it rounds to 127, as numpy computes it.
  EXPECT_EQ(values_of<uint8_t>((*outputs)[0]), (std::vector<uint8_t>{0, 64, 191, 255}));
}

TEST(QLinearConv, PerChannelWeightScalesAndBias) {
  // 1x1 conv, 2 input channels, 2 output channels, one pixel.
  Tensor x = Tensor::from_vector<uint8_t>({1, 2, 1, 1}, {130, 120});
  Tensor x_scale = Tensor::scalar<float>(0.5f);
  Tensor x_zero = Tensor::scalar<uint8_t>(128);
  Tensor w = Tensor::from_vector<int8_t>({2, 2, 1, 1}, {3, -2, 1, 1});
  Tensor w_scale = Tensor::from_vector<float>({2}, {0.1f, 1.0f});
  Tensor w_zero = Tensor::from_vector<int8_t>({2}, {0, 0});
  Tensor y_scale = Tensor::scalar<float>(0.25f);
  Tensor y_zero = Tensor::scalar<int8_t>(-10);
  Tensor bias = Tensor::from_vector<int32_t>({2}, {4, -100});
  Tensor y = NodeBuilder("QLinearConv").run_ok({&x, &x_scale, &x_zero, &w, &w_scale, &w_zero, &y_scale, &y_zero, &bias});
  ASSERT_EQ(y.dtype(), DataType::kInt8);
  // Channel 0: (2*3 + -8*-2) + 4 = 26; 26 * 0.5*0.1/0.25 = 5.2 -> 5; -10 + 5 = -5.
  // Channel 1: (2 + -8) - 100 = -106; -106 * 0.5/0.25 = -212 -> -222 -> saturates to -128.
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{-5, -128}));
}

TEST(ConvInteger, SubtractsZeroPoints) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {2, 2, 2, 3});
  Tensor x_zero = Tensor::scalar<uint8_t>(1);
  Tensor w_zero = Tensor::scalar<uint8_t>(2);
  Tensor y = NodeBuilder("ConvInteger").run_ok({&x, &w, &x_zero, &w_zero});
  ASSERT_EQ(y.dtype(), DataType::kInt32);
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{3}));  // (4 - 1) * (3 - 2)
}

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  Tensor a = Tensor::from_vector<uint8_t>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<int8_t>({2, 2}, {1, 0, 0, 1});
  Tensor a_zero = Tensor::from_vector<uint8_t>({2}, {1, 3});
  Tensor b_zero = Tensor::from_vector<int8_t>({2}, {0, 1});
  Tensor y = NodeBuilder("MatMulInteger").run_ok({&a, &b, &a_zero, &b_zero});
  // A - zp = [[0, 1], [0, 1]]; B - zp = [[1, -1], [0, 0]].
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{0, 0, 0, 0}));
  Tensor y_plain = NodeBuilder("MatMulInteger").run_ok({&a, &b, nullptr, nullptr});
  EXPECT_EQ(values_of<int32_t>(y_plain), (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(QLinearMatMul, RequantizesWithPerColumnScale) {
  Tensor a = Tensor::from_vector<int8_t>({1, 2}, {10, -4});
  Tensor a_scale = Tensor::scalar<float>(0.5f);
  Tensor a_zero = Tensor::scalar<int8_t>(0);
  Tensor b = Tensor::from_vector<int8_t>({2, 2}, {1, 2, 3, 4});
  Tensor b_scale = Tensor::from_vector<float>({2}, {1.0f, 0.25f});
  Tensor b_zero = Tensor::from_vector<int8_t>({2}, {0, 0});
  Tensor y_scale = Tensor::scalar<float>(1.0f);
  Tensor y_zero = Tensor::scalar<uint8_t>(100);
  Tensor y = NodeBuilder("QLinearMatMul").run_ok({&a, &a_scale, &a_zero, &b, &b_scale, &b_zero, &y_scale, &y_zero});
  ASSERT_EQ(y.dtype(), DataType::kUint8);
  // Column 0: (10 - 12) * 0.5 = -1 -> 99. Column 1: (20 - 16) * 0.125 = 0.5 -> 0 (even) -> 100.
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{99, 100}));
}

}  // namespace
}  // namespace qdqrt
