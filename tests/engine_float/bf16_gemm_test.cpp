// BuildOptions::bf16 (qdqrt exec --bf16): float MatMul/Gemm layers with constant weights become
// bf16_gemm layers (engine/layers/bf16_gemm.cpp) where the CPU has AVX512_BF16, within bf16's
// precision of the reference executor and not equal to the fp32 engine; the engine file keeps them;
// INT8 layers and builds without the option do not change; where the CPU cannot run the kernel the
// option leaves the fp32 kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "engine/engine_file.h"
#include "kernels/bf16/bf16_gemm.h"
#include "kernels/cpu_features.h"
#include "tests/common/layer_params_check.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;
// bf16 keeps 8 significant bits: each product is off by up to ~2^-8 relative, and sums of random
// signs keep the error near that of one term.
constexpr double kBf16Tolerance = 1e-2;

// A MatMul of a rank-3 input (row and column tails of the 14 x 32 tile, odd K) and a Gemm with
// transB, alpha and a bias.
std::string float_gemm_model() {
  return model(13, "g (float[N,19,67] x, float[N,40] u) => (float y, float z)",
               {weights("w", {67, 45}), weights("v", {70, 40}), weights("c", {70})},
               "y = MatMul(x, w)\n  z = Gemm<transB=1, alpha=0.5>(u, v, c)");
}

Result<TensorMap> run_engine(const engine::Engine& engine, int threads, const TensorMap& inputs) {
  auto context = engine.create_context({.threads = threads});
  std::vector<engine::ConstTensorBinding> bindings;
  int64_t batch = 1;
  for (const auto& [name, tensor] : inputs) {
    bindings.push_back({name, tensor.raw_data(), tensor.shape()});
    batch = tensor.dim(0);
  }
  TensorMap outputs;
  std::vector<engine::TensorBinding> output_bindings;
  for (const engine::IoTensorInfo& info : engine.outputs()) outputs[info.name] = Tensor(info.dtype, info.shape_at_batch(batch));
  for (auto& [name, tensor] : outputs) output_bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context->run(bindings, output_bindings));
  return outputs;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::vector<std::string> kernels_of_kind(const engine::EnginePlan& plan, const std::string& kind) {
  std::vector<std::string> kernels;
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind == kind) kernels.push_back(layer.kernel);
  }
  return kernels;
}

bool has_feature(const engine::EnginePlan& plan, const std::string& feature) {
  return std::find(plan.cpu_features.begin(), plan.cpu_features.end(), feature) != plan.cpu_features.end();
}

Result<std::shared_ptr<const engine::Engine>> build(const std::string& text, bool bf16,
                                                    engine::Precision precision = engine::Precision::kFp32) {
  QDQRT_ASSIGN_OR_RETURN(Graph graph, load_text_graph(text, kMaxBatch));
  engine::BuildOptions options;
  options.precision = precision;
  options.bf16 = bf16;
  return engine::Engine::build(std::move(graph), options);
}

class Bf16Engine : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::bf16_gemm_usable()) {
      GTEST_SKIP() << "no bf16 kernels here (" << kernels::bf16_gemm_unavailable_reason() << ")";
    }
  }
};

