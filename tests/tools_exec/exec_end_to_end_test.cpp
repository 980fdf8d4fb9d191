// qdqrt exec end to end, in-process: on a small Q/DQ model written by the test (quantize and
// dequantize layers: build, run, profile, every export, outputs equal to the reference executor,
// shape errors) and on models/fmnist_resnet_qdq.onnx (build + save, load, run with profiling and
// every export; the loaded engine gives the built engine's outputs bit for bit).

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tools/npy.h"
#include "parser/onnx_loader.h"
#include "parser/onnx_writer.h"
#include "reference/executor.h"
#include "tests/optimizer_passes/pass_test_util.h"
#include "tools/exec_command.h"

namespace qdqrt::tools {
namespace {

const std::string kFmnistModel = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_qdq.onnx";

// Batch N symbolic; q (int8) and y (float) both outputs so the optimizer keeps both layers.
const char* kQdqModelText = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3,5,7] x) => (int8[N,3,5,7] q, float[N,3,5,7] y)
  <float s = {0.05}, int8 zp = {3}>
  {
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
  })";

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing " << path;
  return file.good() ? nlohmann::json::parse(file) : nlohmann::json();
}

class ExecEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qdqrt_exec_e2e_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    qdq_model_ = path("qdq.onnx");
    ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(kQdqModelText), qdq_model_).is_ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Short runs: no warm-up time, exactly `iterations` timed runs, 2 threads.
  ExecOptions quick_options(int iterations = 20) const {
    ExecOptions options;
    options.iterations = iterations;
    options.warm_up_ms = 0;
    options.duration_s = 0;
    options.threads = 2;
    return options;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::optional<RunError> run(const ExecOptions& options) {
    std::ostringstream out;
    std::optional<RunError> error = run_exec(options, out);
    text_ = out.str();
    return error;
  }

  std::filesystem::path dir_;
  std::string qdq_model_;
  std::string text_;  // stdout of the last run()
};

