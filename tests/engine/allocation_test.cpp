// "No heap allocation inside run() after the first call": this binary counts every operator new
// and malloc while a context runs an engine.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "engine/engine.h"
#include "tests/common/allocation_counter.h"
#include "parser/onnx_loader.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

// Runs `graph` a few times and returns the allocations of the runs after the first.
int64_t allocations_after_first_run(const Graph& graph, int threads,
                                    Result<std::shared_ptr<const engine::Engine>> engine) {
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  if (!engine.ok()) return -1;
  auto context = (*engine)->create_context({.threads = threads, .profiling = true});
  TensorMap inputs = random_inputs(graph, 3, 4.0f);
  std::vector<engine::ConstTensorBinding> bindings;
  for (const auto& [name, tensor] : inputs) bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  std::vector<Tensor> outputs;
  std::vector<engine::TensorBinding> output_bindings;
  for (const auto& info : (*engine)->outputs()) outputs.emplace_back(info.dtype, info.shape);
  size_t index = 0;
  for (const auto& info : (*engine)->outputs()) {
    output_bindings.push_back({info.name, outputs[index].raw_data(), info.shape});
    ++index;
  }
  EXPECT_TRUE(context->run(bindings, output_bindings).is_ok());
  start_counting_allocations();
  for (int i = 0; i < 5; ++i) {
    Status status = context->run(bindings, output_bindings);
    if (!status.is_ok()) ADD_FAILURE() << status.message();
  }
  return stop_counting_allocations();
}

const char* kGraph = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[8,16,64,64] x) => (float[8,16,64,64] y)
  <float s = {0.05}, int8 zp = {3}>
  {
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
  })";

TEST(EngineAllocations, RunDoesNotAllocateAfterTheFirstCall) {
  Graph graph = parse_graph(kGraph);
  EXPECT_EQ(allocations_after_first_run(graph, 1, engine::Engine::build(graph, {})), 0);
  EXPECT_EQ(allocations_after_first_run(graph, 2, engine::Engine::build(graph, {})), 0);
}

// Broadcast binary layers over short rows (one value per row, one row of values per row) walk
// their rows with a cursor: it must not allocate either.
TEST(EngineAllocations, BroadcastRowsDoNotAllocate) {
  Graph graph = parse_graph(
      "<ir_version: 8, opset_import: [\"\" : 13]>\n"
      "g (float[2,3,5,32] x, float[2,3,5,1] n) => (float[2,3,5,32] y)\n"
      "<float[32] m = " + literal(32, 5, -1.0f, 1.0f) + ">\n"
      "{\n  d = Div(x, n)\n  y = Sub(d, m)\n}\n");
  EXPECT_EQ(allocations_after_first_run(graph, 1, engine::Engine::build(graph, {})), 0);
  EXPECT_EQ(allocations_after_first_run(graph, 2, engine::Engine::build(graph, {})), 0);
}

TEST(EngineAllocations, TheShippedModelDoesNotAllocateAfterTheFirstCall) {
  const std::string path = std::string(QDQRT_SOURCE_ROOT_DIR) + "/models/fmnist_resnet_qdq.onnx";
  for (int64_t batch : {1, 8}) {
    engine::BuildOptions options;
    options.input_shapes["input"] = {batch, 1, 28, 28};
    LoadOptions load;
    load.input_shapes = options.input_shapes;
    auto graph = load_onnx_file(path, load);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    for (int threads : {1, 2}) {
      EXPECT_EQ(allocations_after_first_run(*graph, threads, engine::Engine::build_from_file(path, options)), 0)
          << "batch " << batch << ", " << threads << " threads";
    }
  }
}

TEST(EngineAllocations, TheCounterSeesAllocations) {
  start_counting_allocations();
  auto* vector = new std::vector<int>(100);
  int64_t seen = stop_counting_allocations();
  delete vector;
  EXPECT_GE(seen, 1);
}

}  // namespace
}  // namespace qdqrt::testing
