// A video network's block (3-D convolutions, as torchvision's R3D / R(2+1)D export them) with a
// dynamic batch: the optimizer lowers each 3-D conv to a 2-D conv over the frames (lower_conv3d),
// whose tensors hold the batch on dim 0 with one slice per frame. The Conv layers (fp32 and INT8)
// take them: no reference layer, the engine follows the batch (built for 4 images, run 1 and 3 at a
// time, every image's output is bit-identical) and matches the reference executor.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "engine/engine.h"
#include "tests/engine_batch/batch_helpers.h"

namespace qdqrt::batch_testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxBatch = 4;

// Stem 3x7x7 (stride 1x2x2), a 3x3x3 conv with a residual Add, a (2+1)-D pair (1x3x3 then 3x1x1),
// a 1x1x1 downsample of stride 2 and the global average pool: [N, 3, 4, 16, 16] -> [N, 8].
std::string video_text(bool quantized) {
  // Between Q/DQ as pytorch-quantization exports it: each conv input and weight quantized.
  auto q = [&](const std::string& value) {
    if (!quantized) return value;
    return "dq_" + value;
  };
  std::string body;
  auto quantize = [&](const std::string& value) {
    if (quantized) body += "  q_" + value + " = QuantizeLinear(" + value + ", s, z)\n  dq_" + value +
                           " = DequantizeLinear(q_" + value + ", s, z)\n";
  };
  auto weight = [&](const std::string& name) {
    if (!quantized) return name;
    body += "  " + name + "_q = QuantizeLinear(" + name + ", ws, wz)\n  " + name + "_dq = DequantizeLinear(" + name +
            "_q, ws, wz)\n";
    return name + "_dq";
  };
  quantize("x");
  body += "  stem = Conv<kernel_shape = [3, 7, 7], strides = [1, 2, 2], pads = [1, 3, 3, 1, 3, 3]>(" + q("x") + ", " +
          weight("w_stem") + ", b_stem)\n  a = Relu(stem)\n";
  quantize("a");
  body += "  c1 = Conv<kernel_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]>(" + q("a") + ", " + weight("w1") +
          ", b1)\n  r = Add(c1, a)\n  b = Relu(r)\n";
  quantize("b");
  body += "  sp = Conv<kernel_shape = [1, 3, 3], pads = [0, 1, 1, 0, 1, 1]>(" + q("b") + ", " + weight("w_sp") +
          ", b_sp)\n  c = Relu(sp)\n";
  quantize("c");
  body += "  tm = Conv<kernel_shape = [3, 1, 1], pads = [1, 0, 0, 1, 0, 0]>(" + q("c") + ", " + weight("w_tm") +
          ", b_tm)\n  d = Relu(tm)\n";
  quantize("d");
  body += "  ds = Conv<kernel_shape = [1, 1, 1], strides = [2, 2, 2]>(" + q("d") + ", " + weight("w_ds") +
          ")\n  p = GlobalAveragePool(ds)\n  y = Flatten(p)\n";
  std::string constants = quantized ? "float s = {0.05}, int8 z = {0}, float ws = {0.01}, int8 wz = {0}" : "";
  return R"(<ir_version: 8, opset_import: ["" : 13]>
video (float[N,3,4,16,16] x) => (float[N,8] y)
)" + (constants.empty() ? std::string() : "<" + constants + ">\n") +
         "{\n" + body + "}\n";
}

// The plan's layer kinds, counted, after checking it runs at every batch without reference layers.
std::map<std::string, int> kinds_of_a_batch_engine(const engine::EnginePlan& plan) {
  EXPECT_EQ(plan.fixed_batch_reason, "");
  std::map<std::string, int> kinds;
  for (const engine::PlanLayer& layer : plan.layers) ++kinds[layer.kind];
  EXPECT_EQ(kinds["reference"], 0);
  return kinds;
}

const std::vector<FloatInitializer> kWeights = {
    {"w_stem", {8, 3, 3, 7, 7}, 0.2f}, {"b_stem", {8}, 0.1f}, {"w1", {8, 8, 3, 3, 3}, 0.2f}, {"b1", {8}, 0.1f},
    {"w_sp", {12, 8, 1, 3, 3}, 0.2f},  {"b_sp", {12}, 0.1f},  {"w_tm", {8, 12, 3, 1, 1}, 0.3f}, {"b_tm", {8}, 0.1f},
    {"w_ds", {8, 8, 1, 1, 1}, 0.3f}};

void check(bool quantized, double tolerance) {
  engine::BuildOptions options;
  options.input_shapes["x"] = {kMaxBatch, 3, 4, 16, 16};
  const std::string name = quantized ? "video_block_qdq.onnx" : "video_block.onnx";
  TextModelEngine built =
      build_text_model(video_text(quantized), kWeights, 7, fs::path(::testing::TempDir()) / name, options);
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  std::map<std::string, int> kinds = kinds_of_a_batch_engine(plan);
  EXPECT_EQ(kinds[quantized ? "qconv" : "fp32_conv"], 5);
  // The 2-D convs' inputs hold the frames as images on dim 0: 4 per image (stride 1 in time), 2 for
  // the downsample (after the stride-2 slice); the 3x1x1 conv runs over [N, C, T, H*W] (1 per image).
  std::map<int64_t, int> factors;
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != (quantized ? "qconv" : "fp32_conv")) continue;
    const engine::PlanTensor& input = plan.tensors[static_cast<size_t>(layer.inputs[0])];
    EXPECT_TRUE(input.batched) << layer.name;
    EXPECT_EQ(input.batch_axis, 0) << layer.name;
    ++factors[input.batch_factor];
  }
  EXPECT_EQ(factors, (std::map<int64_t, int>{{1, 1}, {2, 1}, {4, 3}}));
  expect_batch_independent(built, {{"x", random_tensor({kMaxBatch, 3, 4, 16, 16}, 3)}}, kMaxBatch, "y", tolerance);
}

