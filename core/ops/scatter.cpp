#include "core/ops/scatter.h"

#include <memory>
#include <string>

#include "core/ops/shape_function_helpers.h"
#include "core/shape_inference.h"

namespace qdqrt {

namespace {

using ParseResult = Result<std::shared_ptr<const OpAttributes>>;

ParseResult parse_scatter_nd(const Node& node) {
  ScatterNDAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(std::string reduction, AttributeReader(node).get_string("reduction", "none"));
  struct Choice {
    const char* name;
    ScatterReduction value;
    int64_t since;
  };
  constexpr Choice kChoices[] = {{"none", ScatterReduction::kNone, 11}, {"add", ScatterReduction::kAdd, 16},
                                 {"mul", ScatterReduction::kMul, 16},   {"max", ScatterReduction::kMax, 18},
                                 {"min", ScatterReduction::kMin, 18}};
  for (const Choice& choice : kChoices) {
    if (reduction != choice.name) continue;
    if (node.opset > 0 && node.opset < choice.since) {  // 0: a node built in memory, opset not known
      return invalid_model("{}: attribute 'reduction' = '{}' needs opset {} (the model has {})", node.describe(),
                           reduction, choice.since, node.opset);
    }
    attributes.reduction = choice.value;
    return make_attributes(attributes);
  }
  return invalid_model("{}: attribute 'reduction' = '{}' is not one of none, add, mul, max, min", node.describe(),
                       reduction);
}

std::string dims_text(const Dims& dims) { return dims_to_string(dims); }

// The output is data's dims. Where ranks and dims are known: indices [..., k] with 1 <= k <=
// rank(data), and updates = indices[:-1] + data[k:].
Status infer_scatter_nd_shape(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims data, required_input_dims(context, 0));
  const OptionalDims& indices = context.input_dims(1);
  const OptionalDims& updates = context.input_dims(2);
  if (indices) {
    if (indices->empty()) return context.error("indices must have rank >= 1");
    const Dim& last = indices->back();
    if (last.is_static() && (last.value < 1 || last.value > static_cast<int64_t>(data.size()))) {
      return context.error("indices {} index {} dims of data {} (of rank {})", dims_text(*indices), last.value,
                           dims_text(data), data.size());
    }
    if (updates && last.is_static()) {
      Dims expected(indices->begin(), indices->end() - 1);
      expected.insert(expected.end(), data.begin() + last.value, data.end());
      bool fits = expected.size() == updates->size();
      for (size_t d = 0; fits && d < expected.size(); ++d) {
        fits = !expected[d].is_static() || !(*updates)[d].is_static() || expected[d].value == (*updates)[d].value;
      }
      if (!fits) {
        return context.error("updates {} do not match indices {} and data {} (expected {})", dims_text(*updates),
                             dims_text(*indices), dims_text(data), dims_text(expected));
      }
    }
  }
  context.set_output_dims(0, std::move(data));
  return Status::ok();
}

}  // namespace

const char* scatter_reduction_name(ScatterReduction reduction) {
  switch (reduction) {
    case ScatterReduction::kNone: return "none";
    case ScatterReduction::kAdd: return "add";
    case ScatterReduction::kMul: return "mul";
    case ScatterReduction::kMax: return "max";
    case ScatterReduction::kMin: return "min";
  }
  return "?";
}

void register_scatter_ops(OpRegistry& registry) {
  registry.add(OpSchema{kOnnxDomain, "ScatterND", 11, kMaxOnnxOpset, parse_scatter_nd, infer_scatter_nd_shape});
}

}  // namespace qdqrt
