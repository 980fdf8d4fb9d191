// Conv fusion: DQ(x), DQ(w)[, bias] -> Conv (any group) [-> Add(quantized residual)]
// [-> Relu/Clip/LeakyRelu] [-> Q] becomes one QConv (kinds Conv, DepthwiseConv, GroupConv).
#include <utility>

#include "core/ops/fused_layers.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

SelectResult select_qdq_conv(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& conv = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(conv, "Conv") || !looks_quantized(index, graph, conv)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = layers::kQConv;
  auto x = activation_input(graph, index, conv.input(0), "input", result.reason);
  if (!x) return result;
  std::string why;
  auto w = quantized_input(graph, index, conv.input(1), why);
  if (!w) {
    result.reason = why.empty() ? "weight is float (no DequantizeLinear)" : "weight: " + why;
    return result;
  }
  const Tensor* weight = find_constant(graph, w->quantized);
  if (weight == nullptr) {
    result.reason = "weight is not a constant";
    return result;
  }
  if (w->per_channel) {
    const Tensor* scale = find_constant(graph, w->scale);
    if (w->axis != 0 || scale->numel() != weight->dim(0)) {
      result.reason = "weight scales are not per output channel (axis 0)";
      return result;
    }
  }
  selection.inputs = {*x, *w};
  if (conv.has_input(2)) {
    if (find_constant(graph, conv.input(2)) != nullptr &&
        find_constant(graph, conv.input(2))->dtype() == DataType::kFloat) {
      selection.bias = conv.input(2);
    } else if (auto bias = constant_float(graph, index, conv.input(2))) {
      selection.computed_bias = std::move(*bias);
    } else {
      result.reason = "bias is not a constant";
      return result;
    }
  }
  selection.targets = {node_index};
  selection.output = conv.outputs[0];
  select_epilogue(graph, index, selection, 0);
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_conv(Graph& graph, const QdqSelection& selection, PassContext& context) {
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/true);  // the Conv's pads, strides, group
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  std::vector<std::string> x = input_triple(graph, selection.inputs[0]);
  std::vector<std::string> weight = input_triple(graph, selection.inputs[1]);
  layer.inputs = weighted_layer_inputs(graph, selection, x, weight, output_params);
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
