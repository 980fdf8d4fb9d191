#include "core/ops/reduce.h"

#include <string>

#include "core/op_registry.h"
#include "core/ops/op_families.h"

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

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  for (const char* op_type : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2",
                              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    registry.add(OpSchema{kOnnxDomain, op_type, kMinOnnxOpset, kMaxOnnxOpset, parse_reduce});
  }
  for (const char* op_type : {"ArgMax", "ArgMin"}) {
    registry.add(OpSchema{kOnnxDomain, op_type, kMinOnnxOpset, kMaxOnnxOpset, parse_arg_min_max});
  }
  registry.add(OpSchema{kOnnxDomain, "CumSum", 11, kMaxOnnxOpset, parse_cum_sum});
}

}  // namespace qdqrt
