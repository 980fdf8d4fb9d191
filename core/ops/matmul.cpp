#include "core/ops/matmul.h"

#include <fmt/format.h>

#include "core/op_registry.h"
#include "core/ops/op_families.h"

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

}  // namespace

void register_matmul_ops(OpRegistry& registry) {
  registry.add({.domain = "", .op_type = "Gemm", .parse_attributes = parse_gemm});
  registry.add({.domain = "", .op_type = "MatMul"});
}

}  // namespace qdqrt
