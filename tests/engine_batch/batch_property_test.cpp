// The batch property: an engine built for a maximum batch of 4 and run on 4 images one
// at a time, two at a time and four at a time gives every image bit-identical outputs, or refuses
// the smaller batches with a clear error. Never a silent wrong result.
//
// OnnxNode/NodeTestBatches: every ONNX backend node test case (libonnx-testdata) that qdqrt loads.
// The first runtime input (and every input of the same shape) gets a symbolic dim 0; the batch of
// 4 images repeats the data set's dim-0 slices. The reference executor at each batch is the oracle:
//   - the engine's outputs have the reference's shapes at every batch (the tracked batch dims) and
//     its values within the conformance tolerance (tests/common/onnx_node_case.h);
//   - when the model keeps images apart (the reference gives each image the same bits alone as in
//     the batch of 4), the engine's per-image outputs are bit-identical at batches 1, 2 and 4;
//   - a refused batch must say "runs only at batch 4".
// The summary (counts, refusals and skips by reason) is printed at the end; with
// QDQRT_BATCH_REPORT=<file.md> it is also written there.
//
// ModelBatches: the shipped models (models/*.onnx; the QDQ ones also built all-float) and the
// exported torchvision models named by QDQRT_BATCH_MODELS (comma-separated paths; ctest passes
// the tests/models exports): per-image bit-identical, and no refusal allowed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <unistd.h>

#include "engine/engine.h"
#include "parser/onnx_loader.h"
#include "tests/common/onnx_node_case.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt::batch_testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBatch = 4;

// ---------------------------------------------------------------------------------------------
// Outcomes, for the summary.

struct Outcome {
  std::string category;  // "identical", "mixes", "refused", "skipped"
  std::string reason;    // refusal or skip reason, grouped
  std::string detail;
};
std::map<std::string, Outcome>& outcomes() {
  static std::map<std::string, Outcome> records;
  return records;
}

// Names and numbers out, so refusals group by kind: "'y' ... shape [3, 4] at batch 4" -> "'*' ... shape [*] at batch
// 4".
std::string reason_kind(const std::string& message) {
  std::string kind = std::regex_replace(message, std::regex("'[^']*'"), "'*'");
  kind = std::regex_replace(kind, std::regex("\\[[^\\]]*\\]"), "[*]");
  kind = std::regex_replace(kind, std::regex("^[A-Za-z]+ '\\*': "), "");
  const size_t colon = kind.find(": ", kind.find("does not build at batch"));
  if (kind.find("does not build at batch") != std::string::npos && colon != std::string::npos) kind.resize(colon);
  return kind;
}

void write_summary(std::ostream& out) {
  std::map<std::string, int> counts;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_reason;
  for (const auto& [name, outcome] : outcomes()) {
    ++counts[outcome.category];
    if (outcome.category != "identical") {
      by_reason[outcome.category][outcome.reason].push_back(name);
    }
  }
  const int checked = counts["identical"] + counts["mixes"] + counts["refused"];
  out << fmt::format(
      "Engine batch property over the ONNX backend node tests: {} cases checked at batches 1, 2 "
      "and 4, {} skipped.\n",
      checked, counts["skipped"]);
  out << fmt::format("- {} keep images apart and give bit-identical per-image outputs at every batch\n",
                     counts["identical"]);
  out << fmt::format(
      "- {} mix images (the reference differs per image with the batch) and match the reference at "
      "every batch: {}\n",
      counts["mixes"], fmt::join(by_reason["mixes"][""], ", "));
  out << fmt::format("- {} refuse batches other than 4, by reason:\n", counts["refused"]);
  for (const auto& [reason, names] : by_reason["refused"]) {
    out << fmt::format("  - {} ({}): {}\n", reason, names.size(), fmt::join(names, ", "));
  }
  out << "Skipped, by reason:\n";
  for (const auto& [reason, names] : by_reason["skipped"]) out << fmt::format("  - {} ({})\n", reason, names.size());
  if (std::getenv("QDQRT_BATCH_REPORT_DETAILS") == nullptr) return;
  out << "Details:\n";
  for (const auto& [name, outcome] : outcomes()) {
    if (!outcome.detail.empty()) out << fmt::format("  - {}: {}\n", name, outcome.detail);
  }
}

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (outcomes().empty()) return;
    write_summary(std::cout);
    if (const char* path = std::getenv("QDQRT_BATCH_REPORT")) {
      std::ofstream file(path);
      write_summary(file);
    }
  }
};
const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