TEST(Conv3dBatch, Fp32VideoBlockRunsOnNativeConvLayersAtEveryBatch) { check(false, 1e-5); }

// INT8 sums are exact; the fp32 epilogue may flip a rounding tie of a later quantizer, which the
// random weights amplify a little.
TEST(Conv3dBatch, QuantizedVideoBlockRunsOnInt8ConvLayersAtEveryBatch) { check(true, 2e-2); }

// MViT's attention pooling: the heads split off the channels into dim 0 ([N * heads, head_dim,
// T, H, W]), a depthwise 3x3x3 conv of stride 1x2x2 on each head. Lowered, its frame Pad and its
// taps' Concat hold the batch on dim 0 with `heads` slices per image, as the conv does: all native.
std::string pooling_text(bool quantized) {
  const std::string input = quantized ? "dq_h" : "h";
  const std::string weight = quantized ? "w_dq" : "w";
  std::string body = "  h = Reshape(x, heads_shape)\n";
  if (quantized) {
    body += "  q_h = QuantizeLinear(h, s, z)\n  dq_h = DequantizeLinear(q_h, s, z)\n"
            "  w_q = QuantizeLinear(w, ws, wz)\n  w_dq = DequantizeLinear(w_q, ws, wz)\n";
  }
  body += "  pooled = Conv<kernel_shape = [3, 3, 3], strides = [1, 2, 2], pads = [1, 1, 1, 1, 1, 1], group = 4>(" +
          input + ", " + weight + ")\n  merged = Reshape(pooled, merged_shape)\n  p = GlobalAveragePool(merged)\n"
          "  y = Flatten(p)\n";
  return std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
pooling (float[N,8,4,6,6] x) => (float[N,8] y)
<int64[5] heads_shape = {-1, 4, 4, 6, 6}, int64[5] merged_shape = {-1, 8, 4, 3, 3})") +
         (quantized ? ", float s = {0.05}, int8 z = {0}, float ws = {0.01}, int8 wz = {0}" : "") + ">\n{\n" + body +
         "}\n";
}

void check_pooling(bool quantized, double tolerance) {
  engine::BuildOptions options;
  options.input_shapes["x"] = {kMaxBatch, 8, 4, 6, 6};
  const std::string name = quantized ? "head_pooling_qdq.onnx" : "head_pooling.onnx";
  TextModelEngine built = build_text_model(pooling_text(quantized), {{"w", {4, 1, 3, 3, 3}, 0.3f}}, 11,
                                           fs::path(::testing::TempDir()) / name, options);
  ASSERT_NE(built.engine, nullptr);
  const engine::EnginePlan& plan = built.engine->plan();
  std::map<std::string, int> kinds = kinds_of_a_batch_engine(plan);
  EXPECT_EQ(kinds["constant_pad"], 1);
  // The frames go channels-last once ([N*2, T, H, W, C]); the 2-D conv reads and writes NHWC
  // through relabeling transposes (plain_copy views), no reorder on either side.
  EXPECT_EQ(kinds["reorder"], 0);
  // The taps' Concat is gone: each tap's Slice writes its W*C values of every row in place, columns
  // of the [N * 2 heads, T', H, taps, W*C] rows (plan_aliases.h), 2 slices per image on dim 0.
  EXPECT_EQ(kinds["plain_concat"], 0);
  int columns = 0;
  for (const engine::PlanTensor& tensor : plan.tensors) {
    if (tensor.row_stride == 0) continue;
    ++columns;
    const engine::PlanTensor& root = plan.tensors[static_cast<size_t>(tensor.alias_of)];
    EXPECT_EQ(root.batch_axis, 0) << root.name;
    EXPECT_EQ(root.batch_factor, 2) << root.name;
    EXPECT_EQ(tensor.row_stride, 3 * 6 * 4) << tensor.name;  // taps x W x C
  }
  EXPECT_EQ(columns, 3);
  for (const engine::PlanLayer& layer : plan.layers) {
    if (layer.kind != "constant_pad") continue;
    // The Pad's [N * 2 heads, T, H*W*C].
    const engine::PlanTensor& output = plan.tensors[static_cast<size_t>(layer.outputs[0])];
    EXPECT_EQ(output.batch_axis, 0) << layer.name;
    EXPECT_EQ(output.batch_factor, 2) << layer.name;
  }
  expect_batch_independent(built, {{"x", random_tensor({kMaxBatch, 8, 4, 6, 6}, 5)}}, kMaxBatch, "y", tolerance);
}

TEST(Conv3dBatch, Fp32HeadPoolingRunsOnNativeLayersWithTwoSlicesPerImage) { check_pooling(false, 1e-5); }
TEST(Conv3dBatch, QuantizedHeadPoolingRunsOnNativeLayersWithTwoSlicesPerImage) { check_pooling(true, 2e-2); }

}  // namespace
}  // namespace qdqrt::batch_testing
