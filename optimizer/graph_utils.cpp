#include "optimizer/graph_utils.h"

#include <queue>
#include <unordered_set>

#include "core/op_registry.h"
#include "core/ops/tensor.h"

namespace qdqrt::optimizer {

ValueIndex::ValueIndex(const Graph& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (const std::string& output : node.outputs) {
      if (!output.empty()) producers_[output] = static_cast<int>(n);
    }
    for (const std::string& input : node.inputs) {
      if (!input.empty()) consumers_[input].push_back(static_cast<int>(n));
    }
  }
  for (const std::string& output : graph.outputs) outputs_[output] = true;
}

int ValueIndex::producer(const std::string& value) const {
  auto it = producers_.find(value);
  return it == producers_.end() ? -1 : it->second;
}

const std::vector<int>& ValueIndex::consumers(const std::string& value) const {
  static const std::vector<int> none;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? none : it->second;
}

bool ValueIndex::is_graph_output(const std::string& value) const { return outputs_.count(value) != 0; }

bool ValueIndex::has_single_use(const std::string& value) const {
  return consumers(value).size() == 1 && !is_graph_output(value);
}

Status topological_sort(Graph& graph) {
  std::unordered_map<std::string, int> producer;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const std::string& output : graph.nodes[n].outputs) {
      if (!output.empty()) producer[output] = static_cast<int>(n);
    }
  }
  std::unordered_set<std::string> available(graph.inputs.begin(), graph.inputs.end());
  for (const auto& [name, tensor] : graph.initializers) available.insert(name);

  const size_t count = graph.nodes.size();
  std::vector<int> pending(count, 0);
  std::vector<std::vector<int>> readers(count);
  for (size_t n = 0; n < count; ++n) {
    for (const std::string& input : graph.nodes[n].inputs) {
      if (input.empty() || available.count(input)) continue;
      auto it = producer.find(input);
      if (it == producer.end()) {
        return invalid_model("{}: input '{}' has no producer", graph.nodes[n].describe(), input);
      }
      ++pending[n];
      readers[static_cast<size_t>(it->second)].push_back(static_cast<int>(n));
    }
  }
  // Min-heap on the original index keeps the existing order wherever it is already valid.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t n = 0; n < count; ++n) {
    if (pending[n] == 0) ready.push(static_cast<int>(n));
  }
  std::vector<Node> sorted;
  sorted.reserve(count);
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    for (int reader : readers[static_cast<size_t>(n)]) {
      if (--pending[static_cast<size_t>(reader)] == 0) ready.push(reader);
    }
    sorted.push_back(std::move(graph.nodes[static_cast<size_t>(n)]));
  }
  if (sorted.size() != count) {
    for (size_t n = 0; n < count; ++n) {
      if (pending[n] > 0) return invalid_model("{}: the graph has a cycle through this node", graph.nodes[n].describe());
    }
  }
  graph.nodes = std::move(sorted);
  return Status::ok();
}

int remove_unused(Graph& graph) {
  int removed = 0;
  for (bool changed = true; changed;) {
    changed = false;
    std::unordered_set<std::string> used(graph.outputs.begin(), graph.outputs.end());
    for (const Node& node : graph.nodes) {
      for (const std::string& input : node.inputs) {
        if (!input.empty()) used.insert(input);
      }
    }
    std::vector<Node> kept;
    kept.reserve(graph.nodes.size());
    for (Node& node : graph.nodes) {
      bool any_used = false;
      for (const std::string& output : node.outputs) any_used = any_used || (!output.empty() && used.count(output));
      if (any_used) {
        kept.push_back(std::move(node));
      } else {
        ++removed;
        changed = true;
      }
    }
    graph.nodes = std::move(kept);
    if (!changed) {
      std::erase_if(graph.initializers, [&](const auto& entry) { return !used.count(entry.first); });
    }
  }
  return removed;
}

bool is_identity_permutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

void replace_uses(Graph& graph, const std::string& from, const std::string& to) {
  for (Node& node : graph.nodes) {
    for (std::string& input : node.inputs) {
      if (input == from) input = to;
    }
  }
}

