#include "core/ops/quantize.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/conv.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

bool is_quantized_integer_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kUint8: case DataType::kInt8: case DataType::kUint16: case DataType::kInt16:
    case DataType::kUint4: case DataType::kInt4:
      return true;
    default:
      return false;
  }
}

namespace {

// Attributes introduced after opset 10 are errors at opsets that do not define them.
Status check_defined_since(const AttributeReader& reader, const Node& node, const std::string& key,
                           int64_t since_opset) {
  if (reader.has(key) && node.opset < since_opset) {
    return reader.error(key, fmt::format("not defined before opset {} (node has opset {})", since_opset, node.opset));
  }
  return Status::ok();
}

Result<int64_t> read_block_size(const AttributeReader& reader) {
  QDQRT_ASSIGN_OR_RETURN(int64_t block_size, reader.get_int("block_size", 0));
  if (block_size < 0) return reader.error("block_size", fmt::format("must be >= 0, got {}", block_size));
  return block_size;
}

Result<std::shared_ptr<const OpAttributes>> parse_quantize_linear(const Node& node) {
  AttributeReader reader(node);
  QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, "axis", 13));
  QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, "saturate", 19));
  QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, "block_size", 21));
  QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, "output_dtype", 21));
  QuantizeLinearAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, reader.get_int("axis", 1));
  QDQRT_ASSIGN_OR_RETURN(attributes.block_size, read_block_size(reader));
  QDQRT_ASSIGN_OR_RETURN(int64_t saturate, reader.get_int("saturate", 1));
  attributes.saturate = saturate != 0;
  QDQRT_ASSIGN_OR_RETURN(int64_t output_dtype, reader.get_int("output_dtype", 0));
  if (output_dtype != 0) {
    DataType dtype = static_cast<DataType>(output_dtype);
    if (!dtype_is_known(static_cast<int32_t>(output_dtype)) || !is_quantized_integer_dtype(dtype)) {
      return unsupported("{}: attribute 'output_dtype': element type {} is not supported "
                         "(int8, uint8, int16, uint16, int4, uint4 are)",
                         node.describe(), output_dtype);
    }
    attributes.output_dtype = dtype;
  }
  return make_attributes(attributes);
}

Result<std::shared_ptr<const OpAttributes>> parse_dequantize_linear(const Node& node) {
  AttributeReader reader(node);
  QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, "axis", 13));
  QDQRT_RETURN_IF_ERROR(check_defined_since(reader, node, "block_size", 21));
  DequantizeLinearAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, reader.get_int("axis", 1));
  QDQRT_ASSIGN_OR_RETURN(attributes.block_size, read_block_size(reader));
  return make_attributes(attributes);
}

Result<std::shared_ptr<const OpAttributes>> parse_conv_like(const Node& node) {
  QDQRT_ASSIGN_OR_RETURN(ConvAttributes attributes, parse_conv_attribute_set(node));
  return make_attributes(std::move(attributes));
}

// The scale (input 1) fits x: one element (per tensor), [x[axis]] (per axis) or, blocked, x's
// dims with ceil(x[axis] / block_size) along axis. Dims not known are not checked.
Status check_scale_dims(const ShapeInferenceContext& context, const Dims& x, int64_t axis_attribute,
                        int64_t block_size) {
  const OptionalDims& scale = context.input_dims(1);
  if (!scale) return Status::ok();
  const bool one_element =
      std::all_of(scale->begin(), scale->end(), [](const Dim& dim) { return dim.is_static() && dim.value == 1; });
  if (block_size == 0 && scale->size() <= 1 && (one_element || scale->empty())) return Status::ok();
  QDQRT_ASSIGN_OR_RETURN(size_t axis, resolve_axis(context, axis_attribute, x.size(), "attribute 'axis'"));
  const Dim& along = x[axis];
  if (block_size == 0) {
    if (scale->size() != 1 || (along.is_static() && (*scale)[0].is_static() && (*scale)[0].value != along.value)) {
      return context.error("per-axis scale {} does not fit input {} along axis {}", dims_to_string(*scale),
                           dims_to_string(x), axis);
    }
    return Status::ok();
  }
  bool fits = scale->size() == x.size();
  for (size_t i = 0; fits && i < x.size(); ++i) {
    if (!x[i].is_static() || !(*scale)[i].is_static()) continue;
    const int64_t expected = i == axis ? x[i].value / block_size + (x[i].value % block_size != 0 ? 1 : 0) : x[i].value;
    fits = (*scale)[i].value == expected;
  }
  if (!fits) {
    return context.error("blocked scale {} (block_size {}, axis {}) does not fit input {}", dims_to_string(*scale),
                         block_size, axis, dims_to_string(x));
  }
  return Status::ok();
}

// QuantizeLinear, DequantizeLinear: y has x's dims.
Status infer_quantize_linear(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<QuantizeLinearAttributes>(context, parse_quantize_linear));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_RETURN_IF_ERROR(check_scale_dims(context, x, attributes->axis, attributes->block_size));
  context.set_output_dims(0, std::move(x));
  return Status::ok();
}

Status infer_dequantize_linear(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes,
                         shape_attributes<DequantizeLinearAttributes>(context, parse_dequantize_linear));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_RETURN_IF_ERROR(check_scale_dims(context, x, attributes->axis, attributes->block_size));
  context.set_output_dims(0, std::move(x));
  return Status::ok();
}

