// "No heap allocation inside run() after the first call" for the INT8 layers: this file counts
// every operator new and malloc of the test binary while a context runs an engine of INT8 layers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include <fmt/format.h>

#include "engine/engine.h"
#include "kernels/cpu_features.h"
#include "tests/common/allocation_counter.h"
#include "tests/optimizer_fusion/fusion_test_util.h"


namespace qdqrt::testing {
namespace {

// Every INT8 layer kind between a QuantizeLinear and DequantizeLinears, batch 4.
std::string int8_chain(std::mt19937& rng) {
  std::vector<std::string> init = {
      "float s = {0.05}", "int8 z = {0}", "float ys = {0.04}",
      int_initializer("int8", "w", {32, 8, 3, 3}, -127, 127, rng), "float[32] ws = " + std::string("{") +
          [] { std::string v; for (int i = 0; i < 32; ++i) v += (i ? ", " : "") + std::string("0.004"); return v; }() + "}",
      int_initializer("int8", "wz", {32}, 0, 0, rng),
      int_initializer("int8", "fc", {64, 40}, -127, 127, rng), "float fs = {0.01}", "int8 fz = {0}",
      "int64[3] shape = {0, 64, 64}",
      "int8[4,32,16,16] c", "int8[4,32,16,16] l", "int8[4,32,16,16] m", "int8[4,64,16,16] k", "int8[4,64,8,8] p",
      "int8[4,64,8,8] a", "int8[4,64,1,1] g", "int8[4,64] f", "int8[4,64,64] r", "int8[4,64,64] b", "int8[4,64,64] t",
      "int8[4,64,40] e"};
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17, \"qdqrt\" : 1]>\n"
                     "g (float[4,8,16,16] x) => (float[4,64,40] out, float[4,64,64] att, float[4,64] pooled)\n<";
  for (size_t i = 0; i < init.size(); ++i) text += (i ? ", " : "") + init[i];
  text += ">\n{\n"
          "q = QuantizeLinear(x, s, z)\n"
          "c = qdqrt.QConv <pads = [1, 1, 1, 1], activation = \"Relu\", fused_nodes = [\"conv\"]> "
          "(q, s, z, w, ws, wz, , ys, z)\n"
          "l = qdqrt.QLookup <function = \"Sigmoid\", fused_nodes = [\"sig\"]> (c, ys, z, ys, z)\n"
          "m = qdqrt.QMul <fused_nodes = [\"mul\"]> (c, ys, z, l, s, z, ys, z)\n"  // l read with another scale: stays a QMul
          "k = qdqrt.QConcat <axis = 1, fused_nodes = [\"cat\"]> (ys, z, c, ys, z, m, s, z)\n"
          "p = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (k)\n"
          "a = qdqrt.QAveragePool <kernel_shape = [3, 3], pads = [1, 1, 1, 1], fused_nodes = [\"avg\"]> "
          "(p, ys, z, ys, z)\n"
          "g = qdqrt.QGlobalAveragePool <fused_nodes = [\"gap\"]> (a, ys, z, ys, z)\n"
          "f = Flatten(g)\n"
          "pooled = DequantizeLinear(f, ys, z)\n"
          "r = Reshape(a, shape)\n"
          "e = qdqrt.QMatMul <fused_nodes = [\"fc\"]> (r, ys, z, fc, fs, fz, , ys, z)\n"
          "out = DequantizeLinear(e, ys, z)\n"
          "t = Transpose <perm = [0, 2, 1]> (r)\n"
          "b = qdqrt.QMatMul <fused_nodes = [\"att\"]> (r, ys, z, t, ys, z, , ys, z)\n"
          "att = DequantizeLinear(b, ys, z)\n"
          "}\n";
  return text;
}

int64_t allocations_after_first_run(const engine::Engine& engine, int threads, int64_t batch) {
  auto context = engine.create_context({.threads = threads, .profiling = true});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  // The engine's single float input "x", at this batch.
  EXPECT_EQ(engine.inputs().size(), 1u);
  Tensor x(DataType::kFloat, engine.inputs().at(0).shape_at_batch(batch));
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  std::vector<engine::ConstTensorBinding> inputs = {{"x", x.raw_data(), x.shape()}};
  std::vector<Tensor> outputs;
  for (const auto& info : engine.outputs()) {
    Shape shape = info.shape;
    if (info.batched) shape[0] = batch;
    outputs.emplace_back(info.dtype, shape);
  }
  std::vector<engine::TensorBinding> bindings;
  size_t index = 0;
  for (const auto& info : engine.outputs()) {
    bindings.push_back({info.name, outputs[index].raw_data(), outputs[index].shape()});
    ++index;
  }
  // One call, then none may allocate: the runtime grows every arena thread's kernel scratch
  // (kernels/scratch.h) after the first run, so a thread meeting a layer later finds it sized.
  Status first = context->run(inputs, bindings);
  EXPECT_TRUE(first.is_ok()) << first.to_string();
  start_counting_allocations();
  for (int i = 0; i < 5; ++i) {
    Status status = context->run(inputs, bindings);
    if (!status.is_ok()) ADD_FAILURE() << status.to_string();
  }
  return stop_counting_allocations();
}

TEST(Int8Allocations, RunDoesNotAllocateAfterTheFirstCall) {
  std::mt19937 rng(1);
  Graph graph = load_text(int8_chain(rng));
  // Without shared buffers the Reshape stays an int8_reshape layer (else a view, no layer at all).
  engine::BuildOptions options;
  options.share_buffers = false;
  auto built = engine::Engine::build(graph, options);
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  std::vector<std::string> kinds;
  for (const auto& layer : (*built)->plan().layers) kinds.push_back(layer.kind);
  for (const char* kind : {"qconv", "qlut", "qbinary", "qconcat", "qmaxpool", "qavgpool", "qgavgpool", "int8_reshape",
                           "qmatmul", "int8_transpose", "qbatched_matmul"}) {
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end()) << kind << " not in the plan";
  }
  for (int threads : {1, 2}) {
    for (int64_t batch : {4, 1}) {
      EXPECT_EQ(allocations_after_first_run(**built, threads, batch), 0) << threads << " threads, batch " << batch;
    }
  }
}

// A batched MatMul of two activations on AMX with a depth that is not a whole number of 64-byte
// tile steps (k = 112 of 128: AMX by gemm_isa_for_shape): B is packed at run time into the
// thread's scratch with k padded to whole steps, so the plan must reserve that much; a scratch
// sized for the 4-byte k groups only would make pack_gemm grow it inside run(). Emulated tiles
// where the CPU has no AMX.
TEST(Int8Allocations, AmxBatchedMatMulOfARaggedDepthDoesNotAllocate) {
  if (!kernels::isa_supported(kernels::Isa::kAvx512Vnni)) {
    GTEST_SKIP() << "this CPU lacks AVX-512 VNNI, which the AMX kernels (and their emulation) need";
  }
  // Emulated tiles for this test only (restored however it ends).
  struct EmulationScope {
    bool before = kernels::amx_emulation();
    ~EmulationScope() { kernels::set_amx_emulation(before); }
  } emulation;
  if (!kernels::isa_supported(kernels::Isa::kAmxInt8)) kernels::set_amx_emulation(true);
  if (kernels::active_isa() != kernels::Isa::kAmxInt8) {
    GTEST_SKIP() << "the kernels are limited below AMX here (QDQRT_MAX_ISA=" << kernels::isa_name(kernels::active_isa())
                 << ")";
  }
  const std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17, \"qdqrt\" : 1]>\n"
      "g (float[4,112,64] x) => (float[4,64,64] out)\n"
      "<float s = {0.05}, int8 z = {0}, float ys = {0.5}, int8[4,112,64] q, int8[4,64,112] t, int8[4,64,64] b>\n"
      "{\n"
      "q = QuantizeLinear(x, s, z)\n"
      "t = Transpose <perm = [0, 2, 1]> (q)\n"
      "b = qdqrt.QMatMul <fused_nodes = [\"mm\"]> (t, s, z, q, s, z, , ys, z)\n"
      "out = DequantizeLinear(b, ys, z)\n"
      "}\n";
  Graph graph = load_text(text);
  auto built = engine::Engine::build(graph, engine::BuildOptions{});
  ASSERT_TRUE(built.ok()) << built.status().to_string();
  int amx_matmuls = 0;
  for (const auto& layer : (*built)->plan().layers) {
    auto isa = layer.params.get_string("isa");
    amx_matmuls += layer.kind == "qbatched_matmul" && isa.ok() && *isa == "amxint8";
  }
  EXPECT_EQ(amx_matmuls, 1) << "the k = 112 batched MatMul should run on AMX";
  for (int threads : {1, 2}) {
    for (int64_t batch : {4, 1}) {
      EXPECT_EQ(allocations_after_first_run(**built, threads, batch), 0) << threads << " threads, batch " << batch;
    }
  }
}

}  // namespace
}  // namespace qdqrt::testing
