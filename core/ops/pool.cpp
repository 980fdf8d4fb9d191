#include "core/ops/pool.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

namespace {

Status check_at_least(const AttributeReader& reader, const std::string& key, const std::vector<int64_t>& values,
                      int64_t minimum) {
  for (int64_t value : values) {
    if (value < minimum) {
      return reader.error(key, fmt::format("values must be >= {}, got [{}]", minimum, fmt::join(values, ", ")));
    }
  }
  return Status::ok();
}

Result<bool> read_flag(const AttributeReader& reader, const std::string& key) {
  QDQRT_ASSIGN_OR_RETURN(int64_t value, reader.get_int(key, 0));
  if (value != 0 && value != 1) return reader.error(key, fmt::format("must be 0 or 1, got {}", value));
  return value == 1;
}

Status parse_pool_window(const Node& node, bool dilations_allowed, PoolAttributes& attributes) {
  AttributeReader reader(node);
  QDQRT_ASSIGN_OR_RETURN(attributes.auto_pad, parse_auto_pad(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.ceil_mode, read_flag(reader, "ceil_mode"));
  if (reader.has("dilations") && !dilations_allowed) {
    return reader.error("dilations", fmt::format("not defined for {} at opset {}", node.op_type, node.opset));
  }
  QDQRT_ASSIGN_OR_RETURN(attributes.dilations, reader.get_ints("dilations"));
  if (!reader.has("kernel_shape")) return reader.error("kernel_shape", "required but missing");
  QDQRT_ASSIGN_OR_RETURN(attributes.kernel_shape, reader.get_ints("kernel_shape"));
  QDQRT_ASSIGN_OR_RETURN(attributes.pads, reader.get_ints("pads"));
  QDQRT_ASSIGN_OR_RETURN(attributes.strides, reader.get_ints("strides"));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "kernel_shape", attributes.kernel_shape, 1));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "dilations", attributes.dilations, 1));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "pads", attributes.pads, 0));
  QDQRT_RETURN_IF_ERROR(check_at_least(reader, "strides", attributes.strides, 1));
  size_t spatial = attributes.kernel_shape.size();
  if (spatial == 0) return reader.error("kernel_shape", "must not be empty");
  if (!attributes.strides.empty() && attributes.strides.size() != spatial) {
    return reader.error("strides", fmt::format("has {} values, kernel_shape has {}", attributes.strides.size(), spatial));
  }
  if (!attributes.dilations.empty() && attributes.dilations.size() != spatial) {
    return reader.error("dilations",
                        fmt::format("has {} values, kernel_shape has {}", attributes.dilations.size(), spatial));
  }
  if (!attributes.pads.empty() && attributes.pads.size() != 2 * spatial) {
    return reader.error("pads", fmt::format("has {} values, expected {}", attributes.pads.size(), 2 * spatial));
  }
  return Status::ok();
}

Result<std::shared_ptr<const OpAttributes>> parse_max_pool(const Node& node) {
  AttributeReader reader(node);
  MaxPoolAttributes attributes;
  QDQRT_RETURN_IF_ERROR(parse_pool_window(node, /*dilations_allowed=*/true, attributes));
  QDQRT_ASSIGN_OR_RETURN(attributes.storage_order, reader.get_int("storage_order", 0));
  if (attributes.storage_order != 0 && attributes.storage_order != 1) {
    return reader.error("storage_order", fmt::format("must be 0 or 1, got {}", attributes.storage_order));
  }
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_average_pool(const Node& node) {
  AttributeReader reader(node);
  AveragePoolAttributes attributes;
  QDQRT_RETURN_IF_ERROR(parse_pool_window(node, /*dilations_allowed=*/node.opset >= 19, attributes));
  QDQRT_ASSIGN_OR_RETURN(attributes.count_include_pad, read_flag(reader, "count_include_pad"));
  return make_attributes(std::move(attributes));
}

// MaxPool, AveragePool: [N, C, spatial...] -> [N, C, out...]; MaxPool's Indices as Y.
Status infer_pool(ShapeInferenceContext& context, const PoolAttributes& attributes) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  if (x.size() < 3) return context.error("input X {} needs [N, C, spatial...]", dims_to_string(x));
  QDQRT_ASSIGN_OR_RETURN(
      Dims spatial, window_spatial_dims(context, x, attributes.kernel_shape, attributes.strides, attributes.dilations,
                                        attributes.pads, attributes.auto_pad, attributes.ceil_mode));
  Dims y = {x[0], x[1]};
  y.insert(y.end(), spatial.begin(), spatial.end());
  for (size_t i = 0; i < context.node().outputs.size() && i < 2; ++i) context.set_output_dims(i, y);
  return Status::ok();
}

Status infer_max_pool(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<MaxPoolAttributes>(context, parse_max_pool));
  return infer_pool(context, *attributes);
}

Status infer_average_pool(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<AveragePoolAttributes>(context, parse_average_pool));
  return infer_pool(context, *attributes);
}

// GlobalAveragePool, GlobalMaxPool: [N, C, spatial...] -> [N, C, 1...].
Status infer_global_pool(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  if (x.size() < 2) return context.error("input X {} needs [N, C, spatial...]", dims_to_string(x));
  for (size_t i = 2; i < x.size(); ++i) x[i] = static_dim(1);
  context.set_output_dims(0, std::move(x));
  return Status::ok();
}

}  // namespace

Result<AveragePoolAttributes> parse_average_pool_attribute_set(const Node& node) {
  AttributeReader reader(node);
  AveragePoolAttributes attributes;
  QDQRT_RETURN_IF_ERROR(parse_pool_window(node, /*dilations_allowed=*/true, attributes));
  QDQRT_ASSIGN_OR_RETURN(attributes.count_include_pad, read_flag(reader, "count_include_pad"));
  return attributes;
}

void register_pool_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "MaxPool", .parse_attributes = parse_max_pool, .infer_shape = infer_max_pool});
  registry.add({.domain = "",
                .op_type = "AveragePool",
                .parse_attributes = parse_average_pool,
                .infer_shape = infer_average_pool});
  registry.add({.domain = "", .op_type = "GlobalAveragePool", .infer_shape = infer_global_pool});
  registry.add({.domain = "", .op_type = "GlobalMaxPool", .infer_shape = infer_global_pool});
}

}  // namespace qdqrt
