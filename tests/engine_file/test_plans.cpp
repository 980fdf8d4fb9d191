#include "tests/engine_file/test_plans.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace qdqrt::engine::testing {

namespace {

std::vector<uint8_t> pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
  return bytes;
}

Blob pattern_blob(const std::string& name, size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes = pattern(size, seed);
  return make_blob(name, bytes.data(), bytes.size());
}

}  // namespace

EnginePlan make_rich_plan() {
  EnginePlan plan;
  plan.qdqrt_version = "0.1.0-test";
  plan.isa = "avx2";
  plan.cpu_features = {"avx2"};
  plan.source_model = "models/some model \xc3\xa9.onnx";
  plan.precision = "int8";
  plan.max_batch = 8;
  plan.arena_bytes = 64 * 100;
  plan.scratch_bytes_per_thread = 4096 + 3;

  auto tensor = [&](std::string name, DataType dtype, Shape shape, bool batched, Layout layout, TensorKind kind,
                    int64_t arena_offset, int64_t bytes) {
    plan.tensors.push_back({std::move(name), dtype, std::move(shape), batched, layout, kind, arena_offset, bytes});
  };
  tensor("input", DataType::kFloat, {8, 3, 5, 7}, true, Layout::kPlain, TensorKind::kInput, -1, 8 * 3 * 5 * 7 * 4);
  tensor("input_q", DataType::kInt8, {8, 3, 5, 7}, true, Layout::kNhwc, TensorKind::kActivation, 0, 8 * 3 * 5 * 7);
  tensor("conv_out", DataType::kUint8, {8, 16, 5, 7}, true, Layout::kNhwc, TensorKind::kActivation, 64 * 20, 4480);
  tensor("scalar", DataType::kInt64, {}, false, Layout::kPlain, TensorKind::kActivation, 64 * 90, 8);
  // Empty, and its batch moved off dim 0 (a Transpose) with 3 slices per image.
  tensor("empty", DataType::kInt32, {0, 24}, true, Layout::kPlain, TensorKind::kActivation, 64 * 99, 0);
  plan.tensors.back().batch_axis = 1;
  plan.tensors.back().batch_factor = 3;
  tensor("logits", DataType::kFloat, {8, 10}, true, Layout::kPlain, TensorKind::kOutput, -1, 320);
  tensor("mask", DataType::kBool, {8, 10}, true, Layout::kPlain, TensorKind::kOutput, -1, 80);
  tensor("half", DataType::kFloat16, {2}, false, Layout::kPlain, TensorKind::kActivation, 64 * 91, 4);
  plan.fixed_batch_reason = "Expand 'e': reads 'shape', a constant computed for batch 8";
  plan.inputs = {0};
  plan.outputs = {5, 6};

  PlanLayer quantize;
  quantize.kind = "quantize";
  quantize.name = "input_QuantizeLinear";
  quantize.source_nodes = {"input_QuantizeLinear"};
  quantize.op_type = "QuantizeLinear";
  quantize.inputs = {0};
  quantize.outputs = {1};
  quantize.kernel = "qs8-quantize-avx2";
  quantize.params.set("scale", 0.0078125);
  quantize.params.set("zero_point", int64_t{-3});
  quantize.blobs.push_back(pattern_blob("empty", 0, 1));
  quantize.blobs.push_back(pattern_blob("one", 1, 2));
  plan.layers.push_back(quantize);

  PlanLayer conv;
  conv.kind = "qconv";
  conv.name = "conv1 + relu1";
  conv.source_nodes = {"conv1", "relu1"};
  conv.op_type = "QConv";
  conv.inputs = {1, -1, 3};
  conv.outputs = {2};
  conv.kernel = "qs8-qc8w-gemm-6x64c4-avx512vnni";
  conv.params.set("int_min", std::numeric_limits<int64_t>::min());
  conv.params.set("int_max", std::numeric_limits<int64_t>::max());
  conv.params.set("float_tiny", std::numeric_limits<double>::denorm_min());
  conv.params.set("float_inf", -std::numeric_limits<double>::infinity());
  conv.params.set("float_neg_zero", -0.0);
  conv.params.set("string", std::string("nhwc\0with nul", 13));
  conv.params.set("empty_string", std::string());
  conv.params.set("ints", std::vector<int64_t>{3, 3, 1, 1, -7, 1LL << 40});
  conv.params.set("no_ints", std::vector<int64_t>{});
  conv.params.set("floats", std::vector<double>{0.5, -1e300, 3.25e-12});
  conv.params.set("no_floats", std::vector<double>{});
  conv.blobs.push_back(pattern_blob("weights", 4097, 3));
  conv.blobs.push_back(pattern_blob("bias", 63, 4));
  conv.blobs.push_back(pattern_blob("scales", 64, 5));
  conv.blobs.push_back(pattern_blob("table", 65, 6));
  conv.scratch_bytes = 4096 + 3;
  plan.layers.push_back(conv);

  PlanLayer head;
  head.kind = "reference";
  head.name = "head";
  head.source_nodes = {"head"};
  head.op_type = "Softmax";
  head.inputs = {2};
  head.outputs = {5, 6};
  head.params.set("axis", int64_t{1});
  plan.layers.push_back(head);

  PlanLayer bare;  // nothing but the kind: empty strings and vectors survive too
  bare.kind = "copy";
  plan.layers.push_back(bare);
  return plan;
}

