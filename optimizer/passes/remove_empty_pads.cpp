#include "optimizer/passes/remove_empty_pads.h"

#include <algorithm>

#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

// Pads (input 1 from opset 11, the `pads` attribute before) that are constant zeros at every batch.
bool pads_are_zero(const Graph& graph, const Node& node) {
  if (!node.domain.empty() || node.op_type != "Pad" || node.opset < 11 || !node.has_input(0) || !node.has_input(1) ||
      node.outputs.size() != 1 || node.outputs[0].empty()) {
    return false;
  }
  const Tensor* pads = find_constant(graph, node.input(1));
  if (pads == nullptr || pads->dtype() != DataType::kInt64 || pads->rank() != 1) return false;
  for (int64_t i = 0; i < pads->numel(); ++i) {
    if (pads->data<int64_t>()[i] != 0) return false;
  }
  const ValueInfo* info = graph.find_value(node.input(1));
  if (info != nullptr && info->from_runtime_shapes) {
    // Computed from runtime shapes: zero at the built shapes; only if no element follows a symbol.
    if (!info->elements) return false;
    return std::all_of(info->elements->begin(), info->elements->end(),
                       [](const Dim& element) { return element.expr.known() && element.expr.is_constant(); });
  }
  return true;
}

class RemoveEmptyPadsPass : public Pass {
 public:
  std::string name() const override { return "remove_empty_pads"; }
  // The pads torch computes from Shape are constants only once the shape computations are evaluated.
  std::vector<std::string> must_run_after() const override { return {"evaluate_shape_computations"}; }

  Status run(Graph& graph, PassContext&) override {
    bool changed = false;
    for (Node& node : graph.nodes) {
      if (!pads_are_zero(graph, node)) continue;
      const std::string input = node.inputs[0];
      const std::string output = node.outputs[0];
      if (bypass_value(graph, output, input)) {
        node.outputs[0].clear();
        changed = true;
      }
    }
    if (changed) remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_remove_empty_pads_pass() { return std::make_unique<RemoveEmptyPadsPass>(); }

}  // namespace qdqrt::optimizer
