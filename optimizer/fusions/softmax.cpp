// Softmax fusion: Softmax over the last axis followed by a QuantizeLinear (the attention
// probabilities P = Softmax(Q.K^T / sqrt(d)) -> Q, the int8 input of the P.V MatMul) becomes one
// Softmax layer of the qdqrt domain (core/ops/fused_layers.h) that reads the fp32 scores and
// writes int8 in one pass (kernels/softmax/softmax_quantize.h), as TensorRT fuses it.
// Not fused: a Softmax over another axis, or whose output has another reader than the Q (the
// float probabilities are needed then).
#include "core/ops/elementwise.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// True when `node` normalizes the last axis of its float input alone (opset >= 13: that one
// axis; before 13, dims[axis:] flattened, which is the last axis only when axis is the last).
bool normalizes_last_axis(const Graph& graph, const Node& node) {
  const ValueInfo* info = graph.find_value(node.input(0));
  const auto* attributes = dynamic_cast<const SoftmaxAttributes*>(node.typed_attributes.get());
  if (info == nullptr || info->dtype != DataType::kFloat || attributes == nullptr) return false;
  if (attributes->axis == -1) return true;  // any rank (inspect may not know it)
  if (!info->shape || info->shape->empty()) return false;
  const int64_t rank = static_cast<int64_t>(info->shape->size());
  return attributes->axis == rank - 1;
}

// Some QuantizeLinear reads `value` (so a quantized consumer was meant).
bool read_by_quantize(const Graph& graph, const ValueIndex& index, const std::string& value) {
  for (int consumer : index.consumers(value)) {
    if (is_onnx(graph.nodes[static_cast<size_t>(consumer)], "QuantizeLinear")) return true;
  }
  return false;
}

}  // namespace

SelectResult select_softmax_quantize(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "Softmax") || !node.has_input(0) || node.outputs.size() != 1) return {};
  const std::string& output = node.outputs[0];
  if (!read_by_quantize(graph, index, output)) return {};
  SelectResult result;
  if (!normalizes_last_axis(graph, node)) {
    result.reason = "Softmax over an axis other than the last (or of unknown rank) stays float";
    return result;
  }
  std::optional<QuantizedOutput> q = output_quantization(graph, index, output);
  if (!q) {
    result.reason = "the Softmax output has readers besides its QuantizeLinear (or per-channel parameters)";
    return result;
  }
  QdqSelection selection;
  selection.layer_op = layers::kSoftmax;
  selection.targets = {node_index};
  selection.output = output;
  end_at_quantize(graph, *q, selection);
  result.selection = std::move(selection);
  return result;
}

Status apply_softmax_quantize(Graph& graph, const QdqSelection& selection, PassContext& context) {
  const Node& softmax = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const std::string x = softmax.input(0);
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  layer.inputs = {x, output_params[0], output_params[1]};
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