// ---------------------------------------------------------------------------------------------
// Comparisons

// Bitwise, NaN payloads included (the same kernels on the same bits).
bool same_bits(const Tensor& a, const Tensor& b) { return bit_equal(a, b); }

// Image `image`'s part of `output` (all of it when the output does not follow the batch).
Tensor image_of(const engine::IoTensorInfo& info, const Tensor& output, int64_t image) {
  return info.batched ? slice(output, static_cast<size_t>(info.batch_axis), info.batch_factor, image, 1) : output;
}

// ---------------------------------------------------------------------------------------------
// ONNX backend node tests

fs::path node_test_root() {
  if (const char* override_dir = std::getenv("QDQRT_ONNX_NODE_TEST_DIR")) return override_dir;
  return QDQRT_ONNX_NODE_TEST_DIR;
}

// The batch-4 tensor whose image i is slice i % d0 of `tensor`.
Tensor repeat_images(const Tensor& tensor) {
  Shape shape = tensor.shape();
  const int64_t slices = shape[0];
  shape[0] = kMaxBatch;
  Tensor result(tensor.dtype(), shape);
  const size_t image_bytes = tensor.nbytes() / static_cast<size_t>(slices);
  for (int64_t image = 0; image < kMaxBatch; ++image) {
    std::memcpy(static_cast<uint8_t*>(result.raw_data()) + static_cast<size_t>(image) * image_bytes,
                static_cast<const uint8_t*>(tensor.raw_data()) + static_cast<size_t>(image % slices) * image_bytes,
                image_bytes);
  }
  return result;
}

class NodeTestBatches : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeTestBatches, Case) {
  const std::string case_name = GetParam();
  const fs::path case_dir = node_test_root() / case_name;
  Outcome& outcome = outcomes()[case_name];
  auto skip = [&](const std::string& reason, const std::string& detail = "") { outcome = {"skipped", reason, detail}; };

  auto graph = load_onnx_file((case_dir / "model.onnx").string());
  if (!graph.ok()) return skip("qdqrt does not load the model (ops or types it does not hold)");
  auto facts = testing::read_model_facts(case_dir / "model.onnx");
  ASSERT_TRUE(facts.ok()) << facts.status().to_string();
  auto data_set = testing::read_data_set(case_dir / "test_data_set_0", *facts);
  if (!data_set.ok() || data_set->inputs.size() != graph->inputs.size()) return skip("the data set lacks an input");
  const TensorMap& original = data_set->inputs;
  // The batched inputs: the first one of rank >= 1 and every input of its shape.
  std::optional<Shape> batch_shape;
  for (const std::string& name : graph->inputs) {
    const Shape& shape = original.at(name).shape();
    if (!batch_shape && !shape.empty() && shape[0] >= 1) batch_shape = shape;
  }
  if (!batch_shape) return skip("no input has a dim 0 to batch");
  std::set<std::string> batched;
  for (const std::string& name : graph->inputs) {
    if (original.at(name).shape() == *batch_shape) batched.insert(name);
  }

  // The model with a symbolic dim 0 on the batched inputs, everything else inferred again.
  onnx::ModelProto model;
  {
    std::ifstream file(case_dir / "model.onnx", std::ios::binary);
    ASSERT_TRUE(file && model.ParseFromIstream(&file));
  }
  for (auto& input : *model.mutable_graph()->mutable_input()) {
    if (!batched.count(input.name())) continue;
    auto* dim = input.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    dim->clear_dim_value();
    dim->set_dim_param("batch");
  }
  model.mutable_graph()->clear_value_info();
  for (auto& output : *model.mutable_graph()->mutable_output())
    output.mutable_type()->mutable_tensor_type()->clear_shape();
  // Per process: ctest runs this binary twice at once (best ISA and QDQRT_MAX_ISA=avx2).
  const std::string path =
      (fs::path(::testing::TempDir()) / fmt::format("batch_{}_{}.onnx", case_name, ::getpid())).string();
  {
    std::ofstream file(path, std::ios::binary);
    ASSERT_TRUE(file && model.SerializeToOstream(&file));
  }