TEST_F(Bf16Engine, FloatGemmsRunInBf16WithinItsPrecisionAndNotAsFp32) {
  auto graph = load_text_graph(float_gemm_model(), kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto bf16 = build(float_gemm_model(), true);
  auto fp32 = build(float_gemm_model(), false);
  ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
  ASSERT_TRUE(fp32.ok()) << fp32.status().to_string();
  const std::vector<std::string> expected_kernels(2, kernels::bf16_amx_usable() ? "bf16-gemm-32x32-amxbf16"
                                                                                : "bf16-gemm-14x32-avx512bf16");
  EXPECT_EQ(kernels_of_kind((*bf16)->plan(), "bf16_gemm"), expected_kernels);
  EXPECT_TRUE(kernels_of_kind((*bf16)->plan(), "fp32_gemm").empty());
  EXPECT_TRUE(has_feature((*bf16)->plan(), "avx512bf16"));
  EXPECT_EQ(has_feature((*bf16)->plan(), "amxbf16"), kernels::bf16_amx_usable());
  EXPECT_EQ(kernels_of_kind((*fp32)->plan(), "fp32_gemm").size(), 2u);
  EXPECT_FALSE(has_feature((*fp32)->plan(), "avx512bf16"));
  for (int64_t batch : {int64_t{1}, kMaxBatch}) {
    TensorMap inputs = random_inputs(*graph, batch, 23);
    auto expected = run_reference(*graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    auto one_thread = run_engine(**bf16, 1, inputs);
    auto two_threads = run_engine(**bf16, 2, inputs);
    auto float_outputs = run_engine(**fp32, 1, inputs);
    ASSERT_TRUE(one_thread.ok() && two_threads.ok() && float_outputs.ok());
    for (const auto& [name, tensor] : *expected) {
      SCOPED_TRACE(fmt::format("{} batch {}", name, batch));
      const double error = relative_error(one_thread->at(name), tensor);
      EXPECT_LE(error, kBf16Tolerance);
      // Not the fp32 kernels under another name: bf16 rounding shows.
      EXPECT_GT(error, 1e-5);
      EXPECT_GT(relative_error(one_thread->at(name), float_outputs->at(name)), 1e-5);
      EXPECT_LE(relative_error(float_outputs->at(name), tensor), 1e-5);
      // Each output is summed in pair order whatever the split.
      EXPECT_TRUE(same_bytes(one_thread->at(name), two_threads->at(name)));
    }
  }
}

// A Linear with its GELU (a FusedMatMul with function Gelu) runs as one bf16_gemm with the GELU
// over its output, within bf16's precision of the reference, on 1 and 2 threads alike.
TEST_F(Bf16Engine, TheGeluOfAFusedMatMulRunsAfterTheBf16Gemm) {
  const std::string text = model(13, "g (float[N,19,67] x) => (float y)",
                                 {weights("w", {67, 45}), weights("b", {45}), "float sqrt2 = {1.4142135}",
                                  "float one = {1.0}", "float half = {0.5}"},
                                 "m = MatMul(x, w)\nh = Add(b, m)\nd = Div(h, sqrt2)\ne = Erf(d)\np = Add(e, one)\n"
                                 "g = Mul(h, p)\ny = Mul(g, half)");
  auto graph = load_text_graph(text, kMaxBatch);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto bf16 = build(text, true);
  ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
  ASSERT_EQ((*bf16)->plan().layers.size(), 1u);
  EXPECT_EQ((*bf16)->plan().layers[0].kind, "bf16_gemm");
  EXPECT_TRUE((*bf16)->plan().layers[0].params.has("gelu"));
  TensorMap inputs = random_inputs(*graph, kMaxBatch, 29);
  auto expected = run_reference(*graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  auto one_thread = run_engine(**bf16, 1, inputs);
  auto two_threads = run_engine(**bf16, 2, inputs);
  ASSERT_TRUE(one_thread.ok() && two_threads.ok());
  EXPECT_LE(relative_error(one_thread->at("y"), expected->at("y")), kBf16Tolerance);
  EXPECT_TRUE(same_bytes(one_thread->at("y"), two_threads->at("y")));
}

TEST_F(Bf16Engine, EngineFileKeepsTheBf16LayersAndTheirResults) {
  auto graph = load_text_graph(float_gemm_model(), kMaxBatch);
  ASSERT_TRUE(graph.ok());
  auto built = build(float_gemm_model(), true);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const std::string path = (std::filesystem::temp_directory_path() / "bf16_gemm_test.qdqrt").string();
  ASSERT_TRUE((*built)->save(path).is_ok());
  auto loaded = engine::Engine::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(kernels_of_kind((*loaded)->plan(), "bf16_gemm").size(), 2u);
  EXPECT_TRUE(has_feature((*loaded)->plan(), "avx512bf16"));
  TensorMap inputs = random_inputs(*graph, 2, 5);
  auto before = run_engine(**built, 1, inputs);
  auto after = run_engine(**loaded, 2, inputs);
  ASSERT_TRUE(before.ok() && after.ok());
  for (const auto& [name, tensor] : *before) EXPECT_TRUE(same_bytes(after->at(name), tensor)) << name;
}

TEST_F(Bf16Engine, DamagedParamsAndBlobsAreRefusedNamingTheLayer) {
  auto built = build(float_gemm_model(), true);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::EnginePlan& plan = (*built)->plan();
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    if (plan.layers[i].kind != "bf16_gemm") continue;
    SCOPED_TRACE(plan.layers[i].name);
    BindDamageResult result = damage_each_param_and_blob(plan, i);
    EXPECT_GT(result.refused, 0);
    EXPECT_TRUE(result.unnamed.empty()) << fmt::format("{}", fmt::join(result.unnamed, "\n"));
  }
  std::vector<std::string> missing = undocumented_keys(plan, QDQRT_ENGINE_FORMAT_DOC);
  EXPECT_TRUE(missing.empty()) << fmt::format("{}", fmt::join(missing, "\n"));
}

// An INT8 model with a float MatMul after its INT8 one (as nn.MultiheadAttention's projections
// follow quantized layers): int8[16, 24] weights via DequantizeLinear, then float [24, 20] ones.
std::string int8_then_float_model() {
  std::string codes;
  for (int i = 0; i < 16 * 24; ++i) codes += (i ? ", " : "") + std::to_string((i * 37) % 255 - 127);
  return model(13, "g (float[N,8,16] x) => (float y)",
               {"int8[16,24] wq = {" + codes + "}", "float ws = {0.01}", "float xs = {0.02}", "int8 xz = {0}",
                weights("w2", {24, 20})},
               "xq = QuantizeLinear(x, xs, xz)\n  xd = DequantizeLinear(xq, xs, xz)\n  wd = DequantizeLinear(wq, ws)\n"
               "  h = MatMul(xd, wd)\n  y = MatMul(h, w2)");
}

// The float MatMul changes kind; every other layer, the INT8 ones included, keeps its kind, kernel
// and params, and the output stays within bf16's precision of the plain INT8 engine.
TEST_F(Bf16Engine, Int8LayersAreUntouched) {
  auto plain = build(int8_then_float_model(), false, engine::Precision::kInt8);
  auto bf16 = build(int8_then_float_model(), true, engine::Precision::kInt8);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  ASSERT_TRUE(bf16.ok()) << bf16.status().to_string();
  const engine::EnginePlan& a = (*plain)->plan();
  const engine::EnginePlan& b = (*bf16)->plan();
  ASSERT_EQ(a.layers.size(), b.layers.size());
  int converted = 0, int8_layers = 0;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    SCOPED_TRACE(a.layers[i].kind + " " + a.layers[i].name);
    if (a.layers[i].kind == "fp32_gemm") {
      EXPECT_EQ(b.layers[i].kind, "bf16_gemm");
      ++converted;
      continue;
    }
    int8_layers += a.layers[i].kind == "qmatmul";
    EXPECT_EQ(b.layers[i].kind, a.layers[i].kind);
    EXPECT_EQ(b.layers[i].kernel, a.layers[i].kernel);
    EXPECT_TRUE(b.layers[i].params.values() == a.layers[i].params.values());
  }
  EXPECT_EQ(converted, 1) << fmt::format("{}", fmt::join(layer_kinds(a), ", "));
  EXPECT_EQ(int8_layers, 1) << fmt::format("{}", fmt::join(layer_kinds(a), ", "));
  EXPECT_EQ(b.precision, "int8");
  auto graph = load_text_graph(int8_then_float_model(), kMaxBatch);
  ASSERT_TRUE(graph.ok());
  TensorMap inputs = random_inputs(*graph, 2, 3);
  auto plain_outputs = run_engine(**plain, 1, inputs);
  auto bf16_outputs = run_engine(**bf16, 1, inputs);
  ASSERT_TRUE(plain_outputs.ok() && bf16_outputs.ok());
  for (const auto& [name, tensor] : *plain_outputs) {
    const double error = relative_error(bf16_outputs->at(name), tensor);
    EXPECT_LE(error, kBf16Tolerance) << name;
    EXPECT_GT(error, 0.0) << name;
  }
}

// Without the option nothing changes: the default BuildOptions build fp32_gemm layers.
TEST(Bf16Option, OffByDefault) {
  EXPECT_FALSE(engine::BuildOptions{}.bf16);
  auto built = build(float_gemm_model(), false);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  EXPECT_TRUE(kernels_of_kind((*built)->plan(), "bf16_gemm").empty());
  EXPECT_EQ(kernels_of_kind((*built)->plan(), "fp32_gemm").size(), 2u);
}

// Where the bf16 kernel cannot run (here: kernels limited below AVX-512), the option is a
// permission that cannot be used: fp32 kernels, and the reason says why.
TEST(Bf16Option, UnusableCpuKeepsFp32Kernels) {
  kernels::set_max_isa(kernels::Isa::kAvx2);
  const bool usable = kernels::bf16_gemm_usable();
  const std::string reason = kernels::bf16_gemm_unavailable_reason();
  auto built = build(float_gemm_model(), true);
  kernels::set_max_isa(std::nullopt);
  EXPECT_FALSE(usable);
  EXPECT_FALSE(reason.empty());
  if (kernels::cpu_has_avx512bf16()) EXPECT_EQ(reason, "kernels are limited to avx2 (QDQRT_MAX_ISA)");
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  EXPECT_TRUE(kernels_of_kind((*built)->plan(), "bf16_gemm").empty());
  EXPECT_EQ(kernels_of_kind((*built)->plan(), "fp32_gemm").size(), 2u);
  EXPECT_FALSE(has_feature((*built)->plan(), "avx512bf16"));
}

// An engine file with bf16 layers read where they cannot run: refused, naming the feature. (The
// plan lists only that feature and a scalar ISA, so the ISA's own check, which the same limit
// fails, does not come first.)
TEST_F(Bf16Engine, FileNeedingBf16IsRefusedWhereItCannotRun) {
  auto built = build(float_gemm_model(), true);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  engine::EnginePlan plan = (*built)->plan();
  plan.cpu_features = {"avx512bf16"};
  plan.isa = "scalar";  // checked before the features
  const std::string path = (std::filesystem::temp_directory_path() / "bf16_gemm_refused.qdqrt").string();
  ASSERT_TRUE(engine::write_engine_file(plan, nullptr, path).is_ok());
  kernels::set_max_isa(kernels::Isa::kAvx2);
  auto loaded = engine::Engine::load(path);
  kernels::set_max_isa(std::nullopt);
  std::remove(path.c_str());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("engine was built with --bf16 for avx512bf16, which is not usable here: "
                                           "kernels are limited to avx2 (QDQRT_MAX_ISA)"),
            std::string::npos)
      << loaded.status().to_string();
}

}  // namespace
}  // namespace qdqrt::testing
