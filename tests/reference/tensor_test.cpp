// Hand-computed checks of the tensor family: opset-dependent attribute/input forms, edge
// cases (negative steps, negative indices, uneven splits, crop pads) and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reference/ops/half_float.h"
#include "tests/reference/op_test_util.h"

namespace qdqrt {
namespace {

using namespace testing;

std::vector<float> iota_values(int64_t count) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i);
  return values;
}

Tensor iota_tensor(Shape shape) { return tensor<float>(shape, iota_values(shape_numel(shape))); }

// Found by the parser fuzzer (UBSan): an empty initializer [huge, huge, 0] overflowed on the way
// to its element count of 0.
TEST(TensorOpsTest, ShapeNumelOfEmptyAndHugeShapes) {
  const int64_t huge = int64_t{1} << 40;
  EXPECT_EQ(shape_numel({huge, huge, 0}), 0);
  EXPECT_EQ(shape_numel({huge, huge}), INT64_MAX);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24);
  EXPECT_EQ(Tensor(DataType::kFloat, {huge, huge, 0}).numel(), 0);
}

TEST(TensorOpsTest, ReshapeCopiesZerosAndInfersMinusOne) {
  Tensor x = iota_tensor({2, 3, 4});
  Tensor shape = tensor<int64_t>({3}, {0, -1, 2});
  auto y = run_single("Reshape", 13, {&x, &shape});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(values_of<float>(*y), values_of<float>(x));

  Tensor bad = tensor<int64_t>({2}, {5, -1});
  expect_error(run_single("Reshape", 13, {&x, &bad}).status(), {"Reshape 'Reshape_test'", "[2, 3, 4]", "[5, -1]"});
  Tensor two_unknown = tensor<int64_t>({2}, {-1, -1});
  expect_error(run_single("Reshape", 13, {&x, &two_unknown}).status(), {"Reshape 'Reshape_test'", "more than one -1"});
}

TEST(TensorOpsTest, ReshapeAllowzeroKeepsLiteralZeros) {
  Tensor empty(DataType::kFloat, {0, 3});
  Tensor shape = tensor<int64_t>({2}, {3, 0});
  auto y = run_single("Reshape", 14, {&empty, &shape}, {{"allowzero", int_attribute(1)}});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->shape(), (Shape{3, 0}));
  // Without allowzero the 0 copies dim 1 (3): 0 elements cannot become [3, 3].
  EXPECT_FALSE(run_single("Reshape", 14, {&empty, &shape}).ok());
}

TEST(TensorOpsTest, Flatten) {
  Tensor x = iota_tensor({2, 3, 4});
  EXPECT_EQ(run_single("Flatten", 13, {&x})->shape(), (Shape{2, 12}));
  EXPECT_EQ(run_single("Flatten", 13, {&x}, {{"axis", int_attribute(0)}})->shape(), (Shape{1, 24}));
  EXPECT_EQ(run_single("Flatten", 13, {&x}, {{"axis", int_attribute(-1)}})->shape(), (Shape{6, 4}));
  EXPECT_EQ(run_single("Flatten", 13, {&x}, {{"axis", int_attribute(3)}})->shape(), (Shape{24, 1}));
  expect_error(run_single("Flatten", 13, {&x}, {{"axis", int_attribute(4)}}).status(), {"Flatten 'Flatten_test'", "axis 4"});
}

