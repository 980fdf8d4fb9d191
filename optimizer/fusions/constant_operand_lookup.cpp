// Constant-operand lookup: a QAdd or QMul whose other operand is one constant value (ONNX Runtime's
// quantize_static writes GELU's + 1 and * 0.5 and HardSwish's + 3 as u8 initializers read through
// a DequantizeLinear) is a function of its input's 256 codes. As a QLookup "ConstantAdd" /
// "ConstantMul" of the dequantized constant, its table is the float Add/Mul the source graph
// computes on each code, bit-equal to it; the QAdd's own arithmetic (scales folded into one
// multiplier) rounds the values that land near a .5 its own way, and where the constant makes
// every sum a .5 (Swin-T's 1 + erf on ORT's scales) that is every other code.
#include "core/attribute_values.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"
#include "optimizer/passes/qdq_params.h"

namespace qdqrt::optimizer {

namespace {

bool is_qdqrt(const Node& node, const char* op_type) {
  return node.domain == layers::kDomain && node.op_type == op_type;
}

bool single_constant(const Graph& graph, const Node& node, size_t input) {
  const Tensor* constant = node.has_input(input) ? find_constant(graph, node.input(input)) : nullptr;
  return constant != nullptr && constant->numel() == 1;
}

// The float the reference executor's DequantizeLinear gives the constant operand at `first`
// (value, scale, zero point); nullopt when it cannot be evaluated.
std::optional<float> dequantized_operand(const Graph& graph, const Node& binary, size_t first) {
  Node dq;
  dq.name = binary.name + "/operand";
  dq.op_type = "DequantizeLinear";
  dq.opset = 13;
  dq.inputs = {binary.input(first), binary.input(first + 1)};
  if (binary.has_input(first + 2)) dq.inputs.push_back(binary.input(first + 2));
  dq.outputs = {dq.name};
  if (!parse_typed_attributes(dq).is_ok()) return std::nullopt;
  std::optional<Tensor> value = folded_dequantize(graph, dq);
  if (!value || value->dtype() != DataType::kFloat || value->numel() != 1) return std::nullopt;
  return value->data<float>()[0];
}

}  // namespace

SelectResult select_constant_operand_lookup(const Graph& graph, const ValueIndex& /*index*/, int node_index) {
  using namespace layers;
  const Node& binary = graph.nodes[static_cast<size_t>(node_index)];
  const bool add = is_qdqrt(binary, kQAdd);
  if ((!add && !is_qdqrt(binary, kQMul)) || !binary.has_input(kBinaryYScale) || !binary.has_input(kBinaryYZeroPoint)) {
    return {};
  }
  // The table holds the sum or product alone: no activation or program after it.
  const FusedLayerInfo* info = fused_layer_info(binary);
  if (info == nullptr || info->activation.kind != ActivationKind::kNone || info->has_pointwise()) return {};
  for (size_t side : {size_t{kBinaryA}, size_t{kBinaryB}}) {
    const size_t other = side == kBinaryA ? kBinaryB : kBinaryA;
    if (!single_constant(graph, binary, side) || find_constant(graph, binary.input(other)) != nullptr) continue;
    // The input and output quantized per tensor; a constant of a higher rank would broadcast x up.
    if (!single_constant(graph, binary, other + 1) || !single_constant(graph, binary, other + 2) ||
        !single_constant(graph, binary, kBinaryYScale) || !single_constant(graph, binary, side + 1)) {
      continue;
    }
    const int64_t x_rank = value_rank(graph, binary.input(other));
    if (find_constant(graph, binary.input(side))->rank() > std::max<int64_t>(x_rank, 0)) continue;
    std::optional<float> operand = dequantized_operand(graph, binary, side);
    if (!operand) continue;
    QdqSelection selection;
    selection.layer_op = kQLookup;
    selection.targets = {node_index};
    selection.output = binary.outputs[0];
    selection.lookup_function = lookup_function_name(add ? LookupFunction::kConstantAdd : LookupFunction::kConstantMul);
    selection.lookup_operand = *operand;
    // x as the QAdd/QMul reads it (no DequantizeLinear node: the fusion before took it).
    selection.inputs = {{.quantized = binary.input(other),
                         .scale = binary.input(other + 1),
                         .zero_point = binary.input(other + 2),
                         .dtype = find_constant(graph, binary.input(other + 2))->dtype()}};
    SelectResult result;
    result.selection = std::move(selection);
    return result;
  }
  return {};
}

Status apply_constant_operand_lookup(Graph& graph, const QdqSelection& selection, PassContext& context) {
  using namespace layers;
  const Node& binary = graph.nodes[static_cast<size_t>(selection.targets[0])];
  Node layer;
  layer.name = binary.name;
  layer.op_type = kQLookup;
  layer.domain = kDomain;
  layer.opset = 1;
  if (auto fused = binary.attributes.find("fused_nodes"); fused != binary.attributes.end()) {
    layer.attributes["fused_nodes"] = fused->second;
  }
  set_string_attribute(layer, "function", selection.lookup_function);
  layer.attributes["operand"] = float_attribute(selection.lookup_operand);
  layer.inputs = input_triple(graph, selection.inputs[0]);
  layer.inputs.insert(layer.inputs.end(), {binary.input(kBinaryYScale), binary.input(kBinaryYZeroPoint)});
  std::vector<std::string> output_params = {binary.input(kBinaryYScale), binary.input(kBinaryYZeroPoint)};
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
