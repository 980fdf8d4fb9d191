#include "core/ops/fused.h"

#include <cmath>

#include <algorithm>

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/fused_layers.h"
#include "core/ops/op_families.h"

namespace qdqrt {

const char* activation_kind_name(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kNone: return "";
    case ActivationKind::kRelu: return "Relu";
    case ActivationKind::kClip: return "Clip";
    case ActivationKind::kLeakyRelu: return "LeakyRelu";
  }
  return "";
}

float FusedActivation::apply(float value) const {
  switch (kind) {
    case ActivationKind::kNone: return value;
    case ActivationKind::kRelu: return std::max(value, 0.0f);
    case ActivationKind::kClip: return std::min(std::max(value, min), max);
    case ActivationKind::kLeakyRelu: return value < 0.0f ? alpha * value : value;
  }
  return value;
}

const char* lookup_function_name(LookupFunction function) {
  switch (function) {
    case LookupFunction::kSigmoid: return "Sigmoid";
    case LookupFunction::kSiLU: return "SiLU";
    case LookupFunction::kHardSwish: return "HardSwish";
    case LookupFunction::kHardSigmoid: return "HardSigmoid";
    case LookupFunction::kTanh: return "Tanh";
    case LookupFunction::kGelu: return "Gelu";
    case LookupFunction::kQuantizedSiLU: return "QuantizedSiLU";
  }
  return "";
}

