// Pool fusion: DQ -> GlobalAveragePool/AveragePool [-> Q] becomes QGlobalAveragePool/QAveragePool;
// a float AveragePool read only by a QuantizeLinear becomes a QAveragePool of the float input (no
// x_scale: the average is the float one, quantized once, as the two nodes compute it);
// DQ -> MaxPool -> Q with equal input and output parameters becomes the ONNX MaxPool reading the
// int8 tensor (max commutes with a monotonic quantizer).
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// layer_op of an int8 MaxPool selection: the ONNX MaxPool stays, on the int8 tensor.
constexpr char kInt8MaxPool[] = "MaxPool";

SelectResult select_average_pool(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const bool global = is_onnx(node, "GlobalAveragePool");
  if (!global && !is_onnx(node, "AveragePool")) return {};
  if (!looks_quantized(index, graph, node)) {
    // A float input whose average is quantized (a conv written in float, then pool -> Q). Moving
    // the Q above the pool would rewrite the model (the output scale is calibrated on averages,
    // and quantizing each input with it would clip), but the pool and its Q are one layer that
    // averages in float and writes the Q's codes.
    SelectResult result;
    auto q = output_quantization(graph, index, node.outputs[0]);
    if (!global && q) {
      QdqSelection selection;
      selection.layer_op = layers::kQAveragePool;
      selection.targets = {node_index};
      end_at_quantize(graph, *q, selection);
      result.selection = std::move(selection);
      return result;
    }
    if (q) {
      int producer = index.producer(node.input(0));
      result.reason = fmt::format(
          "input{} is float and the model has no QuantizeLinear before the pool (quantizing the "
          "inputs with the output's scale would round and clip them; the average is quantized after)",
          producer >= 0 ? " from " + graph.nodes[static_cast<size_t>(producer)].describe() : std::string());
    }
    return result;
  }
  SelectResult result;
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
  if (!x) return result;
  QdqSelection selection;
  selection.layer_op = global ? layers::kQGlobalAveragePool : layers::kQAveragePool;
  selection.inputs = {*x};
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  select_output_quantization(graph, index, selection);
  result.selection = std::move(selection);
  return result;
}

SelectResult select_int8_max_pool(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "MaxPool") || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
  if (!x) return result;
  if (node.outputs.size() > 1 && !node.outputs[1].empty() &&
      (!index.consumers(node.outputs[1]).empty() || index.is_graph_output(node.outputs[1]))) {
    result.reason = "Indices output is used";
    return result;
  }
  auto q = required_output_quantization(graph, index, node.outputs[0], result.reason);
  if (!q) return result;
  if (!same_input_output_params(graph, *x, *q)) {
    result.reason = "input and output quantization parameters differ";
    return result;
  }
  QdqSelection selection;
  selection.layer_op = kInt8MaxPool;
  selection.inputs = {*x};
  selection.targets = {node_index};
  end_at_quantize(graph, *q, selection);
  result.selection = std::move(selection);
  return result;
}

Status apply_int8_max_pool(Graph& graph, const QdqSelection& selection) {
  Node& pool = graph.nodes[static_cast<size_t>(selection.targets[0])];
  pool.inputs[0] = selection.inputs[0].quantized;
  pool.outputs.resize(1);
  pool.outputs[0] = selection.output;
  graph.nodes.erase(graph.nodes.begin() + selection.output_q->q_node);
  return Status::ok();
}

}  // namespace

SelectResult select_qdq_pool(const Graph& graph, const ValueIndex& index, int node) {
  SelectResult result = select_average_pool(graph, index, node);
  if (result.selection || !result.reason.empty()) return result;
  return select_int8_max_pool(graph, index, node);
}

Status apply_qdq_pool(Graph& graph, const QdqSelection& selection, PassContext& context) {
  if (selection.layer_op == kInt8MaxPool) return apply_int8_max_pool(graph, selection);
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);  // kernel_shape, pads, strides
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  if (selection.inputs.empty()) {  // the float input: no x_scale, x_zero_point
    layer.inputs = {graph.nodes[static_cast<size_t>(selection.targets[0])].input(0), "", ""};
  } else {
    layer.inputs = input_triple(graph, selection.inputs[0]);
  }
  layer.inputs.insert(layer.inputs.end(), output_params.begin(), output_params.end());
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
