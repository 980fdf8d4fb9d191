// The collector on the shipped FP32 ResNet: batched, TBB-parallel maxima and histograms equal one
// single run over all the images.
#include <gtest/gtest.h>

#include <cmath>

#include "parser/onnx_loader.h"
#include "reference/executor.h"
#include "tools/calibration/collector.h"
#include "tools/datasets.h"

namespace qdqrt::calibration {
namespace {

TEST(Collector, ParallelBatchesMatchOneRun) {
  auto graph = load_onnx_file(std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  tools::DatasetOptions data_options;
  data_options.max_images = 23;
  data_options.mean = {0.2860f};
  data_options.std = {0.3530f};
  auto data = tools::load_dataset("fashion-mnist:train", data_options);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  const std::vector<std::string> tensors = {"input", "/blocks/blocks.0/Relu_1_output_0", "/Flatten_output_0"};

  CollectOptions options;
  options.batch_size = 5;  // 23 images: uneven last batch
  options.threads = 2;
  auto maxima = collect_max(*graph, data->images, tensors, options);
  ASSERT_TRUE(maxima.ok()) << maxima.status().to_string();
  auto histograms = collect_histograms(*graph, data->images, *maxima, options);
  ASSERT_TRUE(histograms.ok()) << histograms.status().to_string();

  ReferenceRunOptions run_options;
  run_options.extra_outputs = tensors;
  auto whole = run_reference(*graph, {{"input", data->images}}, run_options);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  for (const std::string& name : tensors) {
    const Tensor& value = whole->at(name);
    float largest = 0.0f;
    for (float x : value.values<float>()) largest = std::max(largest, std::fabs(x));
    EXPECT_FLOAT_EQ(maxima->at(name), largest) << name;
    Histogram expected(kDefaultHistogramBins, largest);
    expected.add(value.data<float>(), static_cast<size_t>(value.numel()));
    EXPECT_EQ(histograms->at(name).counts, expected.counts) << name;
    EXPECT_EQ(histograms->at(name).total(), value.numel()) << name;
  }
  // The input after normalization: (255/255 - 0.2860) / 0.3530 is the largest possible |x|.
  EXPECT_LE(maxima->at("input"), (1.0f - 0.2860f) / 0.3530f + 1e-6f);

  // calibrate_tensors with max returns the maxima; with a histogram method, values inside them.
  auto by_max = calibrate_tensors(*graph, data->images, tensors, *parse_method("max"), options);
  ASSERT_TRUE(by_max.ok());
  EXPECT_EQ(*by_max, *maxima);
  auto by_percentile = calibrate_tensors(*graph, data->images, tensors, *parse_method("percentile=99"), options);
  ASSERT_TRUE(by_percentile.ok());
  for (const std::string& name : tensors) {
    if (name == "input") continue;
    EXPECT_DOUBLE_EQ(by_percentile->at(name), static_cast<float>(amax_percentile(histograms->at(name), 99.0)));
  }
  // The graph input keeps its max range unless inputs_by_max is off.
  EXPECT_EQ(by_percentile->at("input"), maxima->at("input"));
  options.inputs_by_max = false;
  auto input_too = calibrate_tensors(*graph, data->images, {"input"}, *parse_method("percentile=99"), options);
  ASSERT_TRUE(input_too.ok());
  EXPECT_DOUBLE_EQ(input_too->at("input"), static_cast<float>(amax_percentile(histograms->at("input"), 99.0)));
  EXPECT_LT(input_too->at("input"), maxima->at("input"));
}

TEST(Collector, RejectsAnUnknownTensorAndWrongImages) {
  auto graph = load_onnx_file(std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx");
  ASSERT_TRUE(graph.ok());
  Tensor images(DataType::kFloat, {2, 1, 28, 28});
  auto missing = collect_max(*graph, images, {"no_such_tensor"}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_tensor"), std::string::npos) << missing.status().message();
  auto empty = collect_max(*graph, Tensor(DataType::kFloat, {0, 1, 28, 28}), {"input"}, {});
  EXPECT_FALSE(empty.ok());
}

}  // namespace
}  // namespace qdqrt::calibration