TEST_F(ExecEndToEndTest, SmallModelBuildRunProfileAndExports) {
  // Batch 4 from a file: the engine is built for the file's shape; outputs must be the reference's.
  Tensor x(DataType::kFloat, {4, 3, 5, 7});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 23) * 0.07f - 0.8f;
  ASSERT_TRUE(write_npy(path("x.npy"), x).is_ok());
  ExecOptions options = quick_options();
  options.onnx_path = qdq_model_;
  options.input_files = {{"x", path("x.npy")}};
  options.dump_profile = true;
  options.dump_layer_info = true;
  options.export_profile_path = path("profile.json");
  options.export_times_path = path("times.json");
  options.export_output_path = path("output.json");
  options.export_layer_info_path = path("layers.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string() << "\n" << text_;

  EXPECT_NE(text_.find("=== Build ===\nModel: " + qdq_model_ + "\nBuild time: "), std::string::npos) << text_;
  EXPECT_NE(text_.find("\nPrecision: int8 (int8: 0 of 2 layers, 2 quantize/dequantize/reorder)\n"), std::string::npos)
      << text_;
  EXPECT_NE(text_.find("Layers: 2 (dequantize x1, quantize x1)\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("Input: x float32 [4, 3, 5, 7]\nOutput: q int8 [4, 3, 5, 7]\nOutput: y float32 [4, 3, 5, 7]\n"
                       "Max batch: 4\n"),
            std::string::npos)
      << text_;
  EXPECT_NE(text_.find("=== Layer information ==="), std::string::npos) << text_;
  EXPECT_NE(text_.find("Shapes: x:4x3x5x7 (batch 4)\nThreads: 2\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("=== Performance summary ===\nThroughput: "), std::string::npos) << text_;
  EXPECT_NE(text_.find(", percentile(90%) = "), std::string::npos) << text_;
  EXPECT_NE(text_.find("Total Host Walltime: "), std::string::npos) << text_;
  EXPECT_NE(text_.find("Sample throughput: "), std::string::npos) << text_;
  EXPECT_NE(text_.find(" samples/s at batch 4\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("=== Profile (20 iterations) ===\n   Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer\n"),
            std::string::npos)
      << text_;
  EXPECT_NE(text_.find("   QuantizeLinear_0\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("   DequantizeLinear_1\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("     100.0   Total\n"), std::string::npos) << text_;
  EXPECT_LT(text_.find("=== Build ==="), text_.find("=== Performance summary ==="));
  EXPECT_LT(text_.find("=== Performance summary ==="), text_.find("=== Profile"));

  nlohmann::json profile = read_json(path("profile.json"));
  ASSERT_EQ(profile.size(), 3u);
  EXPECT_EQ(profile[0], (nlohmann::json{{"count", 20}}));
  EXPECT_EQ(profile[1]["name"], "QuantizeLinear_0");  // the loader names unnamed nodes
  EXPECT_EQ(profile[2]["name"], "DequantizeLinear_1");
  EXPECT_NEAR(profile[1]["percentage"].get<double>() + profile[2]["percentage"].get<double>(), 100.0, 1e-9);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_GT(profile[i]["timeMs"].get<double>(), 0);  // the engine measured each layer
    EXPECT_NEAR(profile[i]["averageMs"].get<double>() * 20, profile[i]["timeMs"].get<double>(), 1e-9);
  }

  nlohmann::json times = read_json(path("times.json"));
  ASSERT_EQ(times.size(), 20u);  // --duration=0: exactly --iterations runs
  for (size_t i = 1; i < times.size(); ++i) {
    EXPECT_GE(times[i]["startComputeMs"].get<double>(), times[i - 1]["endComputeMs"].get<double>());
    EXPECT_GE(times[i]["latencyMs"].get<double>(), 0);
  }

  nlohmann::json layers = read_json(path("layers.json"));
  ASSERT_EQ(layers["Layers"].size(), 2u);
  EXPECT_EQ(layers["Layers"][0]["LayerType"], "quantize");
  EXPECT_FALSE(layers["Layers"][0]["QdqrtKernel"].get<std::string>().empty());
  EXPECT_EQ(layers["Layers"][0]["Outputs"][0]["Datatype"], "int8");
  EXPECT_EQ(layers["Layers"][0]["Outputs"][0]["Dimensions"], nlohmann::json::array({4, 3, 5, 7}));
  EXPECT_EQ(layers["Precision"], "int8");
  EXPECT_EQ(layers["MaxBatch"], 4);

  // The exported outputs are the engine's real outputs: equal to the reference executor's.
  auto expected = run_reference(qdqrt::testing::parse_graph(kQdqModelText), {{"x", x}});
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  nlohmann::json outputs = read_json(path("output.json"));
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0]["name"], "q");
  EXPECT_EQ(outputs[0]["dimensions"], "4x3x5x7");
  EXPECT_EQ(outputs[1]["name"], "y");
  const Tensor& q = expected->at("q");
  const Tensor& y = expected->at("y");
  ASSERT_EQ(outputs[0]["values"].size(), static_cast<size_t>(q.numel()));
  ASSERT_EQ(outputs[1]["values"].size(), static_cast<size_t>(y.numel()));
  for (int64_t i = 0; i < q.numel(); ++i) {
    ASSERT_EQ(outputs[0]["values"][i].get<int>(), q.data<int8_t>()[i]) << "q[" << i << "]";
    ASSERT_EQ(outputs[1]["values"][i].get<float>(), y.data<float>()[i]) << "y[" << i << "]";
  }
}

TEST_F(ExecEndToEndTest, SeparateProfileRunProfilesASecondLoop) {
  ExecOptions options = quick_options(8);
  options.onnx_path = qdq_model_;
  options.separate_profile_run = true;
  options.export_profile_path = path("profile.json");
  options.export_times_path = path("times.json");
  options.verbose = true;
  options.avg_runs = 4;
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find("profiled in a separate run"), std::string::npos) << text_;
  EXPECT_EQ(text_.find("=== Profile"), std::string::npos) << "no --dumpProfile: no table";
  // --verbose: where the input comes from, the kernels, the trace averages of --avgRuns runs, the outputs.
  EXPECT_NE(text_.find("input 'x': float32 [1, 3, 5, 7] random (seed 0)"), std::string::npos) << text_;
  EXPECT_NE(text_.find("Kernel: "), std::string::npos) << text_;
  EXPECT_NE(text_.find("Trace averages of 4 runs:\nAverage on 4 runs - latency: "), std::string::npos) << text_;
  EXPECT_NE(text_.find("y: float32 [1, 3, 5, 7]"), std::string::npos) << text_;
  EXPECT_EQ(read_json(path("profile.json"))[0]["count"], 8);
  EXPECT_EQ(read_json(path("times.json")).size(), 8u);
}

