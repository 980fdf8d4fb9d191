#include "core/ops/matmul.h"

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/einsum.h"
#include "core/ops/op_families.h"
#include "core/ops/shape_function_helpers.h"

namespace qdqrt {

namespace {

Result<bool> read_flag(const AttributeReader& reader, const std::string& key) {
  QDQRT_ASSIGN_OR_RETURN(int64_t value, reader.get_int(key, 0));
  if (value != 0 && value != 1) return reader.error(key, fmt::format("must be 0 or 1, got {}", value));
  return value == 1;
}

Result<std::shared_ptr<const OpAttributes>> parse_gemm(const Node& node) {
  AttributeReader reader(node);
  GemmAttributes attributes;
  QDQRT_ASSIGN_OR_RETURN(attributes.alpha, reader.get_float("alpha", 1.0f));
  QDQRT_ASSIGN_OR_RETURN(attributes.beta, reader.get_float("beta", 1.0f));
  QDQRT_ASSIGN_OR_RETURN(attributes.trans_a, read_flag(reader, "transA"));
  QDQRT_ASSIGN_OR_RETURN(attributes.trans_b, read_flag(reader, "transB"));
  return make_attributes(attributes);
}

// Gemm: A [M, K] (transA: [K, M]) times B [K, N] (transB: [N, K]) -> [M, N]; C broadcasts to it.
Status infer_gemm(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(auto attributes, shape_attributes<GemmAttributes>(context, parse_gemm));
  QDQRT_ASSIGN_OR_RETURN(Dims a, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims b, required_input_dims(context, 1));
  if (a.size() != 2 || b.size() != 2) {
    return context.error("A {} and B {} must both have rank 2", dims_to_string(a), dims_to_string(b));
  }
  const Dim& m = attributes->trans_a ? a[1] : a[0];
  const Dim& k_a = attributes->trans_a ? a[0] : a[1];
  const Dim& k_b = attributes->trans_b ? b[1] : b[0];
  const Dim& n = attributes->trans_b ? b[0] : b[1];
  if (k_a.is_static() && k_b.is_static() && k_a.value != k_b.value) {
    return context.error("A {} (transA={}) and B {} (transB={}) disagree on K: {} and {}", dims_to_string(a),
                         attributes->trans_a ? 1 : 0, dims_to_string(b), attributes->trans_b ? 1 : 0, k_a.value,
                         k_b.value);
  }
  Dims y = {m, n};
  if (const OptionalDims& c = context.input_dims(2)) {
    OptionalDims both = broadcast_dims(y, *c);
    bool fits = both && c->size() <= 2;
    for (size_t i = 0; fits && i < 2; ++i) {
      if (y[i].is_static() && (*both)[i].is_static() && y[i].value != (*both)[i].value) fits = false;
    }
    if (!fits) return context.error("C {} does not broadcast to [M, N] {}", dims_to_string(*c), dims_to_string(y));
  }
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

Status infer_matmul(ShapeInferenceContext& context) {
  QDQRT_ASSIGN_OR_RETURN(Dims a, required_input_dims(context, 0));
  QDQRT_ASSIGN_OR_RETURN(Dims b, required_input_dims(context, 1));
  QDQRT_ASSIGN_OR_RETURN(Dims y, matmul_output(context, a, b));
  context.set_output_dims(0, std::move(y));
  return Status::ok();
}

}  // namespace

void register_matmul_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "Gemm", .parse_attributes = parse_gemm, .infer_shape = infer_gemm});
  registry.add({.domain = "", .op_type = "MatMul", .infer_shape = infer_matmul});
  register_einsum_ops(registry);
}

}  // namespace qdqrt
