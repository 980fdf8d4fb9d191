// Real engines through the file: plans made by the builder (a small QDQ graph, and the shipped
// Fashion-MNIST QDQ ResNet once the engine has layers for all its nodes), serialized, read back
// (from bytes and from a mapped file): equal plans, and identical outputs when run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "tests/common/layer_params_check.h"
#include "tests/engine_file/test_plans.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::engine::testing {
namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(QDQRT_MODELS_DIR) + "/fmnist_resnet_qdq.onnx";

// Border layers and a constant (with a blob): what the builder runs today on any machine.
const char* kBorderGraph = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4,3,5,7] x) => (float[4,3,5,7] y, int8[4,3,5,7] q, int8[6] c, float[4,3,5,7] z)
  <float s = {0.05}, int8 zp = {3}, float t = {0.125}, int8 tzp = {-7}, float[6] w = {1, 2, 3, 4, 5, 6}>
  {
    c = QuantizeLinear(w, s, zp)
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
    p = QuantizeLinear(x, t, tzp)
    z = DequantizeLinear(p, t, tzp)
  })";

// The Fashion-MNIST engine, or nullptr with the reason when the builder cannot build it yet.
std::shared_ptr<const Engine> build_model(std::string& reason) {
  auto built = Engine::build_from_file(kModel, {});
  if (!built.ok()) {
    reason = built.status().to_string();
    return nullptr;
  }
  return *built;
}

// Runs the engine at its maximum batch on seeded random inputs; returns every output's bytes.
std::vector<std::vector<uint8_t>> run_outputs(const Engine& engine) {
  std::mt19937 generator(5);
  std::uniform_real_distribution<float> values(-1.0f, 1.0f);
  std::vector<Tensor> inputs;
  std::vector<ConstTensorBinding> in;
  for (const IoTensorInfo& info : engine.inputs()) {
    EXPECT_EQ(info.dtype, DataType::kFloat) << info.name;
    Tensor tensor(info.dtype, info.shape);
    float* data = static_cast<float*>(tensor.raw_data());
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = values(generator);
    inputs.push_back(std::move(tensor));
    in.push_back({info.name, inputs.back().raw_data(), info.shape});
  }
  std::vector<Tensor> outputs;
  std::vector<TensorBinding> out;
  for (const IoTensorInfo& info : engine.outputs()) outputs.emplace_back(info.dtype, info.shape);
  size_t i = 0;
  for (const IoTensorInfo& info : engine.outputs()) out.push_back({info.name, outputs[i++].raw_data(), info.shape});
  auto context = engine.create_context({.threads = 2});
  Status status = context->run(in, out);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  std::vector<std::vector<uint8_t>> bytes;
  for (const Tensor& tensor : outputs) {
    const uint8_t* data = static_cast<const uint8_t*>(tensor.raw_data());
    bytes.emplace_back(data, data + tensor.nbytes());
  }
  return bytes;
}

// Plan -> bytes -> plan -> Engine::from_plan: equal plans, same bytes again, same outputs.
void expect_round_trip(const Engine& engine) {
  const EnginePlan& plan = engine.plan();
  ASSERT_FALSE(plan.layers.empty());

  std::vector<uint8_t> file = serialize_or_fail(plan);
  ASSERT_FALSE(file.empty());
  auto read = read_copy(file);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  expect_plans_equal(plan, *read);
  EXPECT_EQ(serialize_or_fail(*read), file);  // writing is deterministic and lossless

  // The reloaded plan binds and runs to the same bytes.
  auto reloaded = Engine::from_plan(std::move(read).value());
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().to_string();
  std::vector<std::vector<uint8_t>> expected = run_outputs(engine);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(run_outputs(**reloaded), expected);
}

