// One sample node per fused op (core/ops/fused_op_table.h) in ONNX text, its inputs' batch
// symbolic ("N"): the fused op table test walks each row's steps on it, the engine batch test builds
// an engine from it. Every input that is not a constant has the batch on dim 0.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_batchnorm.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "core/ops/fused_matmul.h"

namespace qdqrt::testing {

// One node of the op in ONNX text, its inputs' batch symbolic ("N"), and the output shape its
// shape function must give.
struct FusedOpSample {
  std::string text;
  std::string output_dims;
};

// "1,1,...,1": `count` int8 weights.
inline std::string sample_ones(int64_t count) {
  return fmt::format("{}", fmt::join(std::vector<int>(static_cast<size_t>(count), 1), ","));
}

inline constexpr const char* kFusedSampleHeader = R"(<ir_version: 8, opset_import: ["" : 13, "qdqrt" : 1]>)";

// A row added to the table needs a sample here: FusedOpTable.EveryRowWalksTheSteps
// (tests/optimizer_fusion/fused_op_table_test.cpp) fails without, and FusedLayerBatch
// (tests/engine_batch/fused_layer_batch_test.cpp) builds an engine from each.
inline const std::map<std::string, FusedOpSample>& fused_op_samples() {
  static const std::map<std::string, FusedOpSample> kSamples = {
      {layers::kQConv,
       {R"(g (int8[N,4,8,8] x) => (uint8[N,6,4,4] y)
<float xs = {0.5}, int8 xz = {0}, int8[6,2,3,3] w = {)" +
            sample_ones(6 * 2 * 3 * 3) + R"(},
 float ws = {0.1}, int8 wz = {0}, float[6] bias = {0,0,0,0,0,0},
 float ys = {0.3}, uint8 yz = {5}>
{
  y = qdqrt.QConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], fused_nodes = ["conv"]>
      (x, xs, xz, w, ws, wz, bias, ys, yz)
})",
        "[N, 6, 4, 4]"}},
      {layers::kFusedConv,
       {R"(g (float[N,4,5,5] x, float[N,6,5,5] r) => (float[N,6,5,5] y)
<float[6,2,3,3] w = {)" +
            sample_ones(6 * 2 * 3 * 3) + R"(}, float[6] bias = {0,1,0,-1,0,2}>
{
  y = qdqrt.FusedConv <group = 2, pads = [1, 1, 1, 1], activation = "Relu", fused_nodes = ["conv", "add", "relu"]>
      (x, w, bias, r)
})",
        "[N, 6, 5, 5]"}},
      {layers::kFusedMatMul,
       {R"(g (float[N,3,4] x) => (float[N,3,5] y)
<float[4,5] w = {)" +
            sample_ones(4 * 5) + R"(}, float[5] bias = {0,1,0,-1,2}>
{
  y = qdqrt.FusedMatMul <fused_nodes = ["matmul", "add"]> (x, w, bias)
})",
        "[N, 3, 5]"}},
      {layers::kFusedDepthwiseConv,
       {R"(g (float[N,8,6,6] x, float[N,5,6,6] r) => (float[N,5,6,6] y)
<float[8,8,1,1] ew = {)" +
            sample_ones(8 * 8) + R"(}, float[8,1,3,3] w = {)" + sample_ones(8 * 9) + R"(}, float[5,8,1,1] pw = {)" +
            sample_ones(5 * 8) + R"(}, float[5] pb = {0,1,0,-1,0}>
{
  y = qdqrt.FusedDepthwiseConv <group = 8, pads = [1, 1, 1, 1], activation = "Relu", expand_function = "SiLU",
      project_activation = "Clip", project_activation_min = 0.0, project_activation_max = 6.0,
      fused_nodes = ["expand", "depthwise", "project"], part_nodes = [1, 1, 1]> (x, ew, , w, , pw, pb, r)
})",
        "[N, 5, 6, 6]"}},
      {layers::kRowSumsGlobalAveragePool,
       {R"(g (float[N,3,4,5] x, float[N,4,3] sums) => (float[N,3,1,1] y)
{
  y = qdqrt.RowSumsGlobalAveragePool <fused_nodes = ["pool"]> (x, sums)
})",
        "[N, 3, 1, 1]"}},
      {layers::kFusedBatchNorm,
       {R"(g (float[N,2,3,4] a, float[N,3,3,4] b) => (float[N,5,3,4] y)
<float[5] s = {1, 2, 0.5, 1, 3}, float[5] bias = {0, 1, -1, 0.5, 0}, float[5] m = {0, 0.5, 1, -1, 0},
 float[5] v = {1, 2, 0.5, 1, 4}>
{
  y = qdqrt.FusedBatchNorm <fused_nodes = ["cat", "bn", "relu"], epsilon = 0.001, activation = "Relu"> (s, bias, m, v, a, b)
})",
        "[N, 5, 3, 4]"}},
      {layers::kQMatMul,
       {R"(g (int8[N,5,4] a) => (int8[N,5,3] y)
<float as = {0.5}, int8 az = {0}, int8[4,3] b = {1,2,3,4,5,6,7,8,9,1,2,3}, float bs = {0.1}, int8 bz = {0},
 float[3] bias = {0, 0, 0}, float ys = {0.3}, int8 yz = {0}>
{
  y = qdqrt.QMatMul <fused_nodes = ["matmul"]> (a, as, az, b, bs, bz, bias, ys, yz)
})",
        "[N, 5, 3]"}},
      {layers::kQAdd,
       {R"(g (int8[N,4,1] a, int8[N,4,3] b) => (int8[N,4,3] y)
<float s = {0.5}, int8 z = {0}, float ys = {0.3}, int8 yz = {0}>
{
  y = qdqrt.QAdd <fused_nodes = ["add"]> (a, s, z, b, s, z, ys, yz)
})",
        "[N, 4, 3]"}},
      {layers::kQMul,
       {R"(g (int8[N,4,3] a) => (int8[N,4,3] y)
<float s = {0.5}, int8 z = {0}, int8[3] b = {1, -2, 3}, float ys = {0.3}, int8 yz = {0}>
{
  y = qdqrt.QMul <fused_nodes = ["mul"]> (a, s, z, b, s, z, ys, yz)
})",
        "[N, 4, 3]"}},
      {layers::kQAveragePool,
       {R"(g (int8[N,3,8,8] x) => (int8[N,3,4,4] y)
<float s = {0.5}, int8 z = {0}>
{
  y = qdqrt.QAveragePool <kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1, fused_nodes = ["pool"]>
      (x, s, z, s, z)
})",
        "[N, 3, 4, 4]"}},
      {layers::kQGlobalAveragePool,
       {R"(g (int8[N,3,5,5] x) => (int8[N,3,1,1] y)
<float s = {0.5}, int8 z = {0}>
{
  y = qdqrt.QGlobalAveragePool <fused_nodes = ["pool"]> (x, s, z, s, z)
})",
        "[N, 3, 1, 1]"}},
      {layers::kQLookup,
       {R"(g (int8[N,7] x) => (int8[N,7] y)
<float s = {0.5}, int8 z = {0}>
{
  y = qdqrt.QLookup <function = "Sigmoid", fused_nodes = ["sigmoid"]> (x, s, z, s, z)
})",
        "[N, 7]"}},
      {layers::kQConcat,
       {R"(g (int8[N,2,4] a, int8[N,3,4] b) => (int8[N,5,4] y)
<float s = {0.5}, int8 z = {0}>
{
  y = qdqrt.QConcat <axis = 1, fused_nodes = ["concat"]> (s, z, a, s, z, b, s, z)
})",
        "[N, 5, 4]"}},
      {layers::kQRequantize,
       {R"(g (int8[N,6] x) => (uint8[N,6] y)
<float xs = {0.5}, int8 xz = {1}, float ys = {0.2}, uint8 yz = {100}>
{
  y = qdqrt.QRequantize <fused_nodes = ["q"]> (x, xs, xz, ys, yz)
})",
        "[N, 6]"}},
      {layers::kChannelGate,
       {R"(g (float[N,4,3,3] x, float[N,4,1,1] gate) => (uint8[N,4,3,3] y)
<float ys = {0.1}, uint8 yz = {128}>
{
  y = qdqrt.ChannelGate <fused_nodes = ["mul", "q"]> (x, gate, ys, yz)
})",
        "[N, 4, 3, 3]"}},
      {layers::kAddQuantize,
       {R"(g (float[N,4,3,3] a, float[N,4,3,3] b) => (uint8[N,4,3,3] y, float[N,4,3,3] sum)
<float ys = {0.1}, uint8 yz = {128}>
{
  y, sum = qdqrt.AddQuantize <fused_nodes = ["add", "relu", "q"], activation = "Relu"> (a, b, ys, yz)
})",
        "[N, 4, 3, 3]"}},
      {layers::kLayerNorm,
       {R"(g (float[N,5,4] x) => (int8[N,5,4] y)
<float[4] gamma = {1, 1, 1, 1}, float[4] beta = {0, 0, 0, 0}, float ys = {0.1}, int8 yz = {0}>
{
  y = qdqrt.LayerNorm <epsilon = 0.00001, fused_nodes = ["norm"]> (x, gamma, beta, ys, yz)
})",
        "[N, 5, 4]"}},
      {layers::kSoftmax,
       {R"(g (float[N,4,6] x) => (uint8[N,4,6] y)
<float ys = {0.004}, uint8 yz = {0}>
{
  y = qdqrt.Softmax <fused_nodes = ["softmax", "q"]> (x, ys, yz)
})",
        "[N, 4, 6]"}},
  };
  return kSamples;
}

}  // namespace qdqrt::testing
