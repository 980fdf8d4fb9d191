// Plans that pass the engine file's checksum but are not a program the engine can run are refused
// by Engine::from_plan (engine/plan_validation.h), memory a plan asks for that cannot be had is a
// Status, and a layer failing at run time fails the run with the layer named.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/plan_validation.h"
#include "kernels/cpu_features.h"
#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

using engine::Engine;
using engine::EnginePlan;

// x -> QuantizeLinear -> (activation) -> QConv (int8, packed weights) -> DequantizeLinear -> y.
const char* kConvText = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,8,6,6] x) => (float[1,16,6,6] y)
  <float s = {0.05}, int8 zp = {0}, float ws = {0.01}, int8 wzp = {0}, float s2 = {0.1},
   int8[16,8,1,1] w = {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,
                       1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,
                       1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,
                       1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}>
  {
    q = QuantizeLinear(x, s, zp)
    xd = DequantizeLinear(q, s, zp)
    wd = DequantizeLinear(w, ws, wzp)
    c = Conv(xd, wd)
    cq = QuantizeLinear(c, s2, zp)
    y = DequantizeLinear(cq, s2, zp)
  })";

// x -> QuantizeLinear -> (activation) -> DequantizeLinear -> y: border layers that take any size.
const char* kQdqText = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[1,8,6,6] x) => (float[1,8,6,6] y)
  <float s = {0.05}, int8 zp = {0}>
  {
    q = QuantizeLinear(x, s, zp)
    y = DequantizeLinear(q, s, zp)
  })";

EnginePlan built_plan(const char* text, kernels::Isa isa = kernels::Isa::kAvx512Vnni) {
  engine::BuildOptions options;
  options.max_isa = isa;
  auto engine = Engine::build(parse_graph(text), options);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? (*engine)->plan() : EnginePlan{};
}

void expect_refused(const EnginePlan& plan, const std::string& part) {
  auto engine = Engine::from_plan(plan);
  ASSERT_FALSE(engine.ok()) << "accepted; wanted a refusal with: " << part;
  EXPECT_NE(engine.status().message().find(part), std::string::npos) << engine.status().message();
}

TEST(PlanValidation, TheBuiltPlanBinds) {
  EnginePlan plan = built_plan(kConvText);
  ASSERT_GE(plan.layers.size(), 2u);
  EXPECT_TRUE(Engine::from_plan(plan).ok());
  EXPECT_TRUE(engine::validate_plan(plan).is_ok());
}

TEST(PlanValidation, LayersOutOfOrderAreRefused) {
  EnginePlan plan = built_plan(kConvText);
  std::reverse(plan.layers.begin(), plan.layers.end());
  expect_refused(plan, "before any layer writes it");
}

TEST(PlanValidation, APlanWithoutLayersIsRefused) {
  EnginePlan plan = built_plan(kConvText);
  plan.layers.clear();
  plan.scratch_bytes_per_thread = 0;
  expect_refused(plan, "no layer writes the output 'y'");
}

TEST(PlanValidation, ATensorWrittenTwiceIsRefused) {
  EnginePlan plan = built_plan(kConvText);
  plan.layers.push_back(plan.layers.back());
  expect_refused(plan, "which an earlier layer wrote");
}

// Found by the plan fuzzer: a tensor marked as an output but not listed as one had no memory, and
// the layer writing it stored through a null pointer.
TEST(PlanValidation, InputsAndOutputsAreListedExactlyOnce) {
  EnginePlan plan = built_plan(kConvText);
  const int32_t activation = plan.layers[0].outputs[0];
  ASSERT_EQ(plan.tensors[static_cast<size_t>(activation)].kind, engine::TensorKind::kActivation);
  EnginePlan unlisted_output = plan;
  unlisted_output.tensors[static_cast<size_t>(activation)].kind = engine::TensorKind::kOutput;
  expect_refused(unlisted_output, "is an output but listed 0 times");
  EnginePlan twice = plan;
  twice.outputs.push_back(twice.outputs[0]);
  expect_refused(twice, "listed 2 times");
}

