// tensor_from_proto for every storage form, and read_tensor_pb_file.
#include <gtest/gtest.h>

#include <cstring>

#include "parser/onnx_loader.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

onnx::TensorProto make_proto(int32_t data_type, std::vector<int64_t> dims) {
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(data_type);
  for (int64_t dim : dims) proto.add_dims(dim);
  return proto;
}

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <class T>
std::vector<T> tensor_values(const Tensor& tensor) {
  const T* data = static_cast<const T*>(tensor.raw_data());
  return std::vector<T>(data, data + tensor.numel());
}

TEST(TensorFromProto, RawDataOfEachDtype) {
  {
    auto proto = make_proto(onnx::TensorProto::FLOAT, {2, 2});
    proto.set_raw_data(raw_bytes<float>({1.5f, -2.0f, 0.0f, 7.25f}));
    auto tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
    EXPECT_EQ(tensor->shape(), (Shape{2, 2}));
    EXPECT_EQ(tensor_values<float>(*tensor), (std::vector<float>{1.5f, -2.0f, 0.0f, 7.25f}));
  }
  {
    auto proto = make_proto(onnx::TensorProto::INT8, {3});
    proto.set_raw_data(raw_bytes<int8_t>({-128, 0, 127}));
    auto tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(tensor_values<int8_t>(*tensor), (std::vector<int8_t>{-128, 0, 127}));
  }
  {
    auto proto = make_proto(onnx::TensorProto::UINT8, {2});
    proto.set_raw_data(raw_bytes<uint8_t>({0, 255}));
    auto tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(tensor_values<uint8_t>(*tensor), (std::vector<uint8_t>{0, 255}));
  }
  {
    auto proto = make_proto(onnx::TensorProto::INT64, {2});
    proto.set_raw_data(raw_bytes<int64_t>({-5, int64_t{1} << 40}));
    auto tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(tensor->to_int64_vector(), (std::vector<int64_t>{-5, int64_t{1} << 40}));
  }
  {
    auto proto = make_proto(onnx::TensorProto::BOOL, {3});
    proto.set_raw_data(raw_bytes<uint8_t>({0, 1, 7}));  // any non-zero byte is true
    auto tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(tensor_values<uint8_t>(*tensor), (std::vector<uint8_t>{0, 1, 1}));
  }
  {
    auto proto = make_proto(onnx::TensorProto::FLOAT16, {2});
    proto.set_raw_data(raw_bytes<uint16_t>({0x3C00, 0xC000}));  // 1.0, -2.0
    auto tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(tensor->dtype(), DataType::kFloat16);
    EXPECT_EQ(tensor_values<uint16_t>(*tensor), (std::vector<uint16_t>{0x3C00, 0xC000}));
  }
}

TEST(TensorFromProto, Int4AndUint4AreUnpackedOnePerByte) {
  // Low nibble first: bytes 0x9F, 0x07 hold int4 values -1, -7, 7 (the last high nibble is padding).
  auto int4 = make_proto(static_cast<int32_t>(DataType::kInt4), {3});
  int4.set_raw_data(std::string("\x9F\x07", 2));
  auto tensor = tensor_from_proto(int4);
  ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
  EXPECT_EQ(tensor->dtype(), DataType::kInt4);
  EXPECT_EQ(tensor_values<int8_t>(*tensor), (std::vector<int8_t>{-1, -7, 7}));

  auto uint4 = make_proto(static_cast<int32_t>(DataType::kUint4), {4});
  uint4.add_int32_data(0x9F);  // int32_data packs two 4-bit values per entry as well
  uint4.add_int32_data(0x21);
  tensor = tensor_from_proto(uint4);
  ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
  EXPECT_EQ(tensor_values<uint8_t>(*tensor), (std::vector<uint8_t>{15, 9, 1, 2}));

  int4.set_raw_data(std::string("\x9F", 1));
  EXPECT_LOAD_ERROR(tensor_from_proto(int4), "raw_data has 1 bytes", "need 2");
}

