// Split fusion: DQ -> Split -> a Q on every output, each with the DQ's parameters, becomes the ONNX
// Split reading the int8/uint8 tensor and writing the Qs' outputs (a split copies values, and
// Q(DQ(q)) == q for the same parameters), which the engine runs as int8 strided copies.
// propagate_qdq moves Q/DQ through single-output data movement (Slice among them); a Split has
// several outputs, so it is matched here.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>

#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {


SelectResult select_qdq_split(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "Split") || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
  if (!x) return result;
  QdqSelection selection;
  selection.layer_op = "Split";  // the ONNX Split stays, on the int8 tensor
  selection.inputs = {*x};
  selection.targets = {node_index};
  for (const std::string& output : node.outputs) {
    if (output.empty()) continue;
    auto q = required_output_quantization(graph, index, output, result.reason);
    if (!q) return result;
    if (!same_input_output_params(graph, *x, *q)) {
      result.reason = fmt::format("output '{}' is quantized with other parameters than the input", output);
      return result;
    }
    selection.targets.push_back(q->q_node);
  }
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_split(Graph& graph, const QdqSelection& selection, PassContext&) {
  Node& split = graph.nodes[static_cast<size_t>(selection.targets[0])];
  split.inputs[0] = selection.inputs[0].quantized;
  size_t next = 1;
  for (std::string& output : split.outputs) {
    if (output.empty()) continue;
    output = graph.nodes[static_cast<size_t>(selection.targets[next++])].outputs[0];
  }
  std::vector<int> quantizers(selection.targets.begin() + 1, selection.targets.end());
  std::sort(quantizers.begin(), quantizers.end(), std::greater<>());
  for (int q : quantizers) graph.nodes.erase(graph.nodes.begin() + q);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
