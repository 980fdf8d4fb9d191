#include "core/ops/quantize.h"

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/conv.h"
#include "core/ops/op_families.h"

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

}  // namespace

void register_quantize_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "QuantizeLinear", .parse_attributes = parse_quantize_linear});
  registry.add({.domain = "", .op_type = "DequantizeLinear", .parse_attributes = parse_dequantize_linear});
  registry.add({.domain = "", .op_type = "DynamicQuantizeLinear", .min_opset = 11});
  registry.add({.domain = "", .op_type = "QLinearConv", .parse_attributes = parse_conv_like});
  registry.add({.domain = "", .op_type = "ConvInteger", .parse_attributes = parse_conv_like});
  registry.add({.domain = "", .op_type = "QLinearMatMul"});
  registry.add({.domain = "", .op_type = "MatMulInteger"});
}

}  // namespace qdqrt
