// Keeping the layers that cost accuracy in float: exec's --layerPrecisions=NAME:fp32 on a Q/DQ
// model (the node reads the float tensors before its Q/DQ) and calibrate's --exclude=NODE (no Q/DQ
// inserted for it), each checked on the graph and end to end.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "tests/optimizer_passes/pass_test_util.h"
#include "tools/calibrate_command.h"
#include "tools/compare_command.h"
#include "tools/datasets.h"
#include "tools/exec_command.h"
#include "tools/exec_options.h"
#include "tools/layer_precisions.h"
#include "tools/sensitivity.h"

namespace qdqrt::tools {
namespace {

// Two quantized convs; the second's input range (s_mid) is far too narrow.
const char* kTwoConvModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,2,4,4] x) => (float[N,2,4,4] y)
  <float s_in = {0.007874}, int8 zp = {0}, float s_mid = {0.001}, float s_w = {0.02},
   int8[2,2,1,1] w1 = {25, -50, 75, 12}, int8[2,2,1,1] w2 = {-37, 100, 50, 25}>
  {
    xq = QuantizeLinear(x, s_in, zp)
    xd = DequantizeLinear(xq, s_in, zp)
    w1d = DequantizeLinear(w1, s_w, zp)
    c1 = Conv(xd, w1d)
    c1q = QuantizeLinear(c1, s_mid, zp)
    c1d = DequantizeLinear(c1q, s_mid, zp)
    w2d = DequantizeLinear(w2, s_w, zp)
    y = Conv(c1d, w2d)
  })";

TEST(LayerPrecisions, ParsesTrtexecsSyntax) {
  auto specs = parse_layer_precisions("conv1:fp32,/a/b:c/Conv:int8,*:fp16");
  ASSERT_TRUE(specs.ok()) << specs.status().message();
  ASSERT_EQ(specs->size(), 3u);
  EXPECT_EQ((*specs)[1].node, "/a/b:c/Conv");  // the name is everything before the last ':'
  EXPECT_EQ((*specs)[1].precision, "int8");
  EXPECT_EQ((*specs)[2].node, "*");
  for (const char* bad : {"conv1", "conv1:fp64", ":fp32", "conv1:", ","}) {
    EXPECT_FALSE(parse_layer_precisions(bad).ok()) << bad;
  }
}