void expect_plans_equal(const EnginePlan& expected, const EnginePlan& actual) {
  EXPECT_EQ(expected.format_version, actual.format_version);
  EXPECT_EQ(expected.qdqrt_version, actual.qdqrt_version);
  EXPECT_EQ(expected.isa, actual.isa);
  EXPECT_EQ(expected.cpu_features, actual.cpu_features);
  EXPECT_EQ(expected.source_model, actual.source_model);
  EXPECT_EQ(expected.precision, actual.precision);
  EXPECT_EQ(expected.max_batch, actual.max_batch);
  EXPECT_EQ(expected.inputs, actual.inputs);
  EXPECT_EQ(expected.outputs, actual.outputs);
  EXPECT_EQ(expected.arena_bytes, actual.arena_bytes);
  EXPECT_EQ(expected.scratch_bytes_per_thread, actual.scratch_bytes_per_thread);
  EXPECT_EQ(expected.fixed_batch_reason, actual.fixed_batch_reason);
  ASSERT_EQ(expected.tensors.size(), actual.tensors.size());
  for (size_t i = 0; i < expected.tensors.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + " '" + expected.tensors[i].name + "'");
    const PlanTensor& a = expected.tensors[i];
    const PlanTensor& b = actual.tensors[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.dtype, b.dtype);
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_EQ(a.batched, b.batched);
    EXPECT_EQ(a.batch_axis, b.batch_axis);
    EXPECT_EQ(a.batch_factor, b.batch_factor);
    EXPECT_EQ(a.layout, b.layout);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.arena_offset, b.arena_offset);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.alias_of, b.alias_of);
    EXPECT_EQ(a.alias_offset, b.alias_offset);
    EXPECT_EQ(a.row_stride, b.row_stride);
  }
  ASSERT_EQ(expected.layers.size(), actual.layers.size());
  for (size_t i = 0; i < expected.layers.size(); ++i) {
    SCOPED_TRACE("layer " + std::to_string(i) + " '" + expected.layers[i].name + "'");
    const PlanLayer& a = expected.layers[i];
    const PlanLayer& b = actual.layers[i];
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.source_nodes, b.source_nodes);
    EXPECT_EQ(a.op_type, b.op_type);
    EXPECT_EQ(a.inputs, b.inputs);
    EXPECT_EQ(a.outputs, b.outputs);
    EXPECT_EQ(a.kernel, b.kernel);
    EXPECT_EQ(a.scratch_bytes, b.scratch_bytes);
    ASSERT_EQ(a.params.values().size(), b.params.values().size());
    for (const auto& [name, value] : a.params.values()) {
      SCOPED_TRACE("param '" + name + "'");
      ASSERT_TRUE(b.params.has(name));
      const ParamValue& other = b.params.values().at(name);
      ASSERT_EQ(value.index(), other.index());
      if (const double* real = std::get_if<double>(&value)) {
        // Bit equality: -0.0 and denormals must survive.
        EXPECT_EQ(std::memcmp(real, &std::get<double>(other), sizeof(double)), 0) << *real;
      } else {
        EXPECT_TRUE(value == other);
      }
    }
    ASSERT_EQ(a.blobs.size(), b.blobs.size());
    for (size_t j = 0; j < a.blobs.size(); ++j) {
      SCOPED_TRACE("blob '" + a.blobs[j].name + "'");
      EXPECT_EQ(a.blobs[j].name, b.blobs[j].name);
      ASSERT_EQ(a.blobs[j].bytes.size(), b.blobs[j].bytes.size());
      EXPECT_TRUE(std::equal(a.blobs[j].bytes.begin(), a.blobs[j].bytes.end(), b.blobs[j].bytes.begin()));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.blobs[j].bytes.data()) % 64, 0u);
    }
  }
}

