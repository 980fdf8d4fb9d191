// Every INT8 layer kind on small fused graphs (ONNX text with qdqrt-domain nodes and 8-bit graph
// inputs): lowered through the LayerRegistry, bound and run by the stand-alone harness
// (int8_harness.h) at batch 1 and the maximum batch with 1 and 2 threads, against the reference
// executor on the same graph. Plus must-fail binds of tampered plans, one per kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <cstdio>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine.h"
#include "engine/layer.h"
#include "kernels/cpu_features.h"
#include "kernels/pool/qpool.h"
#include "tests/common/layer_params_check.h"
#include "tests/engine_int8/int8_harness.h"
#include "tests/optimizer_fusion/fusion_test_util.h"

namespace qdqrt::testing {
namespace {

constexpr int64_t kMaxBatch = 3;
constexpr double kRequantizeTolerance = 0.05;

Tensor random_tensor(DataType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor tensor(dtype, shape);
  if (dtype == DataType::kFloat) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.data<float>()[i] = dist(rng);
  } else {
    std::uniform_int_distribution<int> dist(0, 255);
    auto* raw = static_cast<uint8_t*>(tensor.raw_data());
    for (size_t i = 0; i < tensor.nbytes(); ++i) raw[i] = static_cast<uint8_t>(dist(rng));
  }
  return tensor;
}

TensorMap random_graph_inputs(const Graph& graph, std::mt19937& rng) {
  TensorMap inputs;
  for (const std::string& name : graph.inputs) {
    const ValueInfo* info = graph.find_value(name);
    inputs[name] = random_tensor(info->dtype, *info->static_shape(), rng);
  }
  return inputs;
}

// The first `batch` images of a batched input (dim 0 == kMaxBatch); other inputs unchanged.
Tensor first_images(const Tensor& tensor, int64_t batch) {
  if (tensor.rank() == 0 || tensor.dim(0) != kMaxBatch) return tensor;
  Shape shape = tensor.shape();
  shape[0] = batch;
  Tensor out(tensor.dtype(), shape);
  std::memcpy(out.raw_data(), tensor.raw_data(), out.nbytes());
  return out;
}

struct Mismatch {
  int64_t int_elements = 0, int_mismatches = 0, max_int_diff = 0;
  double max_float_rel = 0.0;
  std::string outputs;  // names of the outputs with differences
};

Mismatch compare(const TensorMap& expected, const TensorMap& actual, const std::string& where) {
  Mismatch m;
  for (const auto& [name, reference] : expected) {
    auto it = actual.find(name);
    EXPECT_NE(it, actual.end()) << where << ": output " << name << " missing";
    if (it == actual.end()) continue;
    const Tensor& got = it->second;
    EXPECT_EQ(got.shape(), reference.shape()) << where << " " << name;
    EXPECT_EQ(got.dtype(), reference.dtype()) << where << " " << name;
    if (got.shape() != reference.shape() || got.dtype() != reference.dtype()) continue;
    // fp32: error relative to the tensor's largest magnitude (the kernels' fused fma epilogue and
    // the reference's float steps round differently, so values near 0 differ by a few ulp of the range).
    double range = 1e-30;
    if (reference.dtype() == DataType::kFloat) {
      for (int64_t i = 0; i < reference.numel(); ++i) range = std::max(range, std::abs(reference.value_as_double(i)));
    }
    for (int64_t i = 0; i < reference.numel(); ++i) {
      const double a = reference.value_as_double(i), b = got.value_as_double(i);
      if (reference.dtype() == DataType::kFloat) {
        m.max_float_rel = std::max(m.max_float_rel, std::abs(a - b) / range);
      } else {
        ++m.int_elements;
        if (a != b) {
          if (m.outputs.find(name) == std::string::npos) m.outputs += " " + name;
          ++m.int_mismatches;
          m.max_int_diff = std::max(m.max_int_diff, static_cast<int64_t>(std::abs(a - b)));
        }
      }
    }
  }
  return m;
}

bool is_int8_kind(const std::string& kind) {
  static const std::set<std::string> kinds = {"qconv",         "qmatmul",      "qbatched_matmul", "qbinary",
                                              "qlut",          "qmaxpool",     "qavgpool",        "qgavgpool",
                                              "qconcat",       "int8_reshape", "int8_transpose",  "softmax_quantize",
                                              "resize_nearest", "add_quantize"};
  return kinds.count(kind) != 0;
}

std::vector<std::string> engine_int8_kinds(const engine::Engine& engine) {
  std::vector<std::string> kinds;
  for (const engine::PlanLayer& layer : engine.plan().layers) {
    if (is_int8_kind(layer.kind)) kinds.push_back(layer.kind);
  }
  return kinds;
}

// Runs the engine on `inputs` (batch from their dim 0) and returns its outputs by name.
Result<TensorMap> run_engine(const engine::Engine& engine, const TensorMap& inputs, int threads) {
  auto context = engine.create_context({.threads = threads});
  std::vector<engine::ConstTensorBinding> in;
  for (const auto& [name, tensor] : inputs) in.push_back({name, tensor.raw_data(), tensor.shape()});
  const int64_t batch = inputs.empty() ? 1 : inputs.begin()->second.dim(0);
  TensorMap outputs;
  for (const auto& info : engine.outputs()) {
    Shape shape = info.shape;
    if (info.batched) shape[0] = batch;
    outputs[info.name] = Tensor(info.dtype, shape);
  }
  std::vector<engine::TensorBinding> out;
  for (auto& [name, tensor] : outputs) out.push_back({name, tensor.raw_data(), tensor.shape()});
  QDQRT_RETURN_IF_ERROR(context->run(in, out));
  return outputs;
}

bool all_inputs_batched(const Graph& graph) {
  for (const std::string& name : graph.inputs) {
    auto shape = graph.find_value(name)->static_shape();
    if (!shape || shape->empty() || (*shape)[0] != kMaxBatch) return false;
  }
  return true;
}

void expect_within(const Mismatch& m, double int8_tolerance, const std::string& where) {
  const std::string detail = fmt::format("{}: {} of {} int8 elements differ (max {}) in{}", where, m.int_mismatches,
                                         m.int_elements, m.max_int_diff, m.outputs);
  if (int8_tolerance == 0.0) {
    EXPECT_EQ(m.int_mismatches, 0) << detail;
  } else {
    EXPECT_LE(m.max_int_diff, 1) << detail;
    EXPECT_LE(static_cast<double>(m.int_mismatches), int8_tolerance * static_cast<double>(m.int_elements)) << detail;
  }
  EXPECT_LE(m.max_float_rel, 1e-5) << where;
}

// The same comparison through the real engine (Engine::build, TBB runtime, memory plan), plus an
// engine-file round trip: the loaded engine's layers view the mapped weights and give identical bytes.
void expect_engine_matches_reference(const Graph& graph, const std::vector<std::string>& kinds, uint32_t seed,
                                     double int8_tolerance) {
  auto built = engine::Engine::build(graph, {});
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  const engine::Engine& engine = **built;
  EXPECT_EQ(engine_int8_kinds(engine), kinds);
  for (const engine::PlanLayer& layer : engine.plan().layers) {
    if (is_int8_kind(layer.kind)) {
      EXPECT_FALSE(layer.kernel.empty()) << layer.name;
    }
  }
  // One file per test and process: ctest runs these cases side by side.
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test_name = fmt::format("{}.{}", test->test_suite_name(), test->name());
  for (char& c : test_name) {
    if (c == '/') c = '_';
  }
  const std::string path = fmt::format("{}/int8_layers_test_{}_{}.qdqrt", ::testing::TempDir(), test_name, ::getpid());
  Status saved = engine.save(path);
  ASSERT_TRUE(saved.is_ok() || saved.code() == StatusCode::kUnsupported) << saved.to_string();
  std::shared_ptr<const engine::Engine> loaded;
  if (saved.is_ok()) {
    auto reloaded = engine::Engine::load(path);
    ASSERT_TRUE(reloaded.ok()) << reloaded.status().to_string();
    loaded = *reloaded;
  }
  std::mt19937 rng(seed);
  TensorMap full = random_graph_inputs(graph, rng);
  for (int64_t batch : {kMaxBatch, int64_t{1}}) {
    TensorMap inputs;
    for (const auto& [name, tensor] : full) inputs[name] = first_images(tensor, batch);
    auto expected = run_reference(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (int threads : {1, 2}) {
      const std::string where = fmt::format("engine batch {} threads {}", batch, threads);
      auto actual = run_engine(engine, inputs, threads);
      ASSERT_TRUE(actual.ok()) << where << ": " << actual.status().to_string();
      expect_within(compare(*expected, *actual, where), int8_tolerance, where);
      if (!loaded) continue;
      auto reloaded = run_engine(*loaded, inputs, threads);
      ASSERT_TRUE(reloaded.ok()) << where << ": " << reloaded.status().to_string();
      for (const auto& [name, tensor] : *actual) {
        const Tensor& other = reloaded->at(name);
        EXPECT_EQ(std::memcmp(tensor.raw_data(), other.raw_data(), tensor.nbytes()), 0) << where << " " << name;
      }
    }
  }
  std::remove(path.c_str());
}

// What expect_matches_reference checks beyond the kinds, when a test needs more than the defaults.
struct ReferenceCheck {
  uint32_t seed = 1;
  double int8_tolerance = 0.0;
  // The kinds the real engine shows when they differ from the harness plan's (it counts int8 kinds only).
  std::optional<std::vector<std::string>> engine_kinds;
  // Extra checks of the lowered plan (the kernel a layer chose, its work split).
  std::function<void(const HarnessPlan&)> check_plan;
};

// Runs `graph` through the harness (and the engine) and the reference at batch max and 1, threads 1 and 2;
// int8 outputs bit-exact (or, with `int8_tolerance`, at most that fraction of elements 1 LSB
// off), fp32 outputs within 1e-5 of the output's range.
void expect_matches_reference(const Graph& graph, const std::vector<std::string>& kinds, const ReferenceCheck& check) {
  auto plan = harness_lower(graph, kMaxBatch, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(native_kinds(*plan), kinds);
  if (check.check_plan) check.check_plan(*plan);
  auto layers = harness_bind(*plan);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  std::mt19937 rng(check.seed);
  TensorMap full = random_graph_inputs(graph, rng);
  for (int64_t batch : {kMaxBatch, int64_t{1}}) {
    TensorMap inputs;
    for (const auto& [name, tensor] : full) inputs[name] = first_images(tensor, batch);
    auto expected = run_reference(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    for (int threads : {1, 2}) {
      const std::string where = fmt::format("batch {} threads {}", batch, threads);
      auto actual = harness_run(*plan, *layers, inputs, threads);
      ASSERT_TRUE(actual.ok()) << where << ": " << actual.status().to_string();
      expect_within(compare(*expected, *actual, where), check.int8_tolerance, where);
    }
  }
  // Graphs whose inputs all carry the batch also go through the real engine.
  if (all_inputs_batched(graph))
    expect_engine_matches_reference(graph, check.engine_kinds.value_or(kinds), check.seed, check.int8_tolerance);
}

void expect_matches_reference(const Graph& graph, const std::vector<std::string>& kinds, uint32_t seed = 1,
                              double int8_tolerance = 0.0) {
  ReferenceCheck check;
  check.seed = seed;
  check.int8_tolerance = int8_tolerance;
  expect_matches_reference(graph, kinds, check);
}

// The work shape layer `layer` of a lowered plan reports at batch 1.
// The index of the plan's first layer of `kind`; layers.size() when there is none.
size_t first_layer_of_kind(const HarnessPlan& plan, const std::string& kind) {
  size_t index = 0;
  while (index < plan.plan.layers.size() && plan.plan.layers[index].kind != kind) ++index;
  return index;
}

engine::WorkShape work_at_batch_one(const HarnessPlan& plan, const std::vector<std::unique_ptr<engine::Layer>>& layers,
                                    size_t layer, int threads = 1) {
  std::vector<void*> data(plan.plan.tensors.size(), nullptr);
  engine::RunState state{&plan.plan, 1, &data};
  state.threads = threads;
  return layers[layer]->work(state);
}

std::string model(const std::string& inputs, const std::string& outputs, const std::vector<std::string>& init,
                  const std::string& body) {
  std::string init_text;
  for (size_t i = 0; i < init.size(); ++i) init_text += (i ? ", " : "") + init[i];
  return fmt::format("<ir_version: 8, opset_import: [\"\" : 17, \"qdqrt\" : 1]>\ng ({}) => ({})\n<{}>\n{{\n{}}}\n",
                     inputs, outputs, init_text, body);
}

// ---------------------------------------------------------------------------------------------
// QConv

struct ConvCase {
  std::string name;
  bool x_signed = true;
  int x_zero_point = 0;
  int channels = 5, out_channels = 24, size = 7, kernel = 3, stride = 1, pad = 1, group = 1, dilation = 1;
  bool per_channel = true, bias = true;
  std::string output = "int8";  // int8, uint8, float
  std::string residual;         // "", int8, uint8
  std::string activation = "Relu";
  bool uint8_weights = false;
};

std::string conv_graph(const ConvCase& c, std::mt19937& rng) {
  const std::string x_type = c.x_signed ? "int8" : "uint8";
  const int out_size = (c.size + 2 * c.pad - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
  std::vector<std::string> init = {
      fmt::format("float xs = {{0.05}}"),
      fmt::format("{} xz = {{{}}}", x_type, c.x_zero_point),
      int_initializer(c.uint8_weights ? "uint8" : "int8", "w",
                      {c.out_channels, c.channels / c.group, c.kernel, c.kernel}, c.uint8_weights ? 0 : -127,
                      c.uint8_weights ? 255 : 127, rng),
      float_initializer("ws", c.per_channel ? std::vector<int64_t>{c.out_channels} : std::vector<int64_t>{1}, 0.002f,
                        0.01f, rng),
      int_initializer(c.uint8_weights ? "uint8" : "int8", "wz",
                      c.per_channel ? std::vector<int64_t>{c.out_channels} : std::vector<int64_t>{1},
                      c.uint8_weights ? 120 : 0, c.uint8_weights ? 120 : 0, rng),
  };
  if (c.bias) init.push_back(float_initializer("b", {c.out_channels}, -0.5f, 0.5f, rng));
  std::string args = "x, xs, xz, w, ws, wz, " + std::string(c.bias ? "b" : "");
  if (c.output != "float") {
    init.push_back("float ys = {0.04}");
    init.push_back(fmt::format("{} yz = {{{}}}", c.output, c.output == "uint8" ? 110 : -3));
    args += ", ys, yz";
  } else if (!c.residual.empty()) {
    args += ", , ";
  }
  std::string inputs = fmt::format("{}[{},{},{},{}] x", x_type, kMaxBatch, c.channels, c.size, c.size);
  if (!c.residual.empty()) {
    inputs += fmt::format(", {}[{},{},{},{}] r", c.residual, kMaxBatch, c.out_channels, out_size, out_size);
    init.push_back("float rs = {0.03}");
    init.push_back(fmt::format("{} rz = {{{}}}", c.residual, c.residual == "uint8" ? 128 : 2));
    args += ", r, rs, rz";
  }
  std::string attributes = fmt::format("pads = [{0}, {0}, {0}, {0}], strides = [{1}, {1}], group = {2}", c.pad,
                                       c.stride, c.group);
  if (c.dilation != 1) attributes += fmt::format(", dilations = [{0}, {0}]", c.dilation);
  if (!c.activation.empty()) attributes += fmt::format(", activation = \"{}\"", c.activation);
  if (c.activation == "Clip") attributes += ", activation_min = -0.3, activation_max = 1.5";
  if (c.activation == "LeakyRelu") attributes += ", activation_alpha = 0.1";
  attributes += ", fused_nodes = [\"conv\", \"act\"]";
  const std::string out_type = c.output == "float" ? "float" : c.output;
  return model(inputs, fmt::format("{}[{},{},{},{}] y", out_type, kMaxBatch, c.out_channels, out_size, out_size),
               init, fmt::format("y = qdqrt.QConv <{}> ({})\n", attributes, args));
}

void PrintTo(const ConvCase& c, std::ostream* out) { *out << c.name; }

class QConvCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(QConvCases, MatchesReference) {
  std::mt19937 rng(11);
  Graph graph = load_text(conv_graph(GetParam(), rng));
  expect_matches_reference(graph, {"qconv"});
}

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cases;
  ConvCase c;
  c.name = "s8_3x3_pad1_relu";
  cases.push_back(c);
  c = {};
  c.name = "u8_asymmetric_1x1_pointwise_u8out";
  c.x_signed = false;
  c.x_zero_point = 131;
  c.kernel = 1;
  c.pad = 0;
  c.channels = 40;
  c.out_channels = 70;
  c.output = "uint8";
  c.activation = "";
  cases.push_back(c);
  c = {};
  c.name = "s8_3x3_deep_540";  // depth 3 * 3 * 60 = 540: the AMX tiles and their k tail on AMX-INT8 machines
  c.channels = 60;
  c.out_channels = 40;
  c.size = 9;
  cases.push_back(c);
  c = {};
  c.name = "u8_1x1_depth_64_residual";  // depth 64, a whole AMX tile row
  c.x_signed = false;
  c.x_zero_point = 7;
  c.kernel = 1;
  c.pad = 0;
  c.channels = 64;
  c.out_channels = 33;
  c.residual = "int8";
  cases.push_back(c);
  c = {};
  c.name = "grouped_stride2";
  c.channels = 8;
  c.out_channels = 12;
  c.group = 4;
  c.stride = 2;
  c.size = 9;
  cases.push_back(c);
  c = {};
  c.name = "depthwise_3x3";
  c.channels = 20;
  c.out_channels = 20;
  c.group = 20;
  c.size = 10;
  c.activation = "Clip";
  cases.push_back(c);
  c = {};
  c.name = "depthwise_5x5_stride2_u8";
  c.x_signed = false;
  c.x_zero_point = 100;
  c.channels = 33;
  c.out_channels = 33;
  c.group = 33;
  c.kernel = 5;
  c.pad = 2;
  c.stride = 2;
  c.size = 11;
  c.output = "uint8";
  cases.push_back(c);
  c = {};
  c.name = "float_output_residual_leakyrelu";
  c.output = "float";
  c.residual = "int8";
  c.activation = "LeakyRelu";
  cases.push_back(c);
  c = {};
  c.name = "s8_output_u8_residual_relu";
  c.residual = "uint8";
  cases.push_back(c);
  c = {};
  c.name = "per_tensor_no_bias_dilation2_uint8_weights";
  c.per_channel = false;
  c.bias = false;
  c.dilation = 2;
  c.pad = 2;
  c.uint8_weights = true;
  c.activation = "";
  cases.push_back(c);
  c = {};
  c.name = "1x1_stride2";
  c.kernel = 1;
  c.pad = 0;
  c.stride = 2;
  c.size = 8;
  cases.push_back(c);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Int8Layers, QConvCases, ::testing::ValuesIn(conv_cases()),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// QMatMul

TEST(Int8Layers, QMatMulConstantWeightsPerColumnBiasRelu) {
  std::mt19937 rng(3);
  for (int64_t n : {10, 70, 200}) {
    std::vector<std::string> init = {
        "float as = {0.03}", "int8 az = {-4}",
        int_initializer("int8", "w", {40, n}, -127, 127, rng),
        float_initializer("ws", {n}, 0.002f, 0.01f, rng), int_initializer("int8", "wz", {n}, 0, 0, rng),
        float_initializer("b", {n}, -0.5f, 0.5f, rng), "float ys = {0.05}", "int8 yz = {1}"};
    Graph graph = load_text(model(fmt::format("int8[{},40] a", kMaxBatch), fmt::format("int8[{},{}] y", kMaxBatch, n),
                                  init,
                                  "y = qdqrt.QMatMul <activation = \"Relu\", fused_nodes = [\"fc\"]> "
                                  "(a, as, az, w, ws, wz, b, ys, yz)\n"));
    SCOPED_TRACE(fmt::format("n = {}", n));
    expect_matches_reference(graph, {"qmatmul"});
  }
}

TEST(Int8Layers, QMatMulRank3FloatOutputAndResidual) {
  std::mt19937 rng(4);
  std::vector<std::string> init = {
      "float as = {0.03}", "uint8 az = {128}",
      int_initializer("uint8", "w", {24, 33}, 0, 255, rng),
      "float ws = {0.004}", "uint8 wz = {131}",
      "float rs = {0.02}", "int8 rz = {3}"};
  Graph graph = load_text(model(fmt::format("uint8[{},7,24] a, int8[{},7,33] r", kMaxBatch, kMaxBatch),
                                fmt::format("float[{},7,33] y", kMaxBatch), init,
                                "y = qdqrt.QMatMul <fused_nodes = [\"mm\", \"add\"]> "
                                "(a, as, az, w, ws, wz, , , , r, rs, rz)\n"));
  expect_matches_reference(graph, {"qmatmul"});
}

TEST(Int8Layers, QMatMulActivationsOnBothSides) {
  std::vector<std::string> init = {"float as = {0.03}", "uint8 az = {120}", "float bs = {0.02}", "uint8 bz = {133}",
                                   "float ys = {0.5}", "uint8 yz = {128}"};
  Graph graph = load_text(model(fmt::format("uint8[{},2,9,16] a, uint8[{},2,16,12] b", kMaxBatch, kMaxBatch),
                                fmt::format("uint8[{},2,9,12] y", kMaxBatch), init,
                                "y = qdqrt.QMatMul <fused_nodes = [\"qk\"]> (a, as, az, b, bs, bz, , ys, yz)\n"));
  expect_matches_reference(graph, {"qbatched_matmul"});
  // b 2-D: every leading dim of a folds into the rows.
  Graph folded = load_text(model(fmt::format("int8[{},30,16] a, int8[16,12] b", kMaxBatch),
                                 fmt::format("float[{},30,12] y", kMaxBatch),
                                 {"float as = {0.03}", "int8 az = {2}", "float bs = {0.02}", "int8 bz = {0}"},
                                 "y = qdqrt.QMatMul <fused_nodes = [\"mm\"]> (a, as, az, b, bs, bz)\n"));
  expect_matches_reference(folded, {"qbatched_matmul"});
}

// ---------------------------------------------------------------------------------------------
// Elementwise, lookup, pools, concat, data movement

TEST(Int8Layers, QAddAndQMulWithBroadcast) {
  std::vector<std::string> init = {"float as = {0.05}", "int8 az = {3}", "float bs = {0.08}", "int8 bz = {-2}",
                                   "float ys = {0.1}", "int8 yz = {-5}"};
  const std::string inputs = fmt::format("int8[{},6,5,5] a, int8[{},6,5,5] b, int8[{},6,1,1] c, int8[6,1,1] d",
                                         kMaxBatch, kMaxBatch, kMaxBatch);
  Graph graph = load_text(model(inputs,
                                fmt::format("int8[{},6,5,5] s, int8[{},6,5,5] p, int8[{},6,5,5] q", kMaxBatch,
                                            kMaxBatch, kMaxBatch),
                                init,
                                "s = qdqrt.QAdd <activation = \"Relu\", fused_nodes = [\"add\"]> "
                                "(a, as, az, b, bs, bz, ys, yz)\n"
                                "p = qdqrt.QMul <fused_nodes = [\"mul\"]> (a, as, az, c, bs, bz, ys, yz)\n"
                                "q = qdqrt.QAdd <fused_nodes = [\"add2\"]> (d, bs, bz, a, as, az, ys, yz)\n"));
  // The QAdd/QMul kernels use ONNX Runtime's scale-ratio form (docs/kernels_support.md), not
  // DQ -> op -> Q literally: within 1 LSB, on a few percent of elements at most.
  expect_matches_reference(graph, {"qbinary", "qbinary", "qbinary"}, 1, kRequantizeTolerance);
}

// Rows longer than one item (16 Ki elements) are cut into blocks: same-shape, vector-scalar and
// scalar-vector broadcasts with threads splitting inside a row.
TEST(Int8Layers, QAddAndQMulLongRows) {
  Graph graph = load_text(model(
      fmt::format("int8[{},8,48,48] a, int8[{},8,48,48] b, int8[{},3,1,1] c, int8[{},3,130,130] d", kMaxBatch,
                  kMaxBatch, kMaxBatch, kMaxBatch),
      fmt::format("int8[{},8,48,48] s, int8[{},3,130,130] p, int8[{},3,130,130] q", kMaxBatch, kMaxBatch, kMaxBatch),
      {"float as = {0.05}", "int8 az = {3}", "float bs = {0.08}", "int8 bz = {-2}", "float ys = {0.1}",
       "int8 yz = {-5}"},
      "s = qdqrt.QAdd <fused_nodes = [\"add\"]> (a, as, az, b, bs, bz, ys, yz)\n"
      "p = qdqrt.QMul <fused_nodes = [\"mul\"]> (d, as, az, c, bs, bz, ys, yz)\n"
      "q = qdqrt.QAdd <activation = \"Relu\", fused_nodes = [\"add2\"]> (c, bs, bz, d, as, az, ys, yz)\n"));
  expect_matches_reference(graph, {"qbinary", "qbinary", "qbinary"}, 1, kRequantizeTolerance);
}

TEST(Int8Layers, QAddUint8Rank2) {
  Graph graph = load_text(model(fmt::format("uint8[{},37] a, uint8[37] b", kMaxBatch),
                                fmt::format("uint8[{},37] y", kMaxBatch),
                                {"float as = {0.05}", "uint8 az = {100}", "float bs = {0.08}", "uint8 bz = {140}",
                                 "float ys = {0.1}", "uint8 yz = {120}"},
                                "y = qdqrt.QAdd <fused_nodes = [\"add\"]> (a, as, az, b, bs, bz, ys, yz)\n"));
  expect_matches_reference(graph, {"qbinary"}, 1, kRequantizeTolerance);
}

// A constant operand (ONNX Runtime's quantize_static writes the bias of an Add after a MatMul, and a
// Mul's constant factor, as a u8 initializer with its DequantizeLinear): the builder materializes it
// and the layer stays a qbinary, per-row and scalar alike, in either operand slot. (A scalar one
// without an activation becomes a table, fuse_constant_operand_lookup: the Relu keeps this one.)
TEST(Int8Layers, QAddAndQMulWithAConstantOperand) {
  Graph graph = load_text(model(fmt::format("uint8[{},5,37] a", kMaxBatch),
                                fmt::format("uint8[{},5,37] y, uint8[{},5,37] z", kMaxBatch, kMaxBatch),
                                {"float as = {0.05}", "uint8 az = {100}", "float bs = {0.08}", "uint8 bz = {128}",
                                 "float ys = {0.1}", "uint8 yz = {120}",
                                 "uint8[37] b = {" + [] {
                                   std::string values;
                                   for (int i = 0; i < 37; ++i) values += fmt::format("{}{}", i ? ", " : "", 40 + 5 * i);
                                   return values;
                                 }() + "}",
                                 "uint8 h = {191}"},
                                "y = qdqrt.QAdd <fused_nodes = [\"add\"]> (a, as, az, b, bs, bz, ys, yz)\n"
                                "z = qdqrt.QMul <fused_nodes = [\"mul\"], activation = \"Relu\"> (h, bs, bz, a, as, az, ys, yz)\n"));
  // Through the engine's builder, which materializes the constants (the harness has no constant tensors).
  expect_engine_matches_reference(graph, {"qbinary", "qbinary"}, 1, kRequantizeTolerance);
}

// Swin-T's GELU on ONNX Runtime's scales: erf in [-1, 1] (2/255, zero point 128) plus the constant 1
// (code 255 of 1/255), the sum in [0, 2] (2/255): every sum lands within ulps of a .5, where the
// QAdd's folded multiplier rounds its own way. As a ConstantAdd table (the float Add on each code)
// the engine gives the source graph's codes exactly.
TEST(Int8Layers, ConstantAddOnTiesGivesTheSourceGraphsCodes) {
  Graph graph = load_text(model(fmt::format("uint8[{},6,7] x", kMaxBatch), fmt::format("uint8[{},6,7] y", kMaxBatch),
                                {"float xs = {0.007843138}", "uint8 xz = {128}", "uint8 c = {255}",
                                 "float cs = {0.003921569}", "uint8 cz = {0}", "float ys = {0.007843138}",
                                 "uint8 yz = {0}"},
                                "xd = DequantizeLinear(x, xs, xz)\ncd = DequantizeLinear(c, cs, cz)\n"
                                "v = Add(xd, cd)\ny = QuantizeLinear(v, ys, yz)\n"));
  expect_engine_matches_reference(graph, {"qlut"}, 3, 0.0);
}

TEST(Int8Layers, QLookupFunctionsAndInt8Relu) {
  // The last: Erf(x / sqrt 2), ONNX Runtime's QDQ GELU with the Erf output quantized.
  for (const std::string attributes :
       {"function = \"Sigmoid\"", "function = \"SiLU\"", "function = \"HardSwish\"", "function = \"Tanh\"",
        "function = \"Gelu\"", "function = \"Erf\", operand_op = \"Div\", operand = 1.4142135"}) {
    Graph graph = load_text(model(fmt::format("int8[{},4,5,6] x", kMaxBatch),
                                  fmt::format("uint8[{},4,5,6] y, int8[{},4,5,6] z", kMaxBatch, kMaxBatch),
                                  {"float xs = {0.05}", "int8 xz = {-7}", "float ys = {0.004}", "uint8 yz = {3}"},
                                  fmt::format("y = qdqrt.QLookup <{}, fused_nodes = [\"f\"]> "
                                              "(x, xs, xz, ys, yz)\nz = Relu(x)\n",
                                              attributes)));
    SCOPED_TRACE(attributes);
    expect_matches_reference(graph, {"qlut", "qlut"});
  }
}

// The fused Softmax + Q (attention probabilities): rows of 17 (a vector and a tail on every ISA)
// and of 40, int8 and uint8 outputs; the reference softmax is in double, the kernel's in float with
// a polynomial exp: a few codes 1 off.
Graph softmax_graph() {
  return load_text(model(fmt::format("float[{},2,5,17] x, float[{},3,40] u", kMaxBatch, kMaxBatch),
                         fmt::format("int8[{},2,5,17] y, uint8[{},3,40] z", kMaxBatch, kMaxBatch),
                         {"float ys = {0.007874}", "int8 yz = {0}", "float zs = {0.0039215}", "uint8 zz = {5}"},
                         "y = qdqrt.Softmax <fused_nodes = [\"softmax\", \"q\"]> (x, ys, yz)\n"
                         "z = qdqrt.Softmax <fused_nodes = [\"softmax2\", \"q2\"]> (u, zs, zz)\n"));
}

// A residual block's end: uint8 codes and the float sum of a Relu'd Add (a few items of 4096
// elements, a partial vector), and an int8 one without Relu or sum.
Graph add_quantize_graph() {
  return load_text(model(
      fmt::format("float[{},16,20,21] a, float[{},16,20,21] b, float[{},3,40] c, float[{},3,40] d", kMaxBatch,
                  kMaxBatch, kMaxBatch, kMaxBatch),
      fmt::format("uint8[{},16,20,21] y, float[{},16,20,21] s, int8[{},3,40] z", kMaxBatch, kMaxBatch, kMaxBatch),
      {"float ys = {0.02}", "uint8 yz = {7}", "float zs = {0.015}", "int8 zz = {-3}"},
      "y, s = qdqrt.AddQuantize <fused_nodes = [\"add\", \"relu\", \"q\"], activation = \"Relu\"> (a, b, ys, yz)\n"
      "z = qdqrt.AddQuantize <fused_nodes = [\"add2\", \"q2\"]> (c, d, zs, zz)\n"));
}

TEST(Int8Layers, AddQuantizeWritesCodesAndSum) {
  expect_matches_reference(add_quantize_graph(), {"add_quantize", "add_quantize"});
}

TEST(Int8Layers, SoftmaxQuantizeRowsOfEveryLength) {
  expect_matches_reference(softmax_graph(), {"softmax_quantize", "softmax_quantize"}, 1, kRequantizeTolerance);
}

TEST(Int8Layers, MaxPool) {
  for (bool ceil_mode : {false, true}) {
    const int size = ceil_mode ? 5 : 4;
    Graph graph = load_text(model(
        fmt::format("int8[{},10,9,9] x, uint8[{},70,6,5] u", kMaxBatch, kMaxBatch),
        fmt::format("int8[{},10,{},{}] m, uint8[{},70,3,3] n", kMaxBatch, size, size, kMaxBatch), {},
        fmt::format("m = MaxPool <kernel_shape = [2, 2], strides = [2, 2], ceil_mode = {}> (x)\n"
                    "n = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (u)\n",
                    ceil_mode ? 1 : 0)));
    SCOPED_TRACE(ceil_mode);
    expect_matches_reference(graph, {"qmaxpool", "qmaxpool"});
  }
}

TEST(Int8Layers, QGlobalAveragePool) {
  Graph graph = load_text(model(
      fmt::format("int8[{},10,9,9] x, uint8[{},70,6,5] u", kMaxBatch, kMaxBatch),
      fmt::format("int8[{},10,1,1] g, uint8[{},70,1,1] h", kMaxBatch, kMaxBatch),
      {"float xs = {0.05}", "int8 xz = {-7}", "float ys = {0.03}", "int8 yz = {4}", "uint8 uz = {131}",
       "uint8 vz = {90}"},
      "g = qdqrt.QGlobalAveragePool <activation = \"Relu\", fused_nodes = [\"gap\"]> (x, xs, xz, ys, yz)\n"
      "h = qdqrt.QGlobalAveragePool <fused_nodes = [\"gap2\"]> (u, xs, uz, ys, vz)\n"));
  // Requantized int32 sums vs averaged dequantized floats: see QAveragePool.
  expect_matches_reference(graph, {"qgavgpool", "qgavgpool"}, 1, kRequantizeTolerance);
}

TEST(Int8Layers, QAveragePool) {
  for (const char* extra : {"", ", count_include_pad = 1", ", ceil_mode = 1", ", activation = \"Relu\""}) {
    Graph graph = load_text(model(
        fmt::format("int8[{},10,9,9] x", kMaxBatch), fmt::format("int8[{},10,5,5] a", kMaxBatch),
        {"float xs = {0.05}", "int8 xz = {-7}", "float ys = {0.03}", "int8 yz = {4}"},
        fmt::format("a = qdqrt.QAveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]{}, "
                    "fused_nodes = [\"avg\"]> (x, xs, xz, ys, yz)\n",
                    extra)));
    SCOPED_TRACE(extra);
    // The pool kernel requantizes int32 sums with multiplier / divisor (docs/kernels_support.md);
    // the reference averages dequantized floats: within 1 LSB on a few elements.
    expect_matches_reference(graph, {"qavgpool"}, 1, kRequantizeTolerance);
  }
}

// QAveragePool of a float input (the fused AveragePool -> QuantizeLinear): the layer averages in
// double as the reference does and quantizes as QuantizeLinear, so the codes are equal. Random
// windows (kernels 1-5, strides, dilations, uneven pads, ceil_mode, count_include_pad), channel
// counts around the vector widths, int8 and uint8 outputs with zero-points at both ends and zero.
Graph float_average_pool_graph(std::mt19937& rng, std::string& description) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int channels_choices[] = {1, 3, 8, 16, 19, 33, 70};
  const int channels = channels_choices[pick(0, 6)];
  const int kernel_h = pick(1, 4), kernel_w = pick(1, 5), stride_h = pick(1, 2), stride_w = pick(1, 3);
  const int dilation_h = pick(1, 2), dilation_w = pick(1, 2);
  const int pad_top = pick(0, kernel_h - 1), pad_left = pick(0, kernel_w - 1);
  const int pad_bottom = pick(0, kernel_h - 1), pad_right = pick(0, kernel_w - 1);
  const int height = pick(dilation_h * (kernel_h - 1) + 1, 11), width = pick(dilation_w * (kernel_w - 1) + 1, 12);
  const bool ceil_mode = pick(0, 1) == 1, count_include_pad = pick(0, 1) == 1, is_signed = pick(0, 1) == 1;
  const int zero_point_choices[] = {0, is_signed ? -128 : 255, is_signed ? 127 : 128, is_signed ? -5 : 3};
  const int zero_point = zero_point_choices[pick(0, 3)];
  const float scale = pick(0, 1) ? 0.01f : 0.0033f;
  const auto out = [&](int size, int kernel, int stride, int dilation, int begin, int end) {
    return kernels::pool_output_size(size, kernel, stride, dilation, begin, end, ceil_mode);
  };
  const size_t out_h = out(height, kernel_h, stride_h, dilation_h, pad_top, pad_bottom);
  const size_t out_w = out(width, kernel_w, stride_w, dilation_w, pad_left, pad_right);
  const std::string type = is_signed ? "int8" : "uint8";
  description = fmt::format("{} channels, {}x{} input, kernel {}x{}, strides {}x{}, dilations {}x{}, pads [{} {} {} {}], "
                            "ceil_mode {}, count_include_pad {}, {} zero-point {}, scale {}",
                            channels, height, width, kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w,
                            pad_top, pad_left, pad_bottom, pad_right, ceil_mode, count_include_pad, type, zero_point,
                            scale);
  return load_text(model(
      fmt::format("float[{},{},{},{}] x", kMaxBatch, channels, height, width),
      fmt::format("{}[{},{},{},{}] y", type, kMaxBatch, channels, out_h, out_w),
      {fmt::format("float ys = {{{}}}", scale), fmt::format("{} yz = {{{}}}", type, zero_point)},
      fmt::format("y = qdqrt.QAveragePool <kernel_shape = [{}, {}], strides = [{}, {}], dilations = [{}, {}], "
                  "pads = [{}, {}, {}, {}], ceil_mode = {}, count_include_pad = {}, fused_nodes = [\"avg\", \"q\"]> "
                  "(x, , , ys, yz)\n",
                  kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, pad_bottom,
                  pad_right, ceil_mode ? 1 : 0, count_include_pad ? 1 : 0)));
}

TEST(Int8Layers, QAveragePoolOfFloatInputIsExact) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 40; ++trial) {
    std::string description;
    Graph graph = float_average_pool_graph(rng, description);
    SCOPED_TRACE(description);
    expect_matches_reference(graph, {"qavgpool"}, static_cast<uint32_t>(trial), 0.0);
  }
}

TEST(Int8Layers, QConcatChannelsAndLastAxis) {
  Graph graph = load_text(model(
      fmt::format("int8[{},3,4,5] a, int8[{},6,4,5] b, int8[{},5,7] c, int8[{},5,2] d", kMaxBatch, kMaxBatch,
                  kMaxBatch, kMaxBatch),
      fmt::format("int8[{},9,4,5] y, int8[{},5,9] z", kMaxBatch, kMaxBatch),
      {"float as = {0.05}", "int8 az = {-7}", "float bs = {0.03}", "int8 bz = {4}"},
      "y = qdqrt.QConcat <axis = 1, fused_nodes = [\"cat\"]> (as, az, a, as, az, b, bs, bz)\n"
      "z = qdqrt.QConcat <axis = -1, fused_nodes = [\"cat2\"]> (bs, bz, c, as, az, d, bs, bz)\n"));
  expect_matches_reference(graph, {"qconcat", "qconcat"});
}

// An INT8 Concat of rank-4 tensors stored plain and read by a QMatMul (the Slice + Concat of
// Swin's shifted-window roll in ONNX Runtime's quantized layout) stays plain: no reorder of its
// inputs to channels-last and of its output back. Read by a 1x1 QConv it writes channels-last.
TEST(Int8Layers, QConcatKeepsPlainInputsPlain) {
  for (const bool conv : {false, true}) {
    SCOPED_TRACE(conv ? "read by a QConv" : "read by a QMatMul");
    std::mt19937 rng(8);
    std::vector<std::string> init = {
        "float as = {0.05}", "int8 az = {-7}", "float bs = {0.03}", "int8 bz = {4}", "float ws = {0.004}",
        "int8 wz = {0}", "float ys = {0.02}", "int8 yz = {1}",
        conv ? int_initializer("int8", "w", {4, 5, 1, 1}, -127, 127, rng)
             : int_initializer("int8", "w", {8, 4}, -127, 127, rng),
        fmt::format("int8[{},5,7,8] c", kMaxBatch)};
    const std::string reader = conv ? "y = qdqrt.QConv <fused_nodes = [\"conv\"]> (c, as, az, w, ws, wz, , ys, yz)\n"
                                    : "y = qdqrt.QMatMul <fused_nodes = [\"fc\"]> (c, as, az, w, ws, wz, , ys, yz)\n";
    const std::string out = conv ? fmt::format("int8[{},4,7,8] y", kMaxBatch) : fmt::format("int8[{},5,7,4] y", kMaxBatch);
    Graph graph = load_text(model(fmt::format("int8[{},5,3,8] a, int8[{},5,4,8] b", kMaxBatch, kMaxBatch), out, init,
                                  "c = qdqrt.QConcat <axis = 2, fused_nodes = [\"cat\"]> (as, az, a, as, az, b, bs, bz)\n" +
                                      reader));
    auto built = engine::Engine::build(graph, {});
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    const engine::EnginePlan& plan = (*built)->plan();
    const engine::PlanTensor& c = plan.tensors[static_cast<size_t>(plan.find_tensor("c"))];
    EXPECT_EQ(c.layout, conv ? engine::Layout::kNhwc : engine::Layout::kPlain);
    int reorders = 0;
    for (const engine::PlanLayer& layer : plan.layers) reorders += layer.kind == "reorder";
    EXPECT_EQ(reorders, conv ? 3 : 0);  // with the QConv: a and b in, y out
    expect_engine_matches_reference(graph, {"qconcat", conv ? "qconv" : "qmatmul"}, 1, kRequantizeTolerance);
  }
}

TEST(Int8Layers, ReshapeFlattenTransposeOnInt8) {
  Graph graph = load_text(model(fmt::format("int8[{},6,4,5] x", kMaxBatch),
                                fmt::format("int8[{},120] f, int8[{},20,6] t", kMaxBatch, kMaxBatch),
                                {"int64[3] shape = {0, 6, 20}"},
                                "f = Flatten <axis = 1> (x)\n"
                                "r = Reshape(x, shape)\n"
                                "t = Transpose <perm = [0, 2, 1]> (r)\n"));
  expect_matches_reference(graph, {"int8_reshape", "int8_reshape", "int8_transpose"});
}

// Transposes whose output dims are partly consecutive in the input (copied as merged rows), with
// dims of 1, and one whose innermost output dim is strided in the input (gathered byte by byte).
TEST(Int8Layers, TransposeMergesConsecutiveDims) {
  Graph graph = load_text(model(
      fmt::format("int8[{},2,3,4,5] x, int8[{},1,6,1,7] u", kMaxBatch, kMaxBatch),
      fmt::format("int8[{},3,2,4,5] s, int8[{},7,1,6,1] v, int8[{},5,4,3,2] g", kMaxBatch, kMaxBatch, kMaxBatch),
      {}, "s = Transpose <perm = [0, 2, 1, 3, 4]> (x)\n"
          "v = Transpose <perm = [0, 4, 3, 2, 1]> (u)\n"
          "g = Transpose <perm = [0, 4, 3, 2, 1]> (x)\n"));
  expect_matches_reference(graph, {"int8_transpose", "int8_transpose", "int8_transpose"});
}

// A chain inside one INT8 region: NHWC all the way (no reorders between the layers).
TEST(Int8Layers, RegionStaysNhwc) {
  std::mt19937 rng(5);
  std::vector<std::string> init = {
      "float xs = {0.05}", "int8 xz = {0}", int_initializer("int8", "w", {8, 4, 3, 3}, -127, 127, rng),
      float_initializer("ws", {8}, 0.002f, 0.01f, rng), "int8[8] wz = {0, 0, 0, 0, 0, 0, 0, 0}",
      "float ys = {0.04}", "int8 yz = {0}",
      // Value infos: the loader's ONNX shape inference does not know the qdqrt domain.
      fmt::format("int8[{},8,8,8] c", kMaxBatch), fmt::format("int8[{},8,8,8] l", kMaxBatch),
      fmt::format("int8[{},8,8,8] m", kMaxBatch)};
  Graph graph = load_text(model(
      fmt::format("int8[{},4,8,8] x", kMaxBatch), fmt::format("int8[{},8,4,4] p", kMaxBatch), init,
      "c = qdqrt.QConv <pads = [1, 1, 1, 1], activation = \"Relu\", fused_nodes = [\"conv\"]> "
      "(x, xs, xz, w, ws, wz, , ys, yz)\n"
      "l = qdqrt.QLookup <function = \"Sigmoid\", fused_nodes = [\"sig\"]> (c, ys, yz, ys, yz)\n"
      // l read with another scale than it was written with: stays a QMul (no QuantizedSiLU table).
      "m = qdqrt.QMul <fused_nodes = [\"mul\"]> (c, ys, yz, l, xs, yz, ys, yz)\n"
      "p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (m)\n"));
  auto plan = harness_lower(graph, kMaxBatch, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  // One reorder into the region (x) and one out of it (p).
  int reorders = 0;
  for (int origin : plan->harness_node) reorders += origin == -2;
  EXPECT_EQ(reorders, 2);
  expect_matches_reference(graph, {"qconv", "qlut", "qbinary", "qmaxpool"}, 1, kRequantizeTolerance);
}

// A rank-4 [B, H, W, C] tensor a QMatMul writes plain (Swin's MLP in ONNX Runtime's layout:
// QMatMul -> bias QAdd -> GELU table -> QMatMul) stays plain through the elementwise layers: no
// reorder to channels-last and back because their readers could take either.
TEST(Int8Layers, PlainRowsStayPlainThroughElementwise) {
  std::mt19937 rng(6);
  std::vector<std::string> init = {
      "float as = {0.03}", "uint8 az = {128}", int_initializer("int8", "w", {16, 24}, -127, 127, rng),
      "float ws = {0.004}", "int8 wz = {0}", "float ys = {0.05}", "uint8 yz = {120}",
      "float bs = {0.02}", "uint8 bz = {128}",
      int_initializer("int8", "w2", {24, 8}, -127, 127, rng),
      fmt::format("uint8[{},5,5,24] m", kMaxBatch), fmt::format("uint8[{},5,5,24] s", kMaxBatch),
      fmt::format("uint8[{},5,5,24] g", kMaxBatch)};
  Graph graph = load_text(model(
      fmt::format("uint8[{},5,5,16] a, uint8[24] b", kMaxBatch), fmt::format("float[{},5,5,8] y", kMaxBatch), init,
      "m = qdqrt.QMatMul <fused_nodes = [\"fc1\"]> (a, as, az, w, ws, wz, , ys, yz)\n"
      "s = qdqrt.QAdd <fused_nodes = [\"bias\"]> (b, bs, bz, m, ys, yz, ys, yz)\n"
      "g = qdqrt.QLookup <function = \"Gelu\", fused_nodes = [\"gelu\"]> (s, ys, yz, ys, yz)\n"
      "y = qdqrt.QMatMul <fused_nodes = [\"fc2\"]> (g, ys, yz, w2, ws, wz)\n"));
  auto plan = harness_lower(graph, kMaxBatch, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  int reorders = 0;
  for (int origin : plan->harness_node) reorders += origin == -2;
  EXPECT_EQ(reorders, 0);
  expect_matches_reference(graph, {"qmatmul", "qbinary", "qlut", "qmatmul"}, 1, kRequantizeTolerance);
}

// The quantizer of a rank-4 float tensor read by an int8 Mul (ONNX Runtime's quantized LayerNorm
// scale in Swin-T: [B, H, W, C] rows read next by a QMatMul) writes it plain: the Mul takes either
// layout, and past it the reader wants plain, so no reorder to channels-last and back. Read next
// by a 1x1 QConv instead, the quantizer writes channels-last (its transposing kernel) and still
// no reorder runs inside the graph.
TEST(Int8Layers, QuantizerLooksPastElementwiseReaders) {
  for (const bool conv : {false, true}) {
    SCOPED_TRACE(conv ? "read by a QConv" : "read by a QMatMul");
    std::mt19937 rng(7);
    const std::string dims = conv ? fmt::format("{},16,5,5", kMaxBatch) : fmt::format("{},5,5,16", kMaxBatch);
    const std::string out_dims = conv ? fmt::format("{},8,5,5", kMaxBatch) : fmt::format("{},5,5,8", kMaxBatch);
    std::vector<std::string> init = {
        "float xs = {0.03}", "uint8 xz = {128}", "float gs = {0.01}", "uint8 gz = {0}", "float ys = {0.05}",
        "uint8 yz = {120}", "float ws = {0.004}", "int8 wz = {0}",
        conv ? int_initializer("int8", "w", {8, 16, 1, 1}, -127, 127, rng)
             : int_initializer("int8", "w", {16, 8}, -127, 127, rng),
        conv ? int_initializer("uint8", "g", {16, 1, 1}, 0, 255, rng) : int_initializer("uint8", "g", {16}, 0, 255, rng),
        fmt::format("uint8[{}] q", dims), fmt::format("uint8[{}] m", dims)};
    const std::string reader = conv ? "y = qdqrt.QConv <fused_nodes = [\"conv\"]> (m, ys, yz, w, ws, wz)\n"
                                    : "y = qdqrt.QMatMul <fused_nodes = [\"fc\"]> (m, ys, yz, w, ws, wz)\n";
    Graph graph = load_text(model(fmt::format("float[{}] x", dims), fmt::format("float[{}] y", out_dims), init,
                                  "q = QuantizeLinear(x, xs, xz)\n"
                                  "m = qdqrt.QMul <fused_nodes = [\"mul\"]> (q, xs, xz, g, gs, gz, ys, yz)\n" +
                                      reader));
    auto built = engine::Engine::build(graph, {});
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    const engine::EnginePlan& plan = (*built)->plan();
    int reorders_inside = 0;
    for (const engine::PlanLayer& layer : plan.layers) {
      EXPECT_NE(layer.kind, "reference") << layer.name;
      if (layer.kind == "reorder") {
        const std::string& input = plan.tensors[static_cast<size_t>(layer.inputs.at(0))].name;
        if (input != "x" && input.rfind("y", 0) != 0) ++reorders_inside;
      }
      if (layer.kind == "quantize") {
        EXPECT_EQ(layer.kernel.find("nchw2nhwc") != std::string::npos, conv) << layer.kernel;
      }
    }
    EXPECT_EQ(reorders_inside, 0);
    expect_engine_matches_reference(graph, {"qbinary", conv ? "qconv" : "qmatmul"}, 1, kRequantizeTolerance);
  }
}

// Resize nearest on int8/uint8 (what fuse_qdq_resize leaves of DQ -> Resize -> Q): a gather,
// bit-identical to the reference; NCHW here (the graph inputs are plain).
TEST(Int8Layers, ResizeNearest) {
  Graph graph =
      load_text(model(fmt::format("int8[{},5,7,9] x, uint8[{},3,4,33] u", kMaxBatch, kMaxBatch),
                      fmt::format("int8[{},5,14,13] r, uint8[{},3,2,66] v", kMaxBatch, kMaxBatch),
                      {"float[4] s = {1.0, 1.0, 2.0, 1.5}", "float[4] t = {1.0, 1.0, 0.5, 2.0}"},
                      "r = Resize <mode = \"nearest\", coordinate_transformation_mode = \"half_pixel\"> (x, , s)\n"
                      "v = Resize <mode = \"nearest\", coordinate_transformation_mode = \"align_corners\", "
                      "nearest_mode = \"ceil\"> (u, , t)\n"));
  expect_matches_reference(graph, {"resize_nearest", "resize_nearest"});
}

// A QDQ model end to end: DQ -> Resize(nearest) -> Q with equal parameters runs as the int8
// gather (fuse_qdq_resize), with other parameters as float Resize between dequantize and
// quantize layers; both bit-identical to the reference executor on the original graph.
TEST(Int8Layers, QdqResizeNearestEndToEnd) {
  for (const char* out_params : {"xs, xz", "ys, xz"}) {
    SCOPED_TRACE(out_params);
    Graph graph = load_text(
        model(fmt::format("float[{},3,5,6] x", kMaxBatch), fmt::format("float[{},3,10,12] y", kMaxBatch),
              {"float xs = {0.02}", "int8 xz = {3}", "float ys = {0.03}", "float[4] s = {1.0, 1.0, 2.0, 2.0}"},
              fmt::format("xq = QuantizeLinear(x, xs, xz)\nxd = DequantizeLinear(xq, xs, xz)\n"
                          "r = Resize <mode = \"nearest\"> (xd, , s)\n"
                          "rq = QuantizeLinear(r, {})\ny = DequantizeLinear(rq, {})\n",
                          out_params, out_params)));
    auto built = engine::Engine::build(graph, {});
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    bool int8_gather = false, float_resize = false;
    for (const engine::PlanLayer& layer : (*built)->plan().layers) {
      EXPECT_NE(layer.kind, "reference") << layer.name;
      if (layer.kind != "resize_nearest") continue;
      const DataType dtype = (*built)->plan().tensors[static_cast<size_t>(layer.inputs[0])].dtype;
      int8_gather = int8_gather || dtype == DataType::kInt8;
      float_resize = float_resize || dtype == DataType::kFloat;
    }
    const bool equal = std::string(out_params) == "xs, xz";
    EXPECT_EQ(int8_gather, equal);
    EXPECT_EQ(float_resize, !equal);
    std::mt19937 rng(3);
    TensorMap inputs = random_graph_inputs(graph, rng);
    auto expected = run_reference(graph, inputs);
    ASSERT_TRUE(expected.ok()) << expected.status().to_string();
    auto actual = run_engine(**built, inputs, 2);
    ASSERT_TRUE(actual.ok()) << actual.status().to_string();
    EXPECT_EQ(std::memcmp(actual->at("y").raw_data(), expected->at("y").raw_data(), expected->at("y").nbytes()), 0);
  }
}

// Inside an INT8 region the nearest Resize reads and writes channels-last: no reorder around it.
TEST(Int8Layers, ResizeNearestStaysNhwcInARegion) {
  std::mt19937 rng(9);
  std::vector<std::string> init = {"float xs = {0.05}",
                                   "int8 xz = {0}",
                                   int_initializer("int8", "w", {8, 4, 3, 3}, -127, 127, rng),
                                   float_initializer("ws", {8}, 0.002f, 0.01f, rng),
                                   "int8[8] wz = {0, 0, 0, 0, 0, 0, 0, 0}",
                                   "float ys = {0.04}",
                                   "int8 yz = {0}",
                                   "float[4] s = {1.0, 1.0, 2.0, 2.0}",
                                   fmt::format("int8[{},8,6,6] c", kMaxBatch),
                                   fmt::format("int8[{},8,12,12] u", kMaxBatch)};
  Graph graph =
      load_text(model(fmt::format("int8[{},4,6,6] x", kMaxBatch), fmt::format("int8[{},8,6,6] p", kMaxBatch), init,
                      "c = qdqrt.QConv <pads = [1, 1, 1, 1], activation = \"Relu\", fused_nodes = [\"conv\"]> "
                      "(x, xs, xz, w, ws, wz, , ys, yz)\n"
                      "u = Resize <mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = "
                      "\"floor\"> (c, , s)\n"
                      "p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (u)\n"));
  auto plan = harness_lower(graph, kMaxBatch, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  int reorders = 0;
  for (int origin : plan->harness_node) reorders += origin == -2;
  EXPECT_EQ(reorders, 2);  // into the region (x) and out of it (p)
  expect_matches_reference(graph, {"qconv", "resize_nearest", "qmaxpool"});
}

}  // namespace
}  // namespace qdqrt::testing

// ---------------------------------------------------------------------------------------------
// Must-fail binds: an engine file is untrusted, so every kind validates what it reads.

namespace qdqrt::testing {
namespace {

HarnessPlan lower_or_die(const Graph& graph) {
  auto plan = harness_lower(graph, kMaxBatch, kernels::active_isa());
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : HarnessPlan{};
}

engine::PlanLayer* native_layer(HarnessPlan& plan, const std::string& kind) {
  for (size_t i = 0; i < plan.plan.layers.size(); ++i) {
    if (plan.harness_node[i] == -1 && plan.plan.layers[i].kind == kind) return &plan.plan.layers[i];
  }
  ADD_FAILURE() << "no layer of kind " << kind;
  return nullptr;
}

void truncate_blob(engine::PlanLayer& layer, const std::string& name) {
  for (engine::Blob& blob : layer.blobs) {
    if (blob.name == name) {
      ASSERT_GT(blob.bytes.size(), 0u);
      blob = engine::make_blob(name, blob.bytes.data(), blob.bytes.size() - 1);
      return;
    }
  }
  ADD_FAILURE() << "no blob " << name;
}

// Binds `plan` after `tamper` changed it: must fail with a message containing `expected`.
void expect_bind_fails(const Graph& graph, const std::string& kind,
                       const std::function<void(engine::EnginePlan&, engine::PlanLayer&)>& tamper,
                       const std::string& expected) {
  HarnessPlan plan = lower_or_die(graph);
  ASSERT_TRUE(harness_bind(plan).ok()) << "the untampered plan binds";
  engine::PlanLayer* layer = native_layer(plan, kind);
  ASSERT_NE(layer, nullptr);
  tamper(plan.plan, *layer);
  auto bound = harness_bind(plan);
  ASSERT_FALSE(bound.ok()) << kind << ": tampered plan bound (" << expected << ")";
  const std::string message = bound.status().to_string();
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_NE(message.find(kind), std::string::npos) << message;  // names the layer kind
}

Graph conv_for_tamper(bool depthwise) {
  std::mt19937 rng(2);
  ConvCase c;
  if (depthwise) {
    c.channels = c.out_channels = c.group = 16;
  }
  c.residual = "int8";
  return load_text(conv_graph(c, rng));
}

TEST(Int8Bind, QConvRefusesDamagedWeights) {
  Graph graph = conv_for_tamper(false);
  expect_bind_fails(graph, "qconv", [](auto&, auto& l) { truncate_blob(l, "g0.data"); },
                    "blob 'g0.data' has");
  expect_bind_fails(
      graph, "qconv", [](auto&, auto& l) { truncate_blob(l, "g0.accumulator_scale"); },
      "blob 'g0.accumulator_scale' has");
  expect_bind_fails(graph, "qconv", [](auto&, auto& l) { l.params.set("g0.nr", int64_t{8}); }, "g0.nr");
  expect_bind_fails(
      graph, "qconv",
      [](auto&, auto& l) {
        // The same bytes 4 bytes past a 64-byte boundary.
        for (engine::Blob& blob : l.blobs) {
          if (blob.name != "g0.accumulator_bias") continue;
          auto storage = std::make_shared<std::vector<uint8_t>>(blob.bytes.size() + 128);
          uint8_t* base = storage->data() + (64 - reinterpret_cast<uintptr_t>(storage->data()) % 64) % 64 + 4;
          std::memcpy(base, blob.bytes.data(), blob.bytes.size());
          blob.bytes = std::span<const uint8_t>(base, blob.bytes.size());
          blob.owner = storage;
        }
      },
      "blob 'g0.accumulator_bias' is not 64-byte aligned");
  expect_bind_fails(graph, "qconv", [](auto&, auto& l) { l.params.set("g0.isa", std::string("avx1024")); },
                    "unknown ISA 'avx1024'");
  expect_bind_fails(graph, "qconv", [](auto&, auto& l) { l.params.set("channels", int64_t{6}); },
                    "input shape does not match");
  expect_bind_fails(graph, "qconv", [](auto&, auto& l) { l.params.set("out.scale", -1.0); }, "out.scale");
  expect_bind_fails(graph, "qconv", [](auto& p, auto& l) { p.tensors[l.inputs[1]].dtype = DataType::kUint8; },
                    "residual");
  expect_bind_fails(graph, "qconv", [](auto& p, auto& l) { p.tensors[l.inputs[0]].layout = engine::Layout::kPlain; },
                    "stored plain, expected nhwc");
  Graph depthwise = conv_for_tamper(true);
  expect_bind_fails(depthwise, "qconv", [](auto&, auto& l) { truncate_blob(l, "dw.taps"); },
                    "blob 'dw.taps' has");
  expect_bind_fails(depthwise, "qconv", [](auto&, auto& l) { l.params.set("dw.channels_padded", int64_t{17}); },
                    "dw.channels_padded");
}

Graph constant_matmul_graph() {
  std::mt19937 rng(3);
  return load_text(model(fmt::format("int8[{},40] a", kMaxBatch), fmt::format("float[{},70] y", kMaxBatch),
                         {"float as = {0.03}", "int8 az = {-4}", int_initializer("int8", "w", {40, 70}, -127, 127, rng),
                          "float ws = {0.01}", "int8 wz = {0}"},
                         "y = qdqrt.QMatMul <fused_nodes = [\"fc\"]> (a, as, az, w, ws, wz)\n"));
}

Graph batched_matmul_graph() {
  return load_text(model(fmt::format("int8[{},2,9,16] a, int8[{},2,16,12] b", kMaxBatch, kMaxBatch),
                         fmt::format("float[{},2,9,12] y", kMaxBatch),
                         {"float as = {0.03}", "int8 az = {1}", "float bs = {0.02}", "int8 bz = {0}",
                          "float[12] bias = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}"},
                         "y = qdqrt.QMatMul <fused_nodes = [\"qk\"]> (a, as, az, b, bs, bz, bias)\n"));
}

TEST(Int8Bind, QMatMulRefusesDamagedWeights) {
  Graph graph = constant_matmul_graph();
  expect_bind_fails(graph, "qmatmul", [](auto&, auto& l) { truncate_blob(l, "w.data"); }, "blob 'w.data' has");
  expect_bind_fails(
      graph, "qmatmul", [](auto&, auto& l) { truncate_blob(l, "w.accumulator_bias"); },
      "blob 'w.accumulator_bias' has");
  expect_bind_fails(graph, "qmatmul", [](auto&, auto& l) { l.params.set("k", int64_t{41}); }, "k=41");
  expect_bind_fails(graph, "qmatmul", [](auto&, auto& l) { l.params.set("w.k_padded", int64_t{4}); }, "w.k_padded");

  Graph batched = batched_matmul_graph();
  expect_bind_fails(batched, "qbatched_matmul", [](auto&, auto& l) { truncate_blob(l, "bias"); }, "blob 'bias' has");
  expect_bind_fails(batched, "qbatched_matmul", [](auto&, auto& l) { l.scratch_bytes = 64; }, "scratch of 64 bytes");
  expect_bind_fails(batched, "qbatched_matmul", [](auto&, auto& l) { l.params.set("isa", std::string("x")); },
                    "ISA 'x'");
}

Graph elementwise_graph() {
  return load_text(model(
      fmt::format("int8[{},6,5,5] a, int8[{},6,5,5] b, int8[{},6,4,5] c", kMaxBatch, kMaxBatch, kMaxBatch),
      fmt::format("int8[{},6,5,5] s, uint8[{},6,5,5] l, int8[{},6,9,5] k, int8[{},6,2,2] m, int8[{},6,3,3] v, "
                  "int8[{},6,1,1] g, int8[{},150] f, int8[{},5,6,5] t",
                  kMaxBatch, kMaxBatch, kMaxBatch, kMaxBatch, kMaxBatch, kMaxBatch, kMaxBatch, kMaxBatch),
      {"float as = {0.05}", "int8 az = {3}", "float ys = {0.1}", "int8 yz = {-5}", "uint8 uz = {0}"},
      "s = qdqrt.QAdd <fused_nodes = [\"add\"]> (a, as, az, b, as, az, ys, yz)\n"
      "l = qdqrt.QLookup <function = \"Sigmoid\", fused_nodes = [\"sig\"]> (a, as, az, ys, uz)\n"
      "k = qdqrt.QConcat <axis = 2, fused_nodes = [\"cat\"]> (ys, yz, a, as, az, c, ys, yz)\n"
      "m = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (a)\n"
      "v = qdqrt.QAveragePool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], "
      "fused_nodes = [\"avg\"]> (a, as, az, ys, yz)\n"
      "g = qdqrt.QGlobalAveragePool <fused_nodes = [\"gap\"]> (a, as, az, ys, yz)\n"
      "f = Flatten <axis = 1> (a)\n"
      "t = Transpose <perm = [0, 2, 1, 3]> (a)\n"));
}

TEST(Int8Bind, OtherKindsRefuseDamagedPlans) {
  Graph graph = elementwise_graph();
  {
    HarnessPlan plan = lower_or_die(graph);
    EXPECT_EQ(native_kinds(plan), (std::vector<std::string>{"qbinary", "qlut", "qconcat", "qmaxpool", "qavgpool",
                                                            "qgavgpool", "int8_reshape", "int8_transpose"}));
  }
  expect_bind_fails(graph, "qbinary", [](auto&, auto& l) { l.params.set("y_scale", 0.0); }, "y_scale");
  expect_bind_fails(graph, "qbinary", [](auto&, auto& l) { l.params.set("op", std::string("div")); }, "'div'");
  expect_bind_fails(graph, "qbinary", [](auto& p, auto& l) { p.tensors[l.inputs[1]].shape[2] = 4; }, "broadcast");
  expect_bind_fails(graph, "qlut", [](auto&, auto& l) { truncate_blob(l, "table"); }, "blob 'table' has 255 bytes");
  expect_bind_fails(graph, "qconcat", [](auto&, auto& l) { l.params.set("x_zero_points", std::vector<int64_t>{3}); },
                    "x_zero_points");
  expect_bind_fails(graph, "qconcat", [](auto&, auto& l) { l.params.set("axis", int64_t{1}); }, "input 0 shape");
  expect_bind_fails(graph, "qmaxpool", [](auto&, auto& l) { l.params.set("kernel", std::vector<int64_t>{4, 4}); },
                    "the window gives");
  expect_bind_fails(graph, "qavgpool", [](auto&, auto& l) { l.params.set("x_scale", std::string("big")); },
                    "x_scale");
  expect_bind_fails(graph, "qgavgpool", [](auto&, auto& l) { l.params.set("y_zero_point", int64_t{300}); },
                    "y_zero_point");
  expect_bind_fails(graph, "int8_reshape", [](auto& p, auto& l) { p.tensors[l.outputs[0]].dtype = DataType::kUint8; },
                    "differ in type");
  expect_bind_fails(graph, "int8_transpose",
                    [](auto&, auto& l) { l.params.set("perm", std::vector<int64_t>{0, 2, 2, 3}); },
                    "not a permutation");
}

TEST(Int8Bind, QAveragePoolOfFloatInputRefusesDamagedPlans) {
  std::mt19937 rng(7);
  std::string description;
  Graph graph = float_average_pool_graph(rng, description);
  expect_bind_fails(graph, "qavgpool", [](auto&, auto& l) { l.scratch_bytes = 8; }, "scratch_bytes 8");
  expect_bind_fails(graph, "qavgpool", [](auto&, auto& l) { l.params.set("y_scale", -1.0); }, "y_scale");
  expect_bind_fails(graph, "qavgpool", [](auto& p, auto& l) { p.tensors[l.outputs[0]].dtype = DataType::kFloat; },
                    "has dtype float32");
}

TEST(Int8Bind, AddQuantizeRefusesDamagedPlans) {
  const Graph graph = add_quantize_graph();
  expect_bind_fails(graph, "add_quantize", [](auto&, auto& l) { l.params.set("scale", 0.0); }, "scale");
  expect_bind_fails(graph, "add_quantize", [](auto&, auto& l) { l.params.set("zero_point", int64_t{-1}); },
                    "zero_point");
  expect_bind_fails(graph, "add_quantize", [](auto&, auto& l) { l.params.set("relu", std::string("yes")); }, "relu");
  expect_bind_fails(graph, "add_quantize", [](auto& p, auto& l) { p.tensors[l.outputs[1]].dtype = DataType::kUint8; },
                    "float32 sum");
  expect_bind_fails(graph, "add_quantize", [](auto& p, auto& l) { p.tensors[l.inputs[1]].shape[2] = 10; },
                    "one shape and layout");
  expect_bind_fails(graph, "add_quantize", [](auto&, auto& l) { l.outputs.push_back(l.outputs[0]); },
                    "1 or 2 outputs");
}

TEST(Int8Bind, SoftmaxQuantizeRefusesDamagedPlans) {
  const Graph graph = softmax_graph();
  expect_bind_fails(
      graph, "softmax_quantize", [](auto&, auto& l) { l.params.set("scale", 0.0); }, "scale");
  expect_bind_fails(
      graph, "softmax_quantize", [](auto&, auto& l) { l.params.set("zero_point", int64_t{300}); }, "zero_point");
  expect_bind_fails(
      graph, "softmax_quantize", [](auto& p, auto& l) { p.tensors[l.outputs[0]].dtype = DataType::kFloat; },
      "int8/uint8");
  expect_bind_fails(
      graph, "softmax_quantize", [](auto& p, auto& l) { p.tensors[l.outputs[0]].shape[3] = 16; }, "one plain shape");
}

// Graphs whose registry layers cover every INT8 kind and the epilogue's variants.
std::vector<Graph> every_kind_graphs() {
  std::vector<Graph> graphs;
  graphs.push_back(conv_for_tamper(false));
  graphs.push_back(conv_for_tamper(true));
  std::mt19937 rng(4);
  ConvCase clipped;
  clipped.output = "float";
  clipped.activation = "Clip";
  clipped.group = 1;
  graphs.push_back(load_text(conv_graph(clipped, rng)));
  ConvCase leaky;
  leaky.output = "uint8";
  leaky.activation = "LeakyRelu";
  leaky.residual = "uint8";
  graphs.push_back(load_text(conv_graph(leaky, rng)));
  graphs.push_back(constant_matmul_graph());
  graphs.push_back(batched_matmul_graph());
  graphs.push_back(elementwise_graph());
  graphs.push_back(softmax_graph());
  graphs.push_back(add_quantize_graph());
  return graphs;
}

// Whatever damage to a param or blob bind refuses, the message names the layer.
TEST(Int8Bind, EveryRefusalNamesTheLayer) {
  for (const Graph& graph : every_kind_graphs()) {
    HarnessPlan plan = lower_or_die(graph);
    for (size_t i = 0; i < plan.plan.layers.size(); ++i) {
      if (plan.harness_node[i] != -1) continue;
      SCOPED_TRACE(plan.plan.layers[i].kind + " " + plan.plan.layers[i].name);
      BindDamageResult result = damage_each_param_and_blob(plan.plan, i);
      if (!plan.plan.layers[i].params.values().empty() || !plan.plan.layers[i].blobs.empty()) {
        EXPECT_GT(result.refused, 0);
      }
      EXPECT_TRUE(result.unnamed.empty()) << fmt::format("{}", fmt::join(result.unnamed, "\n"));
    }
  }
}

TEST(Int8Bind, EveryKeyIsDocumented) {
  for (const Graph& graph : every_kind_graphs()) {
    HarnessPlan plan = lower_or_die(graph);
    std::vector<std::string> missing = undocumented_keys(plan.plan, QDQRT_ENGINE_FORMAT_DOC);
    EXPECT_TRUE(missing.empty()) << fmt::format("{}", fmt::join(missing, "\n"));
  }
}

// The output scale is stored once (out.scale): the packed weights hold real units, so a plan whose
// out.scale is changed computes exactly what a graph with that y_scale computes.
TEST(Int8Bind, OutputScaleIsStoredOnce) {
  ConvCase regular, depthwise;
  regular.activation = "Clip";
  depthwise.channels = depthwise.out_channels = depthwise.group = 16;
  depthwise.residual = "int8";
  for (const ConvCase& c : {regular, depthwise}) {
    SCOPED_TRACE(c.name + (c.group > 1 ? "depthwise" : "regular"));
    std::mt19937 rng(12);
    const std::string text = conv_graph(c, rng);
    std::string doubled = text;
    const size_t at = doubled.find("float ys = {0.04}");
    ASSERT_NE(at, std::string::npos);
    doubled.replace(at, 17, "float ys = {0.08}");
    Graph graph = load_text(text), graph_doubled = load_text(doubled);
    HarnessPlan plan = lower_or_die(graph);
    engine::PlanLayer* conv = native_layer(plan, "qconv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(*conv->params.get_float("out.scale"), static_cast<double>(0.04f));
    for (const engine::Blob& blob : conv->blobs) {
      EXPECT_EQ(blob.name.find("multiplier"), std::string::npos) << blob.name;
    }
    conv->params.set("out.scale", static_cast<double>(0.08f));
    auto layers = harness_bind(plan);
    ASSERT_TRUE(layers.ok()) << layers.status().to_string();
    std::mt19937 input_rng(1);
    TensorMap inputs = random_graph_inputs(graph, input_rng);
    auto expected = run_reference(graph_doubled, inputs);
    auto before = run_reference(graph, inputs);
    ASSERT_TRUE(expected.ok() && before.ok());
    auto actual = harness_run(plan, *layers, inputs, 2);
    ASSERT_TRUE(actual.ok()) << actual.status().to_string();
    EXPECT_EQ(compare(*expected, *actual, "doubled").int_mismatches, 0);
    EXPECT_GT(compare(*before, *actual, "original").int_mismatches, 0);  // the change did reach the output
  }
}

// Few output pixels (7x7 at batch 1): the layer splits output channel tiles as well, so threads
// balance and each streams part of the weights; a partial last tile and a residual included.
TEST(Int8Layers, QConvFewPixelsSplitsChannels) {
  ConvCase c;
  c.name = "few_pixels";
  c.channels = 32;
  c.out_channels = 200;
  c.residual = "int8";
  std::mt19937 rng(12);
  Graph graph = load_text(conv_graph(c, rng));
  auto plan = harness_lower(graph, 1, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto layers = harness_bind(*plan);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  const size_t conv = first_layer_of_kind(*plan, "qconv");
  ASSERT_LT(conv, plan->plan.layers.size());
  const engine::WorkShape work = work_at_batch_one(*plan, *layers, conv);
  // The pixel blocks of the kernel's row tile ("...-<rows>x<columns>c<k group>-...").
  const std::string& kernel = plan->plan.layers[conv].kernel;
  std::smatch tile;
  ASSERT_TRUE(std::regex_search(kernel, tile, std::regex("-([0-9]+)x[0-9]+c[0-9]+-"))) << kernel;
  const int64_t rows = std::stoi(tile[1].str());
  const int64_t pixel_items = (49 + rows - 1) / rows;
  EXPECT_GT(work.items, pixel_items) << kernel;
  expect_matches_reference(graph, {"qconv"});
}

// 147 output pixels (batch 3, 7x7) are enough to split by pixel blocks alone while each thread
// gets two of them (a channel split would have each thread read the whole input, half from the
// other core's cache); with more threads than that the layer splits channels too. Same codes at
// every thread count.
TEST(Int8Layers, QConvSplitsChannelsOnlyWhenPixelBlocksRunShort) {
  ConvCase c;
  c.name = "pixel_blocks";
  c.channels = 256;
  c.out_channels = 256;
  c.size = 7;
  c.kernel = 1;
  c.pad = 0;
  std::mt19937 rng(13);
  Graph graph = load_text(conv_graph(c, rng));
  std::vector<kernels::Isa> isas = {kernels::active_isa()};
  // The AMX tile's 32-row pixel blocks: 5 here, the case the rule is for (fewer than 16 blocks).
  if (kernels::isa_supported(kernels::Isa::kAmxInt8) && isas[0] != kernels::Isa::kAmxInt8) {
    isas.push_back(kernels::Isa::kAmxInt8);
  }
  for (kernels::Isa isa : isas) {
    SCOPED_TRACE(kernels::isa_name(isa));
    auto plan = harness_lower(graph, 1, isa);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    auto layers = harness_bind(*plan);
    ASSERT_TRUE(layers.ok()) << layers.status().to_string();
    const size_t conv = first_layer_of_kind(*plan, "qconv");
    ASSERT_LT(conv, plan->plan.layers.size());
    const std::string& kernel = plan->plan.layers[conv].kernel;
    const int64_t pixel_items = work_at_batch_one(*plan, *layers, conv, 1).items;
    ASSERT_GE(pixel_items, 2) << kernel;
    ASSERT_LE(pixel_items, 147) << kernel;
    const int most_pixel_split = static_cast<int>(pixel_items / 2);  // threads that each get two blocks
    EXPECT_EQ(work_at_batch_one(*plan, *layers, conv, most_pixel_split).items, pixel_items) << kernel;
    EXPECT_EQ(work_at_batch_one(*plan, *layers, conv, 2).items, pixel_items) << kernel;
    const engine::WorkShape channel_split = work_at_batch_one(*plan, *layers, conv, most_pixel_split + 1);
    EXPECT_GT(channel_split.items, pixel_items) << kernel;
    EXPECT_EQ(channel_split.items % pixel_items, 0) << kernel;
    if (isa == kernels::Isa::kAmxInt8) {
      EXPECT_EQ(pixel_items, 5) << kernel;
    }
    std::mt19937 input_rng(14);
    TensorMap inputs = random_graph_inputs(graph, input_rng);
    auto one = harness_run(*plan, *layers, inputs, 1);
    ASSERT_TRUE(one.ok()) << one.status().to_string();
    for (int threads : {2, most_pixel_split + 1}) {
      auto actual = harness_run(*plan, *layers, inputs, threads);
      ASSERT_TRUE(actual.ok()) << actual.status().to_string();
      EXPECT_EQ(compare(*one, *actual, "pixel blocks").int_mismatches, 0) << threads;
    }
  }
  expect_matches_reference(graph, {"qconv"});
}

// A channel gate over 14x14 pixels splits into equal blocks: two threads' halves of its items are
// 98 pixels each (the rows the conv before wrote on each core), not 128 and 68.
TEST(Int8Layers, ChannelGateItemsHalveTheImageEvenly) {
  Graph graph = load_text(R"(<ir_version: 8, opset_import: ["" : 14, "qdqrt" : 1]>
g (float[1,40,14,14] x, float[1,40,1,1] gate) => (uint8[1,40,14,14] y)
<float ys = {0.1}, uint8 yz = {128}>
{
  y = qdqrt.ChannelGate <fused_nodes = ["mul", "q"]> (x, gate, ys, yz)
})");
  auto plan = harness_lower(graph, 1, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(native_kinds(*plan), std::vector<std::string>{"channel_gate"});
  auto layers = harness_bind(*plan);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  // The layer alone (the plan also converts x to channels-last and y back): its own tensors.
  const size_t index = first_layer_of_kind(*plan, "channel_gate");
  ASSERT_LT(index, plan->plan.layers.size());
  const engine::PlanLayer& gate_layer = plan->plan.layers[index];
  const engine::Layer& layer = *(*layers)[index];
  std::vector<float> x(40 * 196, 1.0f), gate(40, 1.0f);
  std::vector<uint8_t> y(40 * 196, 0);
  std::vector<void*> data(plan->plan.tensors.size(), nullptr);
  data[static_cast<size_t>(gate_layer.inputs[0])] = x.data();
  data[static_cast<size_t>(gate_layer.inputs[1])] = gate.data();
  data[static_cast<size_t>(gate_layer.outputs[0])] = y.data();
  engine::RunState state{&plan->plan, 1, &data};
  const engine::WorkShape work = layer.work(state);
  ASSERT_EQ(work.items % 2, 0) << work.items;
  layer.run(state, 0, work.items / 2, {});
  int64_t written = 0;  // channels-last: a pixel's 40 values side by side
  for (int64_t pixel = 0; pixel < 196; ++pixel) written += y[static_cast<size_t>(pixel) * 40] != 0 ? 1 : 0;
  EXPECT_EQ(written, 98);
  layer.run(state, work.items / 2, work.items, {});
  EXPECT_EQ(std::count(y.begin(), y.end(), uint8_t{138}), 40 * 196);  // 1 x 1 / 0.1 + 128, every pixel once
}

// A squeeze-excite's pooled float vector [N, C, 1, 1] quantized for a 1x1 conv: the quantize
// layer writes channels-last, which for one pixel is the plain order (the layer then runs the plain
// kernel over the images). Channel counts around and far past the vector widths, both signs.
TEST(Int8Layers, QuantizeOnePixelImagesForAConv) {
  for (const int channels : {19, 64, 960}) {
    for (const char* type : {"uint8", "int8"}) {
      ConvCase c;
      c.name = "pooled";
      c.x_signed = std::string(type) == "int8";
      c.x_zero_point = c.x_signed ? -3 : 131;
      c.kernel = 1;
      c.pad = 0;
      c.size = 1;
      c.channels = channels;
      c.out_channels = 24;
      std::mt19937 rng(static_cast<uint32_t>(channels));
      std::string text = conv_graph(c, rng);
      // The conv's input becomes a QuantizeLinear of a float input.
      const std::string x_decl = fmt::format("{}[{},{},1,1] x", type, kMaxBatch, channels);
      ASSERT_NE(text.find(x_decl), std::string::npos);
      text.replace(text.find(x_decl), x_decl.size(), fmt::format("float[{},{},1,1] f", kMaxBatch, channels));
      text.replace(text.find("y = qdqrt.QConv"), 0, "x = QuantizeLinear(f, xs, xz)\n");
      SCOPED_TRACE(fmt::format("{} channels, {}", channels, type));
      const auto quantize_writes_plain = [](const HarnessPlan& plan) {
        EXPECT_NE(plan.plan.layers.front().kernel.find("nchw2nhwc"), std::string::npos)
            << plan.plan.layers.front().kernel;
      };
      expect_matches_reference(load_text(text), {"quantize", "qconv"},
                               ReferenceCheck{.seed = 5,
                                              .engine_kinds = std::vector<std::string>{"qconv"},
                                              .check_plan = quantize_writes_plain});
    }
  }
}

// A QMatMul of int8 a [..., k] (declared `a_dims`) by random int8 weights [k, n] into y (`y_dims`).
Graph qmatmul_graph(const std::string& a_dims, const std::string& y_dims, int64_t k, int64_t n, std::mt19937& rng) {
  return load_text(model(fmt::format("int8[{}] a", a_dims), fmt::format("int8[{}] y", y_dims),
                         {"float as = {0.03}", "int8 az = {0}", int_initializer("int8", "w", {k, n}, -127, 127, rng),
                          "float ws = {0.01}", "int8 wz = {0}", "float ys = {0.2}", "int8 yz = {0}"},
                         "y = qdqrt.QMatMul <fused_nodes = [\"fc\"]> (a, as, az, w, ws, wz, , ys, yz)\n"));
}

// M = 1 (batch-1 FC): the layer splits column blocks so several threads share the GEMV.
TEST(Int8Layers, QMatMulSingleRowSplitsColumns) {
  std::mt19937 rng(8);
  Graph graph = qmatmul_graph("1,64", "1,1000", 64, 1000, rng);
  auto plan = harness_lower(graph, 1, kernels::active_isa());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto layers = harness_bind(*plan);
  ASSERT_TRUE(layers.ok()) << layers.status().to_string();
  const engine::WorkShape work = work_at_batch_one(*plan, *layers, 0);
  EXPECT_GT(work.items, 1);  // column tiles
  std::mt19937 input_rng(9);
  TensorMap inputs = random_graph_inputs(graph, input_rng);
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok());
  for (int threads : {1, 2, 3}) {
    auto actual = harness_run(*plan, *layers, inputs, threads);
    ASSERT_TRUE(actual.ok());
    EXPECT_EQ(compare(*expected, *actual, "m=1").int_mismatches, 0) << threads;
  }
}

// A transformer's Linear at batch 1 (128 tokens, 512 KiB of weights) splits into blocks of column
// tiles over all its rows, so each thread streams only its own columns of B: 8 items, their
// operations the whole GEMM's, the same bits on any split. Past kWholeRowsMaxRows (300 tokens) the
// items are row blocks again.
TEST(Int8Layers, QMatMulTransformerRowsSplitColumnsOverWholeRows) {
  for (const int64_t tokens : {int64_t{128}, int64_t{300}}) {
    SCOPED_TRACE(tokens);
    std::mt19937 rng(10);
    Graph graph = qmatmul_graph(fmt::format("1,{},256", tokens), fmt::format("1,{},2048", tokens), 256, 2048, rng);
    auto plan = harness_lower(graph, 1, kernels::active_isa());
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    auto layers = harness_bind(*plan);
    ASSERT_TRUE(layers.ok()) << layers.status().to_string();
    const engine::WorkShape work = work_at_batch_one(*plan, *layers, 0);
    if (tokens == 128) {
      EXPECT_EQ(work.items, 8);
      EXPECT_DOUBLE_EQ(static_cast<double>(work.items) * work.ops_per_item, 2.0 * 128 * 256 * 2048);
    } else {
      EXPECT_GT(work.items, 8);
    }
    std::mt19937 input_rng(11);
    TensorMap inputs = random_graph_inputs(graph, input_rng);
    auto expected = run_reference(graph, inputs);
    ASSERT_TRUE(expected.ok());
    auto whole = harness_run(*plan, *layers, inputs, 1);
    ASSERT_TRUE(whole.ok());
    // The reference requantizes in double: a code off by one where the sum lands on a rounding tie.
    expect_within(compare(*expected, *whole, "transformer rows"), 0.01, "transformer rows");
    for (int threads : {2, 3, 8}) {
      auto actual = harness_run(*plan, *layers, inputs, threads);
      ASSERT_TRUE(actual.ok());
      EXPECT_EQ(compare(*whole, *actual, "transformer rows").int_mismatches, 0) << threads;
    }
  }
}

// Every ISA this machine supports packs and runs the same numbers (the plan records the ISA).
TEST(Int8Layers, EverySupportedIsa) {
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvxVnni,
                           kernels::Isa::kAvx512Vnni, kernels::Isa::kAmxInt8}) {
    if (!kernels::isa_supported(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    for (const ConvCase& c : conv_cases()) {
      std::mt19937 rng(11);
      Graph graph = load_text(conv_graph(c, rng));
      auto plan = harness_lower(graph, kMaxBatch, isa);
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      // The depthwise family has no AVX-VNNI or AMX variant: it packs for AVX2 / AVX-512 VNNI there.
      // The others run AMX only where their depth fills its tile rows (kernels::gemm_isa_for_shape;
      // every case has more than one output pixel).
      const bool depthwise = c.group == c.channels && c.group > 1;
      const int depth = c.kernel * c.kernel * c.channels / c.group;
      const int steps_bytes = (depth + 63) / 64 * 64;
      const bool amx_depth = (depth >= 64 && depth % 64 == 0) || depth >= 512 ||
                             (depth >= 96 && 4 * depth >= 3 * steps_bytes && c.out_channels / c.group >= 32);
      const kernels::Isa packed = isa == kernels::Isa::kAvxVnni && depthwise ? kernels::Isa::kAvx2
                                  : isa == kernels::Isa::kAmxInt8 && (depthwise || !amx_depth)
                                      ? kernels::Isa::kAvx512Vnni
                                      : isa;
      engine::PlanLayer* conv = native_layer(*plan, "qconv");
      ASSERT_NE(conv, nullptr);
      EXPECT_NE(conv->kernel.find(kernels::isa_name(packed)), std::string::npos) << c.name << ": " << conv->kernel;
      auto layers = harness_bind(*plan);
      ASSERT_TRUE(layers.ok()) << layers.status().to_string();
      std::mt19937 input_rng(1);
      TensorMap inputs = random_graph_inputs(graph, input_rng);
      auto expected = run_reference(graph, inputs);
      ASSERT_TRUE(expected.ok());
      auto actual = harness_run(*plan, *layers, inputs, 2);
      ASSERT_TRUE(actual.ok());
      Mismatch m = compare(*expected, *actual, c.name);
      EXPECT_EQ(m.int_mismatches, 0) << c.name;
      EXPECT_LE(m.max_float_rel, 1e-5) << c.name;
    }
  }
}

}  // namespace
}  // namespace qdqrt::testing

// Timing of a ResNet-50 layer1 3x3 conv through the engine (QDQRT_INT8_PERF=1 to run; prints GOPS).
namespace qdqrt::testing {
namespace {

TEST(Int8Perf, ResNetConvThroughEngine) {
  if (std::getenv("QDQRT_INT8_PERF") == nullptr) GTEST_SKIP() << "set QDQRT_INT8_PERF=1";
  std::mt19937 rng(1);
  for (int64_t batch : {1, 8}) {
    std::vector<std::string> init = {
        "float xs = {0.05}", "int8 xz = {0}", int_initializer("int8", "w", {64, 64, 3, 3}, -127, 127, rng),
        float_initializer("ws", {64}, 0.002f, 0.01f, rng), int_initializer("int8", "wz", {64}, 0, 0, rng),
        "float ys = {0.04}", "int8 yz = {0}"};
    Graph graph = load_text(model(
        fmt::format("int8[{},64,56,56] x", batch), fmt::format("int8[{},64,56,56] y", batch), init,
        "y = qdqrt.QConv <pads = [1, 1, 1, 1], activation = \"Relu\", fused_nodes = [\"conv\"]> "
        "(x, xs, xz, w, ws, wz, , ys, yz)\n"));
    auto built = engine::Engine::build(graph, {});
    ASSERT_TRUE(built.ok()) << built.status().to_string();
    std::mt19937 input_rng(2);
    TensorMap inputs = random_graph_inputs(graph, input_rng);
    Tensor out(DataType::kInt8, {batch, 64, 56, 56});
    const Tensor& x = inputs.at("x");
    for (int threads : {1, 2}) {
      auto context = (*built)->create_context({.threads = threads, .profiling = true});
      double best = 1e9, best_conv = 1e9;
      for (int i = 0; i < 20; ++i) {
        auto start = std::chrono::steady_clock::now();
        ASSERT_TRUE(context->run({{"x", x.raw_data(), x.shape()}}, {{"y", out.raw_data(), out.shape()}}).is_ok());
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        const auto& times = context->last_layer_times_ms();
        for (size_t l = 0; l < times.size(); ++l) {
          if ((*built)->plan().layers[l].kind == "qconv") best_conv = std::min(best_conv, times[l]);
        }
      }
      const double ops = 2.0 * batch * 56 * 56 * 64 * 64 * 9;
      fmt::print("batch {} threads {}: run {:.3f} ms, conv layer {:.3f} ms = {:.0f} GOPS\n", batch, threads, best,
                 best_conv, ops / best_conv / 1e6);
    }
  }
}

}  // namespace
}  // namespace qdqrt::testing
