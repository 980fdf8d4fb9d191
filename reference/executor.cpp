#include "reference/executor.h"

#include <exception>
#include <unordered_map>
#include <unordered_set>

#include "reference/kernel_registry.h"

namespace qdqrt {

namespace {

Status check_input(const Graph& graph, const std::string& name, const Tensor& tensor) {
  const ValueInfo* info = graph.find_value(name);
  if (info == nullptr) return Status::ok();
  if (info->dtype != DataType::kUndefined && info->dtype != tensor.dtype()) {
    return invalid_argument("input '{}': expected dtype {}, got {}", name, dtype_name(info->dtype),
                            dtype_name(tensor.dtype()));
  }
  if (info->shape) {
    const auto& dims = *info->shape;
    if (dims.size() != tensor.shape().size()) {
      return invalid_argument("input '{}': expected rank {} {}, got shape {}", name, dims.size(),
                              dims_to_string(dims), shape_to_string(tensor.shape()));
    }
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<Tensor>> run_reference_node(const Node& node, const std::vector<const Tensor*>& inputs) {
  ReferenceKernel kernel = KernelRegistry::instance().find(node.domain, node.op_type);
  if (kernel == nullptr) {
    return unsupported("{}: no reference kernel for op '{}' in domain '{}'", node.describe(), node.op_type,
                       node.domain.empty() ? "ai.onnx" : node.domain);
  }
  std::vector<Tensor> outputs(node.outputs.size());
  // Kernels return Status for bad input; anything thrown (e.g. bad_alloc on a huge shape) is
  // turned into a Status here so it never escapes.
  try {
    QDQRT_RETURN_IF_ERROR(kernel(node, inputs, outputs));
  } catch (const std::exception& e) {
    return invalid_argument("{}: {}", node.describe(), e.what());
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty() && !outputs[i].defined()) {
      return internal_error("{}: reference kernel left output {} ('{}') unset", node.describe(), i, node.outputs[i]);
    }
  }
  return outputs;
}

Result<TensorMap> run_reference(const Graph& graph, const TensorMap& inputs, const ReferenceRunOptions& options) {
  std::unordered_map<std::string, Tensor> values;
  for (const auto& [name, tensor] : graph.initializers) values[name] = tensor;
  for (const std::string& name : graph.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) return invalid_argument("missing graph input '{}'", name);
    QDQRT_RETURN_IF_ERROR(check_input(graph, name, it->second));
    values[name] = it->second;
  }
  for (const auto& [name, tensor] : inputs) {
    if (values.find(name) == values.end()) return invalid_argument("'{}' is not an input of the graph", name);
    (void)tensor;
  }

  // Free each value after its last consumer so big models fit in memory.
  std::unordered_set<std::string> keep(graph.outputs.begin(), graph.outputs.end());
  keep.insert(options.extra_outputs.begin(), options.extra_outputs.end());
  std::unordered_map<std::string, size_t> last_use;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (const std::string& input : graph.nodes[n].inputs) {
      if (!input.empty()) last_use[input] = n;
    }
  }

  std::vector<const Tensor*> node_inputs;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    node_inputs.clear();
    for (const std::string& input : node.inputs) {
      if (input.empty()) {
        node_inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(input);
      if (it == values.end()) return invalid_model("{}: input '{}' has no value", node.describe(), input);
      node_inputs.push_back(&it->second);
    }
    QDQRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, run_reference_node(node, node_inputs));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].empty()) values[node.outputs[i]] = std::move(outputs[i]);
    }
    for (const std::string& input : node.inputs) {
      if (!input.empty() && last_use[input] == n && !keep.count(input) && !graph.initializers.count(input)) {
        values.erase(input);
      }
    }
  }

  TensorMap result;
  for (const std::string& name : keep) {
    auto it = values.find(name);
    if (it == values.end()) return invalid_model("output '{}' was not produced", name);
    result[name] = it->second;
  }
  return result;
}

}  // namespace qdqrt
