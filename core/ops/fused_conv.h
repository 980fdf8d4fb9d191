// FusedConv: a float Conv with its epilogue, after ONNX Runtime's com.microsoft FusedConv:
//   y = function(activation(Conv(x, w, bias) + residual))
// where at most one of `activation` (the fused-layer clamp: "Relu", or "Clip" with activation_min
// and activation_max) and `function` ("Sigmoid", "HardSwish", or "SiLU" = v * Sigmoid(v)) is set.
// Inputs: x float [N, C, spatial...], w constant float [O, C / group, k...], optional bias [O] and
// optional residual shaped like y (computed at run time; "" when absent). Conv's attributes
// (group, strides, pads, dilations, kernel_shape, auto_pad) and "fused_nodes" as every fused layer.
// The reference kernel (reference/ops/fused.cpp) runs the ops it stands for, in their order.
#pragma once

#include "core/ops/fused.h"

namespace qdqrt {

namespace layers {
inline constexpr const char* kFusedConv = "FusedConv";
enum FusedConvInput { kFusedConvX = 0, kFusedConvW, kFusedConvBias, kFusedConvResidual, kFusedConvInputCount };
}  // namespace layers

// The elementwise function a FusedConv applies last (attribute "function").
enum class ConvEpilogueFunction { kNone, kSigmoid, kHardSwish, kSiLU };
const char* conv_epilogue_function_name(ConvEpilogueFunction function);  // "", "Sigmoid", "HardSwish", "SiLU"

struct FusedConvAttributes : ConvAttributes {
  FusedLayerInfo fused;  // activation: kNone, kRelu or kClip; no pointwise program
  ConvEpilogueFunction function = ConvEpilogueFunction::kNone;
};

}  // namespace qdqrt
