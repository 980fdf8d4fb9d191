#include "core/op_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/ops/op_families.h"

namespace qdqrt {

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_op_families(r);
    return r;
  }();
  return registry;
}

const OpSchema* OpRegistry::find(const std::string& domain, const std::string& op_type) const {
  for (const auto& schema : schemas_) {
    if (schema->op_type == op_type && schema->domain == domain) return schema.get();
  }
  return nullptr;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> result;
  for (const auto& schema : schemas_) result.push_back(schema.get());
  return result;
}

void OpRegistry::add(OpSchema schema) { schemas_.push_back(std::make_unique<OpSchema>(std::move(schema))); }

Status OpRegistry::set_shape_function(const std::string& domain, const std::string& op_type,
                                      ShapeFunction function) {
  for (auto& schema : schemas_) {
    if (schema->op_type == op_type && schema->domain == domain) {
      schema->infer_shape = function;
      return Status::ok();
    }
  }
  return internal_error("set_shape_function: no op '{}' in domain '{}'", op_type, domain);
}

Status AttributeReader::error(const std::string& key, const std::string& message) const {
  return invalid_model("{}: attribute '{}': {}", node_.describe(), key, message);
}

Result<const Attribute*> AttributeReader::find(const std::string& key, Attribute::Kind kind) const {
  const Attribute* attribute = node_.find_attribute(key);
  if (attribute == nullptr) return static_cast<const Attribute*>(nullptr);
  if (attribute->kind != kind) {
    return error(key, fmt::format("expected {}, got {}", attribute_kind_name(kind), attribute_kind_name(attribute->kind)));
  }
  return attribute;
}

Result<int64_t> AttributeReader::get_int(const std::string& key, int64_t default_value) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kInt));
  return attribute ? attribute->i : default_value;
}

Result<int64_t> AttributeReader::get_required_int(const std::string& key) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kInt));
  if (attribute == nullptr) return error(key, "required but missing");
  return attribute->i;
}

Result<float> AttributeReader::get_float(const std::string& key, float default_value) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kFloat));
  return attribute ? attribute->f : default_value;
}

Result<std::string> AttributeReader::get_string(const std::string& key, const std::string& default_value) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kString));
  return attribute ? attribute->s : default_value;
}

Result<std::vector<int64_t>> AttributeReader::get_ints(const std::string& key, std::vector<int64_t> default_value) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kInts));
  return attribute ? attribute->ints : default_value;
}

Result<std::vector<float>> AttributeReader::get_floats(const std::string& key, std::vector<float> default_value) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kFloats));
  return attribute ? attribute->floats : default_value;
}

Result<Tensor> AttributeReader::get_tensor(const std::string& key) const {
  QDQRT_ASSIGN_OR_RETURN(const Attribute* attribute, find(key, Attribute::Kind::kTensor));
  if (attribute == nullptr) return error(key, "required but missing");
  return attribute->t;
}

}  // namespace qdqrt
