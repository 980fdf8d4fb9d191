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
}  // namespace layers

// The elementwise function a FusedConv applies last (attribute "function").
enum class ConvEpilogueFunction { kNone, kSigmoid, kHardSwish, kSiLU };
const char* conv_epilogue_function_name(ConvEpilogueFunction function);  // "", "Sigmoid", "HardSwish", "SiLU"

struct FusedConvAttributes : ConvAttributes {
  FusedLayerInfo fused;  // activation: kNone, kRelu or kClip; no pointwise program
  ConvEpilogueFunction function = ConvEpilogueFunction::kNone;
};

struct RowSumsPoolAttributes : OpAttributes {
  FusedLayerInfo fused;
};

}  // namespace qdqrt
