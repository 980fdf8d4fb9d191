// The whole optimizer on real exports (tests/optimizer_models/data, made by
// models/export_qdq_styles.py): pytorch-quantization/TensorRT-style QAT models and ONNX Runtime
// quantizer-style PTQ models (asymmetric u8 and symmetric s8). For each model:
//   - no Q/DQ node is left inside an INT8 region;
//   - every Conv/MatMul/Gemm whose input and weight are quantized runs as a QConv/QMatMul layer;
//   - every residual Add with a quantized residual is fused into its conv;
//   - top-1 predictions on 1,000 Fashion-MNIST test images agree with the original graph (both
//     run by the reference executor) on >= 99.5% of images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "optimizer/graph_utils.h"
#include "optimizer/layer_info.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "reference/executor.h"

namespace qdqrt::optimizer {
namespace {

namespace fs = std::filesystem;

constexpr int kImages = 1000;
constexpr int kBatch = 100;
constexpr float kMean = 0.2860f;  // as in models/export_qdq_styles.py
constexpr float kStd = 0.3530f;

const fs::path kDataDir = QDQRT_OPTIMIZER_MODELS_DIR;
const fs::path kSourceRoot = QDQRT_SOURCE_ROOT_DIR;

// Test data by name; "models/..." names the shipped models at the repository root.
fs::path model_path(const std::string& name) {
  return name.rfind("models/", 0) == 0 ? kSourceRoot / name : kDataDir / name;
}

bool fusion_passes_present() {
  std::vector<std::string> names = pipeline_pass_names();
  return std::find(names.begin(), names.end(), "fuse_qdq_conv") != names.end();
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// The float layer the float pipeline fuses a conv and its epilogue into.
// The float fused layers the float pipeline makes of convs (and the pools of their row sums).
bool is_float_conv_layer(const Node& node) {
  return node.domain == kQdqrtDomain &&
         (node.op_type == layers::kFusedConv || node.op_type == layers::kFusedDepthwiseConv ||
          node.op_type == layers::kRowSumsGlobalAveragePool);
}

bool is_op(const Graph& graph, int index, const char* op_type) {
  return index >= 0 && graph.nodes[static_cast<size_t>(index)].domain.empty() &&
         graph.nodes[static_cast<size_t>(index)].op_type == op_type;
}

// Follows single-input layout ops back (DQ -> Transpose -> MatMul is how torch exports Linear).
int producer_through_layout(const Graph& graph, const ValueIndex& index, const std::string& value) {
  int producer = index.producer(value);
  while (is_op(graph, producer, "Transpose") || is_op(graph, producer, "Identity") ||
         is_op(graph, producer, "Reshape") || is_op(graph, producer, "Flatten")) {
    producer = index.producer(graph.nodes[static_cast<size_t>(producer)].input(0));
  }
  return producer;
}

struct QuantizedOps {
  std::vector<std::string> weighted;        // Conv/MatMul/Gemm with DQ input and DQ weight
  std::vector<std::string> residual_adds;   // Add(conv [-> BN], DQ)
};

QuantizedOps find_quantized_ops(const Graph& graph) {
  QuantizedOps ops;
  ValueIndex index(graph);
  for (const Node& node : graph.nodes) {
    if (!node.domain.empty()) continue;
    if (node.op_type == "Conv" || node.op_type == "MatMul" || node.op_type == "Gemm") {
      bool input_quantized = is_op(graph, producer_through_layout(graph, index, node.input(0)), "DequantizeLinear");
      bool weight_quantized = is_op(graph, producer_through_layout(graph, index, node.input(1)), "DequantizeLinear");
      if (input_quantized && weight_quantized) ops.weighted.push_back(node.name);
    }
    if (node.op_type == "Add" && node.inputs.size() == 2) {
      for (int side = 0; side < 2; ++side) {
        int main_producer = index.producer(node.input(static_cast<size_t>(side)));
        if (is_op(graph, main_producer, "BatchNormalization")) {
          main_producer = index.producer(graph.nodes[static_cast<size_t>(main_producer)].input(0));
        }
        if (is_op(graph, main_producer, "Conv") &&
            is_op(graph, index.producer(node.input(static_cast<size_t>(1 - side))), "DequantizeLinear")) {
          ops.residual_adds.push_back(node.name);
          break;
        }
      }
    }
  }
  return ops;
}

// Source node names of each INT8 weighted layer (fused_nodes, else the node's own name).
std::set<std::string> int8_weighted_sources(const Graph& graph) {
  std::set<std::string> sources;
  for (const Node& node : graph.nodes) {
    if (node.domain != kQdqrtDomain || (node.op_type != layers::kQConv && node.op_type != layers::kQMatMul)) continue;
    sources.insert(node.name);
    if (const Attribute* fused = node.find_attribute("fused_nodes")) {
      sources.insert(fused->strings.begin(), fused->strings.end());
    }
  }
  return sources;
}

Tensor image_batch(const std::vector<uint8_t>& pixels, int start) {
  Tensor input(DataType::kFloat, {kBatch, 1, 28, 28});
  float* data = input.data<float>();
  for (int64_t i = 0; i < input.numel(); ++i) {
    const uint8_t pixel = pixels[static_cast<size_t>(start) * 784 + static_cast<size_t>(i)];
    data[i] = (static_cast<float>(pixel) / 255.0f - kMean) / kStd;
  }
  return input;
}

std::vector<int> top1(const Graph& graph, const std::vector<uint8_t>& pixels, int images = kImages) {
  std::vector<int> predictions;
  for (int start = 0; start < images; start += kBatch) {
    auto outputs = run_reference(graph, {{graph.inputs[0], image_batch(pixels, start)}});
    EXPECT_TRUE(outputs.ok()) << outputs.status().to_string();
    if (!outputs.ok()) return {};
    const Tensor& logits = outputs->at(graph.outputs[0]);
    EXPECT_EQ(logits.shape(), (Shape{kBatch, 10}));
    for (int b = 0; b < kBatch; ++b) {
      const float* row = logits.data<float>() + b * 10;
      predictions.push_back(static_cast<int>(std::max_element(row, row + 10) - row));
    }
  }
  return predictions;
}

class OptimizerModels : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerModels, Int8CoverageAndTop1Agreement) {
  fs::path path = model_path(GetParam());
  ASSERT_TRUE(fs::exists(path)) << path << " missing: run /usr/bin/python3 models/export_qdq_styles.py " << kDataDir;
  if (!fusion_passes_present()) {
    GTEST_SKIP() << "the pipeline has no 'fuse_qdq_conv' pass yet (fusion passes live on branch h/opt-fuse); "
                    "this test needs them";
  }
  auto original = load_onnx_file(path.string());
  ASSERT_TRUE(original.ok()) << original.status().to_string();
  auto loaded = load_onnx_file(path.string());  // optimized in place; no storage shared with `original`
  ASSERT_TRUE(loaded.ok());
  Graph optimized = std::move(loaded).value();
  QuantizedOps expected = find_quantized_ops(*original);
  ASSERT_FALSE(expected.weighted.empty()) << "the export has no quantized Conv/MatMul";

