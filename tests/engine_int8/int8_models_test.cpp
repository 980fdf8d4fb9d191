// The project's QDQ models through the INT8 layers (stand-alone harness: registry lowerings for
// every INT8 node, the reference kernel for the rest) against the reference executor on the same
// optimized graph, on Fashion-MNIST test images, at batch 1 and a larger batch, 1 and 2 threads:
// logits within 1e-5 of their range and top-1 agreement 100% (fmnist_resnet_qdq: see below).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "engine/engine.h"
#include "optimizer/pipeline.h"
#include "parser/onnx_loader.h"
#include "tests/engine_int8/int8_harness.h"

namespace qdqrt::testing {
namespace {

namespace fs = std::filesystem;

constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Loaded at `batch` and optimized.
Graph optimized_model(const fs::path& path, int64_t batch) {
  auto probe = load_onnx_file(path.string());
  EXPECT_TRUE(probe.ok()) << probe.status().to_string();
  if (!probe.ok()) return {};
  LoadOptions options;
  options.input_shapes[probe->inputs.at(0)] = {batch, 1, 28, 28};
  auto graph = load_onnx_file(path.string(), options);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  if (!graph.ok()) return {};
  auto report = optimizer::optimize(*graph);
  EXPECT_TRUE(report.ok()) << report.status().to_string();
  return std::move(graph).value();
}

Tensor images(const std::vector<uint8_t>& pixels, int start, int count) {
  Tensor input(DataType::kFloat, {count, 1, 28, 28});
  for (int64_t i = 0; i < input.numel(); ++i) {
    input.data<float>()[i] =
        (static_cast<float>(pixels[static_cast<size_t>(start) * 784 + static_cast<size_t>(i)]) / 255.0f - kMean) /
        kStd;
  }
  return input;
}

int argmax(const Tensor& logits, int64_t row) {
  const int64_t classes = logits.dim(1);
  const float* values = logits.data<float>() + row * classes;
  return static_cast<int>(std::max_element(values, values + classes) - values);
}

// Runs' logits against the reference's: the worst error as a share of the reference's range, and
// top-1 agreement over the runs counted.
struct LogitComparison {
  double worst = 0.0;
  int agree = 0, total = 0;

  // `logits` holds the reference's first rows; `count_top1` adds them to the agreement.
  void add(const Tensor& logits, const Tensor& reference, bool count_top1) {
    float range = 1e-30f;
    for (float v : reference.values<float>()) range = std::max(range, std::abs(v));
    for (int64_t i = 0; i < logits.numel(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(logits.data<float>()[i] - reference.data<float>()[i]) /
                                                  range));
    }
    if (!count_top1) return;
    for (int64_t row = 0; row < logits.dim(0); ++row) agree += argmax(logits, row) == argmax(reference, row);
    total += static_cast<int>(logits.dim(0));
  }

