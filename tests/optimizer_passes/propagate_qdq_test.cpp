#include <gtest/gtest.h>

#include "tests/optimizer_passes/pass_test_util.h"

namespace qdqrt::testing {
namespace {

const std::vector<std::string> kPropagate = {"propagate_qdq"};
const std::vector<std::string> kPropagateAndClean = {"propagate_qdq", "remove_redundant_qdq"};

TEST(PropagateQdq, MaxPoolReshapeTransposeBetweenQuantizersRunOnInt8) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,6,6] x) => (float[1,9,4] y)
    <float s = {0.05}, int8 zp = {3}, int64[3] shape = {1, 4, 9}>
    {
      xq = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(xq, s, zp)
      p = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(xd)
      r = Reshape(p, shape)
      t = Transpose<perm = [0, 2, 1]>(r)
      tq = QuantizeLinear(t, s, zp)
      y = DequantizeLinear(tq, s, zp)
    })");
  Graph moved = run_passes(graph, kPropagate);
  EXPECT_EQ(op_sequence(moved), "QuantizeLinear,MaxPool,Reshape,Transpose,DequantizeLinear,QuantizeLinear,DequantizeLinear");
  expect_same_outputs(graph, moved, random_inputs(graph, 31), 0.0, 0.0);
  Graph cleaned = run_passes(graph, kPropagateAndClean);
  EXPECT_EQ(op_sequence(cleaned), "QuantizeLinear,MaxPool,Reshape,Transpose,DequantizeLinear");
  EXPECT_EQ(cleaned.find_value(cleaned.nodes[1].outputs[0])->dtype, DataType::kInt8);
  EXPECT_EQ(cleaned.outputs[0], "y");
  expect_same_outputs(graph, cleaned, random_inputs(graph, 32), 0.0, 0.0);
}

TEST(PropagateQdq, QuantizeMovesBackwardThroughFlattenSqueezeUnsqueeze) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,1,4] x) => (float[2,12] y)
    <float s = {0.03}, uint8 zp = {128}, int64[1] axis2 = {2}>
    {
      a = Relu(x)
      b = Squeeze(a, axis2)
      c = Unsqueeze(b, axis2)
      d = Flatten(c)
      q = QuantizeLinear(d, s, zp)
      y = DequantizeLinear(q, s, zp)
    })");
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(op_sequence(rewritten), "Relu,QuantizeLinear,Squeeze,Unsqueeze,Flatten,DequantizeLinear");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 33), 0.0, 0.0);
}

TEST(PropagateQdq, SliceAndGatherWithConstantIndices) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,6] x) => (float[2,3] y)
    <float s = {0.1}, int8 zp = {0}, int64[1] starts = {1}, int64[1] ends = {4}, int64[1] axes = {1},
     int64[2] rows = {3, 0}>
    {
      xq = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(xq, s, zp)
      sl = Slice(xd, starts, ends, axes)
      y = Gather<axis = 0>(sl, rows)
    })");
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(op_sequence(rewritten), "QuantizeLinear,Slice,Gather,DequantizeLinear");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 34), 0.0, 0.0);
}

// ShuffleNetV2's split: two Slices of one float value, one of them quantized. The Q stays after
// its Slice (above it, it would quantize both halves while the float value stays for the other
// Slice); with the Slice as the value's only reader it moves.
TEST(PropagateQdq, QuantizeStaysAfterASliceOfASharedValue) {
  // r is read by both Slices: the Q of b stays after its Slice.
  Graph shared = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,3,3] x) => (float[1,4,3,3] y, float[1,4,3,3] z)
    <float s = {0.05}, uint8 zp = {10}, int64[1] zero = {0}, int64[1] four = {4}, int64[1] eight = {8},
     int64[1] axes = {1}>
    {
      r = Relu(x)
      a = Slice(r, zero, four, axes)
      z = Sigmoid(a)
      b = Slice(r, four, eight, axes)
      bq = QuantizeLinear(b, s, zp)
      y = DequantizeLinear(bq, s, zp)
    })");
  Graph rewritten = run_passes(shared, kPropagate);
  EXPECT_EQ(op_sequence(rewritten), op_sequence(shared));
  expect_same_outputs(shared, rewritten, random_inputs(shared, 37), 0.0, 0.0);
  // The Slice is r's only reader: the Q moves above it.
  Graph single = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,3,3] x) => (float[1,4,3,3] y)
    <float s = {0.05}, uint8 zp = {10}, int64[1] four = {4}, int64[1] eight = {8}, int64[1] axes = {1}>
    {
      r = Relu(x)
      b = Slice(r, four, eight, axes)
      bq = QuantizeLinear(b, s, zp)
      y = DequantizeLinear(bq, s, zp)
    })");
  Graph moved = run_passes(single, kPropagate);
  EXPECT_EQ(op_sequence(moved), "Relu,QuantizeLinear,Slice,DequantizeLinear");
  expect_same_outputs(single, moved, random_inputs(single, 38), 0.0, 0.0);
}