TEST(TensorOpsTest, Transpose) {
  Tensor x = iota_tensor({2, 3});
  auto reversed = run_single("Transpose", 13, {&x});
  ASSERT_TRUE(reversed.ok());
  EXPECT_EQ(reversed->shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(*reversed), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor cube = iota_tensor({2, 1, 3});
  auto permuted = run_single("Transpose", 13, {&cube}, {{"perm", ints_attribute({2, 0, 1})}});
  ASSERT_TRUE(permuted.ok());
  EXPECT_EQ(permuted->shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(values_of<float>(*permuted), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  expect_error(run_single("Transpose", 13, {&cube}, {{"perm", ints_attribute({0, 0, 1})}}).status(),
               {"Transpose 'Transpose_test'", "permutation"});
}

TEST(TensorOpsTest, SqueezeAndUnsqueezeAxesByOpset) {
  Tensor x = iota_tensor({1, 3, 1});
  auto attribute_form = run_single("Squeeze", 11, {&x}, {{"axes", ints_attribute({0})}});
  ASSERT_TRUE(attribute_form.ok());
  EXPECT_EQ(attribute_form->shape(), (Shape{3, 1}));
  Tensor axes = tensor<int64_t>({1}, {-1});
  auto input_form = run_single("Squeeze", 13, {&x, &axes});
  ASSERT_TRUE(input_form.ok());
  EXPECT_EQ(input_form->shape(), (Shape{1, 3}));
  EXPECT_EQ(run_single("Squeeze", 13, {&x})->shape(), (Shape{3}));
  Tensor bad_axis = tensor<int64_t>({1}, {1});
  expect_error(run_single("Squeeze", 13, {&x, &bad_axis}).status(), {"Squeeze 'Squeeze_test'", "axis 1 of size 3"});
  EXPECT_FALSE(make_node("Squeeze", 13, 1, {{"axes", ints_attribute({0})}}).ok());

  Tensor v = iota_tensor({3});
  auto unsqueezed = run_single("Unsqueeze", 11, {&v}, {{"axes", ints_attribute({0, -1})}});
  ASSERT_TRUE(unsqueezed.ok()) << unsqueezed.status().to_string();
  EXPECT_EQ(unsqueezed->shape(), (Shape{1, 3, 1}));
  Tensor unsqueeze_axes = tensor<int64_t>({2}, {2, 0});
  auto from_input = run_single("Unsqueeze", 13, {&v, &unsqueeze_axes});
  ASSERT_TRUE(from_input.ok());
  EXPECT_EQ(from_input->shape(), (Shape{1, 3, 1}));
  EXPECT_FALSE(make_node("Unsqueeze", 11, 1).ok()) << "axes attribute is required before 13";
  Tensor repeated = tensor<int64_t>({2}, {0, 0});
  expect_error(run_single("Unsqueeze", 13, {&v, &repeated}).status(), {"Unsqueeze 'Unsqueeze_test'", "repeated"});
}

TEST(TensorOpsTest, Concat) {
  Tensor a = iota_tensor({2, 1});
  Tensor b = tensor<float>({2, 2}, {10, 11, 12, 13});
  auto y = run_single("Concat", 13, {&a, &b}, {{"axis", int_attribute(-1)}});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{0, 10, 11, 1, 12, 13}));
  Tensor rank3 = iota_tensor({2, 1, 1});
  expect_error(run_single("Concat", 13, {&a, &rank3}, {{"axis", int_attribute(0)}}).status(),
               {"Concat 'Concat_test'", "input 1", "[2, 1, 1]"});
  Tensor ints = tensor<int32_t>({2, 1}, {1, 2});
  expect_error(run_single("Concat", 13, {&a, &ints}, {{"axis", int_attribute(0)}}).status(),
               {"Concat 'Concat_test'", "int32"});
  EXPECT_FALSE(make_node("Concat", 13, 2).ok()) << "axis is required";
}

TEST(TensorOpsTest, SplitSizesByOpset) {
  Tensor x = iota_tensor({5});
  auto attribute_form = run_op("Split", 11, {&x}, {{"split", ints_attribute({2, 3})}}, 2);
  ASSERT_TRUE(attribute_form.ok()) << attribute_form.status().to_string();
  EXPECT_EQ(values_of<float>((*attribute_form)[1]), (std::vector<float>{2, 3, 4}));

  Tensor sizes = tensor<int64_t>({2}, {4, 1});
  auto input_form = run_op("Split", 13, {&x, &sizes}, {}, 2);
  ASSERT_TRUE(input_form.ok());
  EXPECT_EQ(values_of<float>((*input_form)[0]), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(values_of<float>((*input_form)[1]), (std::vector<float>{4}));

  expect_error(run_op("Split", 13, {&x}, {}, 2).status(), {"Split 'Split_test'", "evenly"});
  Tensor wrong_sum = tensor<int64_t>({2}, {1, 1});
  expect_error(run_op("Split", 13, {&x, &wrong_sum}, {}, 2).status(), {"Split 'Split_test'", "sum to 2"});

  // Opset 18 num_outputs: parts of ceil(5 / 3) = 2, the last one smaller.
  auto uneven = run_op("Split", 18, {&x}, {{"num_outputs", int_attribute(3)}}, 3);
  ASSERT_TRUE(uneven.ok()) << uneven.status().to_string();
  EXPECT_EQ((*uneven)[0].shape(), (Shape{2}));
  EXPECT_EQ((*uneven)[1].shape(), (Shape{2}));
  EXPECT_EQ(values_of<float>((*uneven)[2]), (std::vector<float>{4}));
}

TEST(TensorOpsTest, SliceStepsAndClamping) {
  Tensor x = iota_tensor({2, 5});
  Tensor starts = tensor<int64_t>({2}, {0, -1});
  Tensor ends = tensor<int64_t>({2}, {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()});
  Tensor axes = tensor<int64_t>({2}, {0, 1});
  Tensor steps = tensor<int64_t>({2}, {1, -2});
  auto reversed = run_single("Slice", 13, {&x, &starts, &ends, &axes, &steps});
  ASSERT_TRUE(reversed.ok()) << reversed.status().to_string();
  EXPECT_EQ(reversed->shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(*reversed), (std::vector<float>{4, 2, 0, 9, 7, 5}));

  // Default axes and steps; out-of-range ends clamp.
  Tensor start1 = tensor<int64_t>({2}, {1, 3});
  Tensor end1 = tensor<int64_t>({2}, {100, 100});
  auto tail = run_single("Slice", 10, {&x, &start1, &end1});
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->shape(), (Shape{1, 2}));
  EXPECT_EQ(values_of<float>(*tail), (std::vector<float>{8, 9}));

  Tensor zero_step = tensor<int64_t>({2}, {1, 0});
  expect_error(run_single("Slice", 13, {&x, &starts, &ends, &axes, &zero_step}).status(), {"Slice 'Slice_test'", "step"});
}

TEST(TensorOpsTest, GatherNegativeIndicesAndErrors) {
  Tensor data = iota_tensor({3, 2});
  Tensor indices = tensor<int64_t>({2, 2}, {0, -1, 1, 1});
  auto rows = run_single("Gather", 13, {&data, &indices});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values_of<float>(*rows), (std::vector<float>{0, 1, 4, 5, 2, 3, 2, 3}));
  Tensor column = Tensor::scalar<int32_t>(1);
  auto columns = run_single("Gather", 13, {&data, &column}, {{"axis", int_attribute(1)}});
  ASSERT_TRUE(columns.ok());
  EXPECT_EQ(columns->shape(), (Shape{3}));
  EXPECT_EQ(values_of<float>(*columns), (std::vector<float>{1, 3, 5}));
  Tensor out_of_range = tensor<int64_t>({1}, {3});
  expect_error(run_single("Gather", 13, {&data, &out_of_range}).status(), {"Gather 'Gather_test'", "index 3", "size 3"});
}

