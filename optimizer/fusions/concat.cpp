// Concat fusion: DQs -> Concat -> Q becomes QConcat; inputs whose parameters differ from the
// output's are requantized by the layer.
#include <utility>

#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

SelectResult select_qdq_concat(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "Concat") || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = layers::kQConcat;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    auto x = activation_input(graph, index, node.input(i), fmt::format("input {}", i).c_str(), result.reason);
    if (!x) return result;
    selection.inputs.push_back(*x);
  }
  auto q = required_output_quantization(graph, index, node.outputs[0], result.reason);
  if (!q) return result;
  selection.targets = {node_index};
  end_at_quantize(graph, *q, selection);
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_concat(Graph& graph, const QdqSelection& selection, PassContext& context) {
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);  // axis
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = output_params;
  for (const QuantizedInput& input : selection.inputs) {
    std::vector<std::string> triple = input_triple(graph, input);
    layer.inputs.insert(layer.inputs.end(), triple.begin(), triple.end());
  }
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
