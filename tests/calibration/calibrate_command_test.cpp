// `qdqrt calibrate` as a library call: the QDQ model and TensorRT cache it writes, and its errors.
#include <gtest/gtest.h>

#include <onnx/defs/parser.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "tools/npy.h"
#include "parser/onnx_loader.h"
#include "tools/calibrate_command.h"
#include "tools/calibration/calibrate_model.h"
#include "tools/calibration/calibration_cache.h"

namespace qdqrt::calibration {
namespace {

namespace fs = std::filesystem;

const std::string kFp32Model = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_fp32.onnx";

TEST(CalibrateCommand, WritesModelAndTensorRTCacheAndReportsErrors) {
  fs::path dir = fs::temp_directory_path() / "qdqrt_calibrate_command";
  fs::remove_all(dir);
  fs::create_directories(dir);
  tools::CalibrateOptions options;
  options.onnx_path = kFp32Model;
  options.data_spec = "fashion-mnist:train";
  options.samples = 16;
  options.mean = {0.2860f};
  options.std = {0.3530f};
  options.method = *parse_method("percentile=99.9");
  options.output_path = (dir / "ptq.onnx").string();
  options.calibration_cache_path = (dir / "cache.txt").string();
  options.show_progress = false;
  std::ostringstream out;
  auto outcome = tools::run_calibrate(options, out);
  ASSERT_TRUE(std::holds_alternative<tools::CalibrateResult>(outcome))
      << std::get<tools::CalibrateError>(outcome).status.to_string();
  const auto& result = std::get<tools::CalibrateResult>(outcome);
  EXPECT_EQ(result.images, 16);
  EXPECT_EQ(result.quantized_weights, 10);
  EXPECT_TRUE(load_onnx_file(options.output_path).ok());
  EXPECT_NE(out.str().find("percentile=99.9"), std::string::npos) << out.str();

  // The cache: header, then one "name: 8 hex digits" line per tensor; the hex is the float32 bits
  // of amax / 127.
  std::ifstream cache(options.calibration_cache_path);
  std::string line;
  std::getline(cache, line);
  EXPECT_EQ(line, "TRT-8601-EntropyCalibration2");
  int lines = 0;
  while (std::getline(cache, line)) {
    size_t colon = line.rfind(": ");
    ASSERT_NE(colon, std::string::npos) << line;
    std::string name = line.substr(0, colon);
    std::string hex = line.substr(colon + 2);
    ASSERT_EQ(hex.size(), 8u) << line;
    uint32_t bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    float scale = 0;
    std::memcpy(&scale, &bits, 4);
    ASSERT_TRUE(result.activation_amax.count(name)) << name;
    EXPECT_EQ(scale, scale_for_amax(result.activation_amax.at(name))) << name;
    ++lines;
  }
  EXPECT_EQ(lines, static_cast<int>(result.activation_amax.size()));

  // Errors: a data set whose images do not fit the model, and a bad SPEC, are usage errors.
  tools::CalibrateOptions wrong = options;
  fs::path npy_dir = dir / "rgb";
  fs::create_directories(npy_dir);
  ASSERT_TRUE(write_npy((npy_dir / "x.npy").string(), Tensor(DataType::kFloat, {2, 3, 8, 8})).is_ok());
  wrong.data_spec = "npy:" + npy_dir.string();
  wrong.mean.clear();
  wrong.std.clear();
  auto mismatch = tools::run_calibrate(wrong, out);
  ASSERT_TRUE(std::holds_alternative<tools::CalibrateError>(mismatch));
  EXPECT_TRUE(std::get<tools::CalibrateError>(mismatch).usage);
  EXPECT_NE(std::get<tools::CalibrateError>(mismatch).status.message().find("[3, 8, 8]"), std::string::npos);
  wrong.data_spec = "mnist:train";
  auto bad_spec = tools::run_calibrate(wrong, out);
  ASSERT_TRUE(std::holds_alternative<tools::CalibrateError>(bad_spec));
  EXPECT_TRUE(std::get<tools::CalibrateError>(bad_spec).usage);
  // An already-quantized model is a failure naming the problem.
  wrong = options;
  wrong.onnx_path = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_qdq.onnx";
  auto quantized = tools::run_calibrate(wrong, out);
  ASSERT_TRUE(std::holds_alternative<tools::CalibrateError>(quantized));
  EXPECT_FALSE(std::get<tools::CalibrateError>(quantized).usage);
  fs::remove_all(dir);
}

// A static batch dim is the batch the model runs at: eval and exec refuse another one, and so
// does calibrate (it once ran batches of 32 through a model declaring 1).
// `qdqrt exec --calib` reads the cache back: scales round-trip bit for bit, a TensorRT-written
// cache (names with ':' and spaces, CRLF) parses, and malformed lines are named.
TEST(CalibrationCache, ParsesWhatItWritesAndTensorRTsCaches) {
  std::map<std::string, float> scales = {{"input", 0.0078125f}, {"conv1_output", 0.0173f}, {"zero", 0.0f}};
  auto parsed = parse_calibration_cache(format_calibration_cache(scales, MethodSpec{}));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, scales);
  parsed = parse_calibration_cache("TRT-8601-EntropyCalibration2\r\n(Unnamed Layer* 3) [Convolution]_output: 3c010a14\r\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->count("(Unnamed Layer* 3) [Convolution]_output"), 1u);
  EXPECT_FLOAT_EQ(parsed->at("(Unnamed Layer* 3) [Convolution]_output"), 0.00787594f);
  struct Case {
    std::string text, expected;
  };
  for (const Case& test : std::vector<Case>{
           {"", "empty"},
           {"input: 3c010a14\n", "line 1: 'input: 3c010a14' is not a calibration cache header"},
           {"TRT-8601-MinMaxCalibration\ninput 3c010a14\n", "line 2: 'input 3c010a14' is not 'tensor: <8 hex digits>'"},
           {"TRT-8601-MinMaxCalibration\ninput: xyz\n", "line 2"},
           {"TRT-8601-MinMaxCalibration\ninput: 7fc00000\n", "line 2: tensor 'input' has scale nan"}}) {
    auto bad = parse_calibration_cache(test.text);
    ASSERT_FALSE(bad.ok()) << test.text;
    EXPECT_NE(bad.status().message().find(test.expected), std::string::npos) << bad.status().message();
  }
}

TEST(CalibrateCommand, AStaticBatchDimIsHeldTo) {
  fs::path dir = fs::temp_directory_path() / ("qdqrt_calibrate_static_batch_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "images");
  onnx::ModelProto model;
  ASSERT_TRUE(onnx::OnnxParser::Parse(model, R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,1,4,4] x) => (float[2,2,4,4] y)
    <float[2,1,1,1] w = {0.5, -1.0}>
    {
      y = Conv(x, w)
    })").IsOK());
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  std::ofstream(dir / "static.onnx", std::ios::binary) << bytes;
  ASSERT_TRUE(write_npy((dir / "images/a.npy").string(), Tensor(DataType::kFloat, {6, 1, 4, 4})).is_ok());

  tools::CalibrateOptions options;
  options.onnx_path = (dir / "static.onnx").string();
  options.data_spec = "npy:" + (dir / "images").string();
  options.samples = 6;
  options.output_path = (dir / "ptq.onnx").string();
  options.show_progress = false;
  std::ostringstream out;
  options.batch_size = 4;
  auto wrong_batch = tools::run_calibrate(options, out);
  ASSERT_TRUE(std::holds_alternative<tools::CalibrateError>(wrong_batch));
  EXPECT_TRUE(std::get<tools::CalibrateError>(wrong_batch).usage);
  EXPECT_NE(std::get<tools::CalibrateError>(wrong_batch).status.message().find("static batch dim of 2"),
            std::string::npos)
      << std::get<tools::CalibrateError>(wrong_batch).status.message();

  options.batch_size = 0;  // automatic: the model's 2
  options.samples = 5;
  auto odd_count = tools::run_calibrate(options, out);
  ASSERT_TRUE(std::holds_alternative<tools::CalibrateError>(odd_count));
  EXPECT_NE(std::get<tools::CalibrateError>(odd_count).status.message().find("multiple of it"), std::string::npos);

  options.samples = 6;
  auto calibrated = tools::run_calibrate(options, out);
  EXPECT_TRUE(std::holds_alternative<tools::CalibrateResult>(calibrated))
      << std::get<tools::CalibrateError>(calibrated).status.to_string();
  fs::remove_all(dir);
}

TEST(CalibrateCommand, AutomaticBatchSizeBoundsMemory) {
  auto graph = load_onnx_file(kFp32Model);
  ASSERT_TRUE(graph.ok());
  // input [batch, 1, 28, 28]: 3136 bytes per image.
  EXPECT_EQ(automatic_batch_size(*graph, {"input"}, 3136 * 10), 10);
  EXPECT_EQ(automatic_batch_size(*graph, {"input"}, 100), 1);
  EXPECT_EQ(automatic_batch_size(*graph, {"input"}), 32);
  // Two 16x28x28 tensors and the input: 3136 + 2 * 50176 bytes.
  EXPECT_EQ(automatic_batch_size(
                *graph, {"input", "/stem/stem.2/Relu_output_0", "/blocks/blocks.0/Relu_output_0"}, 103488 * 3),
            3);
}

}  // namespace
}  // namespace qdqrt::calibration