TEST(TensorOpsTest, GatherElements) {
  Tensor data = iota_tensor({2, 2});
  Tensor indices = tensor<int64_t>({2, 2}, {0, 0, -1, 0});
  auto y = run_single("GatherElements", 13, {&data, &indices}, {{"axis", int_attribute(1)}});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{0, 0, 3, 2}));
  Tensor bad = tensor<int64_t>({2, 2}, {0, 2, 0, 0});
  expect_error(run_single("GatherElements", 13, {&data, &bad}, {{"axis", int_attribute(1)}}).status(),
               {"GatherElements 'GatherElements_test'", "index 2"});
}

TEST(TensorOpsTest, ScatterNDReplacesAndReducesSlices) {
  Tensor data = iota_tensor({2, 3});  // 0 1 2 / 3 4 5
  // Whole rows (k = 1): row 1 replaced, then row -2 (= 0).
  Tensor rows = tensor<int64_t>({2, 1}, {1, -2});
  Tensor row_updates = tensor<float>({2, 3}, {10, 11, 12, 20, 21, 22});
  auto y = run_single("ScatterND", 13, {&data, &rows, &row_updates});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{20, 21, 22, 10, 11, 12}));
  // Elements (k = 2), with each reduction; the same element twice accumulates in order.
  Tensor elements = tensor<int64_t>({3, 2}, {0, 1, 1, 2, 0, 1});
  Tensor element_updates = tensor<float>({3}, {2, 3, 4});
  const std::vector<std::pair<const char*, std::vector<float>>> expected = {
      {"add", {0, 7, 2, 3, 4, 8}}, {"mul", {0, 8, 2, 3, 4, 15}}, {"max", {0, 4, 2, 3, 4, 5}}, {"min", {0, 1, 2, 3, 4, 3}}};
  for (const auto& [reduction, values] : expected) {
    auto reduced = run_single("ScatterND", 18, {&data, &elements, &element_updates},
                              {{"reduction", string_attribute(reduction)}});
    ASSERT_TRUE(reduced.ok()) << reduction << ": " << reduced.status().to_string();
    EXPECT_EQ(values_of<float>(*reduced), values) << reduction;
  }
  // Integers wrap as numpy's.
  Tensor small = tensor<int8_t>({2}, {120, 1});
  Tensor first = tensor<int64_t>({1, 1}, {0});
  Tensor ten = tensor<int8_t>({1}, {10});
  auto wrapped = run_single("ScatterND", 16, {&small, &first, &ten}, {{"reduction", string_attribute("add")}});
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().to_string();
  EXPECT_EQ(values_of<int8_t>(*wrapped), (std::vector<int8_t>{-126, 1}));
}

