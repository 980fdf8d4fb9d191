#include "optimizer/fusions/residual_add.h"

#include <optional>

#include <fmt/format.h>

#include "optimizer/fusions/quantized_io.h"

namespace qdqrt::optimizer {

bool select_residual_add(const Graph& graph, const ValueIndex& index, QdqSelection& selection) {
  int consumer = single_consumer(index, selection.output);
  if (consumer < 0 || !is_onnx(graph.nodes[static_cast<size_t>(consumer)], "Add")) return true;
  const Node& add = graph.nodes[static_cast<size_t>(consumer)];
  const std::string& other = add.input(0) == selection.output ? add.input(1) : add.input(0);
  if (other == selection.output || find_constant(graph, other) != nullptr) return false;
  std::string reason;
  std::optional<QuantizedInput> residual = quantized_input(graph, index, other, reason);
  if (!residual) {
    selection.notes.push_back(
        {add.name, "Add", reason.empty() ? "residual input is float" : "residual input: " + reason});
    return false;
  }
  if (residual->per_channel) {
    selection.notes.push_back({add.name, "Add", "residual has per-channel scales"});
    return false;
  }
  if (!same_dims(graph.find_value(other), graph.find_value(add.outputs[0]))) {
    selection.notes.push_back({add.name, "Add", "residual shape is unknown or broadcasts"});
    return false;
  }
  selection.residual = *residual;
  selection.targets.push_back(consumer);
  selection.output = add.outputs[0];
  return true;
}

void note_residual_adds_of_shared_output(const Graph& graph, const ValueIndex& index, QdqSelection& selection) {
  const Node& main = graph.nodes[static_cast<size_t>(selection.targets[0])];
  for (int reader : index.consumers(selection.output)) {
    const Node& node = graph.nodes[static_cast<size_t>(reader)];
    if (is_onnx(node, "Add")) {
      selection.notes.push_back(
          {node.name, "Add", fmt::format("its input from {} has other consumers", main.describe())});
    }
  }
}

void append_residual_inputs(Graph& graph, const QdqSelection& selection, std::vector<std::string>& layer_inputs) {
  if (!selection.residual) return;
  std::vector<std::string> residual = input_triple(graph, *selection.residual);
  layer_inputs.insert(layer_inputs.end(), residual.begin(), residual.end());
}

}  // namespace qdqrt::optimizer
