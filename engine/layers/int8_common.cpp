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

Result<EpilogueSpec> read_epilogue_inputs(const Node& node, const BuildContext& context, size_t y_scale_index,
                                          const Shape& y_shape, const kernels::Activation& activation) {
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
  return e;
}

void store_epilogue(Params& params, const EpilogueSpec& spec) {
  params.set("out.type", std::string(kernels::output_type_name(spec.output_type)));
  params.set("out.scale", static_cast<double>(spec.output_scale));
  params.set("out.zero_point", int64_t{spec.output_zero_point});
  params.set("act.kind", std::string(kernels::activation_name(spec.activation.kind)));
  params.set("act.min", static_cast<double>(spec.activation.clip_min));
  params.set("act.max", static_cast<double>(spec.activation.clip_max));
  params.set("act.alpha", static_cast<double>(spec.activation.leaky_alpha));
  params.set("res.present", int64_t{spec.has_residual});
  if (spec.has_residual) {
    params.set("res.signed", int64_t{spec.residual_signed});
    params.set("res.scale", static_cast<double>(spec.residual_scale));
    params.set("res.zero_point", int64_t{spec.residual_zero_point});
  }
}

Result<EpilogueSpec> load_epilogue(const BindContext& context) {
  const Params& params = context.layer().params;
  EpilogueSpec spec;
  auto type_result = params.get_string("out.type");
  if (!type_result.ok()) return context.error(type_result.status().message());
  const std::string& type = *type_result;
  if (type == "s8") {
    spec.output_type = kernels::OutputType::kS8;
  } else if (type == "u8") {
    spec.output_type = kernels::OutputType::kU8;
  } else if (type == "f32") {
    spec.output_type = kernels::OutputType::kF32;
  } else {
    return context.error(fmt::format("unknown output type '{}'", type));
  }
  QDQRT_ASSIGN_OR_RETURN(spec.output_scale, scale_param(context, "out.scale"));
  const bool is_signed = spec.output_type == kernels::OutputType::kS8;
  QDQRT_ASSIGN_OR_RETURN(int64_t zero_point, int_param(context, "out.zero_point", is_signed ? -128 : 0,
                                                       spec.output_type == kernels::OutputType::kF32 ? 0
                                                       : is_signed                                 ? 127
                                                                                                   : 255));
  spec.output_zero_point = static_cast<int32_t>(zero_point);
  auto activation_result = params.get_string("act.kind");
  if (!activation_result.ok()) return context.error(activation_result.status().message());
  const std::string& activation = *activation_result;
  if (activation == "none") {
    spec.activation.kind = kernels::ActivationKind::kNone;
  } else if (activation == "relu") {
    spec.activation.kind = kernels::ActivationKind::kRelu;
  } else if (activation == "clip") {
    spec.activation.kind = kernels::ActivationKind::kClip;
  } else if (activation == "leakyrelu") {
    spec.activation.kind = kernels::ActivationKind::kLeakyRelu;
  } else {
    return context.error(fmt::format("unknown activation '{}'", activation));
  }
  // Clip bounds may be +-inf (an absent bound); NaN is refused.
  auto clip_min_result = params.get_float("act.min");
  auto clip_max_result = params.get_float("act.max");
  if (!clip_min_result.ok()) return context.error(clip_min_result.status().message());
  if (!clip_max_result.ok()) return context.error(clip_max_result.status().message());
  const double clip_min = *clip_min_result, clip_max = *clip_max_result;
  QDQRT_ASSIGN_OR_RETURN(spec.activation.leaky_alpha, float_param(context, "act.alpha"));
  if (std::isnan(clip_min) || std::isnan(clip_max) || clip_min > clip_max) {
    return context.error(fmt::format("invalid clip bounds [{}, {}]", clip_min, clip_max));
  }
  spec.activation.clip_min = static_cast<float>(clip_min);
  spec.activation.clip_max = static_cast<float>(clip_max);
  QDQRT_ASSIGN_OR_RETURN(int64_t residual, int_param(context, "res.present", 0, 1));
  spec.has_residual = residual != 0;
  if (spec.has_residual) {
    QDQRT_ASSIGN_OR_RETURN(int64_t residual_signed, int_param(context, "res.signed", 0, 1));
    spec.residual_signed = residual_signed != 0;
    QDQRT_ASSIGN_OR_RETURN(spec.residual_scale, scale_param(context, "res.scale"));
    QDQRT_ASSIGN_OR_RETURN(int64_t residual_zero_point,
                           int_param(context, "res.zero_point", spec.residual_signed ? -128 : 0,
                                     spec.residual_signed ? 127 : 255));
    spec.residual_zero_point = static_cast<int32_t>(residual_zero_point);
  }
  return spec;
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
                                spec.has_residual ? &residual : nullptr);
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

