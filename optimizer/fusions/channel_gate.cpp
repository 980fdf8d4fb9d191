// Channel gate fusion: squeeze-excite's Mul(x [N, C, H, W], gate [N, C, 1, 1]) -> Q, both operands
// computed at run time, becomes one ChannelGate layer that multiplies and quantizes in one pass
// over x (channels-last in the engine, so the block's tensor needs no reorder).
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// Static [N, C, H, W] (N may be symbolic) of a float value, or nullopt.
std::optional<std::vector<Dim>> float_rank4(const Graph& graph, const std::string& value) {
  const ValueInfo* info = graph.find_value(value);
  if (info == nullptr || info->dtype != DataType::kFloat || !info->shape || info->shape->size() != 4) return std::nullopt;
  const std::vector<Dim>& dims = *info->shape;
  for (size_t axis = 1; axis < 4; ++axis) {
    if (!dims[axis].is_static()) return std::nullopt;
  }
  return dims;
}

bool same_dim(const Dim& a, const Dim& b) {
  return a.is_static() ? b.is_static() && a.value == b.value : !a.symbol.empty() && a.symbol == b.symbol;
}

}  // namespace

SelectResult select_channel_gate(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "Mul") || node.inputs.size() != 2 || node.outputs.size() != 1) return {};
  if (find_constant(graph, node.input(0)) != nullptr || find_constant(graph, node.input(1)) != nullptr) return {};
  auto a = float_rank4(graph, node.input(0));
  auto b = float_rank4(graph, node.input(1));
  if (!a || !b) return {};
  // x: the full tensor (H * W > 1); gate: one value per image and channel.
  const bool a_is_gate = (*a)[2].value == 1 && (*a)[3].value == 1;
  const bool b_is_gate = (*b)[2].value == 1 && (*b)[3].value == 1;
  if (a_is_gate == b_is_gate) return {};
  const std::vector<Dim>& x = a_is_gate ? *b : *a;
  const std::vector<Dim>& gate = a_is_gate ? *a : *b;
  if (!same_dim(x[0], gate[0]) || x[1].value != gate[1].value) return {};
  QdqSelection selection;
  selection.layer_op = layers::kChannelGate;
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  // Only with the Q after it: the gate's point is writing int8 for the next conv in the same pass.
  auto q = output_quantization(graph, index, selection.output);
  if (!q) return {};
  end_at_quantize(graph, *q, selection);
  // Remember which input is the gate: the action reads it from the Mul again.
  SelectResult result;
  result.selection = std::move(selection);
  return result;
}

Status apply_channel_gate(Graph& graph, const QdqSelection& selection, PassContext& context) {
  const Node& mul = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const ValueInfo* first = graph.find_value(mul.input(0));
  const bool first_is_gate = first != nullptr && first->shape && (*first->shape)[2].value == 1 &&
                             (*first->shape)[3].value == 1;
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = {first_is_gate ? mul.input(1) : mul.input(0), first_is_gate ? mul.input(0) : mul.input(1),
                  output_params[0], output_params[1]};
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
