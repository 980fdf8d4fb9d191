// Random-weight torchvision FP32 exports (models/export_torchvision.py --variant fp32 --size 64,
// written by the engine_float.prepare_models fixture) built with native float layers only and
// compared with the reference executor on the same optimized graph. Label slow.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "engine/engine.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

class TorchvisionFp32 : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchvisionFp32, NativeLayersMatchReference) {
  const std::string path = std::string(QDQRT_FLOAT_MODELS_WORK) + "/" + GetParam() + "_fp32_64.onnx";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing (ctest fixture engine_float.prepare_models)";
  constexpr int64_t kMaxBatch = 3;
  auto graph = load_file_graph(path, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  ASSERT_TRUE(optimizer::optimize(*graph).ok());
  auto built = harness_build(*graph, kMaxBatch);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  for (const auto& layer : built->plan.layers) EXPECT_NE(layer.kind, "reference") << layer.op_type << " " << layer.name;
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    TensorMap inputs = random_inputs(*graph, batch, 21);
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    const auto start = std::chrono::steady_clock::now();
    auto actual = harness_run(*built, inputs, 2);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(actual.ok()) << actual.status().to_string();
    std::printf("%s batch %lld: %.1f ms (harness, one thread)\n", GetParam().c_str(), static_cast<long long>(batch), ms);
    for (const auto& [name, tensor] : *expected) {
      EXPECT_LE(relative_error(actual->at(name), tensor), 1e-4) << name << " batch " << batch;
    }
  }
}

// The same models through Engine::build_from_file and the TBB runtime, 1 and 2 threads.
TEST_P(TorchvisionFp32, EngineMatchesReference) {
  const std::string path = std::string(QDQRT_FLOAT_MODELS_WORK) + "/" + GetParam() + "_fp32_64.onnx";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing (ctest fixture engine_float.prepare_models)";
  constexpr int64_t kMaxBatch = 3;
  engine::BuildOptions options;
  options.input_shapes["input"] = {kMaxBatch, 3, 64, 64};
  auto engine = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  for (const auto& layer : (*engine)->layers()) EXPECT_NE(layer.kind, "reference") << layer.name;
  LoadOptions load_options;
  load_options.input_shapes = options.input_shapes;
  auto graph = load_onnx_file(path, load_options);
  ASSERT_TRUE(graph.ok());
  for (int threads : {1, 2}) {
    auto context = (*engine)->create_context({.threads = threads});
    for (int64_t batch : {int64_t{1}, kMaxBatch}) {
      TensorMap inputs = random_inputs(*graph, batch, 23);
      auto expected = run_reference(*graph, inputs);
      ASSERT_TRUE(expected.ok());
      Tensor output(DataType::kFloat, {batch, 1000});
      const Tensor& input = inputs.at("input");
      double best_ms = 1e30;
      for (int repeat = 0; repeat < 3; ++repeat) {
        const auto start = std::chrono::steady_clock::now();
        Status status = context->run({{"input", input.raw_data(), input.shape()}},
                                     {{"output", output.raw_data(), output.shape()}});
        best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        ASSERT_TRUE(status.is_ok()) << status.to_string();
      }
      std::printf("%s engine batch %lld threads %d: %.2f ms (best of 3)\n", GetParam().c_str(),
                  static_cast<long long>(batch), threads, best_ms);
      EXPECT_LE(relative_error(output, expected->at("output")), 1e-4) << "batch " << batch << " threads " << threads;
    }
  }
}

// QDQRT_FLOAT_MODEL=<model.onnx> (input "input", batch 1 at its declared shape): one more model
// through the engine, timed, against the reference (e.g. the 224x224 exports).
TEST(TorchvisionFp32Extra, ModelFromEnvironment) {
  const char* path = std::getenv("QDQRT_FLOAT_MODEL");
  if (path == nullptr) GTEST_SKIP() << "QDQRT_FLOAT_MODEL not set";
  auto engine = engine::Engine::build_from_file(path, {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  int reference_layers = 0;
  for (const auto& layer : (*engine)->layers()) reference_layers += layer.kind == "reference" ? 1 : 0;
  EXPECT_EQ(reference_layers, 0);
  const engine::IoTensorInfo input_info = (*engine)->inputs().at(0);
  const engine::IoTensorInfo output_info = (*engine)->outputs().at(0);
  LoadOptions load_options;
  load_options.input_shapes[input_info.name] = input_info.shape;
  auto graph = load_onnx_file(path, load_options);
  ASSERT_TRUE(graph.ok());
  TensorMap inputs = random_inputs(*graph, 1, 29);
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok());
  Tensor output(DataType::kFloat, output_info.shape);
  const Tensor& input = inputs.at(input_info.name);
  for (int threads : {1, 2}) {
    auto context = (*engine)->create_context({.threads = threads});
    double best_ms = 1e30;
    for (int repeat = 0; repeat < 5; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      Status status = context->run({{input_info.name, input.raw_data(), input.shape()}},
                                   {{output_info.name, output.raw_data(), output.shape()}});
      best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      ASSERT_TRUE(status.is_ok()) << status.to_string();
    }
    std::printf("%s threads %d: %.2f ms (best of 5), %zu layers\n", path, threads, best_ms, (*engine)->layers().size());
    if (std::getenv("QDQRT_FLOAT_PROFILE") != nullptr) {
      // Time per layer kind/kernel of one profiled run.
      context->set_profiling(true);
      ASSERT_TRUE(context->run({{input_info.name, input.raw_data(), input.shape()}},
                               {{output_info.name, output.raw_data(), output.shape()}})
                      .is_ok());
      std::map<std::string, double> per_kernel;
      const auto layers = (*engine)->layers();
      for (size_t i = 0; i < layers.size(); ++i) {
        per_kernel[layers[i].kind + " " + layers[i].kernel] += context->last_layer_times_ms()[i];
      }
      for (const auto& [kernel, ms] : per_kernel) std::printf("  %8.2f ms  %s\n", ms, kernel.c_str());
      context->set_profiling(false);
    }
    EXPECT_LE(relative_error(output, expected->at(output_info.name)), 1e-4) << "threads " << threads;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TorchvisionFp32, ::testing::Values("resnet18", "mobilenet_v2", "efficientnet_b0"));

}  // namespace
}  // namespace qdqrt::testing