  auto report = optimize(optimized);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  LayerReport layers = compute_layer_info(optimized, report->float_reasons, {{"batch", 1}});
  std::printf("%s: %s", GetParam().c_str(), format_layer_summary(layers).c_str());

  EXPECT_TRUE(layers.summary.qdq_inside_int8.empty())
      << "Q/DQ left inside INT8 regions: " << fmt::format("{}", fmt::join(layers.summary.qdq_inside_int8, ", "));
  std::set<std::string> int8_sources = int8_weighted_sources(optimized);
  for (const std::string& name : expected.weighted) {
    EXPECT_TRUE(int8_sources.count(name)) << "quantized '" << name << "' does not run as a QConv/QMatMul layer";
  }
  for (const std::string& name : expected.residual_adds) {
    bool float_add_left = std::any_of(optimized.nodes.begin(), optimized.nodes.end(),
                                      [&](const Node& node) { return node.name == name && node.domain.empty(); });
    EXPECT_FALSE(float_add_left) << "residual Add '" << name << "' (quantized residual) stayed float";
    EXPECT_TRUE(int8_sources.count(name)) << "residual Add '" << name << "' is not fused into a conv";
  }
  EXPECT_NEAR(layers.summary.int8_mac_share(), 1.0, 1e-12) << format_layer_summary(layers);