std::string pad_graph(const std::string& pad_value) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x) => (float[1,2,5,5] y)
    <float s = {0.02}, uint8 zp = {100}, int64[8] pads = {0, 0, 1, 1, 0, 0, 1, 1}, float value = {)" +
         pad_value + R"(}>
    {
      xq = QuantizeLinear(x, s, zp)
      xd = DequantizeLinear(xq, s, zp)
      y = Pad(xd, pads, value)
    })";
}

TEST(PropagateQdq, PadWithZeroPadsTheZeroPoint) {
  Graph graph = parse_graph(pad_graph("0.0"));
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(op_sequence(rewritten), "QuantizeLinear,Pad,DequantizeLinear");
  const Tensor* pad_value = rewritten.find_initializer(rewritten.nodes[1].inputs[2]);
  ASSERT_NE(pad_value, nullptr);
  EXPECT_EQ(pad_value->dtype(), DataType::kUint8);
  EXPECT_EQ(pad_value->data<uint8_t>()[0], 100);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 35), 0.0, 0.0);
}

TEST(PropagateQdq, MustNotFireOnPadWithNonZeroValue) {
  Graph graph = parse_graph(pad_graph("0.5"));
  EXPECT_EQ(op_sequence(run_passes(graph, kPropagate)), "QuantizeLinear,DequantizeLinear,Pad");
}

std::string concat_graph(const std::string& second_scale) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3] a, float[1,3,3] b) => (float[1,5,3] y)
    <float s = {0.04}, float s2 = {)" + second_scale + R"(}, int8 zp = {-5}>
    {
      aq = QuantizeLinear(a, s, zp)
      ad = DequantizeLinear(aq, s, zp)
      bq = QuantizeLinear(b, s2, zp)
      bd = DequantizeLinear(bq, s2, zp)
      y = Concat<axis = 1>(ad, bd)
    })";
}

TEST(PropagateQdq, ConcatWithEqualScales) {
  Graph graph = parse_graph(concat_graph("0.04"));
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 1);
  EXPECT_EQ(rewritten.nodes.back().op_type, "DequantizeLinear");
  expect_same_outputs(graph, rewritten, random_inputs(graph, 36), 0.0, 0.0);
}

TEST(PropagateQdq, MustNotFireOnConcatWithMismatchedScales) {
  Graph graph = parse_graph(concat_graph("0.05"));
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 2);
  EXPECT_EQ(rewritten.nodes.back().op_type, "Concat");
}

std::string clamp_graph(const std::string& clamp, const std::string& zero_point) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,8] x) => (float[2,8] y)
    <float s = {0.01}, )" + zero_point + R"(, float lo = {0.0}, float hi = {2.55}, float hi_small = {1.0}>
    {
      r = )" + clamp + R"(
      q = QuantizeLinear(r, s, zp)
      y = DequantizeLinear(q, s, zp)
    })";
}