std::vector<uint8_t> serialize_or_fail(const EnginePlan& plan) {
  auto bytes = serialize_plan(plan);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>();
}

FileSections sections_of(std::span<const uint8_t> file) {
  using namespace file_format;
  return {load_field<uint64_t>(file, kFlatbufferOffsetOffset), load_field<uint64_t>(file, kFlatbufferBytesOffset),
          load_field<uint64_t>(file, kBlobSectionOffsetOffset), load_field<uint64_t>(file, kBlobSectionBytesOffset),
          load_field<uint64_t>(file, kFileBytesOffset)};
}

file::EnginePlan* mutable_root(std::vector<uint8_t>& file) {
  return file::GetMutableEnginePlan(file.data() + sections_of(file).flatbuffer_offset);
}

std::vector<uint8_t> assemble_file(std::span<const uint8_t> flatbuffer, std::span<const uint8_t> blob_section) {
  using namespace file_format;
  const uint64_t blob_offset = (kHeaderBytes + flatbuffer.size() + 63) / 64 * 64;
  std::vector<uint8_t> file(blob_offset + blob_section.size(), 0);
  std::memcpy(file.data(), kMagic, sizeof(kMagic));
  store_field<uint32_t>(file, kFormatVersionOffset, kEngineFormatVersion);
  store_field<uint32_t>(file, kHeaderBytesOffset, kHeaderBytes);
  store_field<uint64_t>(file, kFlatbufferOffsetOffset, kHeaderBytes);
  store_field<uint64_t>(file, kFlatbufferBytesOffset, flatbuffer.size());
  store_field<uint64_t>(file, kBlobSectionOffsetOffset, blob_offset);
  store_field<uint64_t>(file, kBlobSectionBytesOffset, blob_section.size());
  store_field<uint64_t>(file, kFileBytesOffset, file.size());
  std::copy(flatbuffer.begin(), flatbuffer.end(), file.begin() + kHeaderBytes);
  std::copy(blob_section.begin(), blob_section.end(), file.begin() + blob_offset);
  reseal(file);
  return file;
}

Result<EnginePlan> read_copy(const std::vector<uint8_t>& file) {
  size_t allocated = (file.size() + 63) / 64 * 64 + 64;
  std::shared_ptr<uint8_t> storage(static_cast<uint8_t*>(std::aligned_alloc(64, allocated)), std::free);
  if (!file.empty()) std::memcpy(storage.get(), file.data(), file.size());
  return read_plan(std::span<const uint8_t>(storage.get(), file.size()), storage);
}

}  // namespace qdqrt::engine::testing
