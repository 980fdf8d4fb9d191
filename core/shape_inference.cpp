#include "core/shape_inference.h"

#include <algorithm>

#include "core/op_registry.h"
#include "core/ops/fused_op_table.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

Dim static_dim(int64_t value) { return Dim{.value = value, .symbol = {}, .expr = DimExpr::constant(value)}; }

Dim symbolic_dim(const std::string& symbol, int64_t value) {
  return Dim{.value = value, .symbol = symbol, .expr = DimExpr::symbol(symbol)};
}

Dims static_dims(const Shape& shape) {
  Dims dims;
  dims.reserve(shape.size());
  for (int64_t value : shape) dims.push_back(static_dim(value));
  return dims;
}

namespace {

// The value is the expression evaluated on the values; a result below 0 is not a dim.
template <typename ExprOp>
Dim combine(const Dim& a, const Dim& b, ExprOp op) {
  Dim result;
  if (a.is_static() && b.is_static()) {
    std::optional<int64_t> value = op(DimExpr::constant(a.value), DimExpr::constant(b.value)).constant_value();
    if (!value || *value < 0) return result;
    result.value = *value;
  }
  result.expr = op(a.expr, b.expr);
  return result;
}

}  // namespace

Dim operator+(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return x + y; });
}
Dim operator-(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return x - y; });
}
Dim operator*(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return x * y; });
}
Dim floor_div(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return floor_div(x, y); });
}
Dim ceil_div(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return ceil_div(x, y); });
}
Dim mod(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return mod(x, y); });
}
Dim max(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return max(x, y); });
}
Dim min(const Dim& a, const Dim& b) {
  return combine(a, b, [](const DimExpr& x, const DimExpr& y) { return min(x, y); });
}

