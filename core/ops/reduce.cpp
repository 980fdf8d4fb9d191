#include "core/ops/reduce.h"

#include <algorithm>
#include <string>

#include "core/op_registry.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

namespace {

using ParseResult = Result<std::shared_ptr<const OpAttributes>>;

ParseResult parse_reduce(const Node& node) {
  AttributeReader reader(node);
  ReduceAttributes attributes;
  const int64_t axes_input_opset = node.op_type == "ReduceSum" ? 13 : 18;
  attributes.axes_from_input = node.opset >= axes_input_opset;
  if (attributes.axes_from_input) {
    if (reader.has("axes")) {
      return reader.error("axes", "is input 1 from opset " + std::to_string(axes_input_opset) + ", not an attribute");
    }
  } else {
    QDQRT_ASSIGN_OR_RETURN(attributes.axes, reader.get_ints("axes"));
  }
  QDQRT_ASSIGN_OR_RETURN(int64_t keepdims, reader.get_int("keepdims", 1));
  QDQRT_ASSIGN_OR_RETURN(int64_t noop, reader.get_int("noop_with_empty_axes", 0));
  attributes.keepdims = keepdims != 0;
  attributes.noop_with_empty_axes = noop != 0;
  return make_attributes(attributes);
}

ParseResult parse_arg_min_max(const Node& node) {
  AttributeReader reader(node);
  ArgMinMaxAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.axis, reader.get_int("axis", 0));
  QDQRT_ASSIGN_OR_RETURN(int64_t keepdims, reader.get_int("keepdims", 1));
  QDQRT_ASSIGN_OR_RETURN(int64_t select_last_index, reader.get_int("select_last_index", 0));
  attributes.keepdims = keepdims != 0;
  attributes.select_last_index = select_last_index != 0;
  return make_attributes(attributes);
}

ParseResult parse_cum_sum(const Node& node) {
  AttributeReader reader(node);
  CumSumAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(int64_t exclusive, reader.get_int("exclusive", 0));
  QDQRT_ASSIGN_OR_RETURN(int64_t reverse, reader.get_int("reverse", 0));
  attributes.exclusive = exclusive != 0;
  attributes.reverse = reverse != 0;
  return make_attributes(attributes);
}

// Reduce*: the reduced axes become 1 (keepdims) or go; no axes reduce every axis, or none with
// noop_with_empty_axes. The axes are the attribute, or input 1 from opset 13 (ReduceSum) / 18.
Status infer_reduce(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ReduceAttributes>(context, parse_reduce));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  std::vector<int64_t> axes = attributes->axes;
  if (attributes->axes_from_input && context.has_input(1)) {
    std::optional<std::vector<int64_t>> values = context.input_ints(1);
    if (!values) return context.error("its axes (input 1, '{}') are not a known constant", context.node().input(1));
    axes = std::move(*values);
  }
  if (axes.empty() && attributes->noop_with_empty_axes) {
    context.set_output_dims(0, std::move(x));
    return Status::ok();
  }
  std::vector<bool> reduced(x.size(), axes.empty());
  for (int64_t axis : axes) {
    QDQRT_ASSIGN_OR_RETURN(size_t resolved, resolve_axis(context, axis, x.size(), "axes value"));
    reduced[resolved] = true;
  }
  Dims y;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i]) {
      y.push_back(x[i]);
    } else if (attributes->keepdims) {
      y.push_back(static_dim(1));
    }
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

// ArgMax, ArgMin: the axis becomes 1 (keepdims) or goes.
Status infer_arg_min_max(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<ArgMinMaxAttributes>(context, parse_arg_min_max));
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(size_t axis, resolve_axis(context, attributes->axis, x.size(), "attribute 'axis'"));
  if (attributes->keepdims) {
    x[axis] = static_dim(1);
  } else {
    x.erase(x.begin() + static_cast<std::ptrdiff_t>(axis));
  }
  context.set_output_dims(0, std::move(x));
  return Status::ok();
}

// CumSum: x's dims; the axis (input 1, one element) must be one of x's when known.
Status infer_cum_sum(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims x, required_input_dims(context, 0));
  if (std::optional<std::vector<int64_t>> axis = context.input_ints(1)) {
    if (axis->size() != 1) return context.error("axis (input 1) has {} elements, expected 1", axis->size());
    QDQRT_RETURN_IF_ERROR(resolve_axis(context, (*axis)[0], x.size(), "axis (input 1)").status());
  }
  context.set_output_dims(0, std::move(x));
  return Status::ok();
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  for (const char* op_type : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2",
                              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    registry.add(OpSchema{kOnnxDomain, op_type, kMinOnnxOpset, kMaxOnnxOpset, parse_reduce, infer_reduce});
  }
  for (const char* op_type : {"ArgMax", "ArgMin"}) {
    registry.add(OpSchema{kOnnxDomain, op_type, kMinOnnxOpset, kMaxOnnxOpset, parse_arg_min_max, infer_arg_min_max});
  }
  registry.add(OpSchema{kOnnxDomain, "CumSum", 11, kMaxOnnxOpset, parse_cum_sum, infer_cum_sum});
}

}  // namespace qdqrt