TEST_F(ExecEndToEndTest, WithoutProfilingFlagsNothingIsProfiled) {
  ExecOptions options = quick_options(3);
  options.onnx_path = qdq_model_;
  options.export_times_path = path("times.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_EQ(text_.find("=== Profile"), std::string::npos);
  EXPECT_EQ(text_.find("profiled"), std::string::npos);
  EXPECT_EQ(read_json(path("times.json")).size(), 3u);
}

// --threads above the hardware threads warns (64 threads on 2 cores made a first run take 6 s);
// --streams runs contexts at once and merges their runs; --dumpOutput prints the outputs.
TEST_F(ExecEndToEndTest, ThreadWarningStreamsAndDumpOutput) {
  ExecOptions options = quick_options(4);
  options.onnx_path = qdq_model_;
  options.threads = static_cast<int>(std::thread::hardware_concurrency()) + 1;
  options.streams = 2;
  options.dump_output = true;
  options.export_times_path = path("times.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find(fmt::format("[W] {} threads on {} hardware threads", 2 * options.threads,
                                   std::thread::hardware_concurrency())),
            std::string::npos)
      << text_;
  EXPECT_NE(text_.find("Streams: 2 (each its own context and host thread)"), std::string::npos) << text_;
  EXPECT_NE(text_.find("Total Inferences: 8\n"), std::string::npos) << text_;  // 4 per stream
  nlohmann::json times = read_json(path("times.json"));
  ASSERT_EQ(times.size(), 8u);
  for (size_t i = 1; i < times.size(); ++i) {
    EXPECT_GE(times[i]["startComputeMs"].get<double>(), times[i - 1]["startComputeMs"].get<double>());
  }
  EXPECT_NE(text_.find("=== Outputs ===\nq: int8 [1, 3, 5, 7]"), std::string::npos) << text_;
}

// A model without Q/DQ says so: FP32 label and a [W] line, unless FP32 was asked for.
TEST_F(ExecEndToEndTest, AModelWithoutQdqIsLabelledFp32WithAWarning) {
  std::string plain = path("plain.onnx");
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3] x) => (float[N,3] y) { y = Relu(x) })"),
                              plain)
                  .is_ok());
  ExecOptions options = quick_options(1);
  options.onnx_path = plain;
  options.skip_inference = true;
  options.export_layer_info_path = path("layers.json");
  ASSERT_FALSE(run(options));
  EXPECT_NE(text_.find("Precision: fp32 (int8: 0 of 1 layers; this model has no Q/DQ)\n"), std::string::npos) << text_;
  EXPECT_NE(text_.find("[W] int8: 0 of 1 layers: this model has no Q/DQ, so every layer runs in FP32."),
            std::string::npos)
      << text_;
  EXPECT_EQ(read_json(path("layers.json"))["Precision"], "fp32");
  options.fp32 = true;
  ASSERT_FALSE(run(options));
  EXPECT_NE(text_.find("Precision: fp32 (int8: 0 of 1 layers)\n"), std::string::npos) << text_;
  EXPECT_EQ(text_.find("[W]"), std::string::npos) << text_;
}

// trtexec's raw input files: exactly the run shape's bytes.
TEST_F(ExecEndToEndTest, RawBinInputs) {
  Tensor x(DataType::kFloat, {2, 3, 5, 7});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 11) * 0.1f;
  std::ofstream(path("x.bin"), std::ios::binary).write(static_cast<const char*>(x.raw_data()),
                                                        static_cast<std::streamsize>(x.nbytes()));
  ExecOptions options = quick_options(1);
  options.onnx_path = qdq_model_;
  options.shapes = {{"x", {2, 3, 5, 7}}};
  options.input_files = {{"x", path("x.bin")}};
  options.export_output_path = path("out.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string();
  auto expected = run_reference(qdqrt::testing::parse_graph(kQdqModelText), {{"x", x}});
  ASSERT_TRUE(expected.ok());
  nlohmann::json outputs = read_json(path("out.json"));
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(outputs[1]["values"][i].get<float>(), expected->at("y").data<float>()[i]) << i;
  }
  options.shapes = {{"x", {1, 3, 5, 7}}};  // the file holds two images
  error = run(options);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("holds 840 bytes; float32 [1, 3, 5, 7] needs 420"), std::string::npos)
      << error->status.message();
}