namespace {

Result<FusedLayerInfo> parse_fused_info(const Node& node) {
  AttributeReader reader(node);
  FusedLayerInfo info;
  if (const Attribute* fused = node.find_attribute("fused_nodes")) {
    if (fused->kind != Attribute::Kind::kStrings) return reader.error("fused_nodes", "must be a list of strings");
    info.fused_nodes = fused->strings;
  }
  QDQRT_ASSIGN_OR_RETURN(std::string activation, reader.get_string("activation", ""));
  FusedActivation& act = info.activation;
  if (activation.empty()) {
    act.kind = ActivationKind::kNone;
  } else if (activation == "Relu") {
    act.kind = ActivationKind::kRelu;
  } else if (activation == "Clip") {
    act.kind = ActivationKind::kClip;
  } else if (activation == "LeakyRelu") {
    act.kind = ActivationKind::kLeakyRelu;
  } else {
    return reader.error("activation", fmt::format("must be \"\", Relu, Clip or LeakyRelu, got \"{}\"", activation));
  }
  QDQRT_ASSIGN_OR_RETURN(act.min, reader.get_float("activation_min", act.min));
  QDQRT_ASSIGN_OR_RETURN(act.max, reader.get_float("activation_max", act.max));
  QDQRT_ASSIGN_OR_RETURN(act.alpha, reader.get_float("activation_alpha", act.alpha));
  if (act.kind == ActivationKind::kClip && !(act.min <= act.max)) {
    return reader.error("activation_min", fmt::format("Clip bounds [{}, {}] are empty", act.min, act.max));
  }
  QDQRT_ASSIGN_OR_RETURN(info.pointwise_code, reader.get_ints("pointwise_code"));
  QDQRT_ASSIGN_OR_RETURN(info.pointwise_constants, reader.get_floats("pointwise_constants"));
  QDQRT_ASSIGN_OR_RETURN(info.pointwise_channels, reader.get_int("pointwise_channels", 0));
  if (info.pointwise_code.size() % 4 != 0) {
    return reader.error("pointwise_code", fmt::format("has {} values, not 4 per instruction", info.pointwise_code.size()));
  }
  for (int64_t value : info.pointwise_code) {
    if (value < 0 || value > 255) return reader.error("pointwise_code", fmt::format("value {} is not a byte", value));
  }
  if (info.pointwise_channels < 0 || info.pointwise_channels > (int64_t{1} << 24)) {
    return reader.error("pointwise_channels", fmt::format("{} is out of range", info.pointwise_channels));
  }
  const size_t row = static_cast<size_t>(info.pointwise_channels > 0 ? info.pointwise_channels : 1);
  if (info.pointwise_constants.size() % row != 0) {
    return reader.error("pointwise_constants", fmt::format("has {} values, not a multiple of {} channels",
                                                           info.pointwise_constants.size(), row));
  }
  return info;
}

Result<std::shared_ptr<const OpAttributes>> parse_qconv(const Node& node) {
  QConvAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(static_cast<ConvAttributes&>(attributes), parse_conv_attribute_set(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  return make_attributes(std::move(attributes));
}

template <class T>
Result<std::shared_ptr<const OpAttributes>> parse_info_only(const Node& node) {
  T attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_qaverage_pool(const Node& node) {
  QAveragePoolAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(static_cast<AveragePoolAttributes&>(attributes), parse_average_pool_attribute_set(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_qlookup(const Node& node) {
  AttributeReader reader(node);
  QLookupAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  if (attributes.fused.activation.kind != ActivationKind::kNone) {
    return reader.error("activation", "QLookup takes no activation (the table is the function)");
  }
  if (!reader.has("function")) return reader.error("function", "required but missing");
  QDQRT_ASSIGN_OR_RETURN(std::string function, reader.get_string("function", ""));
  bool known = false;
  for (LookupFunction candidate : {LookupFunction::kSigmoid, LookupFunction::kSiLU, LookupFunction::kHardSwish,
                                   LookupFunction::kHardSigmoid, LookupFunction::kTanh, LookupFunction::kGelu,
                                   LookupFunction::kQuantizedSiLU}) {
    if (function == lookup_function_name(candidate)) {
      attributes.function = candidate;
      known = true;
    }
  }
  if (!known) {
    return reader.error("function",
                        fmt::format("must be Sigmoid, SiLU, HardSwish, HardSigmoid, Tanh, Gelu or QuantizedSiLU, got \"{}\"",
                                    function));
  }
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, reader.get_float("alpha", attributes.alpha));
  QDQRT_ASSIGN_OR_RETURN(attributes.beta, reader.get_float("beta", attributes.beta));
  QDQRT_ASSIGN_OR_RETURN(std::string approximate, reader.get_string("approximate", "none"));
  if (approximate != "none" && approximate != "tanh") {
    return reader.error("approximate", fmt::format("must be \"none\" or \"tanh\", got \"{}\"", approximate));
  }
  attributes.tanh_approximation = approximate == "tanh";
  if (attributes.function == LookupFunction::kQuantizedSiLU) {
    QDQRT_ASSIGN_OR_RETURN(attributes.sigmoid_scale, reader.get_float("sigmoid_scale", 0.0f));
    QDQRT_ASSIGN_OR_RETURN(attributes.sigmoid_zero_point, reader.get_int("sigmoid_zero_point", 0));
    QDQRT_ASSIGN_OR_RETURN(int64_t is_signed, reader.get_int("sigmoid_signed", 0));
    attributes.sigmoid_signed = is_signed != 0;
    if (!(attributes.sigmoid_scale > 0.0f) || !std::isfinite(attributes.sigmoid_scale)) {
      return reader.error("sigmoid_scale", fmt::format("must be finite and > 0, got {}", attributes.sigmoid_scale));
    }
    const int64_t lowest = attributes.sigmoid_signed ? -128 : 0;
    if (attributes.sigmoid_zero_point < lowest || attributes.sigmoid_zero_point > lowest + 255) {
      return reader.error("sigmoid_zero_point", fmt::format("{} is outside the {} range", attributes.sigmoid_zero_point,
                                                            attributes.sigmoid_signed ? "int8" : "uint8"));
    }
  }
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_qconcat(const Node& node) {
  AttributeReader reader(node);
  QConcatAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  if (!reader.has("axis")) return reader.error("axis", "required but missing");
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, reader.get_int("axis", 0));
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_layer_norm(const Node& node) {
  AttributeReader reader(node);
  LayerNormAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.epsilon, reader.get_float("epsilon", attributes.epsilon));
  if (!(attributes.epsilon >= 0.0f) || !std::isfinite(attributes.epsilon)) {
    return reader.error("epsilon", fmt::format("must be finite and >= 0, got {}", attributes.epsilon));
  }
  return make_attributes(std::move(attributes));
}

AttributeParser parser_for(const std::string& op_type) {
  if (op_type == layers::kQConv) return parse_qconv;
  if (op_type == layers::kQMatMul) return parse_info_only<QMatMulAttributes>;
  if (op_type == layers::kQAdd || op_type == layers::kQMul) return parse_info_only<QBinaryAttributes>;
  if (op_type == layers::kQAveragePool) return parse_qaverage_pool;
  if (op_type == layers::kQGlobalAveragePool) return parse_info_only<QGlobalAveragePoolAttributes>;
  if (op_type == layers::kQLookup) return parse_qlookup;
  if (op_type == layers::kQConcat) return parse_qconcat;
  if (op_type == layers::kQRequantize) return parse_info_only<QRequantizeAttributes>;
  if (op_type == layers::kChannelGate) return parse_info_only<ChannelGateAttributes>;
  if (op_type == layers::kLayerNorm) return parse_layer_norm;
  if (op_type == layers::kSoftmax) return parse_info_only<SoftmaxQuantizeAttributes>;
  return nullptr;
}

}  // namespace

Result<std::shared_ptr<const OpAttributes>> parse_fused_layer_attributes(const Node& node) {
  AttributeParser parser = parser_for(node.op_type);
  if (parser == nullptr || node.domain != layers::kDomain) {
    return invalid_argument("{}: not a qdqrt fused layer (domain '{}')", node.describe(), node.domain);
  }
  return parser(node);
}

const FusedLayerInfo* fused_layer_info(const Node& node) {
  const OpAttributes* typed = node.typed_attributes.get();
  if (typed == nullptr || node.domain != layers::kDomain) return nullptr;
  if (auto* a = dynamic_cast<const QConvAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QMatMulAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QBinaryAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QAveragePoolAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QGlobalAveragePoolAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QLookupAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QConcatAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const QRequantizeAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const ChannelGateAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const LayerNormAttributes*>(typed)) return &a->fused;
  if (auto* a = dynamic_cast<const SoftmaxQuantizeAttributes*>(typed)) return &a->fused;
  return nullptr;
}

std::string layer_kind(const Node& node, const Graph* graph) {
  if (node.domain != layers::kDomain) return node.op_type;
  if (node.op_type == layers::kQConv) {
    const auto* conv = dynamic_cast<const ConvAttributes*>(node.typed_attributes.get());
    int64_t group = conv != nullptr ? conv->group : 1;
    if (group <= 1) return "Conv";
    // Depthwise: one input channel per group (weight [O][1][k...]).
    if (graph != nullptr) {
      const std::string& weight = node.input(layers::kConvW);
      const Tensor* w = graph->find_initializer(weight);
      if (w != nullptr && w->rank() >= 2 && w->dim(1) == 1) return "DepthwiseConv";
      const ValueInfo* info = graph->find_value(weight);
      if (w == nullptr && info != nullptr && info->shape && info->shape->size() >= 2 && (*info->shape)[1].value == 1) {
        return "DepthwiseConv";
      }
    }
    return "GroupConv";
  }
  if (node.op_type == layers::kQMatMul) return "MatMul";
  if (node.op_type == layers::kQAdd) return "Add";
  if (node.op_type == layers::kQMul) return "Mul";
  if (node.op_type == layers::kQAveragePool) return "AveragePool";
  if (node.op_type == layers::kQGlobalAveragePool) return "GlobalAveragePool";
  if (node.op_type == layers::kQLookup) return "Lookup";
  if (node.op_type == layers::kQConcat) return "Concat";
  if (node.op_type == layers::kQRequantize) return "Requantize";
  if (node.op_type == layers::kChannelGate) return "ChannelGate";
  return node.op_type;
}

void register_fused_ops(OpRegistry& registry) {
  for (const char* op_type : {layers::kQConv, layers::kQMatMul, layers::kQAdd, layers::kQMul, layers::kQAveragePool,
                              layers::kQGlobalAveragePool, layers::kQLookup, layers::kQConcat, layers::kQRequantize,
                              layers::kChannelGate, layers::kLayerNorm, layers::kSoftmax}) {
    // qdqrt's own domain is at version 1.
    registry.add({.domain = layers::kDomain,
                  .op_type = op_type,
                  .min_opset = 1,
                  .max_opset = 1,
                  .parse_attributes = parser_for(op_type)});
  }
}

}  // namespace qdqrt
