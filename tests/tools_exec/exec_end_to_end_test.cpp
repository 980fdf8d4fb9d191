// qdqrt exec end to end on models/fmnist_resnet_qdq.onnx: build + save, load, run with profiling
// and every export; the JSON files parse, the profile adds up to 100 %, the loaded engine gives
// the built engine's outputs bit for bit, batches and precisions behave, bad runs are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "parser/npy.h"
#include "tools/exec_command.h"

namespace qdqrt::tools {
namespace {

const std::string kModel = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_qdq.onnx";

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "missing " << path;
  return nlohmann::json::parse(file);
}

class ExecEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qdqrt_exec_e2e_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
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

  // Runs the command; fails the test with the error when it fails.
  std::string run_ok(const ExecOptions& options) {
    std::ostringstream out;
    std::optional<RunError> error = run_exec(options, out);
    EXPECT_FALSE(error) << (error ? error->status.to_string() : "") << "\n" << out.str();
    return out.str();
  }

  std::filesystem::path dir_;
};

TEST_F(ExecEndToEndTest, BuildSaveLoadRunProfileAndExports) {
  ExecOptions build = quick_options();
  build.onnx_path = kModel;
  build.save_engine_path = path("model.qdqrt");
  build.dump_profile = true;
  build.export_profile_path = path("profile.json");
  build.export_times_path = path("times.json");
  build.export_output_path = path("built_output.json");
  build.export_layer_info_path = path("layers.json");
  std::string text = run_ok(build);
  EXPECT_NE(text.find("=== Build ===\nModel: " + kModel + "\nPrecision: int8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Saved engine: " + build.save_engine_path), std::string::npos) << text;
  EXPECT_NE(text.find("=== Performance summary ===\nThroughput: "), std::string::npos) << text;
  EXPECT_NE(text.find("percentile(99%) = "), std::string::npos) << text;
  EXPECT_NE(text.find("Total Host Walltime: "), std::string::npos) << text;
  EXPECT_NE(text.find("=== Profile (20 iterations) ===\n   Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("     100.0   Total\n"), std::string::npos) << text;
  // The summary comes before the profile, the build summary before both.
  EXPECT_LT(text.find("=== Build ==="), text.find("=== Performance summary ==="));
  EXPECT_LT(text.find("=== Performance summary ==="), text.find("=== Profile"));

  nlohmann::json profile = read_json(path("profile.json"));
  ASSERT_TRUE(profile.is_array());
  ASSERT_GE(profile.size(), 2u);
  EXPECT_EQ(profile[0]["count"], 20);
  double percentage_sum = 0;
  for (size_t i = 1; i < profile.size(); ++i) {
    EXPECT_FALSE(profile[i]["name"].get<std::string>().empty());
    EXPECT_GE(profile[i]["timeMs"].get<double>(), 0);
    EXPECT_NEAR(profile[i]["averageMs"].get<double>() * 20, profile[i]["timeMs"].get<double>(), 1e-9);
    percentage_sum += profile[i]["percentage"].get<double>();
  }
  EXPECT_NEAR(percentage_sum, 100.0, 1e-6);

  nlohmann::json layers = read_json(path("layers.json"));
  ASSERT_EQ(layers["Layers"].size(), profile.size() - 1);  // one profile row per engine layer
  for (size_t i = 0; i < layers["Layers"].size(); ++i) EXPECT_EQ(layers["Layers"][i]["Name"], profile[i + 1]["name"]);
  EXPECT_EQ(layers["Precision"], "int8");

  nlohmann::json times = read_json(path("times.json"));
  ASSERT_EQ(times.size(), 20u);  // --duration=0: exactly --iterations runs
  for (size_t i = 0; i < times.size(); ++i) {
    EXPECT_GE(times[i]["latencyMs"].get<double>(), 0);
    if (i > 0) {
      EXPECT_GE(times[i]["startComputeMs"].get<double>(), times[i - 1]["endComputeMs"].get<double>());
    }
  }

  nlohmann::json built_output = read_json(path("built_output.json"));
  ASSERT_EQ(built_output.size(), 1u);
  EXPECT_EQ(built_output[0]["name"], "output");
  EXPECT_EQ(built_output[0]["dimensions"], "1x10");
  ASSERT_EQ(built_output[0]["values"].size(), 10u);

  // The saved engine, loaded: the same outputs, bit for bit (same seeded inputs).
  ExecOptions load = quick_options(5);
  load.load_engine_path = build.save_engine_path;
  load.export_output_path = path("loaded_output.json");
  text = run_ok(load);
  EXPECT_NE(text.find("=== Load ===\nEngine: " + load.load_engine_path), std::string::npos) << text;
  EXPECT_NE(text.find("Precision: int8"), std::string::npos) << text;
  EXPECT_EQ(text.find("=== Profile"), std::string::npos) << "profile printed without --dumpProfile";
  nlohmann::json loaded_output = read_json(path("loaded_output.json"));
  EXPECT_EQ(loaded_output, built_output);
}

TEST_F(ExecEndToEndTest, SeparateProfileRunProfilesASecondLoop) {
  ExecOptions options = quick_options(8);
  options.onnx_path = kModel;
  options.separate_profile_run = true;
  options.export_profile_path = path("profile.json");
  options.export_times_path = path("times.json");
  options.verbose = true;
  options.avg_runs = 4;
  std::string text = run_ok(options);
  EXPECT_NE(text.find("profiled in a separate run"), std::string::npos) << text;
  EXPECT_EQ(text.find("=== Profile"), std::string::npos) << "no --dumpProfile: no table";
  // --verbose: the trace averages of --avgRuns runs, and the outputs.
  EXPECT_NE(text.find("Trace averages of 4 runs:\nAverage on 4 runs - latency: "), std::string::npos) << text;
  EXPECT_NE(text.find("output: float32 [1, 10]"), std::string::npos) << text;
  EXPECT_EQ(read_json(path("profile.json"))[0]["count"], 8);
  EXPECT_EQ(read_json(path("times.json")).size(), 8u);
}

TEST_F(ExecEndToEndTest, BatchesUpToTheBuiltMaximum) {
  ExecOptions build = quick_options(2);
  build.onnx_path = kModel;
  build.shapes["input"] = {4, 1, 28, 28};
  build.save_engine_path = path("batch4.qdqrt");
  build.export_output_path = path("batch4.json");
  std::string text = run_ok(build);
  EXPECT_NE(text.find("Max batch: 4"), std::string::npos) << text;
  EXPECT_NE(text.find("samples/s at batch 4"), std::string::npos) << text;
  EXPECT_EQ(read_json(path("batch4.json"))[0]["dimensions"], "4x10");

  ExecOptions load = quick_options(2);
  load.load_engine_path = build.save_engine_path;
  load.shapes["input"] = {2, 1, 28, 28};
  load.export_output_path = path("batch2.json");
  run_ok(load);
  EXPECT_EQ(read_json(path("batch2.json"))[0]["dimensions"], "2x10");

  // Above the maximum, and a non-batch dim changed: usage errors naming the flag.
  load.shapes["input"] = {8, 1, 28, 28};
  std::ostringstream out;
  std::optional<RunError> error = run_exec(load, out);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("--shapes: input 'input': batch 8 is outside the engine's range 1..4"),
            std::string::npos)
      << error->status.message();
  load.shapes["input"] = {2, 1, 32, 32};
  error = run_exec(load, out);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("dim 2 differs"), std::string::npos) << error->status.message();
}