// An output whose batch is not on dim 0 (a sequence-first tensor, [S, N, C]) is bound at the run's
// batch on its own batch axis, and a tensor marked with --markDebug likewise.
TEST_F(ExecEndToEndTest, OutputsWithTheBatchOffDimZero) {
  const char* text = R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,3,4] x) => (float[3,N,4] y)
    {
      t = Transpose <perm = [1, 0, 2]> (x)
      y = Relu(t)
    })";
  const std::string model = path("seq_first.onnx");
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(text), model).is_ok());
  Tensor x(DataType::kFloat, {2, 3, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) * 0.3f - 0.9f;
  ASSERT_TRUE(write_npy(path("x.npy"), x).is_ok());
  ExecOptions options = quick_options(1);
  options.onnx_path = model;
  options.shapes = {{"x", {2, 3, 4}}};
  options.input_files = {{"x", path("x.npy")}};
  options.debug_tensors = {"t"};
  options.save_debug_tensors = {{"t", path("t.bin")}};
  options.export_output_path = path("out.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string() << "\n" << text_;
  auto expected = run_reference(qdqrt::testing::parse_graph(text), {{"x", x}});
  ASSERT_TRUE(expected.ok());
  nlohmann::json outputs = read_json(path("out.json"));
  ASSERT_EQ(outputs[0]["name"], "y");
  EXPECT_EQ(outputs[0]["dimensions"], "3x2x4");
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(outputs[0]["values"][i].get<float>(), expected->at("y").data<float>()[i]) << i;
  }
  EXPECT_EQ(std::filesystem::file_size(path("t.bin")), static_cast<uintmax_t>(x.nbytes()));
}

TEST_F(ExecEndToEndTest, SkipInferenceStopsAfterTheEngineSummary) {
  ExecOptions options = quick_options(3);
  options.onnx_path = qdq_model_;
  options.skip_inference = true;
  options.export_times_path = path("times.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find("=== Engine ==="), std::string::npos) << text_;
  EXPECT_EQ(text_.find("=== Inference ==="), std::string::npos) << text_;
  EXPECT_EQ(text_.find("=== Performance summary ==="), std::string::npos) << text_;
  EXPECT_FALSE(std::filesystem::exists(path("times.json")));
}

TEST_F(ExecEndToEndTest, ShapeErrorsAreUsageErrors) {
  struct Case {
    std::map<std::string, Shape> shapes;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{{"x", {2, 3, 5, 8}}}, "dim 3"},
      {{{"x", {2, 3, 5}}}, "rank"},
      {{{"images", {2, 3, 5, 7}}}, "'images'"},
  };
  for (const Case& test : cases) {
    ExecOptions options = quick_options(1);
    options.onnx_path = qdq_model_;
    options.shapes = test.shapes;
    std::optional<RunError> error = run(options);
    ASSERT_TRUE(error) << test.expected;
    EXPECT_TRUE(error->usage) << error->status.to_string();
    EXPECT_NE(error->status.message().find(test.expected), std::string::npos)
        << error->status.message() << "\n  want: " << test.expected;
  }
}

