#include "optimizer/passes/evaluate_shape_computations.h"

#include <algorithm>

#include "core/shape_inference.h"
#include "optimizer/passes/fold_constants.h"

namespace qdqrt::optimizer {

namespace {

bool has_static_shape(const Graph& graph, const std::string& value) {
  if (graph.find_initializer(value) != nullptr) return true;
  const ValueInfo* info = graph.find_value(value);
  return info != nullptr && info->static_shape().has_value();
}

bool every_output_static(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    for (const std::string& output : node.outputs) {
      if (!output.empty() && !has_static_shape(graph, output)) return false;
    }
  }
  return true;
}

size_t unfolded_nodes(const Graph& graph) { return graph.nodes.size(); }

class EvaluateShapeComputationsPass : public Pass {
 public:
  std::string name() const override { return "evaluate_shape_computations"; }
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext& context) override {
    for (const std::string& input : graph.inputs) {
      if (!has_static_shape(graph, input)) return Status::ok();
    }
    std::unique_ptr<Pass> fold = make_fold_constants_pass();
    // Each round folds at least one more node, so it ends.
    while (!every_output_static(graph)) {
      QDQRT_RETURN_IF_ERROR(infer_shapes(graph));
      const size_t before = unfolded_nodes(graph);
      QDQRT_RETURN_IF_ERROR(fold->run(graph, context));
      if (unfolded_nodes(graph) == before) break;
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_evaluate_shape_computations_pass() {
  return std::make_unique<EvaluateShapeComputationsPass>();
}

}  // namespace qdqrt::optimizer
