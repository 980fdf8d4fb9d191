// Binary fusion: DQ(a), DQ(b) -> Add/Mul [-> activation] [-> Q] becomes QAdd/QMul. Runs after
// the conv and matmul fusions, which take the residual Adds they can absorb.
#include <utility>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

SelectResult select_qdq_binary(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const bool is_add = is_onnx(node, "Add");
  if ((!is_add && !is_onnx(node, "Mul")) || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = is_add ? layers::kQAdd : layers::kQMul;
  auto a = activation_input(graph, index, node.input(0), "input A", result.reason);
  if (!a) return result;
  auto b = activation_input(graph, index, node.input(1), "input B", result.reason);
  if (!b) return result;
  selection.inputs = {*a, *b};
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  select_activation_and_output(graph, index, selection);
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_binary(Graph& graph, const QdqSelection& selection, PassContext& context) {
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  std::vector<std::string> a = input_triple(graph, selection.inputs[0]);
  std::vector<std::string> b = input_triple(graph, selection.inputs[1]);
  layer.inputs = {a[0], a[1], a[2], b[0], b[1], b[2], output_params[0], output_params[1]};
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
