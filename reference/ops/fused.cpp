// Reference kernels of the qdqrt fused INT8 layers (core/ops/fused_layers.h). They DEFINE the
// numbers the engine's INT8 kernels are tested against, by composing the reference kernels of the
// plain ONNX ops the layer replaced, in the same order and precision as the original graph:
//
//   1. every quantized input is dequantized exactly as ONNX DequantizeLinear does:
//        real = float(q - zero_point) * float(scale)          (float32 multiply, per tensor or
//      per output channel: axis 0 of a conv weight, axis 1 (columns) of a [K][N] matmul weight);
//   2. the layer's op runs in float on those values with its reference kernel (Conv, MatMul,
//      AveragePool, GlobalAveragePool, Concat, Add, Mul, Sigmoid, ...: double accumulation where
//      that kernel uses it, float32 results);
//   3. epilogue, each step a float32 operation in this order: + bias (float32 [O] / [N], real
//      units, broadcast over the channel axis 1 for QConv and the last axis for QMatMul);
//      + residual (dequantized as in 1); activation (Relu: max(v, 0); Clip: min(max(v, lo), hi);
//      LeakyRelu: v < 0 ? alpha * v : v);
//      then the optional pointwise program (kernels/pointwise/pointwise_program.h), each
//      instruction the ONNX op it came from computed in double with <cmath> and rounded to float
//      (as reference/ops/elementwise.cpp does), per-channel constants along the channel axis;
//   4. output: with y_scale/y_zero_point, ONNX QuantizeLinear on float32:
//        q = saturate(round_half_to_even(v / y_scale) + y_zero_point)   (int8 [-128,127] or
//      uint8 [0,255], the zero-point's type); without them the float32 value v itself.
//
// So a fused layer reproduces its source subgraph exactly except where the optimizer changed
// the float evaluation order (Gemm's alpha folded into the weight scale; a bias Add folded
// into the layer); the fusion tests bound that at 1 LSB of int8 outputs.
// QLookup's engine table is this kernel evaluated on all 256 input codes.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>

#include "core/op_registry.h"
#include "core/ops/conv.h"
#include "core/ops/elementwise.h"
#include "core/ops/fused.h"
#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_batchnorm.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "core/ops/fused_matmul.h"
#include "core/ops/normalization.h"
#include "core/ops/pool.h"
#include "core/ops/quantize.h"
#include "core/ops/tensor.h"
#include "reference/executor.h"
#include "reference/kernel_registry.h"
#include "reference/ops/op_helpers.h"
#include "kernels/pointwise/pointwise_program.h"

namespace qdqrt {

namespace {

using reference::Inputs;
using reference::optional_input;
using reference::required_input;
using reference::typed_attributes;

// A plain ONNX node standing in for one step of the fused layer (errors name the fused node).
Node plain_node(const Node& fused, const char* op_type, std::shared_ptr<const OpAttributes> attributes = nullptr) {
  Node node;
  node.name = fused.name;
  node.op_type = op_type;
  node.domain = kOnnxDomain;
  node.opset = 21;
  node.typed_attributes = std::move(attributes);
  return node;
}

Result<Tensor> run_single(const Node& node, const std::vector<const Tensor*>& inputs) {
  Node with_output = node;
  with_output.inputs.assign(inputs.size(), "in");
  with_output.outputs = {"out"};
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_reference_node(with_output, inputs));
  if (outputs.empty() || !outputs[0].defined()) {
    return internal_error("{}: step {} produced no output", node.describe(), node.op_type);
  }
  return std::move(outputs[0]);
}

// Per-tensor parameters as scalars (so any rank of x is accepted); per-axis ones keep their axis.
Tensor as_scalar_if_single(const Tensor& t) { return t.numel() == 1 && t.rank() > 0 ? t.reshaped({}) : t; }

// ONNX DequantizeLinear of (x, scale, zero_point) along `axis` when scale has several values.
Result<Tensor> dequantize(const Node& fused, const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                          int64_t axis) {
  DequantizeLinearAttributes attributes;
  attributes.axis = axis;
  Node dq = plain_node(fused, "DequantizeLinear", make_attributes(attributes));
  Tensor s = as_scalar_if_single(scale);
  Tensor zp;
  if (zero_point != nullptr) zp = as_scalar_if_single(*zero_point);
  return run_single(dq, {&x, &s, zero_point != nullptr ? &zp : nullptr});
}

Result<Tensor> quantize(const Node& fused, const Tensor& y, const Tensor& scale, const Tensor& zero_point) {
  if (scale.numel() != 1 || zero_point.numel() != 1) {
    return invalid_argument("{}: output scale and zero-point must be per-tensor, got {} and {} values",
                            fused.describe(), scale.numel(), zero_point.numel());
  }
  Node q = plain_node(fused, "QuantizeLinear", make_attributes(QuantizeLinearAttributes{}));
  Tensor s = as_scalar_if_single(scale);
  Tensor zp = as_scalar_if_single(zero_point);
  return run_single(q, {&y, &s, &zp});
}

// Input triple (value, scale, zero_point) starting at `first`, dequantized.
Result<Tensor> dequantize_input(const Node& node, Inputs inputs, size_t first, const char* role, int64_t axis = 1) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, first, role));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* scale, required_input(node, inputs, first + 1, "scale"));
  const Tensor* zero_point = optional_input(inputs, first + 2);
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *x, role, {DataType::kInt8, DataType::kUint8}));
  return dequantize(node, *x, *scale, zero_point, axis);
}

