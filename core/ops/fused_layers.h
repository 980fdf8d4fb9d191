// The INT8 layers the optimizer fuses Q/DQ patterns into: nodes in the "qdqrt" domain whose
// parameters are ordinary inputs (constant initializers) and attributes, so an optimized graph is
// still an ONNX graph (dumpable, loadable, runnable by the reference executor).
//
// Conventions shared by every layer:
//   - quantized inputs come as (value, scale, zero_point) triples, as in ONNX's QLinear* ops;
//     scale is float32 (scalar, or 1-D per-channel for weights), zero_point int8/uint8 (same shape);
//   - the output is int8/uint8 when y_scale/y_zero_point are present (a Q followed the pattern),
//     else float32 in real units (no Q followed);
//   - attribute "fused_nodes" (strings) lists the source nodes, in graph order, for inspect and
//     profiles ("conv1 + bn1 + add1 + relu1");
//   - attribute "activation" (string: "", "Relu", "Clip", "LeakyRelu") with "activation_min",
//     "activation_max" (Clip bounds, real units) and "activation_alpha" (LeakyRelu).
//
// Their schemas (attribute parsing) are in core/ops/fused.cpp; the reference kernels
// (reference/ops/fused.cpp) define their numbers: dequantize,
// compute in float, apply bias/residual/activation, quantize with round-half-to-even.
#pragma once

namespace qdqrt::layers {

inline constexpr const char* kDomain = "qdqrt";

// QConv: Conv (any groups, incl. depthwise) with folded BatchNorm, optional residual Add and
// activation. BatchNorm is folded into w_scale (per channel) and bias, never into the int8 weights.
inline constexpr const char* kQConv = "QConv";
enum QConvInput {
  kConvX = 0, kConvXScale, kConvXZeroPoint,
  kConvW, kConvWScale, kConvWZeroPoint,  // w: constant int8/uint8 [O][I/group][kh...]; w_scale [1] or [O]
  kConvBias,                             // optional float32 [O], real units
  kConvYScale, kConvYZeroPoint,          // optional: absent => float output
  kConvResidual, kConvResidualScale, kConvResidualZeroPoint,  // optional quantized residual
  kConvInputCount
};

// QMatMul: MatMul/Gemm. b is either a constant weight ([K][N], per-column scales allowed; Gemm's
// transB and alpha/beta are folded) or an activation (batched, both sides quantized).
inline constexpr const char* kQMatMul = "QMatMul";
enum QMatMulInput {
  kMatMulA = 0, kMatMulAScale, kMatMulAZeroPoint,
  kMatMulB, kMatMulBScale, kMatMulBZeroPoint,
  kMatMulBias,                           // optional float32 [N], real units
  kMatMulYScale, kMatMulYZeroPoint,      // optional
  kMatMulResidual, kMatMulResidualScale, kMatMulResidualZeroPoint,  // optional
  kMatMulInputCount
};

// QAdd / QMul: both inputs quantized, numpy broadcasting, optional fused activation.
inline constexpr const char* kQAdd = "QAdd";
inline constexpr const char* kQMul = "QMul";
enum QBinaryInput {
  kBinaryA = 0, kBinaryAScale, kBinaryAZeroPoint,
  kBinaryB, kBinaryBScale, kBinaryBZeroPoint,
  kBinaryYScale, kBinaryYZeroPoint,      // optional
  kBinaryInputCount
};

// QAveragePool (AveragePool attributes) and QGlobalAveragePool.
inline constexpr const char* kQAveragePool = "QAveragePool";
inline constexpr const char* kQGlobalAveragePool = "QGlobalAveragePool";
// QLookup: a 256-entry table of an elementwise function between DQ and Q; attribute "function":
// "Sigmoid", "SiLU", "HardSwish", "HardSigmoid", "Tanh", "Gelu".
inline constexpr const char* kQLookup = "QLookup";
enum QUnaryInput {
  kUnaryX = 0, kUnaryXScale, kUnaryXZeroPoint,
  kUnaryYScale, kUnaryYZeroPoint,  // required for QLookup; optional for pools
  kUnaryInputCount
};

// QRequantize: int8/uint8 x -> int8/uint8 y with other parameters (QUnaryInput order, y_scale and
// y_zero_point required): y = QuantizeLinear(DequantizeLinear(x)). The optimizer makes one when a
// fused layer's float output fed several QuantizeLinear nodes: the layer writes int8 for one of
// them and the others requantize from it.
inline constexpr const char* kQRequantize = "QRequantize";

// QConcat: attribute "axis"; inputs y_scale, y_zero_point, then one (x, x_scale, x_zero_point)
// triple per concatenated tensor (requantized to y's parameters when they differ).
inline constexpr const char* kQConcat = "QConcat";
enum QConcatInput { kConcatYScale = 0, kConcatYZeroPoint, kConcatFirstX };

// ChannelGate: squeeze-excite's channel gate, y = x * gate with x float [N, C, H, W] and gate
// float [N, C, 1, 1] (both computed at run time), then the optional output quantization (y_scale,
// y_zero_point, a Q that followed the Mul): one pass over x, channels-last in the engine.
inline constexpr const char* kChannelGate = "ChannelGate";
enum ChannelGateInput { kGateX = 0, kGateGate, kGateYScale, kGateYZeroPoint, kGateInputCount };

// LayerNorm: LayerNormalization over the last axis (the decomposed ReduceMean/Sub/Pow/ReduceMean/
// Add/Sqrt/Div/Mul/Add pattern torch exports at opset < 17, or the opset-17 op), float x, constant
// float gamma and beta [D]; attribute "epsilon" (float). Population variance, y = (x - mean) /
// sqrt(variance + epsilon) * gamma + beta, then the optional output quantization (a Q that followed).
inline constexpr const char* kLayerNorm = "LayerNorm";
enum LayerNormInput { kNormX = 0, kNormGamma, kNormBeta, kNormYScale, kNormYZeroPoint, kNormInputCount };

// Softmax: Softmax over the last axis of float x with the QuantizeLinear that followed it (the
// attention probabilities before the INT8 P.V MatMul); y_scale and y_zero_point required. The
// engine computes and quantizes in one pass (kernels/softmax/softmax_quantize.h).
inline constexpr const char* kSoftmax = "Softmax";
enum SoftmaxInput { kSoftmaxX = 0, kSoftmaxYScale, kSoftmaxYZeroPoint, kSoftmaxInputCount };
}  // namespace qdqrt::layers
