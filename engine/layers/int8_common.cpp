#include "engine/layers/int8_common.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/dispatch.h"

namespace qdqrt::engine::int8 {

// ---------------------------------------------------------------------------------------------
// Build side

Result<const Tensor*> constant_input(const Node& node, const BuildContext& context, size_t index, const char* role,
                                     DataType dtype, int64_t expected_count) {
  if (!node.has_input(index)) return unsupported("{}: {} is absent", node.describe(), role);
  const Tensor* tensor = context.constant(node.input(index));
  if (tensor == nullptr) return unsupported("{}: {} '{}' is not a constant", node.describe(), role, node.input(index));
  if (tensor->dtype() != dtype) {
    return unsupported("{}: {} has dtype {}, expected {}", node.describe(), role, dtype_name(tensor->dtype()),
                       dtype_name(dtype));
  }
  if (expected_count >= 0 && tensor->numel() != expected_count) {
    return unsupported("{}: {} has {} values, expected {}", node.describe(), role, tensor->numel(), expected_count);
  }
  return tensor;
}

Result<float> scale_input(const Node& node, const BuildContext& context, size_t index, const char* role) {
  QDQRT_ASSIGN_OR_RETURN(const Tensor* tensor, constant_input(node, context, index, role, DataType::kFloat, 1));
  const float value = tensor->data<float>()[0];
  if (!std::isfinite(value) || value <= 0.0f) return unsupported("{}: {} is {}", node.describe(), role, value);
  return value;
}

Result<int32_t> zero_point_input(const Node& node, const BuildContext& context, size_t index, const char* role,
                                 int64_t count, DataType* dtype) {
  if (!node.has_input(index)) return 0;
  const Tensor* tensor = context.constant(node.input(index));
  if (tensor == nullptr) return unsupported("{}: {} is not a constant", node.describe(), role);
  if (!is_8bit(tensor->dtype())) {
    return unsupported("{}: {} has dtype {}", node.describe(), role, dtype_name(tensor->dtype()));
  }
  if (tensor->numel() != 1 && tensor->numel() != count) {
    return unsupported("{}: {} has {} values", node.describe(), role, tensor->numel());
  }
  const int64_t first = tensor->value_as_int64(0);
  for (int64_t i = 1; i < tensor->numel(); ++i) {
    if (tensor->value_as_int64(i) != first) {
      return unsupported("{}: {} differs between channels (the kernels take one zero-point)", node.describe(), role);
    }
  }
  if (dtype) *dtype = tensor->dtype();
  return static_cast<int32_t>(first);
}

Result<Shape> static_shape(const Node& node, const BuildContext& context, const std::string& value) {
  QDQRT_ASSIGN_OR_RETURN(Shape shape, context.shape_of(value));
  for (int64_t dim : shape) {
    if (dim < 1 || dim > kMaxDim) return unsupported("{}: value '{}' has dim {}", node.describe(), value, dim);
  }
  return shape;
}

Result<Window2d> resolve_window_2d(const Node& node, const int64_t input_size[2],
                                   const std::vector<int64_t>& kernel_shape, const WindowAttributes& attributes) {
  if (kernel_shape.size() != 2) return unsupported("{}: only 2-D windows", node.describe());
  Result<WindowGeometry> geometry = resolve_window(node, {input_size[0], input_size[1]}, kernel_shape, attributes);
  if (!geometry.ok()) return unsupported("{}", geometry.status().message());
  Window2d window;
  for (int axis = 0; axis < 2; ++axis) {
    const int spatial_axis = axis + 1;  // WindowGeometry keeps 3 axes, the first a unit one here
    window.kernel[axis] = geometry->kernel[spatial_axis];
    window.stride[axis] = geometry->strides[spatial_axis];
    window.dilation[axis] = geometry->dilations[spatial_axis];
    window.pad_begin[axis] = geometry->pads_begin[spatial_axis];
    window.pad_end[axis] = geometry->pads_end[spatial_axis];
    window.output[axis] = geometry->output[spatial_axis];
    if (window.kernel[axis] < 1 || window.kernel[axis] > 64 || window.stride[axis] < 1 || window.stride[axis] > 64 ||
        window.dilation[axis] < 1 || window.dilation[axis] > 64) {
      return unsupported("{}: window {}x{} stride {} dilation {} out of range", node.describe(), window.kernel[0],
                         window.kernel[1], window.stride[axis], window.dilation[axis]);
    }
    const int64_t extent = (window.kernel[axis] - 1) * window.dilation[axis] + 1;
    if (window.pad_begin[axis] < 0 || window.pad_end[axis] < 0 || window.pad_begin[axis] >= extent ||
        window.pad_end[axis] >= extent) {
      return unsupported("{}: padding {}/{} for a window of {}", node.describe(), window.pad_begin[axis],
                         window.pad_end[axis], extent);
    }
  }
  return window;
}

std::string fused_layer_name(const Node& node) {
  const FusedLayerInfo* fused = fused_layer_info(node);
  if (fused == nullptr || fused->fused_nodes.empty()) return node.name;
  std::string name;
  for (const std::string& source : fused->fused_nodes) name += (name.empty() ? "" : " + ") + source;
  return name;
}

PlanLayer node_layer(const Node& node, const char* kind) {
  PlanLayer layer;
  layer.kind = kind;
  layer.name = fused_layer_name(node);
  layer.source_nodes = {node.name};
  layer.op_type = node.op_type;
  return layer;
}

kernels::Activation kernel_activation(const FusedLayerInfo& fused) {
  kernels::Activation activation;
  switch (fused.activation.kind) {
    case qdqrt::ActivationKind::kNone: break;
    case qdqrt::ActivationKind::kRelu: activation.kind = kernels::ActivationKind::kRelu; break;
    case qdqrt::ActivationKind::kClip:
      activation.kind = kernels::ActivationKind::kClip;
      activation.clip_min = fused.activation.min;
      activation.clip_max = fused.activation.max;
      break;
    case qdqrt::ActivationKind::kLeakyRelu:
      activation.kind = kernels::ActivationKind::kLeakyRelu;
      activation.leaky_alpha = fused.activation.alpha;
      break;
  }
  return activation;
}

kernels::OutputType output_type_of(DataType dtype) {
  return dtype == DataType::kInt8 ? kernels::OutputType::kS8
         : dtype == DataType::kUint8 ? kernels::OutputType::kU8
                                     : kernels::OutputType::kF32;
}

// ---------------------------------------------------------------------------------------------
// Epilogue

Result<std::shared_ptr<const PointwiseProgramData>> make_pointwise_program(std::vector<int64_t> code,
                                                                           int64_t channels,
                                                                           std::vector<float> constants) {
  auto data = std::make_shared<PointwiseProgramData>();
  data->code = std::move(code);
  data->channels = channels;
  data->constants = std::move(constants);
  if (channels < 0 || channels > kMaxDim) return invalid_argument("pointwise program: {} channels", channels);
  const int64_t row = channels > 0 ? channels : 1;
  if (static_cast<int64_t>(data->constants.size()) % row != 0) {
    return invalid_argument("pointwise program: {} constants are not rows of {} channels", data->constants.size(), row);
  }
  const int64_t slots = static_cast<int64_t>(data->constants.size()) / row;
  if (slots > kernels::kMaxPointwiseConstants) return invalid_argument("pointwise program: {} constant slots", slots);
  kernels::PointwiseProgram& program = data->program;
  std::string problem = kernels::decode_pointwise_code(data->code.data(), data->code.size(), program);
  if (!problem.empty()) return invalid_argument("pointwise program: {}", problem);
  program.constant_slots = static_cast<int>(slots);
  if (channels > 0) {
    const int64_t stride = round_up(channels, 16);
    data->padded.assign(static_cast<size_t>(slots * stride), 0.0f);
    for (int64_t slot = 0; slot < slots; ++slot) {
      std::copy_n(data->constants.begin() + slot * channels, channels, data->padded.begin() + slot * stride);
    }
    program.constant_stride = stride;
  } else {
    data->padded = data->constants;
    program.constant_stride = 0;
  }
  program.constants = data->padded.empty() ? nullptr : data->padded.data();
  problem = kernels::validate_pointwise_program(program);
  if (!problem.empty()) return invalid_argument("pointwise program: {}", problem);
  return std::shared_ptr<const PointwiseProgramData>(std::move(data));
}

Result<EpilogueSpec> read_epilogue_inputs(const Node& node, const BuildContext& context, size_t y_scale_index,
                                          const Shape& y_shape, const kernels::Activation& activation,
                                          int64_t channels) {
  const size_t y_zero_point_index = y_scale_index + 1, residual_index = y_scale_index + 2;
  const size_t residual_scale_index = y_scale_index + 3, residual_zero_point_index = y_scale_index + 4;
  EpilogueSpec e;
  e.activation = activation;
  if (node.has_input(y_scale_index)) {
    QDQRT_ASSIGN_OR_RETURN(e.output_scale, scale_input(node, context, y_scale_index, "y_scale"));
    if (!node.has_input(y_zero_point_index)) return unsupported("{}: y_scale without y_zero_point", node.describe());
    DataType y_dtype = DataType::kUndefined;
    QDQRT_ASSIGN_OR_RETURN(e.output_zero_point,
                           zero_point_input(node, context, y_zero_point_index, "y_zero_point", 1, &y_dtype));
    e.output_type = output_type_of(y_dtype);
  } else {
    e.output_type = kernels::OutputType::kF32;
  }
  if (node.has_input(residual_index)) {
    const std::string& residual = node.input(residual_index);
    if (context.constant(residual) != nullptr) return unsupported("{}: constant residual", node.describe());
    QDQRT_ASSIGN_OR_RETURN(DataType residual_dtype, context.dtype_of(residual));
    QDQRT_ASSIGN_OR_RETURN(Shape residual_shape, static_shape(node, context, residual));
    if (!is_8bit(residual_dtype) || residual_shape != y_shape) {
      return unsupported("{}: residual must be int8/uint8 shaped like the output", node.describe());
    }
    e.has_residual = true;
    e.residual_signed = residual_dtype == DataType::kInt8;
    QDQRT_ASSIGN_OR_RETURN(e.residual_scale, scale_input(node, context, residual_scale_index, "residual_scale"));
    DataType residual_zp_dtype = residual_dtype;
    QDQRT_ASSIGN_OR_RETURN(e.residual_zero_point, zero_point_input(node, context, residual_zero_point_index,
                                                                   "residual_zero_point", 1, &residual_zp_dtype));
    if (residual_zp_dtype != residual_dtype) return unsupported("{}: residual zero-point type", node.describe());
  }
  const FusedLayerInfo* fused = fused_layer_info(node);
  if (fused != nullptr && fused->has_pointwise()) {
    if (fused->pointwise_channels > 0 && fused->pointwise_channels != channels) {
      return invalid_argument("{}: pointwise constants have {} channels, the output has {}", node.describe(),
                              fused->pointwise_channels, channels);
    }
    auto program = make_pointwise_program(fused->pointwise_code, fused->pointwise_channels, fused->pointwise_constants);
    if (!program.ok()) return invalid_argument("{}: {}", node.describe(), program.status().message());
    e.program = std::move(program).value();
  }
  return e;
}

void store_epilogue(PlanLayer& layer, const EpilogueSpec& spec) {
  using namespace params;
  kOutputType.write(layer, spec.output_type);
  kOutputScale.write(layer, spec.output_scale);
  kOutputZeroPoint.write(layer, spec.output_zero_point);
  kActivation.write(layer, spec.activation.kind);
  kClipMin.write(layer, spec.activation.clip_min);
  kClipMax.write(layer, spec.activation.clip_max);
  kLeakyAlpha.write(layer, spec.activation.leaky_alpha);
  kResidual.write(layer, spec.has_residual);
  if (spec.has_residual) {
    kResidualSigned.write(layer, spec.residual_signed);
    kResidualScale.write(layer, spec.residual_scale);
    kResidualZeroPoint.write(layer, spec.residual_zero_point);
  }
  kPointwise.write(layer, spec.program != nullptr);
  if (spec.program) {
    kPointwiseCode.write(layer, spec.program->code);
    kPointwiseChannels.write(layer, spec.program->channels);
    kPointwiseConstants.write(layer, spec.program->constants);
  }
}

Result<EpilogueSpec> load_epilogue(const BindContext& context) {
  using namespace params;
  EpilogueSpec spec;
  QDQRT_ASSIGN_OR_RETURN(spec.output_type, kOutputType.read(context));
  QDQRT_ASSIGN_OR_RETURN(spec.output_scale, kOutputScale.read(context));
  if (spec.output_type == kernels::OutputType::kF32) {
    QDQRT_ASSIGN_OR_RETURN(spec.output_zero_point, kOutputZeroPoint.read_in(context, 0, 0));
  } else {
    QDQRT_ASSIGN_OR_RETURN(spec.output_zero_point,
                           read_zero_point(context, kOutputZeroPoint, spec.output_type == kernels::OutputType::kS8));
  }
  QDQRT_ASSIGN_OR_RETURN(spec.activation.kind, kActivation.read(context));
  // Clip bounds may be +-inf (an absent bound); NaN is refused.
  QDQRT_ASSIGN_OR_RETURN(spec.activation.clip_min, kClipMin.read(context));
  QDQRT_ASSIGN_OR_RETURN(spec.activation.clip_max, kClipMax.read(context));
  QDQRT_ASSIGN_OR_RETURN(spec.activation.leaky_alpha, kLeakyAlpha.read(context));
  if (spec.activation.clip_min > spec.activation.clip_max) {
    return context.error(
        fmt::format("invalid clip bounds [{}, {}]", spec.activation.clip_min, spec.activation.clip_max));
  }
  QDQRT_ASSIGN_OR_RETURN(spec.has_residual, kResidual.read(context));
  if (spec.has_residual) {
    QDQRT_ASSIGN_OR_RETURN(spec.residual_signed, kResidualSigned.read(context));
    QDQRT_ASSIGN_OR_RETURN(spec.residual_scale, kResidualScale.read(context));
    QDQRT_ASSIGN_OR_RETURN(spec.residual_zero_point,
                           read_zero_point(context, kResidualZeroPoint, spec.residual_signed));
  }
  QDQRT_ASSIGN_OR_RETURN(bool has_program, kPointwise.read(context));
  if (has_program) {
    QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> code, kPointwiseCode.read_any(context));
    QDQRT_ASSIGN_OR_RETURN(int64_t channels, kPointwiseChannels.read(context));
    QDQRT_ASSIGN_OR_RETURN(std::vector<float> constants, kPointwiseConstants.read(context, -1));
    auto program = make_pointwise_program(std::move(code), channels, std::move(constants));
    if (!program.ok()) return context.error(std::string(program.status().message()));
    spec.program = std::move(program).value();
  }
  return spec;
}

