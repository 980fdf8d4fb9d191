#include "optimizer/passes/remove_fake_quantization.h"

#include "optimizer/graph_utils.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

class RemoveFakeQuantizationPass : public Pass {
 public:
  std::string name() const override { return "remove_fake_quantization"; }
  // Q(w_float) must already be DQ(w_int8) so that the weights fold to their quantized values.
  std::vector<std::string> must_run_after() const override { return {"fold_constants"}; }

  Status run(Graph& graph, PassContext&) override {
    ValueIndex index(graph);
    for (Node& dq : graph.nodes) {
      if (!is_dequantize(dq) || dq.outputs.empty() || dq.outputs[0].empty()) continue;
      if (std::optional<Tensor> constant = folded_dequantize(graph, dq)) {
        const std::string name = add_initializer(graph, dq.outputs[0] + "_float", std::move(*constant));
        if (bypass_value(graph, dq.outputs[0], name)) dq.outputs[0].clear();
        continue;
      }
      const int q_index = index.producer(dq.input(0));
      if (q_index < 0 || !is_quantize(graph.nodes[static_cast<size_t>(q_index)])) continue;
      const Node& q = graph.nodes[static_cast<size_t>(q_index)];
      std::optional<QuantParams> q_params = constant_quant_params(graph, q);
      std::optional<QuantParams> dq_params = constant_quant_params(graph, dq);
      if (!q_params || !dq_params) continue;
      const int64_t rank = value_rank(graph, dq.input(0));
      if (!dq_params->per_tensor() && rank < 0) continue;
      if (!same_quant_params(*q_params, *dq_params, rank)) continue;
      if (bypass_value(graph, dq.outputs[0], q.input(0))) dq.outputs[0].clear();
    }
    remove_unused(graph);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_remove_fake_quantization_pass() { return std::make_unique<RemoveFakeQuantizationPass>(); }

}  // namespace qdqrt::optimizer
