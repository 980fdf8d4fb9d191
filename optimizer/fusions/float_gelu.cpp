// Float GELU fusion, after ONNX Runtime's GeluFusion: the erf form of GELU that torch writes below
// opset 20, Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf -> Add 1 -> Mul x and Mul 0.5 (either
// order), on a float value becomes one ONNX Gelu (approximate "none"). The engine runs Gelu as one
// fp32 pass over x where the five nodes were five passes (ConvNeXt's and ViT's MLPs). Every
// intermediate value has this chain as its only reader and is not a graph output. In a QDQ model
// fuse_qdq_lookup and fuse_pointwise, which run before, take the chains between Q/DQ and after
// INT8 layers; this fusion takes what they leave in float.
#include <algorithm>

#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// The first opset of ONNX Gelu.
constexpr int64_t kGeluOpset = 20;

}  // namespace

SelectResult select_float_gelu(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  if ((!is_onnx(node, "Div") && !is_onnx(node, "Mul")) || node.inputs.size() != 2 || node.outputs.size() != 1) {
    return {};
  }
  std::vector<int> chain = match_erf_gelu(graph, index, node_index);
  if (chain.empty()) return {};
  const ValueInfo* x = graph.find_value(node.input(0));
  if (x == nullptr || x->dtype != DataType::kFloat || find_constant(graph, node.input(0)) != nullptr) return {};
  QdqSelection selection;
  selection.layer_op = "Gelu";
  selection.targets = std::move(chain);
  selection.output = graph.nodes[static_cast<size_t>(selection.targets.back())].outputs[0];
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_gelu(Graph& graph, const QdqSelection& selection, PassContext&) {
  const Node& first = graph.nodes[static_cast<size_t>(selection.targets.front())];
  Node gelu;
  gelu.name = first.name;
  gelu.op_type = "Gelu";
  gelu.domain = first.domain;
  gelu.opset = std::max(first.opset, kGeluOpset);
  gelu.inputs = {first.input(0)};
  gelu.outputs = {selection.output};
  QDQRT_RETURN_IF_ERROR(parse_typed_attributes(gelu));
  // Gelu takes the place of the chain's last node (its output's writer); the others go.
  std::vector<int> removed = selection.targets;
  std::sort(removed.begin(), removed.end());
  graph.nodes[static_cast<size_t>(removed.back())] = std::move(gelu);
  removed.pop_back();
  for (auto it = removed.rbegin(); it != removed.rend(); ++it) graph.nodes.erase(graph.nodes.begin() + *it);
  return Status::ok();
}

}  // namespace qdqrt::optimizer
