#include "core/ops/conv.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

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

// Conv: [N, C, spatial...] * [M, C / group, k...] -> [N, M, out...].
Status infer_conv(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ConvAttributes>(context, parse_conv));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims weight, required_input_dims(context, 1));
  QDQRT_ASSIGN_OR_RETURN(Dims y, conv_output(context, *attributes, x, weight));
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

// ConvTranspose: [N, C, spatial...] with weight [C, M / group, k...] -> [N, M, out...], where out
// is output_shape when given, in * stride for SAME_*, else
// stride * (in - 1) + output_padding + extent - pads.
Status infer_conv_transpose(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ConvTransposeAttributes>(context, parse_conv_transpose));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims weight, required_input_dims(context, 1));
  if (x.size() < 3) return context.error("input X {} needs [N, C, spatial...]", dims_to_string(x));
  if (weight.size() != x.size()) {
    return context.error("weight {} has rank {}, input X {} has rank {}", dims_to_string(weight), weight.size(),
                         dims_to_string(x), x.size());
  }
  if (x[1].is_static() && weight[0].is_static() && x[1].value != weight[0].value) {
    return context.error("input X has {} channels, weight {} takes {}", x[1].value, dims_to_string(weight),
                         weight[0].value);
  }
  const size_t rank = x.size() - 2;
  std::vector<int64_t> output_shape = attributes->output_shape;
  if (output_shape.size() == rank + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  auto check_length = [&](const std::vector<int64_t>& values, size_t expected, const char* key) -> Status {
    if (values.empty() || values.size() == expected) return Status::ok();
    return context.error("attribute '{}' has {} values, the input's {} spatial axes need {}", key, values.size(), rank,
                         expected);
  };
  QDQRT_RETURN_IF_ERROR(check_length(attributes->strides, rank, "strides"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes->dilations, rank, "dilations"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes->pads, 2 * rank, "pads"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes->output_padding, rank, "output_padding"));
  QDQRT_RETURN_IF_ERROR(check_length(attributes->kernel_shape, rank, "kernel_shape"));
  QDQRT_RETURN_IF_ERROR(check_length(output_shape, rank, "output_shape"));
  Dims y = {x[0], weight[1] * static_dim(attributes->group)};
  for (size_t i = 0; i < rank; ++i) {
    if (!output_shape.empty()) {
      y.push_back(static_dim(output_shape[i]));
      continue;
    }
    int64_t kernel = 0;
    if (!attributes->kernel_shape.empty()) {
      kernel = attributes->kernel_shape[i];
    } else if (weight[i + 2].is_static()) {
      kernel = weight[i + 2].value;
    } else {
      return context.error("the kernel size (weight {}) is not known", dims_to_string(weight));
    }
    const int64_t stride = attributes->strides.empty() ? 1 : attributes->strides[i];
    const int64_t dilation = attributes->dilations.empty() ? 1 : attributes->dilations[i];
    const int64_t padding = attributes->output_padding.empty() ? 0 : attributes->output_padding[i];
    for (int64_t value : {kernel, stride, dilation, padding, attributes->pads.empty() ? 0 : attributes->pads[i],
                          attributes->pads.empty() ? 0 : attributes->pads[i + rank]}) {
      if (value > kMaxWindowValue) return context.error("spatial axis {}: window value {} is too large", i, value);
    }
    if (x[i + 2].value > kMaxWindowInput / kMaxWindowValue) {
      return context.error("spatial axis {}: input size {} is too large", i, x[i + 2].value);
    }
    if (kernel < 1) return context.error("spatial axis {}: kernel size {} is not positive", i, kernel);
    const int64_t pad_sum = attributes->pads.empty() ? 0 : attributes->pads[i] + attributes->pads[i + rank];
    const int64_t extent = dilation * (kernel - 1) + 1;
    // out = stride * in + offset
    int64_t offset = 0;
    switch (attributes->auto_pad) {
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: offset = 0; break;
      case AutoPad::kValid: offset = padding + extent - stride; break;
      case AutoPad::kNotSet: offset = padding + extent - stride - pad_sum; break;
    }
    const Dim& in = x[i + 2];
    Dim out;
    out.expr = DimExpr::constant(stride) * in.expr + DimExpr::constant(offset);
    if (in.is_static()) {
      out.value = stride * in.value + offset;
      if (out.value < 1) {
        return context.error("output size {} on spatial axis {} (input {}) is not positive", out.value, i, in.value);
      }
    }
    y.push_back(std::move(out));
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
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
  registry.add({.domain = "", .op_type = "Conv", .parse_attributes = parse_conv, .infer_shape = infer_conv});
  registry.add({.domain = "",
                .op_type = "ConvTranspose",
                .parse_attributes = parse_conv_transpose,
                .infer_shape = infer_conv_transpose});
}

}  // namespace qdqrt
