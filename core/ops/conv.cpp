#include "core/ops/conv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/op_registry.h"
#include "core/ops/op_families.h"

namespace qdqrt {

const char* auto_pad_name(AutoPad auto_pad) {
  switch (auto_pad) {
    case AutoPad::kNotSet: return "NOTSET";
    case AutoPad::kSameUpper: return "SAME_UPPER";
    case AutoPad::kSameLower: return "SAME_LOWER";
    case AutoPad::kValid: return "VALID";
  }
  return "?";
}

Result<AutoPad> parse_auto_pad(const Node& node) {
  AttributeReader reader(node);
  QDQRT_ASSIGN_OR_RETURN(std::string text, reader.get_string("auto_pad", "NOTSET"));
  for (AutoPad value : {AutoPad::kNotSet, AutoPad::kSameUpper, AutoPad::kSameLower, AutoPad::kValid}) {
    if (text == auto_pad_name(value)) return value;
  }
  return reader.error("auto_pad", fmt::format("unknown value '{}' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)", text));
}

namespace {

// Every element of `values` must be >= minimum.
Status check_at_least(const AttributeReader& reader, const std::string& key, const std::vector<int64_t>& values,
                      int64_t minimum) {
  for (int64_t value : values) {
    if (value < minimum) {
      return reader.error(key, fmt::format("values must be >= {}, got [{}]", minimum, fmt::join(values, ", ")));
    }
  }
  return Status::ok();
}

// The per-axis attributes must agree on the number of spatial axes.
Status check_spatial_lengths(const AttributeReader& reader, const ConvAttributes& attributes) {
  size_t spatial = 0;
  auto agree = [&](const std::string& key, size_t length) -> Status {
    if (length == 0) return Status::ok();
    if (spatial == 0) spatial = length;
    if (length != spatial) {
      return reader.error(key, fmt::format("has {} spatial values, other attributes have {}", length, spatial));
    }
    return Status::ok();
  };
  QDQRT_RETURN_IF_ERROR(agree("kernel_shape", attributes.kernel_shape.size()));
  QDQRT_RETURN_IF_ERROR(agree("strides", attributes.strides.size()));
  QDQRT_RETURN_IF_ERROR(agree("dilations", attributes.dilations.size()));
  if (attributes.pads.size() % 2 != 0) {
    return reader.error("pads", fmt::format("needs an even number of values, got {}", attributes.pads.size()));
  }
  QDQRT_RETURN_IF_ERROR(agree("pads", attributes.pads.size() / 2));
  return Status::ok();
}

Result<std::shared_ptr<const OpAttributes>> parse_conv(const Node& node) {
  QDQRT_ASSIGN_OR_RETURN(ConvAttributes attributes, parse_conv_attribute_set(node));
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_conv_transpose(const Node& node) {
  AttributeReader reader(node);
  ConvTransposeAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(ConvAttributes base, parse_conv_attribute_set(node));
  static_cast<ConvAttributes&>(attributes) = std::move(base);
  QDQRT_ASSIGN_OR_RETURN(attributes.output_padding, reader.get_ints("output_padding"));
  QDQRT_ASSIGN_OR_RETURN(attributes.output_shape, reader.get_ints("output_shape"));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "output_padding", attributes.output_padding, 0));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "output_shape", attributes.output_shape, 1));
  return make_attributes(std::move(attributes));
}

}  // namespace

Result<ConvAttributes> parse_conv_attribute_set(const Node& node) {
  AttributeReader reader(node);
  ConvAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.auto_pad, parse_auto_pad(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.dilations, reader.get_ints("dilations"));
  QDQRT_ASSIGN_OR_RETURN(attributes.group, reader.get_int("group", 1));
  QDQRT_ASSIGN_OR_RETURN(attributes.kernel_shape, reader.get_ints("kernel_shape"));
  QDQRT_ASSIGN_OR_RETURN(attributes.pads, reader.get_ints("pads"));
  QDQRT_ASSIGN_OR_RETURN(attributes.strides, reader.get_ints("strides"));
  if (attributes.group < 1) return reader.error("group", fmt::format("must be >= 1, got {}", attributes.group));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "dilations", attributes.dilations, 1));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "kernel_shape", attributes.kernel_shape, 1));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "pads", attributes.pads, 0));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "strides", attributes.strides, 1));
  QDQRT_RETURN_IF_ERROR(check_spatial_lengths(reader, attributes));
  return attributes;
}

void register_conv_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "Conv", .parse_attributes = parse_conv});
  registry.add({.domain = "", .op_type = "ConvTranspose", .parse_attributes = parse_conv_transpose});
}

}  // namespace qdqrt
