// qdqrt exec's command line: every flag reaches its option with trtexec's meaning, bad values and
// bad combinations are refused with a message naming the flag, run shapes are checked against
// the engine's inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tools/exec_options.h"

namespace qdqrt::tools {
namespace {

class ExecFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qdqrt_exec_flags_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    engine_ = (dir_ / "model.qdqrt").string();
    npy_ = (dir_ / "x.npy").string();
    for (const std::string& path : {model_, engine_, npy_}) std::ofstream(path) << "x";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Parses `qdqrt exec ARGS`; returns "" or the CLI11 error, then the finish_exec_options() error.
  std::string parse(std::vector<std::string> args) {
    line_ = ExecCommandLine{};
    CLI::App app{"test"};
    CLI::App* exec = app.add_subcommand("exec");
    add_exec_flags(*exec, line_);
    std::vector<std::string> argv_storage = {"qdqrt", "exec"};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<const char*> argv;
    for (const std::string& arg : argv_storage) argv.push_back(arg.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& error) {
      return std::string("parse: ") + error.what();
    }
    Status status = finish_exec_options(line_);
    return status.is_ok() ? "" : "finish: " + status.message();
  }

  std::filesystem::path dir_;
  std::string model_, engine_, npy_;
  ExecCommandLine line_;
};

TEST_F(ExecFlagsTest, DefaultsAreTrtexecs) {
  ASSERT_EQ(parse({"--onnx=" + model_}), "");
  const ExecOptions& options = line_.options;
  EXPECT_EQ(options.onnx_path, model_);
  EXPECT_EQ(options.iterations, 10);
  EXPECT_EQ(options.warm_up_ms, 200);
  EXPECT_EQ(options.duration_s, 3);
  EXPECT_EQ(options.avg_runs, 10);
  EXPECT_EQ(options.percentiles, (std::vector<double>{90, 95, 99}));
  EXPECT_EQ(options.threads, 0);
  EXPECT_EQ(options.precision(), engine::Precision::kInt8);
  EXPECT_FALSE(options.profiling());
}

TEST_F(ExecFlagsTest, EveryFlagReachesItsOption) {
  std::string out = (dir_ / "o").string();
  ASSERT_EQ(parse({"--onnx", model_, "--saveEngine=" + engine_ + ".new", "--fp32", "--shapes=input:8x1x28x28",
                   "--loadInputs=input:" + npy_, "--seed=7", "--iterations=20", "--warmUp=50", "--duration=0.5",
                   "--avgRuns=5", "--percentile=50,99.9", "--threads=2", "--exportOutput=" + out + "_out.json",
                   "--dumpProfile", "--separateProfileRun", "--exportProfile=" + out + "_profile.json",
                   "--dumpLayerInfo", "--exportLayerInfo=" + out + "_layers.json", "--exportTimes=" + out + "_times.json",
                   "--verbose", "--skipInference"}),
            "");
  const ExecOptions& options = line_.options;
  EXPECT_EQ(options.save_engine_path, engine_ + ".new");
  EXPECT_TRUE(options.fp32);
  EXPECT_EQ(options.precision(), engine::Precision::kFp32);
  ASSERT_EQ(options.shapes.count("input"), 1u);
  EXPECT_EQ(options.shapes.at("input"), (Shape{8, 1, 28, 28}));
  ASSERT_EQ(options.input_files.size(), 1u);
  EXPECT_EQ(options.input_files[0].name, "input");
  EXPECT_EQ(options.input_files[0].path, npy_);
  EXPECT_EQ(options.seed, 7u);
  EXPECT_EQ(options.iterations, 20);
  EXPECT_EQ(options.warm_up_ms, 50);
  EXPECT_EQ(options.duration_s, 0.5);
  EXPECT_EQ(options.avg_runs, 5);
  EXPECT_EQ(options.percentiles, (std::vector<double>{50, 99.9}));
  EXPECT_EQ(options.threads, 2);
  EXPECT_EQ(options.export_output_path, out + "_out.json");
  EXPECT_EQ(options.export_profile_path, out + "_profile.json");
  EXPECT_EQ(options.export_layer_info_path, out + "_layers.json");
  EXPECT_EQ(options.export_times_path, out + "_times.json");
  EXPECT_TRUE(options.dump_profile && options.separate_profile_run && options.dump_layer_info && options.verbose);
  EXPECT_TRUE(options.skip_inference);
  EXPECT_TRUE(options.profiling());
}

TEST_F(ExecFlagsTest, LoadEngineWithRepeatedListFlags) {
  ASSERT_EQ(parse({"--loadEngine=" + engine_, "--shapes=a:2x3", "--shapes", "b:2", "--best", "--exportProfile=p.json"}),
            "");
  EXPECT_EQ(line_.options.load_engine_path, engine_);
  EXPECT_EQ(line_.options.shapes.size(), 2u);
  EXPECT_TRUE(line_.options.best);
  EXPECT_EQ(line_.options.precision(), engine::Precision::kInt8);
  EXPECT_TRUE(line_.options.profiling());  // --exportProfile alone turns profiling on
}

// Each bad command line with the words its message must hold.
TEST_F(ExecFlagsTest, BadCommandLinesNameTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{}, "finish: give a model with --onnx=FILE or a saved engine with --loadEngine=FILE"},
      {{"--onnx=" + model_, "--loadEngine=" + engine_}, "finish: --onnx and --loadEngine exclude each other"},
      {{"--onnx=" + model_, "--int8", "--fp32"}, "finish: --int8 and --fp32 exclude each other"},
      {{"--onnx=" + model_, "--best", "--fp32"}, "finish: --best and --fp32 exclude each other"},
      {{"--onnx=" + model_, "--noSuchFlag"}, "parse: The following argument was not expected: --noSuchFlag"},
      {{"--onnx=" + (dir_ / "missing.onnx").string()}, "File does not exist"},
      {{"--loadEngine=" + (dir_ / "missing.qdqrt").string()}, "File does not exist"},
      {{"--onnx=" + model_, "--loadInputs=x:" + (dir_ / "missing.npy").string()}, "File does not exist"},
      {{"--onnx=" + model_, "--loadInputs=x.npy"}, "expected NAME:FILE"},
      {{"--onnx=" + model_, "--shapes=x:1xabc"}, "dim 'abc' is not a non-negative integer"},
      {{"--onnx=" + model_, "--shapes=x:1", "--shapes=x:2"}, "finish: --shapes: input 'x' is given twice"},
      {{"--onnx=" + model_, "--percentile=90,101"}, "percentile 101 is not in [0, 100]"},
      {{"--onnx=" + model_, "--percentile=90,,99"}, "empty entry"},
      {{"--onnx=" + model_, "--percentile=p90"}, "'p90' is not a number"},
      {{"--onnx=" + model_, "--iterations=0"}, "--iterations"},
      {{"--onnx=" + model_, "--iterations=ten"}, "--iterations"},
      {{"--onnx=" + model_, "--warmUp=-1"}, "--warmUp"},
      {{"--onnx=" + model_, "--duration=-1"}, "--duration"},
      {{"--onnx=" + model_, "--avgRuns=0"}, "--avgRuns"},
      {{"--onnx=" + model_, "--threads=-2"}, "--threads"},
      {{"--onnx=" + model_, "--exportProfile=" + (dir_ / "no_dir" / "p.json").string()},
       "finish: --exportProfile: directory"},
      {{"--onnx=" + model_, "--exportTimes=" + dir_.string()}, "finish: --exportTimes: '" + dir_.string() + "' is a directory"},
      {{"--onnx=" + model_, "--saveEngine=" + (dir_ / "no_dir" / "e.qdqrt").string()}, "finish: --saveEngine: directory"},
      {{"--loadEngine=" + engine_, "--saveEngine=" + engine_}, "finish: --saveEngine: '" + engine_ + "' is the file given to --loadEngine"},
  };
  for (const Case& test : cases) {
    std::string joined;
    for (const std::string& arg : test.args) joined += arg + " ";
    std::string error = parse(test.args);
    EXPECT_NE(error, "") << joined << "was accepted";
    EXPECT_NE(error.find(test.expected), std::string::npos) << joined << "\n  got: " << error << "\n  want: " << test.expected;
  }
}

