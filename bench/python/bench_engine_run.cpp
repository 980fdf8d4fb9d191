// The C++ side of bench/python/python_overhead.py: ExecutionContext::run on one model at batch 1
// (the same calls an embedder makes), timed by Google Benchmark. The script runs this and the
// Python module on the same model and thread count and reports the difference.
//   qdqrt_bench_engine_run --model=M.onnx --threads=T [Google Benchmark flags]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace {

std::string model_path;
int threads = 1;

void engine_run_batch1(benchmark::State& state) {
  using namespace qdqrt;
  auto engine = engine::Engine::build_from_file(model_path, {});
  if (!engine.ok()) {
    state.SkipWithError(engine.status().to_string().c_str());
    return;
  }
  auto context = (*engine)->create_context({.threads = threads});
  std::vector<engine::IoTensorInfo> inputs = (*engine)->inputs();
  std::vector<engine::IoTensorInfo> outputs = (*engine)->outputs();
  std::vector<std::vector<float>> input_data, output_data;
  std::vector<engine::ConstTensorBinding> input_bindings;
  std::vector<engine::TensorBinding> output_bindings;
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (const engine::IoTensorInfo& info : inputs) {
    input_data.emplace_back(static_cast<size_t>(shape_numel(info.shape_at_batch(1))));
    for (float& value : input_data.back()) value = normal(rng);
    input_bindings.push_back({info.name, input_data.back().data(), info.shape_at_batch(1)});
  }
  for (const engine::IoTensorInfo& info : outputs) {
    output_data.emplace_back(static_cast<size_t>(shape_numel(info.shape_at_batch(1))));
    output_bindings.push_back({info.name, output_data.back().data(), info.shape_at_batch(1)});
  }
  for (auto _ : state) {
    Status status = context->run(input_bindings, output_bindings);
    if (!status.is_ok()) {
      state.SkipWithError(status.to_string().c_str());
      return;
    }
    benchmark::DoNotOptimize(output_data.front().data());
  }
}
BENCHMARK(engine_run_batch1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--model=", 8) == 0) {
      model_path = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "usage: %s --model=M.onnx [--threads=T] [benchmark flags]\n", argv[0]);
    return 2;
  }
  int rest_count = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_count, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