TEST(TensorFromProto, TypedFields) {
  auto floats = make_proto(onnx::TensorProto::FLOAT, {2});
  floats.add_float_data(0.25f);
  floats.add_float_data(-3.0f);
  auto tensor = tensor_from_proto(floats);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<float>(*tensor), (std::vector<float>{0.25f, -3.0f}));

  auto int8 = make_proto(onnx::TensorProto::INT8, {2});
  int8.add_int32_data(-100);
  int8.add_int32_data(100);
  tensor = tensor_from_proto(int8);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<int8_t>(*tensor), (std::vector<int8_t>{-100, 100}));

  for (auto [dtype, low, high] : {std::tuple{onnx::TensorProto::UINT8, 0, 255},
                                  std::tuple{onnx::TensorProto::INT16, -32768, 32767},
                                  std::tuple{onnx::TensorProto::UINT16, 0, 65535},
                                  std::tuple{onnx::TensorProto::INT32, -7, 1 << 30}}) {
    auto proto = make_proto(dtype, {2});
    proto.add_int32_data(low);
    proto.add_int32_data(high);
    tensor = tensor_from_proto(proto);
    ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
    EXPECT_EQ(tensor->to_int64_vector(), (std::vector<int64_t>{low, high}));
  }

  auto bools = make_proto(onnx::TensorProto::BOOL, {2});
  bools.add_int32_data(1);
  bools.add_int32_data(0);
  tensor = tensor_from_proto(bools);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<uint8_t>(*tensor), (std::vector<uint8_t>{1, 0}));

  auto halves = make_proto(onnx::TensorProto::FLOAT16, {1});
  halves.add_int32_data(0x3C00);
  tensor = tensor_from_proto(halves);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<uint16_t>(*tensor), (std::vector<uint16_t>{0x3C00}));

  auto int64 = make_proto(onnx::TensorProto::INT64, {1});
  int64.add_int64_data(-(int64_t{1} << 50));
  tensor = tensor_from_proto(int64);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->to_int64_vector(), (std::vector<int64_t>{-(int64_t{1} << 50)}));

  auto doubles = make_proto(onnx::TensorProto::DOUBLE, {1});
  doubles.add_double_data(1e300);
  tensor = tensor_from_proto(doubles);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<double>(*tensor), (std::vector<double>{1e300}));

  auto uint32 = make_proto(onnx::TensorProto::UINT32, {1});
  uint32.add_uint64_data(4000000000u);
  tensor = tensor_from_proto(uint32);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<uint32_t>(*tensor), (std::vector<uint32_t>{4000000000u}));

  auto uint64 = make_proto(onnx::TensorProto::UINT64, {1});
  uint64.add_uint64_data(~uint64_t{0});
  tensor = tensor_from_proto(uint64);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor_values<uint64_t>(*tensor), (std::vector<uint64_t>{~uint64_t{0}}));

  auto scalar = make_proto(onnx::TensorProto::FLOAT, {});
  scalar.add_float_data(9.0f);
  tensor = tensor_from_proto(scalar);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->rank(), 0);
  EXPECT_EQ(tensor->numel(), 1);

  auto empty = make_proto(onnx::TensorProto::FLOAT, {0, 3});
  tensor = tensor_from_proto(empty);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->numel(), 0);
}

