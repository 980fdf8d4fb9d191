// Every layer parameter and blob of the engine file, as named codecs (engine/param_codec.h): the
// key, its type and what bind() accepts. Lowerings write through these codecs and binds read
// through them, so each key is spelled here only; docs/engine_format.md lists them per layer kind
// (keep it in step: tests/engine_file checks that every key a built plan holds is documented).
//
// Bounds given here are the widest any layer accepts; a layer that knows narrower ones at bind
// (a zero-point's range from its tensor's type, the INT8 kernels' window limits) reads with
// read_in(). A key that kinds use for different things has one codec per meaning (qbinary's `op`
// is a name, the float layers' an int; `b_scale` may be 0 only in qbatched_matmul). Changing what
// a key holds, its type or its bounds is a format change: bump kEngineFormatVersion (engine/plan.h).
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "engine/param_codec.h"
#include "kernels/cpu_features.h"
#include "kernels/elementwise/qelementwise.h"
#include "kernels/fp32/fp32_kernels.h"
#include "kernels/fp32/fp32_sgemm.h"
#include "kernels/qepilogue.h"

namespace qdqrt::engine::params {

// Upper bound on any dimension or count an INT8 layer reads (keeps every product far from overflow).
inline constexpr int64_t kMaxDim = int64_t{1} << 30;
// Upper bound on the window values of the float layers.
inline constexpr int64_t kMaxWindow = int64_t{1} << 20;
// An 8-bit zero-point of either type; bind narrows it to the tensor's type with read_in().
inline constexpr int64_t kZeroPointMin = -128, kZeroPointMax = 255;

// ---------------------------------------------------------------------------------------------
// Quantization parameters (quantize, dequantize, qbinary, qmatmul, pools, qconcat)

inline constexpr FloatCodec kScale{"scale", FloatCheck::kPositive};
inline constexpr IntCodec kZeroPoint{"zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr FloatCodec kAScale{"a_scale", FloatCheck::kPositive};
inline constexpr IntCodec kAZeroPoint{"a_zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr IntCodec kBZeroPoint{"b_zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr FloatCodec kXScale{"x_scale", FloatCheck::kPositive};
inline constexpr IntCodec kXZeroPoint{"x_zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr FloatCodec kYScale{"y_scale", FloatCheck::kPositive};
inline constexpr IntCodec kYZeroPoint{"y_zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr BoolCodec kRelu{"relu"};

// quantize: NCHW fp32 in, NHWC 8-bit out in one pass.
inline constexpr BoolCodec kToNhwc{"to_nhwc"};
// constant: the bytes written into its output tensor each run.
inline constexpr BlobCodec<uint8_t> kConstantValue{"value"};
// lut8, qlut: 256 output codes indexed by the input code.
inline constexpr BlobCodec<uint8_t> kTable{"table"};

// ---------------------------------------------------------------------------------------------
// INT8 epilogue (qconv, qmatmul, qbatched_matmul): the output quantization, activation and
// residual. The output scale is stored here only: the packed weights hold the accumulator's
// real-unit scale and bias, divided by out.scale at bind.

inline constexpr EnumCodec<kernels::OutputType> kOutputType{"out.type", "output type", kernels::output_type_name,
                                                            kernels::OutputType::kF32};
inline constexpr FloatCodec kOutputScale{"out.scale", FloatCheck::kPositive};  // 1 for an fp32 output
inline constexpr IntCodec kOutputZeroPoint{"out.zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr EnumCodec<kernels::ActivationKind> kActivation{"act.kind", "activation", kernels::activation_name,
                                                                kernels::ActivationKind::kLeakyRelu};
inline constexpr FloatCodec kClipMin{"act.min", FloatCheck::kNotNan};  // real units, -inf when absent
inline constexpr FloatCodec kClipMax{"act.max", FloatCheck::kNotNan};
inline constexpr FloatCodec kLeakyAlpha{"act.alpha", FloatCheck::kFinite};
inline constexpr BoolCodec kResidual{"res.present"};
inline constexpr BoolCodec kResidualSigned{"res.signed"};  // the res.* below only when res.present
inline constexpr FloatCodec kResidualScale{"res.scale", FloatCheck::kPositive};
inline constexpr IntCodec kResidualZeroPoint{"res.zero_point", kZeroPointMin, kZeroPointMax};
// Fused pointwise program (kernels/pointwise/pointwise_program.h), the pw.* below only when
// pw.present: 4 codes per instruction (op, dst, a, b), the constants' channel count (0: one value
// per slot) and the constants [slots][channels]. Validated as a program at bind.
inline constexpr BoolCodec kPointwise{"pw.present"};
inline constexpr IntsCodec kPointwiseCode{"pw.code", 0, 255};
inline constexpr IntCodec kPointwiseChannels{"pw.channels", 0, kMaxDim};
inline constexpr FloatsCodec kPointwiseConstants{"pw.constants", FloatCheck::kNotNan};

// ---------------------------------------------------------------------------------------------
// Packed INT8 weights (kernels::PackedGemm, kernels::PackedDepthwise) under a prefix:
// kMatMulWeights (qmatmul), group_weights(g) (qconv, one per group) or kDepthwiseWeights (qconv).
// y = (acc + accumulator_bias) * accumulator_scale + real_bias: real units, y_scale not folded in.

inline constexpr std::string_view kMatMulWeights = "w.";
inline constexpr std::string_view kDepthwiseWeights = "dw.";
std::string group_weights(int64_t group);  // "g<group>."

inline constexpr EnumCodec<kernels::Isa> kIsa{"isa", "ISA", kernels::isa_name, kernels::Isa::kAmxInt8};
inline constexpr BoolCodec kInputSigned{"input_signed"};
inline constexpr IntCodec kInputZeroPoint{"input_zero_point", kZeroPointMin, kZeroPointMax};
inline constexpr BlobCodec<int32_t> kAccumulatorBias{"accumulator_bias"};  // bias + zero-point terms, per column
inline constexpr BlobCodec<float> kAccumulatorScale{"accumulator_scale"};  // input_scale * weight_scale, per column
inline constexpr BlobCodec<float> kRealBias{"real_bias"};                  // the float bias, per column
// PackedGemm (also qmatmul's own m/k/n: k and n are read with INT_MAX / 64 there).
inline constexpr IntCodec kN{"n", 1, kMaxDim};
inline constexpr IntCodec kK{"k", 1, kMaxDim};
inline constexpr IntCodec kNr{"nr"};  // the ISA's packing, read_in() exactly
inline constexpr IntCodec kKGroup{"k_group"};
inline constexpr IntCodec kElementSize{"element_size"};
inline constexpr IntCodec kKPadded{"k_padded"};
inline constexpr IntCodec kNPadded{"n_padded"};
inline constexpr IntCodec kWeightZeroPoint{"weight_zero_point_s8", -128, 127};
inline constexpr BlobCodec<int8_t> kPackedData{"data"};
// PackedDepthwise (kChannels is also qconv's input channel count).
inline constexpr IntCodec kChannels{"channels", 1, kMaxDim};
inline constexpr IntCodec kChannelsPadded{"channels_padded"};
inline constexpr IntCodec kKernelHeight{"kernel_height", 1, 64};
inline constexpr IntCodec kKernelWidth{"kernel_width", 1, 64};
inline constexpr BlobCodec<int32_t> kDepthwiseTaps{"taps"};

// ---------------------------------------------------------------------------------------------
// Windows (qconv, pools, fp32_conv, fp32_pool). The INT8 kernels take at most kInt8Window per
// kernel/stride/dilation value and kInt8Pad per pad.

inline constexpr int64_t kInt8Window = 64, kInt8Pad = 4096;
inline constexpr IntsCodec kKernel{"kernel", 1, kMaxWindow};
inline constexpr IntsCodec kStrides{"strides", 1, kMaxWindow};
inline constexpr IntsCodec kDilations{"dilations", 1, kMaxWindow};
inline constexpr IntsCodec kPads{"pads", 0, kMaxWindow};  // qconv: top, left; else top, left, bottom, right
inline constexpr IntsCodec kPadsBegin{"pads_begin", 0, kMaxWindow};
inline constexpr IntsCodec kPadsEnd{"pads_end", 0, kMaxWindow};
inline constexpr BoolCodec kCeilMode{"ceil_mode"};
inline constexpr BoolCodec kCountIncludePad{"count_include_pad"};

// qconv geometry.
inline constexpr IntCodec kHeight{"height", 1, kMaxDim};
inline constexpr IntCodec kWidth{"width", 1, kMaxDim};
inline constexpr IntCodec kOutChannels{"out_channels", 1, kMaxDim};
inline constexpr IntCodec kOutHeight{"out_height", 1, kMaxDim};
inline constexpr IntCodec kOutWidth{"out_width", 1, kMaxDim};
inline constexpr IntCodec kGroups{"groups", 1, kMaxDim};
inline constexpr BoolCodec kDepthwise{"depthwise"};

// qmatmul, qbatched_matmul (m, k, n per matrix; batch_count matrices at the maximum batch).
inline constexpr IntCodec kM{"m", 1, INT_MAX / 2};
inline constexpr int64_t kMatMulMaxKN = INT_MAX / 64;
inline constexpr IntCodec kBatchCount{"batch_count", 1, INT_MAX / 2};
inline constexpr FloatCodec kBScale{"b_scale", FloatCheck::kFinite};           // qbatched_matmul: may be 0
inline constexpr FloatCodec kBOperandScale{"b_scale", FloatCheck::kPositive};  // qbinary
// qbinary
inline constexpr EnumCodec<kernels::QBinaryOp> kQBinaryOp{"op", "op", kernels::qbinary_op_name,
                                                          kernels::QBinaryOp::kMul};

// Data movement (qconcat, int8_transpose, plain_concat, plain_transpose, fp32_softmax).
inline constexpr IntCodec kAxis{"axis", 0, INT64_MAX};
inline constexpr IntsCodec kPerm{"perm"};
// strided_copy: per output axis the input axis it walks (-1: broadcast); per input axis the start index.
inline constexpr IntsCodec kSourceAxes{"source_axes"};
inline constexpr IntsCodec kStarts{"starts", 0, kMaxDim};
// layer_norm: per-column gamma and beta, epsilon (scale/zero_point for an 8-bit output).
inline constexpr FloatsCodec kNormGamma{"gamma", FloatCheck::kFinite};
inline constexpr FloatsCodec kNormBeta{"beta", FloatCheck::kFinite};
inline constexpr FloatCodec kEpsilon{"epsilon", FloatCheck::kFinite};
inline constexpr FloatsCodec kXScales{"x_scales", FloatCheck::kPositive};  // qconcat, per input
inline constexpr IntsCodec kXZeroPoints{"x_zero_points", kZeroPointMin, kZeroPointMax};

// ---------------------------------------------------------------------------------------------
// Float layers

inline constexpr BlobCodec<float> kBias{"bias"};  // fp32_conv, fp32_gemm (padded), qbatched_matmul (optional)
// fp32_conv
inline constexpr IntCodec kGroup{"group", 1, INT64_MAX};
// gemm, pointwise, depthwise (NCHW); igemm, depthwise, winograd (NHWC)
inline constexpr IntCodec kConvMode{"mode", 0, 6};
inline constexpr IntCodec kTileRows{"tile_rows", 1, INT64_MAX};
inline constexpr IntCodec kOutputChannelBlock{"oc_block", 1, INT64_MAX};
inline constexpr BlobCodec<uint16_t> kBf16Weights{"weights"};  // bf16_gemm: packed bf16 pairs (kernels/bf16/bf16_gemm.h)
inline constexpr BoolCodec kBf16Amx{"amx"};  // bf16_gemm: the AMX-BF16 kernel, else the AVX512_BF16 one
inline constexpr BoolCodec kBf16Gelu{"gelu"};  // bf16_gemm (optional): GELU over the output (a FusedMatMul's)
inline constexpr BlobCodec<float> kWeights{"weights"};  // NHWC modes, fp32_gemm: packed (kernels/fp32/fp32_sgemm.h)
// NHWC modes, fp32_gemm: the epilogue's function after the act.min/act.max clamp.
inline constexpr EnumCodec<kernels::Fp32EpilogueActivation> kEpilogueFunction{
    "act.function", "activation function", kernels::fp32_epilogue_activation_name,
    kernels::Fp32EpilogueActivation::kGelu};
// fp32_unary
inline constexpr FloatCodec kAlpha{"alpha", FloatCheck::kAny};
// fp32_binary: each operand ("a", "b" as prefix) a tensor input or a constant blob of that name.
inline constexpr std::string_view kOperands[2] = {"a", "b"};
inline constexpr IntCodec kBinaryOp{"op", 0, static_cast<int64_t>(kernels::Fp32BinaryOp::kMin)};
inline constexpr BoolCodec kOperandIsConstant{"_constant"};
inline constexpr IntsCodec kOperandShape{"_shape", 0, INT64_MAX};
inline constexpr BlobCodec<float> kOperandValue{""};
// fp32_unary
inline constexpr IntCodec kUnaryOp{"op", 0, static_cast<int64_t>(kernels::Fp32UnaryOp::kErf)};
inline constexpr FloatCodec kBeta{"beta", FloatCheck::kAny};
// fp32_batchnorm: per channel scale, then per channel shift.
inline constexpr BlobCodec<float> kScaleShift{"scale_shift"};
// fp32_pool
inline constexpr BoolCodec kMaxPool{"max"};
// fp32_reduce_mean: the reduced axes, ascending and consecutive.
inline constexpr IntsCodec kReduceAxes{"axes", 0, kMaxDim};
// fp32_pow: the constant exponent, as the graph gave it.
inline constexpr FloatCodec kExponent{"exponent", FloatCheck::kAny};

// ---------------------------------------------------------------------------------------------
// reference: the node itself (engine/layers/reference_layer.cpp).

inline constexpr StringCodec kOpType{"op_type"};
inline constexpr StringCodec kDomain{"domain"};
inline constexpr IntCodec kOpset{"opset"};
inline constexpr IntsCodec kInputKinds{"input_kinds"};      // per node input: 0 absent, 1 runtime, 2 constant
inline constexpr IntsCodec kInputIndices{"input_indices"};  // layer input, or constant number
inline constexpr IntCodec kConstantCount{"constant_count"};
inline constexpr IntCodec kNodeOutputs{"node_outputs", 1, 64};
inline constexpr IntsCodec kOutputSlots{"output_slots"};  // the node output each layer output holds
inline constexpr IntCodec kAttributeCount{"attr_count"};
// Why the native lowerings left the node to the reference layer (shown by exec and inspect; bind
// does not read it, so a plan without it still loads).
inline constexpr StringCodec kReferenceReason{"reason"};
// A tensor under prefix "const<c>" (constant input c) or "attr<i>" (a tensor attribute).
std::string constant_tensor(int64_t index);  // "const<index>"
inline constexpr IntCodec kTensorDtype{".dtype"};
inline constexpr IntsCodec kTensorShape{".shape"};
inline constexpr BlobCodec<uint8_t> kTensorData{""};
// An attribute under prefix "attr<i>": its value's codec follows its kind.
std::string attribute(int64_t index);  // "attr<index>"
inline constexpr StringCodec kAttributeName{".name"};
inline constexpr IntCodec kAttributeKind{".kind"};  // Attribute::Kind
inline constexpr std::string_view kAttributeValue = ".value";
inline constexpr FloatCodec kAttributeFloat{kAttributeValue, FloatCheck::kAny};
inline constexpr IntCodec kAttributeInt{kAttributeValue};
inline constexpr StringCodec kAttributeString{kAttributeValue};
inline constexpr FloatsCodec kAttributeFloats{kAttributeValue, FloatCheck::kAny};
inline constexpr IntsCodec kAttributeInts{kAttributeValue};
// A string list: its length, then item j under prefix "attr<i>.s<j>".
inline constexpr IntCodec kAttributeStringCount{".count"};
std::string attribute_string(int64_t index, int64_t item);  // "attr<index>.s<item>"
inline constexpr StringCodec kAttributeStringItem{""};

}  // namespace qdqrt::engine::params