float fold_scale(const EpilogueSpec& spec) {
  // A pointwise program needs real units: the output scale is divided after it.
  return spec.output_type == kernels::OutputType::kF32 || spec.program ? 1.0f : spec.output_scale;
}

kernels::Epilogue build_epilogue(const EpilogueSpec& spec, int64_t residual_row_stride) {
  static const int8_t kPlaceholder = 0;
  kernels::Residual residual;
  residual.data = &kPlaceholder;
  residual.row_stride = residual_row_stride;
  residual.is_signed = spec.residual_signed;
  residual.scale = spec.residual_scale;
  residual.zero_point = spec.residual_zero_point;
  return kernels::make_epilogue(spec.output_type, spec.output_scale, spec.output_zero_point, spec.activation,
                                spec.has_residual ? &residual : nullptr,
                                spec.program ? &spec.program->program : nullptr);
}

DataType epilogue_dtype(const EpilogueSpec& spec) {
  switch (spec.output_type) {
    case kernels::OutputType::kS8: return DataType::kInt8;
    case kernels::OutputType::kU8: return DataType::kUint8;
    case kernels::OutputType::kF32: return DataType::kFloat;
  }
  return DataType::kUndefined;
}

// ---------------------------------------------------------------------------------------------
// Params / blobs

Result<int32_t> read_zero_point(const BindContext& context, const IntCodec& codec, bool is_signed,
                                std::string_view prefix) {
  QDQRT_ASSIGN_OR_RETURN(int64_t value, codec.read_in(context, is_signed ? -128 : 0, is_signed ? 127 : 255, prefix));
  return static_cast<int32_t>(value);
}

