// qdqrt's internal graph (IR): typed, shaped values, constant initializers, nodes with raw
// ONNX attributes plus a typed attribute struct per op, in topological order.
#pragma once

#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dim_expr.h"
#include "core/status.h"
#include "core/tensor.h"

namespace qdqrt {

// Domain names as ONNX writes them; "" is the default domain (ai.onnx).
inline constexpr const char* kOnnxDomain = "";
inline constexpr const char* kQdqrtDomain = "qdqrt";  // internal fused layers made by the optimizer

// One ONNX attribute, as stored in the model.
struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings };
  Kind kind = Kind::kInt;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};
using AttributeMap = std::map<std::string, Attribute>;
const char* attribute_kind_name(Attribute::Kind kind);

// Base of every op's typed attribute struct (ConvAttributes, GemmAttributes, ...).
struct OpAttributes {
  virtual ~OpAttributes() = default;
};

struct Node {
  std::string name;     // unique; the loader names unnamed nodes "<op_type>_<index>"
  std::string op_type;  // "Conv"
  std::string domain;   // "" for ai.onnx
  int64_t opset = 0;    // the model's opset for this node's domain
  std::vector<std::string> inputs;   // "" marks an absent optional input
  std::vector<std::string> outputs;  // "" marks an absent optional output
  AttributeMap attributes;           // raw, as in the file
  std::shared_ptr<const OpAttributes> typed_attributes;  // set by the op's schema parser

  // The typed attribute struct; the caller knows the op (asserts on mismatch in debug builds).
  template <class T>
  const T& attrs() const {
    const T* typed = dynamic_cast<const T*>(typed_attributes.get());
    assert(typed != nullptr);
    return *typed;
  }
  const Attribute* find_attribute(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? nullptr : &it->second;
  }
  // "Conv 'conv1'" for messages.
  std::string describe() const { return op_type + " '" + name + "'"; }
  // Input i if present (non-empty name), else "".
  const std::string& input(size_t i) const {
    static const std::string empty;
    return i < inputs.size() ? inputs[i] : empty;
  }
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
};

// A dimension: its value at the shapes being built (-1 when not known), the name the file gives a
// dynamic dim ("batch", or ""), and the dim as an expression of the dynamic dims (core/dim_expr.h;
// set by shape inference, core/shape_inference.h; empty when its dependence is not known). A
// dim with a value is static even when its expression reads a symbol: the engine is built there.
struct Dim {
  int64_t value = -1;
  std::string symbol;
  DimExpr expr;
  bool is_static() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
  // The elements of a small integer tensor that shape inference could follow (a shape computed
  // by Shape -> Gather -> Concat, flattened), as dims: what a Reshape or Expand reading it gets.
  std::optional<std::vector<Dim>> elements;
  // A constant the optimizer computed from the shapes of runtime values (at the shapes being
  // built): right at other shapes only where `elements` says how it follows them.
  bool from_runtime_shapes = false;
  // The static shape if every dim is static.
  std::optional<Shape> static_shape() const;
};
std::string dims_to_string(const std::vector<Dim>& dims);  // "[batch, 3, 224, 224]"

struct Graph {
  std::string name;
  std::map<std::string, int64_t> opsets;  // domain -> version; "" is ai.onnx
  std::vector<Node> nodes;                // topological order
  std::vector<std::string> inputs;        // runtime inputs (initializers excluded)
  std::vector<std::string> outputs;
  std::unordered_map<std::string, ValueInfo> values;     // every named value with known type info
  std::unordered_map<std::string, Tensor> initializers;  // constant tensors by name

  int64_t opset(const std::string& domain = kOnnxDomain) const {
    auto it = opsets.find(domain);
    return it == opsets.end() ? 0 : it->second;
  }
  const ValueInfo* find_value(const std::string& name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second;
  }
  const Tensor* find_initializer(const std::string& name) const {
    auto it = initializers.find(name);
    return it == initializers.end() ? nullptr : &it->second;
  }
};

}  // namespace qdqrt