Result<int64_t> int_param(const BindContext& context, const std::string& name, int64_t min, int64_t max) {
  auto value = context.layer().params.get_int(name);
  if (!value.ok()) return context.error(value.status().message());
  if (*value < min || *value > max) {
    return context.error(fmt::format("parameter '{}' is {}, expected {}..{}", name, *value, min, max));
  }
  return *value;
}

Result<float> float_param(const BindContext& context, const std::string& name) {
  auto value = context.layer().params.get_float(name);
  if (!value.ok()) return context.error(value.status().message());
  if (!std::isfinite(*value) || std::abs(*value) > std::numeric_limits<float>::max()) {
    return context.error(fmt::format("parameter '{}' is {}", name, *value));
  }
  return static_cast<float>(*value);
}

Result<float> scale_param(const BindContext& context, const std::string& name) {
  QDQRT_ASSIGN_OR_RETURN(float value, float_param(context, name));
  if (!(value > 0.0f)) return context.error(fmt::format("scale '{}' is {}, expected > 0", name, value));
  return value;
}

Result<std::vector<int64_t>> ints_param(const BindContext& context, const std::string& name, size_t size,
                                        int64_t min, int64_t max) {
  auto values = context.layer().params.get_ints(name);
  if (!values.ok()) return context.error(values.status().message());
  if (values->size() != size) {
    return context.error(fmt::format("parameter '{}' has {} values, expected {}", name, values->size(), size));
  }
  for (int64_t value : *values) {
    if (value < min || value > max) {
      return context.error(fmt::format("parameter '{}' holds {}, expected {}..{}", name, value, min, max));
    }
  }
  return std::move(values).value();
}

template <class T>
Result<const T*> blob_array(const BindContext& context, const std::string& name, int64_t count) {
  const Blob* blob = context.layer().find_blob(name);
  if (blob == nullptr) return context.error(fmt::format("blob '{}' is missing", name));
  const uint64_t expected = static_cast<uint64_t>(count) * sizeof(T);
  if (blob->bytes.size() != expected) {
    return context.error(fmt::format("blob '{}' has {} bytes, expected {}", name, blob->bytes.size(), expected));
  }
  if (reinterpret_cast<uintptr_t>(blob->bytes.data()) % alignof(T) != 0) {
    return context.error(fmt::format("blob '{}' is not aligned", name));
  }
  return blob->as<T>();
}
template Result<const int8_t*> blob_array<int8_t>(const BindContext&, const std::string&, int64_t);
template Result<const uint8_t*> blob_array<uint8_t>(const BindContext&, const std::string&, int64_t);
template Result<const int32_t*> blob_array<int32_t>(const BindContext&, const std::string&, int64_t);
template Result<const float*> blob_array<float>(const BindContext&, const std::string&, int64_t);

