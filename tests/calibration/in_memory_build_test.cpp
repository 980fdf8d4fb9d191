// calibrate --sensitivity and exec --calib/--layerPrecisions build engines from graphs changed in
// memory (tools/engine_from_graph.h) instead of writing them to a file first: the engine must be the
// file's, layer for layer and bit for bit on real images.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "tools/calibration/collector.h"
#include "tools/calibration/qdq_insertion.h"
#include "tools/datasets.h"
#include "tools/engine_from_graph.h"

namespace qdqrt::calibration {
namespace {

constexpr int64_t kImages = 16;

std::vector<float> run_engine(const engine::Engine& engine, const Tensor& images) {
  engine::IoTensorInfo input = engine.inputs().front(), output = engine.outputs().front();
  std::vector<float> logits(static_cast<size_t>(shape_numel(output.shape)));
  auto context = engine.create_context({.threads = 1});
  Status status =
      context->run({{input.name, images.data<float>(), images.shape()}}, {{output.name, logits.data(), output.shape}});
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return logits;
}

void expect_same_engine(const engine::Engine& from_file, const engine::Engine& in_memory, const Tensor& images) {
  std::vector<engine::LayerProfileEntry> file_layers = from_file.layers(), memory_layers = in_memory.layers();
  ASSERT_EQ(file_layers.size(), memory_layers.size());
  for (size_t i = 0; i < file_layers.size(); ++i) {
    EXPECT_EQ(file_layers[i].name, memory_layers[i].name);
    EXPECT_EQ(file_layers[i].kind, memory_layers[i].kind) << file_layers[i].name;
    EXPECT_EQ(file_layers[i].kernel, memory_layers[i].kernel) << file_layers[i].name;
  }
  EXPECT_EQ(from_file.max_batch(), in_memory.max_batch());
  std::vector<float> file_logits = run_engine(from_file, images), memory_logits = run_engine(in_memory, images);
  ASSERT_EQ(file_logits.size(), memory_logits.size());
  EXPECT_EQ(std::memcmp(file_logits.data(), memory_logits.data(), file_logits.size() * sizeof(float)), 0);
}

TEST(InMemoryBuild, CalibratedGraphBuildsAsItsWrittenFile) {
  if (!std::filesystem::exists(std::string(tools::kDefaultFashionMnistDir))) GTEST_SKIP() << "no Fashion-MNIST";
  auto fp32 = load_onnx_file(std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx");
  ASSERT_TRUE(fp32.ok()) << fp32.status().to_string();
  tools::DatasetOptions options;
  options.mean = {0.2860f};
  options.std = {0.3530f};
  options.max_images = kImages;
  auto data = tools::load_dataset("fashion-mnist:test", options);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  auto plan = plan_quantization(*fp32, Placement::kAll);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto amax = collect_max(*fp32, data->images, plan->tensors_to_calibrate(), {});
  ASSERT_TRUE(amax.ok()) << amax.status().to_string();
  auto quantized = insert_qdq(*fp32, *plan, *amax);
  ASSERT_TRUE(quantized.ok()) << quantized.status().to_string();

  std::filesystem::path written =
      std::filesystem::temp_directory_path() / ("qdqrt_in_memory_build_" + std::to_string(::getpid()) + ".onnx");
  ASSERT_TRUE(write_onnx_file(*quantized, written.string()).is_ok());
  // The symbolic batch at its default (1) and at the images' batch, as exec --shapes gives it.
  for (bool given_shape : {false, true}) {
    engine::BuildOptions build;
    if (given_shape) build.input_shapes[fp32->inputs[0]] = data->images.shape();
    auto from_file = engine::Engine::build_from_file(written.string(), build);
    ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
    auto in_memory = tools::build_engine_from_graph(*quantized, build);
    ASSERT_TRUE(in_memory.ok()) << in_memory.status().to_string();
    EXPECT_GT((*in_memory)->plan().layers.size(), 0u);
    Tensor images = data->images;
    if (!given_shape) {
      images = Tensor(DataType::kFloat, {1, 1, 28, 28});
      std::memcpy(images.data<float>(), data->images.data<float>(), 28 * 28 * sizeof(float));
    }
    expect_same_engine(**from_file, **in_memory, images);
  }
  std::filesystem::remove(written);
}

}  // namespace
}  // namespace qdqrt::calibration