Status check_within_plan_isa(const BindContext& context, kernels::Isa isa) {
  std::optional<kernels::Isa> plan_isa = kernels::parse_isa(context.plan().isa);
  if (!plan_isa) return context.error(fmt::format("the plan's ISA '{}' is unknown", context.plan().isa));
  if (isa > *plan_isa) {
    // The kernels follow the packing: a plan that says less than its weights would run them anyway.
    return context.error(fmt::format("weights packed for {}, above the plan's ISA {}", kernels::isa_name(isa),
                                     context.plan().isa));
  }
  return Status::ok();
}

namespace {

Result<kernels::Isa> packed_isa(const BindContext& context, std::string_view prefix) {
  QDQRT_ASSIGN_OR_RETURN(kernels::Isa isa, params::kIsa.read(context, prefix));
  QDQRT_RETURN_IF_ERROR(check_within_plan_isa(context, isa));
  if (kernels::usable_isa(isa) != isa) {
    return context.error(fmt::format("weights packed for {}, this machine supports only {}", kernels::isa_name(isa),
                                     kernels::isa_name(kernels::detected_isa())));
  }
  return isa;
}

template <class T>
void store_buffer(PlanLayer& layer, const BlobCodec<T>& codec, std::string_view prefix,
                  const kernels::AlignedBuffer<T>& buffer) {
  codec.write(layer, std::span<const T>(buffer.data(), buffer.size()), prefix);
}

template <class T>
Status view_buffer(const BindContext& context, const BlobCodec<T>& codec, std::string_view prefix, int64_t count,
                   kernels::AlignedBuffer<T>& buffer) {
  QDQRT_ASSIGN_OR_RETURN(const T* data, codec.read(context, count, prefix));
  // Packed buffers are AlignedBuffers to the kernels: 64-byte aligned (blobs are, in memory and files).
  if (reinterpret_cast<uintptr_t>(data) % 64 != 0) {
    return context.error(fmt::format("blob '{}' is not 64-byte aligned", param_key(prefix, codec.key())));
  }
  buffer = kernels::AlignedBuffer<T>::view(data, static_cast<size_t>(count));
  return Status::ok();
}

// The kernels' per-column multiplier and float bias: the stored real-unit values divided by the
// output scale, the same float operations as packing with it (kernels::gemm_multiplier).
Status fold_output_scale(const BindContext& context, std::string_view prefix, int64_t count, float output_scale,
                         kernels::AlignedBuffer<float>& multiplier, kernels::AlignedBuffer<float>& float_bias) {
  QDQRT_ASSIGN_OR_RETURN(const float* scale, params::kAccumulatorScale.read(context, count, prefix));
  QDQRT_ASSIGN_OR_RETURN(const float* bias, params::kRealBias.read(context, count, prefix));
  multiplier.resize(static_cast<size_t>(count));
  float_bias.resize(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) {
    multiplier[static_cast<size_t>(n)] = scale[n] / output_scale;
    float_bias[static_cast<size_t>(n)] = bias[n] / output_scale;
  }
  return Status::ok();
}

// What pack_gemm/pack_depthwise computed with output_scale 1: the accumulator's real-unit scale
// and bias (the packed multiplier and float bias before the output scale is divided in).
void store_real_units(PlanLayer& layer, std::string_view prefix, const kernels::AlignedBuffer<float>& scale,
                      const kernels::AlignedBuffer<float>& bias) {
  store_buffer(layer, params::kAccumulatorScale, prefix, scale);
  store_buffer(layer, params::kRealBias, prefix, bias);
}

}  // namespace