// A model that does not build is a failure (exit 1), not a usage error (exit 2), even when the
// optimizer's constant folding reports it as an invalid argument of a reference kernel; a layer
// that fails at run time fails the run (exit 1) naming the layer.
TEST_F(ExecEndToEndTest, AModelThatDoesNotBuildIsAFailureNotAUsageError) {
  const std::string model = path("bad_constant.onnx");
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] x) => (float[1,4] y)
    <float[10] table = {0,1,2,3,4,5,6,7,8,9}, int64[4] index = {0, 1, 2, 100}>
    {
      picked = Gather(table, index)
      y = Add(x, picked)
    })"),
                              model)
                  .is_ok());
  ExecOptions options = quick_options(1);
  options.onnx_path = model;
  std::optional<RunError> error = run(options);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->usage) << error->status.to_string();
  EXPECT_NE(error->status.message().find("100"), std::string::npos) << error->status.message();

  const std::string runtime_model = path("bad_index.onnx");
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,10] x, int64[1] i) => (float[1,1] y)
    {
      y = Gather <axis = 1> (x, i)
    })"),
                              runtime_model)
                  .is_ok());
  Tensor index = Tensor::scalar<int64_t>(100).reshaped({1});
  ASSERT_TRUE(write_npy(path("i.npy"), index).is_ok());
  options.onnx_path = runtime_model;
  options.input_files = {{"i", path("i.npy")}};
  error = run(options);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->usage) << error->status.to_string();
  EXPECT_NE(error->status.message().find("failed at batch 1"), std::string::npos) << error->status.message();
}

// --minShapes/--maxShapes over height and width: a range engine, run at the --loadInputs file's
// shape (inside the range) with outputs equal to the reference executor's; a file outside the
// range is a usage error naming the input, dim and range.
TEST_F(ExecEndToEndTest, ShapeRangeOnHeightAndWidth) {
  const std::string model = path("qdq_hw.onnx");
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3,H,W] x) => (float[N,3,H,W] y)
  <float s = {0.05}, int8 zp = {3}>
  {
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
  })"),
                              model)
                  .is_ok());
  Tensor x(DataType::kFloat, {1, 3, 6, 9});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 29) * 0.05f - 0.6f;
  ASSERT_TRUE(write_npy(path("x.npy"), x).is_ok());
  ExecOptions options = quick_options(2);
  options.onnx_path = model;
  options.min_shapes = {{"x", {1, 3, 4, 4}}};
  options.opt_shapes = {{"x", {2, 3, 8, 8}}};
  options.max_shapes = {{"x", {2, 3, 8, 16}}};
  options.input_files = {{"x", path("x.npy")}};
  options.export_output_path = path("output.json");
  std::optional<RunError> error = run(options);
  ASSERT_FALSE(error) << error->status.to_string() << "\n" << text_;
  EXPECT_NE(text_.find("Shape range: x: min [1, 3, 4, 4] opt [2, 3, 8, 8] max [2, 3, 8, 16]\n"), std::string::npos)
      << text_;
  EXPECT_NE(text_.find("Plans lowered: 2 "), std::string::npos) << text_;  // the opt shape, then 6x9
  EXPECT_NE(text_.find("Input: x float32 [2, 3, 6, 9]\n"), std::string::npos) << text_;  // batches 1..2
  EXPECT_NE(text_.find("Shapes: x:1x3x6x9 (batch 1)\n"), std::string::npos) << text_;
  auto graph = load_onnx_file(model, {.input_shapes = {{"x", {1, 3, 6, 9}}}});
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto expected = run_reference(*graph, {{"x", x}});
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  nlohmann::json outputs = read_json(path("output.json"));
  ASSERT_EQ(outputs.size(), 1u);
  const Tensor& y = expected->at("y");
  ASSERT_EQ(outputs[0]["values"].size(), static_cast<size_t>(y.numel())) << outputs[0].dump().substr(0, 300);
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_EQ(outputs[0]["values"][static_cast<size_t>(i)].get<float>(), y.data<float>()[i]) << i;
  }

  Tensor too_tall(DataType::kFloat, {1, 3, 9, 9});
  ASSERT_TRUE(write_npy(path("tall.npy"), too_tall).is_ok());
  options.input_files = {{"x", path("tall.npy")}};
  error = run(options);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("input 'x': dim 2 of [1, 3, 9, 9] is 9, outside the profile's range 4..8"),
            std::string::npos)
      << error->status.message();
}