Result<Tensor> binary(const Node& fused, const char* op_type, const Tensor& a, const Tensor& b) {
  return run_single(plain_node(fused, op_type), {&a, &b});
}

// One pointwise instruction as the ONNX op it stands for (double math, float result).
float reference_pointwise_op(kernels::PointwiseOp op, float a_float, float b_float) {
  using kernels::PointwiseOp;
  const double a = a_float, b = b_float;
  switch (op) {
    case PointwiseOp::kCopy: return a_float;
    case PointwiseOp::kAdd: return static_cast<float>(a + b);
    case PointwiseOp::kSub: return static_cast<float>(a - b);
    case PointwiseOp::kMul: return static_cast<float>(a * b);
    case PointwiseOp::kDiv: return static_cast<float>(a / b);
    case PointwiseOp::kMax: return a_float > b_float ? a_float : b_float;
    case PointwiseOp::kMin: return a_float < b_float ? a_float : b_float;
    case PointwiseOp::kRelu: return a_float > 0.0f ? a_float : 0.0f;
    case PointwiseOp::kLeakyRelu: return static_cast<float>(a < 0 ? b * a : a);
    case PointwiseOp::kSigmoid:
      return static_cast<float>(a >= 0 ? 1.0 / (1.0 + std::exp(-a)) : std::exp(a) / (1.0 + std::exp(a)));
    case PointwiseOp::kSilu: {  // the Sigmoid and the Mul it replaces, each rounded to float
      const float sigmoid = reference_pointwise_op(PointwiseOp::kSigmoid, a_float, 0.0f);
      return static_cast<float>(a * static_cast<double>(sigmoid));
    }
    case PointwiseOp::kTanh: return static_cast<float>(std::tanh(a));
    case PointwiseOp::kExp: return static_cast<float>(std::exp(a));
    case PointwiseOp::kErf: return static_cast<float>(std::erf(a));
    case PointwiseOp::kGelu: return static_cast<float>(0.5 * a * (1.0 + std::erf(a / std::numbers::sqrt2)));
    case PointwiseOp::kGeluTanh:
      return static_cast<float>(0.5 * a * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (a + 0.044715 * a * a * a))));
    case PointwiseOp::kHardSwish: return static_cast<float>(a * std::clamp(a / 6.0 + 0.5, 0.0, 1.0));
    case PointwiseOp::kNeg: return -a_float;
    case PointwiseOp::kAbs: return std::fabs(a_float);
    case PointwiseOp::kSqrt: return static_cast<float>(std::sqrt(a));
    case PointwiseOp::kCount: break;
  }
  return a_float;
}

// Applies the fused pointwise program to every element of `value`; channels along `axis`.
Status apply_pointwise(const Node& node, const FusedLayerInfo& fused, Tensor& value, int64_t axis) {
  kernels::PointwiseProgram program;
  std::string problem =
      kernels::decode_pointwise_code(fused.pointwise_code.data(), fused.pointwise_code.size(), program);
  program.constant_slots = static_cast<int>(std::min<int64_t>(fused.pointwise_slots(), 1 << 20));
  program.constants = fused.pointwise_constants.data();
  if (problem.empty()) problem = kernels::validate_pointwise_program(program);
  if (!problem.empty()) return invalid_argument("{}: pointwise program: {}", node.describe(), problem);
  if (axis < 0 || axis >= value.rank()) return invalid_argument("{}: a pointwise program needs a channel axis", node.describe());
  const int64_t channels = value.dim(axis);
  if (fused.pointwise_channels > 0 && fused.pointwise_channels != channels) {
    return invalid_argument("{}: pointwise constants have {} channels, the output has {}", node.describe(),
                            fused.pointwise_channels, channels);
  }
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < value.rank(); ++d) inner *= value.dim(d);
  const int64_t row = fused.pointwise_channels > 0 ? fused.pointwise_channels : 1;
  float* data = value.data<float>();
  for (int64_t i = 0; i < value.numel(); ++i) {
    const int64_t channel = fused.pointwise_channels > 0 ? (i / inner) % channels : 0;
    float registers[kernels::kPointwiseRegisters] = {data[i]};
    auto operand = [&](uint8_t id) {
      if (id < kernels::kPointwiseRegisters) return registers[id];
      return fused.pointwise_constants[static_cast<size_t>((id - kernels::kFirstConstantOperand) * row + channel)];
    };
    for (int k = 0; k < program.size; ++k) {
      const kernels::PointwiseInstruction& in = program.code[static_cast<size_t>(k)];
      const float b = kernels::pointwise_op_is_binary(in.op) ? operand(in.b) : 0.0f;
      registers[in.dst] = reference_pointwise_op(in.op, operand(in.a), b);
    }
    data[i] = registers[0];
  }
  return Status::ok();
}