TEST(PropagateQdq, ReluAndClipAbsorbedByUint8QuantizerWithZeroPointZero) {
  for (const std::string clamp : {"Relu(x)", "Clip(x, lo, hi)", "Clip(x, lo)"}) {
    Graph graph = parse_graph(clamp_graph(clamp, "uint8 zp = {0}"));
    Graph rewritten = run_passes(graph, kPropagate);
    EXPECT_EQ(op_sequence(rewritten), "QuantizeLinear,DequantizeLinear") << clamp;
    expect_same_outputs(graph, rewritten, random_inputs(graph, 37, 4.0f), 0.0, 0.0);
  }
}

TEST(PropagateQdq, MustNotFireWhenTheQuantizerDoesNotClampTheSameWay) {
  // int8 with zero-point 0 keeps negatives; asymmetric uint8 too; a max below the Q's range.
  for (const auto& [clamp, zero_point] : std::vector<std::pair<std::string, std::string>>{
           {"Relu(x)", "int8 zp = {0}"}, {"Relu(x)", "uint8 zp = {10}"}, {"Clip(x, lo, hi_small)", "uint8 zp = {0}"}}) {
    Graph graph = parse_graph(clamp_graph(clamp, zero_point));
    Graph rewritten = run_passes(graph, kPropagate);
    EXPECT_EQ(count_ops(rewritten, clamp.substr(0, 4) == "Relu" ? "Relu" : "Clip"), 1) << clamp << " " << zero_point;
  }
}

TEST(PropagateQdq, MustNotFireOnPerChannelActivationScaleRuntimeScaleOrRuntimeIndices) {
  Graph per_channel = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,2,2] y)
    <float[2] s = {0.1, 0.2}, int8[2] zp = {0, 0}>
    {
      xq = QuantizeLinear<axis = 1>(x, s, zp)
      xd = DequantizeLinear<axis = 1>(xq, s, zp)
      y = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(xd)
    })");
  EXPECT_EQ(op_sequence(run_passes(per_channel, kPropagate)), "QuantizeLinear,DequantizeLinear,MaxPool");

  Graph runtime_scale = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int8[1,2,4,4] xq, float s) => (float[1,2,2,2] y)
    <int8 zp = {0}>
    {
      xd = DequantizeLinear(xq, s, zp)
      y = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(xd)
    })");
  EXPECT_EQ(op_sequence(run_passes(runtime_scale, kPropagate)), "DequantizeLinear,MaxPool");

  Graph runtime_indices = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int8[4,3] xq, int64[2] rows) => (float[2,3] y)
    <float s = {0.1}, int8 zp = {0}>
    {
      xd = DequantizeLinear(xq, s, zp)
      y = Gather(xd, rows)
    })");
  EXPECT_EQ(op_sequence(run_passes(runtime_indices, kPropagate)), "DequantizeLinear,Gather");
}

TEST(PropagateQdq, SharedDequantizeIsDuplicatedForTheReaderItMovesPast) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int8[1,2,4,4] xq) => (float[1,2,2,2] y, float[1,2,4,4] z, float[1,2,4,4] xd)
    <float s = {0.1}, int8 zp = {1}>
    {
      xd = DequantizeLinear(xq, s, zp)
      y = MaxPool<kernel_shape = [2, 2], strides = [2, 2]>(xd)
      z = Relu(xd)
    })");
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 2);
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "MaxPool") {
      EXPECT_EQ(node.inputs[0], "xq");
    }
    if (node.op_type == "Relu") {
      EXPECT_EQ(node.inputs[0], "xd");
    }
  }
  expect_same_outputs(graph, rewritten, random_inputs(graph, 38), 0.0, 0.0);
}

TEST(PropagateQdq, ConcatOfSharedDequantizes) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (uint8[1,2,3] aq, uint8[1,1,3] bq) => (float[1,5,3] y, float[1,2,3] z)
    <float s = {0.04}, uint8 zp = {120}>
    {
      ad = DequantizeLinear(aq, s, zp)
      bd = DequantizeLinear(bq, s, zp)
      y = Concat<axis = 1>(ad, bd, ad)
      z = Sigmoid(ad)
    })");
  Graph rewritten = run_passes(graph, kPropagate);
  for (const Node& node : rewritten.nodes) {
    if (node.op_type == "Concat") {
      EXPECT_EQ(node.inputs, (std::vector<std::string>{"aq", "bq", "aq"}));
    }
  }
  EXPECT_EQ(count_ops(rewritten, "DequantizeLinear"), 2);  // ad for the Sigmoid, one after the Concat
  expect_same_outputs(graph, rewritten, random_inputs(graph, 39), 0.0, 0.0);
}