// trtexec's README command line (dynamic shapes) runs unchanged: --maxShapes is built for,
// --shapes run at, --optShapes is the run shape when --shapes is absent.
TEST_F(ExecFlagsTest, TrtexecShapeRange) {
  ASSERT_EQ(parse({"--onnx=" + model_, "--minShapes=input:1x3x244x244", "--optShapes=input:16x3x244x244",
                   "--maxShapes=input:32x3x244x244", "--shapes=input:5x3x244x244"}),
            "");
  const ExecOptions& options = line_.options;
  EXPECT_EQ(options.build_shapes().at("input"), (Shape{32, 3, 244, 244}));
  EXPECT_EQ(options.run_shapes().at("input"), (Shape{5, 3, 244, 244}));
  ASSERT_EQ(parse({"--onnx=" + model_, "--optShapes=input:16x3x244x244", "--maxShapes=input:32x3x244x244"}), "");
  EXPECT_EQ(line_.options.run_shapes().at("input"), (Shape{16, 3, 244, 244}));
  // --shapes alone: built for and run at it, as before.
  ASSERT_EQ(parse({"--onnx=" + model_, "--shapes=input:4x3x244x244"}), "");
  EXPECT_EQ(line_.options.build_shapes().at("input"), (Shape{4, 3, 244, 244}));
  EXPECT_EQ(line_.options.run_shapes().at("input"), (Shape{4, 3, 244, 244}));
  EXPECT_FALSE(line_.options.range_beyond_batch());
  // A range on height and width (trtexec's dynamic-shape example): built as a range engine.
  ASSERT_EQ(parse({"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--optShapes=input:1x3x640x640",
                   "--maxShapes=input:1x3x640x640", "--shapes=input:1x3x480x640"}),
            "");
  EXPECT_TRUE(line_.options.range_beyond_batch());
  EXPECT_EQ(line_.options.run_shapes().at("input"), (Shape{1, 3, 480, 640}));
  // With a saved engine the range was fixed at build: ignored with a note.
  ASSERT_EQ(parse({"--loadEngine=" + engine_, "--maxShapes=input:32x3x244x244"}), "");
  EXPECT_TRUE(line_.options.build_shapes().empty());
  ASSERT_EQ(line_.options.notes.size(), 1u);
  EXPECT_NE(line_.options.notes[0].find("ignored with --loadEngine"), std::string::npos);
}