// Steps 3 (residual, activation, pointwise program) and 4 (output) shared by every layer; bias is
// added by the caller. `channel_axis` is the axis a pointwise program's constants run along (-1:
// the layer takes no program).
Status finish(const Node& node, Inputs inputs, const FusedLayerInfo& fused, Tensor value, size_t y_scale_index,
              size_t residual_index, std::vector<Tensor>& outputs, int64_t channel_axis = -1) {
  if (residual_index != 0 && optional_input(inputs, residual_index) != nullptr) {
    QDQRT_ASSIGN_OR_RETURN(Tensor residual, dequantize_input(node, inputs, residual_index, "residual"));
    if (residual.shape() != value.shape()) {
      return invalid_argument("{}: residual shape differs from the layer's output shape", node.describe());
    }
    QDQRT_ASSIGN_OR_RETURN(value, binary(node, "Add", value, residual));
  }
  if (fused.activation.kind != ActivationKind::kNone) {
    float* data = value.data<float>();
    for (int64_t i = 0; i < value.numel(); ++i) data[i] = fused.activation.apply(data[i]);
  }
  if (fused.has_pointwise()) QDQRT_RETURN_IF_ERROR(apply_pointwise(node, fused, value, channel_axis));
  const Tensor* y_scale = optional_input(inputs, y_scale_index);
  const Tensor* y_zero_point = optional_input(inputs, y_scale_index + 1);
  if (y_scale == nullptr) {
    outputs[0] = std::move(value);
    return Status::ok();
  }
  if (y_zero_point == nullptr) {
    return invalid_argument("{}: y_scale without y_zero_point (the zero-point gives the output type)", node.describe());
  }
  QDQRT_ASSIGN_OR_RETURN(outputs[0], quantize(node, value, *y_scale, *y_zero_point));
  return Status::ok();
}

// bias [C] added along `axis` of value.
// A float layer's Relu or Clip activation, as the ONNX nodes it stands for compute it (any other
// kind: y as it is).
Result<Tensor> float_activation(const Node& node, const FusedActivation& activation, Tensor y) {
  if (activation.kind == ActivationKind::kRelu) {
    QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Relu"), {&y}));
  } else if (activation.kind == ActivationKind::kClip) {
    ClipAttributes clip;
    clip.bounds_from_inputs = false;
    clip.min = activation.min;
    clip.max = activation.max;
    QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Clip", make_attributes(clip)), {&y}));
  }
  return y;
}

Result<Tensor> add_bias(const Node& node, Tensor value, const Tensor& bias, int64_t axis) {
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, bias, "bias", {DataType::kFloat}));
  const int64_t channels = value.dim(axis);
  if (bias.numel() != channels) {
    return invalid_argument("{}: bias has {} values, the output has {} channels", node.describe(), bias.numel(),
                            channels);
  }
  Shape bias_shape(static_cast<size_t>(value.rank()), 1);
  bias_shape[static_cast<size_t>(axis)] = channels;
  return binary(node, "Add", value, bias.reshaped(bias_shape));
}

Status qconv_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QConvAttributes* attributes, typed_attributes<QConvAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(Tensor x, dequantize_input(node, inputs, kConvX, "x"));
  QDQRT_ASSIGN_OR_RETURN(Tensor w, dequantize_input(node, inputs, kConvW, "w", /*axis=*/0));
  const Tensor* bias = optional_input(inputs, kConvBias);
  Node conv = plain_node(node, "Conv", make_attributes(static_cast<const ConvAttributes&>(*attributes)));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(conv, {&x, &w}));
  if (bias != nullptr) {
    QDQRT_ASSIGN_OR_RETURN(y, add_bias(node, std::move(y), *bias, 1));
  }
  return finish(node, inputs, attributes->fused, std::move(y), kConvYScale, kConvResidual, outputs, 1);
}

