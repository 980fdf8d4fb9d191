// FusedConv: a float Conv with its epilogue, after ONNX Runtime's com.microsoft FusedConv:
//   y = function(activation(Conv(x * gate, w, bias) + residual))
// where at most one of `activation` (the fused-layer clamp: "Relu", or "Clip" with activation_min
// and activation_max) and `function` ("Sigmoid", "HardSwish", or "SiLU" = v * Sigmoid(v)) is set.
// Inputs: x float [N, C, spatial...], w constant float [O, C / group, k...], optional bias [O],
// optional residual shaped like y (computed at run time; "" when absent) and optional channel gate
// [N, C, 1, 1] (computed at run time: squeeze-excite's Mul folded into the 1x1 conv after it).
// Outputs: y, and optionally the per-row channel sums of y [N, OH, C] (sums[n, h, c] = sum over w
// of y[n, c, h, w]) that a RowSumsGlobalAveragePool reads. Conv's attributes (group, strides,
// pads, dilations, kernel_shape, auto_pad) and "fused_nodes" as every fused layer.
// The reference kernel (reference/ops/fused.cpp) runs the ops it stands for, in their order.
//
// FusedDepthwiseConv: a depthwise conv with the 1x1 expansion before it and/or the 1x1 projection
// after it, each with its own epilogue (what three FusedConvs would compute, run by the engine
// over bands of rows so the intermediates stay in cache):
//   e = expand_function(expand_activation(Conv1x1(x, expand_w, expand_bias)))     [expansion]
//   d = function(activation(DepthwiseConv(e, w, bias)))                            [depthwise]
//   y = project_function(project_activation(Conv1x1(d, project_w, project_bias) + residual))
// Inputs (kFusedDepthwise*): x, expand_w, expand_bias, w, bias, project_w, project_bias, residual;
// the expansion's or the projection's weight "" when that part is absent (at least one is there),
// the residual only with a projection. Outputs: y (d without a projection), and without a
// projection optionally the row sums of d (as FusedConv's output 1). Attributes: the depthwise's
// conv attributes (group == its channels), its "activation"/"function" as FusedConv's,
// "expand_activation", "expand_activation_min/max", "expand_function" and the same "project_*",
// "fused_nodes" (the parts' nodes in order) and "part_nodes" [expansion, depthwise, projection]:
// how many of fused_nodes each part has (0 for an absent part).
//
// RowSumsGlobalAveragePool: GlobalAveragePool of x [N, C, H, W] from the row sums [N, H, C] of x
// the conv writing x computed while its rows were in cache: y[n, c] = sum over h of
// row_sums[n, h, c] / (H * W), y [N, C, 1, 1]. Attributes: "fused_nodes".
#pragma once

#include "core/ops/fused.h"

namespace qdqrt {

namespace layers {
inline constexpr const char* kFusedConv = "FusedConv";
enum FusedConvInput {
  kFusedConvX = 0,
  kFusedConvW,
  kFusedConvBias,
  kFusedConvResidual,
  kFusedConvGate,
  kFusedConvInputCount
};
enum FusedConvOutput { kFusedConvY = 0, kFusedConvRowSums };
inline constexpr const char* kRowSumsGlobalAveragePool = "RowSumsGlobalAveragePool";
enum RowSumsPoolInput { kRowSumsPoolX = 0, kRowSumsPoolSums };
inline constexpr const char* kFusedDepthwiseConv = "FusedDepthwiseConv";
enum FusedDepthwiseInput {
  kFusedDepthwiseX = 0,
  kFusedDepthwiseExpandW,
  kFusedDepthwiseExpandBias,
  kFusedDepthwiseW,
  kFusedDepthwiseBias,
  kFusedDepthwiseProjectW,
  kFusedDepthwiseProjectBias,
  kFusedDepthwiseResidual,
  kFusedDepthwiseInputCount
};
}  // namespace layers

// The elementwise function a FusedConv applies last (attribute "function").
enum class ConvEpilogueFunction { kNone, kSigmoid, kHardSwish, kSiLU };
const char* conv_epilogue_function_name(ConvEpilogueFunction function);  // "", "Sigmoid", "HardSwish", "SiLU"

struct FusedConvAttributes : ConvAttributes {
  FusedLayerInfo fused;  // activation: kNone, kRelu or kClip; no pointwise program
  ConvEpilogueFunction function = ConvEpilogueFunction::kNone;
};

// A 1x1 part's epilogue in a FusedDepthwiseConv.
struct ConvEpilogue {
  FusedActivation activation;  // kNone, kRelu or kClip
  ConvEpilogueFunction function = ConvEpilogueFunction::kNone;
};

struct FusedDepthwiseConvAttributes : ConvAttributes {  // the depthwise's window and group
  FusedLayerInfo fused;  // activation: the depthwise's; fused_nodes: every part's, in order
  ConvEpilogueFunction function = ConvEpilogueFunction::kNone;  // the depthwise's
  ConvEpilogue expand, project;
  int64_t part_nodes[3] = {0, 0, 0};  // of fused_nodes: expansion, depthwise, projection
};

struct RowSumsPoolAttributes : OpAttributes {
  FusedLayerInfo fused;
};

}  // namespace qdqrt