TEST(TensorFromProto, RejectsInconsistentData) {
  auto count = make_proto(onnx::TensorProto::FLOAT, {3});
  count.add_float_data(1.0f);
  EXPECT_LOAD_ERROR(tensor_from_proto(count), "tensor 't'", "float_data has 1 values", "need 3");

  auto range = make_proto(onnx::TensorProto::INT8, {1});
  range.add_int32_data(300);
  EXPECT_LOAD_ERROR(tensor_from_proto(range), "int32_data[0] = 300", "out of range for int8");

  auto wrong_field = make_proto(onnx::TensorProto::INT8, {1});
  wrong_field.add_float_data(1.0f);
  EXPECT_LOAD_ERROR(tensor_from_proto(wrong_field), "float_data cannot hold int8");

  auto two_fields = make_proto(onnx::TensorProto::FLOAT, {1});
  two_fields.add_float_data(1.0f);
  two_fields.set_raw_data(raw_bytes<float>({1.0f}));
  EXPECT_LOAD_ERROR(tensor_from_proto(two_fields), "more than one data field");

  auto no_data = make_proto(onnx::TensorProto::FLOAT, {2});
  EXPECT_LOAD_ERROR(tensor_from_proto(no_data), "has no data");

  auto strings = make_proto(onnx::TensorProto::STRING, {1});
  strings.add_string_data("hello");
  auto result = tensor_from_proto(strings);
  EXPECT_LOAD_ERROR(result, "string tensors are not supported");
  EXPECT_EQ(result.status().code(), StatusCode::kUnsupported);

  auto unknown = make_proto(14, {1});  // COMPLEX128
  EXPECT_LOAD_ERROR(tensor_from_proto(unknown), "data type 14 is not supported");

  auto negative = make_proto(onnx::TensorProto::FLOAT, {2, -3});
  EXPECT_LOAD_ERROR(tensor_from_proto(negative), "dimension 1 is negative (-3)");

  auto overflow = make_proto(onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_LOAD_ERROR(tensor_from_proto(overflow), "overflows");

  auto bytes_overflow = make_proto(onnx::TensorProto::DOUBLE, {int64_t{1} << 61});
  EXPECT_LOAD_ERROR(tensor_from_proto(bytes_overflow), "overflows");

  // Huge dims with little data are rejected before anything is allocated.
  auto huge_raw = make_proto(onnx::TensorProto::FLOAT, {int64_t{1} << 20, int64_t{1} << 20});
  huge_raw.set_raw_data(std::string(4, '\0'));
  EXPECT_LOAD_ERROR(tensor_from_proto(huge_raw), "raw_data has 4 bytes");
  auto huge_typed = make_proto(onnx::TensorProto::FLOAT, {int64_t{1} << 20, int64_t{1} << 20});
  huge_typed.add_float_data(1.0f);
  EXPECT_LOAD_ERROR(tensor_from_proto(huge_typed), "float_data has 1 values");

  auto raw = make_proto(onnx::TensorProto::FLOAT, {2, 2});
  raw.set_raw_data(std::string(15, '\0'));
  EXPECT_LOAD_ERROR(tensor_from_proto(raw), "raw_data has 15 bytes", "need 16");
}

TEST(ReadTensorPbFile, ReadsSerializedTensor) {
  TempDir dir;
  auto proto = make_proto(onnx::TensorProto::INT32, {2});
  proto.add_int32_data(5);
  proto.add_int32_data(-6);
  std::string bytes;
  ASSERT_TRUE(proto.SerializeToString(&bytes));
  dir.write("input_0.pb", bytes);
  auto tensor = read_tensor_pb_file((dir.path() / "input_0.pb").string());
  ASSERT_TRUE(tensor.ok()) << tensor.status().to_string();
  EXPECT_EQ(tensor->to_int64_vector(), (std::vector<int64_t>{5, -6}));

  dir.write("bad.pb", bytes.substr(0, bytes.size() - 1));  // cuts into the name field
  EXPECT_LOAD_ERROR(read_tensor_pb_file((dir.path() / "bad.pb").string()), "bad.pb");
  EXPECT_LOAD_ERROR(read_tensor_pb_file((dir.path() / "missing.pb").string()), "missing.pb");
}

TEST(ReadTensorPbFile, ReadsOnnxBackendTestData) {
  std::filesystem::path dir = onnx_node_test_dir();
  if (dir.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  auto input = read_tensor_pb_file((dir / "test_relu/test_data_set_0/input_0.pb").string());
  ASSERT_TRUE(input.ok()) << input.status().to_string();
  auto output = read_tensor_pb_file((dir / "test_relu/test_data_set_0/output_0.pb").string());
  ASSERT_TRUE(output.ok()) << output.status().to_string();
  EXPECT_EQ(input->dtype(), DataType::kFloat);
  EXPECT_EQ(input->shape(), (Shape{3, 4, 5}));
  ASSERT_EQ(output->shape(), input->shape());
  // The stored output is relu(input).
  for (int64_t i = 0; i < input->numel(); ++i) {
    EXPECT_EQ(output->data<float>()[i], std::max(0.0f, input->data<float>()[i]));
  }
}

}  // namespace
}  // namespace qdqrt::testing