// FusedConv: the float ops it stands for, in their order: Conv (with its bias), the residual Add,
// then Relu/Clip or Sigmoid/HardSwish/SiLU (Sigmoid then Mul).
Status fused_conv_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const FusedConvAttributes* attributes, typed_attributes<FusedConvAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, kFusedConvX, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w, required_input(node, inputs, kFusedConvW, "w"));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *x, "x", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *w, "w", {DataType::kFloat}));
  std::vector<const Tensor*> conv_inputs = {x, w};
  Tensor gated;
  if (const Tensor* gate = optional_input(inputs, kFusedConvGate)) {
    QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *gate, "gate", {DataType::kFloat}));
    if (x->rank() != 4 || gate->shape() != Shape{x->dim(0), x->dim(1), 1, 1}) {
      return invalid_argument("{}: gate {} is not [N, C, 1, 1] of x {}", node.describe(), shape_to_string(gate->shape()),
                              shape_to_string(x->shape()));
    }
    QDQRT_ASSIGN_OR_RETURN(gated, binary(node, "Mul", *x, *gate));
    conv_inputs[0] = &gated;
  }
  if (const Tensor* bias = optional_input(inputs, kFusedConvBias)) conv_inputs.push_back(bias);
  Node conv = plain_node(node, "Conv", make_attributes(static_cast<const ConvAttributes&>(*attributes)));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(conv, conv_inputs));
  if (const Tensor* residual = optional_input(inputs, kFusedConvResidual)) {
    QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *residual, "residual", {DataType::kFloat}));
    if (residual->shape() != y.shape()) {
      return invalid_argument("{}: residual {} is not shaped like the conv's output {}", node.describe(),
                              shape_to_string(residual->shape()), shape_to_string(y.shape()));
    }
    QDQRT_ASSIGN_OR_RETURN(y, binary(node, "Add", y, *residual));
  }
  const FusedActivation& activation = attributes->fused.activation;
  QDQRT_ASSIGN_OR_RETURN(y, float_activation(node, activation, std::move(y)));
  switch (attributes->function) {
    case ConvEpilogueFunction::kNone: break;
    case ConvEpilogueFunction::kSigmoid: {
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Sigmoid"), {&y}));
      break;
    }
    case ConvEpilogueFunction::kHardSwish: {
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "HardSwish"), {&y}));
      break;
    }
    case ConvEpilogueFunction::kSiLU: {
      QDQRT_ASSIGN_OR_RETURN(Tensor sigmoid, run_single(plain_node(node, "Sigmoid"), {&y}));
      QDQRT_ASSIGN_OR_RETURN(y, binary(node, "Mul", y, sigmoid));
      break;
    }
  }
  if (outputs.size() > kFusedConvRowSums) {
    // The row sums [N, OH, C] of y [N, C, OH, OW], summed in double.
    if (y.rank() != 4) return invalid_argument("{}: row sums need a 2-D conv", node.describe());
    const int64_t batch = y.dim(0), channels = y.dim(1), height = y.dim(2), width = y.dim(3);
    Tensor sums(DataType::kFloat, {batch, height, channels});
    const float* in = y.data<float>();
    float* out = sums.data<float>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t h = 0; h < height; ++h) {
          const float* row = in + ((n * channels + c) * height + h) * width;
          double sum = 0.0;
          for (int64_t w = 0; w < width; ++w) sum += row[w];
          out[(n * height + h) * channels + c] = static_cast<float>(sum);
        }
      }
    }
    outputs[kFusedConvRowSums] = std::move(sums);
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

// One part of a FusedDepthwiseConv as a FusedConv (`attributes`' window and group, `epilogue`)
// over x: its output, and with `row_sums` its row sums too.
Result<std::vector<Tensor>> run_part(const Node& node, const ConvAttributes& window, const ConvEpilogue& epilogue,
                                     const Tensor& x, const Tensor* w, const Tensor* bias, const Tensor* residual,
                                     bool row_sums) {
  FusedConvAttributes attributes;
  static_cast<ConvAttributes&>(attributes) = window;
  attributes.fused.activation = epilogue.activation;
  attributes.function = epilogue.function;
  Node part = plain_node(node, layers::kFusedConv, make_attributes(std::move(attributes)));
  const Tensor* inputs[] = {&x, w, bias, residual};
  std::vector<Tensor> outputs(row_sums ? 2 : 1);
  QDQRT_RETURN_IF_ERROR(fused_conv_kernel(part, inputs, outputs));
  return outputs;
}

// FusedDepthwiseConv: the expansion, the depthwise and the projection as three FusedConvs, in order.
Status fused_depthwise_conv_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const FusedDepthwiseConvAttributes* attributes,
                         typed_attributes<FusedDepthwiseConvAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, kFusedDepthwiseX, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* w, required_input(node, inputs, kFusedDepthwiseW, "w"));
  const Tensor* expand_w = optional_input(inputs, kFusedDepthwiseExpandW);
  const Tensor* project_w = optional_input(inputs, kFusedDepthwiseProjectW);
  const Tensor* residual = optional_input(inputs, kFusedDepthwiseResidual);
  if (project_w == nullptr && residual != nullptr) {
    return invalid_argument("{}: a residual needs a projection", node.describe());
  }
  if (project_w != nullptr && outputs.size() > 1) {
    return invalid_argument("{}: row sums are the depthwise's output's, which a projection reads", node.describe());
  }
  const ConvAttributes pointwise;  // 1x1, stride 1, no pads
  Tensor e = *x;
  if (expand_w != nullptr) {
    QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> expanded,
                           run_part(node, pointwise, attributes->expand, *x, expand_w,
                                    optional_input(inputs, kFusedDepthwiseExpandBias), nullptr, false));
    e = std::move(expanded[0]);
  }
  const ConvEpilogue depthwise{.activation = attributes->fused.activation, .function = attributes->function};
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> d,
                         run_part(node, *attributes, depthwise, e, w, optional_input(inputs, kFusedDepthwiseBias),
                                  nullptr, outputs.size() > 1));
  if (project_w == nullptr) {
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = std::move(d[i]);
    return Status::ok();
  }
  QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> y,
                         run_part(node, pointwise, attributes->project, d[0], project_w,
                                  optional_input(inputs, kFusedDepthwiseProjectBias), residual, false));
  outputs[0] = std::move(y[0]);
  return Status::ok();
}

