// Data sets whose images differ in size (npy files of 8x8 and 12x10 images): eval and calibrate
// take them for a classifier whose height and width are symbolic, running each image at its own
// size (eval through one range engine, calibrate through the reference executor), and refuse them
// for the same classifier with static dims, naming the image, its file and both shapes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/engine_batch/batch_helpers.h"
#include "tools/calibrate_command.h"
#include "tools/calibration/collector.h"
#include "tools/calibration/qdq_insertion.h"
#include "tools/datasets.h"
#include "tools/eval_command.h"
#include "tools/npy.h"

namespace qdqrt::tools {
namespace {

namespace fs = std::filesystem;

// Conv 3x3 -> Relu -> GlobalAveragePool -> Flatten -> Gemm: 5 logits whatever the image size.
std::string classifier_text(const std::string& height, const std::string& width) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 13]>
classifier (float[N,3,{},{}] x) => (float[N,5] logits)
{{
  c = Conv<pads = [1, 1, 1, 1]>(x, w1, b1)
  r = Relu(c)
  p = GlobalAveragePool(r)
  f = Flatten<axis = 1>(p)
  logits = Gemm<transB = 1>(f, w2, b2)
}}
)",
                     height, width);
}

class MixedSizes : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / fmt::format("qdqrt_mixed_sizes_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    const std::vector<batch_testing::FloatInitializer> weights = {
        {"w1", {8, 3, 3, 3}, 0.4f}, {"b1", {8}, 0.1f}, {"w2", {5, 8}, 0.5f}, {"b2", {5}, 0.01f}};
    symbolic_ = (dir_ / "symbolic.onnx").string();
    fixed_ = (dir_ / "fixed.onnx").string();
    ASSERT_TRUE(batch_testing::write_text_model(classifier_text("H", "W"), weights, 3, symbolic_).is_ok());
    ASSERT_TRUE(batch_testing::write_text_model(classifier_text("8", "8"), weights, 3, fixed_).is_ok());
    // a: two 8x8 images, b: three 12x10, c: one 8x8 (a run of its own after b), labels 0..4.
    files_ = {{"a.npy", {2, 3, 8, 8}}, {"b.npy", {3, 3, 12, 10}}, {"c.npy", {1, 3, 8, 8}}};
    uint32_t seed = 20;
    int64_t image_index = 0;
    for (const auto& [name, shape] : files_) {
      Tensor images = batch_testing::random_tensor(shape, seed++);
      // Image k is brighter in channel k % 3 (and darker in the next): images differ in class.
      const int64_t plane = shape[2] * shape[3];
      for (int64_t image = 0; image < shape[0]; ++image, ++image_index) {
        float* values = images.data<float>() + image * 3 * plane;
        for (int64_t i = 0; i < plane; ++i) {
          values[(image_index % 3) * plane + i] += 2.0f;
          values[((image_index + 1) % 3) * plane + i] -= 2.0f;
        }
      }
      ASSERT_TRUE(write_npy((dir_ / "data" / name).string(), images).is_ok());
      images_.push_back(images);
    }
    ASSERT_TRUE(
        write_npy((dir_ / "data" / "labels.npy").string(), Tensor::from_vector<int64_t>({6}, {0, 1, 2, 3, 4, 0}))
            .is_ok());
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(dir_, error);
  }

  // Image `index` of the data set as a [1, C, H, W] tensor.
  Tensor image(int64_t index) const {
    for (const Tensor& batch : images_) {
      if (index < batch.dim(0)) {
        Shape shape = batch.shape();
        shape[0] = 1;
        Tensor single(DataType::kFloat, shape);
        std::memcpy(single.raw_data(), batch.data<float>() + index * (batch.numel() / batch.dim(0)), single.nbytes());
        return single;
      }
      index -= batch.dim(0);
    }
    return {};
  }

  std::string data_spec() const { return "npy:" + (dir_ / "data").string(); }

  fs::path dir_;
  std::string symbolic_, fixed_;
  std::vector<std::pair<std::string, Shape>> files_;
  std::vector<Tensor> images_;
};

TEST_F(MixedSizes, DatasetKeepsRunsOfOneSizeInOrderOnlyWhenAsked) {
  auto refused = load_dataset(data_spec());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("b.npy' (image 2) holds [3, 12, 10] images but"), std::string::npos)
      << refused.status().message();

  auto data = load_dataset(data_spec(), {.allow_mixed_sizes = true});
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  ASSERT_TRUE(data->mixed_sizes());
  EXPECT_EQ(data->size(), 6);
  ASSERT_EQ(data->image_groups.size(), 3u);
  EXPECT_EQ(data->image_groups[0].shape(), (Shape{2, 3, 8, 8}));
  EXPECT_EQ(data->image_groups[1].shape(), (Shape{3, 3, 12, 10}));
  EXPECT_EQ(data->image_groups[2].shape(), (Shape{1, 3, 8, 8}));
  EXPECT_EQ(data->labels->numel(), 6);
  EXPECT_EQ(fs::path(data->source_of(4)).filename(), "b.npy");
  EXPECT_EQ(fs::path(data->source_of(5)).filename(), "c.npy");
  for (int64_t index : {0, 3, 5}) {
    const Tensor expected = image(index);
    int64_t in_group = index;
    for (const Tensor& group : data->image_groups) {
      if (in_group < group.dim(0)) {
        const float* values = group.data<float>() + in_group * expected.numel();
        EXPECT_TRUE(std::equal(values, values + expected.numel(), expected.data<float>())) << index;
        break;
      }
      in_group -= group.dim(0);
    }
  }
  // --samples cuts across the runs.
  auto first_four = load_dataset(data_spec(), {.max_images = 4, .allow_mixed_sizes = true});
  ASSERT_TRUE(first_four.ok()) << first_four.status().to_string();
  ASSERT_EQ(first_four->image_groups.size(), 2u);
  EXPECT_EQ(first_four->image_groups[1].dim(0), 2);
  EXPECT_EQ(first_four->labels->numel(), 4);
  // Images of one size come back as before.
  auto same_size = load_dataset(data_spec(), {.max_images = 2, .allow_mixed_sizes = true});
  ASSERT_TRUE(same_size.ok());
  EXPECT_FALSE(same_size->mixed_sizes());
  EXPECT_EQ(same_size->images.shape(), (Shape{2, 3, 8, 8}));
}

