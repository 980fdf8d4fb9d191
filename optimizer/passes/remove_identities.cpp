#include "optimizer/passes/remove_identities.h"

#include <algorithm>

#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"
#include "core/ops/tensor.h"

namespace qdqrt::optimizer {

namespace {

DataType value_dtype(const Graph& graph, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) return constant->dtype();
  const ValueInfo* info = graph.find_value(value);
  return info == nullptr ? DataType::kUndefined : info->dtype;
}

// An initializer, or the value of a Constant node: this pass runs before fold_constants turns
// Constant nodes into initializers.
const Tensor* constant_value(const Graph& graph, const std::string& value) {
  if (const Tensor* constant = find_constant(graph, value)) return constant;
  for (const Node& node : graph.nodes) {
    if (!node.domain.empty() || node.op_type != "Constant" || node.outputs.size() != 1 || node.outputs[0] != value) continue;
    const auto* attributes = dynamic_cast<const ConstantAttributes*>(node.typed_attributes.get());
    return attributes == nullptr ? nullptr : &attributes->value;
  }
  return nullptr;
}

// True when no node reads `value` and it is no graph output.
bool unused(const Graph& graph, const std::string& value) {
  for (const Node& node : graph.nodes) {
    for (const std::string& input : node.inputs) {
      if (input == value) return false;
    }
  }
  return std::find(graph.outputs.begin(), graph.outputs.end(), value) == graph.outputs.end();
}

// True when the node's first output equals its first input at inference.
bool passes_input_through(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || !node.has_input(0) || node.outputs.empty() || node.outputs[0].empty()) return false;
  if (node.op_type == "Identity") return true;
  if (node.op_type == "Dropout") {
    // The mask output would need a constant of ones: it must be absent or unread.
    if (node.outputs.size() > 1 && !node.outputs[1].empty() && !unused(graph, node.outputs[1])) return false;
    // training_mode (input 2) absent or a constant false, or a constant ratio (input 1) of 0: then
    // nothing is dropped and the scale 1 / (1 - ratio) is 1 (torchvision's Swin exports
    // F.dropout(p=0.0, training=True)).
    if (node.has_input(2)) {
      const Tensor* training = constant_value(graph, node.input(2));
      const Tensor* ratio = node.has_input(1) ? constant_value(graph, node.input(1)) : nullptr;
      const bool inference = training != nullptr && training->numel() == 1 && training->value_as_int64(0) == 0;
      const bool drops_nothing = ratio != nullptr && ratio->numel() == 1 && dtype_is_float(ratio->dtype()) &&
                                 ratio->value_as_double(0) == 0.0;
      if (!inference && !drops_nothing) return false;
    }
    return true;
  }
  if (node.op_type == "Cast") {
    const DataType from = value_dtype(graph, node.input(0));
    return from != DataType::kUndefined && from == node.attrs<CastAttributes>().to;
  }
  return false;
}

class RemoveIdentitiesPass : public Pass {
 public:
  std::string name() const override { return "remove_identities"; }

  Status run(Graph& graph, PassContext&) override {
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!passes_input_through(graph, graph.nodes[n])) continue;
      const std::string input = graph.nodes[n].inputs[0];
      const std::string output = graph.nodes[n].outputs[0];
      // Kept when it links a graph input or initializer straight to a graph output.
      if (bypass_value(graph, output, input)) graph.nodes[n].outputs.assign(graph.nodes[n].outputs.size(), "");
    }
    remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_remove_identities_pass() { return std::make_unique<RemoveIdentitiesPass>(); }

}  // namespace qdqrt::optimizer
