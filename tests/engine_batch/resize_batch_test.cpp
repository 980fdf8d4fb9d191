// Engines with Resize layers (engine/layers/resize_layers.cpp) follow the batch: constant scales,
// and `sizes` built from the input's Shape as torch exports F.interpolate(size=...), give every
// image the same bits at batch 1, 3 and the maximum, and the engine is not pinned to its maximum.
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

}  // namespace
}  // namespace qdqrt::batch_testing