bool same_dim(const Dim& a, const Dim& b) {
  if (a.expr.known() && b.expr.known()) return a.expr.same_as(b.expr);
  if (a.is_static() && b.is_static()) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

Dim dims_product(const Dims& dims, size_t first, size_t last) {
  Dim product = static_dim(1);
  for (size_t i = first; i < std::min(last, dims.size()); ++i) product = product * dims[i];
  return product;
}

const OptionalDims& ShapeInferenceContext::input_dims(size_t i) const {
  static const OptionalDims none;
  return i < inputs_.size() && node_.has_input(i) ? inputs_[i].dims : none;
}

const OptionalDims& ShapeInferenceContext::input_elements(size_t i) const {
  static const OptionalDims none;
  return i < inputs_.size() && node_.has_input(i) ? inputs_[i].elements : none;
}

std::optional<std::vector<int64_t>> ShapeInferenceContext::input_ints(size_t i) const {
  const OptionalDims& elements = input_elements(i);
  if (!elements) return std::nullopt;
  std::vector<int64_t> values;
  values.reserve(elements->size());
  for (const Dim& element : *elements) {
    std::optional<int64_t> value = element.expr.constant_value();
    if (!value) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

void ShapeInferenceContext::set_output_dims(size_t i, Dims dims) {
  if (i < outputs_.size()) outputs_[i] = std::move(dims);
}

void ShapeInferenceContext::set_output_elements(size_t i, Dims elements) {
  if (i < output_elements_.size()) output_elements_[i] = std::move(elements);
}

Status infer_same_as_input(ShapeInferenceContext& context) {
  const OptionalDims& x = context.input_dims(0);
  if (!x) return context.error("the rank of input 0 is not known");
  for (size_t i = 0; i < context.node().outputs.size(); ++i) context.set_output_dims(i, *x);
  return Status::ok();
}

namespace {

// A small integer constant's elements as static dims.
OptionalDims constant_elements(const Tensor& tensor) {
  const bool integer = is_integer_element_type(tensor.dtype()) || tensor.dtype() == DataType::kBool;
  if (!integer || tensor.numel() > kMaxFollowedElements) return std::nullopt;
  Dims elements;
  for (int64_t i = 0; i < tensor.numel(); ++i) elements.push_back(static_dim(tensor.value_as_int64(i)));
  return elements;
}

// An input dim without an expression gets its symbol's, or its value's.
void give_expressions(std::vector<Dim>& dims) {
  for (Dim& dim : dims) {
    if (dim.expr.known()) continue;
    if (!dim.symbol.empty()) {
      dim.expr = DimExpr::symbol(dim.symbol);
    } else if (dim.is_static()) {
      dim.expr = DimExpr::constant(dim.value);
    }
  }
}

void forget_expressions(std::optional<std::vector<Dim>>& dims) {
  if (!dims) return;
  for (Dim& dim : *dims) dim.expr = DimExpr();
}

std::string describe_dims(const Dims& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    text += dims[i].is_static() ? std::to_string(dims[i].value) : dims[i].expr.to_string();
  }
  return text + "]";
}

}  // namespace

NodeShapes infer_node_shapes(const Graph& graph, const Node& node) {
  std::vector<ShapeInferenceContext::Input> inputs(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    if (name.empty()) continue;
    ShapeInferenceContext::Input& input = inputs[i];
    const ValueInfo* info = graph.find_value(name);
    if (const Tensor* constant = graph.find_initializer(name)) {
      input.constant = constant;
      input.dtype = constant->dtype();
      input.dims = static_dims(constant->shape());
      // A constant folded from runtime shapes reads as the expressions it was computed from.
      input.elements = info && info->elements ? info->elements : constant_elements(*constant);
      continue;
    }
    if (info == nullptr) continue;
    input.dtype = info->dtype;
    input.dims = info->shape;
    input.elements = info->elements;
  }
  ShapeInferenceContext context(node, std::move(inputs));
  NodeShapes result;
  if (const FusedOpRow* row = fused_op_row(node)) {
    InputShapes shapes;
    for (size_t i = 0; i < node.inputs.size(); ++i) shapes.push_back(context.input_dims(i));
    OptionalDims dims = row->output_shape ? row->output_shape(node, shapes) : std::nullopt;
    if (dims) {
      for (size_t i = 1; i < node.outputs.size() && row->more_output_shape; ++i) {
        if (OptionalDims more = row->more_output_shape(node, *dims, i)) context.set_output_dims(i, std::move(*more));
      }
      context.set_output_dims(0, *dims);
    } else {
      result.status = context.error("its output shape does not follow from its input shapes");
    }
  } else if (const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);
             schema && schema->infer_shape) {
    try {
      result.status = schema->infer_shape(context);
    } catch (const std::exception& error) {
      result.status = context.error("shape inference failed: {}", error.what());
    }
  } else {
    result.status = context.error("qdqrt has no shape function for it");
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    result.dims.push_back(context.output_dims(i));
    result.elements.push_back(context.output_elements(i));
  }
  return result;
}

Status infer_shapes(Graph& graph, ShapeInferenceReport* report) {
  auto unfollowed = [&](const std::string& value, const std::string& why) {
    if (report) report->unfollowed[value] = why;
  };
  for (const std::string& input : graph.inputs) {
    auto it = graph.values.find(input);
    if (it == graph.values.end() || !it->second.shape) continue;
    give_expressions(*it->second.shape);
  }
  for (const Node& node : graph.nodes) {
    NodeShapes derived_shapes = infer_node_shapes(graph, node);
    const Status& status = derived_shapes.status;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& output = node.outputs[i];
      if (output.empty() || graph.find_initializer(output) != nullptr) continue;
      ValueInfo& info = graph.values[output];
      info.name = output;
      const OptionalDims& derived = derived_shapes.dims[i];
      if (!status.is_ok() || !derived) {
        forget_expressions(info.shape);
        info.elements.reset();
        unfollowed(output, status.is_ok() ? fmt::format("{}: output {} is not derived", node.describe(), i)
                                         : status.message());
        continue;
      }
      Dims dims = *derived;
      if (info.shape) {
        bool agrees = info.shape->size() == dims.size();
        for (size_t axis = 0; agrees && axis < dims.size(); ++axis) {
          const Dim& known = (*info.shape)[axis];
          if (known.is_static() && dims[axis].is_static() && known.value != dims[axis].value) agrees = false;
          if (known.is_static() && !dims[axis].is_static()) dims[axis].value = known.value;
          if (dims[axis].symbol.empty()) dims[axis].symbol = known.symbol;
        }
        if (!agrees) {
          unfollowed(output, fmt::format("{}: output '{}' is {} by qdqrt's shape function but {} in the model",
                                         node.describe(), output, describe_dims(dims), dims_to_string(*info.shape)));
          forget_expressions(info.shape);
          info.elements.reset();
          continue;
        }
      }
      info.shape = std::move(dims);
      info.elements = derived_shapes.elements[i];
    }
  }
  return Status::ok();
}

}  // namespace qdqrt
