// "No heap allocation inside run() after the first call" for the native float layers: this binary
// counts every operator new and malloc while a context runs an engine of float layers (every
// native kind, and convolutions / GEMMs big enough for the GEMM's blocked path).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#include "engine/engine.h"
#include "kernels/bf16/bf16_gemm.h"
#include "tests/common/allocation_counter.h"
#include "tests/engine_float/float_cases.h"
#include "tests/engine_float/harness.h"


namespace qdqrt::testing {
namespace {

int64_t allocations_after_first_run(const std::string& text, int threads,
                                    kernels::Isa max_isa = kernels::Isa::kAvx512Vnni, bool bf16 = false) {
  auto graph = load_text_graph(text, 2);
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  if (!graph.ok()) return -1;
  engine::BuildOptions options;
  options.max_isa = max_isa;
  options.bf16 = bf16;
  auto engine = engine::Engine::build(*graph, options);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return -1;
  if (bf16) {
    const auto& layers = (*engine)->layers();
    EXPECT_TRUE(std::any_of(layers.begin(), layers.end(), [](const auto& layer) { return layer.kind == "bf16_gemm"; }));
  }
  for (const auto& layer : (*engine)->layers()) EXPECT_NE(layer.kind, "reference") << layer.name;
  auto context = (*engine)->create_context({.threads = threads});
  TensorMap inputs = random_inputs(*graph, 2, 3);
  std::vector<engine::ConstTensorBinding> bindings;
  for (const auto& [name, tensor] : inputs) bindings.push_back({name, tensor.raw_data(), tensor.shape()});
  std::vector<Tensor> outputs;
  std::vector<engine::TensorBinding> output_bindings;
  for (const auto& info : (*engine)->outputs()) outputs.emplace_back(info.dtype, info.shape);
  for (size_t i = 0; i < outputs.size(); ++i) {
    output_bindings.push_back({(*engine)->outputs()[i].name, outputs[i].raw_data(), outputs[i].shape()});
  }
  EXPECT_TRUE(context->run(bindings, output_bindings).is_ok());
  start_counting_allocations();
  for (int i = 0; i < 3; ++i) {
    Status status = context->run(bindings, output_bindings);
    if (!status.is_ok()) ADD_FAILURE() << status.message();
  }
  return stop_counting_allocations();
}

TEST(FloatAllocations, EveryNativeKind) {
  EXPECT_EQ(allocations_after_first_run(all_kinds_model(), 1), 0);
  EXPECT_EQ(allocations_after_first_run(all_kinds_model(), 2), 0);
}

TEST(FloatAllocations, LargeConvolutionsAndGemm) {
  // im2col GEMMs with K = 1152, a pointwise conv over 1024 pixels, a 640 -> 1000 FC.
  const std::string text = model(13, "g (float[N,128,32,32] x) => (float y)",
                                 {weights("w1", {64, 128, 3, 3}), weights("w2", {640, 64, 1, 1}),
                                  weights("fc", {1000, 640})},
                                 "a = Conv<pads=[1,1,1,1]>(x, w1)\nb = Conv(a, w2)\nc = GlobalAveragePool(b)\n"
                                 "f = Flatten(c)\ny = Gemm<transB=1>(f, fc)");
  EXPECT_EQ(allocations_after_first_run(text, 1), 0);
  EXPECT_EQ(allocations_after_first_run(text, 2), 0);
  // The AVX2 build of the GEMM blocks differently.
  EXPECT_EQ(allocations_after_first_run(text, 1, kernels::Isa::kAvx2), 0);
}

// The bf16 GEMMs (BuildOptions::bf16) convert A into the layer's scratch: no allocation either, on
// AMX tiles and with AVX512_BF16.
TEST(FloatAllocations, Bf16Gemms) {
  if (!kernels::bf16_gemm_usable()) GTEST_SKIP() << "no bf16 kernels here (" << kernels::bf16_gemm_unavailable_reason() << ")";
  const std::string text = model(13, "g (float[N,40,600] x) => (float y)",
                                 {weights("w", {600, 45}), weights("v", {45, 70})},
                                 "h = MatMul(x, w)\ny = MatMul(h, v)");
  for (kernels::Isa isa : {kernels::Isa::kAmxInt8, kernels::Isa::kAvx512Vnni}) {
    EXPECT_EQ(allocations_after_first_run(text, 1, isa, true), 0) << kernels::isa_name(isa);
    EXPECT_EQ(allocations_after_first_run(text, 2, isa, true), 0) << kernels::isa_name(isa);
  }
}

}  // namespace
}  // namespace qdqrt::testing