// Engine::save -> Engine::load (mapped): equal plans, blobs in the mapping, same outputs.
void expect_save_load(const std::shared_ptr<const Engine>& engine, size_t minimum_blobs) {
  fs::path path = fs::temp_directory_path() / ("qdqrt_real_engine_" + std::to_string(::getpid()) + ".qdqrt");
  Status saved = engine->save(path.string());
  ASSERT_TRUE(saved.is_ok()) << saved.to_string();
  auto loaded = Engine::load(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  expect_plans_equal(engine->plan(), (*loaded)->plan());
  // Its weights are views of one mapping of the file, not copies.
  const void* mapping = nullptr;
  size_t blob_count = 0;
  for (const PlanLayer& layer : (*loaded)->plan().layers) {
    for (const Blob& blob : layer.blobs) {
      if (!mapping) mapping = blob.owner.get();
      EXPECT_EQ(blob.owner.get(), mapping) << layer.name << " " << blob.name;
      const uint8_t* base = static_cast<const uint8_t*>(mapping);
      EXPECT_GE(blob.bytes.data(), base);
      EXPECT_LE(blob.bytes.data() + blob.bytes.size(), base + fs::file_size(path));
      ++blob_count;
    }
  }
  EXPECT_GE(blob_count, minimum_blobs);
  EXPECT_EQ(run_outputs(**loaded), run_outputs(*engine));
  std::cout << "engine file: " << fs::file_size(path) << " bytes, " << engine->plan().layers.size() << " layers, "
            << blob_count << " blobs\n";
  fs::remove(path);
}

TEST(RealEngineFile, BuilderPlanRoundTrips) {
  auto engine = Engine::build(qdqrt::testing::parse_graph(kBorderGraph), {});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  ASSERT_GE((*engine)->plan().layers.size(), 5u);
  EXPECT_FALSE((*engine)->plan().cpu_features.empty() && (*engine)->plan().isa != "scalar");
  expect_round_trip(**engine);
  expect_save_load(*engine, 1);  // the constant's blob
}

TEST(RealEngineFile, FashionMnistResnetRoundTrips) {
  std::string reason;
  auto engine = build_model(reason);
  // Until every layer family has landed the builder refuses this model: skip, not fail.
  if (!engine && reason.find("no engine layer runs") != std::string::npos) GTEST_SKIP() << reason;
  ASSERT_TRUE(engine) << reason;
  expect_round_trip(*engine);
  expect_save_load(engine, 10);
}

// An engine built for AMX-INT8 (here through the emulated tiles, kernels/cpu_features.h) records
// amxint8 as its ISA and weights, runs bit-exact with the avx512vnni engine, and a machine that may
// not use AMX refuses its file with a clear error instead of running it.
TEST(RealEngineFile, AmxEngineMatchesAvx512AndIsRefusedWithoutAmx) {
  if (!kernels::isa_supported(kernels::Isa::kAvx512Vnni)) GTEST_SKIP() << "needs an AVX-512 VNNI machine";
  struct Reset {
    bool emulation = kernels::amx_emulation();
    ~Reset() {
      kernels::set_amx_emulation(emulation);
      kernels::set_max_isa(std::nullopt);
    }
  } reset;
  const bool real_amx = kernels::amx_hardware_missing().empty();
  kernels::set_amx_emulation(!real_amx);
  auto amx = Engine::build_from_file(kModel, {});
  ASSERT_TRUE(amx.ok()) << amx.status().to_string();
  ASSERT_EQ((*amx)->plan().isa, "amxint8");
  int amx_layers = 0;
  for (const PlanLayer& layer : (*amx)->plan().layers) amx_layers += layer.kernel.ends_with("-amxint8");
  EXPECT_GE(amx_layers, 1);  // the 3x3 convolution of 64 channels (K = 576); the shallower ones run VNNI
  BuildOptions vnni_options;
  vnni_options.max_isa = kernels::Isa::kAvx512Vnni;
  auto vnni = Engine::build_from_file(kModel, vnni_options);
  ASSERT_TRUE(vnni.ok()) << vnni.status().to_string();
  ASSERT_EQ((*vnni)->plan().isa, "avx512vnni");
  const std::vector<std::vector<uint8_t>> expected = run_outputs(**vnni);
  EXPECT_EQ(run_outputs(**amx), expected);

  const std::vector<uint8_t> file = serialize_or_fail((*amx)->plan());
  auto loaded = Engine::load_bytes(file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(run_outputs(**loaded), expected);

  kernels::set_max_isa(kernels::Isa::kAvx512Vnni);  // QDQRT_MAX_ISA=avx512vnni
  auto limited = read_copy(file);
  ASSERT_FALSE(limited.ok());
  EXPECT_EQ(limited.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(limited.status().message().find("engine was built for amxint8, which is disabled here: kernels are "
                                            "limited to avx512vnni"),
            std::string::npos)
      << limited.status().message();
  kernels::set_max_isa(std::nullopt);
  if (!real_amx) {
    kernels::set_amx_emulation(false);  // the loader now sees this CPU as it is: no AMX
    auto refused = Engine::load_bytes(file);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("engine was built for amxint8, which this CPU lacks"), std::string::npos)
        << refused.status().message();
  }
}

}  // namespace
}  // namespace qdqrt::engine::testing

namespace qdqrt::engine::testing {
namespace {

// Builder-made plans (border layers, the constant, and the INT8 ResNet's layers): whatever damage
// to a param or blob bind refuses, the message names the layer; every key is documented.
TEST(RealEngineFile, EveryRefusalNamesTheLayerAndEveryKeyIsDocumented) {
  std::vector<std::shared_ptr<const Engine>> engines;
  auto border = Engine::build(qdqrt::testing::parse_graph(kBorderGraph), {});
  ASSERT_TRUE(border.ok()) << border.status().to_string();
  engines.push_back(*border);
  std::string reason;
  if (auto model = build_model(reason)) engines.push_back(model);
  for (const auto& engine : engines) {
    const EnginePlan& plan = engine->plan();
    for (size_t i = 0; i < plan.layers.size(); ++i) {
      SCOPED_TRACE(plan.layers[i].kind + " " + plan.layers[i].name);
      qdqrt::testing::BindDamageResult result = qdqrt::testing::damage_each_param_and_blob(plan, i);
      EXPECT_TRUE(result.unnamed.empty()) << fmt::format("{}", fmt::join(result.unnamed, "\n"));
    }
    std::vector<std::string> missing = qdqrt::testing::undocumented_keys(plan, QDQRT_ENGINE_FORMAT_DOC);
    EXPECT_TRUE(missing.empty()) << fmt::format("{}", fmt::join(missing, "\n"));
  }
}

}  // namespace
}  // namespace qdqrt::engine::testing