TEST(TensorOpsTest, ScatterNDRefusesBadIndicesShapesAndReductions) {
  Tensor data = iota_tensor({2, 3});
  Tensor updates = tensor<float>({1, 3}, {1, 1, 1});
  Tensor out_of_range = tensor<int64_t>({1, 1}, {2});
  expect_error(run_single("ScatterND", 13, {&data, &out_of_range, &updates}).status(),
               {"ScatterND 'ScatterND_test'", "index 2", "size 2"});
  Tensor too_negative = tensor<int64_t>({1, 1}, {-3});
  expect_error(run_single("ScatterND", 13, {&data, &too_negative, &updates}).status(), {"ScatterND", "index -3"});
  Tensor too_long = tensor<int64_t>({1, 3}, {0, 0, 0});
  expect_error(run_single("ScatterND", 13, {&data, &too_long, &updates}).status(), {"ScatterND", "index 3 dims"});
  Tensor row = tensor<int64_t>({1, 1}, {0});
  Tensor wrong_updates = tensor<float>({1, 2}, {1, 1});
  expect_error(run_single("ScatterND", 13, {&data, &row, &wrong_updates}).status(), {"ScatterND", "updates [1, 2]"});
  expect_error(run_single("ScatterND", 16, {&data, &row, &updates}, {{"reduction", string_attribute("max")}}).status(),
               {"ScatterND", "'max' needs opset 18"});
  expect_error(run_single("ScatterND", 18, {&data, &row, &updates}, {{"reduction", string_attribute("sum")}}).status(),
               {"ScatterND", "'sum' is not one of"});
}