  void expect_within(bool exact) const {
    if (exact) {
      EXPECT_LE(worst, 1e-5);
      EXPECT_EQ(agree, total);
    } else {
      // A float-output layer followed by QuantizeLinear (the fmnist model's residual blocks) can
      // flip a rounding (the kernels' fma epilogue vs the reference's float steps): 1 LSB downstream.
      EXPECT_LE(worst, 2e-2);
      EXPECT_GE(agree, total * 99 / 100);
    }
  }
};

struct ModelCase {
  std::string file;
  bool exact;  // logits within 1e-5 of their range and top-1 100% (measured: bit-exact INT8 paths)
};

void PrintTo(const ModelCase& c, std::ostream* out) { *out << c.file; }

fs::path model_path(const ModelCase& c) {
  return c.file == "fmnist_resnet_qdq.onnx" ? fs::path(QDQRT_MODELS_DIR) / c.file
                                            : fs::path(QDQRT_OPTIMIZER_MODELS_DIR) / c.file;
}

class Int8Models : public ::testing::TestWithParam<ModelCase> {};

TEST_P(Int8Models, MatchReferenceOnFashionMnist) {
  const ModelCase& c = GetParam();
  const fs::path path = model_path(c);
  const fs::path data = QDQRT_OPTIMIZER_MODELS_DIR;
  const std::vector<uint8_t> pixels = read_bytes(data / "fmnist_test_1000_images.u8");
  ASSERT_EQ(pixels.size(), 1000u * 784u);
  constexpr int kBatch = 40, kImages = 200;
  Graph graph = optimized_model(path, kBatch);
  ASSERT_FALSE(graph.nodes.empty());
  auto plan = harness_lower(graph, kBatch, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_GE(plan->native_layers, 5) << "INT8 layers lowered natively";
  auto layers = harness_bind(*plan);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  const std::string input = graph.inputs.at(0), output = graph.outputs.at(0);

  LogitComparison comparison;
  // Shape computations are folded at the maximum batch (a Reshape to [40, 24, -1]), so the
  // reference always runs the full batch; the engine runs it too, and batch 1 (compared with the
  // reference's first row), with 1 and 2 threads.
  for (int start = 0; start < kImages; start += kBatch) {
    TensorMap inputs = {{input, images(pixels, start, kBatch)}};
    auto expected = run_reference(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    const Tensor& reference = expected->at(output);
    const int64_t classes = reference.dim(1);
    for (int64_t batch : {int64_t{kBatch}, int64_t{1}}) {
      for (int threads : {1, 2}) {
        if (start != 0 && (threads == 2 || batch == 1)) continue;
        TensorMap run_inputs = {{input, images(pixels, start, static_cast<int>(batch))}};
        auto actual = harness_run(*plan, *layers, run_inputs, threads);
        ASSERT_TRUE(actual.ok()) << actual.status().to_string();
        const Tensor& logits = actual->at(output);
        ASSERT_EQ(logits.shape(), (Shape{batch, classes}));
        comparison.add(logits, reference, threads == 1 && batch == kBatch);
      }
    }
  }
  RecordProperty("top1_agreement", fmt::format("{}/{}", comparison.agree, comparison.total));
  RecordProperty("max_logit_error_of_range", fmt::format("{:.3g}", comparison.worst));
  fmt::print("{}: top-1 agreement {}/{}, max logit error {:.3g} of the range, {} native INT8 layers\n", c.file,
             comparison.agree, comparison.total, comparison.worst, plan->native_layers);
  comparison.expect_within(c.exact);
}

// The same through the real engine: Engine::build_from_file at batch 40, run at 40 and 1 with
// 1 and 2 threads. Skipped while a node of the model has no engine layer yet (the reference and
// float layer families land separately).
TEST_P(Int8Models, EngineMatchesReferenceOnFashionMnist) {
  const ModelCase& c = GetParam();
  const fs::path path = model_path(c);
  const std::vector<uint8_t> pixels = read_bytes(fs::path(QDQRT_OPTIMIZER_MODELS_DIR) / "fmnist_test_1000_images.u8");
  ASSERT_EQ(pixels.size(), 1000u * 784u);
  constexpr int kBatch = 40, kImages = 120;
  Graph graph = optimized_model(path, kBatch);
  ASSERT_FALSE(graph.nodes.empty());
  const std::string input = graph.inputs.at(0), output = graph.outputs.at(0);
  engine::BuildOptions options;
  options.input_shapes[input] = {kBatch, 1, 28, 28};
  auto built = engine::Engine::build_from_file(path.string(), options);
  if (!built.ok() && built.status().message().find("no engine layer runs") != std::string::npos) {
    GTEST_SKIP() << built.status().to_string();
  }
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  int int8_layers = 0;
  for (const engine::PlanLayer& layer : engine.plan().layers) {
    int8_layers += layer.kind.rfind("q", 0) == 0 && layer.kind != "quantize";
  }
  EXPECT_GE(int8_layers, 5);
  LogitComparison comparison;
  for (int start = 0; start < kImages; start += kBatch) {
    auto expected = run_reference(graph, {{input, images(pixels, start, kBatch)}});
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    const Tensor& reference = expected->at(output);
    const int64_t classes = reference.dim(1);
    for (int64_t batch : {int64_t{kBatch}, int64_t{1}}) {
      for (int threads : {1, 2}) {
        if (start != 0 && (threads == 2 || batch == 1)) continue;
        Tensor in = images(pixels, start, static_cast<int>(batch));
        Tensor logits(DataType::kFloat, {batch, classes});
        auto context = engine.create_context({.threads = threads});
        Status status = context->run({{input, in.raw_data(), in.shape()}}, {{output, logits.raw_data(), logits.shape()}});
        ASSERT_TRUE(status.is_ok()) << status.to_string();
        comparison.add(logits, reference, threads == 1 && batch == kBatch);
      }
    }
  }
  fmt::print("engine {}: top-1 agreement {}/{}, max logit error {:.3g} of the range, {} INT8 layers\n", c.file,
             comparison.agree, comparison.total, comparison.worst, int8_layers);
  comparison.expect_within(c.exact);
}

// shift_activations_unsigned stores int8 activations as uint8 + 128: the engine with and without
// it gives the same logits bit for bit, and on the signed-activation files it shifts some tensors.
TEST_P(Int8Models, UnsignedActivationsGiveTheSameLogits) {
  const ModelCase& c = GetParam();
  const fs::path path = model_path(c);
  const std::vector<uint8_t> pixels = read_bytes(fs::path(QDQRT_OPTIMIZER_MODELS_DIR) / "fmnist_test_1000_images.u8");
  ASSERT_EQ(pixels.size(), 1000u * 784u);
  constexpr int kBatch = 8;
  auto probe = load_onnx_file(path.string());
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  const std::string input = probe->inputs.at(0), output = probe->outputs.at(0);
  std::vector<Tensor> logits;
  std::vector<int> unsigned_inputs;
  for (bool shift : {true, false}) {
    engine::BuildOptions options;
    options.input_shapes[input] = {kBatch, 1, 28, 28};
    if (!shift) options.disabled_passes = {"shift_activations_unsigned"};
    auto built = engine::Engine::build_from_file(path.string(), options);
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    int count = 0;
    for (const engine::PlanLayer& layer : (*built)->plan().layers) {
      count += layer.kernel.rfind("qu8", 0) == 0;
    }
    unsigned_inputs.push_back(count);
    Tensor in = images(pixels, 0, kBatch);
    Tensor out(DataType::kFloat, {kBatch, 10});
    auto context = (*built)->create_context({.threads = 2});
    Status status = context->run({{input, in.raw_data(), in.shape()}}, {{output, out.raw_data(), out.shape()}});
    ASSERT_TRUE(status.is_ok()) << status.to_string();
    logits.push_back(std::move(out));
  }
  for (int64_t i = 0; i < logits[0].numel(); ++i) {
    ASSERT_EQ(logits[0].data<float>()[i], logits[1].data<float>()[i]) << c.file << " logit " << i;
  }
  if (c.file.find("u8") == std::string::npos) {
    EXPECT_GT(unsigned_inputs[0], unsigned_inputs[1]) << c.file << ": no kernel took unsigned activations";
  }
}

// Any image model through the harness (opt-in: QDQRT_INT8_MODEL=model.onnx, optional
// QDQRT_INT8_SHAPE=NxCxHxW, default 2x3x224x224): random inputs, outputs vs the reference executor;
// QDQRT_INT8_DEBUG=1 lists every fused layer whose output differs.
TEST(Int8ModelFile, MatchesReference) {
  const char* file = std::getenv("QDQRT_INT8_MODEL");
  if (file == nullptr) GTEST_SKIP() << "set QDQRT_INT8_MODEL=model.onnx";
  Shape shape = {2, 3, 224, 224};
  if (const char* text = std::getenv("QDQRT_INT8_SHAPE")) {
    shape.clear();
    for (const char* p = text; *p;) {
      shape.push_back(std::strtoll(p, const_cast<char**>(&p), 10));
      if (*p == 'x') ++p;
    }
  }
  auto probe = load_onnx_file(file);
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  LoadOptions options;
  options.input_shapes[probe->inputs.at(0)] = shape;
  auto loaded = load_onnx_file(file, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Graph graph = std::move(loaded).value();
  ASSERT_TRUE(optimizer::optimize(graph).ok());
  // QDQRT_INT8_DEBUG=1: every fused layer's output becomes a graph output (first divergence).
  if (std::getenv("QDQRT_INT8_DEBUG")) {
    for (const Node& node : graph.nodes) {
      if (node.domain == kQdqrtDomain) graph.outputs.push_back(node.outputs[0]);
    }
  }
  auto plan = harness_lower(graph, shape[0], kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::map<std::string, int> kinds;
  for (const std::string& kind : native_kinds(*plan)) ++kinds[kind];
  for (const auto& [kind, count] : kinds) fmt::print("  {} x{}\n", kind, count);
  std::map<std::string, int> reference_ops;
  for (int origin : plan->harness_node) {
    if (origin >= 0) ++reference_ops[graph.nodes[static_cast<size_t>(origin)].op_type];
  }
  for (const auto& [op, count] : reference_ops) fmt::print("  reference {} x{}\n", op, count);
  auto layers = harness_bind(*plan);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  Tensor x(DataType::kFloat, shape);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  TensorMap inputs = {{graph.inputs.at(0), x}};
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  for (int threads : {1, 2}) {
    auto actual = harness_run(*plan, *layers, inputs, threads);
    ASSERT_TRUE(actual.ok()) << actual.status().to_string();
    for (const auto& [name, reference] : *expected) {
      const Tensor& got = actual->at(name);
      ASSERT_EQ(got.shape(), reference.shape());
      double range = 1e-30, worst = 0.0;
      for (int64_t i = 0; i < reference.numel(); ++i) range = std::max(range, std::abs(reference.value_as_double(i)));
      int same_top1 = 0;
      for (int64_t i = 0; i < reference.numel(); ++i) {
        worst = std::max(worst, std::abs(reference.value_as_double(i) - got.value_as_double(i)) / range);
      }
      if (reference.rank() == 2) {
        for (int64_t row = 0; row < reference.dim(0); ++row) same_top1 += argmax(got, row) == argmax(reference, row);
      }
      int64_t mismatches = 0;
      for (int64_t i = 0; i < reference.numel(); ++i) mismatches += reference.value_as_double(i) != got.value_as_double(i);
      if (std::getenv("QDQRT_INT8_DEBUG")) {
        if (mismatches) fmt::print("{} ({}): {} of {} differ, max {:.3g} of range\n", name, dtype_name(reference.dtype()), mismatches, reference.numel(), worst);
        continue;
      }
      fmt::print("{} threads {}: max error {:.3g} of the range, top-1 same {}/{}\n", name, threads, worst, same_top1,
                 reference.rank() == 2 ? reference.dim(0) : 0);
      // No bound on `worst`: in models whose fused layers output fp32 (EfficientNet's float SiLU),
      // ulp-level differences flip roundings of the following QuantizeLinear and deep random-weight
      // networks amplify them (tests/models measures that sensitivity with ulp-perturbed models).
      if (reference.rank() == 2) {
        EXPECT_EQ(same_top1, reference.dim(0)) << name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Int8Layers, Int8Models,
    ::testing::Values(ModelCase{"fmnist_resnet_qdq.onnx", false}, ModelCase{"resnet_trt.onnx", true},
                      ModelCase{"resnet_ort_s8.onnx", true}, ModelCase{"resnet_ort_u8.onnx", true},
                      ModelCase{"mobilenet_trt.onnx", true}, ModelCase{"mobilenet_ort_s8.onnx", true},
                      ModelCase{"mobilenet_ort_u8.onnx", true}),
    [](const auto& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      return name;
    });

}  // namespace
}  // namespace qdqrt::testing