  std::vector<uint8_t> pixels = read_bytes(kDataDir / "fmnist_test_1000_images.u8");
  std::vector<uint8_t> labels = read_bytes(kDataDir / "fmnist_test_1000_labels.u8");
  ASSERT_EQ(pixels.size(), static_cast<size_t>(kImages) * 784);
  ASSERT_EQ(labels.size(), static_cast<size_t>(kImages));
  std::vector<int> reference = top1(*original, pixels);
  std::vector<int> fused = top1(optimized, pixels);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kImages));
  ASSERT_EQ(fused.size(), static_cast<size_t>(kImages));
  int agree = 0, correct_reference = 0, correct_fused = 0;
  for (int i = 0; i < kImages; ++i) {
    agree += reference[static_cast<size_t>(i)] == fused[static_cast<size_t>(i)];
    correct_reference += reference[static_cast<size_t>(i)] == labels[static_cast<size_t>(i)];
    correct_fused += fused[static_cast<size_t>(i)] == labels[static_cast<size_t>(i)];
  }
  std::printf("%s: top-1 agreement %.1f%% (%d/%d); accuracy original %.1f%%, optimized %.1f%%\n", GetParam().c_str(),
              agree / 10.0, agree, kImages, correct_reference / 10.0, correct_fused / 10.0);
  EXPECT_GE(agree, 995) << "top-1 agreement below 99.5%";
}

INSTANTIATE_TEST_SUITE_P(Exports, OptimizerModels,
                         ::testing::Values("resnet_trt.onnx", "resnet_ort_u8.onnx", "resnet_ort_s8.onnx",
                                           "mobilenet_trt.onnx", "mobilenet_ort_u8.onnx", "mobilenet_ort_s8.onnx",
                                           "models/fmnist_resnet_qdq.onnx"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = fs::path(info.param).filename().string();
                           return name.substr(0, name.find('.'));
                         });