TEST(TensorOpsTest, ShapeStartEndAndSize) {
  Tensor x(DataType::kFloat, {2, 3, 4, 5});
  EXPECT_EQ(values_of<int64_t>(*run_single("Shape", 13, {&x})), (std::vector<int64_t>{2, 3, 4, 5}));
  auto middle = run_single("Shape", 15, {&x}, {{"start", int_attribute(1)}, {"end", int_attribute(-1)}});
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(values_of<int64_t>(*middle), (std::vector<int64_t>{3, 4}));
  auto clamped = run_single("Shape", 15, {&x}, {{"start", int_attribute(-10)}, {"end", int_attribute(10)}});
  EXPECT_EQ(values_of<int64_t>(*clamped), (std::vector<int64_t>{2, 3, 4, 5}));
  auto size = run_single("Size", 13, {&x});
  EXPECT_EQ(size->shape(), (Shape{}));
  EXPECT_EQ(values_of<int64_t>(*size), (std::vector<int64_t>{120}));
}

TEST(TensorOpsTest, CastTruncatesSaturatesAndWraps) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = tensor<float>({6}, {-1.7f, 2.9f, 300.0f, -300.0f, nan, 0.0f});
  auto to_int8 = run_single("Cast", 13, {&x}, {{"to", int_attribute(static_cast<int64_t>(DataType::kInt8))}});
  ASSERT_TRUE(to_int8.ok()) << to_int8.status().to_string();
  EXPECT_EQ(values_of<int8_t>(*to_int8), (std::vector<int8_t>{-1, 2, 127, -128, 0, 0}));
  auto to_bool = run_single("Cast", 13, {&x}, {{"to", int_attribute(static_cast<int64_t>(DataType::kBool))}});
  EXPECT_EQ(values_of<bool>(*to_bool), (std::vector<bool>{true, true, true, true, true, false}));

  Tensor wide = tensor<int64_t>({2}, {300, -1});
  auto to_uint8 = run_single("Cast", 13, {&wide}, {{"to", int_attribute(static_cast<int64_t>(DataType::kUint8))}});
  EXPECT_EQ(values_of<uint8_t>(*to_uint8), (std::vector<uint8_t>{44, 255}));  // modulo 256, like numpy

  auto to_half = run_single("Cast", 19, {&x}, {{"to", int_attribute(static_cast<int64_t>(DataType::kFloat16))}});
  ASSERT_TRUE(to_half.ok());
  EXPECT_EQ(to_half->dtype(), DataType::kFloat16);
  EXPECT_EQ(reference::half_to_float(to_half->data<uint16_t>()[2]), 300.0f);
  auto back = run_single("Cast", 13, {&*to_half}, {{"to", int_attribute(static_cast<int64_t>(DataType::kDouble))}});
  EXPECT_NEAR(values_of<double>(*back)[0], -1.7, 1e-3);

  Tensor flags = tensor<bool>({2}, {true, false});
  auto like = tensor<int32_t>({1}, {0});
  auto cast_like = run_single("CastLike", 15, {&flags, &like});
  EXPECT_EQ(values_of<int32_t>(*cast_like), (std::vector<int32_t>{1, 0}));
  EXPECT_FALSE(make_node("Cast", 13, 1, {{"to", int_attribute(8)}}).ok()) << "string is unsupported";
  EXPECT_FALSE(make_node("Cast", 13, 1, {{"to", int_attribute(99)}}).ok());
}