// FusedBatchNorm: Concat along axis 1 (skipped for one input), BatchNormalization, then the
// activation, each the plain op's reference kernel.
Status fused_batchnorm_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const FusedBatchNormAttributes* attributes, typed_attributes<FusedBatchNormAttributes>(node));
  if (inputs.size() <= kFusedBatchNormFirstX) {
    return invalid_argument("{}: needs scale, B, mean, var and at least one x, got {} inputs", node.describe(),
                            inputs.size());
  }
  std::vector<const Tensor*> xs;
  for (size_t slot = kFusedBatchNormFirstX; slot < inputs.size(); ++slot) {
    QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, slot, "x"));
    xs.push_back(x);
  }
  Tensor concatenated;
  const Tensor* x = xs[0];
  if (xs.size() > 1) {
    ConcatAttributes concat;
    concat.axis = 1;
    QDQRT_ASSIGN_OR_RETURN(concatenated, run_single(plain_node(node, "Concat", make_attributes(concat)), xs));
    x = &concatenated;
  }
  BatchNormalizationAttributes batchnorm;
  batchnorm.epsilon = attributes->epsilon;
  std::vector<const Tensor*> batchnorm_inputs = {x};
  for (size_t slot = kFusedBatchNormScale; slot < kFusedBatchNormFirstX; ++slot) {
    QDQRT_ASSIGN_OR_RETURN(const Tensor* parameter, required_input(node, inputs, slot, "scale, B, mean or var"));
    batchnorm_inputs.push_back(parameter);
  }
  QDQRT_ASSIGN_OR_RETURN(Tensor y,
                         run_single(plain_node(node, "BatchNormalization", make_attributes(batchnorm)), batchnorm_inputs));
  const FusedActivation& activation = attributes->fused.activation;
  if (activation.kind != ActivationKind::kNone && activation.kind != ActivationKind::kRelu &&
      activation.kind != ActivationKind::kClip) {
    return invalid_argument("{}: activation {} is not taken", node.describe(), activation_kind_name(activation.kind));
  }
  QDQRT_ASSIGN_OR_RETURN(y, float_activation(node, activation, std::move(y)));
  outputs[0] = std::move(y);
  return Status::ok();
}

// RowSumsGlobalAveragePool: the mean of x [N, C, H, W] per channel from its row sums [N, H, C].
Status row_sums_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, kRowSumsPoolX, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* sums, required_input(node, inputs, kRowSumsPoolSums, "row_sums"));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *x, "x", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *sums, "row_sums", {DataType::kFloat}));
  if (x->rank() != 4 || sums->shape() != Shape{x->dim(0), x->dim(2), x->dim(1)} || x->dim(2) * x->dim(3) < 1) {
    return invalid_argument("{}: row sums {} are not [N, H, C] of x {}", node.describe(),
                            shape_to_string(sums->shape()), shape_to_string(x->shape()));
  }
  const int64_t batch = x->dim(0), channels = x->dim(1), height = x->dim(2);
  const double plane = static_cast<double>(x->dim(2) * x->dim(3));
  Tensor y(DataType::kFloat, {batch, channels, 1, 1});
  const float* in = sums->data<float>();
  float* out = y.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0.0;
      for (int64_t h = 0; h < height; ++h) sum += in[(n * height + h) * channels + c];
      out[n * channels + c] = static_cast<float>(sum / plane);
    }
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

Status qmatmul_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QMatMulAttributes* attributes, typed_attributes<QMatMulAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(Tensor a, dequantize_input(node, inputs, kMatMulA, "a"));
  // Per-column weight scales run along the last axis of b ([K][N]).
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b_raw, required_input(node, inputs, kMatMulB, "b"));
  QDQRT_ASSIGN_OR_RETURN(Tensor b, dequantize_input(node, inputs, kMatMulB, "b", b_raw->rank() - 1));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(plain_node(node, "MatMul"), {&a, &b}));
  const Tensor* bias = optional_input(inputs, kMatMulBias);
  if (bias != nullptr) {
    const int64_t last_axis = y.rank() - 1;
    QDQRT_ASSIGN_OR_RETURN(y, add_bias(node, std::move(y), *bias, last_axis));
  }
  const int64_t channel_axis = y.rank() - 1;
  return finish(node, inputs, attributes->fused, std::move(y), kMatMulYScale, kMatMulResidual, outputs, channel_axis);
}