TEST(PlanValidation, KernelsAboveThePlansIsaAreRefused) {
  EnginePlan plan = built_plan(kConvText);
  plan.isa = "scalar";
  plan.cpu_features.clear();
  plan.layers[0].kernel = "qs8-qc8w-gemm-6x64c4-fp32-avx512vnni";
  expect_refused(plan, "needs more than the plan's ISA scalar");
  EXPECT_EQ(engine::kernel_isa_level("x8-copy"), -1);
  EXPECT_EQ(engine::kernel_isa_level("x8-lut-avx512vbmi"), 3);
  EXPECT_EQ(engine::kernel_isa_level("qs8-vadd-minmax-avx2"), 1);
}

// "scalar" in the ISA field over weights packed for AVX-512 ran the AVX-512 kernels anyway.
TEST(PlanValidation, WeightsPackedAboveThePlansIsaAreRefused) {
  if (kernels::active_isa() < kernels::Isa::kAvx2) GTEST_SKIP() << "needs a CPU above scalar";
  EnginePlan plan = built_plan(kConvText, kernels::active_isa());
  plan.isa = "scalar";
  plan.cpu_features.clear();
  for (auto& layer : plan.layers) layer.kernel = "reference";  // past the kernel-name check, to bind
  expect_refused(plan, "above the plan's ISA scalar");
}

TEST(PlanValidation, SizesBeyondWhatTheLayersNeedAreRefused) {
  EnginePlan plan = built_plan(kConvText);
  EnginePlan huge_arena = plan;
  huge_arena.arena_bytes = int64_t{1} << 50;
  expect_refused(huge_arena, "the arena is 1125899906842624 bytes, its tensors need");
  EnginePlan huge_scratch = plan;
  huge_scratch.scratch_bytes_per_thread = int64_t{1} << 50;
  expect_refused(huge_scratch, "the per-thread scratch is 1125899906842624 bytes");
}

// Memory a plan's tensors need that cannot be allocated is the Status of the run, not bad_alloc.
TEST(PlanValidation, MemoryThatCannotBeHadIsAStatus) {
  EnginePlan plan = built_plan(kQdqText);
  // Every tensor 2^30 times longer along its last dim: the arena needs terabytes.
  int64_t arena_end = 0;
  for (auto& tensor : plan.tensors) {
    tensor.shape.back() <<= 30;
    tensor.bytes <<= 30;
    if (tensor.kind == engine::TensorKind::kActivation) {
      tensor.arena_offset <<= 30;
      arena_end = std::max(arena_end, tensor.arena_offset + tensor.bytes);
    }
  }
  plan.arena_bytes = (arena_end + 63) / 64 * 64;
  auto engine = Engine::from_plan(plan);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto context = (*engine)->create_context({.threads = 1});
  std::vector<float> x(1);
  Status status = context->run({{"x", x.data(), {1, 8, 6, int64_t{6} << 30}}}, {});
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("not enough memory: "), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("bytes for the activation arena"), std::string::npos) << status.message();
}

// Static dims of 2^62 bytes per value (two alive at once: 2^63 of arena) are refused by the
// builder's memory plan, with the value named, instead of wrapping into negative offsets (UBSan:
// signed overflow).
TEST(PlanValidation, TheBuilderRefusesValuesTooLargeToAddress) {
  auto engine = Engine::build(parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1073741824,1073741824] x) => (float[1073741824,1073741824] y)
    {
      r1 = Relu(x)
      r2 = Neg(x)
      y = Add(r1, r2)
    })"),
                              {});
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("needs more than"), std::string::npos) << engine.status().message();
}

// A layer that fails at run time (here a reference Gather with an index out of range) fails the
// run with a Status naming the layer; its outputs are not returned as if valid.
TEST(PlanValidation, ALayerFailingAtRunTimeFailsTheRunNamingIt) {
  auto engine = Engine::build(parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,10] x, int64[1] i) => (float[1,1] y)
    {
      y = Gather <axis = 1> (x, i)
    })"),
                              {});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto context = (*engine)->create_context({.threads = 1});
  std::vector<float> x(10, 1.0f), y(1, 0.0f);
  std::vector<int64_t> index = {100};
  Status status = context->run({{"x", x.data(), {1, 10}}, {"i", index.data(), {1}}}, {{"y", y.data(), {1, 1}}});
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("failed at batch 1"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("100"), std::string::npos) << status.message();
  index[0] = 3;
  EXPECT_TRUE(context->run({{"x", x.data(), {1, 10}}, {"i", index.data(), {1}}}, {{"y", y.data(), {1, 1}}}).is_ok());
}

}  // namespace
}  // namespace qdqrt::testing
