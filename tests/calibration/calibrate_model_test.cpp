// The shipped Fashion-MNIST ResNet calibrated end to end (256 training images, max and entropy):
// the written file loads, the optimizer fuses it completely (every Conv/Gemm in INT8, no Q/DQ
// inside INT8 regions) and top-1 on 1,000 test images stays within 1.5 points of FP32.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <sstream>
#include <variant>

#include "optimizer/layer_info.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "parser/npy.h"
#include "parser/onnx_writer.h"
#include "reference/executor.h"
#include "tools/calibrate_command.h"
#include "tools/calibration/collector.h"
#include "tools/calibration/qdq_insertion.h"
#include "tools/datasets.h"

namespace qdqrt::calibration {
namespace {

namespace fs = std::filesystem;

constexpr int kCalibrationImages = 256;
constexpr int kTestImages = 1000;
constexpr int kBatch = 100;
constexpr double kMaxAccuracyDrop = 1.5;  // points

const std::string kFp32Model = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx";

tools::DatasetOptions normalized(int64_t count) {
  tools::DatasetOptions options;
  options.mean = {0.2860f};
  options.std = {0.3530f};
  options.max_images = count;
  return options;
}

double top1_percent(const Graph& graph, const tools::Dataset& data) {
  int correct = 0;
  for (int64_t start = 0; start < data.size(); start += kBatch) {
    Tensor batch(DataType::kFloat, {kBatch, 1, 28, 28});
    std::copy_n(data.images.data<float>() + start * 784, kBatch * 784, batch.data<float>());
    auto outputs = run_reference(graph, {{graph.inputs[0], batch}});
    EXPECT_TRUE(outputs.ok()) << outputs.status().to_string();
    if (!outputs.ok()) return 0.0;
    const float* logits = outputs->at(graph.outputs[0]).data<float>();
    for (int b = 0; b < kBatch; ++b) {
      int predicted = static_cast<int>(std::max_element(logits + b * 10, logits + b * 10 + 10) - (logits + b * 10));
      correct += predicted == data.labels->data<int64_t>()[start + b];
    }
  }
  return 100.0 * correct / static_cast<double>(data.size());
}

class CalibrateResNet : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto graph = load_onnx_file(kFp32Model);
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    fp32_ = new Graph(*graph);
    auto calibration = tools::load_dataset("fashion-mnist:train", normalized(kCalibrationImages));
    ASSERT_TRUE(calibration.ok()) << calibration.status().to_string();
    auto test = tools::load_dataset("fashion-mnist:test", normalized(kTestImages));
    ASSERT_TRUE(test.ok()) << test.status().to_string();
    test_ = new tools::Dataset(*test);
    auto plan = plan_quantization(*fp32_, Placement::kTensorRT);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    plan_ = new QuantizationPlan(*plan);
    // One max pass serves both methods.
    CollectOptions options;
    auto maxima = collect_max(*fp32_, calibration->images, plan->tensors_to_calibrate(), options);
    ASSERT_TRUE(maxima.ok()) << maxima.status().to_string();
    auto histograms = collect_histograms(*fp32_, calibration->images, *maxima, options);
    ASSERT_TRUE(histograms.ok()) << histograms.status().to_string();
    max_amax_ = new std::map<std::string, float>(*maxima);
    entropy_amax_ = new std::map<std::string, float>();
    for (const auto& [name, histogram] : *histograms) (*entropy_amax_)[name] = static_cast<float>(amax_entropy(histogram));
    // As calibrate_tensors() does by default: the graph input keeps its full range.
    (*entropy_amax_)["input"] = maxima->at("input");
    fp32_top1_ = top1_percent(*fp32_, *test_);
  }
  static void TearDownTestSuite() {
    delete fp32_;
    delete test_;
    delete plan_;
    delete max_amax_;
    delete entropy_amax_;
  }

  // Inserts, writes and loads back the PTQ model.
  static Graph quantized_model(const std::map<std::string, float>& amax, const std::string& name) {
    auto quantized = insert_qdq(*fp32_, *plan_, amax);
    EXPECT_TRUE(quantized.ok()) << quantized.status().to_string();
    fs::path path = fs::temp_directory_path() / ("qdqrt_calibration_" + name + ".onnx");
    EXPECT_TRUE(write_onnx_file(*quantized, path.string()).is_ok());
    auto loaded = load_onnx_file(path.string());
    EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
    fs::remove(path);
    return loaded.ok() ? *loaded : Graph{};
  }

  static void expect_fully_fused(const Graph& quantized) {
    Graph optimized = quantized;
    auto report = optimizer::optimize(optimized);
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    optimizer::LayerReport layers = optimizer::compute_layer_info(optimized, report->float_reasons);
    EXPECT_TRUE(layers.summary.qdq_inside_int8.empty());
    EXPECT_DOUBLE_EQ(layers.summary.int8_mac_share(), 1.0);
    EXPECT_EQ(layers.summary.float_macs, 0);
    EXPECT_TRUE(layers.summary.float_reasons.empty());
    // The residual adds went into their convs.
    for (const optimizer::LayerInfo& layer : layers.layers) {
      EXPECT_NE(layer.op_type, "Add") << layer.name << " stayed a separate Add";
    }
    EXPECT_EQ(layers.summary.dequantize_nodes, 0);
  }

  static Graph* fp32_;
  static tools::Dataset* test_;
  static QuantizationPlan* plan_;
  static std::map<std::string, float>* max_amax_;
  static std::map<std::string, float>* entropy_amax_;
  static double fp32_top1_;
};

Graph* CalibrateResNet::fp32_ = nullptr;
tools::Dataset* CalibrateResNet::test_ = nullptr;
QuantizationPlan* CalibrateResNet::plan_ = nullptr;
std::map<std::string, float>* CalibrateResNet::max_amax_ = nullptr;
std::map<std::string, float>* CalibrateResNet::entropy_amax_ = nullptr;
double CalibrateResNet::fp32_top1_ = 0.0;

TEST_F(CalibrateResNet, EntropyClipsBelowMax) {
  // Entropy never exceeds the maximum, and clips the long-tailed ReLU activations.
  int clipped = 0;
  for (const auto& [name, amax] : *max_amax_) {
    EXPECT_LE(entropy_amax_->at(name), amax * (1 + 1e-6f)) << name;
    EXPECT_GT(entropy_amax_->at(name), 0.0f) << name;
    clipped += entropy_amax_->at(name) < 0.9f * amax;
  }
  EXPECT_GT(clipped, 0);
}

TEST_F(CalibrateResNet, MaxCalibrationFusesAndKeepsAccuracy) {
  Graph quantized = quantized_model(*max_amax_, "max");
  expect_fully_fused(quantized);
  double top1 = top1_percent(quantized, *test_);
  std::printf("FP32 top-1 %.1f%%, PTQ max top-1 %.1f%% (%d test images)\n", fp32_top1_, top1, kTestImages);
  EXPECT_GE(top1, fp32_top1_ - kMaxAccuracyDrop);
}

TEST_F(CalibrateResNet, EntropyCalibrationFusesAndKeepsAccuracy) {
  Graph quantized = quantized_model(*entropy_amax_, "entropy");
  expect_fully_fused(quantized);
  double top1 = top1_percent(quantized, *test_);
  std::printf("FP32 top-1 %.1f%%, PTQ entropy top-1 %.1f%% (%d test images)\n", fp32_top1_, top1, kTestImages);
  EXPECT_GE(top1, fp32_top1_ - kMaxAccuracyDrop);
}

}  // namespace
}  // namespace qdqrt::calibration