namespace {

Result<kernels::Isa> packed_isa(const BindContext& context, const std::string& name) {
  auto isa_result = context.layer().params.get_string(name);
  if (!isa_result.ok()) return context.error(isa_result.status().message());
  const std::string& isa_text = *isa_result;
  std::optional<kernels::Isa> isa = kernels::parse_isa(isa_text);
  if (!isa) return context.error(fmt::format("unknown ISA '{}'", isa_text));
  if (kernels::usable_isa(*isa) != *isa) {
    return context.error(fmt::format("weights packed for {}, this machine supports only {}", isa_text,
                                     kernels::isa_name(kernels::detected_isa())));
  }
  return *isa;
}

template <class T>
void store_buffer(PlanLayer& layer, const std::string& name, const kernels::AlignedBuffer<T>& buffer) {
  layer.blobs.push_back(make_blob(name, buffer.data(), buffer.size() * sizeof(T)));
}

template <class T>
Status view_buffer(const BindContext& context, const std::string& name, int64_t count,
                   kernels::AlignedBuffer<T>& buffer) {
  QDQRT_ASSIGN_OR_RETURN(const T* data, blob_array<T>(context, name, count));
  // Packed buffers are AlignedBuffers to the kernels: 64-byte aligned (blobs are, in memory and files).
  if (reinterpret_cast<uintptr_t>(data) % 64 != 0) {
    return context.error(fmt::format("blob '{}' is not 64-byte aligned", name));
  }
  buffer = kernels::AlignedBuffer<T>::view(data, static_cast<size_t>(count));
  return Status::ok();
}

}  // namespace

void store_gemm(PlanLayer& layer, const std::string& prefix, const kernels::PackedGemm& packed) {
  Params& params = layer.params;
  params.set(prefix + "isa", std::string(kernels::isa_name(packed.isa)));
  params.set(prefix + "n", int64_t{packed.n});
  params.set(prefix + "k", int64_t{packed.k});
  params.set(prefix + "nr", int64_t{packed.nr});
  params.set(prefix + "k_group", int64_t{packed.k_group});
  params.set(prefix + "element_size", int64_t{packed.element_size});
  params.set(prefix + "k_padded", int64_t{packed.k_padded});
  params.set(prefix + "n_padded", int64_t{packed.n_padded});
  params.set(prefix + "input_signed", int64_t{packed.input_signed});
  params.set(prefix + "input_zero_point", int64_t{packed.input_zero_point});
  params.set(prefix + "weight_zero_point_s8", int64_t{packed.weight_zero_point_s8});
  store_buffer(layer, prefix + "data", packed.data);
  store_buffer(layer, prefix + "bias", packed.bias);
  store_buffer(layer, prefix + "multiplier", packed.multiplier);
  store_buffer(layer, prefix + "float_bias", packed.float_bias);
}

Result<kernels::PackedGemm> load_gemm(const BindContext& context, const std::string& prefix) {
  kernels::PackedGemm packed;
  QDQRT_ASSIGN_OR_RETURN(packed.isa, packed_isa(context, prefix + "isa"));
  const kernels::internal::GemmImplementation& impl = kernels::gemm_implementation(packed.isa);
  QDQRT_ASSIGN_OR_RETURN(int64_t n, int_param(context, prefix + "n", 1, kMaxDim));
  QDQRT_ASSIGN_OR_RETURN(int64_t k, int_param(context, prefix + "k", 1, kMaxDim));
  QDQRT_ASSIGN_OR_RETURN(int64_t nr, int_param(context, prefix + "nr", impl.nr, impl.nr));
  QDQRT_ASSIGN_OR_RETURN(int64_t k_group, int_param(context, prefix + "k_group", impl.k_group, impl.k_group));
  QDQRT_ASSIGN_OR_RETURN(int64_t element_size,
                         int_param(context, prefix + "element_size", impl.element_size, impl.element_size));
  const int64_t expected_k_padded = round_up(k, k_group), expected_n_padded = round_up(n, nr);
  QDQRT_ASSIGN_OR_RETURN(int64_t k_padded, int_param(context, prefix + "k_padded", expected_k_padded, expected_k_padded));
  QDQRT_ASSIGN_OR_RETURN(int64_t n_padded, int_param(context, prefix + "n_padded", expected_n_padded, expected_n_padded));
  QDQRT_ASSIGN_OR_RETURN(int64_t input_signed, int_param(context, prefix + "input_signed", 0, 1));
  QDQRT_ASSIGN_OR_RETURN(int64_t input_zero_point, int_param(context, prefix + "input_zero_point",
                                                             input_signed ? -128 : 0, input_signed ? 127 : 255));
  QDQRT_ASSIGN_OR_RETURN(int64_t weight_zero_point, int_param(context, prefix + "weight_zero_point_s8", -128, 127));
  if (n_padded * k_padded > kMaxDim) return context.error(fmt::format("{}: {}x{} weights are too large", prefix, n, k));
  packed.n = static_cast<int>(n);
  packed.k = static_cast<int>(k);
  packed.nr = static_cast<int>(nr);
  packed.k_group = static_cast<int>(k_group);
  packed.element_size = static_cast<int>(element_size);
  packed.k_padded = static_cast<int>(k_padded);
  packed.n_padded = static_cast<int>(n_padded);
  packed.input_signed = input_signed != 0;
  packed.input_zero_point = static_cast<int32_t>(input_zero_point);
  packed.weight_zero_point_s8 = static_cast<int32_t>(weight_zero_point);
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "data", n_padded * k_padded * element_size, packed.data));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "bias", n_padded, packed.bias));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "multiplier", n_padded, packed.multiplier));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "float_bias", n_padded, packed.float_bias));
  return packed;
}

