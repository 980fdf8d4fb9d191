// qdqrt's own shape inference: every op's output dims from its input dims, by the shape function
// its schema names (core/op_registry.h; qdqrt-domain fused ops use their table row's
// `output_shape`, core/ops/fused_op_table.h). Dims carry expressions of the dynamic dims
// (core/dim_expr.h), and small integer tensors (shapes being computed: Shape -> Gather -> Concat
// -> Reshape) carry their elements as dims, so a Reshape target built from the batch follows the
// batch. The engine learns from it where the batch is in every value; the optimizer evaluates
// shape computations with it; neither goes back through ONNX.
#pragma once

#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt {

using Dims = std::vector<Dim>;
using OptionalDims = std::optional<Dims>;

// Dims with their expressions.
Dim static_dim(int64_t value);
// A dynamic dim: `symbol` with its value at the shapes being built (-1: not known).
Dim symbolic_dim(const std::string& symbol, int64_t value = -1);
Dims static_dims(const Shape& shape);
// Value and expression together; the value is -1 when either side's is.
Dim operator+(const Dim& a, const Dim& b);
Dim operator-(const Dim& a, const Dim& b);
Dim operator*(const Dim& a, const Dim& b);
Dim floor_div(const Dim& a, const Dim& b);
Dim ceil_div(const Dim& a, const Dim& b);
Dim mod(const Dim& a, const Dim& b);
Dim max(const Dim& a, const Dim& b);
Dim min(const Dim& a, const Dim& b);
// Known to be the same dim: equal expressions, or equal values where neither has an expression.
bool same_dim(const Dim& a, const Dim& b);
// The product of dims (1 for none).
Dim dims_product(const Dims& dims, size_t first = 0, size_t last = SIZE_MAX);

// Largest integer tensor whose elements inference follows (shapes have at most a few dozen).
inline constexpr int64_t kMaxFollowedElements = 64;

// What a shape function sees of one node and what it sets.
class ShapeInferenceContext {
 public:
  struct Input {
    OptionalDims dims;                // nullopt: absent, or rank unknown
    DataType dtype = DataType::kUndefined;
    const Tensor* constant = nullptr;  // an initializer
    OptionalDims elements;            // integer elements (constant or followed), flattened
  };

  ShapeInferenceContext(const Node& node, std::vector<Input> inputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(node.outputs.size()),
        output_elements_(node.outputs.size()) {}

  const Node& node() const { return node_; }
  size_t input_count() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && node_.has_input(i); }
  // The dims of input i; nullopt when absent or of unknown rank.
  const OptionalDims& input_dims(size_t i) const;
  DataType input_dtype(size_t i) const { return i < inputs_.size() ? inputs_[i].dtype : DataType::kUndefined; }
  const Tensor* input_constant(size_t i) const { return i < inputs_.size() ? inputs_[i].constant : nullptr; }
  // The integer elements of input i as dims (from a constant, or followed through a shape
  // computation); nullopt when not known.
  const OptionalDims& input_elements(size_t i) const;
  // Input i's elements as integers when every one has a value.
  std::optional<std::vector<int64_t>> input_ints(size_t i) const;

  void set_output_dims(size_t i, Dims dims);
  void set_output_elements(size_t i, Dims elements);
  const OptionalDims& output_dims(size_t i) const { return outputs_.at(i); }
  const OptionalDims& output_elements(size_t i) const { return output_elements_.at(i); }

  // An error naming the node: "Reshape 'r': <message>".
  template <typename... Args>
  Status error(fmt::format_string<Args...> format, Args&&... args) const {
    return invalid_model("{}: {}", node_.describe(), fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const Node& node_;
  std::vector<Input> inputs_;
  std::vector<OptionalDims> outputs_;
  std::vector<OptionalDims> output_elements_;
};

// Sets the output dims (and elements, when it follows them) or returns why it cannot; an output
// it leaves unset is not known.
using ShapeFunction = Status (*)(ShapeInferenceContext& context);

// Common shape functions ops share (core/ops/*.cpp register them by name).
Status infer_same_as_input(ShapeInferenceContext& context);  // output 0 = input 0 (all outputs)

// One node's output dims and elements as its shape function derives them from its inputs in
// `graph`; `status` says why they could not be (the vectors then hold what was set).
struct NodeShapes {
  Status status = Status::ok();
  std::vector<OptionalDims> dims;      // per output
  std::vector<OptionalDims> elements;  // per output
};
NodeShapes infer_node_shapes(const Graph& graph, const Node& node);

struct ShapeInferenceReport {
  // Values whose dims inference could not derive (their expressions are unknown): value -> why.
  std::map<std::string, std::string> unfollowed;
};

// Derives every node output's dims (with expressions) and followed elements in `graph`, in
// topological order, from the graph inputs' dims and the initializers. An input dim without an
// expression gets its symbol's (or its value's) expression. Where the graph already knows a
// static shape, a different derived value is a mismatch: the value keeps the known shape, loses
// its expressions and is reported (as is every output of a node without a shape function).
// Best effort: it fails only on a graph it cannot walk.
Status infer_shapes(Graph& graph, ShapeInferenceReport* report = nullptr);

}  // namespace qdqrt