// Naming an input again in a shape flag starts the next optimization profile (trtexec's several
// profiles); --profile picks the one runs use.
TEST_F(ExecFlagsTest, RepeatedShapeFlagsGiveSeveralProfiles) {
  ASSERT_EQ(parse({"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--optShapes=input:1x3x480x480",
                   "--maxShapes=input:1x3x640x640", "--minShapes=input:1x3x640x640", "--optShapes=input:1x3x960x960",
                   "--maxShapes=input:1x3x1280x1280", "--profile=1", "--dumpOptimizationProfile",
                   "--saveEngine=" + (dir_ / "two.qdqrt").string()}),
            "");
  const ExecOptions& options = line_.options;
  EXPECT_TRUE(options.range_beyond_batch());
  EXPECT_EQ(options.min_shapes.at("input"), (Shape{1, 3, 320, 320}));
  EXPECT_EQ(options.max_shapes.at("input"), (Shape{1, 3, 640, 640}));
  ASSERT_EQ(options.more_profiles.size(), 1u);
  EXPECT_EQ(options.more_profiles[0].min_shapes.at("input"), (Shape{1, 3, 640, 640}));
  EXPECT_EQ(options.more_profiles[0].opt_shapes.at("input"), (Shape{1, 3, 960, 960}));
  EXPECT_EQ(options.more_profiles[0].max_shapes.at("input"), (Shape{1, 3, 1280, 1280}));
  EXPECT_EQ(options.profile, 1);
  EXPECT_TRUE(options.dump_optimization_profile);
  // One profile's inputs in one flag (comma-separated) stay one profile; --useProfile is --profile.
  ASSERT_EQ(parse({"--onnx=" + model_, "--minShapes=a:1x4,b:1x4", "--maxShapes=a:1x8,b:1x8", "--useProfile=0"}), "");
  EXPECT_TRUE(line_.options.more_profiles.empty());
  EXPECT_EQ(line_.options.profile, 0);
  // trtexec's calibration-profile flags: exec does not calibrate, one note each.
  ASSERT_EQ(parse({"--onnx=" + model_, "--minShapesCalib=input:1x3x32x32", "--maxShapesCalib=input:1x3x64x64"}), "");
  ASSERT_EQ(line_.options.notes.size(), 2u);
  EXPECT_EQ(line_.options.notes[0].rfind("not applicable on CPU: --minShapesCalib (exec does not calibrate", 0), 0u);
}