TEST(TensorOpsTest, ConstantForms) {
  auto floats = run_op("Constant", 13, {}, {{"value_floats", floats_attribute({1.5f, 2.5f})}});
  ASSERT_TRUE(floats.ok()) << floats.status().to_string();
  EXPECT_EQ((*floats)[0].shape(), (Shape{2}));
  EXPECT_EQ(values_of<float>((*floats)[0]), (std::vector<float>{1.5f, 2.5f}));
  auto scalar = run_op("Constant", 13, {}, {{"value_int", int_attribute(7)}});
  EXPECT_EQ((*scalar)[0].shape(), (Shape{}));
  EXPECT_EQ(values_of<int64_t>((*scalar)[0]), (std::vector<int64_t>{7}));
  auto from_tensor = run_op("Constant", 13, {}, {{"value", tensor_attribute(tensor<int8_t>({2}, {-1, 1}))}});
  EXPECT_EQ(values_of<int8_t>((*from_tensor)[0]), (std::vector<int8_t>{-1, 1}));
  EXPECT_FALSE(make_node("Constant", 13, 0).ok()) << "a value is required";
  EXPECT_FALSE(make_node("Constant", 13, 0, {{"value_int", int_attribute(1)}, {"value_float", float_attribute(1)}}).ok());
}

TEST(TensorOpsTest, ConstantOfShape) {
  Tensor shape = tensor<int64_t>({2}, {2, 3});
  auto zeros = run_single("ConstantOfShape", 13, {&shape});
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(zeros->dtype(), DataType::kFloat);
  EXPECT_EQ(values_of<float>(*zeros), std::vector<float>(6, 0.0f));
  auto sevens = run_single("ConstantOfShape", 13, {&shape}, {{"value", tensor_attribute(tensor<int64_t>({1}, {7}))}});
  EXPECT_EQ(values_of<int64_t>(*sevens), std::vector<int64_t>(6, 7));
  Tensor empty = tensor<int64_t>({0}, {});
  EXPECT_EQ(run_single("ConstantOfShape", 13, {&empty})->shape(), (Shape{}));
  Tensor negative = tensor<int64_t>({1}, {-2});
  expect_error(run_single("ConstantOfShape", 13, {&negative}).status(), {"ConstantOfShape 'ConstantOfShape_test'", "negative"});
}

TEST(TensorOpsTest, DropoutIsIdentityInInference) {
  Tensor x = iota_tensor({2, 2});
  auto old_style = run_op("Dropout", 10, {&x}, {{"ratio", float_attribute(0.3f)}}, 2);
  ASSERT_TRUE(old_style.ok());
  EXPECT_EQ(values_of<float>((*old_style)[0]), values_of<float>(x));
  EXPECT_EQ(values_of<bool>((*old_style)[1]), std::vector<bool>(4, true));
  Tensor ratio = Tensor::scalar<float>(0.5f);
  Tensor training = Tensor::scalar<bool>(true);
  expect_error(run_op("Dropout", 13, {&x, &ratio, &training}).status(), {"Dropout 'Dropout_test'", "training"});
  Tensor inference = Tensor::scalar<bool>(false);
  EXPECT_TRUE(run_op("Dropout", 13, {&x, &ratio, &inference}).ok());
}

