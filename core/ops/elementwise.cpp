#include "core/ops/elementwise.h"

#include <functional>
#include <optional>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

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

// --- Shape functions ---------------------------------------------------------------------------
//
// Elementwise ops keep their input's dims (unary) or broadcast their inputs' (numpy rules). On
// small integer tensors inference follows (shapes being computed), the integer arithmetic also
// computes the output's elements, as expressions of the dims they came from.

// An element's value: a constant's, or the value at the shapes being built (dims are >= 0).
std::optional<int64_t> element_value(const Dim& element) {
  if (std::optional<int64_t> constant = element.expr.constant_value()) return constant;
  if (element.value >= 0) return element.value;
  return std::nullopt;
}

// An element from its expression and its value (nullopt: the operation has none there).
std::optional<Dim> make_element(DimExpr expr, std::optional<int64_t> value) {
  if (!expr.known()) return std::nullopt;
  Dim element;
  if (std::optional<int64_t> constant = expr.constant_value()) value = constant;
  if (value && (*value >= 0 || expr.is_constant())) element.value = *value;
  element.expr = std::move(expr);
  return element;
}

// The integer result of a binary op on two known values, via the expression's constant folding.
std::optional<int64_t> fold(const std::function<DimExpr(const DimExpr&, const DimExpr&)>& op, std::optional<int64_t> a,
                            std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return op(DimExpr::constant(*a), DimExpr::constant(*b)).constant_value();
}

using ElementOp = std::function<std::optional<Dim>(const std::vector<const Dim*>& operands)>;

// The output's elements from the inputs' (each has all of the output's elements, or one that
// broadcasts); unset when an input's elements are not followed or `op` has no result.
void set_elements(ShapeInferenceContext& context, const Dims& output, const std::vector<size_t>& inputs,
                  const ElementOp& op) {
  int64_t count = 1;
  for (const Dim& dim : output) {
    if (!dim.is_static() || dim.value > kMaxFollowedElements) return;
    count *= dim.value;
    if (count > kMaxFollowedElements) return;
  }
  std::vector<const Dims*> operands;
  for (size_t i : inputs) {
    const OptionalDims& elements = context.input_elements(i);
    if (!elements) return;
    const int64_t size = static_cast<int64_t>(elements->size());
    if (size != count && size != 1) return;
    operands.push_back(&*elements);
  }
  Dims result;
  for (int64_t j = 0; j < count; ++j) {
    std::vector<const Dim*> at;
    for (const Dims* elements : operands) {
      at.push_back(&(*elements)[elements->size() == 1 ? 0 : static_cast<size_t>(j)]);
    }
    std::optional<Dim> element = op(at);
    if (!element) return;
    result.push_back(std::move(*element));
  }
  context.set_output_elements(0, std::move(result));
}

// Folds the operands left to right with `op`, on the expressions and on the values.
ElementOp fold_elements(std::function<DimExpr(const DimExpr&, const DimExpr&)> op) {
  return [op](const std::vector<const Dim*>& operands) -> std::optional<Dim> {
    DimExpr expr = operands[0]->expr;
    std::optional<int64_t> value = element_value(*operands[0]);
    for (size_t i = 1; i < operands.size(); ++i) {
      expr = op(expr, operands[i]->expr);
      value = fold(op, value, element_value(*operands[i]));
    }
    return make_element(std::move(expr), value);
  };
}

// Input i holds integers: its type says so, or it is not known (only integer tensors have
// elements to follow, which set_elements needs of every operand).
bool holds_integers(const ShapeInferenceContext& context, size_t i) {
  const DataType dtype = context.input_dtype(i);
  return dtype == DataType::kUndefined || is_integer_element_type(dtype);
}

// An element that counts something at every size: a constant >= 0, or an expression of the
// dynamic dims that is >= 0 with every dim at 1 and at 2^20 (as sums, products and quotients of
// dims are; -1*N is not).
bool nonnegative(const Dim& element) {
  if (std::optional<int64_t> constant = element.expr.constant_value()) return *constant >= 0;
  if (!element.expr.known()) return false;
  for (int64_t size : {int64_t{1}, int64_t{1} << 20}) {
    SymbolValues values;
    for (const std::string& symbol : element.expr.symbols()) values[symbol] = size;
    std::optional<int64_t> value = element.expr.evaluate(values);
    if (!value || *value < 0) return false;
  }
  return true;
}