// FusedMatMul: MatMul, then the Add of the bias (broadcast as the Add it stands for did), then the
// Gelu when "function" says so.
Status fused_matmul_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const FusedMatMulAttributes* attributes, typed_attributes<FusedMatMulAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a, required_input(node, inputs, kFusedMatMulA, "a"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b, required_input(node, inputs, kFusedMatMulB, "b"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* bias, required_input(node, inputs, kFusedMatMulBias, "bias"));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(plain_node(node, "MatMul"), {a, b}));
  QDQRT_ASSIGN_OR_RETURN(y, binary(node, "Add", y, *bias));
  if (attributes->gelu) {
    QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Gelu", make_attributes(GeluAttributes{})), {&y}));
  }
  outputs[0] = std::move(y);
  return Status::ok();
}

template <bool kIsAdd>
Status qbinary_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QBinaryAttributes* attributes, typed_attributes<QBinaryAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(Tensor a, dequantize_input(node, inputs, kBinaryA, "a"));
  QDQRT_ASSIGN_OR_RETURN(Tensor b, dequantize_input(node, inputs, kBinaryB, "b"));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, binary(node, kIsAdd ? "Add" : "Mul", a, b));
  return finish(node, inputs, attributes->fused, std::move(y), kBinaryYScale, 0, outputs);
}

Status qaverage_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QAveragePoolAttributes* attributes, typed_attributes<QAveragePoolAttributes>(node));
  Tensor x;
  if (optional_input(inputs, kUnaryXScale) == nullptr) {
    // A float x (the fused AveragePool -> QuantizeLinear): the pool reads it as is.
    QDQRT_ASSIGN_OR_RETURN(const Tensor* float_x, required_input(node, inputs, kUnaryX, "x"));
    QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *float_x, "x without x_scale", {DataType::kFloat}));
    x = *float_x;
  } else {
    QDQRT_ASSIGN_OR_RETURN(x, dequantize_input(node, inputs, kUnaryX, "x"));
  }
  Node pool = plain_node(node, "AveragePool", make_attributes(static_cast<const AveragePoolAttributes&>(*attributes)));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(pool, {&x}));
  return finish(node, inputs, attributes->fused, std::move(y), kUnaryYScale, 0, outputs);
}

Status qglobal_average_pool_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QGlobalAveragePoolAttributes* attributes,
                         typed_attributes<QGlobalAveragePoolAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(Tensor x, dequantize_input(node, inputs, kUnaryX, "x"));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(plain_node(node, "GlobalAveragePool"), {&x}));
  return finish(node, inputs, attributes->fused, std::move(y), kUnaryYScale, 0, outputs);
}

Status qlookup_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QLookupAttributes* attributes, typed_attributes<QLookupAttributes>(node));
  if (optional_input(inputs, kUnaryYScale) == nullptr) {
    return invalid_argument("{}: QLookup needs y_scale and y_zero_point", node.describe());
  }
  QDQRT_ASSIGN_OR_RETURN(Tensor x, dequantize_input(node, inputs, kUnaryX, "x"));
  Tensor y;
  switch (attributes->function) {
    case LookupFunction::kSigmoid: {
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Sigmoid"), {&x}));
      break;
    }
    case LookupFunction::kTanh: {
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Tanh"), {&x}));
      break;
    }
    case LookupFunction::kHardSwish: {
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "HardSwish"), {&x}));
      break;
    }
    case LookupFunction::kHardSigmoid: {
      HardSigmoidAttributes hard_sigmoid;
      hard_sigmoid.alpha = attributes->alpha;
      hard_sigmoid.beta = attributes->beta;
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "HardSigmoid", make_attributes(hard_sigmoid)), {&x}));
      break;
    }
    case LookupFunction::kGelu: {
      GeluAttributes gelu;
      gelu.tanh_approximation = attributes->tanh_approximation;
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Gelu", make_attributes(gelu)), {&x}));
      break;
    }
    case LookupFunction::kSiLU: {
      // x * Sigmoid(x), as the source subgraph computes it.
      QDQRT_ASSIGN_OR_RETURN(Tensor sigmoid, run_single(plain_node(node, "Sigmoid"), {&x}));
      QDQRT_ASSIGN_OR_RETURN(y, binary(node, "Mul", x, sigmoid));
      break;
    }
    case LookupFunction::kQuantizedSiLU: {
      // x * DQ(Q(Sigmoid(x))): the sigmoid quantized in between, as ONNX Runtime's QDQ SiLU does.
      QDQRT_ASSIGN_OR_RETURN(Tensor sigmoid, run_single(plain_node(node, "Sigmoid"), {&x}));
      const Tensor scale = Tensor::scalar<float>(attributes->sigmoid_scale);
      const Tensor zero_point =
          attributes->sigmoid_signed ? Tensor::scalar<int8_t>(static_cast<int8_t>(attributes->sigmoid_zero_point))
                                     : Tensor::scalar<uint8_t>(static_cast<uint8_t>(attributes->sigmoid_zero_point));
      QDQRT_ASSIGN_OR_RETURN(Tensor quantized, quantize(node, sigmoid, scale, zero_point));
      QDQRT_ASSIGN_OR_RETURN(Tensor dequantized, dequantize(node, quantized, scale, &zero_point, 1));
      QDQRT_ASSIGN_OR_RETURN(y, binary(node, "Mul", x, dequantized));
      break;
    }
    case LookupFunction::kErf: {
      // The float Div/Mul by the constant, then Erf, as the source subgraph computes them.
      QDQRT_ASSIGN_OR_RETURN(Tensor scaled, binary(node, attributes->operand_divides ? "Div" : "Mul", x,
                                                   Tensor::scalar<float>(attributes->operand)));
      QDQRT_ASSIGN_OR_RETURN(y, run_single(plain_node(node, "Erf"), {&scaled}));
      break;
    }
    case LookupFunction::kConstantAdd:
    case LookupFunction::kConstantMul: {
      // The float Add/Mul of the dequantized constant the source QAdd/QMul read.
      const char* op = attributes->function == LookupFunction::kConstantAdd ? "Add" : "Mul";
      QDQRT_ASSIGN_OR_RETURN(y, binary(node, op, x, Tensor::scalar<float>(attributes->operand)));
      break;
    }
  }
  return finish(node, inputs, attributes->fused, std::move(y), kUnaryYScale, 0, outputs);
}

