#include "core/ops/normalization.h"

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/op_families.h"

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

}  // namespace

void register_normalization_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "BatchNormalization", .parse_attributes = parse_batch_normalization});
  registry.add({.domain = "",
                .op_type = "LayerNormalization",
                .min_opset = 17,
                .parse_attributes = parse_layer_normalization});
}

}  // namespace qdqrt
