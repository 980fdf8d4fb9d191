#include "optimizer/passes/fold_expand_into_broadcast.h"

#include "optimizer/graph_utils.h"

namespace qdqrt::optimizer {

namespace {

bool is_float_arithmetic(const Node& node) {
  return node.domain.empty() && node.inputs.size() == 2 && node.outputs.size() == 1 &&
         (node.op_type == "Add" || node.op_type == "Sub" || node.op_type == "Mul" || node.op_type == "Div");
}

// Whether every reader of the Expand's output broadcasts its input to the same dims by itself.
bool readers_broadcast(const Graph& graph, const ValueIndex& index, const Node& expand) {
  const std::string& expanded = expand.outputs[0];
  const ValueInfo* expanded_info = graph.find_value(expanded);
  const ValueInfo* input_info = graph.find_value(expand.input(0));
  if (expanded_info == nullptr || input_info == nullptr || expanded_info->dtype != DataType::kFloat ||
      input_info->dtype != DataType::kFloat || !expanded_info->shape || !input_info->shape ||
      input_info->shape->size() > expanded_info->shape->size() || index.is_graph_output(expanded)) {
    return false;
  }
  const std::vector<int>& readers = index.consumers(expanded);
  if (readers.empty()) return false;
  for (int reader : readers) {
    const Node& node = graph.nodes[static_cast<size_t>(reader)];
    if (!is_float_arithmetic(node) || node.input(0) == node.input(1)) return false;
    const std::string& other = node.input(0) == expanded ? node.input(1) : node.input(0);
    if (!same_dims(graph.find_value(other), expanded_info)) return false;
  }
  return true;
}

class FoldExpandIntoBroadcastPass : public Pass {
 public:
  std::string name() const override { return "fold_expand_into_broadcast"; }
  // The target shape torch computes from Shape(x) is known only once the shape computations are.
  std::vector<std::string> must_run_after() const override { return {"evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    const ValueIndex index(graph);
    for (const Node& node : graph.nodes) {
      if (!node.domain.empty() || node.op_type != "Expand" || node.inputs.size() != 2 || node.outputs.size() != 1 ||
          !readers_broadcast(graph, index, node)) {
        continue;
      }
      replace_uses(graph, node.outputs[0], node.input(0));
      changed = true;
    }
    if (changed) remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_expand_into_broadcast_pass() {
  return std::make_unique<FoldExpandIntoBroadcastPass>();
}

}  // namespace qdqrt::optimizer
