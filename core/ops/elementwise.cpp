#include "core/ops/elementwise.h"

#include "core/op_registry.h"
#include "core/ops/op_families.h"

namespace qdqrt {

namespace {

using ParseResult = Result<std::shared_ptr<const OpAttributes>>;

ParseResult parse_leaky_relu(const Node& node) {
  LeakyReluAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, AttributeReader(node).get_float("alpha", 0.01f));
  return make_attributes(attributes);
}

ParseResult parse_elu(const Node& node) {
  EluAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, AttributeReader(node).get_float("alpha", 1.0f));
  return make_attributes(attributes);
}

ParseResult parse_celu(const Node& node) {
  CeluAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, AttributeReader(node).get_float("alpha", 1.0f));
  if (attributes.alpha == 0.0f) return AttributeReader(node).error("alpha", "must not be 0");
  return make_attributes(attributes);
}

ParseResult parse_selu(const Node& node) {
  AttributeReader reader(node);
  SeluAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, reader.get_float("alpha", attributes.alpha));
  QDQRT_ASSIGN_OR_RETURN(attributes.gamma, reader.get_float("gamma", attributes.gamma));
  return make_attributes(attributes);
}

ParseResult parse_thresholded_relu(const Node& node) {
  ThresholdedReluAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, AttributeReader(node).get_float("alpha", 1.0f));
  return make_attributes(attributes);
}

ParseResult parse_hard_sigmoid(const Node& node) {
  AttributeReader reader(node);
  HardSigmoidAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, reader.get_float("alpha", 0.2f));
  QDQRT_ASSIGN_OR_RETURN(attributes.beta, reader.get_float("beta", 0.5f));
  return make_attributes(attributes);
}

ParseResult parse_shrink(const Node& node) {
  AttributeReader reader(node);
  ShrinkAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.bias, reader.get_float("bias", 0.0f));
  QDQRT_ASSIGN_OR_RETURN(attributes.lambd, reader.get_float("lambd", 0.5f));
  return make_attributes(attributes);
}

ParseResult parse_gelu(const Node& node) {
  AttributeReader reader(node);
  // Read through the Result (not ASSIGN_OR_RETURN) to dodge a GCC 12 -Wmaybe-uninitialized false positive.
  Result<std::string> read = reader.get_string("approximate", "none");
  if (!read.ok()) return read.status();
  const std::string& approximate = read.value();
  if (approximate != "none" && approximate != "tanh") {
    return reader.error("approximate", "must be 'none' or 'tanh', got '" + approximate + "'");
  }
  GeluAttributes attributes;
  attributes.tanh_approximation = approximate == "tanh";
  return make_attributes(attributes);
}

ParseResult parse_clip(const Node& node) {
  ClipAttributes attributes;
  if (node.opset < 11) {
    AttributeReader reader(node);
    attributes.bounds_from_inputs = false;
    QDQRT_ASSIGN_OR_RETURN(attributes.min, reader.get_float("min", attributes.min));
    QDQRT_ASSIGN_OR_RETURN(attributes.max, reader.get_float("max", attributes.max));
  }
  return make_attributes(attributes);
}

ParseResult parse_mod(const Node& node) {
  AttributeReader reader(node);
  QDQRT_ASSIGN_OR_RETURN(int64_t fmod, reader.get_int("fmod", 0));
  if (fmod != 0 && fmod != 1) return reader.error("fmod", "must be 0 or 1, got " + std::to_string(fmod));
  ModAttributes attributes;
  attributes.fmod = fmod == 1;
  return make_attributes(attributes);
}

ParseResult parse_is_inf(const Node& node) {
  AttributeReader reader(node);
  IsInfAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(int64_t negative, reader.get_int("detect_negative", 1));
  QDQRT_ASSIGN_OR_RETURN(int64_t positive, reader.get_int("detect_positive", 1));
  attributes.detect_negative = negative != 0;
  attributes.detect_positive = positive != 0;
  return make_attributes(attributes);
}

ParseResult parse_softmax(const Node& node) {
  SoftmaxAttributes attributes;
  attributes.coerce_to_2d = node.opset < 13;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, AttributeReader(node).get_int("axis", attributes.coerce_to_2d ? 1 : -1));
  return make_attributes(attributes);
}

void add(OpRegistry& registry, const char* op_type, AttributeParser parser = nullptr, int64_t min_opset = kMinOnnxOpset) {
  registry.add(OpSchema{kOnnxDomain, op_type, min_opset, kMaxOnnxOpset, parser});
}

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
  // Ops without attributes.
  for (const char* op_type :
       {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Sqrt", "Exp", "Log", "Erf", "Neg", "Abs", "Reciprocal", "Relu",
        "Sigmoid", "Tanh", "Floor", "Ceil", "Sign", "Softplus", "Softsign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
        "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "Not", "And", "Or", "Xor", "Equal", "Greater", "Less",
        "Where", "Min", "Max", "Sum", "Mean"}) {
    add(registry, op_type);
  }
  add(registry, "Round", nullptr, 11);
  add(registry, "GreaterOrEqual", nullptr, 12);
  add(registry, "LessOrEqual", nullptr, 12);
  add(registry, "HardSwish", nullptr, 14);
  add(registry, "Mish", nullptr, 18);

  add(registry, "LeakyRelu", parse_leaky_relu);
  add(registry, "Elu", parse_elu);
  add(registry, "Celu", parse_celu, 12);
  add(registry, "Selu", parse_selu);
  add(registry, "ThresholdedRelu", parse_thresholded_relu);
  add(registry, "HardSigmoid", parse_hard_sigmoid);
  add(registry, "Shrink", parse_shrink);
  add(registry, "Gelu", parse_gelu, 20);
  add(registry, "Clip", parse_clip);
  add(registry, "Mod", parse_mod);
  add(registry, "IsInf", parse_is_inf);
  add(registry, "Softmax", parse_softmax);
  add(registry, "LogSoftmax", parse_softmax);
  add(registry, "Hardmax", parse_softmax);
}

}  // namespace qdqrt
