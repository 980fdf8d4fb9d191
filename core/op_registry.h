// The ops qdqrt accepts: per (domain, op_type) the opset range and the parser that turns the
// node's raw attributes into its typed attribute struct. One register_*_ops() per op family,
// all listed in core/ops/op_families.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt {

inline constexpr int64_t kMinOnnxOpset = 10;
inline constexpr int64_t kMaxOnnxOpset = 21;

using AttributeParser = Result<std::shared_ptr<const OpAttributes>> (*)(const Node& node);
class ShapeInferenceContext;  // core/shape_inference.h
using ShapeFunction = Status (*)(ShapeInferenceContext& context);

struct OpSchema {
  std::string domain;   // "" for ai.onnx
  std::string op_type;
  int64_t min_opset = kMinOnnxOpset;  // the domain opsets qdqrt accepts for this op
  int64_t max_opset = kMaxOnnxOpset;
  AttributeParser parse_attributes = nullptr;  // nullptr: the op has no attributes
  // Output dims from input dims (core/shape_inference.h); nullptr: not known to qdqrt, whose
  // shape inference then leaves the op's outputs as the file or ONNX's inference gave them.
  ShapeFunction infer_shape = nullptr;
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpSchema* find(const std::string& domain, const std::string& op_type) const;
  std::vector<const OpSchema*> all() const;
  void add(OpSchema schema);
  // Names the shape function of an op added before; an error names an op that was not added.
  Status set_shape_function(const std::string& domain, const std::string& op_type, ShapeFunction function);

 private:
  std::vector<std::unique_ptr<OpSchema>> schemas_;
};

// Typed reads of raw attributes with defaults; errors name the node, the attribute and the value.
class AttributeReader {
 public:
  explicit AttributeReader(const Node& node) : node_(node) {}
  Result<int64_t> get_int(const std::string& key, int64_t default_value) const;
  Result<int64_t> get_required_int(const std::string& key) const;
  Result<float> get_float(const std::string& key, float default_value) const;
  Result<std::string> get_string(const std::string& key, const std::string& default_value) const;
  Result<std::vector<int64_t>> get_ints(const std::string& key, std::vector<int64_t> default_value = {}) const;
  Result<std::vector<float>> get_floats(const std::string& key, std::vector<float> default_value = {}) const;
  Result<Tensor> get_tensor(const std::string& key) const;
  bool has(const std::string& key) const { return node_.find_attribute(key) != nullptr; }
  // Error "<Op> '<name>': attribute '<key>' ...: <message>".
  Status error(const std::string& key, const std::string& message) const;

 private:
  Result<const Attribute*> find(const std::string& key, Attribute::Kind kind) const;
  const Node& node_;
};

// Shorthand for a parser's return: make_attributes<ConvAttributes>(std::move(attrs)).
template <class T>
std::shared_ptr<const OpAttributes> make_attributes(T attributes) {
  return std::make_shared<const T>(std::move(attributes));
}

}  // namespace qdqrt
