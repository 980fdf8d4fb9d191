// Float MatMul bias fusion: a float MatMul by a constant matrix [K, N] whose only reader is an Add of
// a constant bias (N values along the last axis, either operand order) [-> the ONNX Gelu
// (approximate "none", fuse_float_gelu's) that is the sum's only reader] becomes one qdqrt
// FusedMatMul (core/ops/fused_matmul.h), which the engine runs as fp32_gemm with the bias and the
// GELU in its epilogue (ONNX Runtime's BiasGelu, and the bias of the MatMul too). Torch exports Linear on a rank-3 input as MatMul + Add (ONNX Gemm takes only a rank-2
// A), so every projection and MLP layer of a transformer had its own bias pass. The fused layer
// starts each sum from the bias where MatMul + Add added it last: the float rounding differs
// (within 1e-6 relative on these sums), the INT8 layers are untouched (fuse_qdq_matmul ran first
// and took the MatMuls it quantizes with their bias).

#include "core/ops/elementwise.h"
#include "core/ops/fused_layers.h"
#include "core/ops/fused_matmul.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// The bias operand of `add` (the other one being `product`): a float constant of n values along
// the last axis, of rank at most `rank` (the Add then keeps the product's dims). Else "".
std::string bias_operand(const Graph& graph, const Node& add, const std::string& product, int64_t n, size_t rank) {
  if (!is_onnx(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1 || add.input(0) == add.input(1)) {
    return "";
  }
  const std::string& other = add.input(0) == product ? add.input(1) : add.input(0);
  const Tensor* bias = find_constant(graph, other);
  if (bias == nullptr || bias->dtype() != DataType::kFloat || bias->rank() < 1 ||
      bias->rank() > static_cast<int64_t>(rank) || bias->numel() != n || bias->dim(bias->rank() - 1) != n) {
    return "";
  }
  return other;
}

}  // namespace

SelectResult select_float_matmul_bias(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& matmul = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_onnx(matmul, "MatMul") || matmul.inputs.size() != 2 || matmul.outputs.size() != 1 ||
      !index.has_single_use(matmul.outputs[0])) {
    return {};
  }
  const Tensor* b = find_constant(graph, matmul.input(1));
  const ValueInfo* a = graph.find_value(matmul.input(0));
  if (b == nullptr || b->dtype() != DataType::kFloat || b->rank() != 2 || a == nullptr ||
      a->dtype != DataType::kFloat || !a->shape || a->shape->size() < 2 || find_constant(graph, matmul.input(0)) != nullptr) {
    return {};
  }
  const int reader = index.consumers(matmul.outputs[0])[0];
  const Node& add = graph.nodes[static_cast<size_t>(reader)];
  const std::string bias = bias_operand(graph, add, matmul.outputs[0], b->dim(1), a->shape->size());
  if (bias.empty()) return {};
  QdqSelection selection;
  selection.layer_op = layers::kFusedMatMul;
  selection.targets = {node_index, reader};
  selection.bias = bias;
  selection.output = add.outputs[0];
  if (index.has_single_use(add.outputs[0])) {
    const int gelu_index = index.consumers(add.outputs[0])[0];
    const Node& gelu = graph.nodes[static_cast<size_t>(gelu_index)];
    if (is_onnx(gelu, "Gelu") && gelu.inputs.size() == 1 && gelu.outputs.size() == 1 &&
        !gelu.attrs<GeluAttributes>().tanh_approximation) {
      selection.targets.push_back(gelu_index);
      selection.lookup_function = "Gelu";
      selection.output = gelu.outputs[0];
    }
  }
  return {.selection = std::move(selection), .reason = ""};
}

Status apply_float_matmul_bias(Graph& graph, const QdqSelection& selection, PassContext&) {
  const Node& matmul = graph.nodes[static_cast<size_t>(selection.targets[0])];
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);
  layer.inputs = {matmul.input(0), matmul.input(1), selection.bias};
  // The layer stands where the MatMul stood; the Add (and Gelu) go.
  return replace_first_with_layer(graph, selection, std::move(layer));
}

}  // namespace qdqrt::optimizer