// ONNX's integer Div truncates toward zero; floor division is the same where the dividend is
// not negative and the divisor positive, which an expression can only promise for a constant
// divisor and a dividend that counts something.
std::optional<Dim> divide_elements(const std::vector<const Dim*>& operands) {
  const Dim& a = *operands[0];
  const Dim& b = *operands[1];
  std::optional<int64_t> ca = a.expr.constant_value(), cb = b.expr.constant_value();
  if (ca && cb) {
    if (*cb == 0 || (*ca == INT64_MIN && *cb == -1)) return std::nullopt;
    return make_element(DimExpr::constant(*ca / *cb), std::nullopt);
  }
  if (!cb || *cb <= 0 || !nonnegative(a)) return std::nullopt;
  return make_element(floor_div(a.expr, b.expr), a.value >= 0 ? std::optional<int64_t>(a.value / *cb) : std::nullopt);
}

// Mod: fmod 0 takes the divisor's sign (floor modulo, the expressions' mod); fmod 1 the
// dividend's (C's %), which equals it for a dim and a positive constant divisor.
std::optional<Dim> modulo_elements(bool fmod, const std::vector<const Dim*>& operands) {
  const Dim& a = *operands[0];
  const Dim& b = *operands[1];
  std::optional<int64_t> ca = a.expr.constant_value(), cb = b.expr.constant_value();
  if (ca && cb) {
    if (*cb == 0 || (*ca == INT64_MIN && *cb == -1)) return std::nullopt;
    if (fmod) return make_element(DimExpr::constant(*ca % *cb), std::nullopt);
    return make_element(mod(DimExpr::constant(*ca), DimExpr::constant(*cb)), std::nullopt);
  }
  if (fmod && (!cb || *cb <= 0 || !nonnegative(a))) return std::nullopt;
  return make_element(mod(a.expr, b.expr), fold([](const DimExpr& x, const DimExpr& y) { return mod(x, y); },
                                                element_value(a), element_value(b)));
}

// Equal: 1 where the elements are the same expression, 0 where two constants differ or a count
// meets a negative constant (torch's exports compare a shape with -1 before an Expand).
std::optional<Dim> equal_elements(const std::vector<const Dim*>& operands) {
  const Dim& a = *operands[0];
  const Dim& b = *operands[1];
  if (a.expr.known() && a.expr.same_as(b.expr)) return make_element(DimExpr::constant(1), std::nullopt);
  std::optional<int64_t> ca = a.expr.constant_value(), cb = b.expr.constant_value();
  if (ca && cb) return make_element(DimExpr::constant(*ca == *cb ? 1 : 0), std::nullopt);
  if ((ca && *ca < 0 && nonnegative(b)) || (cb && *cb < 0 && nonnegative(a))) {
    return make_element(DimExpr::constant(0), std::nullopt);
  }
  return std::nullopt;
}

Status infer_unary(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, x);
  return Status::ok();
}

Status infer_neg(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  context.set_output_dims(0, x);
  if (holds_integers(context, 0)) {
    set_elements(context, x, {0}, [](const std::vector<const Dim*>& operands) {
      auto negate = [](const DimExpr& a, const DimExpr& b) { return a * b; };
      return make_element(DimExpr::constant(-1) * operands[0]->expr, fold(negate, -1, element_value(*operands[0])));
    });
  }
  return Status::ok();
}