void store_gemm(PlanLayer& layer, std::string_view prefix, const kernels::PackedGemm& packed) {
  using namespace params;
  kIsa.write(layer, packed.isa, prefix);
  kN.write(layer, packed.n, prefix);
  kK.write(layer, packed.k, prefix);
  kNr.write(layer, packed.nr, prefix);
  kKGroup.write(layer, packed.k_group, prefix);
  kElementSize.write(layer, packed.element_size, prefix);
  kKPadded.write(layer, packed.k_padded, prefix);
  kNPadded.write(layer, packed.n_padded, prefix);
  kInputSigned.write(layer, packed.input_signed, prefix);
  kInputZeroPoint.write(layer, packed.input_zero_point, prefix);
  kWeightZeroPoint.write(layer, packed.weight_zero_point_s8, prefix);
  store_buffer(layer, kPackedData, prefix, packed.data);
  store_buffer(layer, kAccumulatorBias, prefix, packed.bias);
  store_real_units(layer, prefix, packed.multiplier, packed.float_bias);
}

Result<kernels::PackedGemm> load_gemm(const BindContext& context, std::string_view prefix, float output_scale) {
  using namespace params;
  kernels::PackedGemm packed;
  QDQRT_ASSIGN_OR_RETURN(packed.isa, packed_isa(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t n, kN.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t k, kK.read(context, prefix));
  // The tile width picks the kernel: it must be one of this ISA's register tiles.
  const auto tiles = kernels::gemm_implementations(packed.isa);
  const auto [narrowest, widest] = std::minmax_element(
      tiles.begin(), tiles.end(), [](const auto& a, const auto& b) { return a.nr < b.nr; });
  QDQRT_ASSIGN_OR_RETURN(int64_t nr, kNr.read_in(context, narrowest->nr, widest->nr, prefix));
  const kernels::internal::GemmImplementation* tile = kernels::gemm_implementation(packed.isa, static_cast<int>(nr));
  if (tile == nullptr) {
    return context.error(fmt::format("parameter '{}' is {}, not a tile width of {}", param_key(prefix, "nr"),
                                     nr, kernels::isa_name(packed.isa)));
  }
  const kernels::internal::GemmImplementation& impl = *tile;
  QDQRT_ASSIGN_OR_RETURN(int64_t k_group, kKGroup.read_in(context, impl.k_group, impl.k_group, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t element_size,
                         kElementSize.read_in(context, impl.element_size, impl.element_size, prefix));
  const int64_t expected_k_padded = round_up(k, k_group), expected_n_padded = round_up(n, nr);
  // AMX-INT8 weights pad k to whole tile steps; files packed before that have the k_group padding.
  const int64_t amx_k_padded = kernels::packed_k_padded(packed.isa, static_cast<int>(k_group), k);
  QDQRT_ASSIGN_OR_RETURN(int64_t k_padded, kKPadded.read_in(context, expected_k_padded, amx_k_padded, prefix));
  if (k_padded != expected_k_padded && k_padded != amx_k_padded) {
    return context.error(fmt::format("parameter '{}' is {}, expected {} or {}", param_key(prefix, "k_padded"), k_padded,
                                     expected_k_padded, amx_k_padded));
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t n_padded, kNPadded.read_in(context, expected_n_padded, expected_n_padded, prefix));
  QDQRT_ASSIGN_OR_RETURN(packed.input_signed, kInputSigned.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(packed.input_zero_point,
                         read_zero_point(context, kInputZeroPoint, packed.input_signed, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t weight_zero_point, kWeightZeroPoint.read(context, prefix));
  if (n_padded * k_padded > kMaxDim) return context.error(fmt::format("{}: {}x{} weights are too large", prefix, n, k));
  packed.n = static_cast<int>(n);
  packed.k = static_cast<int>(k);
  packed.nr = static_cast<int>(nr);
  packed.k_group = static_cast<int>(k_group);
  packed.element_size = static_cast<int>(element_size);
  packed.k_padded = static_cast<int>(k_padded);
  packed.n_padded = static_cast<int>(n_padded);
  packed.weight_zero_point_s8 = static_cast<int32_t>(weight_zero_point);
  QDQRT_RETURN_IF_ERROR(view_buffer(context, kPackedData, prefix, n_padded * k_padded * element_size, packed.data));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, kAccumulatorBias, prefix, n_padded, packed.bias));
  QDQRT_RETURN_IF_ERROR(
      fold_output_scale(context, prefix, n_padded, output_scale, packed.multiplier, packed.float_bias));
  kernels::update_gemm_bound(packed);  // derived at load, not stored
  return packed;
}

void store_depthwise(PlanLayer& layer, std::string_view prefix, const kernels::PackedDepthwise& packed) {
  using namespace params;
  kIsa.write(layer, packed.isa, prefix);
  kChannels.write(layer, packed.channels, prefix);
  kChannelsPadded.write(layer, packed.channels_padded, prefix);
  kKernelHeight.write(layer, packed.kernel_height, prefix);
  kKernelWidth.write(layer, packed.kernel_width, prefix);
  kInputSigned.write(layer, packed.input_signed, prefix);
  kInputZeroPoint.write(layer, packed.input_zero_point, prefix);
  store_buffer(layer, kDepthwiseTaps, prefix, packed.weights);
  store_buffer(layer, kAccumulatorBias, prefix, packed.bias);
  store_real_units(layer, prefix, packed.multiplier, packed.float_bias);
}

Result<kernels::PackedDepthwise> load_depthwise(const BindContext& context, std::string_view prefix,
                                                float output_scale) {
  using namespace params;
  kernels::PackedDepthwise packed;
  QDQRT_ASSIGN_OR_RETURN(packed.isa, packed_isa(context, prefix));
  if (kernels::depthwise_implementation(packed.isa).isa != packed.isa) {
    return context.error(fmt::format("no depthwise kernel packs for {}", kernels::isa_name(packed.isa)));
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t channels, kChannels.read(context, prefix));
  const int64_t expected_padded = round_up(channels, 16);
  QDQRT_ASSIGN_OR_RETURN(int64_t channels_padded,
                         kChannelsPadded.read_in(context, expected_padded, expected_padded, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t kernel_height, kKernelHeight.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(int64_t kernel_width, kKernelWidth.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(packed.input_signed, kInputSigned.read(context, prefix));
  QDQRT_ASSIGN_OR_RETURN(packed.input_zero_point,
                         read_zero_point(context, kInputZeroPoint, packed.input_signed, prefix));
  packed.channels = static_cast<int>(channels);
  packed.channels_padded = static_cast<int>(channels_padded);
  packed.kernel_height = static_cast<int>(kernel_height);
  packed.kernel_width = static_cast<int>(kernel_width);
  const int64_t taps = kernel_height * kernel_width;
  QDQRT_RETURN_IF_ERROR(view_buffer(context, kDepthwiseTaps, prefix, taps * channels_padded, packed.weights));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, kAccumulatorBias, prefix, channels_padded, packed.bias));
  QDQRT_RETURN_IF_ERROR(
      fold_output_scale(context, prefix, channels_padded, output_scale, packed.multiplier, packed.float_bias));
  kernels::prepare_depthwise_dot(packed);  // the vpdpbusd form is derived at load, not stored
  return packed;
}

Result<kernels::Isa> supporting_isa(const BindContext& context) {
  std::optional<kernels::Isa> plan_isa = kernels::parse_isa(context.plan().isa);
  if (!plan_isa) return context.error(fmt::format("the plan's ISA '{}' is unknown", context.plan().isa));
  return std::min(*plan_isa, kernels::active_isa());
}

// ---------------------------------------------------------------------------------------------
// Tensors

namespace {
Status check_tensor(const BindContext& context, const PlanTensor& tensor, const TensorExpect& expect) {
  if (expect.rank >= 0 && static_cast<int64_t>(tensor.shape.size()) != expect.rank) {
    return context.error(fmt::format("{} '{}' has rank {}, expected {}", expect.role, tensor.name,
                                     tensor.shape.size(), expect.rank));
  }
  for (int64_t dim : tensor.shape) {
    if (dim < 1 || dim > kMaxDim) return context.error(fmt::format("{} '{}' has dim {}", expect.role, tensor.name, dim));
  }
  if (expect.layout >= 0 && static_cast<int>(tensor.layout) != expect.layout) {
    return context.error(fmt::format("{} '{}' is stored {}, expected {}", expect.role, tensor.name,
                                     layout_name(tensor.layout), layout_name(static_cast<Layout>(expect.layout))));
  }
  if (tensor.layout == Layout::kNhwc && tensor.shape.size() != 4) {
    return context.error(fmt::format("{} '{}' is stored nhwc with rank {}", expect.role, tensor.name,
                                     tensor.shape.size()));
  }
  if (expect.any_8bit ? !is_8bit(tensor.dtype)
                      : (expect.dtype != DataType::kUndefined && tensor.dtype != expect.dtype)) {
    return context.error(fmt::format("{} '{}' has dtype {}", expect.role, tensor.name, dtype_name(tensor.dtype)));
  }
  if (tensor.batched && tensor.shape.empty()) {
    return context.error(fmt::format("{} '{}' is batched without dims", expect.role, tensor.name));
  }
  if (shape_numel(tensor.shape) >= kMaxDim * 4) {
    return context.error(fmt::format("{} '{}' is too large", expect.role, tensor.name));
  }
  const int64_t bytes = shape_numel(tensor.shape) * static_cast<int64_t>(dtype_size(tensor.dtype));
  if (tensor.bytes != 0 && tensor.bytes < bytes) {
    return context.error(fmt::format("{} '{}' has {} bytes for {} elements", expect.role, tensor.name, tensor.bytes,
                                     shape_numel(tensor.shape)));
  }
  return Status::ok();
}
}  // namespace

Result<const PlanTensor*> check_input(const BindContext& context, size_t index, const TensorExpect& expect) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* tensor, context.input(index));
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *tensor, expect));
  return tensor;
}

Result<const PlanTensor*> check_output(const BindContext& context, size_t index, const TensorExpect& expect) {
  QDQRT_ASSIGN_OR_RETURN(const PlanTensor* tensor, context.output(index));
  QDQRT_RETURN_IF_ERROR(check_tensor(context, *tensor, expect));
  return tensor;
}

Shape storage_shape(const PlanTensor& tensor) {
  if (tensor.layout == Layout::kNhwc && tensor.shape.size() == 4) {
    return {tensor.shape[0], tensor.shape[2], tensor.shape[3], tensor.shape[1]};
  }
  return tensor.shape;
}

int64_t shape_numel(const Shape& shape) {
  // Saturates (dims are <= kMaxDim once checked), so absurd shapes cannot overflow.
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return -1;
    count = dim != 0 && count > (int64_t{1} << 40) / dim ? (int64_t{1} << 40) : count * dim;
  }
  return count;
}

std::vector<std::shared_ptr<const void>> blob_owners(const PlanLayer& layer) {
  std::vector<std::shared_ptr<const void>> owners;
  for (const Blob& blob : layer.blobs) {
    if (blob.owner) owners.push_back(blob.owner);
  }
  return owners;
}

}  // namespace qdqrt::engine::int8
