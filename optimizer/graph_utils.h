// Small tools passes use to read and rewrite a Graph.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace qdqrt::optimizer {

// Who produces and who reads each value. Indices into graph.nodes; rebuild after any rewrite.
class ValueIndex {
 public:
  explicit ValueIndex(const Graph& graph);
  // Index of the producing node, or -1 (graph input, initializer or unknown).
  int producer(const std::string& value) const;
  // Indices of nodes reading the value (a node reading it twice appears twice).
  const std::vector<int>& consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const;
  // Read by exactly one node and not a graph output: safe to fuse away.
  bool has_single_use(const std::string& value) const;

 private:
  std::unordered_map<std::string, int> producers_;
  std::unordered_map<std::string, std::vector<int>> consumers_;
  std::unordered_map<std::string, bool> outputs_;
};

// Sorts graph.nodes topologically (stable: keeps the current order where it can).
// Error if a cycle or an input with no producer exists.
Status topological_sort(Graph& graph);

// The same dims: equal static values, or the same symbol.
bool same_dims(const std::vector<Dim>& a, const std::vector<Dim>& b);
// Two values whose shapes are known and the same dims.
bool same_dims(const ValueInfo* a, const ValueInfo* b);

// Removes nodes none of whose outputs are used (by nodes or graph outputs) and initializers no
// node reads; repeated until nothing changes. Returns the number of nodes removed.
int remove_unused(Graph& graph);

// Whether a Transpose perm leaves every axis where it is.
bool is_identity_permutation(const std::vector<int64_t>& perm);
// The explicit perm of an ai.onnx Transpose with one output; nullopt for any other node or a
// Transpose without a perm attribute.
std::optional<std::vector<int64_t>> explicit_transpose_perm(const Node& node);

// Every node input reading `from` reads `to` instead (graph outputs are not touched).
void replace_uses(Graph& graph, const std::string& from, const std::string& to);

// A value/node name not used in the graph yet, from `base` ("base", "base_1", ...).
std::string unique_value_name(const Graph& graph, const std::string& base);
std::string unique_node_name(const Graph& graph, const std::string& base);

// Adds a constant tensor under a fresh name derived from `base`; returns the name.
std::string add_initializer(Graph& graph, const std::string& base, Tensor tensor);

// Adds a value of `dtype` (shape left to shape inference) under a fresh name derived from `base`;
// returns the name.
std::string add_value(Graph& graph, const std::string& base, DataType dtype);

// The constant behind a value: an initializer, or nullptr.
const Tensor* find_constant(const Graph& graph, const std::string& value);

// Dim `axis` of a value of rank `rank` when a pass may bake it into a constant (a Reshape's shape):
// known, and the same at every shape the engine runs (not derived from a dynamic dim).
std::optional<int64_t> fixed_dim(const ValueInfo* info, size_t rank, size_t axis);

// Sets node.typed_attributes from node.attributes with its op's schema parser (none for an op
// without attributes). Error if the op is not registered or its attributes do not parse.
Status parse_typed_attributes(Node& node);

// A new ai.onnx node of `like`'s opset with one output, its attributes parsed; passes build the
// nodes they add with it.
Result<Node> make_onnx_node(const Node& like, const std::string& op_type, std::string name,
                            std::vector<std::string> inputs, std::string output, AttributeMap attributes = {});

}  // namespace qdqrt::optimizer