  TensorMap inputs;
  engine::BuildOptions options;
  for (const auto& [name, tensor] : original) {
    inputs[name] = batched.count(name) ? repeat_images(tensor) : tensor;
    options.input_shapes[name] = inputs[name].shape();
  }
  auto built = engine::Engine::build_from_file(path, options);
  if (!built.ok()) {
    ASSERT_NE(built.status().code(), StatusCode::kInternal) << built.status().to_string();
    fs::remove(path);
    const bool value_dependent = built.status().message().find("no static shape") != std::string::npos;
    return skip(value_dependent ? "the engine does not build: shapes that depend on input values"
                                : "the engine does not build: the model's shapes do not allow a batch of 4",
                built.status().message());
  }
  const engine::Engine& engine = **built;
  auto reference_graph = load_onnx_file(path);
  fs::remove(path);
  ASSERT_TRUE(reference_graph.ok()) << reference_graph.status().to_string();
  if (auto full = run_reference(*reference_graph, inputs); !full.ok()) {
    return skip("the reference rejects the batch of 4", full.status().message());
  }

  // Runs of 4, 2 and 1 images: the engine against the reference at each, kept per image.
  auto context = engine.create_context({.threads = 2});
  std::map<int64_t, std::vector<TensorMap>> engine_runs, reference_runs;  // per_run -> runs in image order
  std::string refusal;
  for (int64_t per_run : {kMaxBatch, int64_t{2}, int64_t{1}}) {
    for (int64_t begin = 0; begin < kMaxBatch && refusal.empty(); begin += per_run) {
      const std::string where = fmt::format("images {}..{}", begin, begin + per_run - 1);
      auto expected = run_reference(*reference_graph, input_images(engine, inputs, begin, per_run));
      auto actual = run_images(engine, *context, inputs, begin, per_run);
      if (!actual.ok()) {
        const std::string& message = actual.status().message();
        if (per_run < kMaxBatch && message.find(fmt::format("runs only at batch {}", kMaxBatch)) != std::string::npos) {
          EXPECT_FALSE(engine.plan().fixed_batch_reason.empty());
          refusal = engine.plan().fixed_batch_reason;
          break;
        }
        // Inputs the model itself rejects at this batch (an index past a smaller dim): any clear error.
        ASSERT_FALSE(expected.ok()) << where << ": " << actual.status().to_string();
        return skip(fmt::format("the reference rejects batches of {}", per_run), expected.status().message());
      }
      // A batch the model itself does not allow must not give outputs either.
      ASSERT_TRUE(expected.ok()) << where << ": the engine ran where the reference says "
                                 << expected.status().to_string();
      for (const engine::IoTensorInfo& info : engine.outputs()) {
        std::string difference = testing::compare_tensors(actual->at(info.name), expected->at(info.name));
        ASSERT_EQ(difference, "") << where << ", output '" << info.name << "'";
      }
      engine_runs[per_run].push_back(std::move(*actual));
      reference_runs[per_run].push_back(std::move(*expected));
    }
  }
  if (!refusal.empty()) {
    outcome = {"refused", reason_kind(refusal), refusal};
    return;
  }