// Every input broadcast together (the binary ops, Where, and the variadic Sum/Min/Max/Mean).
Status infer_broadcast(ShapeInferenceContext& context) {
  const std::string& op = context.node().op_type;
  const bool variadic = op == "Sum" || op == "Min" || op == "Max" || op == "Mean";
  const size_t expected = op == "Where" ? 3 : 2;
  if (variadic ? context.input_count() == 0 : context.input_count() != expected) {
    return context.error("has {} inputs, expected {}", context.input_count(),
                         variadic ? std::string("at least 1") : std::to_string(expected));
  }
  std::vector<size_t> inputs;
  for (size_t i = 0; i < context.input_count(); ++i) {
    if (!context.has_input(i)) return context.error("input {} is absent", i);
    inputs.push_back(i);
  }
  QDQRT_ASSIGN_OR_RETURN(Dims y, broadcast_inputs(context, inputs));
  context.set_output_dims(0, y);
  if (!holds_integers(context, 0) && op != "Where") return Status::ok();
  if (op == "Add" || op == "Sum") {
    set_elements(context, y, inputs, fold_elements([](const DimExpr& a, const DimExpr& b) { return a + b; }));
  } else if (op == "Sub") {
    set_elements(context, y, inputs, fold_elements([](const DimExpr& a, const DimExpr& b) { return a - b; }));
  } else if (op == "Mul") {
    set_elements(context, y, inputs, fold_elements([](const DimExpr& a, const DimExpr& b) { return a * b; }));
  } else if (op == "Max") {
    set_elements(context, y, inputs, fold_elements([](const DimExpr& a, const DimExpr& b) { return max(a, b); }));
  } else if (op == "Min") {
    set_elements(context, y, inputs, fold_elements([](const DimExpr& a, const DimExpr& b) { return min(a, b); }));
  } else if (op == "Div") {
    set_elements(context, y, inputs, divide_elements);
  } else if (op == "Mod") {
    QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ModAttributes>(context, parse_mod));
    const bool fmod = attributes->fmod;
    set_elements(context, y, inputs,
                 [fmod](const std::vector<const Dim*>& operands) { return modulo_elements(fmod, operands); });
  } else if (op == "Equal") {
    set_elements(context, y, inputs, equal_elements);
  } else if (op == "Where" && holds_integers(context, 1)) {
    set_elements(context, y, inputs, [](const std::vector<const Dim*>& operands) -> std::optional<Dim> {
      std::optional<int64_t> condition = operands[0]->expr.constant_value();
      if (!condition) return std::nullopt;
      return *operands[*condition != 0 ? 1 : 2];
    });
  }
  return Status::ok();
}

// PRelu: the slope broadcasts to X (one way); Y has X's dims.
Status infer_prelu(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims slope, required_input_dims(context, 1));
  OptionalDims both = broadcast_dims(x, slope);
  bool fits = both && slope.size() <= x.size();
  for (size_t i = 0; fits && i < x.size(); ++i) {
    if (x[i].is_static() && (*both)[i].is_static() && x[i].value != (*both)[i].value) fits = false;
  }
  if (!fits) return context.error("slope {} does not broadcast to X {}", dims_to_string(slope), dims_to_string(x));
  context.set_output_dims(0, x);
  return Status::ok();
}

// Softmax, LogSoftmax, Hardmax: X's dims; the axis must be one of X's.
Status infer_softmax(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<SoftmaxAttributes>(context, parse_softmax));
  QDQRT_RETURN_IF_ERROR(resolve_axis(context, attributes->axis, x.size(), "attribute 'axis'").status());
  context.set_output_dims(0, x);
  return Status::ok();
}

void add(OpRegistry& registry, const char* op_type, AttributeParser parser = nullptr, int64_t min_opset = kMinOnnxOpset,
         ShapeFunction shape = infer_unary) {
  registry.add(OpSchema{kOnnxDomain, op_type, min_opset, kMaxOnnxOpset, parser, shape});
}

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
  // Ops without attributes: unary ones keep X's dims, the others broadcast their inputs.
  for (const char* op_type :
       {"Sqrt", "Exp", "Log", "Erf", "Abs", "Reciprocal", "Relu", "Sigmoid", "Tanh", "Floor", "Ceil", "Sign",
        "Softplus", "Softsign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "IsNaN", "Not"}) {
    add(registry, op_type);
  }
  for (const char* op_type : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less",
                              "Where", "Min", "Max", "Sum", "Mean"}) {
    add(registry, op_type, nullptr, kMinOnnxOpset, infer_broadcast);
  }
  add(registry, "Neg", nullptr, kMinOnnxOpset, infer_neg);
  add(registry, "PRelu", nullptr, kMinOnnxOpset, infer_prelu);
  add(registry, "Round", nullptr, 11);
  add(registry, "GreaterOrEqual", nullptr, 12, infer_broadcast);
  add(registry, "LessOrEqual", nullptr, 12, infer_broadcast);
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
  add(registry, "Mod", parse_mod, kMinOnnxOpset, infer_broadcast);
  add(registry, "IsInf", parse_is_inf);
  add(registry, "Softmax", parse_softmax, kMinOnnxOpset, infer_softmax);
  add(registry, "LogSoftmax", parse_softmax, kMinOnnxOpset, infer_softmax);
  add(registry, "Hardmax", parse_softmax, kMinOnnxOpset, infer_softmax);
}

}  // namespace qdqrt