Status qconcat_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QConcatAttributes* attributes, typed_attributes<QConcatAttributes>(node));
  if (inputs.size() < kConcatFirstX + 3 || (inputs.size() - kConcatFirstX) % 3 != 0) {
    return invalid_argument("{}: expects y_scale, y_zero_point and (x, x_scale, x_zero_point) triples, got {} inputs",
                            node.describe(), inputs.size());
  }
  std::vector<Tensor> parts;
  for (size_t first = kConcatFirstX; first < inputs.size(); first += 3) {
    QDQRT_ASSIGN_OR_RETURN(Tensor part, dequantize_input(node, inputs, first, "x"));
    parts.push_back(std::move(part));
  }
  std::vector<const Tensor*> part_pointers;
  for (const Tensor& part : parts) part_pointers.push_back(&part);
  ConcatAttributes concat;
  concat.axis = attributes->axis;
  QDQRT_ASSIGN_OR_RETURN(Tensor y, run_single(plain_node(node, "Concat", make_attributes(concat)), part_pointers));
  return finish(node, inputs, attributes->fused, std::move(y), kConcatYScale, 0, outputs);
}

Status qrequantize_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const QRequantizeAttributes* attributes, typed_attributes<QRequantizeAttributes>(node));
  if (optional_input(inputs, kUnaryYScale) == nullptr) {
    return invalid_argument("{}: QRequantize needs y_scale and y_zero_point", node.describe());
  }
  QDQRT_ASSIGN_OR_RETURN(Tensor x, dequantize_input(node, inputs, kUnaryX, "x"));
  return finish(node, inputs, attributes->fused, std::move(x), kUnaryYScale, 0, outputs);
}

// ChannelGate: the Mul it replaced (float, numpy broadcasting), then the Q that followed it.
Status channel_gate_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const ChannelGateAttributes* attributes, typed_attributes<ChannelGateAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, kGateX, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* gate, required_input(node, inputs, kGateGate, "gate"));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *x, "x", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *gate, "gate", {DataType::kFloat}));
  QDQRT_ASSIGN_OR_RETURN(Tensor y, binary(node, "Mul", *x, *gate));
  return finish(node, inputs, attributes->fused, std::move(y), kGateYScale, 0, outputs);
}

// AddQuantize: the Add it replaced (float, equal shapes), the Relu when one followed, then the Q;
// output 1 (when the node has it) the float value the Q read.
Status add_quantize_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const AddQuantizeAttributes* attributes, typed_attributes<AddQuantizeAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* a, required_input(node, inputs, kAddQuantizeA, "a"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* b, required_input(node, inputs, kAddQuantizeB, "b"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* y_scale, required_input(node, inputs, kAddQuantizeYScale, "y_scale"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* y_zero_point,
                         required_input(node, inputs, kAddQuantizeYZeroPoint, "y_zero_point"));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *a, "a", {DataType::kFloat}));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *b, "b", {DataType::kFloat}));
  if (a->shape() != b->shape()) return invalid_argument("{}: a and b must have one shape", node.describe());
  if (attributes->fused.activation.kind != ActivationKind::kNone &&
      attributes->fused.activation.kind != ActivationKind::kRelu) {
    return invalid_argument("{}: activation {} is not taken", node.describe(),
                            activation_kind_name(attributes->fused.activation.kind));
  }
  QDQRT_ASSIGN_OR_RETURN(Tensor sum, binary(node, "Add", *a, *b));
  QDQRT_ASSIGN_OR_RETURN(sum, float_activation(node, attributes->fused.activation, std::move(sum)));
  QDQRT_ASSIGN_OR_RETURN(outputs[0], quantize(node, sum, *y_scale, *y_zero_point));
  if (outputs.size() > 1) outputs[1] = std::move(sum);
  return Status::ok();
}