// The float pipeline (OptimizeOptions::float_only) on the shipped QAT model: only float ops left
// (standard ones and FusedConv); the logits equal those of the QDQ graph with its activation Q -> DQ pairs removed by
// hand (weights still Q -> DQ of their float values); top-1 agrees with the QDQ model itself on
// >= 95% of 1,000 images (the float model skips the activations' rounding, so not 100%).
TEST(OptimizerModelsFloat, FloatPipelineOnFmnistResnet) {
  fs::path path = model_path("models/fmnist_resnet_qdq.onnx");
  ASSERT_TRUE(fs::exists(path)) << path;
  auto original = load_onnx_file(path.string());
  ASSERT_TRUE(original.ok()) << original.status().to_string();
  auto loaded = load_onnx_file(path.string());
  ASSERT_TRUE(loaded.ok());
  Graph float_graph = std::move(loaded).value();
  OptimizeOptions options;
  options.float_only = true;
  auto report = optimize(float_graph, options);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  for (const Node& node : float_graph.nodes) {
    EXPECT_TRUE(node.domain.empty() || is_float_conv_layer(node)) << node.describe();
    EXPECT_NE(node.op_type, "QuantizeLinear");
    EXPECT_NE(node.op_type, "DequantizeLinear");
    EXPECT_NE(node.op_type, "BatchNormalization");
  }

  // By hand: every DQ reading a Q of an activation (not of an initializer) is skipped.
  auto hand_loaded = load_onnx_file(path.string());
  ASSERT_TRUE(hand_loaded.ok());
  Graph by_hand = std::move(hand_loaded).value();
  {
    ValueIndex index(by_hand);
    for (const Node& node : by_hand.nodes) {
      if (node.op_type != "DequantizeLinear") continue;
      int q = index.producer(node.input(0));
      if (!is_op(by_hand, q, "QuantizeLinear")) continue;
      const std::string& source = by_hand.nodes[static_cast<size_t>(q)].input(0);
      if (by_hand.initializers.count(source)) continue;  // a weight
      replace_uses(by_hand, node.outputs[0], source);
    }
    remove_unused(by_hand);
  }
  std::vector<uint8_t> pixels = read_bytes(kDataDir / "fmnist_test_1000_images.u8");
  ASSERT_EQ(pixels.size(), static_cast<size_t>(kImages) * 784);
  TensorMap batch = {{float_graph.inputs[0], image_batch(pixels, 0)}};
  auto expected = run_reference(by_hand, batch);
  auto actual = run_reference(float_graph, batch);
  ASSERT_TRUE(expected.ok() && actual.ok());
  const Tensor& expected_logits = expected->at(by_hand.outputs[0]);
  const Tensor& actual_logits = actual->at(float_graph.outputs[0]);
  ASSERT_EQ(expected_logits.shape(), actual_logits.shape());
  const float* e = expected_logits.data<float>();
  const int64_t count = expected_logits.numel();
  const float range = *std::max_element(e, e + count) - *std::min_element(e, e + count);
  float worst = 0.0f;
  for (int64_t i = 0; i < count; ++i) worst = std::max(worst, std::abs(e[i] - actual_logits.data<float>()[i]));
  std::printf("float pipeline vs Q/DQ removed by hand: max |logit difference| %.3g (logit range %.3g)\n", worst, range);
  EXPECT_LE(worst, 1e-4f * range) << "BN folding should only change float rounding";

  std::vector<int> qdq = top1(*original, pixels);
  std::vector<int> as_float = top1(float_graph, pixels);
  ASSERT_EQ(qdq.size(), as_float.size());
  int agree = 0;
  for (size_t i = 0; i < qdq.size(); ++i) agree += qdq[i] == as_float[i];
  std::printf("float pipeline: top-1 agreement with the QDQ model %.1f%% (%d/%d)\n", agree / 10.0, agree, kImages);
  EXPECT_GE(agree, 950);
}

// The float pipeline on every export (TRT-style QAT, ORT u8/s8 PTQ): only float ops (standard ones
// and the float conv layers).
TEST(OptimizerModelsFloat, FloatPipelineLeavesNoQdqOnExports) {
  for (const char* name : {"resnet_trt.onnx", "resnet_ort_u8.onnx", "resnet_ort_s8.onnx", "mobilenet_trt.onnx",
                           "mobilenet_ort_u8.onnx", "mobilenet_ort_s8.onnx"}) {
    SCOPED_TRACE(name);
    auto graph = load_onnx_file((kDataDir / name).string());
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    OptimizeOptions options;
    options.float_only = true;
    ASSERT_TRUE(optimize(*graph, options).ok());
    for (const Node& node : graph->nodes) {
      EXPECT_TRUE((node.domain.empty() || is_float_conv_layer(node)) && node.op_type != "QuantizeLinear" &&
                  node.op_type != "DequantizeLinear" && node.op_type != "BatchNormalization")
          << node.describe();
    }
    for (const auto& [initializer, tensor] : graph->initializers) {
      EXPECT_NE(tensor.dtype(), DataType::kInt8) << initializer;
      EXPECT_NE(tensor.dtype(), DataType::kUint8) << initializer;
    }
  }
}