TEST_F(ExecFlagsTest, TrtexecFlagsWithACpuMeaning) {
  std::string cache = (dir_ / "calib.cache").string();
  std::ofstream(cache) << "TRT-8601-EntropyCalibration2\n";
  ASSERT_EQ(parse({"--onnx=" + model_, "--streams=3", "--calib=" + cache, "--profilingVerbosity=layer_names_only",
                   "--buildOnly", "--dumpOutput"}),
            "");
  const ExecOptions& options = line_.options;
  EXPECT_EQ(options.streams, 3);
  EXPECT_EQ(options.calib_path, cache);
  EXPECT_FALSE(options.detailed_layer_info);
  EXPECT_TRUE(options.skip_inference);
  EXPECT_TRUE(options.dump_output);
  EXPECT_TRUE(options.notes.empty());
  ASSERT_EQ(parse({"--onnx=" + model_, "--nvtxMode=verbose", "--infStreams=2"}), "");  // older spellings
  EXPECT_TRUE(line_.options.detailed_layer_info);
  EXPECT_EQ(line_.options.streams, 2);
}

// Flags without a CPU meaning are accepted, each with one "not applicable on CPU" line, in the
// order given; TREx's process_engine.py profile command line is one of them.
TEST_F(ExecFlagsTest, TrtexecFlagsWithoutACpuMeaningGiveOneLineEach) {
  ASSERT_EQ(parse({"--verbose", "--noDataTransfers", "--useCudaGraph", "--separateProfileRun", "--nvtxMode=verbose",
                   "--loadEngine=" + engine_, "--exportTimes=" + (dir_ / "t.json").string(),
                   "--exportProfile=" + (dir_ / "p.json").string(), "--exportLayerInfo=" + (dir_ / "g.json").string(),
                   "--timingCacheFile=./timing.cache", "--fp16", "--workspace", "1024", "--memPoolSize=workspace:1024"}),
            "");
  const std::vector<std::string>& notes = line_.options.notes;
  ASSERT_EQ(notes.size(), 6u);
  EXPECT_EQ(notes[0], "not applicable on CPU: --noDataTransfers (inputs and outputs stay in host memory: there are no "
                      "copies to leave out)");
  EXPECT_EQ(notes[1].rfind("not applicable on CPU: --useCudaGraph (", 0), 0u);
  EXPECT_EQ(notes[2].rfind("not applicable on CPU: --timingCacheFile (", 0), 0u);
  EXPECT_EQ(notes[3].rfind("not applicable on CPU: --fp16 (", 0), 0u);
  EXPECT_EQ(notes[4].rfind("not applicable on CPU: --workspace (", 0), 0u);
  EXPECT_EQ(notes[5].rfind("not applicable on CPU: --memPoolSize (", 0), 0u);
}

TEST_F(ExecFlagsTest, LayerPrecisions) {
  ASSERT_EQ(parse({"--onnx=" + model_, "--layerPrecisions=conv1:fp32,fc:int8", "--layerPrecisions=conv2:fp16",
                   "--precisionConstraints=obey"}),
            "");
  EXPECT_EQ(line_.options.float_layers, (std::vector<std::string>{"conv1"}));
  EXPECT_FALSE(line_.options.fp32);
  ASSERT_EQ(line_.options.notes.size(), 2u);  // --precisionConstraints, then conv2:fp16
  EXPECT_NE(line_.options.notes[1].find("not applicable on CPU: --layerPrecisions=conv2:fp16"), std::string::npos);
  ASSERT_EQ(parse({"--onnx=" + model_, "--layerPrecisions=*:fp32"}), "");
  EXPECT_TRUE(line_.options.fp32);
  EXPECT_EQ(line_.options.precision(), engine::Precision::kFp32);
  EXPECT_NE(parse({"--onnx=" + model_, "--layerPrecisions=conv1:fp64"}).find("precision 'fp64' is not one of"),
            std::string::npos);
  EXPECT_NE(parse({"--loadEngine=" + engine_, "--layerPrecisions=conv1:fp32"}).find("give it with --onnx"),
            std::string::npos);
  EXPECT_NE(parse({"--onnx=" + model_, "--int8", "--layerPrecisions=*:fp32"}).find("exclude each other"),
            std::string::npos);
}