// A range engine saved with --saveEngine runs through --loadEngine at any --shapes of its
// profiles (as trtexec runs a dynamic-shape engine), with the reference executor's outputs; the
// summary names the run shape and profile; shapes outside every profile and a missing --profile
// are usage errors.
TEST_F(ExecEndToEndTest, ASavedRangeEngineRunsAtAnyShapeOfItsProfiles) {
  const std::string model = path("qdq_hw_saved.onnx");
  ASSERT_TRUE(write_onnx_file(qdqrt::testing::parse_graph(R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[N,3,H,W] x) => (float[N,3,H,W] y)
  <float s = {0.05}, int8 zp = {3}>
  {
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
  })"),
                              model)
                  .is_ok());
  ExecOptions build = quick_options(2);
  build.onnx_path = model;
  build.min_shapes = {{"x", {1, 3, 4, 4}}};
  build.opt_shapes = {{"x", {1, 3, 8, 8}}};
  build.max_shapes = {{"x", {2, 3, 8, 16}}};
  build.more_profiles = {{{{"x", {1, 3, 32, 32}}}, {{"x", {1, 3, 40, 40}}}, {{"x", {1, 3, 48, 48}}}}};
  build.save_engine_path = path("range.qdqrt");
  build.skip_inference = true;
  std::optional<RunError> error = run(build);
  ASSERT_FALSE(error) << error->status.to_string() << "\n" << text_;
  EXPECT_NE(text_.find("Saved engine: " + build.save_engine_path), std::string::npos) << text_;

  for (const Shape& shape : {Shape{1, 3, 6, 9}, Shape{2, 3, 8, 16}, Shape{1, 3, 45, 33}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Tensor x(DataType::kFloat, shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 31) * 0.05f - 0.7f;
    ASSERT_TRUE(write_npy(path("x.npy"), x).is_ok());
    ExecOptions load = quick_options(2);
    load.load_engine_path = build.save_engine_path;
    load.input_files = {{"x", path("x.npy")}};
    load.export_output_path = path("output.json");
    load.dump_optimization_profile = true;
    error = run(load);
    ASSERT_FALSE(error) << error->status.to_string() << "\n" << text_;
    EXPECT_NE(text_.find("a range engine)"), std::string::npos) << text_;
    EXPECT_NE(text_.find("Profile 0: x: min [1, 3, 4, 4] opt [1, 3, 8, 8] max [2, 3, 8, 16]\n"), std::string::npos)
        << text_;
    EXPECT_NE(text_.find("Profile 1: x: min [1, 3, 32, 32] opt [1, 3, 40, 40] max [1, 3, 48, 48]\n"),
              std::string::npos)
        << text_;
    EXPECT_NE(text_.find(fmt::format("Run shape: x:{} (profile {})", fmt::join(shape, "x"), shape[2] > 8 ? 1 : 0)),
              std::string::npos)
        << text_;
    auto graph = load_onnx_file(model, {.input_shapes = {{"x", shape}}});
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    auto expected = run_reference(*graph, {{"x", x}});
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    nlohmann::json outputs = read_json(path("output.json"));
    const Tensor& y = expected->at("y");
    ASSERT_EQ(outputs[0]["values"].size(), static_cast<size_t>(y.numel()));
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_EQ(outputs[0]["values"][static_cast<size_t>(i)].get<float>(), y.data<float>()[i]) << i;
    }
  }
  ExecOptions outside = quick_options(2);
  outside.load_engine_path = build.save_engine_path;
  outside.shapes = {{"x", {1, 3, 20, 20}}};
  error = run(outside);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("none of the 2 profiles"), std::string::npos) << error->status.message();
  outside.shapes = {{"x", {1, 3, 6, 6}}};
  outside.profile = 1;
  error = run(outside);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("profile 1"), std::string::npos) << error->status.message();
  outside.profile = 5;
  error = run(outside);
  ASSERT_TRUE(error);
  EXPECT_NE(error->status.message().find("--profile: profile 5 does not exist: the engine has 2"), std::string::npos)
      << error->status.message();
}

