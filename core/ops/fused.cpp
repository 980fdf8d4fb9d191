#include "core/ops/fused.h"

#include <cmath>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked_math.h"
#include "core/op_registry.h"
#include "core/shape_inference.h"
#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_batchnorm.h"
#include "core/ops/fused_conv.h"
#include "core/ops/fused_layers.h"
#include "core/ops/fused_matmul.h"
#include "core/ops/fused_op_table.h"
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
    case LookupFunction::kErf: return "Erf";
    case LookupFunction::kConstantAdd: return "ConstantAdd";
    case LookupFunction::kConstantMul: return "ConstantMul";
  }
  return "";
}

const char* conv_epilogue_function_name(ConvEpilogueFunction function) {
  switch (function) {
    case ConvEpilogueFunction::kNone: return "";
    case ConvEpilogueFunction::kSigmoid: return "Sigmoid";
    case ConvEpilogueFunction::kHardSwish: return "HardSwish";
    case ConvEpilogueFunction::kSiLU: return "SiLU";
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
                                   LookupFunction::kQuantizedSiLU, LookupFunction::kErf, LookupFunction::kConstantAdd,
                                   LookupFunction::kConstantMul}) {
    if (function == lookup_function_name(candidate)) {
      attributes.function = candidate;
      known = true;
    }
  }
  if (!known) {
    return reader.error("function",
                        fmt::format("must be Sigmoid, SiLU, HardSwish, HardSigmoid, Tanh, Gelu, QuantizedSiLU, Erf, ConstantAdd or "
                                    "ConstantMul, got \"{}\"",
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
  if (attributes.function == LookupFunction::kErf) {
    if (!reader.has("operand_op")) return reader.error("operand_op", "required for Erf but missing");
    QDQRT_ASSIGN_OR_RETURN(std::string operand_op, reader.get_string("operand_op", ""));
    if (operand_op != "Div" && operand_op != "Mul") {
      return reader.error("operand_op", fmt::format("must be \"Div\" or \"Mul\", got \"{}\"", operand_op));
    }
    attributes.operand_divides = operand_op == "Div";
  }
  const bool has_operand = attributes.function == LookupFunction::kErf ||
                           attributes.function == LookupFunction::kConstantAdd ||
                           attributes.function == LookupFunction::kConstantMul;
  if (has_operand) {
    if (!reader.has("operand")) return reader.error("operand", fmt::format("required for {} but missing", function));
    QDQRT_ASSIGN_OR_RETURN(attributes.operand, reader.get_float("operand", 1.0f));
    if (!std::isfinite(attributes.operand) || (attributes.function == LookupFunction::kErf && attributes.operand == 0.0f)) {
      return reader.error("operand", fmt::format("must be finite{}, got {}",
                                                 attributes.function == LookupFunction::kErf ? " and non-zero" : "",
                                                 attributes.operand));
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

Result<std::shared_ptr<const OpAttributes>> parse_fused_batchnorm(const Node& node) {
  AttributeReader reader(node);
  FusedBatchNormAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  const ActivationKind activation = attributes.fused.activation.kind;
  if (activation != ActivationKind::kNone && activation != ActivationKind::kRelu && activation != ActivationKind::kClip) {
    return reader.error("activation", fmt::format("must be \"\", Relu or Clip, got \"{}\"", activation_kind_name(activation)));
  }
  if (attributes.fused.has_pointwise()) return reader.error("pointwise_code", "is not taken by a FusedBatchNorm");
  QDQRT_ASSIGN_OR_RETURN(attributes.epsilon, reader.get_float("epsilon", attributes.epsilon));
  if (!(attributes.epsilon >= 0.0f) || !std::isfinite(attributes.epsilon)) {
    return reader.error("epsilon", fmt::format("must be finite and >= 0, got {}", attributes.epsilon));
  }
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_add_quantize(const Node& node) {
  AttributeReader reader(node);
  AddQuantizeAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  const ActivationKind activation = attributes.fused.activation.kind;
  if (activation != ActivationKind::kNone && activation != ActivationKind::kRelu) {
    return reader.error("activation", fmt::format("must be \"\" or Relu, got \"{}\"", activation_kind_name(activation)));
  }
  if (attributes.fused.has_pointwise()) return reader.error("pointwise_code", "is not taken by an AddQuantize");
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_fused_matmul(const Node& node) {
  AttributeReader reader(node);
  FusedMatMulAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  if (attributes.fused.activation.kind != ActivationKind::kNone) {
    return reader.error("activation", fmt::format("FusedMatMul takes none, got \"{}\"",
                                                  activation_kind_name(attributes.fused.activation.kind)));
  }
  if (attributes.fused.has_pointwise()) return reader.error("pointwise_code", "FusedMatMul takes no pointwise program");
  QDQRT_ASSIGN_OR_RETURN(std::string function, reader.get_string("function", ""));
  if (!function.empty() && function != "Gelu") {
    return reader.error("function", fmt::format("must be \"\" or Gelu, got \"{}\"", function));
  }
  attributes.gelu = function == "Gelu";
  return make_attributes(std::move(attributes));
}

Result<std::shared_ptr<const OpAttributes>> parse_fused_conv(const Node& node) {
  AttributeReader reader(node);
  FusedConvAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(static_cast<ConvAttributes&>(attributes), parse_conv_attribute_set(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  if (attributes.fused.activation.kind == ActivationKind::kLeakyRelu) {
    return reader.error("activation", "FusedConv takes \"\", Relu or Clip");
  }
  if (attributes.fused.has_pointwise()) return reader.error("pointwise_code", "FusedConv takes no pointwise program");
  QDQRT_ASSIGN_OR_RETURN(std::string function, reader.get_string("function", ""));
  bool known = false;
  for (ConvEpilogueFunction candidate : {ConvEpilogueFunction::kNone, ConvEpilogueFunction::kSigmoid,
                                         ConvEpilogueFunction::kHardSwish, ConvEpilogueFunction::kSiLU}) {
    if (function == conv_epilogue_function_name(candidate)) {
      attributes.function = candidate;
      known = true;
    }
  }
  if (!known) {
    return reader.error("function", fmt::format("must be \"\", Sigmoid, HardSwish or SiLU, got \"{}\"", function));
  }
  if (attributes.function != ConvEpilogueFunction::kNone && attributes.fused.activation.kind != ActivationKind::kNone) {
    return reader.error("function", fmt::format("{} with activation {}: FusedConv takes at most one of them",
                                                function, activation_kind_name(attributes.fused.activation.kind)));
  }
  return make_attributes(std::move(attributes));
}

// A conv epilogue's function ("function" under `prefix`).
Result<ConvEpilogueFunction> parse_epilogue_function(const AttributeReader& reader, const std::string& prefix) {
  QDQRT_ASSIGN_OR_RETURN(std::string function, reader.get_string(prefix + "function", ""));
  for (ConvEpilogueFunction candidate : {ConvEpilogueFunction::kNone, ConvEpilogueFunction::kSigmoid,
                                         ConvEpilogueFunction::kHardSwish, ConvEpilogueFunction::kSiLU}) {
    if (function == conv_epilogue_function_name(candidate)) return candidate;
  }
  return reader.error(prefix + "function",
                      fmt::format("must be \"\", Sigmoid, HardSwish or SiLU, got \"{}\"", function));
}

// A 1x1 part's epilogue of a FusedDepthwiseConv: "<prefix>activation" ("", Relu or Clip with
// "<prefix>activation_min/max") and "<prefix>function", at most one of them.
Result<ConvEpilogue> parse_part_epilogue(const AttributeReader& reader, const std::string& prefix) {
  ConvEpilogue epilogue;
  QDQRT_ASSIGN_OR_RETURN(std::string activation, reader.get_string(prefix + "activation", ""));
  if (activation == "Relu") {
    epilogue.activation.kind = ActivationKind::kRelu;
  } else if (activation == "Clip") {
    epilogue.activation.kind = ActivationKind::kClip;
    QDQRT_ASSIGN_OR_RETURN(epilogue.activation.min, reader.get_float(prefix + "activation_min", epilogue.activation.min));
    QDQRT_ASSIGN_OR_RETURN(epilogue.activation.max, reader.get_float(prefix + "activation_max", epilogue.activation.max));
    if (!(epilogue.activation.min <= epilogue.activation.max)) {
      return reader.error(prefix + "activation_min", fmt::format("Clip bounds [{}, {}] are empty",
                                                                 epilogue.activation.min, epilogue.activation.max));
    }
  } else if (!activation.empty()) {
    return reader.error(prefix + "activation", fmt::format("must be \"\", Relu or Clip, got \"{}\"", activation));
  }
  QDQRT_ASSIGN_OR_RETURN(epilogue.function, parse_epilogue_function(reader, prefix));
  if (epilogue.function != ConvEpilogueFunction::kNone && epilogue.activation.kind != ActivationKind::kNone) {
    return reader.error(prefix + "function", "a part takes at most one of activation and function");
  }
  return epilogue;
}

Result<std::shared_ptr<const OpAttributes>> parse_fused_depthwise_conv(const Node& node) {
  AttributeReader reader(node);
  FusedDepthwiseConvAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(static_cast<ConvAttributes&>(attributes), parse_conv_attribute_set(node));
  QDQRT_ASSIGN_OR_RETURN(attributes.fused, parse_fused_info(node));
  const FusedActivation& activation = attributes.fused.activation;
  if (activation.kind == ActivationKind::kLeakyRelu) {
    return reader.error("activation", "FusedDepthwiseConv takes \"\", Relu or Clip");
  }
  if (attributes.fused.has_pointwise()) {
    return reader.error("pointwise_code", "FusedDepthwiseConv takes no pointwise program");
  }
  QDQRT_ASSIGN_OR_RETURN(attributes.function, parse_epilogue_function(reader, ""));
  if (attributes.function != ConvEpilogueFunction::kNone && activation.kind != ActivationKind::kNone) {
    return reader.error("function", "the depthwise takes at most one of activation and function");
  }
  QDQRT_ASSIGN_OR_RETURN(attributes.expand, parse_part_epilogue(reader, "expand_"));
  QDQRT_ASSIGN_OR_RETURN(attributes.project, parse_part_epilogue(reader, "project_"));
  QDQRT_ASSIGN_OR_RETURN(std::vector<int64_t> parts, reader.get_ints("part_nodes"));
  int64_t total = 0;
  bool negative = false;
  for (int64_t count : parts) {
    negative = negative || count < 0;
    total += count;
  }
  if (parts.size() != 3 || negative || parts[1] < 1 ||
      total != static_cast<int64_t>(attributes.fused.fused_nodes.size())) {
    return reader.error("part_nodes", fmt::format("must be 3 counts (expansion, depthwise >= 1, projection) adding "
                                                  "up to the {} fused_nodes, got [{}]",
                                                  attributes.fused.fused_nodes.size(), fmt::join(parts, ", ")));
  }
  const bool expand = node.has_input(layers::kFusedDepthwiseExpandW);
  const bool project = node.has_input(layers::kFusedDepthwiseProjectW);
  if (!expand && !project) return reader.error("part_nodes", "neither an expansion nor a projection weight is given");
  if ((parts[0] > 0) != expand || (parts[2] > 0) != project) {
    return reader.error("part_nodes", fmt::format("[{}] does not match the parts given (expansion {}, projection {})",
                                                  fmt::join(parts, ", "), expand ? "yes" : "no", project ? "yes" : "no"));
  }
  std::copy(parts.begin(), parts.end(), attributes.part_nodes);
  return make_attributes(std::move(attributes));
}

template <class T>
const FusedLayerInfo* fused_info_of(const OpAttributes& attributes) {
  const T* typed = dynamic_cast<const T*>(&attributes);
  return typed != nullptr ? &typed->fused : nullptr;
}

// The node's typed attributes, parsed from its raw ones when it carries none.
template <class T, AttributeParser kParse>
std::shared_ptr<const T> attributes_of(const Node& node) {
  if (auto typed = std::dynamic_pointer_cast<const T>(node.typed_attributes)) return typed;
  Result<std::shared_ptr<const OpAttributes>> parsed = kParse(node);
  return parsed.ok() ? std::dynamic_pointer_cast<const T>(parsed.value()) : nullptr;
}

template <size_t kSlot>
OptionalDims same_as_input(const Node&, const InputShapes& inputs) {
  return input_dims(inputs, kSlot);
}

template <size_t kA, size_t kB>
OptionalDims broadcast_inputs(const Node&, const InputShapes& inputs) {
  return broadcast_dims(input_dims(inputs, kA), input_dims(inputs, kB));
}

using namespace layers;

// FusedBatchNorm: x0's dims with dim 1 the sum of the inputs' (static channel counts; every other
// static dim equal).
OptionalDims fused_batchnorm_output_dims(const Node& node, const InputShapes& inputs) {
  if (node.inputs.size() <= kFusedBatchNormFirstX) return std::nullopt;
  OptionalDims y = input_dims(inputs, kFusedBatchNormFirstX);
  if (!y || y->size() < 2) return std::nullopt;
  int64_t channels = 0;
  for (size_t slot = kFusedBatchNormFirstX; slot < node.inputs.size(); ++slot) {
    const OptionalDims x = input_dims(inputs, slot);
    if (!x || x->size() != y->size() || !(*x)[1].is_static()) return std::nullopt;
    for (size_t axis = 0; axis < x->size(); ++axis) {
      if (axis != 1 && (*x)[axis].is_static() && (*y)[axis].is_static() && (*x)[axis].value != (*y)[axis].value) {
        return std::nullopt;
      }
    }
    channels += (*x)[1].value;
  }
  (*y)[1] = static_dim(channels);
  return y;
}

// FusedDepthwiseConv's three convs: the optional 1x1 expansion on x [N, C, H, W] to E channels,
// the depthwise conv [N, E, H', W'] and the optional 1x1 projection to y's channels.
std::optional<int64_t> fused_depthwise_conv_macs(const Node& node, const InputShapes& inputs, const Dims& y) {
  const OptionalDims w = input_dims(inputs, kFusedDepthwiseW);
  const std::optional<int64_t> y_elements = static_numel(y);
  if (!w || w->empty() || !(*w)[0].is_static() || y.size() < 2 || !y[1].is_static() || y[1].value <= 0 ||
      !y_elements) {
    return std::nullopt;
  }
  const int64_t expanded_channels = (*w)[0].value;
  const bool projected = node.has_input(kFusedDepthwiseProjectW);
  // The depthwise conv's output: y's elements with the expanded channels in place of y's.
  const std::optional<int64_t> depthwise_elements =
      projected ? checked_mul(*y_elements / y[1].value, expanded_channels) : y_elements;
  const std::optional<int64_t> per_output = conv_macs_per_output(w);
  if (!depthwise_elements || !per_output) return std::nullopt;
  std::optional<int64_t> total = checked_mul(*depthwise_elements, *per_output);
  auto add = [&total](std::optional<int64_t> part) {
    total = total && part ? checked_add(*total, *part) : std::nullopt;
  };
  if (node.has_input(kFusedDepthwiseExpandW)) {
    // A 1x1 stride-1 conv: each element of x feeds every expanded channel at its pixel.
    const std::optional<int64_t> x_elements = static_numel(input_dims(inputs, kFusedDepthwiseX));
    add(x_elements ? checked_mul(*x_elements, expanded_channels) : std::nullopt);
  }
  if (projected) add(checked_mul(*y_elements, expanded_channels));
  return total;
}

constexpr QuantizedInputSlot kUnaryActivation{kUnaryX, kUnaryXZeroPoint};

// One row per fused op (core/ops/fused_op_table.h says what each field is for). A function-local
// static: the op registry may be built during another file's static initialization.
std::span<const FusedOpRow> fused_ops() {
  static const FusedOpRow kFusedOps[] = {
      {.op_type = kQConv,
       .quantized_inputs = {{kConvX, kConvXZeroPoint}, {kConvResidual, kConvResidualZeroPoint}},
       .output_zero_point = kConvYZeroPoint,
       .kind = "Conv",
       .refine_kind = [](const Node& node, const InputShapes& inputs) -> std::string {
         const Attribute* group = node.find_attribute("group");
         return conv_kind(group != nullptr && group->kind == Attribute::Kind::kInt ? group->i : 1,
                          input_dims(inputs, kConvW));
       },
       .parse_attributes = parse_qconv,
       .fused_info = fused_info_of<QConvAttributes>,
       .output_shape = [](const Node& node, const InputShapes& inputs) -> OptionalDims {
         auto attributes = attributes_of<QConvAttributes, parse_qconv>(node);
         if (attributes == nullptr) return std::nullopt;
         return conv_output_dims(node, *attributes, input_dims(inputs, kConvX), input_dims(inputs, kConvW));
       },
       .macs = [](const Node& node, const InputShapes& inputs, const Dims& y) -> std::optional<int64_t> {
         std::optional<int64_t> macs = conv_macs(input_dims(inputs, kConvW), y);
         // densify_grouped_conv merged `merged_groups` groups into one with zeros between them:
         // the model's MACs are the merged weight's divided by it.
         const Attribute* merged = node.find_attribute("merged_groups");
         if (macs && merged != nullptr && merged->kind == Attribute::Kind::kInt && merged->i > 1) *macs /= merged->i;
         return macs;
       },
       .layer_info_type = "Convolution"},
      {.op_type = kFusedConv,  // float inputs and output
       .kind = "Conv",
       .refine_kind = [](const Node& node, const InputShapes& inputs) -> std::string {
         const Attribute* group = node.find_attribute("group");
         return conv_kind(group != nullptr && group->kind == Attribute::Kind::kInt ? group->i : 1,
                          input_dims(inputs, kFusedConvW));
       },
       .parse_attributes = parse_fused_conv,
       .fused_info = fused_info_of<FusedConvAttributes>,
       .output_shape = [](const Node& node, const InputShapes& inputs) -> OptionalDims {
         auto attributes = attributes_of<FusedConvAttributes, parse_fused_conv>(node);
         if (attributes == nullptr) return std::nullopt;
         return conv_output_dims(node, *attributes, input_dims(inputs, kFusedConvX), input_dims(inputs, kFusedConvW));
       },
       .more_output_shape = row_sums_output_dims,
       .macs = [](const Node&, const InputShapes& inputs, const Dims& y) {
         return conv_macs(input_dims(inputs, kFusedConvW), y);
       },
       .layer_info_type = "Convolution"},
      {.op_type = kFusedDepthwiseConv,  // float inputs and output
       .kind = "DepthwiseConv",
       .parse_attributes = parse_fused_depthwise_conv,
       .fused_info = fused_info_of<FusedDepthwiseConvAttributes>,
       .output_shape = [](const Node& node, const InputShapes& inputs) -> OptionalDims {
         auto attributes = attributes_of<FusedDepthwiseConvAttributes, parse_fused_depthwise_conv>(node);
         const OptionalDims x = input_dims(inputs, kFusedDepthwiseX);
         const OptionalDims expand_w = input_dims(inputs, kFusedDepthwiseExpandW);
         const OptionalDims w = input_dims(inputs, kFusedDepthwiseW);
         const OptionalDims project_w = input_dims(inputs, kFusedDepthwiseProjectW);
         if (attributes == nullptr || !x || x->size() != 4) return std::nullopt;
         // The expansion and projection are 1x1 stride-1 convs: they change the channels only.
         Dims e = *x;
         if (node.has_input(kFusedDepthwiseExpandW)) {
           if (!expand_w || expand_w->empty()) return std::nullopt;
           e[1] = (*expand_w)[0];
         }
         OptionalDims d = conv_output_dims(node, *attributes, e, w);
         if (!d || !node.has_input(kFusedDepthwiseProjectW)) return d;
         if (!project_w || project_w->empty()) return std::nullopt;
         (*d)[1] = (*project_w)[0];
         return d;
       },
       .more_output_shape = row_sums_output_dims,
       .macs = fused_depthwise_conv_macs,
       .layer_info_type = "Convolution"},
      {.op_type = kRowSumsGlobalAveragePool,  // float inputs and output
       .kind = "GlobalAveragePool",
       .parse_attributes = parse_info_only<RowSumsPoolAttributes>,
       .fused_info = fused_info_of<RowSumsPoolAttributes>,
       .output_shape = [](const Node&, const InputShapes& inputs) {
         return global_pool_output_dims(input_dims(inputs, kRowSumsPoolX));
       },
       .layer_info_type = "Pooling"},
      {.op_type = kQMatMul,
       .quantized_inputs = {{kMatMulA, kMatMulAZeroPoint},
                            {kMatMulB, kMatMulBZeroPoint},
                            {kMatMulResidual, kMatMulResidualZeroPoint}},
       .output_zero_point = kMatMulYZeroPoint,
       .kind = "MatMul",
       .parse_attributes = parse_info_only<QMatMulAttributes>,
       .fused_info = fused_info_of<QMatMulAttributes>,
       .output_shape = [](const Node&, const InputShapes& inputs) {
         return matmul_output_dims(input_dims(inputs, kMatMulA), input_dims(inputs, kMatMulB));
       },
       .macs = [](const Node&, const InputShapes& inputs, const Dims& y) {
         return matmul_macs(input_dims(inputs, kMatMulA), y);
       },
       .layer_info_type = "MatrixMultiply"},
      {.op_type = kFusedMatMul,  // float inputs and output
       .kind = "MatMul",
       .parse_attributes = parse_fused_matmul,
       .fused_info = fused_info_of<FusedMatMulAttributes>,
       .output_shape = [](const Node&, const InputShapes& inputs) {
         return matmul_output_dims(input_dims(inputs, kFusedMatMulA), input_dims(inputs, kFusedMatMulB));
       },
       .macs = [](const Node&, const InputShapes& inputs, const Dims& y) {
         return matmul_macs(input_dims(inputs, kFusedMatMulA), y);
       },
       .layer_info_type = "MatrixMultiply"},
      {.op_type = kQAdd,
       .quantized_inputs = {{kBinaryA, kBinaryAZeroPoint}, {kBinaryB, kBinaryBZeroPoint}},
       .output_zero_point = kBinaryYZeroPoint,
       .kind = "Add",
       .parse_attributes = parse_info_only<QBinaryAttributes>,
       .fused_info = fused_info_of<QBinaryAttributes>,
       .output_shape = broadcast_inputs<kBinaryA, kBinaryB>,
       .layer_info_type = "ElementWise"},
      {.op_type = kQMul,
       .quantized_inputs = {{kBinaryA, kBinaryAZeroPoint}, {kBinaryB, kBinaryBZeroPoint}},
       .output_zero_point = kBinaryYZeroPoint,
       .kind = "Mul",
       .parse_attributes = parse_info_only<QBinaryAttributes>,
       .fused_info = fused_info_of<QBinaryAttributes>,
       .output_shape = broadcast_inputs<kBinaryA, kBinaryB>,
       .layer_info_type = "ElementWise"},
      {.op_type = kQAveragePool,
       .quantized_inputs = {kUnaryActivation},
       .output_zero_point = kUnaryYZeroPoint,
       .kind = "AveragePool",
       .parse_attributes = parse_qaverage_pool,
       .fused_info = fused_info_of<QAveragePoolAttributes>,
       .output_shape = [](const Node& node, const InputShapes& inputs) -> OptionalDims {
         auto attributes = attributes_of<QAveragePoolAttributes, parse_qaverage_pool>(node);
         if (attributes == nullptr) return std::nullopt;
         return pool_output_dims(node, *attributes, input_dims(inputs, kUnaryX));
       },
       .layer_info_type = "Pooling"},
      {.op_type = kQGlobalAveragePool,
       .quantized_inputs = {kUnaryActivation},
       .output_zero_point = kUnaryYZeroPoint,
       .kind = "GlobalAveragePool",
       .parse_attributes = parse_info_only<QGlobalAveragePoolAttributes>,
       .fused_info = fused_info_of<QGlobalAveragePoolAttributes>,
       .output_shape = [](const Node&, const InputShapes& inputs) {
         return global_pool_output_dims(input_dims(inputs, kUnaryX));
       },
       .layer_info_type = "Pooling"},
      {.op_type = kQLookup,
       .quantized_inputs = {kUnaryActivation},
       .output_zero_point = kUnaryYZeroPoint,
       .kind = "Lookup",
       // The function the table holds ("Sigmoid", "SiLU", ...) says more than "Lookup".
       .refine_kind = [](const Node& node, const InputShapes&) -> std::string {
         const Attribute* function = node.find_attribute("function");
         return function != nullptr && function->kind == Attribute::Kind::kString ? function->s : "Lookup";
       },
       .parse_attributes = parse_qlookup,
       .fused_info = fused_info_of<QLookupAttributes>,
       .output_shape = same_as_input<kUnaryX>,
       .layer_info_type = "PointWise"},
      {.op_type = kQConcat,
       .repeated_triples_from = kConcatFirstX,
       .output_zero_point = kConcatYZeroPoint,
       .kind = "Concat",
       .parse_attributes = parse_qconcat,
       .fused_info = fused_info_of<QConcatAttributes>,
       .output_shape = [](const Node& node, const InputShapes& inputs) -> OptionalDims {
         auto attributes = attributes_of<QConcatAttributes, parse_qconcat>(node);
         if (attributes == nullptr || inputs.size() <= size_t{kConcatFirstX}) return std::nullopt;
         std::vector<OptionalDims> parts;
         for (size_t slot = kConcatFirstX; slot < inputs.size(); slot += 3) parts.push_back(inputs[slot]);
         return concat_output_dims(parts, attributes->axis);
       },
       .layer_info_type = "Concatenation"},
      {.op_type = kQRequantize,
       .quantized_inputs = {kUnaryActivation},
       .output_zero_point = kUnaryYZeroPoint,
       .kind = "Requantize",
       .parse_attributes = parse_info_only<QRequantizeAttributes>,
       .fused_info = fused_info_of<QRequantizeAttributes>,
       .output_shape = same_as_input<kUnaryX>,
       .layer_info_type = "Reformat"},
      {.op_type = kChannelGate,
       .output_zero_point = kGateYZeroPoint,  // float inputs
       .kind = "ChannelGate",
       .parse_attributes = parse_info_only<ChannelGateAttributes>,
       .fused_info = fused_info_of<ChannelGateAttributes>,
       .output_shape = broadcast_inputs<kGateX, kGateGate>,
       .layer_info_type = "ElementWise"},
      {.op_type = kAddQuantize,
       .output_zero_point = kAddQuantizeYZeroPoint,  // float inputs; output 1 the float sum
       .kind = "Add",
       .parse_attributes = parse_add_quantize,
       .fused_info = fused_info_of<AddQuantizeAttributes>,
       .output_shape = broadcast_inputs<kAddQuantizeA, kAddQuantizeB>,
       .more_output_shape = [](const Node&, const Dims& y, size_t) -> OptionalDims { return y; },
       .layer_info_type = "ElementWise"},
      {.op_type = kLayerNorm,
       .output_zero_point = kNormYZeroPoint,  // float inputs
       .kind = "LayerNorm",
       .parse_attributes = parse_layer_norm,
       .fused_info = fused_info_of<LayerNormAttributes>,
       .output_shape = same_as_input<kNormX>,
       .layer_info_type = "Normalization"},
      {.op_type = kFusedBatchNorm,  // float inputs and output
       .kind = "BatchNormalization",
       .parse_attributes = parse_fused_batchnorm,
       .fused_info = fused_info_of<FusedBatchNormAttributes>,
       .output_shape = fused_batchnorm_output_dims,
       .layer_info_type = "Scale"},
      {.op_type = kSoftmax,
       .output_zero_point = kSoftmaxYZeroPoint,  // float input
       .kind = "Softmax",
       .parse_attributes = parse_info_only<SoftmaxQuantizeAttributes>,
       .fused_info = fused_info_of<SoftmaxQuantizeAttributes>,
       .output_shape = same_as_input<kSoftmaxX>,
       .layer_info_type = "Softmax"},
  };
  return kFusedOps;
}

}  // namespace

std::span<const FusedOpRow> fused_op_table() { return fused_ops(); }

Result<std::shared_ptr<const OpAttributes>> parse_fused_layer_attributes(const Node& node) {
  const FusedOpRow* row = fused_op_row(node);
  if (row == nullptr) {
    return invalid_argument("{}: not a qdqrt fused layer (domain '{}')", node.describe(), node.domain);
  }
  return row->parse_attributes(node);
}

const FusedLayerInfo* fused_layer_info(const Node& node) {
  const FusedOpRow* row = fused_op_row(node);
  if (row == nullptr || node.typed_attributes == nullptr) return nullptr;
  return row->fused_info(*node.typed_attributes);
}

std::string layer_kind(const Node& node, const Graph* graph) {
  const FusedOpRow* row = fused_op_row(node);
  if (row == nullptr) return node.op_type;
  return fused_layer_kind(*row, node, graph != nullptr ? input_shapes_in(*graph, node) : InputShapes{});
}

void register_fused_ops(OpRegistry& registry) {
  for (const FusedOpRow& row : fused_ops()) {
    // qdqrt's own domain is at version 1.
    registry.add({.domain = layers::kDomain,
                  .op_type = row.op_type,
                  .min_opset = 1,
                  .max_opset = 1,
                  .parse_attributes = row.parse_attributes});
  }
}

}  // namespace qdqrt