TEST_F(ExecFlagsTest, BadTrtexecFlagValues) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{"--onnx=" + model_, "--minShapes=input:1x3x224x224", "--maxShapes=input:8x3x256"},
       "finish: --minShapes and --maxShapes: input 'input' is [1, 3, 224, 224] and [8, 3, 256]: the ranks differ"},
      {{"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--optShapes=input:1x3x256x640",
        "--maxShapes=input:1x3x640x640"},
       "finish: --minShapes: input 'input': dim 2 320 is above --optShapes' 256"},
      {{"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--maxShapes=input:1x3x640x640",
        "--shapes=input:1x3x480x800"},
       "finish: --maxShapes: input 'input': dim 3 640 is below the dim 3 800 asked to run or build"},
      {{"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--maxShapes=input:1x3x640x640",
        "--shapes=input:1x3x160x320"},
       "finish: --shapes: input 'input': dim 2 160 is below --minShapes' 320"},
      {{"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--maxShapes=input:1x3x640x640",
        "--minShapes=input:1x3x64x64", "--maxShapes=input:1x3x32x32"},
       "finish: profile 1: --maxShapes: input 'input': dim 2 32 is below the dim 2 64 asked to run or build"},
      {{"--onnx=" + model_, "--profile=64"}, "--profile"},
      {{"--onnx=" + model_, "--minShapes=input:1x3x320x320", "--maxShapes=input:1x3x640x640", "--markDebug=t"},
       "finish: --calib, --layerPrecisions and --markDebug are not supported with a shape range beyond the batch"},
      {{"--onnx=" + model_, "--minShapes=input:8x3x4x4", "--optShapes=input:4x3x4x4"},
       "finish: --minShapes: input 'input': batch 8 is above --optShapes' 4"},
      {{"--onnx=" + model_, "--maxShapes=input:4x3x4x4", "--shapes=input:8x3x4x4"},
       "finish: --maxShapes: input 'input': batch 4 is below the batch 8 asked to run or build"},
      {{"--onnx=" + model_, "--streams=0"}, "--streams"},
      {{"--onnx=" + model_, "--profilingVerbosity=loud"}, "--profilingVerbosity"},
      {{"--onnx=" + model_, "--calib=" + (dir_ / "missing.cache").string()}, "File does not exist"},
      {{"--loadEngine=" + engine_, "--calib=" + model_}, "finish: --calib quantizes a model at build"},
      {{"--onnx=" + model_, "--fp32", "--calib=" + model_}, "finish: --calib and --fp32 exclude each other"},
  };
  for (const Case& test : cases) {
    std::string error = parse(test.args);
    EXPECT_NE(error.find(test.expected), std::string::npos) << "got: " << error << "\n  want: " << test.expected;
  }
}

std::vector<engine::IoTensorInfo> image_and_mask_inputs() {
  return {{"image", DataType::kFloat, {8, 1, 28, 28}, true},
          {"mask", DataType::kFloat, {8, 4}, true},
          {"table", DataType::kInt64, {5}, false}};
}

TEST(ExecRunShapes, BatchFromShapesOrTheEngineMaximum) {
  auto inputs = image_and_mask_inputs();
  auto batch = check_run_shapes(inputs, 8, {});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(*batch, 8);
  batch = check_run_shapes(inputs, 8, {{"image", {3, 1, 28, 28}}, {"mask", {3, 4}}, {"table", {5}}});
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  EXPECT_EQ(*batch, 3);
  batch = check_run_shapes(inputs, 8, {{"image", {1, 1, 28, 28}}});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(*batch, 1);
}

TEST(ExecRunShapes, MismatchesAreRefused) {
  auto inputs = image_and_mask_inputs();
  struct Case {
    std::map<std::string, Shape> shapes;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{{"images", {1, 1, 28, 28}}}, "'images' is not an input of the engine (inputs: image, mask, table)"},
      {{{"image", {1, 28, 28}}}, "input 'image' has rank 4 [8, 1, 28, 28] in the engine, got [1, 28, 28]"},
      {{{"image", {1, 3, 28, 28}}}, "(dim 1 differs; only the batch dim 0 may change)"},
      {{{"image", {16, 1, 28, 28}}}, "batch 16 is outside the engine's range 1..8 (build with --shapes=image:16x1x28x28)"},
      {{{"image", {0, 1, 28, 28}}}, "batch 0 is outside the engine's range 1..8"},
      {{{"image", {2, 1, 28, 28}}, {"mask", {3, 4}}}, "inputs 'image' and 'mask' have different batches 2 and 3"},
      {{{"table", {6}}}, "input 'table' has shape [5] in the engine, got [6] (dim 0 differs)"},
  };
  for (const Case& test : cases) {
    auto batch = check_run_shapes(inputs, 8, test.shapes);
    ASSERT_FALSE(batch.ok()) << test.expected;
    EXPECT_NE(batch.status().message().find(test.expected), std::string::npos)
        << batch.status().message() << "\n  want: " << test.expected;
  }
}

}  // namespace
}  // namespace qdqrt::tools
