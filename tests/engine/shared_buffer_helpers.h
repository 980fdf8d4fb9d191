// What the tests of the plan rewrites that share or skip copies (plan_aliases_test,
// plan_compose_copies_test) build and run: an engine from a graph with or without
// BuildOptions::share_buffers, run at a number of threads, and the count of a layer kind.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {

inline std::shared_ptr<const engine::Engine> build_engine(const Graph& graph, bool share_buffers) {
  engine::BuildOptions options;
  options.share_buffers = share_buffers;
  auto built = engine::Engine::build(graph, options);
  EXPECT_TRUE(built.ok()) << built.status().message();
  return built.ok() ? *built : nullptr;
}

// The engine's outputs on `inputs` (the batch is the first input's dim 0).
inline TensorMap run_engine(const engine::Engine& engine, const TensorMap& inputs, int threads) {
  auto context = engine.create_context({.threads = threads});
  std::vector<engine::ConstTensorBinding> in;
  for (const auto& [name, tensor] : inputs) in.push_back({name, tensor.raw_data(), tensor.shape()});
  const int64_t batch = inputs.empty() ? 1 : inputs.begin()->second.dim(0);
  TensorMap outputs;
  for (const auto& info : engine.outputs()) outputs[info.name] = Tensor(info.dtype, info.shape_at_batch(batch));
  std::vector<engine::TensorBinding> out;
  for (auto& [name, tensor] : outputs) out.push_back({name, tensor.raw_data(), tensor.shape()});
  Status status = context->run(in, out);
  EXPECT_TRUE(status.is_ok()) << status.message();
  return outputs;
}

inline int count_kind(const engine::EnginePlan& plan, const std::string& kind) {
  int count = 0;
  for (const auto& layer : plan.layers) count += layer.kind == kind ? 1 : 0;
  return count;
}

}  // namespace qdqrt::testing
