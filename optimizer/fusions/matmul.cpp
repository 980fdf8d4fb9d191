// MatMul fusion: DQ(a), DQ(b) -> MatMul/Gemm [-> Add(bias)] [-> Add(quantized residual)]
// [-> activation] [-> Q] becomes one QMatMul. A Gemm's transB is folded by transposing the int8
// weight once, its alpha into the weight scale, beta * C into the float bias.
#include <utility>

#include <fmt/format.h>

#include "core/ops/fused_layers.h"
#include "core/ops/matmul.h"
#include "optimizer/fusions/epilogue.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

// Int8 weight [N][K] -> [K][N] (Gemm transB folded).
Tensor transposed_2d(const Tensor& weight) {
  const int64_t rows = weight.dim(0), columns = weight.dim(1);
  Tensor out(weight.dtype(), {columns, rows});
  const auto* in = static_cast<const uint8_t*>(weight.raw_data());
  auto* data = static_cast<uint8_t*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) data[c * rows + r] = in[r * columns + c];
  }
  return out;
}

}  // namespace

SelectResult select_qdq_matmul(const Graph& graph, const ValueIndex& index, int node_index) {
  const Node& node = graph.nodes[static_cast<size_t>(node_index)];
  const bool is_gemm = is_onnx(node, "Gemm");
  if ((!is_onnx(node, "MatMul") && !is_gemm) || !looks_quantized(index, graph, node)) return {};
  SelectResult result;
  QdqSelection selection;
  selection.layer_op = layers::kQMatMul;
  const GemmAttributes* gemm = is_gemm ? dynamic_cast<const GemmAttributes*>(node.typed_attributes.get()) : nullptr;
  if (is_gemm && gemm == nullptr) {
    result.reason = "Gemm attributes missing";
    return result;
  }
  if (gemm != nullptr && gemm->trans_a) {
    result.reason = "transA on an activation (A would need a transpose)";
    return result;
  }
  auto a = activation_input(graph, index, node.input(0), "input A", result.reason);
  if (!a) return result;
  std::string why;
  auto b = quantized_input(graph, index, node.input(1), why);
  if (!b) {
    result.reason = why.empty() ? "input B is float (no DequantizeLinear)" : "input B: " + why;
    return result;
  }
  const Tensor* weight = find_constant(graph, b->quantized);
  int64_t columns = 0;
  if (weight != nullptr) {
    if (weight->rank() != 2) {
      result.reason = fmt::format("constant B has rank {} (2 needed)", weight->rank());
      return result;
    }
    const bool transposed = gemm != nullptr && gemm->trans_b;
    columns = transposed ? weight->dim(0) : weight->dim(1);
    if (b->per_channel) {
      const Tensor* scale = find_constant(graph, b->scale);
      const int64_t column_axis = transposed ? 0 : 1;
      if (b->axis != column_axis || scale->numel() != columns) {
        result.reason = "weight scales are not per output column";
        return result;
      }
    }
    selection.transpose_weight = transposed;
  } else {
    if (b->per_channel) {
      result.reason = "input B (an activation) has per-channel scales";
      return result;
    }
    if (gemm != nullptr && gemm->trans_b) {
      result.reason = "transB on an activation";
      return result;
    }
  }
  if (gemm != nullptr) selection.weight_scale_multiplier = gemm->alpha;
  if (gemm != nullptr && gemm->alpha != 1.0f && weight == nullptr) {
    result.reason = "Gemm alpha with an activation B";
    return result;
  }
  selection.inputs = {*a, *b};
  if (is_gemm && node.has_input(2)) {
    auto c = constant_float(graph, index, node.input(2));
    if (!c || columns == 0 || (c->numel() != columns && c->numel() != 1) ||
        (c->rank() >= 1 && c->dim(c->rank() - 1) != c->numel())) {
      result.reason = "Gemm C is not a constant [N] vector";
      return result;
    }
    Tensor bias(DataType::kFloat, {columns});
    for (int64_t i = 0; i < columns; ++i) {
      bias.data<float>()[i] = gemm->beta * c->data<float>()[c->numel() == 1 ? 0 : i];
    }
    selection.computed_bias = std::move(bias);
  }
  selection.targets = {node_index};
  selection.output = node.outputs[0];
  select_epilogue(graph, index, selection, columns);
  result.selection = std::move(selection);
  return result;
}

Status apply_qdq_matmul(Graph& graph, const QdqSelection& selection, PassContext& context) {
  Node layer = make_layer_node(graph, selection, /*keep_attributes=*/false);  // Gemm's are folded into the inputs
  std::vector<std::string> output_params = output_pair(graph, selection.output_q);
  const QuantizedInput& weight = selection.inputs[1];
  std::vector<std::string> a = input_triple(graph, selection.inputs[0]);
  std::vector<std::string> b = input_triple(graph, weight);
  if (selection.transpose_weight) {
    b[0] = add_initializer(graph, weight.quantized + "_transposed", transposed_2d(*find_constant(graph, b[0])));
  }
  if (selection.weight_scale_multiplier != 1.0f) {
    Tensor scale = find_constant(graph, b[1])->clone();
    for (int64_t i = 0; i < scale.numel(); ++i) scale.data<float>()[i] *= selection.weight_scale_multiplier;
    b[1] = add_initializer(graph, weight.scale + "_alpha", std::move(scale));
  }
  layer.inputs = weighted_layer_inputs(graph, selection, a, b, output_params);
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