TEST(PropagateQdq, TransposeOfPerChannelInt8WeightIsFoldedAndTheAxisFollows) {
  // torch's Linear export: DQ(w_int8, per-output-channel axis 0) -> Transpose -> MatMul.
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,4] y)
    <int8[4,3] wq = )" + literal(12, 9, -127.0f, 127.0f, true) + R"(, float[4] ws = {0.01, 0.02, 0.03, 0.04},
     int8[4] wzp = {0, 0, 0, 0}>
    {
      w = DequantizeLinear<axis = 0>(wq, ws, wzp)
      wt = Transpose<perm = [1, 0]>(w)
      y = MatMul(x, wt)
    })");
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(op_sequence(rewritten), "DequantizeLinear,MatMul");
  const Node& dq = rewritten.nodes[0];
  const Tensor* weight = rewritten.find_initializer(dq.inputs[0]);
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->dtype(), DataType::kInt8);
  EXPECT_EQ(weight->shape(), (Shape{3, 4}));
  EXPECT_EQ(dq.find_attribute("axis")->i, 1);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 40), 0.0, 0.0);
}

TEST(PropagateQdq, MustNotFoldPerChannelWeightThroughReshape) {
  Graph graph = parse_graph(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,12] x) => (float[2,1] y)
    <int8[4,3] wq = )" + literal(12, 9, -127.0f, 127.0f, true) + R"(, float[4] ws = {0.01, 0.02, 0.03, 0.04},
     int8[4] wzp = {0, 0, 0, 0}, int64[2] shape = {12, 1}>
    {
      w = DequantizeLinear<axis = 0>(wq, ws, wzp)
      wr = Reshape(w, shape)
      y = MatMul(x, wr)
    })");
  EXPECT_EQ(op_sequence(run_passes(graph, kPropagate)), "DequantizeLinear,Reshape,MatMul");
}

// ResNet's stem: Relu -> MaxPool read by two input quantizers with equal parameters (the first
// block's conv and its downsample). The Qs merge and the Q moves above the MaxPool: int8 pool.
std::string stem_graph(const std::string& second_scale) {
  return R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,8,8] x) => (float[1,4,4,4] y1, float[1,4,4,4] y2)
    <float s = {0.05}, float s2 = {)" + second_scale + R"(}, int8 zp = {0}>
    {
      r = Relu(x)
      p = MaxPool<kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]>(r)
      q1 = QuantizeLinear(p, s, zp)
      y1 = DequantizeLinear(q1, s, zp)
      q2 = QuantizeLinear(p, s2, zp)
      y2 = DequantizeLinear(q2, s2, zp)
    })";
}

TEST(PropagateQdq, EqualQuantizersOfOneValueMergeAndMoveAboveMaxPool) {
  Graph graph = parse_graph(stem_graph("0.05"));
  Graph rewritten = run_passes(graph, kPropagate);
  EXPECT_EQ(op_sequence(rewritten), "Relu,QuantizeLinear,MaxPool,DequantizeLinear,DequantizeLinear");
  EXPECT_EQ(rewritten.find_value(rewritten.nodes[2].outputs[0])->dtype, DataType::kInt8);
  expect_same_outputs(graph, rewritten, random_inputs(graph, 41), 0.0, 0.0);
}

TEST(PropagateQdq, MustNotMergeQuantizersWithDifferentScales) {
  Graph graph = parse_graph(stem_graph("0.06"));
  EXPECT_EQ(op_sequence(run_passes(graph, kPropagate)),
            "Relu,MaxPool,QuantizeLinear,DequantizeLinear,QuantizeLinear,DequantizeLinear");
}

}  // namespace
}  // namespace qdqrt::testing