TEST(LayerPrecisions, KeepNodeInFloatRewiresItsQuantizedInputs) {
  Graph graph = qdqrt::testing::parse_graph(kTwoConvModel);
  std::string second_conv;
  for (const Node& node : graph.nodes) {
    if (node.op_type == "Conv" && node.outputs[0] == "y") second_conv = node.name;
  }
  auto rewired = keep_nodes_in_float(graph, {second_conv});
  ASSERT_TRUE(rewired.ok()) << rewired.status().message();
  EXPECT_EQ(*rewired, 1);
  for (const Node& node : graph.nodes) {
    if (node.name == second_conv) EXPECT_EQ(node.inputs[0], "c1");  // the float tensor before the Q
    EXPECT_NE(node.outputs[0], "c1q") << "the Q nothing reads is gone";
    EXPECT_NE(node.outputs[0], "c1d");
  }
  auto unknown = keep_nodes_in_float(graph, {second_conv + "x"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("did you mean '" + second_conv + "'?"), std::string::npos)
      << unknown.status().message();
}

class MixedPrecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("qdqrt_mixed_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

// exec --layerPrecisions: the second conv in float gives the FP32 model's output (the narrow
// quantization it read is gone), where the all-INT8 engine is far off.
TEST_F(MixedPrecisionTest, ExecLayerPrecisionsKeepsTheLayerInFloat) {
  Graph graph = qdqrt::testing::parse_graph(kTwoConvModel);
  std::string model = path("two_conv.onnx");
  ASSERT_TRUE(write_onnx_file(graph, model).is_ok());
  std::string second_conv;
  for (const Node& node : graph.nodes) {
    if (node.op_type == "Conv" && node.outputs[0] == "y") second_conv = node.name;
  }
  auto run = [&](std::vector<std::string> float_layers, bool fp32, const std::string& output) {
    ExecOptions options;
    options.onnx_path = model;
    options.shapes = {{"x", {2, 2, 4, 4}}};
    options.iterations = 1;
    options.warm_up_ms = 0;
    options.duration_s = 0;
    options.threads = 1;
    options.fp32 = fp32;
    options.float_layers = std::move(float_layers);
    options.export_output_path = path(output);
    std::ostringstream out;
    std::optional<RunError> error = run_exec(options, out);
    EXPECT_FALSE(error) << error->status.to_string();
    return out.str();
  };
  std::string mixed = run({second_conv}, false, "mixed.json");
  EXPECT_NE(mixed.find("Layer precisions: " + second_conv + " kept in float (1 quantized inputs read in float)"),
            std::string::npos)
      << mixed;
  run({}, false, "int8.json");
  run({}, true, "fp32.json");
  auto values = [&](const std::string& name) {
    std::ifstream file(path(name));
    return nlohmann::json::parse(file)[0]["values"].get<std::vector<double>>();
  };
  std::vector<double> fp32 = values("fp32.json"), int8 = values("int8.json"), kept = values("mixed.json");
  double int8_error = 0, kept_error = 0;
  for (size_t i = 0; i < fp32.size(); ++i) {
    int8_error = std::max(int8_error, std::abs(int8[i] - fp32[i]));
    kept_error = std::max(kept_error, std::abs(kept[i] - fp32[i]));
  }
  EXPECT_GT(int8_error, 0.1);  // the narrow range clips the first conv's output
  EXPECT_LT(kept_error, int8_error / 10) << int8_error;  // only the input's and weights' quantization is left
}

// calibrate --exclude: the excluded node gets no Q/DQ; compare reports one tensor fewer.
TEST_F(MixedPrecisionTest, CalibrateExcludeLeavesTheNodeFloat) {
  if (!std::filesystem::exists(std::string(kDefaultFashionMnistDir))) GTEST_SKIP() << "no Fashion-MNIST";
  CalibrateOptions calibrate;
  calibrate.onnx_path = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_fp32.onnx";
  calibrate.data_spec = "fashion-mnist:train";
  calibrate.samples = 32;
  calibrate.show_progress = false;
  std::ostringstream out;
  std::vector<size_t> tensor_counts;
  for (bool exclude : {false, true}) {
    calibrate.exclude = exclude ? std::vector<std::string>{"/fc/Gemm"} : std::vector<std::string>{};
    calibrate.output_path = path(exclude ? "excluded.onnx" : "all.onnx");
    auto calibrated = run_calibrate(calibrate, out);
    ASSERT_TRUE(std::holds_alternative<CalibrateResult>(calibrated))
        << std::get<CalibrateError>(calibrated).status.to_string();
    auto graph = load_onnx_file(calibrate.output_path);
    ASSERT_TRUE(graph.ok());
    for (const Node& node : graph->nodes) {
      if (node.name != "/fc/Gemm") continue;
      bool dequantized_input = false;
      for (const Node& other : graph->nodes) {
        if (other.op_type == "DequantizeLinear" &&
            std::find(node.inputs.begin(), node.inputs.end(), other.outputs[0]) != node.inputs.end()) {
          dequantized_input = true;
        }
      }
      EXPECT_EQ(dequantized_input, !exclude);
    }
    CompareOptions compare;
    compare.onnx_path = calibrate.output_path;
    compare.shapes = {{"input", {2, 1, 28, 28}}};
    compare.run_engine = false;
    auto compared = run_compare(compare, out);
    ASSERT_TRUE(std::holds_alternative<CompareReport>(compared)) << std::get<RunError>(compared).status.to_string();
    tensor_counts.push_back(std::get<CompareReport>(compared).tensors.size());
  }
  EXPECT_EQ(tensor_counts[1] + 1, tensor_counts[0]);
  calibrate.exclude = {"/fc/Gem"};
  auto unknown = run_calibrate(calibrate, out);
  ASSERT_TRUE(std::holds_alternative<CalibrateError>(unknown));
  EXPECT_TRUE(std::get<CalibrateError>(unknown).usage);
  EXPECT_NE(std::get<CalibrateError>(unknown).status.message().find("closest: '/fc/Gemm'"), std::string::npos);
}

// calibrate --sensitivity: every quantized node once, ranked by top-1 lost; the FP32 and
// all-quantized figures are the engines' on the same images.
TEST_F(MixedPrecisionTest, CalibrateSensitivityRanksEveryQuantizedNode) {
  if (!std::filesystem::exists(std::string(kDefaultFashionMnistDir))) GTEST_SKIP() << "no Fashion-MNIST";
  CalibrateOptions calibrate;
  calibrate.onnx_path = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_fp32.onnx";
  calibrate.data_spec = "fashion-mnist:train";
  calibrate.samples = 32;
  calibrate.show_progress = false;
  calibrate.threads = 2;
  calibrate.output_path = path("ranked.onnx");
  calibrate.sensitivity_spec = "fashion-mnist:test";
  calibrate.sensitivity_samples = 64;
  std::ostringstream out;
  auto calibrated = run_calibrate(calibrate, out);
  ASSERT_TRUE(std::holds_alternative<CalibrateResult>(calibrated))
      << std::get<CalibrateError>(calibrated).status.to_string();
  const auto& sensitivity = std::get<CalibrateResult>(calibrated).sensitivity;
  ASSERT_TRUE(sensitivity.has_value());
  EXPECT_EQ(sensitivity->images, 64);
  EXPECT_EQ(sensitivity->rows.size(), 13u);  // 9 Conv, 3 residual Add, the Gemm
  for (size_t i = 1; i < sensitivity->rows.size(); ++i) EXPECT_GE(sensitivity->rows[i - 1].lost, sensitivity->rows[i].lost);
  for (const SensitivityRow& row : sensitivity->rows) {
    EXPECT_NEAR(row.top1 + row.lost, sensitivity->fp32_top1, 1e-9);
  }
  auto fp32 = load_dataset("fashion-mnist:test", {.mean = {0.286f}, .std = {0.353f}, .max_images = 64});
  ASSERT_TRUE(fp32.ok());
  auto top1 = engine_top1(calibrate.onnx_path, true, *fp32, 2);
  ASSERT_TRUE(top1.ok());
  EXPECT_DOUBLE_EQ(sensitivity->fp32_top1, *top1);
  EXPECT_NE(out.str().find("=== Sensitivity: top-1 on 64 validation images with one node quantized at a time ==="),
            std::string::npos)
      << out.str();
}

TEST(Sensitivity, TableMostLostFirst) {
  SensitivityReport report;
  report.images = 100;
  report.fp32_top1 = 90;
  report.int8_top1 = 80;
  report.rows = {{"conv_a", "Conv", 82, 8}, {"add_b", "Add", 89.5, 0.5}};
  std::string table = format_sensitivity_table(report);
  EXPECT_NE(table.find("FP32 90.00%, every node quantized 80.00% (-10.00 points)"), std::string::npos) << table;
  EXPECT_NE(table.find("   1          8.00      82.00  conv_a (Conv)\n"), std::string::npos) << table;
}

}  // namespace
}  // namespace qdqrt::tools