// DynamicQuantizeLinear: y has x's dims; y_scale and y_zero_point are scalars.
Status infer_dynamic_quantize_linear(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, std::move(x));
  context.set_output_dims(1, Dims{});
  context.set_output_dims(2, Dims{});
  return Status::ok();
}

// QLinearConv (x, x_scale, x_zero_point, w, ...) and ConvInteger (x, w, ...): Conv's dims.
Status infer_conv_like(ShapeInferenceContext& context, size_t weight_slot) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ConvAttributes>(context, parse_conv_like));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims weight, required_input_dims(context, weight_slot));
  QDQRT_ASSIGN_OR_RETURN(Dims y, conv_output(context, *attributes, x, weight));
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

Status infer_qlinear_conv(ShapeInferenceContext& context) { return infer_conv_like(context, 3); }
Status infer_conv_integer(ShapeInferenceContext& context) { return infer_conv_like(context, 1); }

// QLinearMatMul (a, a_scale, a_zero_point, b, ...) and MatMulInteger (a, b, ...): MatMul's dims.
Status infer_matmul_like(ShapeInferenceContext& context, size_t b_slot) {
  QDQRT_ASSIGN_OR_RETURN(Dims a, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims b, required_input_dims(context, b_slot));
  QDQRT_ASSIGN_OR_RETURN(Dims y, matmul_output(context, a, b));
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

Status infer_qlinear_matmul(ShapeInferenceContext& context) { return infer_matmul_like(context, 3); }
Status infer_matmul_integer(ShapeInferenceContext& context) { return infer_matmul_like(context, 1); }

}  // namespace

Result<QuantParamShapes> check_quant_param_shapes(const Node& node, const Shape& x, const Shape& scale,
                                                  const Shape* zero_point, int64_t axis_attribute,
                                                  int64_t block_size) {
  auto one_element = [](const Shape& shape) {
    return std::all_of(shape.begin(), shape.end(), [](int64_t dim) { return dim == 1; });
  };
  QuantParamShapes result;
  if (zero_point != nullptr && *zero_point != scale && !(one_element(*zero_point) && one_element(scale))) {
    return invalid_argument("{}: zero-point shape {} differs from scale shape {}", node.describe(),
                            shape_to_string(*zero_point), shape_to_string(scale));
  }
  if (block_size == 0 && scale.size() <= 1 && one_element(scale)) return result;  // per-tensor
  if (node.opset < 13) {
    return invalid_argument("{}: scale must be a scalar before opset 13 (per-axis needs opset 13), got shape {}",
                            node.describe(), shape_to_string(scale));
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  if (axis_attribute < -rank || axis_attribute >= rank) {
    return invalid_argument("{}: attribute 'axis' {} is out of range for rank {}", node.describe(), axis_attribute,
                            rank);
  }
  result.axis = axis_attribute < 0 ? axis_attribute + rank : axis_attribute;
  const int64_t axis_dim = x[static_cast<size_t>(result.axis)];
  if (block_size == 0) {
    if (scale.size() != 1 || scale[0] != axis_dim) {
      return invalid_argument("{}: per-axis scale must have shape [{}] (input {} along axis {}), got {}",
                              node.describe(), axis_dim, shape_to_string(x), result.axis, shape_to_string(scale));
    }
    result.kind = QuantParamShapes::Kind::kPerAxis;
    return result;
  }
  // Blocked: scale has x's shape except ceil(dim / block_size) along axis.
  Shape expected = x;
  expected[static_cast<size_t>(result.axis)] = axis_dim / block_size + (axis_dim % block_size != 0 ? 1 : 0);
  if (scale != expected) {
    return invalid_argument("{}: blocked scale (block_size {}, axis {}) must have shape {} for input {}, got {}",
                            node.describe(), block_size, result.axis, shape_to_string(expected), shape_to_string(x),
                            shape_to_string(scale));
  }
  result.kind = QuantParamShapes::Kind::kBlocked;
  return result;
}

void register_quantize_ops(OpRegistry& registry) {
  registry.add({.domain = "",
                .op_type = "QuantizeLinear",
                .parse_attributes = parse_quantize_linear,
                .infer_shape = infer_quantize_linear});
  registry.add({.domain = "",
                .op_type = "DequantizeLinear",
                .parse_attributes = parse_dequantize_linear,
                .infer_shape = infer_dequantize_linear});
  registry.add({.domain = "",
                .op_type = "DynamicQuantizeLinear",
                .min_opset = 11,
                .infer_shape = infer_dynamic_quantize_linear});
  registry.add(
      {.domain = "", .op_type = "QLinearConv", .parse_attributes = parse_conv_like, .infer_shape = infer_qlinear_conv});
  registry.add(
      {.domain = "", .op_type = "ConvInteger", .parse_attributes = parse_conv_like, .infer_shape = infer_conv_integer});
  registry.add({.domain = "", .op_type = "QLinearMatMul", .infer_shape = infer_qlinear_matmul});
  registry.add({.domain = "", .op_type = "MatMulInteger", .infer_shape = infer_matmul_integer});
}

}  // namespace qdqrt
