// The engine core: builder (layouts, reorders, constants, outputs), memory plan, runtime
// (bindings, batch range, threads, profiling) on graphs of border layers.
#include <gtest/gtest.h>

#include <xmmintrin.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "engine/builder.h"
#include "engine/context_threads.h"
#include "engine/engine.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

using engine::ConstTensorBinding;
using engine::Engine;
using engine::TensorBinding;

std::shared_ptr<const Engine> build_or_fail(const Graph& graph) {
  auto built = Engine::build(graph, {});
  EXPECT_TRUE(built.ok()) << built.status().message();
  return built.ok() ? *built : nullptr;
}

// Runs the engine on `inputs` (batch from their shapes) and returns its outputs by name.
TensorMap run_engine(const Engine& engine, const TensorMap& inputs, int threads = 1) {
  auto context = engine.create_context({.threads = threads});
  std::vector<ConstTensorBinding> in;
  for (const auto& [name, tensor] : inputs) in.push_back({name, tensor.raw_data(), tensor.shape()});
  TensorMap outputs;
  int64_t batch = inputs.empty() ? 1 : inputs.begin()->second.dim(0);
  std::vector<TensorBinding> out;
  for (const auto& info : engine.outputs()) {
    Shape shape = info.shape;
    if (info.batched) shape[0] = batch;
    outputs[info.name] = Tensor(info.dtype, shape);
  }
  for (auto& [name, tensor] : outputs) out.push_back({name, tensor.raw_data(), tensor.shape()});
  Status status = context->run(in, out);
  EXPECT_TRUE(status.is_ok()) << status.message();
  return outputs;
}

void expect_equal_tensors(const TensorMap& expected, const TensorMap& actual) {
  for (const auto& [name, tensor] : expected) {
    auto it = actual.find(name);
    ASSERT_NE(it, actual.end()) << name;
    ASSERT_EQ(it->second.shape(), tensor.shape()) << name;
    ASSERT_EQ(it->second.dtype(), tensor.dtype()) << name;
    EXPECT_EQ(std::memcmp(it->second.raw_data(), tensor.raw_data(), tensor.nbytes()), 0) << name;
  }
}

const char* kQdqText = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[4,3,5,7] x) => (int8[4,3,5,7] q, float[4,3,5,7] y, float[4,3,5,7] z)
  <float s = {0.05}, int8 zp = {3}>
  {
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
    z = Identity(x)
  })";

TEST(EngineCore, QuantizeDequantizeMatchTheReferenceBitExactly) {
  Graph graph = parse_graph(kQdqText);
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  TensorMap inputs = random_inputs(graph, 7, 12.0f);
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  expect_equal_tensors(*expected, run_engine(*engine, inputs));
  expect_equal_tensors(*expected, run_engine(*engine, inputs, 2));
}

// The first run warms every pool thread up; with more threads than cores that must not cost a
// wait per thread (it took 0.2 s for every two threads beyond the cores on a 2-core machine).
TEST(EngineCore, FirstRunWithManyThreadsTakesABoundedWarmUp) {
  Graph graph = parse_graph(kQdqText);
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  const int threads = engine::max_context_threads();
  auto context = engine->create_context({.threads = threads});
  EXPECT_EQ(context->threads(), threads);
  TensorMap inputs = random_inputs(graph, 7, 12.0f);
  std::vector<ConstTensorBinding> in;
  for (const auto& [name, tensor] : inputs) in.push_back({name, tensor.raw_data(), tensor.shape()});
  auto start = std::chrono::steady_clock::now();
  Status status = context->run(in, {});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(status.is_ok()) << status.message();
  EXPECT_LT(seconds, 1.0) << threads << " threads on " << std::thread::hardware_concurrency() << " hardware threads";

  // A count beyond the limit is clamped by the engine (the CLI and Python refuse it first).
  EXPECT_EQ(engine->create_context({.threads = 100000})->threads(), threads);
  EXPECT_FALSE(engine::check_context_threads(threads + 1).is_ok());
  EXPECT_FALSE(engine::check_context_threads(-1).is_ok());
  EXPECT_TRUE(engine::check_context_threads(0).is_ok());
}

TEST(EngineCore, SmallerBatchesRunOnABatchedEngine) {
  Graph graph = parse_graph(kQdqText);
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->max_batch(), 4);
  for (int64_t batch : {1, 2, 3}) {
    Graph small = parse_graph(kQdqText);
    TensorMap inputs;
    Tensor x(DataType::kFloat, {batch, 3, 5, 7});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 97) * 0.13f - 6.0f;
    inputs["x"] = x;
    auto expected = run_reference(small, inputs);
    ASSERT_TRUE(expected.ok());
    expect_equal_tensors(*expected, run_engine(*engine, inputs, 2));
  }
}

TEST(EngineCore, BindingErrorsNameTheTensor) {
  Graph graph = parse_graph(kQdqText);
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  auto context = engine->create_context({.threads = 1});
  std::vector<float> x(4 * 3 * 5 * 7), y(x.size()), big(8 * 3 * 5 * 7);
  Status status = context->run({}, {});
  EXPECT_NE(status.message().find("input 'x' is not bound"), std::string::npos) << status.message();
  status = context->run({{"nope", x.data(), {4, 3, 5, 7}}}, {});
  EXPECT_NE(status.message().find("'nope' is not an input"), std::string::npos) << status.message();
  status = context->run({{"x", x.data(), {4, 3, 5, 6}}}, {});
  EXPECT_NE(status.message().find("does not match"), std::string::npos) << status.message();
  status = context->run({{"x", big.data(), {8, 3, 5, 7}}}, {});
  EXPECT_NE(status.message().find("1..4"), std::string::npos) << status.message();
  status = context->run({{"x", x.data(), {4, 3, 5, 7}}}, {{"y", y.data(), {2, 3, 5, 7}}});
  EXPECT_FALSE(status.is_ok());
  status = context->run({{"x", x.data(), {4, 3, 5, 7}}}, {{"y", y.data(), {4, 3, 5, 7}}});
  EXPECT_TRUE(status.is_ok()) << status.message();
}