  // Image `image` of the runs of `per_run` images.
  auto image_output = [&](std::map<int64_t, std::vector<TensorMap>>& runs, int64_t per_run,
                          const engine::IoTensorInfo& info, int64_t image) {
    return image_of(info, runs[per_run][static_cast<size_t>(image / per_run)].at(info.name), image % per_run);
  };
  bool keeps_images_apart = true;
  for (const engine::IoTensorInfo& info : engine.outputs()) {
    for (int64_t image = 0; image < kMaxBatch; ++image) {
      keeps_images_apart = keeps_images_apart && same_bits(image_output(reference_runs, 1, info, image),
                                                           image_output(reference_runs, kMaxBatch, info, image));
    }
  }
  if (!keeps_images_apart) {
    outcome = {"mixes", "", ""};
    return;
  }
  for (const engine::IoTensorInfo& info : engine.outputs()) {
    for (int64_t per_run : {int64_t{1}, int64_t{2}}) {
      for (int64_t image = 0; image < kMaxBatch; ++image) {
        EXPECT_TRUE(same_bits(image_output(engine_runs, per_run, info, image),
                              image_output(engine_runs, kMaxBatch, info, image)))
            << "output '" << info.name << "' of image " << image << " differs between runs of " << per_run
            << " and of 4 images";
      }
    }
  }
  outcome = {"identical", "", ""};
}

std::string case_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(OnnxNode, NodeTestBatches, ::testing::ValuesIn(testing::list_node_cases(node_test_root())),
                         case_test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NodeTestBatches);

// ---------------------------------------------------------------------------------------------
// Whole models

std::vector<std::string> listed_models() {
  std::vector<std::string> models;
  if (const char* list = std::getenv("QDQRT_BATCH_MODELS")) {
    std::string text = list;
    for (size_t start = 0; start <= text.size();) {
      const size_t comma = std::min(text.find(',', start), text.size());
      if (comma > start) models.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
    return models;
  }
  for (const auto& entry : fs::directory_iterator(QDQRT_MODELS_DIR)) {
    if (entry.path().extension() == ".onnx") models.push_back(entry.path().string());
  }
  std::sort(models.begin(), models.end());
  return models;
}

void expect_model_batches(const std::string& path, engine::Precision precision) {
  SCOPED_TRACE(fmt::format("{} ({})", path, precision == engine::Precision::kFp32 ? "fp32" : "int8"));
  auto declared = load_onnx_file(path);
  ASSERT_TRUE(declared.ok()) << declared.status().to_string();
  engine::BuildOptions options;
  options.precision = precision;
  TensorMap inputs;
  uint32_t seed = 1;
  for (const std::string& name : declared->inputs) {
    Shape shape;
    for (const Dim& dim : *declared->find_value(name)->shape) shape.push_back(dim.is_static() ? dim.value : kMaxBatch);
    ASSERT_FALSE(shape.empty());
    shape[0] = kMaxBatch;
    options.input_shapes[name] = shape;
    inputs[name] = random_tensor(shape, seed++);
  }
  auto built = engine::Engine::build_from_file(path, options);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  EXPECT_EQ(engine.plan().fixed_batch_reason, "") << "a shipped model must run at every batch";
  auto full = run_per_image(engine, inputs, kMaxBatch, kMaxBatch);
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  for (int64_t per_run : {int64_t{1}, int64_t{2}}) {
    auto partial = run_per_image(engine, inputs, kMaxBatch, per_run);
    ASSERT_TRUE(partial.ok()) << "batch " << per_run << ": " << partial.status().to_string();
    for (const auto& [name, slices] : full->slices) {
      ASSERT_EQ(slices.size(), partial->slices.at(name).size()) << name;
      for (size_t image = 0; image < slices.size(); ++image) {
        EXPECT_TRUE(bit_equal(partial->slices.at(name)[image], slices[image]))
            << "output '" << name << "' of image " << image << " differs between runs of " << per_run
            << " and of 4 images";
      }
    }
  }
}

TEST(ModelBatches, EveryImageGetsTheSameBitsAtEveryBatch) {
  const std::vector<std::string> models = listed_models();
  ASSERT_FALSE(models.empty());
  for (const std::string& path : models) {
    expect_model_batches(path, engine::Precision::kInt8);
    // QDQ models also all in float (fake quantization removed): the float layers on real networks.
    if (path.find("qdq") != std::string::npos) expect_model_batches(path, engine::Precision::kFp32);
  }
}

}  // namespace
}  // namespace qdqrt::batch_testing
