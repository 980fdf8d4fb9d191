// Quantized SiLU: ONNX Runtime's QDQ export of x * sigmoid(x) quantizes the sigmoid in between,
// so after the lookup and binary fusions it is QLookup(Sigmoid) of x_q feeding a QMul with x_q
// itself. Both read one int8 tensor, so the pair is one function of x_q's 256 codes: a single
// QLookup ("QuantizedSiLU") whose table the engine computes from the reference kernel, bit-equal
// to the two layers it replaces.
#include <cmath>

#include "core/attribute_values.h"
#include "core/ops/fused.h"
#include "core/ops/fused_layers.h"
#include "optimizer/fusions/quantized_io.h"
#include "optimizer/fusions/registry.h"

namespace qdqrt::optimizer {

namespace {

bool is_qdqrt(const Node& node, const char* op_type) {
  return node.domain == layers::kDomain && node.op_type == op_type;
}

// The scalar value of a constant float or 8-bit tensor; nullopt otherwise.
std::optional<double> scalar_value(const Graph& graph, const std::string& value) {
  const Tensor* t = find_constant(graph, value);
  if (t == nullptr || t->numel() != 1) return std::nullopt;
  switch (t->dtype()) {
    case DataType::kFloat: return t->data<float>()[0];
    case DataType::kInt8: return t->data<int8_t>()[0];
    case DataType::kUint8: return t->data<uint8_t>()[0];
    default: return std::nullopt;
  }
}

bool same_parameter(const Graph& graph, const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto va = scalar_value(graph, a), vb = scalar_value(graph, b);
  const Tensor* ta = find_constant(graph, a);
  const Tensor* tb = find_constant(graph, b);
  return va && vb && *va == *vb && ta->dtype() == tb->dtype();
}

// The QLookup(Sigmoid) writing `value`, read only by one node; -1 otherwise.
int sigmoid_lookup(const Graph& graph, const ValueIndex& index, const std::string& value) {
  const int producer = index.producer(value);
  if (producer < 0 || !index.has_single_use(value)) return -1;
  const Node& node = graph.nodes[static_cast<size_t>(producer)];
  if (!is_qdqrt(node, layers::kQLookup)) return -1;
  const auto* attributes = dynamic_cast<const QLookupAttributes*>(node.typed_attributes.get());
  return attributes != nullptr && attributes->function == LookupFunction::kSigmoid ? producer : -1;
}

}  // namespace

SelectResult select_quantized_silu(const Graph& graph, const ValueIndex& index, int node_index) {
  using namespace layers;
  const Node& mul = graph.nodes[static_cast<size_t>(node_index)];
  if (!is_qdqrt(mul, kQMul) || !mul.has_input(kBinaryYScale) || !mul.has_input(kBinaryYZeroPoint)) return {};
  const FusedLayerInfo* info = fused_layer_info(mul);
  if (info == nullptr || info->activation.kind != ActivationKind::kNone) return {};
  for (size_t side : {size_t{kBinaryA}, size_t{kBinaryB}}) {
    const size_t other = side == kBinaryA ? kBinaryB : kBinaryA;
    const int lookup_index = sigmoid_lookup(graph, index, mul.input(side));
    if (lookup_index < 0) continue;
    const Node& lookup = graph.nodes[static_cast<size_t>(lookup_index)];
    // The sigmoid reads the same int8 tensor with the same parameters as the Mul's other input.
    if (lookup.input(kUnaryX) != mul.input(other) ||
        !same_parameter(graph, lookup.input(kUnaryXScale), mul.input(other + 1)) ||
        !lookup.has_input(kUnaryXZeroPoint) || !mul.has_input(other + 2) ||
        !same_parameter(graph, lookup.input(kUnaryXZeroPoint), mul.input(other + 2))) {
      continue;
    }
    // The sigmoid's own output quantization must be what the Mul reads it with.
    if (!same_parameter(graph, lookup.input(kUnaryYScale), mul.input(side + 1)) ||
        !same_parameter(graph, lookup.input(kUnaryYZeroPoint), mul.input(side + 2))) {
      continue;
    }
    QdqSelection selection;
    selection.layer_op = kQLookup;
    selection.targets = {std::min(lookup_index, node_index), std::max(lookup_index, node_index)};
    selection.output = mul.outputs[0];
    SelectResult result;
    result.selection = std::move(selection);
    return result;
  }
  return {};
}

Status apply_quantized_silu(Graph& graph, const QdqSelection& selection, PassContext& context) {
  using namespace layers;
  const Node& first = graph.nodes[static_cast<size_t>(selection.targets[0])];
  const Node& second = graph.nodes[static_cast<size_t>(selection.targets[1])];
  const Node& lookup = is_qdqrt(first, kQLookup) ? first : second;
  const Node& mul = is_qdqrt(first, kQLookup) ? second : first;
  Node layer;
  layer.name = lookup.name;
  layer.op_type = kQLookup;
  layer.domain = kDomain;
  layer.opset = 1;
  Attribute fused;
  fused.kind = Attribute::Kind::kStrings;
  for (const Node* part : {&lookup, &mul}) {
    const FusedLayerInfo* info = fused_layer_info(*part);
    if (info != nullptr) fused.strings.insert(fused.strings.end(), info->fused_nodes.begin(), info->fused_nodes.end());
  }
  layer.attributes["fused_nodes"] = fused;
  set_string_attribute(layer, "function", lookup_function_name(LookupFunction::kQuantizedSiLU));
  const Tensor* sigmoid_scale = find_constant(graph, lookup.input(kUnaryYScale));
  const Tensor* sigmoid_zero_point = find_constant(graph, lookup.input(kUnaryYZeroPoint));
  if (sigmoid_scale == nullptr || sigmoid_zero_point == nullptr) {
    return internal_error("{}: sigmoid quantization is not constant", lookup.describe());
  }
  layer.attributes["sigmoid_scale"] = float_attribute(sigmoid_scale->data<float>()[0]);
  const bool is_signed = sigmoid_zero_point->dtype() == DataType::kInt8;
  layer.attributes["sigmoid_zero_point"] =
      int_attribute(is_signed ? sigmoid_zero_point->data<int8_t>()[0] : sigmoid_zero_point->data<uint8_t>()[0]);
  layer.attributes["sigmoid_signed"] = int_attribute(is_signed ? 1 : 0);
  layer.inputs = {lookup.input(kUnaryX), lookup.input(kUnaryXScale), lookup.input(kUnaryXZeroPoint),
                  mul.input(kBinaryYScale), mul.input(kBinaryYZeroPoint)};
  std::vector<std::string> output_params = {mul.input(kBinaryYScale), mul.input(kBinaryYZeroPoint)};
  return replace_with_layer(graph, selection, std::move(layer), output_params, context);
}

}  // namespace qdqrt::optimizer