// LayerNorm over the last axis in double (the oracle of the engine's float kernel), then the Q.
Status layer_norm_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const LayerNormAttributes* attributes, typed_attributes<LayerNormAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, kNormX, "x"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* gamma, required_input(node, inputs, kNormGamma, "gamma"));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* beta, required_input(node, inputs, kNormBeta, "beta"));
  for (const auto& [tensor, role] : {std::pair{x, "x"}, {gamma, "gamma"}, {beta, "beta"}}) {
    QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *tensor, role, {DataType::kFloat}));
  }
  const int64_t columns = x->rank() == 0 ? 1 : x->dim(x->rank() - 1);
  if (x->rank() == 0 || gamma->numel() != columns || beta->numel() != columns) {
    return invalid_argument("{}: gamma and beta must have the last dim of x ({} values)", node.describe(), columns);
  }
  Tensor y(DataType::kFloat, x->shape());
  const int64_t rows = columns == 0 ? 0 : x->numel() / columns;
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x->data<float>() + row * columns;
    float* out = y.data<float>() + row * columns;
    double sum = 0.0;
    for (int64_t c = 0; c < columns; ++c) sum += in[c];
    const double mean = sum / static_cast<double>(columns);
    double squares = 0.0;
    for (int64_t c = 0; c < columns; ++c) squares += (in[c] - mean) * (in[c] - mean);
    const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(columns) + attributes->epsilon);
    for (int64_t c = 0; c < columns; ++c) {
      out[c] = static_cast<float>((in[c] - mean) * inverse * gamma->data<float>()[c] + beta->data<float>()[c]);
    }
  }
  return finish(node, inputs, attributes->fused, std::move(y), kNormYScale, 0, outputs);
}

// Softmax over the last axis in double, then the Q that followed it (required).
Status softmax_quantize_kernel(const Node& node, Inputs inputs, std::vector<Tensor>& outputs) {
  using namespace layers;
  QDQRT_ASSIGN_OR_RETURN(const SoftmaxQuantizeAttributes* attributes,
                         typed_attributes<SoftmaxQuantizeAttributes>(node));
  QDQRT_ASSIGN_OR_RETURN(const Tensor* x, required_input(node, inputs, kSoftmaxX, "x"));
  QDQRT_RETURN_IF_ERROR(reference::expect_dtype(node, *x, "x", {DataType::kFloat}));
  if (optional_input(inputs, kSoftmaxYScale) == nullptr) {
    return invalid_argument("{}: y_scale is required (the fused Softmax writes 8 bits)", node.describe());
  }
  const int64_t columns = x->rank() == 0 ? 1 : x->dim(x->rank() - 1);
  Tensor y(DataType::kFloat, x->shape());
  const int64_t rows = columns == 0 ? 0 : x->numel() / columns;
  for (int64_t row = 0; row < rows; ++row) {
    const float* in = x->data<float>() + row * columns;
    float* out = y.data<float>() + row * columns;
    const double max_value = *std::max_element(in, in + columns);
    double sum = 0.0;
    for (int64_t c = 0; c < columns; ++c) sum += std::exp(in[c] - max_value);
    for (int64_t c = 0; c < columns; ++c) out[c] = static_cast<float>(std::exp(in[c] - max_value) / sum);
  }
  return finish(node, inputs, attributes->fused, std::move(y), kSoftmaxYScale, 0, outputs);
}

}  // namespace

void register_fused_kernels(KernelRegistry& registry) {
  registry.add(layers::kDomain, layers::kQConv, qconv_kernel);
  registry.add(layers::kDomain, layers::kFusedConv, fused_conv_kernel);
  registry.add(layers::kDomain, layers::kRowSumsGlobalAveragePool, row_sums_pool_kernel);
  registry.add(layers::kDomain, layers::kFusedBatchNorm, fused_batchnorm_kernel);
  registry.add(layers::kDomain, layers::kFusedDepthwiseConv, fused_depthwise_conv_kernel);
  registry.add(layers::kDomain, layers::kQMatMul, qmatmul_kernel);
  registry.add(layers::kDomain, layers::kFusedMatMul, fused_matmul_kernel);
  registry.add(layers::kDomain, layers::kQAdd, qbinary_kernel<true>);
  registry.add(layers::kDomain, layers::kQMul, qbinary_kernel<false>);
  registry.add(layers::kDomain, layers::kQAveragePool, qaverage_pool_kernel);
  registry.add(layers::kDomain, layers::kQGlobalAveragePool, qglobal_average_pool_kernel);
  registry.add(layers::kDomain, layers::kQLookup, qlookup_kernel);
  registry.add(layers::kDomain, layers::kQConcat, qconcat_kernel);
  registry.add(layers::kDomain, layers::kQRequantize, qrequantize_kernel);
  registry.add(layers::kDomain, layers::kChannelGate, channel_gate_kernel);
  registry.add(layers::kDomain, layers::kAddQuantize, add_quantize_kernel);
  registry.add(layers::kDomain, layers::kLayerNorm, layer_norm_kernel);
  registry.add(layers::kDomain, layers::kSoftmax, softmax_quantize_kernel);
}

}  // namespace qdqrt
