// Engines with Resize layers (engine/layers/resize_layers.cpp) follow the batch: constant scales,
// and `sizes` built from the input's Shape as torch exports F.interpolate(size=...), give every
// image the same bits at batch 1, 3 and the maximum, and the engine is not pinned to its maximum;
// so do the QDQ forms (the int8 gather, float bilinear between dequantize and quantize).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt::batch_testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBatch = 4;

const char* const kResizeModel = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4,3,10,12] x) => (float[4,3,20,24] up, float[4,3,5,9] down, float[4,3,17,9] sized)
<float[4] s = {1.0, 1.0, 2.0, 2.0}, float[4] d = {1.0, 1.0, 0.5, 0.75}, int64[2] hw = {17, 9}>
{
  up = Resize<mode="linear", coordinate_transformation_mode="half_pixel">(x, , s)
  down = Resize<mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor">(x, , d)
  shape = Shape(x)
  nc = Slice<>(shape, starts, ends)
  sizes = Concat<axis=0>(nc, hw)
  sized = Resize<mode="linear", coordinate_transformation_mode="align_corners">(up, , , sizes)
}
)";

TEST(ResizeBatch, ResizeLayersFollowTheBatch) {
  std::string text = kResizeModel;
  // Slice's starts and ends as initializers (the text format's attribute-free Slice of opset 13).
  text.replace(text.find("int64[2] hw"), 0, "int64[1] starts = {0}, int64[1] ends = {2}, ");
  text.replace(text.find("Slice<>"), 7, "Slice");
  const std::string path = fs::path(::testing::TempDir()) / "resize_batch.onnx";
  ASSERT_TRUE(write_text_model(text, {}, 1, path).is_ok());
  auto graph = load_onnx_file(path);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto built = engine::Engine::build(*graph, {});
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  EXPECT_EQ(engine.plan().fixed_batch_reason, "");
  int resize_layers = 0;
  for (const auto& layer : engine.plan().layers) {
    EXPECT_NE(layer.kind, "reference") << layer.name;
    resize_layers += layer.kind.rfind("resize_", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(resize_layers, 3);
  for (const auto& output : engine.outputs()) EXPECT_TRUE(output.batched) << output.name;
  TensorMap inputs = {{"x", random_tensor({kMaxBatch, 3, 10, 12}, 5)}};
  auto at_max = run_per_image(engine, inputs, kMaxBatch, kMaxBatch);
  ASSERT_TRUE(at_max.ok()) << at_max.status().to_string();
  // At the maximum batch: the reference executor's bits.
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  for (const auto& [name, slices] : at_max->slices) {
    for (size_t image = 0; image < slices.size(); ++image) {
      EXPECT_TRUE(bit_equal(slices[image], slice(expected->at(name), 0, 1, static_cast<int64_t>(image), 1)))
          << name << " of image " << image;
    }
  }
  for (int64_t per_run : {int64_t{1}, int64_t{3}}) {
    auto outputs = run_per_image(engine, inputs, kMaxBatch, per_run);
    ASSERT_TRUE(outputs.ok()) << per_run << " at a time: " << outputs.status().to_string();
    for (const auto& [name, slices] : at_max->slices) {
      for (size_t image = 0; image < slices.size(); ++image) {
        EXPECT_TRUE(bit_equal(outputs->slices.at(name)[image], slices[image]))
            << name << " of image " << image << ", " << per_run << " at a time";
      }
    }
  }
}

// The QDQ form: DQ -> Resize(nearest) -> Q with equal parameters runs as the int8 gather
// (fuse_qdq_resize), DQ -> Resize(linear) -> Q as float between dequantize and quantize layers;
// both follow the batch.
TEST(ResizeBatch, QdqResizeFollowsTheBatch) {
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[4,3,10,12] x) => (float[4,3,20,24] n, float[4,3,20,24] l)
<float s = {0.03}, int8 z = {-2}, float[4] sc = {1.0, 1.0, 2.0, 2.0}>
{
  xq = QuantizeLinear(x, s, z)
  xd = DequantizeLinear(xq, s, z)
  rn = Resize<mode="nearest">(xd, , sc)
  nq = QuantizeLinear(rn, s, z)
  n = DequantizeLinear(nq, s, z)
  rl = Resize<mode="linear">(xd, , sc)
  lq = QuantizeLinear(rl, s, z)
  l = DequantizeLinear(lq, s, z)
}
)";
  const std::string path = fs::path(::testing::TempDir()) / "resize_qdq_batch.onnx";
  ASSERT_TRUE(write_text_model(text, {}, 1, path).is_ok());
  auto graph = load_onnx_file(path);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto built = engine::Engine::build(*graph, {});
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  EXPECT_EQ(engine.plan().fixed_batch_reason, "");
  bool int8_gather = false, float_bilinear = false;
  for (const auto& layer : engine.plan().layers) {
    EXPECT_NE(layer.kind, "reference") << layer.name;
    if (layer.inputs.empty()) continue;
    const DataType dtype = engine.plan().tensors[static_cast<size_t>(layer.inputs[0])].dtype;
    int8_gather = int8_gather || (layer.kind == "resize_nearest" && dtype == DataType::kInt8);
    float_bilinear = float_bilinear || (layer.kind == "resize_bilinear" && dtype == DataType::kFloat);
  }
  EXPECT_TRUE(int8_gather);
  EXPECT_TRUE(float_bilinear);
  TensorMap inputs = {{"x", random_tensor({kMaxBatch, 3, 10, 12}, 9)}};
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  for (int64_t per_run : {int64_t{1}, int64_t{3}, kMaxBatch}) {
    auto outputs = run_per_image(engine, inputs, kMaxBatch, per_run);
    ASSERT_TRUE(outputs.ok()) << per_run << " at a time: " << outputs.status().to_string();
    for (const auto& [name, slices] : outputs->slices) {
      ASSERT_EQ(slices.size(), static_cast<size_t>(kMaxBatch)) << name;
      for (size_t image = 0; image < slices.size(); ++image) {
        EXPECT_TRUE(bit_equal(slices[image], slice(expected->at(name), 0, 1, static_cast<int64_t>(image), 1)))
            << name << " of image " << image << ", " << per_run << " at a time";
      }
    }
  }
}

}  // namespace
}  // namespace qdqrt::batch_testing