TEST(TensorOpsTest, PadModesAndForms) {
  Tensor x = tensor<float>({1, 3}, {1, 2, 3});
  // Opset 10: pads and value are attributes.
  auto constant = run_single("Pad", 10, {&x}, {{"pads", ints_attribute({0, 1, 0, 2})}, {"value", float_attribute(9)}});
  ASSERT_TRUE(constant.ok()) << constant.status().to_string();
  EXPECT_EQ(values_of<float>(*constant), (std::vector<float>{9, 1, 2, 3, 9, 9}));

  Tensor pads = tensor<int64_t>({4}, {0, 2, 0, 2});
  auto reflect = run_single("Pad", 13, {&x, &pads}, {{"mode", string_attribute("reflect")}});
  ASSERT_TRUE(reflect.ok());
  EXPECT_EQ(values_of<float>(*reflect), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  auto edge = run_single("Pad", 13, {&x, &pads}, {{"mode", string_attribute("edge")}});
  EXPECT_EQ(values_of<float>(*edge), (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));

  // Opset 18 axes input; opset 19 wrap mode.
  Tensor axis_pads = tensor<int64_t>({2}, {2, 1});
  Tensor axes = tensor<int64_t>({1}, {-1});
  Tensor value = Tensor::scalar<float>(-1);
  auto on_axis = run_single("Pad", 18, {&x, &axis_pads, &value, &axes});
  ASSERT_TRUE(on_axis.ok()) << on_axis.status().to_string();
  EXPECT_EQ(values_of<float>(*on_axis), (std::vector<float>{-1, -1, 1, 2, 3, -1}));
  auto wrap = run_single("Pad", 19, {&x, &axis_pads, nullptr, &axes}, {{"mode", string_attribute("wrap")}});
  ASSERT_TRUE(wrap.ok()) << wrap.status().to_string();
  EXPECT_EQ(values_of<float>(*wrap), (std::vector<float>{2, 3, 1, 2, 3, 1}));
  EXPECT_FALSE(make_node("Pad", 18, 2, {{"mode", string_attribute("wrap")}}).ok()) << "wrap exists from opset 19";

  // Negative pads crop.
  Tensor crop = tensor<int64_t>({4}, {0, -1, 0, 0});
  EXPECT_EQ(values_of<float>(*run_single("Pad", 13, {&x, &crop})), (std::vector<float>{2, 3}));
  Tensor short_pads = tensor<int64_t>({2}, {1, 1});
  expect_error(run_single("Pad", 13, {&x, &short_pads}).status(), {"Pad 'Pad_test'", "pads has 2 values"});
}

TEST(TensorOpsTest, ExpandTileRangeNonZero) {
  Tensor x = tensor<float>({2, 1}, {1, 2});
  Tensor shape = tensor<int64_t>({3}, {2, 1, 3});
  auto expanded = run_single("Expand", 13, {&x, &shape});
  ASSERT_TRUE(expanded.ok());
  EXPECT_EQ(expanded->shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(values_of<float>(*expanded), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  Tensor bad_shape = tensor<int64_t>({1}, {3});
  EXPECT_EQ(run_single("Expand", 13, {&x, &bad_shape})->shape(), (Shape{2, 3}));
  Tensor incompatible = tensor<int64_t>({2}, {3, 1});
  expect_error(run_single("Expand", 13, {&x, &incompatible}).status(), {"Expand 'Expand_test'", "broadcast"});

  Tensor repeats = tensor<int64_t>({2}, {2, 2});
  auto tiled = run_single("Tile", 13, {&x, &repeats});
  ASSERT_TRUE(tiled.ok());
  EXPECT_EQ(tiled->shape(), (Shape{4, 2}));
  EXPECT_EQ(values_of<float>(*tiled), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));

  Tensor start = Tensor::scalar<int32_t>(10), limit = Tensor::scalar<int32_t>(3), delta = Tensor::scalar<int32_t>(-3);
  EXPECT_EQ(values_of<int32_t>(*run_single("Range", 11, {&start, &limit, &delta})), (std::vector<int32_t>{10, 7, 4}));
  Tensor fstart = Tensor::scalar<float>(0), flimit = Tensor::scalar<float>(1), fdelta = Tensor::scalar<float>(0.25f);
  EXPECT_EQ(values_of<float>(*run_single("Range", 11, {&fstart, &flimit, &fdelta})), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  Tensor zero = Tensor::scalar<int32_t>(0);
  expect_error(run_single("Range", 11, {&start, &limit, &zero}).status(), {"Range 'Range_test'", "delta"});

  Tensor sparse = tensor<int32_t>({2, 2}, {0, 5, 7, 0});
  auto nonzero = run_single("NonZero", 13, {&sparse});
  ASSERT_TRUE(nonzero.ok());
  EXPECT_EQ(nonzero->shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<int64_t>(*nonzero), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(TensorOpsTest, OutputsFollowActualBatchSize) {
  // The same Reshape/Flatten nodes serve batch 1 and batch 4.
  Tensor shape = tensor<int64_t>({2}, {0, -1});
  for (int64_t batch : {1, 4}) {
    Tensor x = iota_tensor({batch, 2, 3});
    auto y = run_single("Reshape", 13, {&x, &shape});
    ASSERT_TRUE(y.ok());
    EXPECT_EQ(y->shape(), (Shape{batch, 6}));
  }
}

}  // namespace
}  // namespace qdqrt

namespace qdqrt {
namespace {

TEST(TensorOpsTest, ExtremeValuesAreHandled) {
  using namespace testing;
  Tensor x = iota_tensor({2, 3});
  Tensor huge = tensor<int64_t>({3}, {int64_t{1} << 40, int64_t{1} << 40, -1});
  expect_error(run_single("Reshape", 13, {&x, &huge}).status(), {"Reshape 'Reshape_test'", "too large"});
  Tensor starts = tensor<int64_t>({1}, {-1});
  Tensor ends = tensor<int64_t>({1}, {std::numeric_limits<int64_t>::min()});
  Tensor axes = tensor<int64_t>({1}, {1});
  Tensor steps = tensor<int64_t>({1}, {std::numeric_limits<int64_t>::min()});
  auto last_column = run_single("Slice", 13, {&x, &starts, &ends, &axes, &steps});
  ASSERT_TRUE(last_column.ok());
  EXPECT_EQ(values_of<float>(*last_column), (std::vector<float>{2, 5}));
  Tensor empty(DataType::kFloat, {2, 0});
  auto softmax = run_single("Softmax", 13, {&empty});
  ASSERT_TRUE(softmax.ok());
  EXPECT_EQ(softmax->shape(), (Shape{2, 0}));
}

}  // namespace
}  // namespace qdqrt

namespace qdqrt {
namespace {

TEST(TensorOpsTest, DepthToSpaceRoundTripsSpaceToDepth) {
  using namespace testing;
  Tensor x = iota_tensor({1, 2, 4, 4});
  auto depth = run_single("SpaceToDepth", 13, {&x}, {{"blocksize", int_attribute(2)}});
  ASSERT_TRUE(depth.ok());
  EXPECT_EQ(depth->shape(), (Shape{1, 8, 2, 2}));
  // Channel 1 of the output holds block offset (0, 0) of input channel 1: elements 16, 18, 24, 26.
  EXPECT_EQ(values_of<float>(*depth)[4], 16);
  auto back = run_single("DepthToSpace", 13, {&*depth}, {{"blocksize", int_attribute(2)}});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(values_of<float>(*back), values_of<float>(x));
  Tensor odd = iota_tensor({1, 3, 2, 2});
  expect_error(run_single("DepthToSpace", 13, {&odd}, {{"blocksize", int_attribute(2)}}).status(),
               {"DepthToSpace 'DepthToSpace_test'", "channels 3"});
  EXPECT_FALSE(make_node("DepthToSpace", 13, 1, {{"blocksize", int_attribute(2)}, {"mode", string_attribute("XYZ")}}).ok());
}

TEST(ReduceTest, CumSumExclusiveReverse) {
  using namespace testing;
  Tensor x = tensor<int32_t>({4}, {1, 2, 3, 4});
  Tensor axis = Tensor::scalar<int64_t>(0);
  EXPECT_EQ(values_of<int32_t>(*run_single("CumSum", 14, {&x, &axis})), (std::vector<int32_t>{1, 3, 6, 10}));
  auto exclusive_reverse =
      run_single("CumSum", 14, {&x, &axis}, {{"exclusive", int_attribute(1)}, {"reverse", int_attribute(1)}});
  EXPECT_EQ(values_of<int32_t>(*exclusive_reverse), (std::vector<int32_t>{9, 7, 4, 0}));
}

}  // namespace
}  // namespace qdqrt
