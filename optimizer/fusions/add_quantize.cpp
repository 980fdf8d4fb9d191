// Float residual end fusion: Add(a, b) [-> Relu] with a QuantizeLinear among the readers of its
// result, a and b float tensors of one shape computed at run time, becomes one AddQuantize layer
// that adds, rectifies and quantizes in one pass. The layer writes the Q's int8 output and, when
// anything else reads the sum (the next block's residual Add, a pool, a graph output), the float
// sum as its output 1 under the same name. pytorch-quantization's torchvision exports leave the
// residual branch unquantized, so every ResNet/RegNet block otherwise ends in three float passes.
#include "core/ops/fused_add_quantize.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// Float, with a known rank and every dim static or a named symbol, equal between a and b.
bool same_float_dims(const Graph& graph, const std::string& a, const std::string& b) {
  const ValueInfo* x = graph.find_value(a);
  const ValueInfo* y = graph.find_value(b);
  if (x == nullptr || y == nullptr || x->dtype != DataType::kFloat || y->dtype != DataType::kFloat || !x->shape ||
      !y->shape || x->shape->size() != y->shape->size()) {
    return false;
  }
  for (size_t axis = 0; axis < x->shape->size(); ++axis) {
    const Dim& p = (*x->shape)[axis];
    const Dim& q = (*y->shape)[axis];
    if (p.is_static() ? !q.is_static() || p.value != q.value : p.symbol.empty() || p.symbol != q.symbol) return false;
  }
  return true;
}

}  // namespace

SelectResult select_add_quantize(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& add = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1) return {};
  if (find_constant(graph, add.input(0)) != nullptr || find_constant(graph, add.input(1)) != nullptr) return {};
  // Broadcasting Adds (a bias, a per-channel term) are not a residual's end.
  if (!same_float_dims(graph, add.input(0), add.input(1))) return {};
  QdqSelection selection;
  selection.layer_op = layers::kAddQuantize;
  selection.targets = {node_index};
  selection.output = add.outputs[0];
  const int relu = single_consumer(index, selection.output);
  if (relu >= 0 && is_onnx(graph.nodes[static_cast<size_t>(relu)], "Relu")) {
    selection.targets.push_back(relu);
    selection.activation.kind = ActivationKind::kRelu;
    selection.output = graph.nodes[static_cast<size_t>(relu)].outputs[0];
  }
  // The first Q among the readers; the others (more Qs included) read the float output.
  for (int reader : index.consumers(selection.output)) {
    if (auto q = quantize_reader(graph, reader, selection.output)) {
      selection.output_q = *q;
      break;
    }
  }
  // Without a Q the Add (and Relu) are as cheap apart.
  if (!selection.output_q) return {};
  SelectResult result;
  result.selection = std::move(selection);
  return result;
}

Status apply_add_quantize(Graph& graph, const QdqSelection& selection, PassContext& context) {
  const Node& add = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const std::string sum = selection.output;
  const std::string quantized = graph.nodes[static_cast<size_t>(selection.output_q->q_node)].outputs[0];
  // The sum stays a value when anything but the Q reads it.
  const ValueIndex index(graph);
  const bool keeps_sum = index.is_graph_output(sum) || index.consumers(sum).size() > 1;
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = {add.input(0), add.input(1), output_params[0], output_params[1]};
  const std::string name = layer.name;
  QdqSelection quantized_selection = selection;
  quantized_selection.output = quantized;
  QDQRT_RETURN_IF_ERROR(replace_with_layer(graph, quantized_selection, std::move(layer), output_params, context));
  if (!keeps_sum) return Status::ok();
  for (Node& node : graph.nodes) {
    if (node.domain == layers::kDomain && node.name == name && node.op_type == layers::kAddQuantize) {
      node.outputs.push_back(sum);
      break;
    }
  }
  // The layer sits where its Q was: a reader of the sum may come before it.
  return topological_sort(graph);
}

}  // namespace qdqrt::optimizer