std::string unique_value_name(const Graph& graph, const std::string& base) {
  auto taken = [&](const std::string& name) {
    if (graph.values.count(name) || graph.initializers.count(name)) return true;
    for (const Node& node : graph.nodes) {
      for (const std::string& output : node.outputs) {
        if (output == name) return true;
      }
      for (const std::string& input : node.inputs) {
        if (input == name) return true;
      }
    }
    for (const std::string& input : graph.inputs) {
      if (input == name) return true;
    }
    return false;
  };
  if (!taken(base)) return base;
  for (int suffix = 1;; ++suffix) {
    std::string candidate = base + "_" + std::to_string(suffix);
    if (!taken(candidate)) return candidate;
  }
}

std::string unique_node_name(const Graph& graph, const std::string& base) {
  std::unordered_set<std::string> names;
  for (const Node& node : graph.nodes) names.insert(node.name);
  if (!names.count(base)) return base;
  for (int suffix = 1;; ++suffix) {
    std::string candidate = base + "_" + std::to_string(suffix);
    if (!names.count(candidate)) return candidate;
  }
}

std::string add_initializer(Graph& graph, const std::string& base, Tensor tensor) {
  std::string name = unique_value_name(graph, base);
  ValueInfo info;
  info.name = name;
  info.dtype = tensor.dtype();
  std::vector<Dim> dims;
  for (int64_t d : tensor.shape()) dims.push_back({d, ""});
  info.shape = dims;
  graph.values[name] = info;
  graph.initializers[name] = std::move(tensor);
  return name;
}

std::string add_value(Graph& graph, const std::string& base, DataType dtype) {
  std::string name = unique_value_name(graph, base);
  ValueInfo& info = graph.values[name];
  info.name = name;
  info.dtype = dtype;
  return name;
}

const Tensor* find_constant(const Graph& graph, const std::string& value) { return graph.find_initializer(value); }

std::optional<std::vector<int64_t>> explicit_transpose_perm(const Node& node) {
  if (!node.domain.empty() || node.op_type != "Transpose" || !node.has_input(0) || node.outputs.size() != 1) {
    return std::nullopt;
  }
  const auto* attributes = dynamic_cast<const TransposeAttributes*>(node.typed_attributes.get());
  if (attributes == nullptr || attributes->perm.empty()) return std::nullopt;
  return attributes->perm;
}

std::optional<int64_t> fixed_dim(const ValueInfo* info, size_t rank, size_t axis) {
  if (info == nullptr || !info->shape || info->shape->size() != rank || axis >= rank) return std::nullopt;
  const Dim& dim = (*info->shape)[axis];
  // Without an expression (shape inference has not run), a dim the file names is dynamic.
  const bool fixed = dim.expr.known() ? dim.expr.is_constant() : dim.symbol.empty();
  if (!dim.is_static() || !fixed) return std::nullopt;
  return dim.value;
}

Status parse_typed_attributes(Node& node) {
  const OpSchema* schema = OpRegistry::instance().find(node.domain, node.op_type);  // kOnnxDomain is ""
  if (schema == nullptr) return internal_error("{}: op {} is not registered", node.describe(), node.op_type);
  node.typed_attributes = nullptr;
  if (schema->parse_attributes != nullptr) {
    QDQRT_ASSIGN_OR_RETURN(node.typed_attributes, schema->parse_attributes(node));
  }
  return Status::ok();
}

Result<Node> make_onnx_node(const Node& like, const std::string& op_type, std::string name,
                            std::vector<std::string> inputs, std::string output, AttributeMap attributes) {
  Node node;
  node.name = std::move(name);
  node.op_type = op_type;
  node.opset = like.opset;
  node.inputs = std::move(inputs);
  node.outputs = {std::move(output)};
  node.attributes = std::move(attributes);
  QDQRT_RETURN_IF_ERROR(parse_typed_attributes(node));
  return node;
}

bool same_dims(const std::vector<Dim>& a, const std::vector<Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = a[i].is_static() ? b[i].is_static() && a[i].value == b[i].value
                                       : !a[i].symbol.empty() && a[i].symbol == b[i].symbol;
    if (!same) return false;
  }
  return true;
}

bool same_dims(const ValueInfo* a, const ValueInfo* b) {
  return a != nullptr && b != nullptr && a->shape && b->shape && same_dims(*a->shape, *b->shape);
}

}  // namespace qdqrt::optimizer
