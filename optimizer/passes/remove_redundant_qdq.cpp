#include "optimizer/passes/remove_redundant_qdq.h"

#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

class RemoveRedundantQdqPass : public Pass {
 public:
  std::string name() const override { return "remove_redundant_qdq"; }
  // Runs after the moves that create DQ -> Q pairs.
  std::vector<std::string> must_run_after() const override { return {"propagate_qdq"}; }

  Status run(Graph& graph, PassContext&) override {
    for (bool changed = true; changed;) {
      changed = false;
      ValueIndex index(graph);
      for (size_t n = 0; n < graph.nodes.size(); ++n) {
        Node& q = graph.nodes[n];
        if (!is_quantize(q) || q.outputs.empty() || q.outputs[0].empty()) continue;
        const int dq_index = index.producer(q.input(0));
        if (dq_index < 0 || !is_dequantize(graph.nodes[static_cast<size_t>(dq_index)])) continue;
        const Node& dq = graph.nodes[static_cast<size_t>(dq_index)];
        std::optional<QuantParams> dq_params = constant_quant_params(graph, dq);
        std::optional<QuantParams> q_params = constant_quant_params(graph, q);
        const int64_t rank = value_rank(graph, dq.input(0));
        if (!dq_params || !q_params) continue;
        if (!dq_params->per_tensor() && rank < 0) continue;
        if (!same_quant_params(*dq_params, *q_params, rank)) continue;
        const std::string integer_value = dq.input(0);
        if (bypass_value(graph, q.outputs[0], integer_value)) {
          q.outputs[0].clear();
          changed = true;
          break;  // indices changed
        }
      }
      if (changed) remove_unused(graph);
    }
    remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_remove_redundant_qdq_pass() { return std::make_unique<RemoveRedundantQdqPass>(); }

}  // namespace qdqrt::optimizer