void store_depthwise(PlanLayer& layer, const std::string& prefix, const kernels::PackedDepthwise& packed) {
  Params& params = layer.params;
  params.set(prefix + "isa", std::string(kernels::isa_name(packed.isa)));
  params.set(prefix + "channels", int64_t{packed.channels});
  params.set(prefix + "channels_padded", int64_t{packed.channels_padded});
  params.set(prefix + "kernel_height", int64_t{packed.kernel_height});
  params.set(prefix + "kernel_width", int64_t{packed.kernel_width});
  params.set(prefix + "input_signed", int64_t{packed.input_signed});
  params.set(prefix + "input_zero_point", int64_t{packed.input_zero_point});
  store_buffer(layer, prefix + "weights", packed.weights);
  store_buffer(layer, prefix + "bias", packed.bias);
  store_buffer(layer, prefix + "multiplier", packed.multiplier);
  store_buffer(layer, prefix + "float_bias", packed.float_bias);
}

Result<kernels::PackedDepthwise> load_depthwise(const BindContext& context, const std::string& prefix) {
  kernels::PackedDepthwise packed;
  QDQRT_ASSIGN_OR_RETURN(packed.isa, packed_isa(context, prefix + "isa"));
  if (kernels::depthwise_implementation(packed.isa).isa != packed.isa) {
    return context.error(fmt::format("no depthwise kernel packs for {}", kernels::isa_name(packed.isa)));
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t channels, int_param(context, prefix + "channels", 1, kMaxDim));
  const int64_t expected_padded = round_up(channels, 16);
  QDQRT_ASSIGN_OR_RETURN(int64_t channels_padded,
                         int_param(context, prefix + "channels_padded", expected_padded, expected_padded));
  QDQRT_ASSIGN_OR_RETURN(int64_t kernel_height, int_param(context, prefix + "kernel_height", 1, 64));
  QDQRT_ASSIGN_OR_RETURN(int64_t kernel_width, int_param(context, prefix + "kernel_width", 1, 64));
  QDQRT_ASSIGN_OR_RETURN(int64_t input_signed, int_param(context, prefix + "input_signed", 0, 1));
  QDQRT_ASSIGN_OR_RETURN(int64_t input_zero_point, int_param(context, prefix + "input_zero_point",
                                                             input_signed ? -128 : 0, input_signed ? 127 : 255));
  packed.channels = static_cast<int>(channels);
  packed.channels_padded = static_cast<int>(channels_padded);
  packed.kernel_height = static_cast<int>(kernel_height);
  packed.kernel_width = static_cast<int>(kernel_width);
  packed.input_signed = input_signed != 0;
  packed.input_zero_point = static_cast<int32_t>(input_zero_point);
  const int64_t taps = kernel_height * kernel_width;
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "weights", taps * channels_padded, packed.weights));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "bias", channels_padded, packed.bias));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "multiplier", channels_padded, packed.multiplier));
  QDQRT_RETURN_IF_ERROR(view_buffer(context, prefix + "float_bias", channels_padded, packed.float_bias));
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