// Q fan-out with different scales on real data: the shipped model's fan-outs all have equal
// parameters (shared int8 output), so here each block's residual/downsample quantizer gets its
// own scale, 1.25x the input quantizer's. That Q's range covers the other's, so the layer writes
// it and the conv input quantizer becomes a QRequantize (double rounding, <= 1 LSB per element).
// Double rounding is real noise on every requantized tensor: measured top-1 agreement with the
// original graph 98.0% of 1,000 images (98.3% of the 300 used here), against 100% for the
// shipped model (equal scales, shared output). Hence the lower bar here (97%).
TEST(OptimizerModelsFanOut, RequantizeOnFmnistResnetWithDistinctScales) {
  fs::path path = model_path("models/fmnist_resnet_qdq.onnx");
  ASSERT_TRUE(fs::exists(path)) << path;
  auto loaded = load_onnx_file(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Graph original = std::move(loaded).value();
  OptimizeOptions constants_only;  // exact rewrites: makes the scales initializers
  constants_only.only_passes = {"remove_identities", "fold_constants"};
  ASSERT_TRUE(optimize(original, constants_only).ok());
  int changed = 0;
  for (const char* block : {"blocks.0/residual_quantizer", "blocks.1/downsample/downsample.0/input_quantizer",
                            "blocks.2/downsample/downsample.0/input_quantizer"}) {
    const std::string q_name = fmt::format("/blocks/{}/QuantizeLinear", block);
    auto q = std::find_if(original.nodes.begin(), original.nodes.end(),
                          [&](const Node& node) { return node.name == q_name; });
    ASSERT_NE(q, original.nodes.end()) << q_name;
    const Tensor* scale = find_constant(original, q->input(1));
    ASSERT_NE(scale, nullptr);
    Tensor wider = scale->clone();
    wider.data<float>()[0] *= 1.25f;
    const std::string q_output = q->outputs[0];
    const std::string wider_name = add_initializer(original, q_name + "_wider_scale", std::move(wider));
    for (Node& node : original.nodes) {
      if (node.name == q_name || (node.op_type == "DequantizeLinear" && node.input(0) == q_output)) {
        node.inputs[1] = wider_name;
        ++changed;
      }
    }
  }
  ASSERT_EQ(changed, 6);
  Graph optimized = original;
  auto report = optimize(optimized);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  int requantizes = 0;
  for (const Node& node : optimized.nodes) requantizes += node.op_type == layers::kQRequantize;
  EXPECT_EQ(requantizes, 3);
  LayerReport layers = compute_layer_info(optimized, report->float_reasons, {{"batch", 1}});
  EXPECT_TRUE(layers.summary.qdq_inside_int8.empty())
      << fmt::format("{}", fmt::join(layers.summary.qdq_inside_int8, ", "));

  constexpr int kFanOutImages = 300;
  std::vector<uint8_t> pixels = read_bytes(kDataDir / "fmnist_test_1000_images.u8");
  ASSERT_EQ(pixels.size(), static_cast<size_t>(kImages) * 784);
  std::vector<int> reference = top1(original, pixels, kFanOutImages);
  std::vector<int> fused = top1(optimized, pixels, kFanOutImages);
  ASSERT_EQ(reference.size(), fused.size());
  int agree = 0;
  std::vector<uint8_t> labels = read_bytes(kDataDir / "fmnist_test_1000_labels.u8");
  int correct_reference = 0, correct_fused = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    agree += reference[i] == fused[i];
    correct_reference += reference[i] == labels[i];
    correct_fused += fused[i] == labels[i];
  }
  std::printf("fan-out with QRequantize: top-1 agreement %d/%d; accuracy original %d, optimized %d\n", agree,
              kFanOutImages, correct_reference, correct_fused);
  EXPECT_GE(agree * 100, 97 * kFanOutImages);
}

// Runs on every branch: the exports load and run, and find_quantized_ops sees what the export
// scripts put in (so the fusion assertions above are not vacuous).
TEST(OptimizerModelsData, ExportsHaveQuantizedConvsMatMulsAndResidualAdds) {
  for (const char* name : {"resnet_trt.onnx", "resnet_ort_u8.onnx", "resnet_ort_s8.onnx", "mobilenet_trt.onnx",
                           "mobilenet_ort_u8.onnx", "mobilenet_ort_s8.onnx"}) {
    SCOPED_TRACE(name);
    auto graph = load_onnx_file((kDataDir / name).string());
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    QuantizedOps ops = find_quantized_ops(*graph);
    EXPECT_GE(ops.weighted.size(), std::string(name).find("resnet") == 0 ? 7u : 6u);
    if (std::string(name) == "resnet_trt.onnx") {
      EXPECT_EQ(ops.residual_adds.size(), 2u);
    }
  }
}

}  // namespace
}  // namespace qdqrt::optimizer