TEST(EngineCore, ConcurrentContextsGiveTheSameOutputs) {
  Graph graph = parse_graph(kQdqText);
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  TensorMap inputs = random_inputs(graph, 11, 12.0f);
  TensorMap single = run_engine(*engine, inputs);
  std::vector<TensorMap> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 5; ++repeat) results[t] = run_engine(*engine, inputs, 1 + static_cast<int>(t % 2));
    });
  }
  for (auto& thread : threads) thread.join();
  for (const TensorMap& result : results) expect_equal_tensors(single, result);
}

// Runs read denormal floats as zero and write none (FTZ, DAZ) unless the context keeps them; the
// caller's thread mode is the same after the run.
TEST(EngineCore, DenormalsAreZeroUnlessTheContextKeepsThem) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,65536] x) => (float[2,65536] y)
    {
      y = Add(x, x)
    })");
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  const float denormal = 1e-39f;  // below FLT_MIN
  std::vector<float> x(2 * 65536, denormal), y(x.size(), -1.0f);
  x[1] = 1.5f;
  constexpr unsigned kStatusFlags = 0x3f;  // sticky exception flags, not the mode
  const unsigned caller_mode = _mm_getcsr() & ~kStatusFlags;
  for (int threads : {1, 2}) {
    for (bool flush : {true, false}) {
      SCOPED_TRACE(fmt::format("threads {}, flush {}", threads, flush));
      auto context = engine->create_context({.threads = threads, .profiling = false, .flush_denormals = flush});
      ASSERT_TRUE(context->run({{"x", x.data(), {2, 65536}}}, {{"y", y.data(), {2, 65536}}}).is_ok());
      EXPECT_EQ(y[1], 3.0f);
      for (size_t i : {size_t{0}, size_t{70000}, y.size() - 1}) EXPECT_EQ(y[i], flush ? 0.0f : 2 * denormal) << i;
      EXPECT_EQ(_mm_getcsr() & ~kStatusFlags, caller_mode);
    }
  }
}

TEST(EngineCore, ProfilingRecordsEveryLayer) {
  Graph graph = parse_graph(kQdqText);
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  auto context = engine->create_context({.threads = 1, .profiling = true});
  std::vector<float> x(4 * 3 * 5 * 7, 1.0f);
  ASSERT_TRUE(context->run({{"x", x.data(), {4, 3, 5, 7}}}, {}).is_ok());
  ASSERT_EQ(context->last_layer_times_ms().size(), engine->plan().layers.size());
  for (double ms : context->last_layer_times_ms()) EXPECT_GE(ms, 0.0);
}

TEST(EngineCore, MemoryPlanReusesDeadBuffers) {
  engine::EnginePlan plan;
  auto add = [&](int64_t bytes) {
    engine::PlanTensor tensor;
    tensor.name = fmt::format("t{}", plan.tensors.size());
    tensor.dtype = DataType::kUint8;
    tensor.shape = {bytes};
    tensor.bytes = bytes;
    plan.tensors.push_back(tensor);
    return static_cast<int32_t>(plan.tensors.size() - 1);
  };
  // A chain a -> b -> c -> d: a and c may share, b and d may share.
  int32_t a = add(1000), b = add(1000), c = add(1000), d = add(1000);
  auto layer = [&](int32_t in, int32_t out) {
    engine::PlanLayer l;
    l.name = fmt::format("l{}", plan.layers.size());
    if (in >= 0) l.inputs = {in};
    l.outputs = {out};
    plan.layers.push_back(l);
  };
  layer(-1, a);
  layer(a, b);
  layer(b, c);
  layer(c, d);
  ASSERT_TRUE(engine::plan_memory(plan).is_ok());
  EXPECT_EQ(plan.arena_bytes, 2 * 1024);
  EXPECT_EQ(plan.tensors[a].arena_offset, plan.tensors[c].arena_offset);
  EXPECT_NE(plan.tensors[a].arena_offset, plan.tensors[b].arena_offset);
  EXPECT_NE(plan.tensors[c].arena_offset, plan.tensors[d].arena_offset);
  for (const auto& tensor : plan.tensors) EXPECT_EQ(tensor.arena_offset % 64, 0);
}

TEST(EngineCore, ConstantInputsAndFoldedNodes) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,6] x) => (float[2,6] y, int8[6] c)
    <float s = {0.5}, int8 zp = {0}, float[6] w = {1, 2, 3, 4, 5, 6}>
    {
      c = QuantizeLinear(w, s, zp)
      q = QuantizeLinear(x, s, zp)
      y = DequantizeLinear(q, s, zp)
    })");
  auto engine = build_or_fail(graph);
  ASSERT_TRUE(engine);
  TensorMap inputs = random_inputs(graph, 5, 70.0f);
  auto expected = run_reference(graph, inputs);
  ASSERT_TRUE(expected.ok());
  expect_equal_tensors(*expected, run_engine(*engine, inputs));
}

TEST(EngineCore, UnknownInputShapeIsAClearError) {
  auto built = Engine::build_from_file("/nonexistent/model.onnx", {});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("model.onnx"), std::string::npos) << built.status().message();
}

}  // namespace
}  // namespace qdqrt::testing
