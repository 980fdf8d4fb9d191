#include "core/graph.h"

#include <fmt/format.h>

namespace qdqrt {

const char* attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kStrings: return "strings";
  }
  return "unknown";
}

std::optional<Shape> ValueInfo::static_shape() const {
  if (!shape) return std::nullopt;
  Shape result;
  for (const Dim& dim : *shape) {
    if (!dim.is_static()) return std::nullopt;
    result.push_back(dim.value);
  }
  return result;
}

std::string dims_to_string(const std::vector<Dim>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    if (dims[i].is_static()) text += std::to_string(dims[i].value);
    else if (!dims[i].symbol.empty()) text += dims[i].symbol;
    else text += dims[i].expr.to_string();  // "?" when unknown
  }
  return text + "]";
}

}  // namespace qdqrt
