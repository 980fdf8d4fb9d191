#include "core/ops/normalization.h"

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

namespace {

Result<std::shared_ptr<const OpAttributes>> parse_batch_normalization(const Node& node) {
  AttributeReader reader(node);
  BatchNormalizationAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.epsilon, reader.get_float("epsilon", 1e-5f));
  QDQRT_ASSIGN_OR_RETURN(attributes.momentum, reader.get_float("momentum", 0.9f));
  if (reader.has("spatial")) {
    return reader.error("spatial", fmt::format("not defined at opset {} (removed in opset 9)", node.opset));
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t training_mode, reader.get_int("training_mode", 0));
  if (training_mode != 0 && node.opset < 14) {
    return reader.error("training_mode", fmt::format("not defined before opset 14 (node has opset {})", node.opset));
  }
  if (training_mode != 0) {
    return unsupported("{}: training_mode={} is not supported (inference only)", node.describe(), training_mode);
  }
  // Before opset 14 the extra outputs (running mean/var, saved mean/var) mean training mode.
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) {
      return unsupported("{}: output {} ('{}') is only produced in training mode, which is not supported",
                         node.describe(), i, node.outputs[i]);
    }
  }
  return make_attributes(attributes);
}

Result<std::shared_ptr<const OpAttributes>> parse_layer_normalization(const Node& node) {
  AttributeReader reader(node);
  LayerNormalizationAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, reader.get_int("axis", -1));
  QDQRT_ASSIGN_OR_RETURN(attributes.epsilon, reader.get_float("epsilon", 1e-5f));
  QDQRT_ASSIGN_OR_RETURN(attributes.stash_type, reader.get_int("stash_type", 1));
  // stash_type names a TensorProto element type; float32 (1), float16, bfloat16 and double are valid.
  if (attributes.stash_type != 1 && attributes.stash_type != 10 && attributes.stash_type != 11 &&
      attributes.stash_type != 16) {
    return reader.error("stash_type", fmt::format("must be a float element type (1, 10, 11, 16), got {}",
                                                  attributes.stash_type));
  }
  return make_attributes(attributes);
}

// BatchNormalization: Y has X's dims; the training outputs (running or saved mean and variance)
// are per channel, [C].
Status infer_batch_normalization(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  if (x.size() < 2) return context.error("input X {} needs [N, C, ...]", dims_to_string(x));
  context.set_output_dims(0, x);
  for (size_t i = 1; i < context.node().outputs.size(); ++i) context.set_output_dims(i, Dims{x[1]});
  return Status::ok();
}

// LayerNormalization: Y has X's dims; Mean and InvStdDev keep the axes before `axis` and have 1
// from it on.
Status infer_layer_normalization(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes,
                         shape_attributes<LayerNormalizationAttributes>(context, parse_layer_normalization));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(size_t axis, resolve_axis(context, attributes->axis, x.size(), "attribute 'axis'"));
  context.set_output_dims(0, x);
  Dims statistics = x;
  for (size_t i = axis; i < statistics.size(); ++i) statistics[i] = static_dim(1);
  for (size_t i = 1; i < context.node().outputs.size() && i < 3; ++i) context.set_output_dims(i, statistics);
  return Status::ok();
}

}  // namespace

void register_normalization_ops(OpRegistry& registry) {
  registry.add({.domain = "",
                .op_type = "BatchNormalization",
                .parse_attributes = parse_batch_normalization,
                .infer_shape = infer_batch_normalization});
  registry.add({.domain = "",
                .op_type = "LayerNormalization",
                .min_opset = 17,
                .parse_attributes = parse_layer_normalization,
                .infer_shape = infer_layer_normalization});
}

}  // namespace qdqrt
