// Resize fusion: DQ -> Resize (mode nearest) -> Q with equal input and output parameters becomes
// the ONNX Resize reading the int8/uint8 tensor (a nearest resize copies values, and Q(DQ(q)) == q
// for the same parameters), which the engine runs as an int8 gather. Linear and cubic modes
// interpolate: they stay float between the DQ and the Q.
#include "core/ops/resize.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

SelectResult select_qdq_resize(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(node, "Resize") || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  const auto& attributes = node.attrs<ResizeAttributes>();
  if (attributes.mode != ResizeMode::kNearest) {
    result.reason =
        fmt::format("mode '{}' interpolates (runs in float between the DequantizeLinear and the QuantizeLinear)",
                    attributes.mode == ResizeMode::kLinear ? "linear" : "cubic");
    return result;
  }
  if (attributes.coordinate_transformation == CoordinateTransformation::kTfCropAndResize) {
    result.reason = "tf_crop_and_resize writes a float extrapolation_value";
    return result;
  }
  auto x = activation_input(graph, index, node.input(0), "input", result.reason);
  if (!x) return result;
  auto q = required_output_quantization(graph, index, node.outputs[0], result.reason);
  if (!q) return result;
  if (!same_input_output_params(graph, *x, *q)) {
    result.reason = "input and output quantization parameters differ";
    return result;
  }
  QdqSelection selection;
  selection.layer_op = "Resize";  // the ONNX Resize stays, on the int8 tensor
  selection.inputs = {*x};
  selection.targets = {node_index};
  end_at_quantize(graph, *q, selection);
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_resize(Graph& graph, const QdqSelection& selection, PassContext&) {
  Node& resize = graph.nodes[static_cast<size_t>(selection.targets[0])];
  resize.inputs[0] = selection.inputs[0].quantized;
  resize.outputs[0] = selection.output;
  graph.nodes.erase(graph.nodes.begin() + selection.output_q->q_node);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