TEST_F(ExecEndToEndTest, InputsFromFilesSetTheBuildShape) {
  // Batch 3 from the file: the engine is built for it without --shapes.
  Tensor images(DataType::kFloat, {3, 1, 28, 28});
  for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = static_cast<float>(i % 17) / 17.0f;
  ASSERT_TRUE(write_npy(path("images.npy"), images).is_ok());
  ExecOptions options = quick_options(2);
  options.onnx_path = kModel;
  options.input_files = {{"input", path("images.npy")}};
  options.export_output_path = path("out.json");
  run_ok(options);
  EXPECT_EQ(read_json(path("out.json"))[0]["dimensions"], "3x10");

  // A file whose dims contradict the model's: usage error.
  Tensor wrong(DataType::kFloat, {1, 1, 14, 14});
  ASSERT_TRUE(write_npy(path("wrong.npy"), wrong).is_ok());
  options.input_files = {{"input", path("wrong.npy")}};
  std::ostringstream out;
  std::optional<RunError> error = run_exec(options, out);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage) << error->status.to_string();
}

TEST_F(ExecEndToEndTest, Fp32BuildAndPrecisionChecksOnLoad) {
  ExecOptions build = quick_options(2);
  build.onnx_path = kModel;
  build.fp32 = true;
  build.save_engine_path = path("fp32.qdqrt");
  std::string text = run_ok(build);
  EXPECT_NE(text.find("Precision: fp32"), std::string::npos) << text;

  ExecOptions load = quick_options(2);
  load.load_engine_path = build.save_engine_path;
  load.int8 = true;  // the engine is fp32: asking for int8 is refused, not ignored
  std::ostringstream out;
  std::optional<RunError> error = run_exec(load, out);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);
  EXPECT_NE(error->status.message().find("the engine was built as fp32, not int8"), std::string::npos)
      << error->status.message();
}

TEST_F(ExecEndToEndTest, BadEngineFilesAndInputNamesAreRefused) {
  std::ofstream(path("not_an_engine.qdqrt")) << "this is not an engine";
  ExecOptions load = quick_options(1);
  load.load_engine_path = path("not_an_engine.qdqrt");
  std::ostringstream out;
  std::optional<RunError> error = run_exec(load, out);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->usage);
  EXPECT_NE(error->status.message().find("--loadEngine: '" + load.load_engine_path + "'"), std::string::npos)
      << error->status.message();

  ExecOptions build = quick_options(1);
  build.onnx_path = kModel;
  build.shapes["images"] = {1, 1, 28, 28};  // the input is called 'input'
  error = run_exec(build, out);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage) << error->status.to_string();
  EXPECT_NE(error->status.message().find("images"), std::string::npos) << error->status.message();
}

}  // namespace
}  // namespace qdqrt::tools