TEST_F(MixedSizes, EvalRunsEachImageAtItsOwnSizeForASymbolicModel) {
  EvalOptions options;
  options.data_spec = data_spec();
  options.models = {parse_eval_model_spec(symbolic_)};
  options.batch = 2;
  options.threads = 1;
  options.latency_seconds = 0.01;
  options.latency_runs = 5;
  options.show_progress = false;
  options.predictions_dir = (dir_ / "predictions").string();
  std::ostringstream warnings, out;
  options.warnings = &warnings;
  auto outcome = run_eval(options, out);
  ASSERT_TRUE(std::holds_alternative<EvalSummary>(outcome)) << std::get<RunError>(outcome).status.to_string();
  EXPECT_EQ(std::get<EvalSummary>(outcome).images, 6);
  auto saved = read_npy((dir_ / "predictions" / "symbolic.npy").string());
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  const std::vector<int64_t> predictions = saved->to_int64_vector();
  ASSERT_EQ(predictions.size(), 6u);
  // Not one class for every image: a misplaced image would change a prediction.
  EXPECT_GT(std::set<int64_t>(predictions.begin(), predictions.end()).size(), 1u);
  // Each image's prediction is that of an engine built for exactly its size.
  for (int64_t index = 0; index < 6; ++index) {
    const Tensor single = image(index);
    engine::BuildOptions build;
    build.input_shapes["x"] = single.shape();
    auto fixed = engine::Engine::build_from_file(symbolic_, build);
    ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
    std::vector<float> logits(5);
    auto context = (*fixed)->create_context({.threads = 1});
    ASSERT_TRUE(context->run({{"x", single.raw_data(), single.shape()}}, {{"logits", logits.data(), {1, 5}}}).is_ok());
    EXPECT_EQ(predictions[static_cast<size_t>(index)], std::max_element(logits.begin(), logits.end()) - logits.begin())
        << "image " << index;
  }
}

TEST_F(MixedSizes, EvalAndCalibrateRefuseThemForAStaticModelNamingImageFileAndShapes) {
  EvalOptions options;
  options.data_spec = data_spec();
  options.models = {parse_eval_model_spec(fixed_)};
  options.show_progress = false;
  std::ostringstream warnings, out;
  options.warnings = &warnings;
  auto outcome = run_eval(options, out);
  ASSERT_TRUE(std::holds_alternative<RunError>(outcome));
  const std::string message = std::get<RunError>(outcome).status.message();
  EXPECT_TRUE(std::get<RunError>(outcome).usage);
  EXPECT_NE(message.find("image 2 ('" + (dir_ / "data" / "b.npy").string() +
                         "') is [3, 12, 10], image 0 is [3, 8, 8], and model input 'x' wants [3, 8, 8]"),
            std::string::npos)
      << message;

  CalibrateOptions calibrate;
  calibrate.onnx_path = fixed_;
  calibrate.data_spec = data_spec();
  calibrate.output_path = (dir_ / "ptq.onnx").string();
  calibrate.show_progress = false;
  auto calibrated = run_calibrate(calibrate, out);
  ASSERT_TRUE(std::holds_alternative<CalibrateError>(calibrated));
  EXPECT_NE(std::get<CalibrateError>(calibrated).status.message().find("image 2 ('"), std::string::npos)
      << std::get<CalibrateError>(calibrated).status.message();
  EXPECT_FALSE(fs::exists(calibrate.output_path));
}

// Calibrating on the mixed data set gives the same ranges as calibrating each image alone and
// taking the largest.
TEST_F(MixedSizes, CalibrateRunsEachImageAtItsOwnSizeForASymbolicModel) {
  CalibrateOptions options;
  options.onnx_path = symbolic_;
  options.data_spec = data_spec();
  options.output_path = (dir_ / "ptq.onnx").string();
  options.batch_size = 2;
  options.show_progress = false;
  std::ostringstream out;
  auto outcome = run_calibrate(options, out);
  ASSERT_TRUE(std::holds_alternative<CalibrateResult>(outcome)) << std::get<CalibrateError>(outcome).status.to_string();
  const CalibrateResult& result = std::get<CalibrateResult>(outcome);
  EXPECT_EQ(result.images, 6);
  EXPECT_TRUE(fs::exists(options.output_path));

  auto graph = load_onnx_file(symbolic_);
  ASSERT_TRUE(graph.ok());
  auto plan = calibration::plan_quantization(*graph, calibration::Placement::kTensorRT);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::map<std::string, float> expected;
  for (int64_t index = 0; index < 6; ++index) {
    auto maxima = calibration::collect_max(*graph, image(index), plan->tensors_to_calibrate(), {});
    ASSERT_TRUE(maxima.ok()) << maxima.status().to_string();
    for (const auto& [name, value] : *maxima) expected[name] = std::max(expected[name], value);
  }
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(result.activation_amax, expected);
}

}  // namespace
}  // namespace qdqrt::tools