TEST_F(ExecEndToEndTest, SaveLoadBatchesAndPrecisionFlags) {
  ExecOptions build = quick_options(2);
  build.onnx_path = qdq_model_;
  build.shapes["x"] = {4, 3, 5, 7};
  build.save_engine_path = path("qdq.qdqrt");
  build.export_output_path = path("built.json");
  std::optional<RunError> error = run(build);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find("Saved engine: " + build.save_engine_path), std::string::npos) << text_;

  ExecOptions load = quick_options(2);
  load.load_engine_path = build.save_engine_path;
  load.export_output_path = path("loaded.json");
  error = run(load);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find("=== Load ===\nEngine: " + load.load_engine_path), std::string::npos) << text_;
  EXPECT_EQ(read_json(path("loaded.json")), read_json(path("built.json")));

  load.shapes["x"] = {2, 3, 5, 7};
  load.export_output_path = path("batch2.json");
  error = run(load);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_EQ(read_json(path("batch2.json"))[0]["dimensions"], "2x3x5x7");

  load.shapes["x"] = {8, 3, 5, 7};
  error = run(load);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("--shapes: input 'x': batch 8 is outside the engine's range 1..4"),
            std::string::npos)
      << error->status.message();

  load.shapes.clear();
  load.fp32 = true;  // the engine is int8: asking for fp32 is refused, not ignored
  error = run(load);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("the engine was built as int8, not fp32"), std::string::npos)
      << error->status.message();
}

TEST_F(ExecEndToEndTest, FmnistBuildSaveLoadWithProfile) {
  ExecOptions build = quick_options();
  build.onnx_path = kFmnistModel;
  build.save_engine_path = path("fmnist.qdqrt");
  build.dump_profile = true;
  build.export_profile_path = path("profile.json");
  build.export_times_path = path("times.json");
  build.export_output_path = path("built.json");
  std::optional<RunError> error = run(build);
  ASSERT_FALSE(error) << error->status.to_string() << "\n" << text_;
  EXPECT_NE(text_.find("=== Profile (20 iterations) ==="), std::string::npos) << text_;

  nlohmann::json profile = read_json(path("profile.json"));
  ASSERT_GE(profile.size(), 2u);
  EXPECT_EQ(profile[0]["count"], 20);
  double percentage_sum = 0;
  for (size_t i = 1; i < profile.size(); ++i) percentage_sum += profile[i]["percentage"].get<double>();
  EXPECT_NEAR(percentage_sum, 100.0, 1e-6);
  EXPECT_EQ(read_json(path("times.json")).size(), 20u);
  nlohmann::json built = read_json(path("built.json"));
  ASSERT_EQ(built.size(), 1u);
  EXPECT_EQ(built[0]["name"], "output");
  EXPECT_EQ(built[0]["dimensions"], "1x10");
  EXPECT_EQ(built[0]["values"].size(), 10u);

  ExecOptions load = quick_options(20);
  load.load_engine_path = build.save_engine_path;
  load.dump_profile = true;
  load.export_output_path = path("loaded.json");
  error = run(load);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find("=== Profile (20 iterations) ==="), std::string::npos) << text_;
  EXPECT_EQ(read_json(path("loaded.json")), built);  // bit for bit (same seeded inputs)
}

TEST_F(ExecEndToEndTest, FmnistFp32Build) {
  ExecOptions build = quick_options(2);
  build.onnx_path = kFmnistModel;
  build.fp32 = true;
  build.export_output_path = path("fp32.json");
  std::optional<RunError> error = run(build);
  ASSERT_FALSE(error) << error->status.to_string();
  EXPECT_NE(text_.find("Precision: fp32"), std::string::npos) << text_;
  EXPECT_EQ(read_json(path("fp32.json"))[0]["dimensions"], "1x10");
}

TEST_F(ExecEndToEndTest, BadEngineFilesAndInputNamesAreRefused) {
  std::ofstream(path("not_an_engine.qdqrt")) << "this is not an engine";
  ExecOptions load = quick_options(1);
  load.load_engine_path = path("not_an_engine.qdqrt");
  std::optional<RunError> error = run(load);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->usage);
  EXPECT_NE(error->status.message().find("--loadEngine: '" + load.load_engine_path + "'"), std::string::npos)
      << error->status.message();

  ExecOptions build = quick_options(1);
  build.onnx_path = kFmnistModel;
  build.shapes["images"] = {1, 1, 28, 28};  // the input is called 'input'
  error = run(build);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage) << error->status.to_string();
  EXPECT_NE(error->status.message().find("images"), std::string::npos) << error->status.message();
}

}  // namespace
}  // namespace qdqrt::tools
