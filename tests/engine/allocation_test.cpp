// "No heap allocation inside run() after the first call": this binary counts every operator new
// and malloc while a context runs an engine.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "engine/engine.h"
#include "tests/optimizer_passes/pass_test_util.h"

extern "C" void* __libc_malloc(size_t size);
extern "C" void* __libc_calloc(size_t count, size_t size);
extern "C" void* __libc_realloc(void* pointer, size_t size);
extern "C" void* __libc_memalign(size_t alignment, size_t size);

namespace {
std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};
void count() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

#if !defined(__SANITIZE_ADDRESS__)
extern "C" void* malloc(size_t size) {
  count();
  return __libc_malloc(size);
}
extern "C" void* calloc(size_t n, size_t size) {
  count();
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* pointer, size_t size) {
  count();
  return __libc_realloc(pointer, size);
}
extern "C" void* aligned_alloc(size_t alignment, size_t size) {
  count();
  return __libc_memalign(alignment, size);
}
#endif
void* operator new(size_t size) {
  count();
  if (void* p = __libc_malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) {
  count();
  if (void* p = __libc_malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace qdqrt::testing {
namespace {

// Runs `graph` a few times and returns the allocations of the runs after the first.
int64_t allocations_after_first_run(const Graph& graph, int threads) {
  auto engine = engine::Engine::build(graph, {});
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
  allocations = 0;
  counting = true;
  for (int i = 0; i < 5; ++i) {
    Status status = context->run(bindings, output_bindings);
    if (!status.is_ok()) ADD_FAILURE() << status.message();
  }
  counting = false;
  return allocations.load();
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
  EXPECT_EQ(allocations_after_first_run(graph, 1), 0);
  EXPECT_EQ(allocations_after_first_run(graph, 2), 0);
}

TEST(EngineAllocations, TheCounterSeesAllocations) {
  allocations = 0;
  counting = true;
  auto* leak_check = new std::vector<int>(100);
  counting = false;
  delete leak_check;
  EXPECT_GE(allocations.load(), 1);
}

}  // namespace
}  // namespace qdqrt::testing
